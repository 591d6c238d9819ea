"""Exactly once: every outgoing action is written to the outbox before it is sent.

Notes: docs/internals.md#service.
Only the flow lives here; every statement on the rows is :mod:`govern.store.outbox`'s.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from govern.errors import GovernError
from govern.exclusions.states import OutboxAction, OutboxState
from govern.forge.base import Seal
from govern.http.retry import Backoff
from govern.store import outbox as rows
from govern.store import secrets
from govern.store.db import Store
from govern.store.models import as_utc

if TYPE_CHECKING:
    from govern.store.db import Session

MAX_ATTEMPTS = 8
# How long a run on another host may hold a row it is sending before it counts as crashed.
LEASE = timedelta(minutes=15)
_IN_FLIGHT: set[str] = set()  # the keys this process is sending right now
# A failed row is due again after a uniform pause up to a ceiling that starts at a minute
# and doubles with each attempt, up to six hours (full jitter: rows that failed together,
# e.g. one forge outage, are not retried together).
RETRY = Backoff(base=60.0, cap=6 * 3600.0)

Send = Callable[[], Awaitable[dict[str, Any]]]
Find = Callable[[], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True, slots=True)
class Delivered:
    """How one action went: its state, and the answer (or the error) recorded."""

    key: str
    state: OutboxState
    result: dict[str, Any]
    error: str | None = None
    sent_now: bool = False  # this call sent it (False: found, or sent before)

    @property
    def elsewhere(self) -> bool:
        """Another run is sending it right now: this one stood aside (not a failure)."""
        return self.state is OutboxState.SENDING


def seal(store: Store) -> Seal:
    """What signs the markers of the store's outgoing actions (its secret, made once)."""
    return Seal(secrets.secret(store))


def _now() -> datetime:
    return datetime.now(UTC)


def retry_wait(attempts: int) -> timedelta:
    """How long a row that failed ``attempts`` times waits until due again (:data:`RETRY`)."""
    return timedelta(seconds=RETRY.delay(max(1, attempts)))


async def deliver(
    store: Store,
    *,
    key: str,
    action: OutboxAction,
    send: Send,
    find: Find | None = None,
    proposal_id: int | None = None,
    now: datetime | None = None,
    retry_now: bool = False,
    resend_unconfirmed: bool = True,
    supersedes: str | None = None,
) -> Delivered:
    """Send ``action`` once under ``key``: record it, send it, mark it confirmed.

    ``find`` looks for the action's effect (None: the channel cannot be searched); it is
    asked whenever an earlier attempt may have had an effect. Without ``find`` and with
    ``resend_unconfirmed=False``, a row left ``sending`` by a crash is marked sent,
    unconfirmed, and not sent again. A failure due later is left alone unless ``retry_now``.
    A row another run is sending right now (:func:`_claimed_elsewhere`) is left to it.
    Once sent, the unsent rows of other keys starting with ``supersedes`` are superseded.
    """
    when = now or _now()
    with store.session(write=True) as session:
        # One run decides for a key at a time (the row's lock, held to the commit).
        row = rows.open_row(session, key=key, action=action, proposal_id=proposal_id, now=when)
        state = row.state
        if state is OutboxState.SENT or state is OutboxState.DEAD:
            return Delivered(key, state, dict(row.result), row.last_error)
        due = row.next_attempt_at
        if state is OutboxState.FAILED and due is not None and due > when and not retry_now:
            return Delivered(key, state, dict(row.result), row.last_error)
        claim = row.result.get(rows.CLAIM) if state is OutboxState.SENDING else None
        if isinstance(claim, dict) and _claimed_elsewhere(claim, key, due, when):
            return Delivered(key, state, {}, "being sent by another run")
        tried_before = row.attempts > 0
        started = isinstance(claim, dict) and claim.get("sending") is True
        if started and find is None and not resend_unconfirmed:
            # The first attempt may have arrived (carrying Idempotency-Key or Message-ID for
            # a receiver that drops duplicates): at most once, never a second copy.
            return _unconfirmed(session, key, when)
        # Claimed before looking or sending: no other run takes it meanwhile.
        rows.claim(session, row, holder=_holder(when), until=when + LEASE)
    _IN_FLIGHT.add(key)
    try:
        if tried_before and find is not None:
            try:
                found = await find()
            except Exception as exc:  # any failure is recorded, never a verdict
                return _failed(store, key, exc, when)
            if found is not None:
                return _sent(store, key, found, when, sent_now=False, supersedes=supersedes)
        with store.session(write=True) as session:
            rows.start_attempt(session, key=key, holder=_holder(when))
        try:
            result = await send()
        except Exception as exc:  # any failure is recorded, never a verdict
            # A deadline met after the request left: maybe sent, so never sent again.
            if not resend_unconfirmed and getattr(exc, "maybe_sent", False):
                with store.session(write=True) as session:
                    return _unconfirmed(session, key, when, error=_message(exc))
            return _failed(store, key, exc, when)
        return _sent(store, key, result, when, sent_now=True, supersedes=supersedes)
    finally:
        _IN_FLIGHT.discard(key)


def _holder(when: datetime) -> dict[str, Any]:
    """Who claims a row: this host and process, and when."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "at": when.isoformat()}


def _claimed_elsewhere(
    claim: dict[str, Any], key: str, lease: datetime | None, when: datetime
) -> bool:
    """Whether the run that claimed a ``sending`` row is still at it: within its lease, and
    on this host only while its process lives (in this process, while the key is in
    flight). A claim that is not alive was a crash: look, then send."""
    held = lease is not None and as_utc(lease) > when
    if claim.get("host") != socket.gethostname() or not held:
        return held  # no send takes a lease's length: past it, the claim is stale
    pid = claim.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool):
        return False
    if pid == os.getpid():
        return key in _IN_FLIGHT
    try:
        os.kill(pid, 0)  # signal 0: asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def _unconfirmed(session: Session, key: str, when: datetime, error: str | None = None) -> Delivered:
    """Mark a row sent without a confirmation: its first attempt may have arrived."""
    said = rows.mark_unconfirmed(session, key=key, now=when, error=error)
    return Delivered(key, OutboxState.SENT, said)


def _message(exc: Exception) -> str:
    """An error's one line for the row: govern's own message (secrets already scrubbed by
    every forge and notifier), or only the type of anything else (its text could hold
    anything)."""
    if isinstance(exc, GovernError):
        return exc.message
    return f"internal error ({type(exc).__name__})"


def _sent(
    store: Store,
    key: str,
    result: dict[str, Any],
    when: datetime,
    *,
    sent_now: bool,
    supersedes: str | None = None,
) -> Delivered:
    with store.session(write=True) as session:
        rows.mark_sent(session, key=key, result=result, now=when, supersedes=supersedes)
    return Delivered(key, OutboxState.SENT, result, sent_now=sent_now)


def _failed(store: Store, key: str, exc: Exception, when: datetime) -> Delivered:
    message = _message(exc)
    with store.session(write=True) as session:
        state = rows.mark_failed(
            session,
            key=key,
            error=message,
            max_attempts=MAX_ATTEMPTS,
            wait=retry_wait,
            now=when,
        )
    return Delivered(key, state, {}, message)
