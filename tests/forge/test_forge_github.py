"""Tests for :mod:`govern.forge.github` against a fake GitHub on 127.0.0.1
(tests/fakes/forge_github.py, which cites the REST documentation each endpoint follows:
https://docs.github.com/en/rest/pulls/pulls, https://docs.github.com/en/rest/issues,
https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
import pytest

from fakes.api import Reply, json_reply
from fakes.forge_github import FakeGitHubForge, message
from fakes.sleeps import Sleeps, run
from govern.errors import ForgeAuthError, ForgeError, ForgeRateLimited, ForgeUnavailable
from govern.forge.base import ChangeState, IssueRef, Opening, Seal, split_reviewers
from govern.forge.github import GitHubForge

TOKEN = "ghp_" + "forge-secret-0123456789"
T = TypeVar("T")

marker = Seal(b"forge-tests").marker  # markers signed as a store signs them


@pytest.fixture
def fake() -> Iterator[FakeGitHubForge]:
    """A started fake with two items a page; stopped after the test."""
    with FakeGitHubForge(token=TOKEN, page_size=2) as server:
        yield server


def using(
    fake: FakeGitHubForge,
    body: Callable[[GitHubForge], Awaitable[T]],
    *,
    token: str | None = TOKEN,
    sleeps: Sleeps | None = None,
) -> T:
    """Run ``body`` on a forge talking to ``fake``."""

    async def main() -> T:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitHubForge(
                fake.repository,
                client,
                api_url=fake.url,
                token=token,
                sleep=sleeps or Sleeps(),
            )
            return await body(forge)

    return run(main())


def opening(key: str = "req-1", **changes: Any) -> Opening:
    fields: dict[str, Any] = {
        "branch": f"govern/{key}",
        "base": "main",
        "title": f"Relax {key}",
        "body": f"Widen the pin.\n\n{marker('proposal', key)}",
    }
    fields.update(changes)
    return Opening(**fields)


# -- change requests ------------------------------------------------------------------------


def test_open_sends_the_pull_and_label_change_its_labels_reviewers_and_assignees(
    fake: FakeGitHubForge,
) -> None:
    wanted = opening(
        labels=("dependencies", "govern"),
        reviewers=("@alice", "@octo-org/platform", "bob"),
        team_reviewers=("infra",),
        assignees=("@carol",),
        draft=True,
    )
    change = using(fake, lambda f: f.open_change(wanted))
    assert change.state is ChangeState.OPEN
    assert (change.branch, change.base, change.draft) == ("govern/req-1", "main", True)
    assert fake.pulls[change.number]["labels"] == []  # a delivery step of its own:
    using(fake, lambda f: f.label_change(change.number, wanted))
    created = fake.sent("POST", "/pulls")[0].json()
    assert created == {
        "title": "Relax req-1",
        "head": "govern/req-1",
        "base": "main",
        "body": wanted.body,
        "draft": True,
    }
    pull = fake.pulls[change.number]
    assert [label["name"] for label in pull["labels"]] == ["dependencies", "govern"]
    assert [r["login"] for r in pull["requested_reviewers"]] == ["alice", "bob"]
    assert [t["slug"] for t in pull["requested_teams"]] == ["platform", "infra"]
    assert [a["login"] for a in pull["assignees"]] == ["carol"]
    assert fake.sent("POST")[0].headers["x-github-api-version"] == "2022-11-28"


def test_open_without_extras_sends_only_the_pull(fake: FakeGitHubForge) -> None:
    using(fake, lambda f: f.open_change(opening()))
    assert [r.path for r in fake.sent("POST")] == [f"/repos/{fake.repository}/pulls"]


def test_split_reviewers_tells_teams_from_users() -> None:
    assert split_reviewers(["@org/team-a", "@user", "other", "@"]) == (
        ["user", "other"],
        ["team-a"],
    )


def test_find_change_pages_through_and_matches_branch_and_marker(fake: FakeGitHubForge) -> None:
    wanted = marker("proposal", "req-9")
    for _ in range(3):
        fake.add_pull("govern/req-9", "no marker here")
    fake.add_pull("govern/other", str(wanted))
    older = fake.add_pull("govern/req-9", str(wanted), state="closed")
    for _ in range(3):
        fake.add_pull("govern/req-9", "still none")
    found = using(fake, lambda f: f.find_change(branch="govern/req-9", marker=wanted))
    assert found is not None
    assert (found.number, found.state) == (older, ChangeState.CLOSED)
    listings = fake.sent("GET", "/pulls")
    assert len(listings) == 4  # 7 pulls of the branch, 2 a page
    first = listings[0].query
    assert first["head"] == [f"{fake.owner}:govern/req-9"]
    assert first["state"] == ["all"]
    assert (
        using(
            fake,
            lambda f: f.find_change(branch="govern/req-9", marker=marker("proposal", "req-10")),
        )
        is None
    )


def test_get_update_and_close(fake: FakeGitHubForge) -> None:
    number = fake.add_pull("govern/a", "body")

    async def body(forge: GitHubForge) -> tuple[Any, ...]:
        updated = await forge.update_change(number, title="New title", body="New body")
        closed = await forge.close_change(number, comment="Superseded.")
        return updated, closed

    updated, closed = using(fake, body)
    assert (updated.title, updated.body) == ("New title", "New body")
    assert closed.state is ChangeState.CLOSED
    assert fake.comments[number][0]["body"] == "Superseded."
    methods = [(r.method, r.path.rsplit("/", 2)[-2:]) for r in fake.sent() if r.method != "GET"]
    assert methods[-2:] == [("POST", [str(number), "comments"]), ("PATCH", ["pulls", str(number)])]
    fake.merge(number)
    assert using(fake, lambda f: f.get_change(number)).state is ChangeState.MERGED


def test_a_close_retried_after_it_failed_comments_once(fake: FakeGitHubForge) -> None:
    number = fake.add_pull("govern/a", "body")
    comment = f"Superseded.\n{marker('superseded', 'a')}"
    fake.fail(message(502, "Bad Gateway"), method="PATCH", path=f"/pulls/{number}", times=3)
    with pytest.raises(ForgeUnavailable):
        using(fake, lambda f: f.close_change(number, comment=comment))
    assert fake.pulls[number]["state"] == "open"
    closed = using(fake, lambda f: f.close_change(number, comment=comment))  # the retry
    assert closed.state is ChangeState.CLOSED
    assert [c["body"] for c in fake.comments[number]] == [comment]
    assert len(fake.sent("POST", f"/issues/{number}/comments")) == 1
    assert len(fake.sent("PATCH", f"/pulls/{number}")) == 4


def test_default_branch(fake: FakeGitHubForge) -> None:
    fake.default_branch = "trunk"
    assert using(fake, lambda f: f.default_branch()) == "trunk"


def test_a_lost_answer_to_a_create_is_found_by_its_marker(fake: FakeGitHubForge) -> None:
    applied: list[str] = []

    def lose(kind: str, document: dict[str, Any]) -> Reply | None:
        applied.append(kind)
        return message(502, "Server Error")

    fake.on_create = lose
    change = using(fake, lambda f: f.open_change(opening("req-3")))
    assert applied == ["pull"]
    assert len(fake.sent("POST", "/pulls")) == 1  # never sent twice
    assert change.number in fake.pulls
    assert fake.sent("GET", "/pulls")[0].query["head"] == [f"{fake.owner}:govern/req-3"]


def test_a_lost_answer_without_the_thing_created_is_raised(fake: FakeGitHubForge) -> None:
    fake.fail(message(502, "Server Error"), method="POST", path="/pulls")
    with pytest.raises(ForgeUnavailable):
        using(fake, lambda f: f.open_change(opening()))
    assert len(fake.sent("POST", "/pulls")) == 1
    assert fake.pulls == {}


def test_a_refused_create_is_not_looked_for(fake: FakeGitHubForge) -> None:
    fake.fail(message(422, "Validation Failed"), method="POST", path="/pulls")
    with pytest.raises(ForgeError, match="HTTP 422: Validation Failed") as caught:
        using(fake, lambda f: f.open_change(opening()))
    assert caught.value.status == 422
    assert fake.sent("GET") == []


# A call, the request whose answer is replaced (method, end of path) and the call itself,
# on a pull request and an issue that exist.
Unreadable = tuple[str, str, Callable[[GitHubForge, int, int], Awaitable[Any]]]
READERS: dict[str, Unreadable] = {
    "open_issue": (
        "POST",
        "/issues",
        lambda f, pull, issue: f.open_issue(title="t", body=str(marker("pending", "r"))),
    ),
    "update_issue": (
        "PATCH",
        "/issues/{issue}",
        lambda f, pull, issue: f.update_issue(issue, title="t", body="b"),
    ),
    "open_change": ("POST", "/pulls", lambda f, pull, issue: f.open_change(opening())),
    "get_change": ("GET", "/pulls/{pull}", lambda f, pull, issue: f.get_change(pull)),
    "comment": (
        "POST",
        "/issues/{pull}/comments",
        lambda f, pull, issue: f.comment(IssueRef(f.repository, pull), "hi"),
    ),
}


@pytest.mark.parametrize(
    ("answer", "got"),
    [(Reply(201, b""), "an empty body"), (json_reply(201, [{"number": 1}]), "a list")],
    ids=["empty", "list"],
)
@pytest.mark.parametrize("call", list(READERS))
def test_an_answer_that_is_not_an_object_is_unavailable(
    fake: FakeGitHubForge, call: str, answer: Reply, got: str
) -> None:
    pull = fake.add_pull("govern/a", "body")
    issue = fake.add_issue("Pending", "list")
    method, path, body = READERS[call]
    fake.fail(answer, method=method, path=path.format(pull=pull, issue=issue))
    with pytest.raises(ForgeUnavailable, match=f"github: unexpected answer: .* got {got}"):
        using(fake, lambda f: body(f, pull, issue))
    assert len(fake.sent(method, path.format(pull=pull, issue=issue))) == 1


# -- comments and issues --------------------------------------------------------------------


def test_comments_are_found_by_marker_across_pages(fake: FakeGitHubForge) -> None:
    number = fake.add_pull("govern/a", "body")
    ref = IssueRef(fake.repository, number)
    wanted = f"Still pending.\n{marker('reminder', 'a-1')}"

    async def body(forge: GitHubForge) -> tuple[Any, ...]:
        for i in range(4):
            await forge.comment(ref, f"chatter {i}")
        made = await forge.comment(ref, wanted)
        return made, await forge.find_comment(ref, marker("reminder", "a-1"))

    made, found = using(fake, body)
    assert found == made
    assert found is not None
    assert found.body == wanted
    assert len(fake.sent("GET", f"/issues/{number}/comments")) == 3
    assert using(fake, lambda f: f.find_comment(ref, marker("reminder", "b"))) is None


def test_a_next_page_on_another_host_is_not_followed_and_gets_no_token(
    fake: FakeGitHubForge,
) -> None:
    """A listing's ``Link: rel="next"`` is the server's text: one that points off the API's
    own root (another port of 127.0.0.1 here) ends the listing; the token never goes there."""
    number = fake.add_pull("govern/a", "body")
    ref = IssueRef(fake.repository, number)
    with FakeGitHubForge(token=TOKEN) as elsewhere:
        link = f"<{elsewhere.url}/repos/{fake.repository}/issues/{number}/comments?page=2>"
        fake.fail(json_reply(200, [], {"Link": f'{link}; rel="next"'}), method="GET")
        found = using(fake, lambda f: f.find_comment(ref, marker("reminder", "a-1")))
        assert elsewhere.sent() == []
    assert found is None
    assert len(fake.sent("GET", f"/issues/{number}/comments")) == 1


def test_only_a_signed_marker_that_ends_a_comment_is_found(fake: FakeGitHubForge) -> None:
    """A person's comment quoting the marker mid-text, one ending with its unsigned form,
    or one signed by another store is not govern's comment; govern's own is."""
    number = fake.add_pull("govern/a", "body")
    ref = IssueRef(fake.repository, number)
    mark = marker("reminder", "k")
    other = Seal(b"another store").marker("reminder", "k")

    async def body(forge: GitHubForge) -> tuple[Any, ...]:
        await forge.comment(ref, f"{mark}\nquoted above, then my words")
        await forge.comment(ref, f"hi\n\n{mark.unsigned}")
        await forge.comment(ref, f"hi\n\n{other}")
        before = await forge.find_comment(ref, mark)
        made = await forge.comment(ref, f"hi\n\n{mark}\n\n")
        return before, made, await forge.find_comment(ref, mark)

    before, made, found = using(fake, body)
    assert before is None
    assert found == made


def test_a_change_request_from_before_signing_is_found_by_its_unsigned_marker(
    fake: FakeGitHubForge,
) -> None:
    """On govern's own branch, a body that ends with the unsigned marker govern wrote before
    markers were signed is found; the same marker in the middle of a body is not."""
    mark = marker("proposal", "p")
    fake.add_pull("govern/p", f"text\n\n{mark.unsigned}\nlater words")
    assert using(fake, lambda f: f.find_change(branch="govern/p", marker=mark)) is None
    number = fake.add_pull("govern/p", f"text\n\n{mark.unsigned}\n")
    found = using(fake, lambda f: f.find_change(branch="govern/p", marker=mark))
    assert found is not None
    assert found.number == number


def test_a_lost_comment_answer_is_found_by_marker(fake: FakeGitHubForge) -> None:
    number = fake.add_pull("govern/a", "body")
    fake.on_create = lambda kind, document: message(503, "Unavailable")
    ref = IssueRef(fake.repository, number)
    made = using(fake, lambda f: f.comment(ref, f"hi\n\n{marker('reminder', 'k')}"))
    assert len(fake.comments[number]) == 1
    assert made.id == fake.comments[number][0]["id"]


def test_issues_open_find_and_update_reopening(fake: FakeGitHubForge) -> None:
    mark = marker("pending", "repo")
    fake.add_pull("govern/a", str(mark))  # a pull request with the marker is not the issue

    async def body(forge: GitHubForge) -> tuple[Any, ...]:
        opened = await forge.open_issue(title="Pending", body=f"list\n{mark}", labels=["govern"])
        for i in range(3):
            await forge.open_issue(title=f"other {i}", body="x")
        return opened, await forge.find_issue(mark)

    opened, found = using(fake, body)
    assert found == opened
    assert opened.labels == ("govern",)
    fake.issues[opened.number]["state"] = "closed"
    updated = using(fake, lambda f: f.update_issue(opened.number, title="Pending 2", body="b"))
    assert (updated.state, updated.title) == ("open", "Pending 2")
    assert fake.sent("GET", "/issues")[0].query["state"] == ["all"]
    assert using(fake, lambda f: f.find_issue(marker("pending", "none"))) is None


def test_a_lost_issue_answer_is_found_by_marker(fake: FakeGitHubForge) -> None:
    fake.on_create = lambda kind, document: message(500, "boom")
    made = using(fake, lambda f: f.open_issue(title="t", body=str(marker("pending", "r"))))
    assert list(fake.issues) == [made.number]


# -- errors: auth, rate limits, outages ------------------------------------------------------


def test_a_refused_token_is_an_auth_error_without_the_token(fake: FakeGitHubForge) -> None:
    wrong = "ghp_" + "wrong-token-987654321"
    with pytest.raises(ForgeAuthError) as caught:
        using(fake, lambda f: f.get_change(1), token=wrong)
    text = f"{caught.value} {caught.value.tip}"
    assert "$GITHUB_TOKEN" in text
    assert wrong not in text
    assert TOKEN not in text
    assert caught.value.status == 401
    assert fake.sent()[0].headers["authorization"] == f"Bearer {wrong}"


def test_no_token_sends_no_authorization(fake: FakeGitHubForge) -> None:
    with pytest.raises(ForgeAuthError):
        using(fake, lambda f: f.default_branch(), token=None)
    assert "authorization" not in fake.sent()[0].headers


def test_5xx_on_a_get_is_retried(fake: FakeGitHubForge) -> None:
    number = fake.add_pull("govern/a", "b")
    fake.fail(message(502, "Bad Gateway"), method="GET", times=2)
    sleeps = Sleeps()
    assert using(fake, lambda f: f.get_change(number), sleeps=sleeps).number == number
    assert len(fake.sent("GET")) == 3
    assert len(sleeps.delays) == 2


def test_a_short_primary_rate_limit_is_slept_through(fake: FakeGitHubForge) -> None:
    number = fake.add_pull("govern/a", "b")
    reset = str(int(time.time()) + 3)
    fake.fail(
        message(403, "API rate limit exceeded", x_ratelimit_remaining="0", x_ratelimit_reset=reset)
    )
    sleeps = Sleeps()
    assert using(fake, lambda f: f.get_change(number), sleeps=sleeps).number == number
    assert len(sleeps.delays) == 1
    assert 0 < sleeps.delays[0] <= 4


def test_a_long_primary_rate_limit_is_raised_with_its_reset(fake: FakeGitHubForge) -> None:
    reset = int(time.time()) + 1800
    fake.fail(
        message(
            403, "API rate limit exceeded", x_ratelimit_remaining="0", x_ratelimit_reset=str(reset)
        )
    )
    with pytest.raises(ForgeRateLimited) as caught:
        using(fake, lambda f: f.get_change(1))
    assert caught.value.until == datetime.fromtimestamp(reset, UTC)
    assert len(fake.sent()) == 1


def test_a_secondary_rate_limit_with_retry_after_is_slept_through(fake: FakeGitHubForge) -> None:
    number = fake.add_pull("govern/a", "b")
    fake.fail(message(429, "You have exceeded a secondary rate limit.", retry_after="5"))
    sleeps = Sleeps()
    assert using(fake, lambda f: f.get_change(number), sleeps=sleeps).number == number
    assert sleeps.delays == [pytest.approx(5.0, abs=0.5)]


def test_a_secondary_rate_limit_without_headers_waits_at_least_a_minute(
    fake: FakeGitHubForge,
) -> None:
    fake.fail(message(403, "You have exceeded a secondary rate limit. Please wait."))
    before = datetime.now(UTC)
    with pytest.raises(ForgeRateLimited) as caught:
        using(fake, lambda f: f.get_change(1))
    until = caught.value.until
    assert until is not None
    assert (until - before).total_seconds() >= 60
    assert len(fake.sent()) == 1


def test_secondary_limits_in_a_row_wait_longer(fake: FakeGitHubForge) -> None:
    fake.fail(message(403, "secondary rate limit"), times=2)

    async def body(forge: GitHubForge) -> list[float]:
        waits = []
        for _ in range(2):
            before = datetime.now(UTC)
            with pytest.raises(ForgeRateLimited) as caught:
                await forge.get_change(1)
            assert caught.value.until is not None
            waits.append((caught.value.until - before).total_seconds())
        return waits

    first, second = using(fake, body)
    assert first >= 60
    assert second >= 120


def test_another_403_is_an_auth_error(fake: FakeGitHubForge) -> None:
    fake.fail(message(403, "Resource not accessible by integration"))
    with pytest.raises(ForgeAuthError, match="not accessible"):
        using(fake, lambda f: f.get_change(1))


def test_a_repository_must_be_owner_slash_repo() -> None:
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            GitHubForge("just-a-name", client)

    with pytest.raises(ForgeError, match="owner/repo"):
        run(main())
