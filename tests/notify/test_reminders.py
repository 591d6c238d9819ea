"""``propose = "remind"``: one issue comment, one chat message, one email per verified
version, however many runs and crashes (govern/service/remind.py through the Proposer).

The receivers are real servers on 127.0.0.1 (tests/notify/conftest.py). A crash between
a channel's send and the outbox's record is the channel's send raising :class:`Dies`
after the message arrived: the row is left ``sending``, as a killed process leaves it
(tests/notify/test_kill.py kills a real ``govern propose`` for the webhook and SMTP).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from reminderworld import (
    ISSUE,
    NOW,
    SMTP_PASSWORD,
    SMTP_USER,
    TOKEN,
    verify,
)
from sqlmodel import col, select

from fakes.forge_github import FakeGitHubForge
from fakes.smtp import SMTPServer
from fakes.webhook import FakeWebhook, slack
from govern.config import Config, NotifyConfig, ProposeConfig
from govern.exclusions.states import EventKind, OutboxAction, OutboxState, ProposeMode, State, Via
from govern.forge.github import GitHubForge
from govern.notify import channels
from govern.notify.base import Message, Notifier
from govern.notify.email import message_id
from govern.service.outbox import seal
from govern.service.propose import Proposer, ProposeResult
from govern.store.db import Store
from govern.store.models import Event, Outbox, StoredExclusion

WEBHOOK_ENV = "GOVERN_TEST_WEBHOOK_URL"
ALL = ("issue", "webhook", "email")


class Dies(BaseException):
    """The process dying after a channel delivered and before the outbox recorded it."""


class World:
    """The three receivers, and how ``govern propose`` is configured to reach them."""

    def __init__(self, github: FakeGitHubForge, webhook: FakeWebhook, smtp: SMTPServer) -> None:
        self.github = github
        self.webhook = webhook
        self.smtp = smtp
        self.environ = {
            WEBHOOK_ENV: webhook.hook_url,
            "SMTP_USER": SMTP_USER,
            "SMTP_PASSWORD": SMTP_PASSWORD,
        }

    def config(self, channels: Sequence[str] = ALL, *, host: str = "github.com") -> Config:
        return Config(
            propose=ProposeConfig(via=Via.GITHUB, mode=ProposeMode.REMIND),
            notify=NotifyConfig(
                channels=tuple(channels),
                webhook_url_env=WEBHOOK_ENV,
                smtp_host="127.0.0.1",
                smtp_port=self.smtp.port,
                smtp_from="govern <govern@example.org>",
                smtp_to=("team@example.org",),
                smtp_user_env="SMTP_USER",
                smtp_password_env="SMTP_PASSWORD",
                cafile=str(self.smtp.ca),
            ),
        )

    @property
    def comments(self) -> list[dict[str, Any]]:
        return self.github.comments.get(1, [])

    def counts(self) -> tuple[int, int, int]:
        """(issue comments, webhook messages, emails) received."""
        return len(self.comments), len(self.webhook.messages), len(self.smtp.messages)


@pytest.fixture
def world(github: FakeGitHubForge, webhook: FakeWebhook, smtp: SMTPServer) -> World:
    return World(github, webhook, smtp)


def _no_pusher(_root: Path, _settings: ProposeConfig) -> Any:
    raise AssertionError("a reminder pushes nothing")


def propose(
    store: Store,
    world: World,
    *,
    config: Config | None = None,
    dies_after: str | None = None,
    now: datetime = NOW,
    dry_run: bool = False,
    environ: dict[str, str] | None = None,
) -> ProposeResult:
    """One ``govern propose`` run against the receivers (``dies_after``: that channel's
    send raises Dies once its message arrived)."""
    settings = config or world.config()

    async def main() -> ProposeResult:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitHubForge(
                world.github.repository, client, api_url=world.github.url, token=TOKEN
            )

            def notifiers_for(_root: Path, config: Config) -> list[Notifier]:
                built = channels.build(
                    config.notify,
                    http=client,
                    environ=environ or world.environ,
                    forge=forge,
                    host="github.com",
                )
                for notifier in built:
                    if notifier.name == dies_after:
                        real = notifier.send

                        async def send_then_die(message: Message, real: Any = real) -> Any:
                            await real(message)
                            raise Dies

                        notifier.send = send_then_die  # type: ignore[method-assign]
                return built

            proposer = Proposer(
                store,
                pusher_for=_no_pusher,
                forge_for=lambda _root, _s: forge,
                config_for=lambda _root: settings,
                now=lambda: now,
                notifiers_for=notifiers_for,
            )
            return await proposer.run(dry_run=dry_run)

    return asyncio.run(main())


def outbox_rows(store: Store) -> dict[str, Outbox]:
    with store.session() as session:
        return {row.action: row for row in session.exec(select(Outbox)).all()}


def events(store: Store, kind: EventKind) -> list[Event]:
    with store.session() as session:
        return list(session.exec(select(Event).where(col(Event.kind) == kind)).all())


def exclusion_key(store: Store) -> str:
    with store.session() as session:
        return session.exec(select(StoredExclusion)).one().key


# -- once, on every channel -----------------------------------------------------------------


def test_three_runs_send_one_comment_one_chat_message_and_one_email(
    store: Store, world: World
) -> None:
    results = [propose(store, world) for _ in range(3)]
    assert world.counts() == (1, 1, 1)
    key = exclusion_key(store)
    first = results[0].proposals[0]
    assert (first.state, first.via) == ("sent", "remind")
    assert first.url == world.comments[0]["html_url"]
    assert first.message == (
        "issue vllm-project/vllm#1: sent; webhook 127.0.0.1:"
        f"{world.webhook.port}: sent; email team@example.org: sent"
    )
    assert [r.proposals[0].state for r in results[1:]] == ["sent", "sent"]
    assert results[2].proposals[0].message == (
        "issue vllm-project/vllm#1: already sent; webhook 127.0.0.1:"
        f"{world.webhook.port}: already sent; email team@example.org: already sent"
    )
    # The issue comment: on this repository's issue, never upstream's cupy/cupy#9963.
    comment = world.comments[0]["body"]
    assert "`cupy-cuda13x < 14.1.0` → `cupy-cuda13x != 14.1.0`" in comment
    assert "| cuda13 | cuda13-ci | [run](https://ci.example/runs/14.1.1) | 14.1.1 |" in comment
    assert comment.endswith(f"\n\n{seal(store).marker('reminder', f'remind:{key}:14.1.1:issue')}\n")
    assert set(world.github.comments) == {1}
    # The chat message: Slack's payload, escaped, with the dedupe key as Idempotency-Key.
    (posted,) = world.webhook.sent("POST")
    assert posted.headers["idempotency-key"] == f"remind:{key}:14.1.1:webhook"
    assert posted.headers["content-type"] == "application/json"
    text = world.webhook.messages[0]["text"]
    assert list(world.webhook.messages[0]) == ["text"]
    assert text.startswith(
        "*cupy-cuda13x 14.1.1 passed verification: relax cupy-cuda13x &lt; 14.1.0*"
    )
    assert "`cupy-cuda13x &lt; 14.1.0` → `cupy-cuda13x != 14.1.0`" in text
    assert "cuda13 (cuda13-ci): https://ci.example/runs/14.1.1, installed 14.1.1" in text
    # The email: through STARTTLS, logged in, with a Message-ID from the dedupe key.
    (mail,) = world.smtp.messages
    assert (mail.tls, mail.login, mail.mail_from) == (True, SMTP_USER, "govern@example.org")
    assert mail.rcpt_tos == ("team@example.org",)
    headers = mail.mail
    assert headers["Subject"] == (
        "cupy-cuda13x 14.1.1 passed verification: relax cupy-cuda13x < 14.1.0"
    )
    assert headers["From"] == "govern <govern@example.org>"
    assert headers["To"] == "team@example.org"
    assert headers["Message-ID"] == message_id(f"remind:{key}:14.1.1:email", "govern@example.org")
    assert headers["Message-ID"].endswith("@example.org>")
    body = headers.get_content()
    assert "Candidate: cupy-cuda13x 14.1.1" in body
    assert "- cuda13 (cuda13-ci): https://ci.example/runs/14.1.1, installed 14.1.1" in body
    assert "Change: `cupy-cuda13x < 14.1.0` → `cupy-cuda13x != 14.1.0`" in body
    assert 'propose = "none" for cupy-cuda13x in [tool.govern.propose.packages]' in body
    # Recorded once: the outbox rows, the event, the exclusion proposed.
    rows = outbox_rows(store)
    assert {a: (r.state, r.attempts) for a, r in rows.items()} == {
        "remind-issue": ("sent", 1),
        "remind-webhook": ("sent", 1),
        "remind-email": ("sent", 1),
    }
    (event,) = events(store, EventKind.REMINDED)
    assert event.detail == {
        "version": "14.1.1",
        "via": "remind",
        "channels": ["issue", "webhook", "email"],
        "url": first.url,
    }
    with store.session() as session:
        assert session.exec(select(StoredExclusion)).one().state == State.PROPOSED


def test_a_newer_verified_version_is_reminded_once_more(store: Store, world: World) -> None:
    assert propose(store, world).proposals[0].sent_now  # sent by this run
    verify(store, "14.1.2")
    results = [propose(store, world) for _ in range(2)]
    assert [r.proposals[0].sent_now for r in results] == [True, False]  # read again: not sent
    result = results[-1]
    assert result.proposals[0].state == "sent"
    assert world.counts() == (2, 2, 2)
    assert [e.detail["version"] for e in events(store, EventKind.REMINDED)] == [
        "14.1.1",
        "14.1.2",
    ]
    assert "cupy-cuda13x 14.1.2 passed" in world.webhook.messages[1]["text"]


def test_dry_run_says_where_it_would_go_and_sends_nothing(store: Store, world: World) -> None:
    result = propose(store, world, dry_run=True)
    outcome = result.proposals[0]
    assert outcome.state == "dry-run"
    assert outcome.message == (
        "issue vllm-project/vllm#1: would be sent; webhook 127.0.0.1:"
        f"{world.webhook.port}: would be sent; email team@example.org: would be sent"
    )
    assert world.counts() == (0, 0, 0)
    assert outbox_rows(store) == {}
    assert events(store, EventKind.REMINDED) == []


def test_no_issue_of_this_repository_among_the_links_skips_the_issue_channel(
    store: Store, world: World
) -> None:
    config = world.config(("issue",))

    async def main() -> ProposeResult:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitHubForge(
                world.github.repository, client, api_url=world.github.url, token=TOKEN
            )
            proposer = Proposer(
                store,
                pusher_for=_no_pusher,
                config_for=lambda _root: config,
                now=lambda: NOW,
                notifiers_for=lambda _root, c: channels.build(
                    c.notify, http=client, environ={}, forge=forge, host="gitlab.example"
                ),
            )
            return await proposer.run()

    outcome = asyncio.run(main()).proposals[0]
    assert (outcome.state, outcome.message) == (
        "skipped",
        "issue: skipped, no linked issue under vllm-project/ on gitlab.example",
    )
    assert world.counts() == (0, 0, 0)
    assert events(store, EventKind.REMINDED) == []


def test_a_proposer_built_without_notifiers_skips_reminders(store: Store, world: World) -> None:
    proposer = Proposer(
        store, pusher_for=_no_pusher, config_for=lambda _root: world.config(), now=lambda: NOW
    )
    outcome = asyncio.run(proposer.run()).proposals[0]
    assert (outcome.state, outcome.via) == ("skipped", "remind")
    assert outcome.message == "this run was built without notifiers (govern propose builds them)"


# -- crashes --------------------------------------------------------------------------------


@pytest.mark.parametrize("channel", ALL)
def test_a_crash_between_sending_and_recording_never_sends_twice(
    store: Store, world: World, channel: str
) -> None:
    with pytest.raises(Dies):
        propose(store, world, dies_after=channel)
    assert outbox_rows(store)[f"remind-{channel}"].state == OutboxState.SENDING
    results = [propose(store, world) for _ in range(2)]
    assert world.counts() == (1, 1, 1), "the comment is found by its marker; the others stay"
    row = outbox_rows(store)[f"remind-{channel}"]
    assert (row.state, row.attempts) == ("sent", 1)
    said = results[0].proposals[0].message or ""
    if channel == "issue":
        assert row.result == {
            "issue": "vllm-project/vllm#1",
            "id": world.comments[0]["id"],
            "url": world.comments[0]["html_url"],
            "found": True,
        }
        assert "issue vllm-project/vllm#1: found (sent by a run that died" in said
    else:
        assert row.result == {"unconfirmed": True, "attempts": 1}
        assert f"{channel} " in said
        assert "unconfirmed (a run died while sending it; not sent again)" in said
    assert results[0].proposals[0].state == "sent"
    assert len(events(store, EventKind.REMINDED)) == 1


def test_a_reminder_another_run_is_sending_is_left_to_it_and_is_no_failure(
    store: Store, world: World
) -> None:
    """Every channel's row is held right now by another live run: this run stands aside
    (not a failure, so ``govern propose`` exits 0) and sends nothing."""
    key = exclusion_key(store)
    holder = {"host": socket.gethostname(), "pid": os.getppid(), "at": NOW.isoformat()}
    with store.session(write=True) as session:
        for channel in ALL:
            session.add(
                Outbox(
                    dedupe_key=f"remind:{key}:14.1.1:{channel}",
                    action=OutboxAction.remind(channel),
                    state=OutboxState.SENDING,
                    attempts=1,
                    next_attempt_at=NOW + timedelta(hours=1),
                    result={"claimed": {**holder, "sending": True}},
                    created_at=NOW,
                )
            )
    result = propose(store, world)
    (outcome,) = result.proposals
    assert outcome.state == "stood-aside", outcome.message
    assert not result.failed
    assert outcome.message is not None
    assert outcome.message.count("another run is sending it; left to that run") == 3
    assert world.counts() == (0, 0, 0)


def test_a_crash_before_sending_sends_on_the_next_run(store: Store, world: World) -> None:
    """The rows were written (pending) and the process died before it marked one sending."""
    key = exclusion_key(store)
    with store.session(write=True) as session:
        for channel in ALL:
            session.add(
                Outbox(
                    dedupe_key=f"remind:{key}:14.1.1:{channel}",
                    action=OutboxAction.remind(channel),
                    created_at=NOW,
                )
            )
    propose(store, world)
    propose(store, world)
    assert world.counts() == (1, 1, 1)
    assert {a: (r.state, r.attempts) for a, r in outbox_rows(store).items()} == {
        "remind-issue": ("sent", 1),
        "remind-webhook": ("sent", 1),
        "remind-email": ("sent", 1),
    }


# -- failures and secrets -------------------------------------------------------------------


def _leaks(world: World, *texts: str | None) -> list[str]:
    secrets = (
        world.webhook.secret,
        world.webhook.hook_url,
        SMTP_PASSWORD,
        "wrong-" + SMTP_PASSWORD,
    )
    return [s for s in secrets for text in texts if text and s in text]


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (slack(500, "rollup_error"), "answered 500: rollup_error"),
        (slack(401, "invalid_token"), "answered 401: invalid_token"),
        (slack(429, "rate_limited", {"Retry-After": "30"}), "answered 429: rate_limited"),
    ],
)
def test_a_refused_webhook_and_login_keep_their_secrets(
    store: Store,
    world: World,
    caplog: pytest.LogCaptureFixture,
    answer: Any,
    said: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    world.webhook.fail(answer)
    wrong = {**world.environ, "SMTP_PASSWORD": "wrong-pa55"}
    result = propose(store, world, environ=wrong)
    outcome = result.proposals[0]
    assert outcome.state == "failed"
    assert result.failed
    message = outcome.message or ""
    assert "issue vllm-project/vllm#1: sent" in message
    assert f"webhook 127.0.0.1:{world.webhook.port} ($GOVERN_TEST_WEBHOOK_URL) {said}" in message
    assert "refused the login of govern-bot: 535 5.7.8 Authentication credentials invalid" in (
        message
    )
    rows = outbox_rows(store)
    assert (rows["remind-webhook"].state, rows["remind-email"].state) == ("failed", "failed")
    stored = [str(r.last_error) + repr(r.result) for r in rows.values()]
    assert "HTTP Request: POST" in caplog.text  # httpx did log the request...
    assert _leaks(world, message, *stored, caplog.text) == []  # ...without the URL
    assert world.counts() == (1, 0, 0)
    # Retried when due (the answer is right again, and so is the password).
    later = propose(store, world, now=NOW + timedelta(hours=7))
    assert later.proposals[0].state == "sent"
    assert world.counts() == (1, 1, 1)
    assert len(events(store, EventKind.REMINDED)) == 1
    assert _leaks(world, later.proposals[0].message, caplog.text) == []


def test_a_missing_webhook_variable_is_named_not_guessed(store: Store, world: World) -> None:
    result = propose(store, world, environ={"SMTP_USER": "u", "SMTP_PASSWORD": "p"})
    outcome = result.proposals[0]
    assert outcome.state == "failed"
    assert outcome.message == (
        "$GOVERN_TEST_WEBHOOK_URL is not set: it should hold the webhook's URL "
        "([tool.govern.notify] webhook-url-env)"
    )
    assert world.counts() == (0, 0, 0)


def test_the_first_linked_issue_of_this_repository_is_chosen(store: Store, world: World) -> None:
    propose(store, world, config=world.config(("issue",)))
    assert ISSUE.endswith("/issues/1")
    assert [c["body"].count("govern:reminder=") for c in world.comments] == [1]
