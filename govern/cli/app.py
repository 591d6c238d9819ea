"""The Typer application: the global options, and every command, registered here."""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from govern import __version__
from govern.cli import STATE

# In the order of `govern --help`: the module and name of a command, or of a group of them
# (``db``), in govern.cli.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo", "demo"),
    "init": ("init", "init"),
    "config": ("config", "config_app"),
    "audit": ("audit", "audit"),
    "poll": ("poll", "poll_command"),
    "daemon": ("daemon", "daemon"),
    "rules": ("rules", "rules"),
    "db": ("track", "db_app"),
    "track": ("track", "track"),
    "untrack": ("track", "untrack"),
    "status": ("track", "status"),
    "history": ("track", "history"),
    "verify": ("verify", "verify"),
    "propose": ("propose", "propose"),
    "digest": ("propose", "digest"),
    "serve": ("web", "serve"),
    "dashboard": ("web", "dashboard"),
    "report": ("web", "report"),
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"govern {__version__}")
        raise typer.Exit()


def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """govern: track exclusions, watch for fixes, verify, propose relaxations."""
    STATE.debug = debug


def build(only: str | None = None) -> typer.Typer:
    """The application with every command, or with ``only`` that one.

    Typer turns each registered command's signature into options on every start (about
    12 ms for all of them), so a run that names its command imports and registers just
    that one.
    """
    app = typer.Typer(
        name="govern",
        help="Dependency-pin governance: every exclusion, its reason, and when it can go.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_root)
    for name, (module, attribute) in COMMANDS.items():
        if only is not None and name != only:
            continue
        command = getattr(importlib.import_module(f"govern.cli.{module}"), attribute)
        if isinstance(command, typer.Typer):
            app.add_typer(command, name=name)
        else:
            app.command(name)(command)
    return app
