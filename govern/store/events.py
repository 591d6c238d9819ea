"""The exclusions' threads of events: every event is appended here (the thread is
append-only: nothing updates or deletes an event)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert
from sqlmodel import Session

from govern.exclusions.states import EventKind
from govern.store.db import BULK
from govern.store.models import Event


def insert_events(on: Session | Connection, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """New events (dicts by column), in one batch."""
    if rows:
        on.execute(insert(Event), list(rows), execution_options=BULK)


def add_event(
    session: Session,
    *,
    exclusion_id: int,
    kind: EventKind,
    at: datetime,
    detail: dict[str, Any],
    pull_request: int | None = None,
    recorded_at: datetime | None = None,
) -> None:
    """Append one event to an exclusion's thread (recorded ``at`` unless said)."""
    session.add(
        Event(
            exclusion_id=exclusion_id,
            kind=kind,
            at=at,
            recorded_at=recorded_at or at,
            detail=detail,
            pull_request=pull_request,
        )
    )
