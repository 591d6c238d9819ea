"""The outbox's rows: every statement on the ``Outbox`` table, its keys, and the reads pages use.

A row is claimed, marked sent (confirmed, or unconfirmed), failed or dead, and superseded
here; :func:`govern.service.outbox.deliver` keeps the flow (claim, look, send, mark) and the
policy (attempts, backoff, leases). Keys are built by :func:`outbox_key` only: a key's
first part (:class:`KeyKind`) says what it dedupes, and its prefixes (:func:`key_prefix`)
are what supersede and the reads match on, so both must be spelled one way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import func, update
from sqlalchemy import select as columns
from sqlmodel import Session, col, select

from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import OutboxAction, OutboxState
from govern.store import locks, schema
from govern.store.core import Reader, record
from govern.store.location import as_utc
from govern.store.models import Outbox, Proposal, Repository, StoredExclusion, StoredSource
from govern.store.refs import from_row
from govern.store.views import DeliveryPublic

__all__ = [
    "CLAIM",
    "KeyKind",
    "PushRecord",
    "Troubled",
    "claim",
    "deliveries_of",
    "delivery_state",
    "key_prefix",
    "last_sent",
    "mark_failed",
    "mark_sent",
    "mark_unconfirmed",
    "on_channel",
    "open_row",
    "outbox_key",
    "pushed_to",
    "row",
    "start_attempt",
    "supersede",
    "troubled",
]

CLAIM = "claimed"  # the key of a sending row's result that says who sends it
_SEP = ":"


class KeyKind(StrEnum):
    """The first part of a dedupe key, an outbox row's or a proposal row's: what one key
    stands for (stored; never changes).

    Not the action: a comment left on a branch govern leaves alone is keyed ``left-alone``,
    a reminder's key names its channel after the message's key."""

    # Proposal rows (``Proposal.dedupe_key``): one per exclusion and version proposed.
    PROPOSAL = "proposal"  # proposal:<exclusion>:<version> (a branch or change request)
    REMINDER = "reminder"  # reminder:<exclusion>:<version>
    SUPERSEDED = "superseded"  # superseded:<exclusion>:<version> (the line changed by hand)
    # Outbox rows (``Outbox.dedupe_key``).
    PUSH = "push"  # push:<exclusion>:<sha-256 of the file pushed>
    CHANGE = "change"  # change:<exclusion>:<version>
    LABELS = "labels"  # labels:<exclusion>:<change number>
    LEFT_ALONE = "left-alone"  # left-alone:<exclusion>:<version>
    CLOSE = "close"  # close:<proposal key>:<change number>
    REMIND = "remind"  # remind:<exclusion>:<version>[:<channel>]
    DIGEST = "digest"  # digest:<repository>:<period>[:<channel>]
    PENDING = "pending"  # pending:<repository>:<row last sent>:<body digest>


def outbox_key(kind: KeyKind, *parts: str | int) -> str:
    """The dedupe key ``<kind>:<part>:<part>...``: one action (or proposal row) per key,
    ever. Every outbox and proposal key is built here."""
    return _SEP.join([kind.value, *(str(part) for part in parts)])


def key_prefix(kind: KeyKind, *parts: str | int) -> str:
    """The prefix every key of ``kind`` with these first parts starts with (ends in ``:``,
    so ``push:a`` never matches ``push:ab:...``)."""
    return outbox_key(kind, *parts) + _SEP


# The keys whose first part after the kind is an exclusion's key, and a repository's.
_BY_EXCLUSION = frozenset(
    {KeyKind.PUSH, KeyKind.CHANGE, KeyKind.LABELS, KeyKind.LEFT_ALONE, KeyKind.REMIND}
)
_BY_REPOSITORY = frozenset({KeyKind.DIGEST, KeyKind.PENDING})


def owned_by(
    key: str, *, exclusions: Collection[str], repository: str, proposals: Collection[str]
) -> bool:
    """Whether an outbox row's key belongs to these exclusions (their keys), this repository
    (its name as keys spell it) or these proposal rows (their keys): the layout of
    :func:`outbox_key` read back."""
    kind, _, rest = key.partition(_SEP)
    first = rest.split(_SEP, 1)[0]
    if kind in _BY_EXCLUSION:
        return first in exclusions
    if kind in _BY_REPOSITORY:
        return first == repository
    if kind == KeyKind.CLOSE:  # close:<proposal key>:<change number>
        return any(rest.startswith(p + _SEP) for p in proposals)
    return False


def on_channel(key: str, channel: str) -> str:
    """A message's key on one channel: each channel is sent (and deduped) on its own."""
    return f"{key}{_SEP}{channel}"


# -- the flow's statements -------------------------------------------------------------


def row(session: Session, *, key: str) -> Outbox | None:
    """The outbox row with this dedupe key."""
    return session.exec(select(Outbox).where(col(Outbox.dedupe_key) == key)).first()


def _required(session: Session, key: str) -> Outbox:
    found = row(session, key=key)
    if found is None:  # the flow wrote it first: a missing row is a bug, not a remote answer
        raise LookupError(f"no outbox row {key!r}")
    return found


def open_row(
    session: Session,
    *,
    key: str,
    action: OutboxAction,
    proposal_id: int | None,
    now: datetime,
) -> Outbox:
    """The row for ``key``, written (``pending``) when new, with the key's lock held for
    the rest of the transaction (:func:`govern.store.locks.outbox`): one run decides at a
    time."""
    locks.outbox(session, key=key)
    found = row(session, key=key)
    if found is None:
        found = Outbox(dedupe_key=key, action=action, proposal_id=proposal_id, created_at=now)
        session.add(found)
        session.flush()
    return found


def claim(session: Session, claimed: Outbox, *, holder: dict[str, Any], until: datetime) -> None:
    """Mark ``claimed`` sending by ``holder`` until ``until`` (its lease), before anything
    is looked for or sent, so no other run takes it meanwhile."""
    claimed.state = OutboxState.SENDING
    claimed.result = {CLAIM: holder}
    claimed.next_attempt_at = until
    session.add(claimed)


def start_attempt(session: Session, *, key: str, holder: dict[str, Any]) -> None:
    """Count one more attempt and say the request is about to leave (``sending: True``):
    from here on, a crash may have sent it."""
    found = _required(session, key)
    found.attempts += 1
    found.result = {CLAIM: {**holder, "sending": True}}
    session.add(found)


def mark_sent(
    session: Session,
    *,
    key: str,
    result: dict[str, Any],
    now: datetime,
    supersedes: str | None = None,
) -> None:
    """Mark ``key`` sent with what the other side answered; then supersede the unsent rows
    whose key starts with ``supersedes`` (:func:`supersede`)."""
    found = _required(session, key)
    found.state = OutboxState.SENT
    found.result = result
    found.sent_at = now
    found.last_error = None
    found.next_attempt_at = None
    session.add(found)
    if supersedes is not None:
        supersede(session, prefix=supersedes, sent=key)


def mark_unconfirmed(
    session: Session, *, key: str, now: datetime, error: str | None = None
) -> dict[str, Any]:
    """Mark ``key`` sent without a confirmation (its first attempt may have arrived; it is
    not sent again); returns the result recorded."""
    found = _required(session, key)
    unconfirmed: dict[str, Any] = {OutboxState.UNCONFIRMED.value: True, "attempts": found.attempts}
    if error:
        unconfirmed["error"] = error[:500]
    found.state = OutboxState.SENT
    found.result = unconfirmed
    found.sent_at = now
    found.next_attempt_at = None
    session.add(found)
    return unconfirmed


def mark_failed(
    session: Session,
    *,
    key: str,
    error: str,
    max_attempts: int,
    wait: Callable[[int], timedelta],
    now: datetime,
) -> OutboxState:
    """Record a failure: ``dead`` after ``max_attempts``, else ``failed`` and due again
    after ``wait(attempts)``. Returns the state recorded."""
    found = _required(session, key)
    found.attempts = max(found.attempts, 1)
    dead = found.attempts >= max_attempts
    found.state = OutboxState.DEAD if dead else OutboxState.FAILED
    found.result = {}
    found.last_error = error[:2000]
    found.next_attempt_at = None if dead else now + wait(found.attempts)
    session.add(found)
    return found.state


def supersede(session: Session, *, prefix: str, sent: str) -> int:
    """Mark the unsent rows whose key starts with ``prefix`` (but ``sent``) superseded: a
    newer action for the same thing went out. Returns how many."""
    # One UPDATE whose condition the database checks again on each row it locks: a row
    # another run claimed meanwhile (sending) is left to it. Asked for again later (a file
    # back as it was), a superseded action starts afresh.
    done = session.execute(
        update(Outbox)
        .where(
            col(Outbox.dedupe_key).startswith(prefix, autoescape=True),
            col(Outbox.dedupe_key) != sent,
            col(Outbox.state).in_((OutboxState.PENDING, OutboxState.FAILED, OutboxState.DEAD)),
        )
        .values(state=OutboxState.SUPERSEDED, attempts=0, next_attempt_at=None)
    )
    return int(getattr(done, "rowcount", 0) or 0)


# -- reads -----------------------------------------------------------------------------


def last_sent(session: Session, *, action: OutboxAction, prefix: str) -> Outbox | None:
    """The newest sent outbox row of ``action`` whose key starts with ``prefix``."""
    return session.exec(
        select(Outbox)
        .where(
            col(Outbox.action) == action,
            col(Outbox.state) == OutboxState.SENT,
            col(Outbox.dedupe_key).startswith(prefix, autoescape=True),
        )
        .order_by(col(Outbox.id).desc())
    ).first()


@dataclass(frozen=True, slots=True)
class PushRecord:
    """The branch govern last pushed an exclusion's change to, and every commit govern
    pushed there (a tip among them is govern's to replace; any other is someone else's)."""

    branch: str
    shas: frozenset[str]


def pushed_to(session: Session, *, prefix: str) -> PushRecord | None:
    """What the sent ``push`` rows whose key starts with ``prefix`` record: the newest
    one's branch and the commits pushed to it (a branch left alone adds none)."""
    rows = session.exec(
        select(Outbox)
        .where(
            col(Outbox.action) == OutboxAction.PUSH,
            col(Outbox.state) == OutboxState.SENT,
            col(Outbox.dedupe_key).startswith(prefix, autoescape=True),
        )
        .order_by(col(Outbox.id))
    ).all()
    branch: str | None = None
    shas: dict[str, set[str]] = {}
    for pushed in rows:
        said, sha = pushed.result.get("branch"), pushed.result.get("sha")
        if not isinstance(said, str):
            continue
        branch = said
        if isinstance(sha, str) and pushed.result.get("outcome") != "foreign":
            shas.setdefault(said, set()).add(sha)
    return None if branch is None else PushRecord(branch, frozenset(shas.get(branch, ())))


@dataclass(frozen=True, slots=True)
class Troubled:
    """An outgoing action that failed (retried at ``next_attempt``) or gave up (``dead``),
    with the exclusion it was for (None: a repository's pending issue or digest)."""

    action: str
    state: str
    attempts: int
    error: str | None
    next_attempt: datetime | None
    ref: ExclusionRef | None  # None: not one exclusion's


def troubled(session: Session, *, limit: int = 20) -> tuple[int, list[Troubled]]:
    """Failed and dead outbox rows, newest first (at most ``limit``), and how many in all:
    what the dashboard's front page lists for a person to look at."""
    where = col(Outbox.state).in_((OutboxState.FAILED, OutboxState.DEAD))
    total = session.execute(columns(func.count()).select_from(Outbox).where(where)).one()[0]
    rows = session.exec(
        select(Outbox, StoredExclusion, StoredSource, Repository)
        .outerjoin(Proposal, col(Proposal.id) == col(Outbox.proposal_id))
        .outerjoin(StoredExclusion, col(StoredExclusion.id) == col(Proposal.exclusion_id))
        .outerjoin(StoredSource, col(StoredSource.id) == col(StoredExclusion.source_id))
        .outerjoin(Repository, col(Repository.id) == col(StoredExclusion.repository_id))
        .where(where)
        .order_by(col(Outbox.id).desc())
        .limit(limit)
    ).all()
    return int(total), [
        Troubled(
            action=found.action,
            state=found.state,
            attempts=found.attempts,
            error=found.last_error,
            next_attempt=as_utc(found.next_attempt_at) if found.next_attempt_at else None,
            ref=(
                from_row(exclusion, repository=repo.name, source=source.path)
                if exclusion is not None and source is not None and repo is not None
                else None
            ),
        )
        for found, exclusion, source, repo in rows
    ]


def delivery_state(found: Any) -> OutboxState:
    """The state an outbox row is shown in: ``unconfirmed`` for one marked sent whose send
    may have been lost (a person may check it arrived), else its stored state."""
    said = found.result if isinstance(found.result, dict) else {}
    if found.state == OutboxState.SENT and said.get(OutboxState.UNCONFIRMED) is True:
        return OutboxState.UNCONFIRMED
    return OutboxState(found.state)


def deliveries_of(
    session: Reader, *, proposal_ids: Sequence[int]
) -> dict[int, list[DeliveryPublic]]:
    """The outbox rows of these proposals as shown on an exclusion's page, oldest first."""
    sent: dict[int, list[DeliveryPublic]] = defaultdict(list)
    if not proposal_ids:
        return sent
    rows = session.execute(
        columns(schema.outbox)
        .where(schema.outbox.c.proposal_id.in_(list(proposal_ids)))
        .order_by(schema.outbox.c.id)
    )
    for o in (record(row, schema.outbox) for row in rows):
        sent[o.proposal_id or 0].append(
            DeliveryPublic(
                action=o.action,
                state=delivery_state(o),
                attempts=o.attempts,
                error=o.last_error,
                next_attempt=as_utc(o.next_attempt_at) if o.next_attempt_at else None,
                sent=as_utc(o.sent_at) if o.sent_at else None,
                note=o.result.get("note") if isinstance(o.result.get("note"), str) else None,
            )
        )
    return sent
