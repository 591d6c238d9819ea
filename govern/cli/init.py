"""``govern init``: a starting configuration from what the repository shows."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def init(
    path: Annotated[
        Path,
        typer.Argument(
            help="The repository (default: the one here); .govern.toml goes at its root."
        ),
    ] = Path("."),
    stdout: Annotated[
        bool, typer.Option("--stdout", help="Print the configuration instead of writing it.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing .govern.toml.")
    ] = False,
) -> None:
    """Write a commented .govern.toml from what the repository shows: its sources, the
    forge and base branch of the origin remote, the CI workflows present and the runtime
    profiles requires-python admits. Keys that could not be found are written commented
    out, with what to fill in. Asks nothing of the network; exit 2 when a .govern.toml
    exists (without --force)."""
    from govern.config import validate_config
    from govern.errors import SourceNotFound
    from govern.git.runner import environment, toplevel
    from govern.init import CONFIG_NAME, find, render, write
    from govern.tomltables import parse_toml

    if not path.is_dir():
        raise SourceNotFound(
            f"{path} is not a directory", tip="Name the repository's directory, or leave it out."
        )
    root = toplevel(path.resolve(), "git", 30.0, environment()) or path.resolve()
    found = find(root)
    text = render(found)
    _, problems = validate_config(parse_toml(text.encode("utf-8")), root / CONFIG_NAME)
    if problems:  # the text is govern's own: a problem here is a bug in govern.init
        raise RuntimeError(f"govern init wrote an invalid configuration: {problems[0].message}")
    if stdout:
        typer.echo(text, nl=False)
        return
    target = write(root, text, force=force)
    typer.echo(f"wrote {target}")
    said = [
        f"{len(found.sources)} source(s)",
        f"forge {found.forge or 'none'}",
        f"base {found.base or 'not found'}",
        f"CI {', '.join(found.ci_kinds()) or 'none'}",
        f"profiles {', '.join(found.pythons) or 'none'}",
    ]
    typer.echo("found: " + "; ".join(said))
    typer.echo(f"next: edit the TODOs, then govern config check {root}")
