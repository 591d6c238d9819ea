"""Every advisory lock govern takes on PostgreSQL, in one place, with its key.

SQLite needs none of them: a write transaction (``BEGIN IMMEDIATE``) already holds the
whole database's write lock, so each function here does nothing there. On PostgreSQL the
transaction-scoped ones (``pg_advisory_xact_lock``) end with the transaction; the daemon's
is session-scoped and lives as long as the connection that took it. The keys are part of
the store's contract: two govern versions sharing one database must take the same ones.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from sqlalchemy import Connection, func, select, text

if TYPE_CHECKING:  # the ORM loads only for the commands that use it (db.py imports this)
    from sqlmodel import Session

#: The lock key of schema migrations (any fixed 63-bit number: "govern" in ASCII).
MIGRATION_KEY = 0x676F7665726E


def advisory_key(name: str) -> int:
    """A signed 64-bit lock key from a name (the first 8 bytes of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big", signed=True)


def _postgresql(on: Session | Connection) -> bool:
    dialect = on.dialect if isinstance(on, Connection) else on.get_bind().dialect
    return dialect.name == "postgresql"


def _hold(on: Session | Connection, key: int) -> None:
    """Wait for and hold the transaction-scoped lock ``key`` (PostgreSQL only)."""
    if _postgresql(on):
        on.execute(select(func.pg_advisory_xact_lock(key)))


def repository(on: Session | Connection, *, name: str) -> None:
    """One sync of a repository at a time: a second waits for the first to commit, then
    sees its rows."""
    _hold(on, advisory_key(name))


def poll(on: Session | Connection) -> None:
    """One poll writes at a time."""
    _hold(on, advisory_key("poll"))


def outbox(on: Session | Connection, *, key: str) -> None:
    """One run at a time decides whether to send the outbox row ``key``."""
    _hold(on, advisory_key(f"outbox:{key}"))


def migration(on: Connection) -> None:
    """One schema migration of a database at a time."""
    _hold(on, MIGRATION_KEY)


def try_daemon(connection: Connection) -> tuple[str, bool]:
    """Try the daemon's session-level lock on the store's schema (PostgreSQL): the schema's
    name, and whether this connection now holds the lock (it holds it until it closes)."""
    schema = connection.execute(text("SELECT current_schema()")).scalar() or ""
    key = advisory_key(f"govern daemon {schema}")
    taken = connection.execute(select(func.pg_try_advisory_lock(key))).scalar()
    return str(schema), bool(taken)
