"""Held-back debt over time: open exclusions per day, their median age, and the ages of those
open now (the dashboard's ``/debt`` and ``/api/v1/debt``)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import date, datetime, timedelta

from sqlmodel import Session, col, select

from govern.exclusions.model import SubKind
from govern.store.models import StoredExclusion, as_utc
from govern.store.views import DebtDay


def debt(session: Session, *, now: datetime, days: int = 180) -> tuple[list[DebtDay], list[float]]:
    """Per day over the last ``days``: open exclusions and their median age; and the ages
    of those open now (for the histogram). One query of two columns; counted in Python."""
    spans = [
        (as_utc(first), as_utc(removed) if removed else None)
        for first, removed in session.exec(
            select(StoredExclusion.first_seen_at, StoredExclusion.removed_at).where(
                col(StoredExclusion.sub_kind) != SubKind.SENTINEL
            )
        ).all()
    ]
    today = now.date()
    start = today - timedelta(days=days - 1)
    series: list[DebtDay] = []
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
        series.append(DebtDay(day=day, count=max(0, running), median_age_days=median))
    ages_now = [
        max(0.0, (now - first).total_seconds() / 86400)
        for first, removed in spans
        if removed is None
    ]
    return series, ages_now
