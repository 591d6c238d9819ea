"""Whether a repository changed since its last sync: then a re-sync has nothing to do.

A sync reads files, the configuration and (for a repository whose history is replayed)
HEAD; when none of them changed, a re-sync has nothing to do. The daemon re-syncs every
repository on a schedule and most have not changed: this check costs a hash of each
source and three small queries (:mod:`govern.store.synced`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from govern.config import Config
from govern.store import synced
from govern.store.db import Store


def tree_hash(
    root: Path, config: Config, name: str, files: Iterable[Path], head: str | None
) -> str | None:
    """A hash of everything a sync of ``root`` reads, or None when that cannot be known.

    The files' bytes, the configuration, the repository's name, govern's version and,
    for a repository whose history is replayed, HEAD. A file that uses ``${VAR}`` reads
    the environment too: then there is no tree hash (every sync runs in full).
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

    Nothing to do: the tree hash of the files read last time and now, the configuration,
    govern's version and HEAD (when the history is replayed) is the one the last sync
    stored, and ``--history`` has nothing left to backfill.
    """
    with store.connection() as conn:
        found = synced.repository(conn, name=name)
        if found is None or found.synced_tree_hash is None:
            return None
        present = synced.present_sources(conn, repository_id=found.id)
        replaying = any(row.commit for row in present)
        if history and not all(row.commit for row in present):
            return None
        files = [*discovered, *(root / row.path for row in present)]
        hashed = tree_hash(root, config, name, files, head if replaying else None)
        if hashed != found.synced_tree_hash:
            return None
        active = synced.active_exclusions(conn, repository_id=found.id)
    return Unchanged(sources=len(present), exclusions=active)
