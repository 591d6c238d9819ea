"""The proposer's reads and writes: verified work and proposals (the outbox's rows are
:mod:`govern.store.outbox`'s).

Keyword-only functions on a session; :mod:`govern.service.propose` keeps the workflow and
:mod:`govern.service.outbox` the exactly-once protocol.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as columns
from sqlmodel import Session, col, select

from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import (
    CandidateStatus,
    Conclusion,
    EventKind,
    ProposalKind,
    ProposalState,
    RunKind,
    State,
    Via,
)
from govern.store.core import chunks
from govern.store.models import (
    Candidate,
    Event,
    Proposal,
    Repository,
    StoredAnnotation,
    StoredExclusion,
    StoredRelease,
    StoredSource,
    Verification,
    as_utc,
)
from govern.store.pending import proposable
from govern.store.queries import newest_first
from govern.store.refs import from_row
from govern.store.views import StoredRelaxation

_SHA256 = re.compile(r"[0-9a-f]{64}")

# States from which a verified candidate may be proposed (proposed: a newer one updates it).


@dataclass(frozen=True, slots=True)
class Run:
    """One passed verification: where it ran and what it installed."""

    profile: str
    provider: str
    url: str | None
    installed: str | None


@dataclass(frozen=True, slots=True)
class Work:
    """A verified exclusion with what a proposal of it needs."""

    exclusion_id: int
    ref: ExclusionRef
    root: str
    format: str
    state: State
    candidate_id: int
    version: str
    relaxation: StoredRelaxation | None
    reason: str | None
    links: tuple[str, ...]
    bad_versions: tuple[str, ...]
    owner: str | None
    runs: tuple[Run, ...]
    history: tuple[tuple[datetime, str, str], ...]  # (at, kind, a line of detail)
    # ``sha256:<hex>`` of every file of the candidate on the index, for ``--hash`` lines;
    # empty when the index's file list cannot give every one
    hashes: tuple[str, ...] = ()
    # What the candidate's runs installed beside it: the digest of the locks' pins each was
    # given (govern.locks.installed.pins_digest; none when its intent has no lock).
    lock_digests: tuple[str, ...] = ()


def verified(
    session: Session, *, query: str | None = None, repository: str | None = None
) -> list[Work]:
    """Open exclusions with a passed candidate (the newest passed version of each), or the
    one with id ``query`` / the package ``query``; of one ``repository`` when named."""
    ids = proposable(session, query=query, repository_name=repository)
    if not ids:
        return []
    statement = (
        select(StoredExclusion, Repository, StoredSource)
        .join(Repository, col(Repository.id) == col(StoredExclusion.repository_id))
        .join(StoredSource, col(StoredSource.id) == col(StoredExclusion.source_id))
        .order_by(col(StoredExclusion.id))
    )
    rows = [
        row
        for chunk in chunks(ids)
        for row in session.exec(statement.where(col(StoredExclusion.id).in_(list(chunk))))
    ]
    out: list[Work] = []
    for exclusion, repo, source in rows:
        assert exclusion.id is not None
        best = _best_passed(session, exclusion.id)
        if best is None:
            continue
        candidate, release = best
        assert candidate.id is not None
        note = session.exec(
            select(StoredAnnotation).where(
                col(StoredAnnotation.exclusion_id) == exclusion.id, col(StoredAnnotation.current)
            )
        ).first()
        out.append(
            Work(
                exclusion_id=exclusion.id,
                ref=from_row(exclusion, repository=repo.name, source=source.path),
                root=repo.root,
                format=source.format,
                state=exclusion.state,
                candidate_id=candidate.id,
                version=release.version,
                relaxation=StoredRelaxation.read(candidate.relaxation),
                reason=note.reason if note else None,
                links=tuple(note.links) if note else (),
                bad_versions=tuple(note.bad_versions) if note else (),
                owner=exclusion.assigned_owner or (note.owner if note else None),
                runs=_runs(session, release.version, exclusion.id),
                history=_history(session, exclusion.id),
                hashes=file_hashes(release.files),
                lock_digests=_lock_digests(session, exclusion.id, release.version),
            )
        )
    return out


def _lock_digests(session: Session, exclusion_id: int, version: str) -> tuple[str, ...]:
    """The digests of the lock pins the candidate's own runs of ``version`` were given."""
    from govern.edit.blocks import same_version  # the proposal's stack: loaded already

    found: set[str] = set()
    for detail in session.exec(
        select(Event.detail).where(
            col(Event.exclusion_id) == exclusion_id,
            col(Event.kind) == EventKind.VERIFICATION_STARTED,
        )
    ):
        said = detail.get("version") if isinstance(detail, dict) else None
        if not isinstance(said, str) or not same_version(said, version):  # "14.01" is 14.1
            continue
        if detail.get("kind", RunKind.CANDIDATE.value) != RunKind.CANDIDATE.value:
            continue
        lock = detail.get("lock")
        digest = lock.get("digest") if isinstance(lock, dict) else None
        if isinstance(digest, str):
            found.add(digest)
    return tuple(sorted(found))


def file_hashes(files: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """Every non-yanked file's sha256 as pip's ``--hash`` takes it (sorted), or () when a
    file has none: a hash-checked line needs every file's hash, not some."""
    found: set[str] = set()
    for item in files:
        if item.get("yanked"):
            continue
        digest = (item.get("hashes") or {}).get("sha256")
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest.lower()):
            return ()
        found.add(f"sha256:{digest.lower()}")
    return tuple(sorted(found))


def _best_passed(session: Session, exclusion_id: int) -> tuple[Candidate, StoredRelease] | None:
    """The newest passed candidate of an exclusion (PEP 440 order, as the pages sort)."""
    rows = session.exec(
        select(Candidate, StoredRelease)
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .where(
            col(Candidate.exclusion_id) == exclusion_id,
            col(Candidate.status) == CandidateStatus.PASSED,
        )
    ).all()
    return min(rows, key=lambda row: newest_first(row[1].version)) if rows else None


def _runs(session: Session, version: str, exclusion_id: int) -> tuple[Run, ...]:
    rows = session.exec(
        select(Verification)
        .join(Candidate, col(Candidate.id) == col(Verification.candidate_id))
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .where(
            col(Candidate.exclusion_id) == exclusion_id,
            col(StoredRelease.version) == version,
            col(Verification.conclusion) == Conclusion.PASSED,
            col(Verification.kind) == RunKind.CANDIDATE,  # a passing control is no evidence
        )
        .order_by(col(Verification.id))
    ).all()
    return tuple(Run(r.profile, r.provider, r.run_url, r.installed_version) for r in rows)


def _history(session: Session, exclusion_id: int) -> tuple[tuple[datetime, str, str], ...]:
    """The thread of this exclusion and its predecessors (oldest first, at most 30)."""
    ids: list[int] = []
    current: int | None = exclusion_id
    while current is not None and current not in ids and len(ids) < 20:
        ids.append(current)
        current = session.exec(
            select(StoredExclusion.predecessor_id).where(col(StoredExclusion.id) == current)
        ).first()
    events = session.exec(
        select(Event).where(col(Event.exclusion_id).in_(ids)).order_by(col(Event.at))
    ).all()
    return tuple((e.at, e.kind, _said(e)) for e in events[-30:])


def _said(event: Event) -> str:
    detail = event.detail or {}
    bits = [f"{k}={detail[k]}" for k in ("from", "to", "version", "profile", "url") if k in detail]
    if event.commit:
        bits.append(f"commit {event.commit[:12]}")
    if event.pull_request:
        bits.append(f"#{event.pull_request}")
    return ", ".join(bits)


# -- proposals ---------------------------------------------------------------------------


def proposal(session: Session, *, key: str) -> Proposal | None:
    """The proposal with this dedupe key."""
    return session.exec(select(Proposal).where(col(Proposal.dedupe_key) == key)).first()


def open_proposal(
    session: Session,
    *,
    key: str,
    work: Work,
    kind: ProposalKind,
    via: Via,
    now: datetime,
    old: str,
    new: str | None,
    branch: str | None = None,
) -> int:
    """The id of the proposal with this dedupe key for ``work``'s candidate, opened once."""
    row = proposal(session, key=key)
    if row is None:
        relaxation = work.relaxation
        row = Proposal(
            exclusion_id=work.exclusion_id,
            candidate_id=work.candidate_id,
            kind=kind,
            dedupe_key=key,
            state=ProposalState.OPEN,
            new_clause=relaxation.specifier if relaxation else None,
            created_at=now,
            via=via,
            version=work.version,
            branch=branch,
            old=old,
            new=new,
        )
        session.add(row)
        session.flush()
    assert row.id is not None
    return row.id


def proposals_of(session: Session, *, exclusion_id: int) -> list[Proposal]:
    """Every proposal of an exclusion, oldest first."""
    return list(
        session.exec(
            select(Proposal)
            .where(col(Proposal.exclusion_id) == exclusion_id)
            .order_by(col(Proposal.id))
        ).all()
    )


def open_changes(session: Session) -> list[Proposal]:
    """Proposals with an open change request to watch for a merge or a close."""
    return list(
        session.exec(
            select(Proposal).where(
                col(Proposal.state) == ProposalState.OPEN, col(Proposal.number).is_not(None)
            )
        ).all()
    )


def changed_by_hand(session: Session, *, exclusion_id: int) -> str | None:
    """The exclusion's key when a sync saw its line change or go while govern's change
    request was still open (a person changed it, even if only to relax it by hand), else
    None. A merged request is told by the forge first."""
    row = session.get(StoredExclusion, exclusion_id)
    if row is None or row.removed_at is None:
        return None
    return row.key


def proposal_by_id(session: Session, *, proposal_id: int) -> Proposal:
    """The proposal with this id (it exists: proposals are never deleted)."""
    row = session.get(Proposal, proposal_id)
    assert row is not None
    return row


@dataclass(frozen=True, slots=True)
class OpenBranch:
    """A proposal pushed as a branch only (``via = "git"``) and still open: no forge tells
    govern of its merge, so the sync recognises it by the line it proposed."""

    proposal_id: int
    exclusion_id: int
    new: str | None  # the line it proposed
    branch: str | None
    since: datetime  # the latest event of its exclusion's thread (its opening, at least)


def open_branches(session: Session, *, repository_id: int) -> dict[int, OpenBranch]:
    """A repository's open ``via = "git"`` proposals, by exclusion id."""
    rows = session.exec(
        select(Proposal)
        .join(StoredExclusion, col(StoredExclusion.id) == col(Proposal.exclusion_id))
        .where(
            col(StoredExclusion.repository_id) == repository_id,
            col(Proposal.state) == ProposalState.OPEN,
            col(Proposal.via) == Via.GIT,
        )
        .order_by(col(Proposal.id))
    ).all()
    if not rows:
        return {}
    ids = sorted({p.exclusion_id for p in rows})
    latest = dict(
        session.execute(
            columns(col(Event.exclusion_id), func.max(col(Event.at)))
            .where(col(Event.exclusion_id).in_(ids))
            .group_by(col(Event.exclusion_id))
        ).all()
    )
    return {
        p.exclusion_id: OpenBranch(
            proposal_id=p.id or 0,
            exclusion_id=p.exclusion_id,
            new=p.new,
            branch=p.branch,
            since=as_utc(latest.get(p.exclusion_id) or p.created_at),
        )
        for p in rows
    }


def set_proposal_state(
    session: Session, *, proposal_id: int, state: ProposalState, at: datetime
) -> Proposal:
    """Move a proposal to ``state``, updated ``at``."""
    row = proposal_by_id(session, proposal_id=proposal_id)
    row.state = state
    row.updated_at = at
    session.add(row)
    return row


def mark_sent(
    session: Session,
    *,
    proposal_id: int,
    at: datetime,
    url: str | None,
    number: int | None = None,
    branch: str | None = None,
    only_first: bool = False,
) -> bool:
    """Record where a proposal went (its change request, branch or message); True the
    first time (its event is then due), False when it was recorded before (then, with
    ``only_first``, nothing is recorded: a reminder's first delivery is the one)."""
    row = proposal_by_id(session, proposal_id=proposal_id)
    first = row.updated_at is None
    if only_first and not first:
        return False
    if number is not None:
        row.number = number
    if url is not None or number is not None or only_first:
        row.url = url
    if branch is not None:
        row.branch = branch
    row.updated_at = at
    session.add(row)
    return first


def supersede_older(session: Session, *, proposal_id: int, exclusion_id: int) -> int:
    """The exclusion's other open change requests and branches (a reminder is no such
    thing) are ``superseded``: a newer candidate took over. Returns how many."""
    older = [
        p
        for p in proposals_of(session, exclusion_id=exclusion_id)
        if p.id != proposal_id and p.state == ProposalState.OPEN and p.kind != ProposalKind.REMINDER
    ]
    for stale in older:
        stale.state = ProposalState.SUPERSEDED
        session.add(stale)
    return len(older)


def note_superseded(session: Session, *, key: str, work: Work, at: datetime) -> bool:
    """The note (once, under ``key``) that a person changed ``work``'s line first; False
    when it was noted before."""
    if proposal(session, key=key) is not None:
        return False
    session.add(
        Proposal(
            exclusion_id=work.exclusion_id,
            candidate_id=work.candidate_id,
            kind=ProposalKind.SUPERSEDED,
            dedupe_key=key,
            state=ProposalState.SUPERSEDED,
            created_at=at,
            version=work.version,
        )
    )
    return True


def last_event_detail(
    session: Session, *, exclusion_id: int, kind: EventKind
) -> dict[str, Any] | None:
    """The detail of the exclusion's latest event of ``kind`` (None: it has none)."""
    found = session.exec(
        select(Event.detail)
        .where(col(Event.exclusion_id) == exclusion_id, col(Event.kind) == kind)
        .order_by(col(Event.id).desc())
        .limit(1)
    ).first()
    return dict(found) if found is not None else None


def root_of(session: Session, *, exclusion_id: int) -> str | None:
    """Where the exclusion's repository was last tracked from."""
    return session.exec(
        select(Repository.root)
        .join(StoredExclusion, col(StoredExclusion.repository_id) == col(Repository.id))
        .where(col(StoredExclusion.id) == exclusion_id)
    ).first()


def by_change(session: Session, *, branch: str, number: int) -> list[Proposal]:
    """The open proposals with a change request of this head branch and number, in any
    repository (the caller keeps those of the repository it knows: numbers and branch
    names repeat across repositories)."""
    return list(
        session.exec(
            select(Proposal)
            .where(
                col(Proposal.branch) == branch,
                col(Proposal.number) == number,
                col(Proposal.state) == ProposalState.OPEN,
            )
            .order_by(col(Proposal.id))
        )
    )
