"""``kill -9`` of a real ``govern propose`` between a reminder's send and its record.

The receiver (the Slack-compatible webhook, the SMTP server) sends SIGKILL to the
``python -m govern propose`` process the moment the message arrives, before it answers:
the outbox row stays ``sending``, as after a power cut. The next ``govern propose`` must
not send it again; the receiver ends with exactly one message. (In-process crashes on
every channel and both databases: tests/notify/test_reminders.py; this is about a real
process dying, on SQLite.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from reminderworld import SMTP_PASSWORD, SMTP_USER
from sqlmodel import select

from fakes.api import Recorded
from fakes.smtp import Received, SMTPServer
from fakes.webhook import FakeWebhook
from govern.store.db import Store
from govern.store.models import Outbox

HOOK_ENV = "GOVERN_TEST_WEBHOOK_URL"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("database_url", ["sqlite"], indirect=True),
]


def propose(clone: Path, database_url: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """``python -m govern propose`` in the clone, started (not waited for)."""
    return subprocess.Popen(
        [sys.executable, "-m", "govern", "propose", "--db", database_url],
        cwd=clone,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def remind_with(clone: Path, notify: str) -> None:
    (clone / ".govern.toml").write_text(
        f'[propose]\npropose = "remind"\n[notify]\n{notify}', encoding="utf-8"
    )


def row(store: Store) -> Outbox:
    with store.session() as session:
        return session.exec(select(Outbox)).one()


def killed_then_again(
    store: Store, clone: Path, database_url: str, env: dict[str, str], victim: list[int]
) -> str:
    """The first run killed by the receiver; the second run's output."""
    first = propose(clone, database_url, env)
    victim.append(first.pid)
    _out, err = first.communicate(timeout=120)
    assert first.returncode == -signal.SIGKILL, err
    assert (row(store).state, row(store).attempts) == ("sending", 1)
    victim.clear()
    second = propose(clone, database_url, env)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    return out


def test_kill_9_after_the_webhook_received_it_is_not_sent_again(
    store: Store, clone: Path, database_url: str, webhook: FakeWebhook
) -> None:
    remind_with(clone, f'channels = ["webhook"]\nwebhook-url-env = "{HOOK_ENV}"\n')
    victim: list[int] = []

    def kill(_request: Recorded) -> None:
        if victim:
            os.kill(victim[0], signal.SIGKILL)

    webhook.on_message = kill
    out = killed_then_again(store, clone, database_url, {HOOK_ENV: webhook.hook_url}, victim)
    assert len(webhook.messages) == 1
    assert "unconfirmed (a run died while sending it; not sent again)" in out
    assert (row(store).state, row(store).result) == ("sent", {"unconfirmed": True, "attempts": 1})
    assert webhook.secret not in out


def test_kill_9_after_the_smtp_server_received_it_is_not_sent_again(
    store: Store, clone: Path, database_url: str, smtp: SMTPServer
) -> None:
    remind_with(
        clone,
        f'channels = ["email"]\nsmtp-host = "127.0.0.1"\nsmtp-port = {smtp.port}\n'
        'smtp-from = "govern@example.org"\nsmtp-to = ["team@example.org"]\n'
        'smtp-user-env = "SMTP_USER"\nsmtp-password-env = "SMTP_PASSWORD"\n'
        f'cafile = "{smtp.ca}"\n',
    )
    victim: list[int] = []

    def kill(_message: Received) -> None:
        if victim:
            os.kill(victim[0], signal.SIGKILL)

    smtp.on_message = kill
    env = {"SMTP_USER": SMTP_USER, "SMTP_PASSWORD": SMTP_PASSWORD}
    out = killed_then_again(store, clone, database_url, env, victim)
    assert len(smtp.messages) == 1
    assert smtp.messages[0].tls
    assert "email team@example.org: unconfirmed" in out
    assert SMTP_PASSWORD not in out
