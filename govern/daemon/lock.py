"""One daemon per store: two would poll the index twice and race on the same candidates.

Notes: docs/internals.md#daemon.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from govern.errors import GovernError, UsageError
from govern.store.location import first_line, unusable

if TYPE_CHECKING:
    from govern.store.db import Store

_TIP = "Stop the other daemon first; one daemon per store is enough (it polls for all)."


class DaemonRunning(GovernError):
    """Another ``govern daemon`` holds the store."""


class LockLost(GovernError):
    """The daemon no longer holds its store's lock."""


@dataclass(frozen=True, slots=True)
class Held:
    """The lock a daemon holds: what it is, and how to check it is still held."""

    what: str
    check: Callable[[], None]


@contextlib.contextmanager
def single_instance(store: Store) -> Iterator[Held]:
    """Hold the store's daemon lock while the block runs."""
    # PostgreSQL: a lock on the store's schema, so daemons on other machines sharing the store
    # exclude each other (and stores in other schemas of one database do not).
    if store.dialect == "postgresql":
        with _advisory(store) as held:
            yield held
        return
    database = sqlite_file(store.engine.url.database)
    if database is None:
        raise UsageError(
            "an in-memory store ends with the daemon: nothing it records would be kept",
            tip="Give --db a SQLite file or a PostgreSQL URL.",
        )
    # SQLite: a flock beside the file, released by the kernel however the process ends.
    with _flock(Path(f"{database.resolve()}.daemon-lock")) as held:
        yield held


def sqlite_file(database: str | None) -> Path | None:
    """The file of a SQLite store (a path, or a ``file:`` URI); None in memory."""
    if not database or database == ":memory:":
        return None
    if database.startswith("file:"):
        parts = urlsplit(database)
        options = parse_qs(parts.query)
        if options.get("mode") == ["memory"] or parts.path in ("", ":memory:"):
            return None
        return Path(parts.path)
    return Path(database)


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[Held]:
    import fcntl

    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(descriptor, 32, 0).decode("ascii", "replace").strip()
            raise DaemonRunning(
                f"another govern daemon holds this store ({path}"
                + (f", pid {owner})" if owner.isdigit() else ")"),
                tip=_TIP,
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode("ascii"), 0)
        inode = os.fstat(descriptor).st_ino

        def check() -> None:
            try:
                same = os.stat(path).st_ino == inode
            except OSError:
                same = False
            if not same:
                raise LockLost(
                    f"the daemon's lock file {path} was removed or replaced: another daemon "
                    "could start beside this one",
                    tip="Start the daemon again (and leave its lock file alone).",
                )

        yield Held(str(path), check)
    finally:
        os.close(descriptor)  # closing releases the lock


@contextlib.contextmanager
def _advisory(store: Store) -> Iterator[Held]:
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError, SQLAlchemyError

    from govern.store import locks

    try:
        connection = store.engine.connect()
    except DBAPIError as exc:
        raise unusable(store.display_url, exc) from None
    try:
        try:
            schema, held = locks.try_daemon(connection)
            connection.commit()
        except DBAPIError as exc:
            raise unusable(store.display_url, exc) from None
        if not held:
            raise DaemonRunning(
                f"another govern daemon holds this store ({store.display_url}, schema {schema})",
                tip=_TIP,
            )
        for setting in ("idle_session_timeout", "idle_in_transaction_session_timeout"):
            # The lock's connection is idle between jobs: a server that ends idle sessions
            # would end the lock with it. (Unknown before PostgreSQL 14: then nothing to do.)
            try:
                connection.execute(text(f"SET {setting} = 0"))
                connection.commit()
            except DBAPIError:
                connection.rollback()

        def check() -> None:
            try:
                connection.execute(text("SELECT 1")).scalar()
                connection.commit()
            except SQLAlchemyError as exc:  # the driver's error, or "invalid transaction" after it
                raise LockLost(
                    f"the connection holding the daemon's lock on {store.display_url} was "
                    f"lost ({first_line(exc)}): another daemon could start beside this one",
                    tip="Start the daemon again once the database is reachable.",
                ) from None

        yield Held(f"advisory lock on {store.display_url}, schema {schema}", check)
    finally:
        # Ending the session releases the lock: no unlock statement to wait on (over a
        # stalled network it would hang the exit), and the connection does not go back
        # to the pool still holding it.
        with contextlib.suppress(SQLAlchemyError):
            connection.invalidate()
        with contextlib.suppress(SQLAlchemyError):
            connection.close()
