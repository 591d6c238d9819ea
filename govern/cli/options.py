"""The options several commands share (``--db``, ``--index-url``, ``--config``, ``--format``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from govern.cli.output import ViewFormat

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database URL or SQLite file (else GOVERN_DATABASE_URL, else `database` in "
        "[tool.govern], else SQLite in the user's data directory).",
        show_default=False,
    ),
]


IndexOption = Annotated[
    str | None,
    typer.Option(
        "--index-url",
        help="The Simple API root (else index-url in [tool.govern], else pip's configuration).",
        show_default=False,
    ),
]

ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="A .govern.toml to use instead of here.")
]

FormatOption = Annotated[ViewFormat, typer.Option("--format", "-f", help="Output format.")]
