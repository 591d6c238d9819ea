"""The dashboard's front page, read with paginated SQL (no page loads everything).

Notes: docs/internals.md#store.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_
from sqlalchemy import select as columns
from sqlmodel import Session, col, select

from govern.exclusions.states import (
    RELAXABLE,
    CandidateStatus,
    Conclusion,
    ProposalState,
    RunKind,
    State,
)
from govern.store.models import (
    Candidate,
    Proposal,
    StoredAnnotation,
    StoredExclusion,
    StoredRelease,
    Verification,
    as_utc,
)
from govern.store.queries import (
    CURRENT_NOTE,
    PER_PAGE,
    exclusion_public,
    exclusion_rows,
    newest_first,
    overdue,
)
from govern.store.relaxations import stored
from govern.store.views import (
    ChangePublic,
    EvidencePublic,
    ExclusionPublic,
    PendingPage,
    PendingPublic,
    ReviewPublic,
)

# What the front page says of a candidate whose relaxation is not stored yet (found by a
# poll since the last verification, which computes it).
NOT_COMPUTED = "no narrow change computed yet: the next verification computes it"


def _by_ids(session: Session, ids: Sequence[int], now: datetime) -> dict[int, ExclusionPublic]:
    """The exclusions with these ids, shown."""
    if not ids:
        return {}
    rows = session.exec(exclusion_rows().where(col(StoredExclusion.id).in_(list(ids)))).all()
    return {row[0].id or 0: exclusion_public(row, now=now) for row in rows}


def relaxable(session: Session, *, now: datetime, limit: int = PER_PAGE) -> PendingPage:
    """Exclusions with a candidate or a verified release (not snoozed), verified first."""
    shown = (
        col(StoredExclusion.removed_at).is_(None),
        or_(
            col(StoredExclusion.snoozed_until).is_(None),
            col(StoredExclusion.snoozed_until) <= now.date(),
        ),
    )
    total = session.execute(
        columns(func.count())
        .select_from(StoredExclusion)
        .where(*shown, col(StoredExclusion.state).in_(RELAXABLE))
    ).one()[0]
    ids = _relaxable_ids(session, shown, limit)
    rows = _by_ids(session, ids, now)
    best = _best_candidates(session, ids)
    evidence = _evidence(session, [c for c, _ in best.values()])
    proposals = _proposals(session, ids)
    profiles = _profiles(session, ids)
    items: list[PendingPublic] = []
    for row_id in ids:
        found = best.get(row_id)
        if found is None or row_id not in rows:
            continue
        exclusion = rows[row_id]
        candidate, release = found
        relaxed = stored(candidate.relaxation)
        items.append(
            PendingPublic(
                exclusion=exclusion,
                candidate=release.version,
                profiles=sorted(profiles.get((row_id, release.id or 0), ())),
                verified=candidate.status == CandidateStatus.PASSED,
                evidence=evidence.get(candidate.id or 0),
                change=ChangePublic(
                    before=exclusion.requirement,
                    after=relaxed.requirement if relaxed else None,
                    note=relaxed.note if relaxed else NOT_COMPUTED,
                ),
                proposal_url=proposals.get(row_id),
            )
        )
    return PendingPage(
        items=items, total=total, awaiting_review=awaiting_review(session, now=now, limit=limit)
    )


def awaiting_review(
    session: Session, *, now: datetime, limit: int = PER_PAGE
) -> list[ReviewPublic]:
    """Open proposals (a branch, a change request, a reminder) of open exclusions: what
    waits on a person, oldest first, with the evidence of the version proposed."""
    rows = session.exec(
        select(Proposal)
        .join(StoredExclusion, col(StoredExclusion.id) == col(Proposal.exclusion_id))
        .where(
            col(Proposal.state) == ProposalState.OPEN,
            col(StoredExclusion.removed_at).is_(None),
        )
        .order_by(col(Proposal.created_at), col(Proposal.id))
        .limit(limit)
    ).all()
    shown = _by_ids(session, sorted({p.exclusion_id for p in rows}), now)
    wanted = [p.candidate_id for p in rows if p.candidate_id]
    candidates = list(session.exec(select(Candidate).where(col(Candidate.id).in_(wanted))))
    evidence = _evidence(session, candidates)
    out: list[ReviewPublic] = []
    for proposal in rows:
        exclusion = shown.get(proposal.exclusion_id)
        if exclusion is None:
            continue
        opened = as_utc(proposal.created_at)
        out.append(
            ReviewPublic(
                exclusion=exclusion,
                kind=proposal.kind,
                via=proposal.via,
                branch=proposal.branch,
                url=proposal.url,
                number=proposal.number,
                candidate=proposal.version,
                change=ChangePublic(
                    before=proposal.old or exclusion.requirement,
                    after=proposal.new,
                    note=f"proposed {opened.date()}",
                ),
                opened=opened,
                age_days=max(0, (now - opened).days),
                evidence=evidence.get(proposal.candidate_id or 0),
            )
        )
    return out


def _relaxable_ids(session: Session, shown: Sequence[Any], limit: int) -> list[int]:
    """The first ``limit`` pending exclusions: the verified ones, then the candidate and
    verifying ones together; oldest first in each group. One ordered query per state, each
    stopped at what it can contribute: never a sort of every pending row."""
    picked: list[tuple[bool, datetime, int]] = []
    for group in ((State.VERIFIED,), (State.CANDIDATE, State.VERIFYING)):
        wanted = limit - len(picked)
        if wanted <= 0:
            break
        for state in group:
            picked.extend(
                (state != State.VERIFIED, as_utc(first), row_id)
                for row_id, first in session.execute(
                    columns(col(StoredExclusion.id), col(StoredExclusion.first_seen_at))
                    .where(*shown, col(StoredExclusion.state) == state)
                    .order_by(col(StoredExclusion.first_seen_at))
                    .limit(wanted)
                )
            )
    picked.sort()
    return [row_id for _, _, row_id in picked[:limit]]


def _best_candidates(
    session: Session, ids: Sequence[int]
) -> dict[int, tuple[Candidate, StoredRelease]]:
    """Per exclusion: a passed candidate if any, else the newest eligible one still open."""
    out: dict[int, tuple[Candidate, StoredRelease]] = {}
    if not ids:
        return out
    order = (
        CandidateStatus.PASSED,
        CandidateStatus.VERIFYING,
        CandidateStatus.FOUND,
        CandidateStatus.ERRORED,
    )
    rank: dict[str, int] = {status: place for place, status in enumerate(order)}
    found: dict[int, list[tuple[Candidate, StoredRelease]]] = defaultdict(list)
    for candidate, release in session.exec(
        select(Candidate, StoredRelease)
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .where(
            col(Candidate.exclusion_id).in_(list(ids)),
            col(Candidate.eligible),
            col(Candidate.status).in_(list(rank)),
        )
    ):
        found[candidate.exclusion_id].append((candidate, release))
    for exclusion_id, options in found.items():
        out[exclusion_id] = min(
            options, key=lambda pair: (rank[pair[0].status], newest_first(pair[1].version))
        )
    return out


def _profiles(session: Session, ids: Sequence[int]) -> dict[tuple[int, int], set[str]]:
    """The profiles on which each (exclusion, release) is an eligible candidate."""
    out: dict[tuple[int, int], set[str]] = defaultdict(set)
    if not ids:
        return out
    for exclusion_id, release_id, profile in session.execute(
        columns(
            col(Candidate.exclusion_id), col(Candidate.release_id), col(Candidate.profile)
        ).where(col(Candidate.exclusion_id).in_(list(ids)), col(Candidate.eligible))
    ):
        out[(exclusion_id, release_id)].add(profile)
    return out


def _evidence(session: Session, candidates: Sequence[Candidate]) -> dict[int, EvidencePublic]:
    """The latest verification of each candidate (of the candidate itself: a control or a
    reproducer run is not its evidence)."""
    ids = [c.id for c in candidates if c.id is not None]
    out: dict[int, EvidencePublic] = {}
    if not ids:
        return out
    for row in session.exec(
        select(Verification)
        .where(col(Verification.candidate_id).in_(ids), col(Verification.kind) == RunKind.CANDIDATE)
        .order_by(col(Verification.id))
    ):
        out[row.candidate_id] = EvidencePublic(
            conclusion=row.conclusion,
            provider=row.provider,
            profile=row.profile,
            installed=row.installed_version,
            run_url=row.run_url,
            finished=as_utc(row.finished_at) if row.finished_at else None,
            detail=row.detail,
        )
    return out


def _proposals(session: Session, ids: Sequence[int]) -> dict[int, str]:
    if not ids:
        return {}
    return {
        p.exclusion_id: p.url
        for p in session.exec(
            select(Proposal).where(
                col(Proposal.exclusion_id).in_(list(ids)), col(Proposal.url).is_not(None)
            )
        )
        if p.url
    }


def attention(session: Session, *, now: datetime, limit: int = 20) -> dict[str, Any]:
    """Held, overdue and failed: counts, and the oldest or latest few of each."""
    open_ = col(StoredExclusion.removed_at).is_(None)
    today = now.date()
    overdue_where = (open_, col(StoredAnnotation.review_by) < today)
    overdue_total = overdue(session, today=today)
    overdue_ids = list(
        session.execute(
            columns(col(StoredExclusion.id))
            .select_from(StoredExclusion)
            .join(StoredAnnotation, CURRENT_NOTE)
            .where(*overdue_where)
            .order_by(col(StoredAnnotation.review_by))
            .limit(limit)
        ).scalars()
    )
    held_where = (open_, col(StoredExclusion.state) == State.HELD)
    held_total = session.execute(
        columns(func.count()).select_from(StoredExclusion).where(*held_where)
    ).one()[0]
    held_ids = list(
        session.execute(
            columns(col(StoredExclusion.id))
            .where(*held_where)
            .order_by(col(StoredExclusion.first_seen_at))
            .limit(limit)
        ).scalars()
    )
    rows = _by_ids(session, [*overdue_ids, *held_ids], now)
    failed: list[dict[str, Any]] = []
    for verification, candidate, release, exclusion in session.exec(
        select(Verification, Candidate, StoredRelease, StoredExclusion)
        .join(Candidate, col(Candidate.id) == col(Verification.candidate_id))
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .join(StoredExclusion, col(StoredExclusion.id) == col(Candidate.exclusion_id))
        .where(
            col(Verification.conclusion) == Conclusion.FAILED,
            col(Verification.kind) == RunKind.CANDIDATE,
        )
        .order_by(col(Verification.id).desc())
        .limit(limit)
    ):
        failed.append(
            {
                "id": exclusion.key,
                "package": exclusion.package,
                "clause": exclusion.clause,
                "version": release.version,
                "profile": verification.profile,
                "provider": verification.provider,
                "run_url": verification.run_url,
                "detail": verification.detail,
                "finished": as_utc(verification.finished_at) if verification.finished_at else None,
                "status": candidate.status,
            }
        )
    return {
        "held": [rows[i] for i in held_ids if i in rows],
        "held_total": held_total,
        "overdue": [rows[i] for i in overdue_ids if i in rows],
        "overdue_total": overdue_total,
        "failed": failed,
    }
