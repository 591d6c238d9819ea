"""What the store holds of a repository's last sync, read before the sync's lock and
without the ORM (a ``govern track`` of an unchanged repository stops here).

Whether anything changed since the last sync (the tree hash it stored, the sources present,
how many exclusions are active), and what each source holds (its replay marker and its
active keys), so that git is read before the repository's lock is taken. The writes under
the lock are in :mod:`govern.store.tracking`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Row, func, select

from govern.store.core import Rows
from govern.store.schema import exclusion as _EXCLUSION
from govern.store.schema import repository as _REPOSITORY
from govern.store.schema import source as _SOURCE


def repository(conn: Connection, *, name: str) -> Row[int, str | None] | None:
    """A repository's id and the tree hash its last sync stored (None: never synced)."""
    r = _REPOSITORY.c
    return conn.execute(select(r.id, r.synced_tree_hash).where(r.name == name)).first()


def present_sources(conn: Connection, *, repository_id: int) -> Rows:
    """The sources a repository has now: path, commit (the newest replayed)."""
    s = _SOURCE.c
    query = select(s.path, s.commit).where(s.repository_id == repository_id, s.present.is_(True))
    return conn.execute(query).all()


def active_exclusions(conn: Connection, *, repository_id: int) -> int:
    """How many exclusions of a repository are not removed."""
    e = _EXCLUSION.c
    query = (
        select(func.count())
        .select_from(_EXCLUSION)
        .where(e.repository_id == repository_id, e.removed_at.is_(None))
    )
    return int(conn.execute(query).scalar_one())


@dataclass(frozen=True, slots=True)
class SourceState:
    """What the store holds for one source of a repository (read without a lock)."""

    commit: str | None  # the newest commit replayed
    keys: frozenset[str]  # its exclusions now active
    tracked: bool  # any exclusion ever recorded for it


def stored_sources(conn: Connection, *, name: str) -> dict[str, SourceState]:
    """Per source path: its replay marker and active keys (empty for a new repository)."""
    found = repository(conn, name=name)
    if found is None:
        return {}
    s, e = _SOURCE.c, _EXCLUSION.c
    paths: dict[int, tuple[str, str | None]] = {
        row.id: (row.path, row.commit)
        for row in conn.execute(select(s.id, s.path, s.commit).where(s.repository_id == found.id))
    }
    keys: dict[int, set[str]] = {source_id: set() for source_id in paths}
    tracked: set[int] = set()
    for row in conn.execute(
        select(e.source_id, e.key, e.removed_at).where(e.repository_id == found.id)
    ):
        tracked.add(row.source_id)
        if row.removed_at is None:
            keys[row.source_id].add(row.key)
    return {
        path: SourceState(commit, frozenset(keys[source_id]), source_id in tracked)
        for source_id, (path, commit) in paths.items()
    }
