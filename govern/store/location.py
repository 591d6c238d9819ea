"""Where the store is, and the facts about it that need no database library.

The URL, the schema revision, SQLite's connection settings, timestamps in
UTC and the errors a driver raises: for :mod:`govern.store.db` and the store's queries,
and for the daemon's lock, which tells its failures as the store does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from govern.errors import StoreError
from govern.redact import redact

ENV_VAR = "GOVERN_DATABASE_URL"
#: The newest revision in migrations/versions (a test checks they agree). A database at
#: this revision is opened without loading Alembic at all (a start-up cost per command).
SCHEMA_REVISION = "0013"
# How long a writer waits for another one's transaction. Git is read before the lock is
# taken, so a sync holds it only for its database work; ten minutes is generous.
SQLITE_BUSY_MS = 600_000
#: Every SQLite connection's settings: WAL (readers never wait for the writer), foreign
#: keys, and a writer that waits for the lock instead of failing.
SQLITE_PRAGMAS = (
    f"PRAGMA busy_timeout = {SQLITE_BUSY_MS}",
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA synchronous = NORMAL",
)


def default_url() -> str:
    """SQLite in the user's data directory (created on first use)."""
    from platformdirs import user_data_path

    return f"sqlite:///{user_data_path('govern', appauthor=False) / 'govern.db'}"


def resolve_url(
    cli: str | None, environ: Mapping[str, str] | None = None, configured: str | None = None
) -> str:
    """The database URL: ``--db``, else the environment, else configuration, else the default.

    A bare path (``--db ./govern.db``) means SQLite at that path.
    """
    env = os.environ if environ is None else environ
    for value in (cli, env.get(ENV_VAR), configured):
        if value:
            return value if "://" in value else f"sqlite:///{Path(value).expanduser().absolute()}"
    return default_url()


def as_utc(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (SQLite hands back naive ones)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def unusable(display_url: str, exc: BaseException) -> StoreError:
    """The database cannot be used (locked, unreachable, ...): the driver's reason, redacted."""
    if "database is locked" in str(exc):
        tip = "Another govern run has held the database's write lock for long; retry when it ends."
    else:
        tip = f"Check --db / {ENV_VAR}, and that the server is running."
    return StoreError(f"cannot use the database at {display_url}: {first_line(exc)}", tip=tip)


def refused(display_url: str, exc: BaseException) -> StoreError:
    """The database refused a statement (a constraint, a type): the driver's reason."""
    return StoreError(
        f"the database at {display_url} refused a change: {first_line(exc)}",
        tip="Rerun the command; if it fails again, report it with --debug.",
    )


def first_line(exc: BaseException) -> str:
    """The first line of a driver's error (SQLAlchemy's wrapped one too), credentials hidden."""
    origin = getattr(exc, "orig", None) or exc
    lines = str(origin).strip().splitlines()
    return redact(lines[0] if lines else type(exc).__name__)
