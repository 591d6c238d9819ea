"""The exclusions' threads of events and the states they move: every event is appended here.

:func:`record` appends one event and applies its transition (:mod:`govern.lifecycle`'s
table) to the exclusion's state, in the caller's transaction; a refused one raises
:class:`govern.lifecycle.TransitionRefused` and nothing is written. The batch writers (the
sync, the poll) apply the same table to each event in memory and append them with
:func:`append_batch`. The thread is append-only: nothing updates or deletes an event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert
from sqlmodel import Session

from govern.exclusions.states import EventKind, State
from govern.lifecycle import advance
from govern.store.db import BULK
from govern.store.models import Event, StoredExclusion


def record(
    session: Session,
    exclusion: StoredExclusion | int,
    kind: EventKind,
    detail: dict[str, Any],
    at: datetime,
    *,
    to: State | None = None,
    pull_request: int | None = None,
    recorded_at: datetime | None = None,
) -> State:
    """Append an event of ``kind`` to the exclusion's thread and move its state as the
    lifecycle says (``to`` picks where the table allows several); returns the state."""
    row = (
        exclusion
        if isinstance(exclusion, StoredExclusion)
        else session.get(StoredExclusion, exclusion)
    )
    if row is None or row.id is None:
        raise LookupError(f"no exclusion {exclusion!r} to record a {kind} event on")
    after = advance(kind, row.state, to=to)
    if after != row.state:
        row.state = after
        session.add(row)
    session.add(
        Event(
            exclusion_id=row.id,
            kind=kind,
            at=at,
            recorded_at=recorded_at or at,
            detail=detail,
            pull_request=pull_request,
        )
    )
    return after


def append_batch(on: Session | Connection, *, rows: Sequence[Mapping[str, Any]]) -> None:
    """New events (dicts by column) in one batch, whose transitions the caller applied
    (:func:`govern.lifecycle.advance`) to the rows it writes in the same transaction."""
    if rows:
        on.execute(insert(Event), list(rows), execution_options=BULK)
