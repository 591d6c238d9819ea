"""Exactly once: every outgoing action is written to the outbox before it is sent.

Notes: docs/internals.md, govern/service/outbox.py.
"""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from govern.errors import GovernError
from govern.exclusions.states import OutboxState
from govern.forge.base import Seal
from govern.store import proposals, secrets
from govern.store.db import Store
from govern.store.models import Outbox, as_utc

MAX_ATTEMPTS = 8
# How long a run on another host may hold a row it is sending before it counts as crashed.
LEASE = timedelta(minutes=15)
_CLAIM = "claimed"  # the key of a sending row's result that says who sends it
_IN_FLIGHT: set[str] = set()  # the keys this process is sending right now
_FIRST_WAIT = 60.0  # seconds before the first retry; doubled each time, with full jitter
_MAX_WAIT = 6 * 3600.0

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


def _wait(attempts: int) -> timedelta:
    ceiling = min(_MAX_WAIT, _FIRST_WAIT * 2 ** max(0, attempts - 1))
    return timedelta(seconds=random.uniform(ceiling / 2, ceiling))  # noqa: S311


async def deliver(
    store: Store,
    *,
    key: str,
    action: str,
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
        proposals.lock_outbox(session, key=key)  # one run decides for a key at a time
        row = proposals.outbox_row(session, key=key)
        if row is None:
            row = Outbox(dedupe_key=key, action=action, proposal_id=proposal_id, created_at=when)
            session.add(row)
            session.flush()
        state = OutboxState(row.state)
        if state is OutboxState.SENT or state is OutboxState.DEAD:
            return Delivered(key, state, dict(row.result), row.last_error)
        due = row.next_attempt_at
        if state is OutboxState.FAILED and due is not None and due > when and not retry_now:
            return Delivered(key, state, dict(row.result), row.last_error)
        claim = row.result.get(_CLAIM) if state is OutboxState.SENDING else None
        if isinstance(claim, dict) and _claimed_elsewhere(claim, key, due, when):
            return Delivered(key, state, {}, "being sent by another run")
        tried_before = row.attempts > 0
        started = isinstance(claim, dict) and claim.get("sending") is True
        if started and find is None and not resend_unconfirmed:
            # The first attempt may have arrived: never a second copy (see the docstring).
            return _unconfirmed(session, row, when)
        # Claimed before looking or sending: no other run takes it meanwhile.
        row.state = OutboxState.SENDING
        row.result = {_CLAIM: _holder(when)}
        row.next_attempt_at = when + LEASE
        session.add(row)
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
            row = proposals.outbox_row(session, key=key)
            assert row is not None
            row.attempts += 1
            row.result = {_CLAIM: {**_holder(when), "sending": True}}
            session.add(row)
        try:
            result = await send()
        except Exception as exc:  # any failure is recorded, never a verdict
            if not resend_unconfirmed and getattr(exc, "maybe_sent", False):
                with store.session(write=True) as session:
                    row = proposals.outbox_row(session, key=key)
                    assert row is not None
                    return _unconfirmed(session, row, when, error=_message(exc))
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


def _unconfirmed(session: Any, row: Outbox, when: datetime, error: str | None = None) -> Delivered:
    """Mark a row sent without a confirmation: its first attempt may have arrived."""
    unconfirmed: dict[str, Any] = {"unconfirmed": True, "attempts": row.attempts}
    if error:
        unconfirmed["error"] = error[:500]
    row.state = OutboxState.SENT
    row.result = unconfirmed
    row.sent_at = when
    row.next_attempt_at = None
    session.add(row)
    return Delivered(row.dedupe_key, OutboxState.SENT, unconfirmed)


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
        row = proposals.outbox_row(session, key=key)
        assert row is not None
        row.state = OutboxState.SENT
        row.result = result
        row.sent_at = when
        row.last_error = None
        row.next_attempt_at = None
        session.add(row)
        if supersedes is not None:
            proposals.supersede_outbox(session, prefix=supersedes, sent=key)
    return Delivered(key, OutboxState.SENT, result, sent_now=sent_now)


def _failed(store: Store, key: str, exc: Exception, when: datetime) -> Delivered:
    message = _message(exc)
    with store.session(write=True) as session:
        row = proposals.outbox_row(session, key=key)
        assert row is not None
        row.attempts = max(row.attempts, 1)
        dead = row.attempts >= MAX_ATTEMPTS
        row.state = OutboxState.DEAD if dead else OutboxState.FAILED
        row.result = {}
        row.last_error = message[:2000]
        row.next_attempt_at = None if dead else when + _wait(row.attempts)
        session.add(row)
        state = OutboxState(row.state)
    return Delivered(key, state, {}, message)
