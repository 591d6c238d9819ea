"""The exclusions' threads of events: every event is appended here (the thread is
append-only: nothing updates or deletes an event)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, insert
from sqlmodel import Session

from govern.store.db import BULK
from govern.store.models import Event


def insert_events(on: Session | Connection, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """New events (dicts by column), in one batch."""
    if rows:
        on.execute(insert(Event), list(rows), execution_options=BULK)
