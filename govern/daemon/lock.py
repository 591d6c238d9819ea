"""One daemon per store: two would poll the index twice and race on the same candidates.

On SQLite the lock is an exclusive ``flock`` on a file beside the database
(``govern.db.daemon-lock``, holding the owner's pid), released by the kernel when the
process ends, however it ends. On PostgreSQL it is a session-level advisory lock, held
by one connection for the daemon's life, so that daemons on different machines
sharing one database exclude each other too.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from govern.errors import GovernError
from govern.store.location import advisory_key

if TYPE_CHECKING:
    from govern.store.db import Store

_TIP = "Stop the other daemon first; one daemon per store is enough (it polls for all)."


class DaemonRunning(GovernError):
    """Another ``govern daemon`` holds the store."""


@contextlib.contextmanager
def single_instance(store: Store) -> Iterator[str]:
    """Hold the store's daemon lock while the block runs; what holds it, as text."""
    if store.dialect == "postgresql":
        with _advisory(store) as held:
            yield held
        return
    database = store.engine.url.database
    if not database or database == ":memory:":  # nothing else can open it
        yield "an in-memory store"
        return
    with _flock(Path(f"{Path(database).resolve()}.daemon-lock")) as held:
        yield held


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[str]:
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
        yield str(path)
    finally:
        os.close(descriptor)  # closing releases the lock


@contextlib.contextmanager
def _advisory(store: Store) -> Iterator[str]:
    from sqlalchemy import text

    key = advisory_key("daemon")
    with store.engine.connect() as connection:
        taken = connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": key})
        if not taken.scalar():
            raise DaemonRunning(
                f"another govern daemon holds this store ({store.display_url})", tip=_TIP
            )
        connection.commit()
        try:
            yield f"advisory lock {key} on {store.display_url}"
        finally:
            connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
            connection.commit()
