"""The pending-relaxations issue (opened once, edited only when its text changed) and the
digest (once per period), through :class:`govern.service.remind.Digester` and the daemon.

GitHub is tests/fakes/forge_github.py (issues: https://docs.github.com/en/rest/issues/issues),
the chat webhook tests/fakes/webhook.py; the store is tests/notify/conftest.py's.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from clirun import run_cli
from reminderworld import NOW, TOKEN, verify
from sqlmodel import select

from fakes.api import Reply
from fakes.forge_github import FakeGitHubForge
from fakes.webhook import FakeWebhook
from govern.config import Config, NotifyConfig, ProposeConfig
from govern.exclusions.states import Via
from govern.forge.base import Issue
from govern.forge.github import GitHubForge
from govern.notify import channels, pending, templates
from govern.service.remind import Digester, DigestResult
from govern.store import outbox as stored_outbox
from govern.store.db import Store
from govern.store.models import Outbox, StoredAnnotation

HOOK_ENV = "GOVERN_TEST_WEBHOOK_URL"


class Dies(BaseException):
    """The process dying after the forge applied an edit and before it was recorded."""


def config(*, pending_issue: bool = False, digest: str = "none") -> Config:
    return Config(
        propose=ProposeConfig(via=Via.GITHUB),
        notify=NotifyConfig(
            channels=("issue", "webhook"),
            webhook_url_env=HOOK_ENV,
            pending_issue=pending_issue,
            digest=digest,
        ),
    )


def run(
    store: Store,
    github: FakeGitHubForge,
    webhook: FakeWebhook,
    settings: Config,
    *,
    now: datetime = NOW,
    dies_after_edit: bool = False,
) -> DigestResult:
    """One digest job (``dies_after_edit``: the forge's issue edit raises Dies once applied)."""

    async def main() -> DigestResult:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitHubForge(github.repository, client, api_url=github.url, token=TOKEN)
            if dies_after_edit:
                real = forge.update_issue

                async def update_then_die(number: int, *, title: str, body: str) -> Issue:
                    await real(number, title=title, body=body)
                    raise Dies

                forge.update_issue = update_then_die  # type: ignore[method-assign]
            digester = Digester(
                store,
                forge_for=lambda _root, _s: forge,
                notifiers_for=lambda _root, c: channels.build(
                    c.notify,
                    http=client,
                    environ={HOOK_ENV: webhook.hook_url},
                    forge=forge,
                    host="github.com",
                ),
                config_for=lambda _root: settings,
                now=lambda: now,
            )
            return await digester.run()

    return asyncio.run(main())


def pending_issues(github: FakeGitHubForge) -> list[dict[str, Any]]:
    return [
        i
        for i in github.issues.values()
        if "govern:pending=vllm-project/vllm sig=" in (i["body"] or "")
    ]


def writes(github: FakeGitHubForge) -> list[str]:
    return [f"{r.method} {r.path}" for r in github.sent() if r.method != "GET"]


# -- the pending issue ----------------------------------------------------------------------


def test_the_pending_issue_is_opened_once_and_edited_only_when_it_changed(
    tracked: Store, github: FakeGitHubForge, webhook: FakeWebhook
) -> None:
    settings = config(pending_issue=True)
    first = run(tracked, github, webhook, settings)
    (issue,) = pending_issues(github)
    assert first.repositories == [
        {
            "repository": "vllm-project/vllm",
            "pending_issue": {"state": "opened", "number": 2, "url": issue["html_url"]},
        }
    ]
    assert issue["title"] == "Pending relaxations: 0 relaxable, 0 overdue"
    assert "## Relaxable (0)\n- none" in issue["body"]
    assert (
        "## Held (1)\n- `cupy-cuda13x < 14.1.0` (`requirements/kv_connectors.txt` line 5)\n"
        "  Reason: `CuPy 14.1.0 imports pytest at import time (cupy/cupy#9963); keep it out"
    ) in issue["body"]
    requests = len(github.sent())
    again = run(tracked, github, webhook, settings)
    assert again.repositories[0]["pending_issue"]["state"] == "unchanged"
    assert len(github.sent()) == requests, "nothing changed: not even a request"
    # 14.1.1 passes: the exclusion becomes relaxable, and the same issue says so.
    verify(tracked, "14.1.1")
    third = run(tracked, github, webhook, settings)
    assert third.repositories[0]["pending_issue"]["state"] == "updated"
    (issue,) = pending_issues(github)
    assert issue["number"] == 2
    assert issue["title"] == "Pending relaxations: 1 relaxable, 0 overdue"
    assert (
        "## Relaxable (1)\n- `cupy-cuda13x < 14.1.0` → `cupy-cuda13x != 14.1.0`: 14.1.1 "
        "verified, run https://ci.example/runs/14.1.1 (`requirements/kv_connectors.txt` line 5)"
    ) in issue["body"]
    assert "## Held (0)\n- none" in issue["body"]
    run(tracked, github, webhook, settings)
    assert writes(github) == [
        "POST /repos/vllm-project/vllm/issues",  # issue #1, made by the fixture
        "POST /repos/vllm-project/vllm/issues",
        "PATCH /repos/vllm-project/vllm/issues/2",
    ]
    assert webhook.messages == []


def test_a_body_that_comes_back_is_written_again(
    tracked: Store, github: FakeGitHubForge, webhook: FakeWebhook
) -> None:
    settings = config(pending_issue=True)
    run(tracked, github, webhook, settings)  # held
    with tracked.session(write=True) as session:
        note = session.exec(select(StoredAnnotation)).one()
        note.review_by = date(2026, 1, 1)
    run(tracked, github, webhook, settings)  # overdue
    assert "## Overdue (1)" in pending_issues(github)[0]["body"]
    with tracked.session(write=True) as session:
        session.exec(select(StoredAnnotation)).one().review_by = None
    run(tracked, github, webhook, settings)  # held again: the first body, sent again
    (issue,) = pending_issues(github)
    assert "## Overdue (0)" in issue["body"]
    assert "## Held (1)" in issue["body"]
    with tracked.session() as session:
        keys = [r.dedupe_key for r in session.exec(select(Outbox)).all()]
    assert len(keys) == len(set(keys)) == 3


def test_a_text_that_failed_to_go_out_is_superseded_by_the_next_one_published(
    tracked: Store, github: FakeGitHubForge, webhook: FakeWebhook
) -> None:
    settings = config(pending_issue=True)
    github.fail(Reply(502, b"{}"), method="POST", path="/issues")  # the issue is not opened
    failed = run(tracked, github, webhook, settings)
    assert failed.repositories[0]["pending_issue"]["state"] == "failed"
    with tracked.session(write=True) as session:
        session.exec(select(StoredAnnotation)).one().review_by = date(2026, 1, 1)
    run(tracked, github, webhook, settings)  # another text, published
    (issue,) = pending_issues(github)
    assert "## Overdue (1)" in issue["body"]
    with tracked.session() as session:
        states = sorted(r.state for r in session.exec(select(Outbox)).all())
        total, _ = stored_outbox.troubled(session)
    assert states == ["sent", "superseded"]
    assert total == 0, "the dashboard lists no failing delivery for a text nobody wants now"


def test_a_crash_after_the_edit_finds_it_instead_of_editing_again(
    tracked: Store, github: FakeGitHubForge, webhook: FakeWebhook
) -> None:
    settings = config(pending_issue=True)
    run(tracked, github, webhook, settings)
    verify(tracked, "14.1.1")
    with pytest.raises(Dies):
        run(tracked, github, webhook, settings, dies_after_edit=True)
    result = run(tracked, github, webhook, settings)
    assert result.repositories[0]["pending_issue"]["state"] == "found"
    assert [w for w in writes(github) if w.startswith("PATCH")] == [
        "PATCH /repos/vllm-project/vllm/issues/2"
    ]


def test_without_a_forge_the_pending_issue_is_skipped_with_the_reason(
    tracked: Store, webhook: FakeWebhook
) -> None:
    async def main() -> DigestResult:
        async with httpx.AsyncClient() as client:
            return await Digester(
                tracked,
                forge_for=lambda _root, _s: None,
                notifiers_for=lambda _root, c: channels.build(
                    c.notify, http=client, environ={HOOK_ENV: webhook.hook_url}, forge=None
                ),
                config_for=lambda _root: config(pending_issue=True),
                now=lambda: NOW,
            ).run()

    assert asyncio.run(main()).repositories[0]["pending_issue"] == {
        "state": "skipped",
        "message": 'the pending issue needs a forge: via = "github" in [tool.govern.propose]',
    }


# -- the digest -----------------------------------------------------------------------------


def test_the_weekly_digest_is_sent_once_per_iso_week(
    store: Store, github: FakeGitHubForge, webhook: FakeWebhook
) -> None:
    settings = config(digest="weekly")
    results = [
        run(store, github, webhook, settings, now=NOW + timedelta(days=d)) for d in (0, 2, 5, 7)
    ]  # Tuesday of week 23, Thursday, Sunday; Tuesday of week 24
    assert [r.repositories[0]["digest"]["state"] for r in results] == ["sent"] * 4
    assert [r.repositories[0]["digest"]["period"] for r in results] == [
        "2026-W23",
        "2026-W23",
        "2026-W23",
        "2026-W24",
    ]
    assert len(webhook.messages) == 2
    assert "already sent" in results[1].repositories[0]["digest"]["message"]
    text = webhook.messages[0]["text"]
    assert text.startswith(
        "*govern digest 2026-W23 for vllm-project/vllm: 1 relaxable, 0 overdue, 0 held*"
    )
    assert "`cupy-cuda13x &lt; 14.1.0` → `cupy-cuda13x != 14.1.0`: 14.1.1 verified" in text
    keys = [r.headers["idempotency-key"] for r in webhook.sent("POST")]
    assert keys == [
        "digest:vllm-project/vllm:2026-W23:webhook",
        "digest:vllm-project/vllm:2026-W24:webhook",
    ]
    assert github.comments == {}, "the issue side of a digest is the pending issue"
    assert results[0].summary() == "1 repository: digest sent 1"


def test_a_daily_digest_with_nothing_to_act_on_is_not_sent(
    tracked: Store, github: FakeGitHubForge, webhook: FakeWebhook
) -> None:
    result = run(tracked, github, webhook, config(digest="daily"))
    assert result.repositories[0]["digest"] == {
        "state": "skipped",
        "message": "nothing relaxable or overdue",
    }
    with tracked.session(write=True) as session:
        session.exec(select(StoredAnnotation)).one().review_by = date(2026, 1, 1)
    result = run(tracked, github, webhook, config(digest="daily"))
    assert result.repositories[0]["digest"]["period"] == "2026-06-02"
    (message,) = webhook.messages
    assert "## " not in message["text"]
    assert "Overdue (1):\n- `cupy-cuda13x &lt; 14.1.0`: review by 2026-01-01" in message["text"]


def test_digest_periods_are_iso_weeks_and_dates() -> None:
    sunday = datetime(2027, 1, 3, 23, 0)  # ISO week 53 of 2026
    assert pending.period(sunday, "weekly") == "2026-W53"
    assert pending.period(sunday, "daily") == "2027-01-03"
    assert pending.period(sunday, "none") is None
    assert templates.digest_key("a b/c", "2026-W01").startswith("digest:repo-")


# -- the daemon -----------------------------------------------------------------------------


@pytest.fixture
def daily_digest(
    store: Store, clone: Path, webhook: FakeWebhook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Store:
    """The tracked clone configured for a daily digest to the webhook, run from elsewhere."""
    (clone / ".govern.toml").write_text(
        f'[notify]\nchannels = ["webhook"]\nwebhook-url-env = "{HOOK_ENV}"\ndigest = "daily"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv(HOOK_ENV, webhook.hook_url)
    monkeypatch.chdir(tmp_path)
    return store


def test_the_daemons_digest_job_sends_the_digest_once(
    daily_digest: Store,
    database_url: str,
    webhook: FakeWebhook,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["daemon", "--db", database_url, "--poll-every", "off", "--verify-every", "off"]
    for _ in range(2):
        code, out, err = run_cli([*argv, "--digest-every", "1h", "--once", "-f", "json"], capsys)
        assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0]["jobs"]["digest"] == "every 1h"
    (job,) = [e for e in events if e["event"] == "job"]
    assert (job["job"], job["ok"]) == ("digest", True)
    (repository,) = job["detail"]["repositories"]
    assert repository["digest"]["state"] == "sent"
    assert "already sent" in repository["digest"]["message"]
    assert len(webhook.messages) == 1
    assert webhook.secret not in out + err
    code, out, err = run_cli([*argv, "--digest-every", "soon"], capsys)
    assert code == 2
    assert "--digest-every 'soon' is not an interval" in err


def test_govern_digest_sends_the_period_s_digest_once(
    daily_digest: Store,
    database_url: str,
    webhook: FakeWebhook,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(["digest", "--db", database_url], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "vllm-project/vllm"
    today = datetime.now(UTC).date().isoformat()  # the period of a daily digest
    assert lines[1].split() == ["digest", "sent", today]
    code, out, err = run_cli(["digest", "--db", database_url, "--format", "json"], capsys)
    assert code == 0, err
    (repository,) = json.loads(out)["repositories"]
    assert repository["digest"]["state"] == "sent"
    assert "already sent" in repository["digest"]["message"]
    assert len(webhook.messages) == 1, "one digest a period, however often it runs"
    assert webhook.secret not in out + err


def test_govern_digest_with_nothing_configured_says_so(
    store: Store,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["digest", "--db", database_url], capsys)
    assert (code, err) == (0, "")
    assert out.startswith("nothing to do")
