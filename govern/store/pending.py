"""The dashboard's front page, read with paginated SQL (no page loads everything).

Notes: docs/internals.md#store.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select

from govern.exclusions.states import (
    PROPOSABLE,
    RELAXABLE,
    CandidateStatus,
    Conclusion,
    ProposalState,
    RunKind,
    State,
)
from govern.store.core import Reader, record, records
from govern.store.location import as_utc
from govern.store.queries import (
    CURRENT_NOTE,
    PER_PAGE,
    as_rows,
    exclusion_public,
    exclusion_rows,
    newest_first,
    overdue,
)
from govern.store.schema import annotation, candidate, exclusion, proposal, release, repository
from govern.store.schema import verification as run
from govern.store.views import (
    ChangePublic,
    EvidencePublic,
    ExclusionPublic,
    PendingPage,
    PendingPublic,
    ReviewPublic,
    StoredRelaxation,
)

# What the front page says of a candidate whose relaxation is not stored yet (found by a
# poll since the last verification, which computes it).
NOT_COMPUTED = "no narrow change computed yet: the next verification computes it"


def _by_ids(session: Reader, ids: Sequence[int], now: datetime) -> dict[int, ExclusionPublic]:
    """The exclusions with these ids, shown."""
    if not ids:
        return {}
    rows = as_rows(session.execute(exclusion_rows().where(exclusion.c.id.in_(list(ids)))))
    return {row[0].id: exclusion_public(row, now=now) for row in rows}


def relaxable(session: Reader, *, now: datetime, limit: int = PER_PAGE) -> PendingPage:
    """Exclusions with a candidate or a verified release (not snoozed), verified first."""
    shown = (
        exclusion.c.removed_at.is_(None),
        or_(
            exclusion.c.snoozed_until.is_(None),
            exclusion.c.snoozed_until <= now.date(),
        ),
    )
    total = session.execute(
        select(func.count()).select_from(exclusion).where(*shown, exclusion.c.state.in_(RELAXABLE))
    ).one()[0]
    ids = _relaxable_ids(session, shown, limit)
    rows = _by_ids(session, ids, now)
    best = _best_candidates(session, ids)
    evidence = _evidence(session, [c.id for c, _ in best.values()])
    proposals = _proposals(session, ids)
    profiles = _profiles(session, ids)
    items: list[PendingPublic] = []
    for row_id in ids:
        found = best.get(row_id)
        if found is None or row_id not in rows:
            continue
        shown_row = rows[row_id]
        best_candidate, best_release = found
        relaxed = StoredRelaxation.read(best_candidate.relaxation)
        items.append(
            PendingPublic(
                exclusion=shown_row,
                candidate=best_release.version,
                profiles=sorted(profiles.get((row_id, best_release.id), ())),
                verified=best_candidate.status == CandidateStatus.PASSED,
                evidence=evidence.get(best_candidate.id),
                change=ChangePublic(
                    before=shown_row.requirement,
                    after=relaxed.requirement if relaxed else None,
                    note=relaxed.note if relaxed else NOT_COMPUTED,
                ),
                proposal_url=proposals.get(row_id),
            )
        )
    return PendingPage(
        items=items, total=total, awaiting_review=awaiting_review(session, now=now, limit=limit)
    )


def proposable(
    session: Reader, *, query: str | None = None, repository_name: str | None = None
) -> list[int]:
    """The open exclusions a proposal can be made for (verified or proposed, with a passed
    candidate), by id; only the one with id ``query`` or of the package ``query``, and of
    one repository, when named."""
    passed = (
        select(candidate.c.id)
        .where(
            candidate.c.exclusion_id == exclusion.c.id,
            candidate.c.status == CandidateStatus.PASSED,
        )
        .exists()
    )
    statement = (
        select(exclusion.c.id)
        .where(exclusion.c.state.in_(PROPOSABLE), exclusion.c.removed_at.is_(None), passed)
        .order_by(exclusion.c.id)
    )
    if query:
        statement = statement.where(
            (exclusion.c.key == query) | (exclusion.c.package == query.lower())
        )
    if repository_name is not None:
        statement = statement.join(repository, repository.c.id == exclusion.c.repository_id).where(
            repository.c.name == repository_name
        )
    return [row_id for (row_id,) in session.execute(statement)]


def awaiting_review(session: Reader, *, now: datetime, limit: int = PER_PAGE) -> list[ReviewPublic]:
    """Open proposals (a branch, a change request, a reminder) of open exclusions: what
    waits on a person, oldest first, with the evidence of the version proposed."""
    rows = [
        record(row, proposal)
        for row in session.execute(
            select(proposal)
            .join(exclusion, exclusion.c.id == proposal.c.exclusion_id)
            .where(proposal.c.state == ProposalState.OPEN, exclusion.c.removed_at.is_(None))
            .order_by(proposal.c.created_at, proposal.c.id)
            .limit(limit)
        )
    ]
    shown = _by_ids(session, sorted({p.exclusion_id for p in rows}), now)
    evidence = _evidence(session, [p.candidate_id for p in rows if p.candidate_id])
    out: list[ReviewPublic] = []
    for made in rows:
        shown_row = shown.get(made.exclusion_id)
        if shown_row is None:
            continue
        opened = as_utc(made.created_at)
        out.append(
            ReviewPublic(
                exclusion=shown_row,
                kind=made.kind,
                via=made.via,
                branch=made.branch,
                url=made.url,
                number=made.number,
                candidate=made.version,
                change=ChangePublic(
                    before=made.old or shown_row.requirement,
                    after=made.new,
                    note=f"proposed {opened.date()}",
                ),
                opened=opened,
                age_days=max(0, (now - opened).days),
                evidence=evidence.get(made.candidate_id or 0),
            )
        )
    return out


def _relaxable_ids(session: Reader, shown: Sequence[Any], limit: int) -> list[int]:
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
                    select(exclusion.c.id, exclusion.c.first_seen_at)
                    .where(*shown, exclusion.c.state == state)
                    .order_by(exclusion.c.first_seen_at)
                    .limit(wanted)
                )
            )
    picked.sort()
    return [row_id for _, _, row_id in picked[:limit]]


def _best_candidates(session: Reader, ids: Sequence[int]) -> dict[int, tuple[Any, Any]]:
    """Per exclusion: a passed candidate if any, else the newest eligible one still open."""
    out: dict[int, tuple[Any, Any]] = {}
    if not ids:
        return out
    order = (
        CandidateStatus.PASSED,
        CandidateStatus.VERIFYING,
        CandidateStatus.FOUND,
        CandidateStatus.ERRORED,
    )
    rank: dict[str, int] = {status: place for place, status in enumerate(order)}
    found: dict[int, list[tuple[Any, Any]]] = defaultdict(list)
    for row in session.execute(
        select(candidate, release)
        .join(release, release.c.id == candidate.c.release_id)
        .where(
            candidate.c.exclusion_id.in_(list(ids)),
            candidate.c.eligible,
            candidate.c.status.in_(list(rank)),
        )
    ):
        considered, seen = records(row, candidate, release)
        found[considered.exclusion_id].append((considered, seen))
    for exclusion_id, options in found.items():
        out[exclusion_id] = min(
            options, key=lambda pair: (rank[pair[0].status], newest_first(pair[1].version))
        )
    return out


def _profiles(session: Reader, ids: Sequence[int]) -> dict[tuple[int, int], set[str]]:
    """The profiles on which each (exclusion, release) is an eligible candidate."""
    out: dict[tuple[int, int], set[str]] = defaultdict(set)
    if not ids:
        return out
    for exclusion_id, release_id, profile in session.execute(
        select(candidate.c.exclusion_id, candidate.c.release_id, candidate.c.profile).where(
            candidate.c.exclusion_id.in_(list(ids)), candidate.c.eligible
        )
    ):
        out[(exclusion_id, release_id)].add(profile)
    return out


def _evidence(session: Reader, ids: Sequence[int]) -> dict[int, EvidencePublic]:
    """The latest verification of each candidate of ``ids`` (of the candidate itself: a
    control or a reproducer run is not its evidence)."""
    out: dict[int, EvidencePublic] = {}
    if not ids:
        return out
    for found in session.execute(
        select(run)
        .where(run.c.candidate_id.in_(list(ids)), run.c.kind == RunKind.CANDIDATE)
        .order_by(run.c.id)
    ):
        row = record(found, run)
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


def _proposals(session: Reader, ids: Sequence[int]) -> dict[int, str]:
    if not ids:
        return {}
    return {
        exclusion_id: url
        for exclusion_id, url in session.execute(
            select(proposal.c.exclusion_id, proposal.c.url).where(
                proposal.c.exclusion_id.in_(list(ids)), proposal.c.url.is_not(None)
            )
        )
        if url
    }


def attention(session: Reader, *, now: datetime, limit: int = 20) -> dict[str, Any]:
    """Held, overdue and failed: counts, and the oldest or latest few of each."""
    open_ = exclusion.c.removed_at.is_(None)
    today = now.date()
    overdue_where = (open_, annotation.c.review_by < today)
    overdue_total = overdue(session, today=today)
    overdue_ids = list(
        session.execute(
            select(exclusion.c.id)
            .select_from(exclusion)
            .join(annotation, CURRENT_NOTE)
            .where(*overdue_where)
            .order_by(annotation.c.review_by)
            .limit(limit)
        ).scalars()
    )
    held_where = (open_, exclusion.c.state == State.HELD)
    held_total = session.execute(
        select(func.count()).select_from(exclusion).where(*held_where)
    ).one()[0]
    held_ids = list(
        session.execute(
            select(exclusion.c.id)
            .where(*held_where)
            .order_by(exclusion.c.first_seen_at)
            .limit(limit)
        ).scalars()
    )
    rows = _by_ids(session, [*overdue_ids, *held_ids], now)
    failed: list[dict[str, Any]] = []
    for row in session.execute(
        select(run, candidate, release, exclusion)
        .join(candidate, candidate.c.id == run.c.candidate_id)
        .join(release, release.c.id == candidate.c.release_id)
        .join(exclusion, exclusion.c.id == candidate.c.exclusion_id)
        .where(
            run.c.conclusion == Conclusion.FAILED,
            run.c.kind == RunKind.CANDIDATE,
        )
        .order_by(run.c.id.desc())
        .limit(limit)
    ):
        ran, considered, seen, line = records(row, run, candidate, release, exclusion)
        failed.append(
            {
                "id": line.key,
                "package": line.package,
                "clause": line.clause,
                "version": seen.version,
                "profile": ran.profile,
                "provider": ran.provider,
                "run_url": ran.run_url,
                "detail": ran.detail,
                "finished": as_utc(ran.finished_at) if ran.finished_at else None,
                "status": considered.status,
            }
        )
    return {
        "held": [rows[i] for i in held_ids if i in rows],
        "held_total": held_total,
        "overdue": [rows[i] for i in overdue_ids if i in rows],
        "overdue_total": overdue_total,
        "failed": failed,
    }
