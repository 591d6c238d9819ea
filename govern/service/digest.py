"""Whether a repository changed since its last sync, without loading the ORM.

A sync reads files, the configuration and (for a repository whose history is replayed)
HEAD; when none of them changed, a re-sync has nothing to do. The daemon re-syncs every
repository on a schedule and most have not changed: this check costs a hash of each
source and two small queries, in plain SQL (SQLModel and the models are not imported).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import column, func, select, table

from govern.config import Config
from govern.store.db import Store

_REPOSITORY = table("repository", column("id"), column("name"), column("digest"))
_SOURCE = table(
    "source",
    column("id"),
    column("repository_id"),
    column("path"),
    column("present"),
    column("commit"),
)
_EXCLUSION = table(
    "exclusion", column("repository_id"), column("source_id"), column("key"), column("removed_at")
)


def tree_digest(
    root: Path, config: Config, name: str, files: Iterable[Path], head: str | None
) -> str | None:
    """A hash of everything a sync of ``root`` reads, or None when that cannot be known.

    The files' bytes, the configuration, the repository's name, govern's version and,
    for a repository whose history is replayed, HEAD. A file that uses ``${VAR}`` reads
    the environment too: then there is no digest (every sync runs in full).
    """
    from govern import __version__

    digest = hashlib.sha256()
    for part in (__version__, name, repr(config), head or ""):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    for path in sorted({_relative(root, file) for file in files}):
        try:
            data = (root / path).read_bytes()
        except OSError:
            data = None
        if data is not None and b"${" in data:
            return None
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(hashlib.sha256(data).digest() if data is not None else b"missing")
    return digest.hexdigest()


def _relative(root: Path, file: Path) -> str:
    try:
        return file.relative_to(root).as_posix()
    except ValueError:
        return file.as_posix()


@dataclass(frozen=True, slots=True)
class Unchanged:
    """A repository whose sync would change nothing: what the store holds for it."""

    sources: int
    exclusions: int


def unchanged(
    store: Store,
    root: Path,
    name: str,
    config: Config,
    discovered: list[Path],
    head: str | None,
    *,
    history: bool = False,
) -> Unchanged | None:
    """The store's counts when a sync of ``root`` has nothing to do, else None.

    Nothing to do: the digest of the files read last time and now, the configuration,
    govern's version and HEAD (when the history is replayed) is the one the last sync
    stored, and ``--history`` has nothing left to backfill.
    """
    with store.connection() as connection:
        found = connection.execute(
            select(_REPOSITORY.c.id, _REPOSITORY.c.digest).where(_REPOSITORY.c.name == name)
        ).first()
        if found is None or found.digest is None:
            return None
        present = connection.execute(
            select(_SOURCE.c.path, _SOURCE.c.commit).where(
                _SOURCE.c.repository_id == found.id, _SOURCE.c.present.is_(True)
            )
        ).all()
        replaying = any(row.commit for row in present)
        if history and not all(row.commit for row in present):
            return None
        files = [*discovered, *(root / row.path for row in present)]
        if tree_digest(root, config, name, files, head if replaying else None) != found.digest:
            return None
        active = connection.execute(
            select(func.count())
            .select_from(_EXCLUSION)
            .where(_EXCLUSION.c.repository_id == found.id, _EXCLUSION.c.removed_at.is_(None))
        ).scalar_one()
    return Unchanged(sources=len(present), exclusions=int(active))


@dataclass(frozen=True, slots=True)
class StoredSource:
    """What the store holds for one source of a repository (read without a lock)."""

    commit: str | None  # the newest commit replayed
    keys: frozenset[str]  # its exclusions now active
    tracked: bool  # any exclusion ever recorded for it


def stored_sources(store: Store, name: str) -> dict[str, StoredSource]:
    """Per source path: its replay marker and active keys (empty for a new repository)."""
    with store.connection() as connection:
        found = connection.execute(
            select(_REPOSITORY.c.id).where(_REPOSITORY.c.name == name)
        ).first()
        if found is None:
            return {}
        paths: dict[int, tuple[str, str | None]] = {
            row.id: (row.path, row.commit)
            for row in connection.execute(
                select(_SOURCE.c.id, _SOURCE.c.path, _SOURCE.c.commit).where(
                    _SOURCE.c.repository_id == found.id
                )
            )
        }
        keys: dict[int, set[str]] = {source_id: set() for source_id in paths}
        tracked: set[int] = set()
        for row in connection.execute(
            select(_EXCLUSION.c.source_id, _EXCLUSION.c.key, _EXCLUSION.c.removed_at).where(
                _EXCLUSION.c.repository_id == found.id
            )
        ):
            tracked.add(row.source_id)
            if row.removed_at is None:
                keys[row.source_id].add(row.key)
    return {
        path: StoredSource(commit, frozenset(keys[source_id]), source_id in tracked)
        for source_id, (path, commit) in paths.items()
    }
