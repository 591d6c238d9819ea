"""What the dashboard shows, read from the store with paginated SQL (no page loads everything).

- :func:`pending`: exclusions with a candidate or a verified release, each with the change
  that would be made (the line before and after, from :mod:`govern.exclusions.relax`), its
  evidence (the latest verification), age, owner and proposal link; verified first.
- :func:`attention`: what has been held too long: overdue reviews, failed verifications.
- :func:`browse`: all exclusions, filtered (repository, package, kind, state, owner), searched
  and paginated in SQL.
- :func:`detail`: one exclusion: its thread, candidates with their verifications, proposals.
- :func:`debt`: the count and median age of open exclusions per day, and every age (for the
  histogram); :func:`counts`: exclusions by state, for /metrics.

Every string here comes from repository files or CI: the templates escape it all.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from packaging.specifiers import InvalidSpecifier
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from sqlalchemy import func, or_
from sqlalchemy import select as columns
from sqlmodel import Session, col, select

from govern.exclusions.model import Kind, SubKind
from govern.exclusions.states import ENDED, PENDING, CandidateStatus, Conclusion, State
from govern.store.models import (
    Annotation,
    Candidate,
    Exclusion,
    Proposal,
    Release,
    Repository,
    Source,
    Verification,
    as_utc,
)
from govern.store.queries import (
    CURRENT_NOTE,
    ExclusionView,
    TimelineEvent,
    _view,
    exclusion_rows,
    failed_versions,
    has_nul,
    joined,
    like_literal,
    threads,
)
from govern.web.charts import DebtPoint

STATES = tuple(State)
KINDS = tuple(Kind)
PER_PAGE = 50
MAX_PER_PAGE = 200


@dataclass(frozen=True, slots=True)
class Evidence:
    """The latest verification of a candidate."""

    conclusion: str | None
    provider: str
    profile: str
    installed: str | None
    run_url: str | None
    finished: datetime | None
    detail: str | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "conclusion": self.conclusion,
            "provider": self.provider,
            "profile": self.profile,
            "installed": self.installed,
            "run_url": self.run_url,
            "finished": self.finished.isoformat() if self.finished else None,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class PendingItem:
    """One exclusion that could be relaxed today, and what would change."""

    exclusion: ExclusionView
    version: str
    profiles: tuple[str, ...]
    verified: bool
    evidence: Evidence | None
    before: str
    after: str | None  # None: no narrow change could be computed (``note`` says why)
    note: str
    proposal_url: str | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "exclusion": self.exclusion.as_dict(),
            "candidate": self.version,
            "profiles": list(self.profiles),
            "verified": self.verified,
            "evidence": self.evidence.as_dict() if self.evidence else None,
            "change": {"before": self.before, "after": self.after, "note": self.note},
            "proposal_url": self.proposal_url,
        }


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a list, with what it takes to draw the pager."""

    items: tuple[Any, ...]
    total: int
    page: int
    per_page: int

    @property
    def pages(self) -> int:
        """How many pages there are (at least one)."""
        return max(1, -(-self.total // self.per_page))


@dataclass(frozen=True, slots=True)
class Filters:
    """The list filters (query parameters of /exclusions and /api/v1/exclusions)."""

    repository: str | None = None
    package: str | None = None
    kind: str | None = None
    state: str | None = None
    owner: str | None = None
    q: str | None = None

    def as_query(self) -> dict[str, str]:
        """The filters that are set, as query parameters."""
        return {
            name: value
            for name in ("repository", "package", "kind", "state", "owner", "q")
            if (value := getattr(self, name))
        }


@dataclass(frozen=True, slots=True)
class CandidateView:
    """A release considered for an exclusion on a profile, with its verifications."""

    version: str
    profile: str
    role: str
    eligible: bool
    reason: str | None
    status: str
    found: datetime
    verifications: tuple[dict[str, Any], ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "version": self.version,
            "profile": self.profile,
            "role": self.role,
            "eligible": self.eligible,
            "reason": self.reason,
            "status": self.status,
            "found": self.found.isoformat(),
            "verifications": list(self.verifications),
        }


def _owned(view: ExclusionView, row: Exclusion) -> ExclusionView:
    """The view with the owner assigned on the dashboard, if any, over the annotation's."""
    if row.assigned_owner:
        from dataclasses import replace

        return replace(view, owner=row.assigned_owner)
    return view


def _views(rows: Sequence[Any], now: datetime) -> list[ExclusionView]:
    return [_owned(_view(e, a, s, r, now), e) for e, a, s, r in rows]


# -- the front page -------------------------------------------------------------------------
#
# A fixed number of queries per page, however many items: the ids of a page come first from
# narrow ordered queries (an index range each, stopped at the limit: see the indexes on
# Exclusion and Annotation), then the rows of those ids, then what each item needs, for all
# items at once (candidates, profiles, failed versions, published releases, evidence,
# proposals). No query per item.


def _by_ids(
    session: Session, ids: Sequence[int], now: datetime
) -> dict[int, tuple[ExclusionView, Annotation | None]]:
    """The exclusions with these ids, as views, each with its current annotation."""
    if not ids:
        return {}
    rows = session.exec(exclusion_rows().where(col(Exclusion.id).in_(list(ids)))).all()
    return {view.row_id: (view, row[1]) for view, row in zip(_views(rows, now), rows, strict=True)}


def pending(session: Session, *, now: datetime, limit: int = PER_PAGE) -> Page:
    """Exclusions with a candidate or a verified release (not snoozed), verified first."""
    shown = (
        col(Exclusion.removed_at).is_(None),
        or_(col(Exclusion.snoozed_until).is_(None), col(Exclusion.snoozed_until) <= now.date()),
    )
    total = session.execute(
        columns(func.count())
        .select_from(Exclusion)
        .where(*shown, col(Exclusion.state).in_(PENDING))
    ).one()[0]
    ids = _pending_ids(session, shown, limit)
    rows = _by_ids(session, ids, now)
    best = _best_candidates(session, ids)
    evidence = _evidence(session, [c for c, _ in best.values()])
    proposals = _proposals(session, ids)
    profiles = _profiles(session, ids)
    failed = failed_versions(session, ids)
    published = _published(session, {rows[i][0].package for i in ids if i in best and i in rows})
    items: list[PendingItem] = []
    for row_id in ids:
        found = best.get(row_id)
        if found is None or row_id not in rows:
            continue
        view, note = rows[row_id]
        candidate, release = found
        bad = _versions({*(note.bad_versions if note else ()), *failed.get(row_id, ())})
        after, why = _change(view, release.version, bad, published.get(view.package, []))
        items.append(
            PendingItem(
                exclusion=view,
                version=release.version,
                profiles=tuple(sorted(profiles.get((row_id, release.id or 0), ()))),
                verified=candidate.status == CandidateStatus.PASSED,
                evidence=evidence.get(candidate.id or 0),
                before=view.requirement,
                after=after,
                note=why,
                proposal_url=proposals.get(row_id),
            )
        )
    return Page(tuple(items), total, 1, limit)


def _pending_ids(session: Session, shown: Sequence[Any], limit: int) -> list[int]:
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
                    columns(col(Exclusion.id), col(Exclusion.first_seen_at))
                    .where(*shown, col(Exclusion.state) == state)
                    .order_by(col(Exclusion.first_seen_at))
                    .limit(wanted)
                )
            )
    picked.sort()
    return [row_id for _, _, row_id in picked[:limit]]


def _best_candidates(session: Session, ids: Sequence[int]) -> dict[int, tuple[Candidate, Release]]:
    """Per exclusion: a passed candidate if any, else the newest eligible one still open."""
    out: dict[int, tuple[Candidate, Release]] = {}
    if not ids:
        return out
    order = (
        CandidateStatus.PASSED,
        CandidateStatus.VERIFYING,
        CandidateStatus.FOUND,
        CandidateStatus.ERRORED,
    )
    rank: dict[str, int] = {status: place for place, status in enumerate(order)}
    found: dict[int, list[tuple[Candidate, Release]]] = defaultdict(list)
    for candidate, release in session.exec(
        select(Candidate, Release)
        .join(Release, col(Release.id) == col(Candidate.release_id))
        .where(
            col(Candidate.exclusion_id).in_(list(ids)),
            col(Candidate.eligible),
            col(Candidate.status).in_(list(rank)),
        )
    ):
        found[candidate.exclusion_id].append((candidate, release))
    for exclusion_id, options in found.items():
        out[exclusion_id] = min(
            options, key=lambda pair: (rank[pair[0].status], _descending(pair[1].version))
        )
    return out


def _descending(version: str) -> tuple[int, Any]:
    try:
        parsed = Version(version)
    except InvalidVersion:
        return (1, version)
    return (0, _Reversed(parsed))


class _Reversed:
    """Orders versions newest first inside a sort key."""

    __slots__ = ("version",)

    def __init__(self, version: Version) -> None:
        self.version = version

    def __lt__(self, other: _Reversed) -> bool:
        return self.version > other.version

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.version == other.version

    def __hash__(self) -> int:
        return hash(self.version)


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


def _evidence(session: Session, candidates: Sequence[Candidate]) -> dict[int, Evidence]:
    """The latest verification of each candidate."""
    ids = [c.id for c in candidates if c.id is not None]
    out: dict[int, Evidence] = {}
    if not ids:
        return out
    for row in session.exec(
        select(Verification)
        .where(col(Verification.candidate_id).in_(ids))
        .order_by(col(Verification.id))
    ):
        out[row.candidate_id] = Evidence(
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


def _versions(texts: set[str]) -> list[Version]:
    """The valid versions among ``texts``, sorted."""
    out: list[Version] = []
    for text in texts:
        try:
            out.append(Version(text))
        except InvalidVersion:
            continue
    return sorted(out)


def _change(
    view: ExclusionView, version: str, bad: Sequence[Version], published: Sequence[Version]
) -> tuple[str | None, str]:
    """The requirement as it would be written after the narrow relaxation, and why."""
    from packaging.requirements import Requirement

    from govern.exclusions import relax as relaxation

    try:
        candidate = Version(version)
        requirement = view.requirement.split("#", 1)[0].strip()
        specifiers = Requirement(requirement).specifier
        result = relaxation.relax(specifiers, view.clause, candidate, bad, published=published)
        after = result.rewrite(view.requirement)
    except (InvalidVersion, InvalidSpecifier, ValueError) as exc:
        return None, f"no narrow change computed: {exc}"
    return after, result.note


def _published(session: Session, packages: set[str]) -> dict[str, list[Version]]:
    """The releases seen of each package (those whose version parses)."""
    out: dict[str, list[Version]] = {package: [] for package in packages}
    if not packages:
        return out
    for package, text in session.execute(
        columns(col(Release.package), col(Release.version)).where(
            col(Release.package).in_(sorted(packages))
        )
    ):
        try:
            out[package].append(Version(text))
        except InvalidVersion:
            continue
    return out


def attention(session: Session, *, now: datetime, limit: int = 20) -> dict[str, Any]:
    """Held, overdue and failed: counts, and the oldest or latest few of each."""
    open_ = col(Exclusion.removed_at).is_(None)
    today = now.date()
    overdue_where = (open_, col(Annotation.review_by) < today)
    overdue_total = _overdue(session, today)
    overdue_ids = list(
        session.execute(
            columns(col(Exclusion.id))
            .select_from(Exclusion)
            .join(Annotation, CURRENT_NOTE)
            .where(*overdue_where)
            .order_by(col(Annotation.review_by))
            .limit(limit)
        ).scalars()
    )
    held_where = (open_, col(Exclusion.state) == State.HELD)
    held_total = session.execute(
        columns(func.count()).select_from(Exclusion).where(*held_where)
    ).one()[0]
    held_ids = list(
        session.execute(
            columns(col(Exclusion.id))
            .where(*held_where)
            .order_by(col(Exclusion.first_seen_at))
            .limit(limit)
        ).scalars()
    )
    rows = _by_ids(session, [*overdue_ids, *held_ids], now)
    failed: list[dict[str, Any]] = []
    for verification, candidate, release, exclusion in session.exec(
        select(Verification, Candidate, Release, Exclusion)
        .join(Candidate, col(Candidate.id) == col(Verification.candidate_id))
        .join(Release, col(Release.id) == col(Candidate.release_id))
        .join(Exclusion, col(Exclusion.id) == col(Candidate.exclusion_id))
        .where(col(Verification.conclusion) == Conclusion.FAILED)
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
        "held": [rows[i][0] for i in held_ids if i in rows],
        "held_total": held_total,
        "overdue": [rows[i][0] for i in overdue_ids if i in rows],
        "overdue_total": overdue_total,
        "failed": failed,
    }


# -- the list -------------------------------------------------------------------------------


def browse(session: Session, filters: Filters, *, now: datetime, page: int, per_page: int) -> Page:
    """All exclusions matching the filters, one page of them, ordered by repository and file."""
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    page = max(1, page)
    if has_nul(*filters.as_query().values()):
        return Page((), 0, page, per_page)
    where: list[Any] = []
    if filters.repository:
        pattern = f"%{like_literal(filters.repository)}%"
        where.append(col(Repository.name).like(pattern, escape="\\"))
    if filters.package:
        where.append(col(Exclusion.package) == canonicalize_name(filters.package))
    if filters.kind:
        where.append(col(Exclusion.kind) == filters.kind)
    state = filters.state
    if state in ENDED:
        where.append(col(Exclusion.state) == state)
    else:
        where.append(col(Exclusion.removed_at).is_(None))
        if state == State.OVERDUE:
            where.append(col(Annotation.review_by) < now.date())
        elif state:  # as shown: an overdue exclusion is listed as overdue, not as its state
            where.append(col(Exclusion.state) == state)
            where.append(
                or_(col(Annotation.review_by).is_(None), col(Annotation.review_by) >= now.date())
            )
    if filters.owner:
        pattern = f"%{like_literal(filters.owner.lower())}%"
        where.append(
            or_(
                func.lower(col(Exclusion.assigned_owner)).like(pattern, escape="\\"),
                func.lower(col(Annotation.owner)).like(pattern, escape="\\"),
            )
        )
    if filters.q:
        pattern = f"%{like_literal(filters.q.lower())}%"
        where.append(
            or_(
                func.lower(col(Exclusion.package)).like(pattern, escape="\\"),
                func.lower(col(Exclusion.requirement)).like(pattern, escape="\\"),
                func.lower(col(Source.path)).like(pattern, escape="\\"),
                func.lower(col(Annotation.reason)).like(pattern, escape="\\"),
            )
        )
    counted = joined(columns(func.count()).select_from(Exclusion)).where(*where)
    total = session.execute(counted).one()[0]
    rows = session.exec(
        exclusion_rows()
        .where(*where)
        .order_by(col(Repository.name), col(Source.path), col(Exclusion.line), col(Exclusion.id))
        .offset((page - 1) * per_page)
        .limit(per_page)
    ).all()
    return Page(tuple(_views(rows, now)), total, page, per_page)


# -- one exclusion --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Detail:
    """One exclusion as its page and ``/api/v1/exclusions/{id}`` show it."""

    exclusion: ExclusionView
    events: list[TimelineEvent]  # its governance thread's events, oldest first
    candidates: list[CandidateView]
    proposals: list[dict[str, Any]]


def detail(session: Session, key: str, *, now: datetime) -> Detail | None:
    """The exclusion with this id, its thread, candidates and proposals; None if unknown."""
    found = find(session, key, now=now)
    if found is None:
        return None
    thread = threads(session, key, now=now)
    events = sorted((e for t in thread for e in t.events), key=lambda e: e.at)
    return Detail(
        found, events, candidates_of(session, found.row_id), proposals_of(session, found.row_id)
    )


def find(session: Session, key: str, *, now: datetime) -> ExclusionView | None:
    """The exclusion with this id (the audit's stable key), or None."""
    if has_nul(key):
        return None
    row = session.exec(exclusion_rows().where(col(Exclusion.key) == key).limit(1)).first()
    return _views([row], now)[0] if row is not None else None


def candidates_of(session: Session, exclusion_id: int) -> list[CandidateView]:
    """Every release considered for an exclusion, newest first, with its verifications."""
    runs: dict[int, list[dict[str, Any]]] = defaultdict(list)
    rows = session.exec(
        select(Candidate, Release)
        .join(Release, col(Release.id) == col(Candidate.release_id))
        .where(col(Candidate.exclusion_id) == exclusion_id)
    ).all()
    ids = [c.id for c, _ in rows if c.id is not None]
    if ids:
        for v in session.exec(
            select(Verification)
            .where(col(Verification.candidate_id).in_(ids))
            .order_by(col(Verification.id))
        ):
            runs[v.candidate_id].append(
                {
                    "provider": v.provider,
                    "attempt": v.attempt,
                    "conclusion": v.conclusion,
                    "installed": v.installed_version,
                    "run_url": v.run_url,
                    "started": as_utc(v.started_at).isoformat(),
                    "finished": as_utc(v.finished_at).isoformat() if v.finished_at else None,
                    "detail": v.detail,
                    "log": v.log_excerpt,
                }
            )
    views = [
        CandidateView(
            version=release.version,
            profile=candidate.profile,
            role=candidate.role,
            eligible=candidate.eligible,
            reason=candidate.reason,
            status=candidate.status,
            found=as_utc(candidate.found_at),
            verifications=tuple(runs.get(candidate.id or 0, [])),
        )
        for candidate, release in rows
    ]
    views.sort(key=lambda c: (_descending(c.version), c.profile))
    return views


def proposals_of(session: Session, exclusion_id: int) -> list[dict[str, Any]]:
    """The proposals made for an exclusion."""
    return [
        {
            "kind": p.kind,
            "state": p.state,
            "new_clause": p.new_clause,
            "url": p.url,
            "created": as_utc(p.created_at).isoformat(),
        }
        for p in session.exec(
            select(Proposal)
            .where(col(Proposal.exclusion_id) == exclusion_id)
            .order_by(col(Proposal.id))
        )
    ]


# -- debt -----------------------------------------------------------------------------------


def debt(
    session: Session, *, now: datetime, days: int = 180
) -> tuple[list[DebtPoint], list[float]]:
    """Per day over the last ``days``: open exclusions and their median age; and the ages
    of those open now (for the histogram). One query of two columns; counted in Python."""
    spans = [
        (as_utc(first), as_utc(removed) if removed else None)
        for first, removed in session.exec(
            select(Exclusion.first_seen_at, Exclusion.removed_at).where(
                col(Exclusion.sub_kind) != SubKind.SENTINEL
            )
        ).all()
    ]
    today = now.date()
    start = today - timedelta(days=days - 1)
    series: list[DebtPoint] = []
    # Sample ages on at most ~60 days (medians are costly); counts come from a sweep.
    step = max(1, days // 60)
    delta: dict[date, int] = defaultdict(int)
    open_before = 0
    for first, removed in spans:
        begin = first.date()
        if begin < start:
            if removed is None or removed.date() >= start:
                open_before += 1
        else:
            delta[begin] += 1
        if removed is not None and removed.date() >= start:
            delta[removed.date()] -= 1
    running = open_before
    for offset in range(days):
        day = start + timedelta(days=offset)
        running += delta.get(day, 0)
        median: float | None = None
        if offset % step == 0 or day == today:
            moment = datetime.combine(day, datetime.max.time()).replace(tzinfo=now.tzinfo)
            ages = [
                (moment - first).total_seconds() / 86400
                for first, removed in spans
                if first <= moment and (removed is None or removed > moment)
            ]
            median = round(statistics.median(ages), 1) if ages else None
        series.append(DebtPoint(day, max(0, running), median))
    ages_now = [
        max(0.0, (now - first).total_seconds() / 86400)
        for first, removed in spans
        if removed is None
    ]
    return series, ages_now


def counts(session: Session, *, now: datetime) -> dict[str, int]:
    """Exclusions by state (``overdue`` counted apart, among the open ones)."""
    out: dict[str, int] = dict.fromkeys(STATES, 0)
    for state, number in session.execute(
        columns(col(Exclusion.state), func.count()).group_by(col(Exclusion.state))
    ).all():
        out[state] = int(number)
    out[State.OVERDUE] = _overdue(session, now.date())
    return out


def _overdue(session: Session, today: date) -> int:
    """Open exclusions whose current annotation's review date has passed."""
    return int(
        session.execute(
            columns(func.count())
            .select_from(Exclusion)
            .join(Annotation, CURRENT_NOTE)
            .where(col(Exclusion.removed_at).is_(None), col(Annotation.review_by) < today)
        ).one()[0]
    )
