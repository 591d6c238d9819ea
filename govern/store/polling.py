"""The poll's queries: what the watcher reads and writes, on the models' tables.

A poll reads and writes thousands of rows of a few tables (releases, candidates, events,
index pages) by key, so each function is one Core statement per table and chunk
(:mod:`govern.store.core`): rows go in as dicts keyed by column and come out as rows
named by column. The connection is one of :meth:`govern.store.db.Store.transaction`; a
write takes :func:`lock` first.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from sqlalchemy import Connection, insert, select, update

from govern.exclusions.clause import Clause
from govern.exclusions.model import Kind, SubKind
from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import EventKind, State
from govern.lifecycle import advance
from govern.store import locks
from govern.store.core import Rows, chunks, insert_rows, table, update_rows, where_in
from govern.store.models import (
    Candidate,
    Event,
    IndexPage,
    PollRun,
    Repository,
    StoredAnnotation,
    StoredExclusion,
    StoredRelease,
    StoredSource,
)
from govern.store.queries import failed_versions
from govern.store.refs import from_row

_EXCLUSION = table(StoredExclusion)
_ANNOTATION = table(StoredAnnotation)
_RELEASE = table(StoredRelease)
_CANDIDATE = table(Candidate)
_EVENT = table(Event)
_PAGE = table(IndexPage)
_POLL_RUN = table(PollRun)
_SOURCE = table(StoredSource)
_REPOSITORY = table(Repository)

# Exclusions the watcher looks at: bans have no candidate, and requires-python is not a
# package on the index.
_WATCHED_KINDS = (Kind.NOT_EQUAL, Kind.CAP, Kind.PIN)


@dataclass(frozen=True, slots=True)
class Watched:
    """A tracked exclusion as the watcher needs it: its clause, with its known-bad versions.

    ``clause`` is None when the stored clause cannot be judged. ``ref.clause``, ``kind``
    and ``known_bad`` are as stored (what messages show and what a poll's judging depends
    on, judgeable or not).
    """

    id: int
    ref: ExclusionRef
    state: State
    kind: Kind
    known_bad: tuple[str, ...]
    clause: Clause | None
    others: SpecifierSet | None = None  # the line's other clauses (None: none, or unreadable)

    @property
    def settled(self) -> bool:
        """Nothing left to relax (:attr:`Clause.settled`): not fetched, no candidates."""
        return self.clause is not None and self.clause.settled


def lock(conn: Connection) -> None:
    """One poll writes at a time (:func:`govern.store.locks.poll`)."""
    locks.poll(conn)


def watched(conn: Connection, *, packages: Sequence[str] = ()) -> list[Watched]:
    """Active exclusions the watcher judges (only of ``packages``, when given)."""
    e, a, s, r = _EXCLUSION.c, _ANNOTATION.c, _SOURCE.c, _REPOSITORY.c
    query = (
        select(
            e.id,
            e.key,
            e.line,
            e.package,
            e.requirement,
            e.clause,
            e.marker,
            e.group,
            e.kind,
            e.state,
            a.bad_versions,
            s.path.label("source_path"),
            r.name.label("repository_name"),
        )
        .select_from(
            _EXCLUSION.join(_SOURCE, s.id == e.source_id)
            .join(_REPOSITORY, r.id == e.repository_id)
            .outerjoin(_ANNOTATION, (a.exclusion_id == e.id) & a.current.is_(True))
        )
        .where(
            e.removed_at.is_(None),
            e.kind.in_(_WATCHED_KINDS),
            e.sub_kind != SubKind.SENTINEL,
            e.package != "python",
        )
    )
    if packages:
        query = query.where(e.package.in_(packages))
    failed = failed_versions(conn, ids=None)
    out: list[Watched] = []
    for row in conn.execute(query):
        bad = tuple(sorted({*(row.bad_versions or []), *failed.get(row.id, set())}))
        out.append(
            Watched(
                id=row.id,
                ref=from_row(row, repository=row.repository_name, source=row.source_path),
                state=row.state,
                kind=row.kind,
                known_bad=bad,
                clause=_clause(row.clause, row.kind, bad),
                others=others_of(row.requirement, row.clause),
            )
        )
    return out


@functools.lru_cache(maxsize=4096)
def others_of(requirement: str, clause: str) -> SpecifierSet | None:
    """The clauses of a requirement line other than ``clause`` (None: there are none, or
    the line does not parse: its own clause is judged alone)."""
    try:
        specifier = Requirement(requirement).specifier
    except (InvalidRequirement, ValueError):
        return None
    rest = [spec for spec in specifier if str(spec) != clause]
    return SpecifierSet(",".join(str(spec) for spec in rest)) if rest else None


def settled_ids(conn: Connection, *, exclusion_ids: Sequence[int]) -> set[int]:
    """Of ``exclusion_ids``, those whose thread holds a ``settled`` event already."""
    v = _EVENT.c
    query = select(v.exclusion_id).where(v.kind == EventKind.SETTLED)
    return {row.exclusion_id for row in where_in(conn, query, v.exclusion_id, exclusion_ids)}


def settle(conn: Connection, *, moves: Mapping[int, State]) -> None:
    """Settled exclusions leave the verification workflow: each of ``moves`` (id: the state
    it was read in) goes where the lifecycle's ``settled`` row says, if still there."""
    e = _EXCLUSION.c
    for exclusion_id, before in sorted(moves.items()):
        after = advance(EventKind.SETTLED, before)
        if after != before:
            conn.execute(
                update(_EXCLUSION)
                .where(e.id == exclusion_id, e.state == before)
                .values(state=after)
            )


def _clause(text: str, kind: str, known_bad: tuple[str, ...]) -> Clause | None:
    """A stored clause, parsed (None: it cannot be judged)."""
    try:
        return Clause.parse(text, kind, known_bad=known_bad)
    except ValueError:  # InvalidSpecifier too
        return None


def index_pages(conn: Connection, *, packages: Sequence[str]) -> Rows:
    """The stored ``index_page`` rows of ``packages`` (every column)."""
    return where_in(conn, select(_PAGE), _PAGE.c.package, packages)


def releases_of(conn: Connection, *, packages: Sequence[str]) -> Rows:
    """The stored releases of ``packages``: id, package, version, first_seen_at, files."""
    r = _RELEASE.c
    query = select(r.id, r.package, r.version, r.first_seen_at, r.files)
    return where_in(conn, query, r.package, packages)


def release_ids(conn: Connection, *, packages: Sequence[str]) -> dict[tuple[str, str], int]:
    """Each release's id by (package, version), for ``packages``."""
    r = _RELEASE.c
    rows = where_in(conn, select(r.id, r.package, r.version), r.package, packages)
    return {(row.package, row.version): row.id for row in rows}


@dataclass(frozen=True, slots=True)
class CandidateRow:
    """A stored candidate as the poll compares it with a new judgement.

    ``id`` is 0 for a candidate inserted by the running batch (not read back).
    """

    id: int
    exclusion_id: int
    release_id: int
    profile: str
    eligible: bool
    reason: str | None
    role: str

    @property
    def key(self) -> tuple[int, int, str]:
        """What identifies it: (exclusion id, release id, profile)."""
        return (self.exclusion_id, self.release_id, self.profile)

    def judged(self) -> tuple[bool, str | None, str]:
        """What a poll's judgement sets: (eligible, reason, role)."""
        return (self.eligible, self.reason, self.role)


def candidates_of(conn: Connection, *, exclusion_ids: Sequence[int]) -> list[CandidateRow]:
    """The candidates of some exclusions."""
    c = _CANDIDATE.c
    query = select(c.id, c.exclusion_id, c.release_id, c.profile, c.eligible, c.reason, c.role)
    return [
        CandidateRow(
            id=row.id,
            exclusion_id=row.exclusion_id,
            release_id=row.release_id,
            profile=row.profile,
            eligible=bool(row.eligible),
            reason=row.reason,
            role=row.role,
        )
        for row in where_in(conn, query, c.exclusion_id, exclusion_ids)
    ]


def insert_pages(conn: Connection, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """New ``index_page`` rows."""
    insert_rows(conn, _PAGE, rows)


def update_pages(conn: Connection, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """``index_page`` rows by ``id``: the other keys of each dict are set."""
    update_rows(conn, _PAGE, rows)


def insert_releases(conn: Connection, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """New releases (their ids: :func:`release_ids`)."""
    insert_rows(conn, _RELEASE, rows)


def update_releases(conn: Connection, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """Releases by ``id``: the other keys of each dict are set."""
    update_rows(conn, _RELEASE, rows)


def insert_candidates(conn: Connection, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """New candidates."""
    insert_rows(conn, _CANDIDATE, rows)


def update_candidates(conn: Connection, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """Candidates by ``id``: the other keys of each dict are set."""
    update_rows(conn, _CANDIDATE, rows)


def promote(conn: Connection, *, exclusion_ids: Sequence[int]) -> None:
    """Exclusions ``held`` until now with a ``candidate-found`` event in this batch move as
    the lifecycle's table says (``candidate``); one that moved meanwhile is left alone."""
    e = _EXCLUSION.c
    after = advance(EventKind.CANDIDATE_FOUND, State.HELD)
    for chunk in chunks(sorted(exclusion_ids)):
        conn.execute(
            update(_EXCLUSION).where(e.state == State.HELD, e.id.in_(chunk)).values(state=after)
        )


def record_poll_run(
    conn: Connection, *, started_at: datetime, finished_at: datetime, counts: Mapping[str, int]
) -> None:
    """The row that says a poll happened (for /metrics and the dashboard); ``counts`` by
    column: projects, fetched, not_modified, failed, candidates_found."""
    took = (finished_at - started_at).total_seconds()
    conn.execute(
        insert(_POLL_RUN).values(
            started_at=started_at,
            finished_at=finished_at,
            duration_seconds=round(took, 3),
            **counts,
        )
    )
