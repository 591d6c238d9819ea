"""The Typer application: the global options, and every command, registered here."""

from __future__ import annotations

from typing import Annotated

import typer

from govern import __version__
from govern.cli import STATE, audit, daemon, poll, propose, rules, track, verify, web

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


# In the order of `govern --help`.
app.command()(audit.audit)
app.command("poll")(poll.poll_command)
app.command()(daemon.daemon)
app.command()(rules.rules)
app.add_typer(track.db_app, name="db")
app.command()(track.track)
app.command()(track.status)
app.command()(track.history)
app.command()(verify.verify)
app.command()(propose.propose)
app.command()(web.serve)
app.command()(web.dashboard)
app.command()(web.report)
