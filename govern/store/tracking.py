"""The sync's reads and writes of a repository under its lock, on the models' tables.

Under the lock (:func:`lock_repository`): the rows :class:`govern.service.sync.Sync`
compares, and its writes in batches (a few dozen statements for 10,000 exclusions). What is
read before the lock, without the ORM, is in :mod:`govern.store.synced`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlmodel import Session, col
from sqlmodel import select as orm_select

from govern.store import locks
from govern.store.core import Rows, chunks
from govern.store.db import BULK
from govern.store.models import (
    Candidate,
    Event,
    LockPin,
    Outbox,
    Proposal,
    Repository,
    StoredAnnotation,
    StoredExclusion,
    StoredSource,
    Verification,
    as_utc,
)
from govern.store.outbox import owned_by
from govern.store.views import LockHeld

# -- the sync's reads and writes, under the repository's lock -----------------------------

#: The columns of an exclusion a sync compares, in the order :func:`exclusion_rows` gives.
EXCLUSION_FIELDS = (
    "id",
    "key",
    "source_id",
    "package",
    "marker",
    "group",
    "kind",
    "sub_kind",
    "clause",
    "line",
    "requirement",
    "state",
    "removed_at",
    "predecessor_id",
)
#: The annotation fields a sync compares (an ``annotation-changed`` event says which differ).
ANNOTATION_FIELDS = ("reason", "links", "bad_versions", "owner", "review_by", "verify", "profiles")


def lock_repository(session: Session, *, name: str, root: str, now: datetime) -> Repository:
    """The repository's row, created if new, with this transaction holding its lock
    (:func:`govern.store.locks.repository`; SQLite's write session holds the database)."""
    locks.repository(session, name=name)
    found = session.exec(orm_select(Repository).where(Repository.name == name)).first()
    if found is None:
        found = Repository(name=name, root=root, created_at=now)
        session.add(found)
        session.flush()
    elif found.root != root:
        found.root = root
    return found


def sources_of(session: Session, *, repository_id: int) -> list[StoredSource]:
    """Every source row of a repository (present or not)."""
    return list(
        session.exec(orm_select(StoredSource).where(StoredSource.repository_id == repository_id))
    )


def add_source(
    session: Session, *, repository_id: int, path: str, format: str, at: datetime
) -> StoredSource:
    """A new source row, with its id."""
    row = StoredSource(
        repository_id=repository_id, path=path, format=format, first_seen_at=at, last_seen_at=at
    )
    session.add(row)
    session.flush()
    return row


def exclusion_rows(session: Session, *, repository_id: int) -> Rows:
    """Every exclusion of a repository (removed ones too), as :data:`EXCLUSION_FIELDS`."""
    fields = (col(getattr(StoredExclusion, name)) for name in EXCLUSION_FIELDS)
    query = select(*fields).where(col(StoredExclusion.repository_id) == repository_id)
    return session.execute(query).all()


def current_fingerprints(session: Session, *, repository_id: int) -> Rows:
    """The current annotation of each exclusion of a repository: (id, exclusion_id,
    fingerprint)."""
    query = (
        select(
            col(StoredAnnotation.id),
            col(StoredAnnotation.exclusion_id),
            col(StoredAnnotation.fingerprint),
        )
        .join(StoredExclusion, col(StoredExclusion.id) == col(StoredAnnotation.exclusion_id))
        .where(col(StoredExclusion.repository_id) == repository_id, col(StoredAnnotation.current))
    )
    return session.execute(query).all()


def annotation_fields(session: Session, *, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The :data:`ANNOTATION_FIELDS` of the annotation versions ``ids``, by id."""
    fields = [getattr(StoredAnnotation, name) for name in ANNOTATION_FIELDS]
    stored: dict[int, dict[str, Any]] = {}
    for chunk in chunks(ids):
        query = select(col(StoredAnnotation.id), *fields).where(col(StoredAnnotation.id).in_(chunk))
        for found in session.execute(query):
            stored[found[0]] = dict(zip(ANNOTATION_FIELDS, found[1:], strict=True))
    return stored


def insert_exclusions(
    session: Session, *, repository_id: int, rows: Sequence[Mapping[str, Any]]
) -> dict[str, int]:
    """New exclusions of a repository (dicts by column, each with its ``key``), in one
    batch; returns their ids by key."""
    if not rows:
        return {}
    # A plain executemany (pipelined by psycopg), then the ids by key: INSERT ... RETURNING
    # would render thousands of rows into one statement, which psycopg then re-parses
    # placeholder by placeholder (seconds for 10,000 rows).
    session.execute(insert(StoredExclusion), list(rows), execution_options=BULK)
    keys = [row["key"] for row in rows]
    ids: dict[str, int] = {}
    for chunk in chunks(keys):
        query = select(col(StoredExclusion.id), col(StoredExclusion.key)).where(
            col(StoredExclusion.repository_id) == repository_id, col(StoredExclusion.key).in_(chunk)
        )
        ids.update((key, new_id) for new_id, key in session.execute(query))
    return ids


def update_exclusions(session: Session, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """Exclusions by ``id`` (the same other columns set in every dict), in one batch."""
    if rows:
        session.execute(update(StoredExclusion), list(rows))


def retire_annotations(session: Session, *, ids: Sequence[int]) -> None:
    """The annotation versions ``ids`` are no longer current."""
    if ids:
        session.execute(
            update(StoredAnnotation)
            .where(col(StoredAnnotation.id).in_(list(ids)))
            .values(current=False)
        )


def insert_annotations(session: Session, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """New annotation versions (dicts by column), in one batch."""
    if rows:
        session.execute(insert(StoredAnnotation), list(rows), execution_options=BULK)


# -- forgetting a repository (govern untrack) -----------------------------------------------


def forget_repository(session: Session, *, name: str, keyed: str) -> dict[str, int] | None:
    """Delete the repository ``name`` and every row that belongs to it: its sources,
    exclusions, their annotations, events, candidates, verifications and proposals, and
    the outbox rows of those proposals, exclusions and of the repository (``keyed``: its
    name as outbox keys spell it). Releases and index pages are the packages' and stay.

    Returns the rows deleted by table (None: no such repository). One transaction: the
    caller's. The events go too, on purpose: the thread is append-only while the
    repository is tracked, and forgetting it is the one way out.
    """
    locks.repository(session, name=name)  # a sync of it waits, then finds it new
    found = session.exec(orm_select(Repository).where(col(Repository.name) == name)).first()
    if found is None:
        return None
    mine = col(StoredExclusion.repository_id) == found.id
    exclusions = select(col(StoredExclusion.id)).where(mine)
    candidates = select(col(Candidate.id)).where(col(Candidate.exclusion_id).in_(exclusions))
    proposals = select(col(Proposal.id)).where(col(Proposal.exclusion_id).in_(exclusions))
    own = select(col(StoredExclusion.key)).where(mine)
    own_keys = set(session.execute(own).scalars())
    shared: set[str] = set()  # keys another repository holds too (never, in practice)
    for chunk in chunks(sorted(own_keys)):
        elsewhere = select(col(StoredExclusion.key)).where(
            col(StoredExclusion.repository_id) != found.id, col(StoredExclusion.key).in_(chunk)
        )
        shared.update(session.execute(elsewhere).scalars())
    keys = own_keys - shared
    proposal_keys = list(
        session.execute(
            select(col(Proposal.dedupe_key)).where(col(Proposal.exclusion_id).in_(exclusions))
        ).scalars()
    )
    proposal_ids = set(session.execute(proposals).scalars())
    outbox_ids = [
        row_id
        for row_id, key, proposal_id in session.execute(
            select(col(Outbox.id), col(Outbox.dedupe_key), col(Outbox.proposal_id))
        )
        if proposal_id in proposal_ids
        or owned_by(key, exclusions=keys, repository=keyed, proposals=proposal_keys)
    ]
    counts: dict[str, int] = {"outbox": 0}

    def gone(label: str, statement: Any) -> None:
        counts[label] = counts.get(label, 0) + int(
            getattr(session.execute(statement), "rowcount", 0) or 0
        )

    for chunk in chunks(outbox_ids):
        gone("outbox", delete(Outbox).where(col(Outbox.id).in_(chunk)))
    gone("proposals", delete(Proposal).where(col(Proposal.exclusion_id).in_(exclusions)))
    runs = delete(Verification).where(col(Verification.candidate_id).in_(candidates))
    gone("verifications", runs)
    gone("candidates", delete(Candidate).where(col(Candidate.exclusion_id).in_(exclusions)))
    gone("events", delete(Event).where(col(Event.exclusion_id).in_(exclusions)))
    notes = delete(StoredAnnotation).where(col(StoredAnnotation.exclusion_id).in_(exclusions))
    gone("annotations", notes)
    # A line's predecessor is of the same repository (the sync links within one); the
    # guard keeps another repository's row valid all the same.
    session.execute(
        update(StoredExclusion)
        .where(
            col(StoredExclusion.repository_id) != found.id,
            col(StoredExclusion.predecessor_id).in_(exclusions),
        )
        .values(predecessor_id=None)
    )
    gone("exclusions", delete(StoredExclusion).where(mine))
    sources = select(col(StoredSource.id)).where(col(StoredSource.repository_id) == found.id)
    gone("lock pins", delete(LockPin).where(col(LockPin.source_id).in_(sources)))
    gone("sources", delete(StoredSource).where(col(StoredSource.repository_id) == found.id))
    gone("repositories", delete(Repository).where(col(Repository.id) == found.id))
    return counts


# -- what a lock held over time (govern/locks/history.py) ----------------------------------


def open_lock_pins(session: Session, *, source_id: int) -> list[LockHeld]:
    """The versions a lock still holds as its history was last replayed."""
    rows = session.exec(
        orm_select(LockPin).where(LockPin.source_id == source_id, col(LockPin.until).is_(None))
    ).all()
    return [LockHeld(r.package, r.version, as_utc(r.since), r.since_commit) for r in rows]


def record_lock_pins(session: Session, *, source_id: int, held: Sequence[LockHeld]) -> None:
    """Write what :func:`govern.locks.history.held_over_time` found: an interval still open
    in the store is closed, a new one added."""
    open_rows = {
        (r.package, r.version, r.since_commit): r
        for r in session.exec(
            orm_select(LockPin).where(LockPin.source_id == source_id, col(LockPin.until).is_(None))
        )
    }
    new: list[dict[str, Any]] = []
    for item in held:
        row = open_rows.get((item.package, item.version, item.since_commit))
        if row is not None:
            row.until, row.until_commit = item.until, item.until_commit
            continue
        new.append(
            {
                "source_id": source_id,
                "package": item.package[:256],
                "version": item.version[:128],
                "since": item.since,
                "since_commit": item.since_commit,
                "until": item.until,
                "until_commit": item.until_commit,
            }
        )
    if new:  # a bot's lock gives thousands: in batches, without an object each
        session.execute(insert(LockPin), new, execution_options=BULK)


def close_lock_pins(session: Session, *, source_id: int, at: datetime, commit: str | None) -> None:
    """A lock that is gone: every version it still held, held until ``at``."""
    session.execute(
        update(LockPin)
        .where(col(LockPin.source_id) == source_id, col(LockPin.until).is_(None))
        .values(until=at, until_commit=commit)
    )


def forget_lock_pins(session: Session, *, source_id: int) -> None:
    """What a lock was recorded to hold, forgotten (its history is read again)."""
    session.execute(delete(LockPin).where(col(LockPin.source_id) == source_id))
