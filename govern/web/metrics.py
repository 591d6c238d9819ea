"""``/metrics``: the store's state in the Prometheus text format (0.0.4), every series ``govern_``.

Notes: docs/internals.md#web.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session

from govern.store.metrics import figures


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


def render(session: Session, *, now: datetime) -> str:
    """The metrics text."""
    found = figures(session, now=now)
    last = found.last_poll
    out = _Writer()
    out.family("govern_up", "gauge", "1 when the store answered.")
    out.sample("govern_up", 1)
    out.family("govern_exclusions", "gauge", "Exclusions by lifecycle state.")
    for state, number in sorted(found.states.items()):
        out.sample("govern_exclusions", number, state=state)
    out.family("govern_exclusion_age_days_max", "gauge", "Age of the oldest open exclusion.")
    out.sample("govern_exclusion_age_days_max", found.age_days_max)
    out.family("govern_exclusion_age_days_median", "gauge", "Median age of open exclusions.")
    out.sample("govern_exclusion_age_days_median", found.age_days_median)
    out.family("govern_poll_runs_total", "counter", "Polls recorded.")
    out.sample("govern_poll_runs_total", found.poll_runs)
    out.family("govern_poll_duration_seconds", "summary", "Wall time of polls.")
    out.sample("govern_poll_duration_seconds_sum", found.poll_seconds_total)
    out.sample("govern_poll_duration_seconds_count", found.poll_runs)
    out.family("govern_poll_last_duration_seconds", "gauge", "Wall time of the last poll.")
    out.sample("govern_poll_last_duration_seconds", last.duration_seconds if last else 0)
    out.family("govern_poll_last_timestamp_seconds", "gauge", "When the last poll ended.")
    out.sample(
        "govern_poll_last_timestamp_seconds", round(last.finished_at.timestamp()) if last else 0
    )
    out.family("govern_poll_last_failed_projects", "gauge", "Projects the last poll failed on.")
    out.sample("govern_poll_last_failed_projects", last.failed if last else 0)
    out.family("govern_index_failing_projects", "gauge", "Projects whose last fetch failed.")
    out.sample("govern_index_failing_projects", found.failing_projects)
    out.family("govern_verifications_total", "counter", "Verifications by conclusion.")
    for conclusion, number in found.verifications.items():
        out.sample("govern_verifications_total", number, conclusion=conclusion)
    return "\n".join(out.lines) + "\n"
