"""``/metrics``: the store's state in the Prometheus text format (0.0.4), every series ``govern_``.

Series:

- ``govern_exclusions{state}``: exclusions by lifecycle state (``overdue`` among the open);
- ``govern_exclusion_age_days_max``, ``govern_exclusion_age_days_median``: of open ones;
- ``govern_poll_runs_total``, ``govern_poll_duration_seconds_sum`` / ``_count``, and
  ``govern_poll_last_duration_seconds``, ``govern_poll_last_timestamp_seconds``,
  ``govern_poll_last_failed_projects``: from the recorded polls;
- ``govern_index_failing_projects``: projects whose last fetch failed;
- ``govern_verifications_total{conclusion}``: verifications by conclusion (``running``
  for those without one).
"""

from __future__ import annotations

import statistics
from datetime import datetime

from sqlalchemy import func
from sqlalchemy import select as columns
from sqlmodel import Session, col

from govern.exclusions.states import Conclusion
from govern.store.models import Exclusion, IndexPage, PollRun, Verification, as_utc
from govern.store.queries import counts


def _escape(value: str) -> str:
    """A label value as the text format wants it."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")

    def sample(self, name: str, value: float, **labels: str) -> None:
        shown = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
        self.lines.append(
            f"{name}{{{shown}}} {_number(value)}" if shown else f"{name} {_number(value)}"
        )


def _age(now: datetime, first: datetime) -> float:
    return round(max(0.0, (now - first).total_seconds() / 86400), 1)


def render(session: Session, *, now: datetime) -> str:
    """The metrics text."""
    out = _Writer()
    out.family("govern_up", "gauge", "1 when the store answered.")
    out.sample("govern_up", 1)

    out.family("govern_exclusions", "gauge", "Exclusions by lifecycle state.")
    for state, number in sorted(counts(session, now=now).items()):
        out.sample("govern_exclusions", number, state=state)

    open_ = col(Exclusion.removed_at).is_(None)
    opened = int(
        session.execute(columns(func.count()).select_from(Exclusion).where(open_)).one()[0]
    )
    oldest = session.execute(columns(func.min(col(Exclusion.first_seen_at))).where(open_)).one()[0]
    middle = [  # the median's one or two rows, found by the database (no row load in Python)
        as_utc(first)
        for (first,) in session.execute(
            columns(col(Exclusion.first_seen_at))
            .where(open_)
            .order_by(col(Exclusion.first_seen_at))
            .offset(max(0, (opened - 1) // 2))
            .limit(1 if opened % 2 else 2)
        )
    ]
    out.family("govern_exclusion_age_days_max", "gauge", "Age of the oldest open exclusion.")
    out.sample("govern_exclusion_age_days_max", _age(now, as_utc(oldest)) if oldest else 0)
    out.family("govern_exclusion_age_days_median", "gauge", "Median age of open exclusions.")
    median = statistics.fmean(_age(now, first) for first in middle) if middle else 0
    out.sample("govern_exclusion_age_days_median", round(median, 1))

    runs, total = session.execute(
        columns(
            func.count(col(PollRun.id)), func.coalesce(func.sum(col(PollRun.duration_seconds)), 0)
        )
    ).one()
    out.family("govern_poll_runs_total", "counter", "Polls recorded.")
    out.sample("govern_poll_runs_total", int(runs))
    out.family("govern_poll_duration_seconds", "summary", "Wall time of polls.")
    out.sample("govern_poll_duration_seconds_sum", float(total))
    out.sample("govern_poll_duration_seconds_count", int(runs))
    last = (
        session.execute(columns(PollRun).order_by(col(PollRun.started_at).desc()).limit(1))
        .scalars()
        .first()
    )
    out.family("govern_poll_last_duration_seconds", "gauge", "Wall time of the last poll.")
    out.sample("govern_poll_last_duration_seconds", last.duration_seconds if last else 0)
    out.family("govern_poll_last_timestamp_seconds", "gauge", "When the last poll ended.")
    out.sample(
        "govern_poll_last_timestamp_seconds",
        round(as_utc(last.finished_at).timestamp()) if last else 0,
    )
    out.family("govern_poll_last_failed_projects", "gauge", "Projects the last poll failed on.")
    out.sample("govern_poll_last_failed_projects", last.failed if last else 0)

    failing = session.execute(
        columns(func.count()).select_from(IndexPage).where(col(IndexPage.failures) > 0)
    ).one()[0]
    out.family("govern_index_failing_projects", "gauge", "Projects whose last fetch failed.")
    out.sample("govern_index_failing_projects", int(failing))

    out.family("govern_verifications_total", "counter", "Verifications by conclusion.")
    by_conclusion = dict(
        session.execute(
            columns(col(Verification.conclusion), func.count()).group_by(
                col(Verification.conclusion)
            )
        ).all()
    )
    for conclusion in Conclusion:
        out.sample(
            "govern_verifications_total",
            int(by_conclusion.get(conclusion, 0)),
            conclusion=conclusion,
        )
    out.sample("govern_verifications_total", int(by_conclusion.get(None, 0)), conclusion="running")
    return "\n".join(out.lines) + "\n"
