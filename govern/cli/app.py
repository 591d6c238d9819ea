"""The Typer application: the global options and the commands.

Importing this module registers the commands (each module adds its own to ``app``).
"""

from __future__ import annotations

from typing import Annotated

import typer

from govern import __version__
from govern.cli import STATE

app = typer.Typer(
    name="govern",
    help="Dependency-pin governance: every exclusion, its reason, and when it can go.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"govern {__version__}")
        raise typer.Exit()


@app.callback()
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


# Commands register themselves on ``app`` when imported (in the order of `govern --help`).
from govern.cli import audit as _audit  # noqa: E402,F401
from govern.cli.poll import poll_command  # noqa: E402

app.command("poll")(poll_command)

from govern.cli import daemon as _daemon  # noqa: E402,F401
from govern.cli import rules as _rules  # noqa: E402,F401
from govern.cli import track as _track  # noqa: E402,F401
from govern.cli import verify as _verify  # noqa: E402,F401
from govern.cli import web as _web  # noqa: E402,F401
