"""The dashboard's write actions, shared by the forms and the JSON API.

Each adds an event to the exclusion's thread (who did what is the thread's business) and
changes only dashboard-owned fields: ``snoozed_until``, ``assigned_owner``,
``acknowledged_at``. "Verify now" starts :class:`~govern.service.verify.Verifier` for the
exclusion in the background, and "propose now" the proposer (through its outbox, so a
click never sends anything twice).
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import date, datetime

from sqlmodel import Session, col, select

from govern.exclusions.states import PROPOSABLE, EventKind
from govern.store import events
from govern.store.models import StoredExclusion
from govern.store.queries import has_nul
from govern.web.state import AppState

logger = logging.getLogger(__name__)
# The stored states "propose now" acts on (an overdue review is shown, never stored).
MAX_OWNER = 256
OWNER_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]*$"  # no control characters


class ActionError(ValueError):
    """A write that cannot be done (unknown exclusion, a date in the past, ...)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _exclusion(state: AppState, key: str, session: object) -> StoredExclusion:
    assert isinstance(session, Session)
    if has_nul(key):
        raise ActionError(f"no exclusion with id {key!r}", status=404)
    row = session.exec(select(StoredExclusion).where(col(StoredExclusion.key) == key)).first()
    if row is None or row.id is None:
        raise ActionError(f"no exclusion with id {key!r}", status=404)
    return row


def _record(
    session: Session, row: StoredExclusion, kind: EventKind, now: datetime, **detail: object
) -> None:
    """The action's event on the exclusion's thread (no action moves its state)."""
    events.record(session, row, kind, dict(detail), now)


def snooze(state: AppState, key: str, until: date) -> date:
    """Hide the exclusion from the pending view until ``until`` (a future date)."""
    now = state.clock()
    with state.store.session(write=True) as session:
        row = _exclusion(state, key, session)
        if until <= now.date():
            raise ActionError(f"snooze until {until.isoformat()}: the date must be in the future")
        if until.year > now.year + 5:
            raise ActionError("snooze for at most five years")
        row.snoozed_until = until
        _record(session, row, EventKind.SNOOZED, now, until=until.isoformat(), by="dashboard")
    return until


def set_owner(state: AppState, key: str, owner: str) -> str | None:
    """Assign an owner over the annotation's (empty: back to the annotation's)."""
    now = state.clock()
    with state.store.session(write=True) as session:
        row = _exclusion(state, key, session)
        if len(owner) > MAX_OWNER or not re.match(OWNER_PATTERN, owner):
            raise ActionError(f"an owner is at most {MAX_OWNER} characters, none a control one")
        cleaned = " ".join(owner.split())
        row.assigned_owner = cleaned or None
        _record(session, row, EventKind.OWNER_ASSIGNED, now, owner=cleaned or None, by="dashboard")
    return cleaned or None


def acknowledge(state: AppState, key: str) -> datetime:
    """Record that a person has seen the exclusion's current state."""
    now = state.clock()
    with state.store.session(write=True) as session:
        row = _exclusion(state, key, session)
        row.acknowledged_at = now
        _record(session, row, EventKind.ACKNOWLEDGED, now, state=row.state, by="dashboard")
    return now


def forget(state: AppState, key: str, version: str, reason: str) -> str:
    """Take back the recorded verdict on ``version`` (a candidate again), saying why."""
    from govern.errors import GovernError
    from govern.service.verify import forget_verdict

    with state.store.session() as session:
        _exclusion(state, key, session)
    if not reason.strip():
        raise ActionError("say why the verdict is taken back")
    try:
        forgotten = forget_verdict(
            state.store, key, version, reason=reason, actor="dashboard", now=state.clock()
        )
    except GovernError as exc:
        raise ActionError(exc.message) from None
    return forgotten[0]["version"]


def verify_now(state: AppState, key: str) -> str:
    """Start verification of the exclusion's candidates in the background."""
    with state.store.session() as session:
        _exclusion(state, key, session)
    if state.ci is None:
        raise ActionError(
            "no CI provider is configured: add [tool.govern.ci.NAME] and verify-with", 409
        )
    verifier = state.verifier()

    async def run() -> None:
        try:
            result = await verifier.run(key)
        except Exception as exc:  # a background task must not die silently
            logger.error("verify %s failed: %s", key, type(exc).__name__)
            state.log.append(f"verify {key}: {type(exc).__name__}")
            return
        state.log.append(f"verify {key}: {result.started} started")

    state.remember(asyncio.get_running_loop().create_task(run()))
    return "started"


def proposable(session: Session, key: str) -> bool:
    """Whether "propose now" can act on the exclusion: by its stored state, whatever the
    page shows (``overdue`` hides a verified one's state)."""
    if has_nul(key):
        return False
    stored = session.exec(
        select(StoredExclusion.state).where(col(StoredExclusion.key) == key)
    ).first()
    return stored in PROPOSABLE


def propose_now(state: AppState, key: str) -> str:
    """Propose the exclusion's verified candidate in the background (sent once, as ever)."""
    from govern.application import propose_once

    with state.store.session() as session:
        row = _exclusion(state, key, session)
        if row.state not in PROPOSABLE:
            raise ActionError(
                f"nothing to propose: the exclusion is {row.state}, not verified", 409
            )

    async def run() -> None:
        try:
            result = await propose_once(state.store, key, dry_run=False)
        except Exception as exc:  # a background task must not die silently
            logger.error("propose %s failed: %s", key, type(exc).__name__)
            state.log.append(f"propose {key}: {type(exc).__name__}")
            return
        said = ", ".join(p.state for p in result.proposals) or "nothing to propose"
        state.log.append(f"propose {key}: {said}")

    state.remember(asyncio.get_running_loop().create_task(run()))
    return "started"
