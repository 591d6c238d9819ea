"""What ``/metrics`` reports, read from the store: exclusion ages, polls, failing projects and
verifications by conclusion (the dashboard renders it as Prometheus text)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func
from sqlalchemy import select as columns
from sqlmodel import Session, col

from govern.exclusions.states import Conclusion
from govern.store.models import IndexPage, PollRun, StoredExclusion, Verification, as_utc
from govern.store.queries import counts


@dataclass(frozen=True, slots=True)
class LastPoll:
    """The most recent recorded poll."""

    duration_seconds: float
    finished_at: datetime
    failed: int


@dataclass(frozen=True, slots=True)
class Figures:
    """The store's state at ``now``, as the metrics series report it."""

    states: dict[str, int]  # exclusions by shown state (overdue among the open)
    age_days_max: float  # of open exclusions (0 without any)
    age_days_median: float
    poll_runs: int
    poll_seconds_total: float
    last_poll: LastPoll | None
    failing_projects: int  # projects whose last fetch failed
    verifications: dict[str, int]  # by conclusion, every Conclusion and "running"


def _age(now: datetime, first: datetime) -> float:
    return round(max(0.0, (now - first).total_seconds() / 86400), 1)


def figures(session: Session, *, now: datetime) -> Figures:
    """The figures at ``now``; ages and the median are found by the database (no row load)."""
    open_ = col(StoredExclusion.removed_at).is_(None)
    opened = int(
        session.execute(columns(func.count()).select_from(StoredExclusion).where(open_)).one()[0]
    )
    oldest = session.execute(
        columns(func.min(col(StoredExclusion.first_seen_at))).where(open_)
    ).one()[0]
    middle = [  # the median's one or two rows
        as_utc(first)
        for (first,) in session.execute(
            columns(col(StoredExclusion.first_seen_at))
            .where(open_)
            .order_by(col(StoredExclusion.first_seen_at))
            .offset(max(0, (opened - 1) // 2))
            .limit(1 if opened % 2 else 2)
        )
    ]
    median = statistics.fmean(_age(now, first) for first in middle) if middle else 0.0
    runs, total = session.execute(
        columns(
            func.count(col(PollRun.id)), func.coalesce(func.sum(col(PollRun.duration_seconds)), 0)
        )
    ).one()
    last = (
        session.execute(columns(PollRun).order_by(col(PollRun.started_at).desc()).limit(1))
        .scalars()
        .first()
    )
    failing = session.execute(
        columns(func.count()).select_from(IndexPage).where(col(IndexPage.failures) > 0)
    ).one()[0]
    by_conclusion = dict(
        session.execute(
            columns(col(Verification.conclusion), func.count()).group_by(
                col(Verification.conclusion)
            )
        ).all()
    )
    verifications = {str(c): int(by_conclusion.get(c, 0)) for c in Conclusion}
    verifications["running"] = int(by_conclusion.get(None, 0))
    return Figures(
        states=counts(session, now=now),
        age_days_max=_age(now, as_utc(oldest)) if oldest else 0.0,
        age_days_median=round(median, 1),
        poll_runs=int(runs),
        poll_seconds_total=float(total),
        last_poll=(
            LastPoll(last.duration_seconds, as_utc(last.finished_at), last.failed) if last else None
        ),
        failing_projects=int(failing),
        verifications=verifications,
    )
