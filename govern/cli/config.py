"""``govern config check``: every problem of the configuration at once."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from govern.cli.options import ConfigOption

if TYPE_CHECKING:
    from govern.config import Config

config_app = typer.Typer(help="The configuration: check it.")


@config_app.command("check")
def check(
    path: Annotated[
        Path, typer.Argument(help="The directory whose configuration is read (default: here).")
    ] = Path("."),
    config_file: ConfigOption = None,
) -> None:
    """Load the configuration as every command does (.govern.toml, else [tool.govern] in
    pyproject.toml, or --config) and print every problem at once: file, line, column, what
    is wrong and a tip (the known key an unknown one is probably a misspelling of). Exit 0
    and "ok" with what was loaded when there is none, 2 when there are problems."""
    from govern.config import check_config, find_config
    from govern.errors import ConfigError

    found, config, problems = check_config(path, config_file)
    for problem in problems:
        where = ":".join(
            str(part) for part in (problem.file, problem.line, problem.column) if part is not None
        )
        typer.echo(f"{where}: {problem.message}")
        if problem.tip:
            typer.echo(f"    Tip: {problem.tip}")
    if problems:
        count = len(problems)
        raise ConfigError(
            f"{count} problem{'s' if count > 1 else ''} in the configuration",
            tip="Fix each one above, then run govern config check again.",
        )
    if found is None:
        typer.echo(
            "ok: no configuration here (no .govern.toml, no [tool.govern] in pyproject.toml): "
            "the defaults apply"
        )
        return
    table = "[tool.govern]" if found.at else "the top level"
    typer.echo(f"ok: {found.path} ({table})")
    for line in _loaded(config):
        typer.echo(f"  {line}")
    if found.path.name == ".govern.toml" and config_file is None:
        try:
            shadowed = find_config(path, path / "pyproject.toml")
        except ConfigError:
            shadowed = None
        if shadowed is not None and shadowed.at:
            typer.echo(
                "note: [tool.govern] in pyproject.toml is not read: .govern.toml comes first"
            )


def _loaded(config: Config) -> list[str]:
    """What was loaded, one line per part that is set."""
    lines = [f"policy: {config.policy or 'default'}"]
    if config.repository:
        lines.append(f"repository: {config.repository}")
    if config.include or config.exclude:
        lines.append(f"sources: include {list(config.include)}, exclude {list(config.exclude)}")
    if config.profiles:
        shown = ", ".join(f"{p.name} ({p.python or 'this interpreter'})" for p in config.profiles)
        lines.append(f"profiles: {shown}")
    if config.ci:
        shown = ", ".join(f"{c.name} ({c.provider})" for c in config.ci)
        lines.append(f"ci: {shown}; verify-with: {config.verify_with or 'none'}")
    propose = config.propose
    lines.append(
        f"propose: via {propose.via} to {propose.remote}, base "
        f"{propose.base or 'the remote default branch'}, mode {propose.mode}"
    )
    if config.annotations:
        lines.append(f"annotations: {len(config.annotations)}")
    return lines
