"""The outbox: written before sending, looked for after a crash, retried with backoff."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlmodel import select

from govern.errors import GovernError
from govern.exclusions.states import OutboxAction, OutboxState
from govern.service import outbox
from govern.store import outbox as stored_outbox
from govern.store.db import Store
from govern.store.models import Outbox, as_utc

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    with Store(database_url) as opened:
        yield opened


class Remote:
    """The other side: what it received, and whether it can be searched."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.fail_with: GovernError | None = None

    async def send(self) -> dict[str, Any]:
        if self.fail_with is not None:
            raise self.fail_with
        self.received.append("pr")
        return {"number": len(self.received)}

    async def find(self) -> dict[str, Any] | None:
        return {"number": len(self.received)} if self.received else None


def _row(store: Store, key: str) -> Outbox:
    with store.session() as session:
        return session.exec(select(Outbox).where(Outbox.dedupe_key == key)).one()


def test_an_action_is_sent_once_however_often_it_is_delivered(store: Store) -> None:
    remote = Remote()
    for _ in range(3):
        done = asyncio.run(
            outbox.deliver(
                store, key="k", action=OutboxAction.OPEN_CHANGE, send=remote.send, now=NOW
            )
        )
        assert done.state is OutboxState.SENT
        assert done.result == {"number": 1}
    assert remote.received == ["pr"]
    row = _row(store, "k")
    assert (row.state, row.attempts, row.result) == ("sent", 1, {"number": 1})


def test_a_crash_between_sending_and_recording_finds_the_effect(store: Store) -> None:
    remote = Remote()

    async def send_then_die() -> dict[str, Any]:
        await remote.send()
        raise KeyboardInterrupt  # the process dies before the answer is recorded

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(
            outbox.deliver(store, key="k", action=OutboxAction.OPEN_CHANGE, send=send_then_die)
        )
    assert _row(store, "k").state == "sending"
    done = asyncio.run(
        outbox.deliver(
            store, key="k", action=OutboxAction.OPEN_CHANGE, send=remote.send, find=remote.find
        )
    )
    assert (done.state, done.sent_now, done.result) == (OutboxState.SENT, False, {"number": 1})
    assert remote.received == ["pr"]


def test_a_crash_before_the_request_left_sends_it(store: Store) -> None:
    remote = Remote()

    async def die() -> dict[str, Any]:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(outbox.deliver(store, key="k", action=OutboxAction.COMMENT, send=die))
    done = asyncio.run(
        outbox.deliver(
            store, key="k", action=OutboxAction.COMMENT, send=remote.send, find=remote.find
        )
    )
    assert (done.state, done.sent_now) == (OutboxState.SENT, True)
    assert remote.received == ["pr"]


def test_a_failure_is_recorded_and_retried_when_due(store: Store) -> None:
    remote = Remote()
    remote.fail_with = GovernError("GitHub answered 502")
    done = asyncio.run(
        outbox.deliver(store, key="k", action=OutboxAction.PUSH, send=remote.send, now=NOW)
    )
    assert (done.state, done.error) == (OutboxState.FAILED, "GitHub answered 502")
    row = _row(store, "k")
    assert row.next_attempt_at is not None
    assert row.next_attempt_at > NOW
    remote.fail_with = None
    early = asyncio.run(
        outbox.deliver(store, key="k", action=OutboxAction.PUSH, send=remote.send, now=NOW)
    )
    assert early.state is OutboxState.FAILED
    assert remote.received == []
    later = NOW + timedelta(hours=7)
    done = asyncio.run(
        outbox.deliver(store, key="k", action=OutboxAction.PUSH, send=remote.send, now=later)
    )
    assert done.state is OutboxState.SENT
    assert remote.received == ["pr"]


def test_a_failed_row_waits_full_jitter_up_to_the_first_ceiling(store: Store) -> None:
    """The wait is :class:`govern.http.retry.Backoff`'s full jitter (uniform in [0, 60 s]
    after a first failure), not a draw of its own in [30 s, 60 s]: one backoff, one
    distribution. 40 draws all above 30 s has a chance of 2**-40."""
    remote = Remote()
    remote.fail_with = GovernError("GitHub answered 502")
    waits: list[float] = []
    for i in range(40):
        key = f"jitter-{i}"
        asyncio.run(
            outbox.deliver(store, key=key, action=OutboxAction.PUSH, send=remote.send, now=NOW)
        )
        due = _row(store, key).next_attempt_at
        assert due is not None
        waits.append((as_utc(due) - NOW).total_seconds())
    assert all(0.0 <= wait <= outbox.RETRY.base for wait in waits)
    assert min(waits) < outbox.RETRY.base / 2


def test_it_gives_up_after_every_attempt_failed(store: Store) -> None:
    remote = Remote()
    remote.fail_with = GovernError("refused")
    when = NOW
    for _ in range(outbox.MAX_ATTEMPTS):
        done = asyncio.run(
            outbox.deliver(
                store, key="k", action=OutboxAction.REMIND_EMAIL, send=remote.send, now=when
            )
        )
        when += timedelta(days=1)
    assert done.state is OutboxState.DEAD
    remote.fail_with = None
    again = asyncio.run(
        outbox.deliver(store, key="k", action=OutboxAction.REMIND_EMAIL, send=remote.send, now=when)
    )
    assert again.state is OutboxState.DEAD
    assert remote.received == []


# -- resend_unconfirmed=False: channels that cannot be searched (a webhook, email) ------------


def _dies_after(remote: Remote) -> outbox.Send:
    async def send_then_die() -> dict[str, Any]:
        await remote.send()
        raise KeyboardInterrupt  # the process dies before the answer is recorded

    return send_then_die


def test_an_unsearchable_action_left_sending_is_marked_unconfirmed_not_sent_again(
    store: Store,
) -> None:
    remote = Remote()
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(
            outbox.deliver(
                store,
                key="k",
                action=OutboxAction.REMIND_WEBHOOK,
                send=_dies_after(remote),
                now=NOW,
            )
        )
    assert _row(store, "k").state == "sending"
    later = NOW + timedelta(minutes=5)
    for _ in range(2):
        done = asyncio.run(
            outbox.deliver(
                store,
                key="k",
                action=OutboxAction.REMIND_WEBHOOK,
                send=remote.send,
                now=later,
                resend_unconfirmed=False,
            )
        )
        assert (done.state, done.sent_now) == (OutboxState.SENT, False)
        assert done.result == {"unconfirmed": True, "attempts": 1}
    assert remote.received == ["pr"]
    row = _row(store, "k")
    assert (row.state, row.attempts, row.result) == (
        "sent",
        1,
        {"unconfirmed": True, "attempts": 1},
    )
    assert row.sent_at is not None
    assert row.sent_at.replace(tzinfo=UTC) == later


def test_by_default_an_unsearchable_action_left_sending_is_sent_again(store: Store) -> None:
    """A push: the same content pushed again is harmless, and confirms it."""
    remote = Remote()
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(
            outbox.deliver(store, key="k", action=OutboxAction.PUSH, send=_dies_after(remote))
        )
    done = asyncio.run(outbox.deliver(store, key="k", action=OutboxAction.PUSH, send=remote.send))
    assert (done.state, done.sent_now, done.result) == (OutboxState.SENT, True, {"number": 2})
    assert remote.received == ["pr", "pr"]


def test_a_searchable_action_is_looked_for_whatever_resend_unconfirmed_says(
    store: Store,
) -> None:
    remote = Remote()
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(
            outbox.deliver(store, key="k", action=OutboxAction.COMMENT, send=_dies_after(remote))
        )
    remote.received.clear()  # the comment is not there after all (it never arrived)
    done = asyncio.run(
        outbox.deliver(
            store,
            key="k",
            action=OutboxAction.COMMENT,
            send=remote.send,
            find=remote.find,
            resend_unconfirmed=False,
        )
    )
    assert (done.state, done.sent_now, done.result) == (OutboxState.SENT, True, {"number": 1})
    assert remote.received == ["pr"]


def test_an_unsearchable_failure_is_still_retried_when_due(store: Store) -> None:
    """``failed``: the send raised, so nothing arrived that could be confirmed."""
    remote = Remote()
    remote.fail_with = GovernError("webhook answered 503")
    first = asyncio.run(
        outbox.deliver(
            store,
            key="k",
            action=OutboxAction.REMIND_EMAIL,
            send=remote.send,
            now=NOW,
            resend_unconfirmed=False,
        )
    )
    assert (first.state, first.error) == (OutboxState.FAILED, "webhook answered 503")
    remote.fail_with = None
    done = asyncio.run(
        outbox.deliver(
            store,
            key="k",
            action=OutboxAction.REMIND_EMAIL,
            send=remote.send,
            now=NOW + timedelta(hours=7),
            resend_unconfirmed=False,
        )
    )
    assert (done.state, done.sent_now, done.result) == (OutboxState.SENT, True, {"number": 1})
    assert (_row(store, "k").attempts, remote.received) == (2, ["pr"])


def test_a_pending_row_is_sent_whatever_resend_unconfirmed_says(store: Store) -> None:
    """Written, then the process died before it marked the row sending: nothing left."""
    with store.session(write=True) as session:
        session.add(Outbox(dedupe_key="k", action=OutboxAction.REMIND_EMAIL, created_at=NOW))
    remote = Remote()
    done = asyncio.run(
        outbox.deliver(
            store,
            key="k",
            action=OutboxAction.REMIND_EMAIL,
            send=remote.send,
            resend_unconfirmed=False,
        )
    )
    assert (done.state, done.sent_now) == (OutboxState.SENT, True)
    assert remote.received == ["pr"]


# -- claims: a row being sent belongs to the run sending it ---------------------------------


def test_two_overlapping_deliveries_of_one_key_send_once(store: Store) -> None:
    """Two clicks on "propose now", or the daemon beside a cron run: the second finds the
    row claimed by a run that is still sending it, and leaves it to that run."""
    remote = Remote()
    release = asyncio.Event()

    async def slow_send() -> dict[str, Any]:
        await release.wait()
        return await remote.send()

    async def main() -> tuple[outbox.Delivered, outbox.Delivered]:
        first = asyncio.create_task(
            outbox.deliver(
                store, key="k", action=OutboxAction.COMMENT, send=slow_send, find=remote.find
            )
        )
        await asyncio.sleep(0.05)  # the first has claimed the row and is sending
        second = await outbox.deliver(
            store, key="k", action=OutboxAction.COMMENT, send=remote.send, find=remote.find
        )
        release.set()
        return await first, second

    first, second = asyncio.run(main())
    assert (first.state, first.sent_now) == (OutboxState.SENT, True)
    assert (second.state, second.error) == (OutboxState.SENDING, "being sent by another run")
    assert remote.received == ["pr"]


def _claimed(store: Store, key: str, claim: dict[str, Any], lease: datetime) -> None:
    with store.session(write=True) as session:
        session.add(
            Outbox(
                dedupe_key=key,
                action=OutboxAction.COMMENT,
                state=OutboxState.SENDING,
                attempts=1,
                result={"claimed": claim},
                next_attempt_at=lease,
                created_at=NOW,
            )
        )


def test_a_row_claimed_by_a_live_process_is_left_to_it_and_a_dead_one_s_is_taken_over(
    store: Store,
) -> None:
    remote = Remote()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        here = {"host": socket.gethostname(), "pid": alive.pid, "sending": True}
        _claimed(store, "alive", here, NOW + timedelta(minutes=15))
        done = asyncio.run(
            outbox.deliver(
                store, key="alive", action=OutboxAction.COMMENT, send=remote.send, now=NOW
            )
        )
        assert (done.state, done.error) == (OutboxState.SENDING, "being sent by another run")
    finally:
        alive.kill()
        alive.wait()
    # The same claim once its process is gone: a crash, looked for, then sent.
    done = asyncio.run(
        outbox.deliver(
            store,
            key="alive",
            action=OutboxAction.COMMENT,
            send=remote.send,
            find=remote.find,
            now=NOW,
        )
    )
    assert (done.state, done.sent_now) == (OutboxState.SENT, True)
    assert remote.received == ["pr"]


def test_another_host_s_claim_holds_until_its_lease_ends(store: Store) -> None:
    remote = Remote()
    elsewhere = {"host": "another-host.invalid", "pid": 1, "sending": True}
    _claimed(store, "k", elsewhere, NOW + timedelta(minutes=15))
    early = asyncio.run(
        outbox.deliver(store, key="k", action=OutboxAction.COMMENT, send=remote.send, now=NOW)
    )
    assert early.state is OutboxState.SENDING
    late = asyncio.run(
        outbox.deliver(
            store,
            key="k",
            action=OutboxAction.COMMENT,
            send=remote.send,
            find=remote.find,
            now=NOW + timedelta(minutes=16),
        )
    )
    assert (late.state, late.sent_now) == (OutboxState.SENT, True)
    assert remote.received == ["pr"]


def test_any_exception_of_a_send_is_a_recorded_failure_never_a_sent_row(store: Store) -> None:
    """An error that is not govern's (a host name idna cannot encode) used to leave the row
    sending, and the next run then took it as sent, unconfirmed."""

    async def broken() -> dict[str, Any]:
        raise UnicodeError("label empty or too long: smtp..example.org")

    done = asyncio.run(
        outbox.deliver(
            store,
            key="k",
            action=OutboxAction.REMIND_EMAIL,
            send=broken,
            now=NOW,
            resend_unconfirmed=False,
        )
    )
    assert (done.state, done.error) == (OutboxState.FAILED, "internal error (UnicodeError)")
    again = asyncio.run(
        outbox.deliver(
            store,
            key="k",
            action=OutboxAction.REMIND_EMAIL,
            send=broken,
            now=NOW + timedelta(days=1),
            resend_unconfirmed=False,
        )
    )
    assert again.state is OutboxState.FAILED
    assert "unconfirmed" not in _row(store, "k").result


def test_an_error_after_the_message_may_have_left_is_unconfirmed_not_resent(
    store: Store,
) -> None:
    """A webhook's read timeout: the POST may have arrived, and a chat cannot be searched."""
    remote = Remote()

    class ReadTimedOut(GovernError):
        maybe_sent = True

    async def timed_out() -> dict[str, Any]:
        remote.received.append("pr")
        raise ReadTimedOut("webhook hooks.example: ReadTimeout")

    done = asyncio.run(
        outbox.deliver(
            store,
            key="k",
            action=OutboxAction.REMIND_WEBHOOK,
            send=timed_out,
            now=NOW,
            resend_unconfirmed=False,
        )
    )
    assert done.state is OutboxState.SENT
    assert done.result["unconfirmed"] is True
    again = asyncio.run(
        outbox.deliver(
            store,
            key="k",
            action=OutboxAction.REMIND_WEBHOOK,
            send=remote.send,
            resend_unconfirmed=False,
        )
    )
    assert again.state is OutboxState.SENT
    assert remote.received == ["pr"]


def test_a_claim_past_its_lease_is_stale_even_if_its_process_number_lives_on(
    store: Store,
) -> None:
    """Process numbers are reused; no send takes a lease's length."""
    remote = Remote()
    reused = {"host": socket.gethostname(), "pid": os.getppid(), "sending": True}
    _claimed(store, "k", reused, NOW - timedelta(minutes=1))
    done = asyncio.run(
        outbox.deliver(
            store, key="k", action=OutboxAction.COMMENT, send=remote.send, find=remote.find, now=NOW
        )
    )
    assert (done.state, done.sent_now) == (OutboxState.SENT, True)
    assert remote.received == ["pr"]


def test_a_newer_action_sent_supersedes_the_unsent_ones_of_the_same_thing(
    store: Store,
) -> None:
    remote = Remote()
    remote.fail_with = GovernError("GitHub answered 502")
    for key in ("push:a_b:1", "push:a_b:2", "push:a%b:3"):  # the file changed in between
        asyncio.run(
            outbox.deliver(store, key=key, action=OutboxAction.PUSH, send=remote.send, now=NOW)
        )
    remote.fail_with = None
    done = asyncio.run(
        outbox.deliver(
            store,
            key="push:a_b:4",
            action=OutboxAction.PUSH,
            send=remote.send,
            now=NOW,
            supersedes="push:a_b:",
        )
    )
    assert done.state is OutboxState.SENT
    assert [_row(store, k).state for k in ("push:a_b:1", "push:a_b:2")] == ["superseded"] * 2
    assert _row(store, "push:a_b:1").next_attempt_at is None
    assert _row(store, "push:a%b:3").state == "failed", "a LIKE wildcard in the prefix is text"
    with store.session() as session:
        total, listed = stored_outbox.troubled(session)
    assert (total, [t.state for t in listed]) == (1, ["failed"])
    # Asked for again (the file is back as it was), a superseded action is sent afresh.
    again = asyncio.run(
        outbox.deliver(store, key="push:a_b:1", action=OutboxAction.PUSH, send=remote.send, now=NOW)
    )
    assert again.state is OutboxState.SENT
    assert (_row(store, "push:a_b:1").attempts, remote.received) == (1, ["pr", "pr"])
