"""The issue channel: which link is the issue, and the comment through the GitHub forge
(tests/fakes/forge_github.py, after https://docs.github.com/en/rest/issues/comments)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import httpx
import pytest
from reminderworld import TOKEN

from fakes.forge_github import FakeGitHubForge
from govern.errors import NotifyAuthError, NotifyError
from govern.forge.base import IssueRef, Seal
from govern.forge.github import GitHubForge
from govern.notify.base import Message, Searchable, Skipped
from govern.notify.issue import IssueNotifier, linked_issue

T = TypeVar("T")
OWN = "vllm-project/vllm"

SEAL = Seal(b"issue-tests")  # markers signed as a store signs them


@pytest.mark.parametrize(
    ("link", "host", "issue"),
    [
        ("https://github.com/vllm-project/vllm/issues/123", "github.com", (OWN, 123)),
        ("https://GitHub.com/vllm-project/vllm/issues/7/", "github.com", (OWN, 7)),
        (
            "https://github.com/cupy/cupy/issues/9963#issuecomment-1",
            "github.com",
            ("cupy/cupy", 9963),
        ),
        (
            "https://gitlab.example/group/sub/project/-/issues/5",
            "gitlab.example",
            ("group/sub/project", 5),
        ),
        ("#42", "github.com", (OWN, 42)),
        ("https://github.com/vllm-project/vllm/pull/9", "github.com", None),
        ("https://gitlab.example/group/project/-/issues/5", "github.com", None),
        ("https://github.com/vllm-project/vllm/issues/x", "github.com", None),
        ("GHSA-93xj-8mrv-444m", "github.com", None),
        ("ftp://github.com/vllm-project/vllm/issues/1", "github.com", None),
    ],
)
def test_an_issue_link_is_read_for_the_forges_host(
    link: str, host: str, issue: tuple[str, int] | None
) -> None:
    expected = IssueRef(*issue) if issue is not None else None
    assert linked_issue(link, host=host, repository=OWN) == expected


def message(*links: str) -> Message:
    return Message(
        key="remind:0123456789abcdef:14.1.1:issue",
        kind="reminder",
        subject="s",
        text="t",
        markdown="**14.1.1** passed.",
        links=links,
        marker=SEAL.marker("reminder", "remind:0123456789abcdef:14.1.1:issue"),
    )


def using(fake: FakeGitHubForge, body: Callable[[IssueNotifier], Awaitable[T]], **kw: str) -> T:
    async def main() -> T:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitHubForge(
                fake.repository, client, api_url=fake.url, token=kw.get("token", TOKEN)
            )
            return await body(IssueNotifier(forge, host="github.com"))

    return asyncio.run(main())


def test_the_comment_goes_to_the_first_issue_of_this_namespace_with_its_marker(
    github: FakeGitHubForge,
) -> None:
    wanted = message(
        "https://github.com/cupy/cupy/issues/9963",  # upstream's: not ours to post on
        "https://github.com/vllm-project/vllm/issues/1",
        "https://github.com/vllm-project/vllm/issues/2",
    )

    async def send_then_find(notifier: IssueNotifier) -> tuple[object, ...]:
        assert isinstance(notifier, Searchable)
        before = await notifier.find(wanted)
        sent = await notifier.send(wanted)
        return notifier.target(wanted), before, sent, await notifier.find(wanted)

    target, before, sent, found = using(github, send_then_find)
    (comment,) = github.comments[1]
    assert target == "vllm-project/vllm#1"
    assert before is None
    assert sent == {"issue": "vllm-project/vllm#1", "id": comment["id"], "url": comment["html_url"]}
    assert found == {**sent, "found": True}
    assert comment["body"] == (f"**14.1.1** passed.\n\n{SEAL.marker('reminder', wanted.key)}\n")


def test_links_elsewhere_or_no_forge_are_skipped_with_the_reason(github: FakeGitHubForge) -> None:
    upstream = message(
        "https://github.com/cupy/cupy/issues/9963", "https://gitlab.com/a/b/-/issues/1"
    )
    assert using(github, lambda n: _target(n, upstream)) == Skipped(
        "no linked issue under vllm-project/ on github.com"
    )
    alone = IssueNotifier(None, host="github.com", why_not='via = "git" has no forge')
    assert alone.target(upstream) == Skipped('via = "git" has no forge')
    with pytest.raises(NotifyError) as caught:
        asyncio.run(alone.send(upstream))
    assert caught.value.message == 'issue comment: via = "git" has no forge'


async def _target(notifier: IssueNotifier, wanted: Message) -> str | Skipped:
    return notifier.target(wanted)


def test_a_refused_token_is_the_notifiers_auth_error(github: FakeGitHubForge) -> None:
    wanted = message("#1")
    with pytest.raises(NotifyAuthError) as caught:
        using(github, lambda n: n.send(wanted), token="ghp_wrong")
    assert caught.value.message.startswith("issue comment: ")
    assert "ghp_wrong" not in caught.value.message
    assert github.comments.get(1, []) == []
