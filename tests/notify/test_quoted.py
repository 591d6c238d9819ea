"""A reason is quoted, never live: in the pull request, the issue comment, the pending
issue, the chat message and the email.

The reason holds what a forge or a chat would act on: HTML, Markdown, a right-to-left
override, ``@octocat`` and ``@org/team`` (pings), ``closes #5`` and ``fixes org/app#7``
(closing keywords), Slack's ``<!channel>``, a backtick and a govern marker. Each text is
read as CommonMark (markdown-it, what GitHub's and GitLab's renderers extend) and what a
reader would see live, outside code, must hold none of it; the override is ``<U+202E>``.
"""

from __future__ import annotations

import asyncio
import html
from pathlib import Path
from typing import Any

import httpx
import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token
from reminderworld import NOW, SMTP_PASSWORD, SMTP_USER, TOKEN
from sqlmodel import col, select

from fakes.forge_github import FakeGitHubForge
from fakes.smtp import SMTPServer
from fakes.webhook import FakeWebhook
from govern.config import Config, NotifyConfig, ProposeConfig
from govern.exclusions.states import ProposeMode, Via
from govern.forge.github import GitHubForge
from govern.git.push import Pusher
from govern.notify import channels
from govern.service.propose import Proposer
from govern.service.remind import Digester
from govern.store.db import Store
from govern.store.models import StoredAnnotation

HOOK_ENV = "GOVERN_TEST_WEBHOOK_URL"
HOSTILE = (
    "CuPy 14.1.0 <img src=x onerror=alert(1)> <b>breaks</b> **bold** [click](https://evil.example)"
    " \u202egnp.exe\u202c cc @octocat @org/team; closes #5, fixes org/app#7; <!channel>"
    " a `tick` <!-- govern:candidate=x:1 -->"
)
LIVE = (
    "<img",
    "<b>",
    "bold",
    "evil.example",
    "@octocat",
    "@org/team",
    "closes #5",
    "fixes org/app#7",
    "<!channel>",
    "govern:candidate=x:1",
)


def live(markdown: str) -> str:
    """What a reader of ``markdown`` gets live: the text outside code, raw HTML, links."""
    out: list[str] = []

    def walk(tokens: list[Token]) -> None:
        for token in tokens:
            if token.type in ("code_inline", "fence", "code_block"):
                continue
            if token.type in ("html_inline", "html_block", "text"):
                out.append(token.content)
            elif token.type in ("strong_open", "em_open", "link_open"):
                out.append(f"{token.type} {token.attrs.get('href', '')}")
            walk(token.children or [])

    walk(MarkdownIt("commonmark").enable("table").parse(markdown))
    return "\n".join(out)


def assert_quoted(text: str) -> None:
    """``text`` shows the reason, and nothing of it is live."""
    shown = live(text)
    assert [word for word in LIVE if word in shown] == []
    assert "\u202e" not in text
    assert "<U+202E>gnp.exe<U+202C>" in text
    assert "onerror=alert(1)" in text  # shown, not dropped


@pytest.fixture
def hostile(store: Store) -> Store:
    with store.session(write=True) as session:
        note = session.exec(select(StoredAnnotation).where(col(StoredAnnotation.current))).one()
        note.reason = HOSTILE
    return store


def _config(
    webhook: FakeWebhook,
    smtp: SMTPServer,
    *,
    mode: ProposeMode = ProposeMode.REMIND,
    pending: bool = False,
    channel: str = "issue",
) -> Config:
    return Config(
        propose=ProposeConfig(via=Via.GITHUB, mode=mode),
        notify=NotifyConfig(
            channels=(channel,),
            webhook_url_env=HOOK_ENV,
            smtp_host="127.0.0.1",
            smtp_port=smtp.port,
            smtp_from="govern@example.org",
            smtp_to=("team@example.org",),
            smtp_user_env="SMTP_USER",
            smtp_password_env="SMTP_PASSWORD",
            cafile=str(smtp.ca),
            pending_issue=pending,
        ),
    )


def _run(store: Store, github: FakeGitHubForge, config: Config, environ: dict[str, str]) -> Any:
    async def main() -> Any:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitHubForge(github.repository, client, api_url=github.url, token=TOKEN)

            def notifiers_for(_root: Path, settings: Config) -> Any:
                return channels.build(
                    settings.notify, http=client, environ=environ, forge=forge, host="github.com"
                )

            if config.notify.pending_issue:
                return await Digester(
                    store,
                    forge_for=lambda _root, _s: forge,
                    notifiers_for=notifiers_for,
                    config_for=lambda _root: config,
                    now=lambda: NOW,
                ).run()
            return await Proposer(
                store,
                pusher_for=lambda root, s: Pusher(root, remote=s.remote),
                forge_for=lambda _root, _s: forge,
                config_for=lambda _root: config,
                now=lambda: NOW,
                notifiers_for=notifiers_for,
            ).run()

    return asyncio.run(main())


@pytest.mark.parametrize("channel", ["issue", "webhook", "email"])
def test_the_reminder_quotes_the_reason(
    hostile: Store,
    github: FakeGitHubForge,
    webhook: FakeWebhook,
    smtp: SMTPServer,
    channel: str,
) -> None:
    environ = {HOOK_ENV: webhook.hook_url, "SMTP_USER": SMTP_USER, "SMTP_PASSWORD": SMTP_PASSWORD}
    result = _run(hostile, github, _config(webhook, smtp, channel=channel), environ)
    assert result.proposals[0].state == "sent", result.proposals[0].message
    if channel == "issue":
        (comment,) = github.comments[1]
        assert_quoted(comment["body"])
    elif channel == "webhook":
        # Slack escapes <, > and & (a chat reads the text unescaped); a Mattermost reads
        # the same text as Markdown.
        chat = webhook.messages[0]["text"]
        assert "<" not in chat
        assert_quoted(html.unescape(chat))
    else:
        (mail,) = smtp.messages
        assert_quoted(mail.mail.get_content())


def test_the_pending_issue_quotes_the_reason(
    hostile: Store, github: FakeGitHubForge, webhook: FakeWebhook, smtp: SMTPServer
) -> None:
    _run(hostile, github, _config(webhook, smtp, pending=True), {})
    (issue,) = [i for i in github.issues.values() if i["title"].startswith("Pending")]
    assert_quoted(issue["body"])


def test_the_pull_request_quotes_the_reason(
    hostile: Store, github: FakeGitHubForge, webhook: FakeWebhook, smtp: SMTPServer
) -> None:
    result = _run(hostile, github, _config(webhook, smtp, mode=ProposeMode.PULL_REQUEST), {})
    assert result.proposals[0].state == "sent", result.proposals[0].message
    (pull,) = github.pulls.values()
    assert_quoted(pull["body"])
    assert "@octocat" not in pull["title"]
