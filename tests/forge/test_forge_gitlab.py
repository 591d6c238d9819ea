"""Tests for :mod:`govern.forge.gitlab` (and its branch of :func:`govern.forge.remote.forge_for`)
against a fake GitLab on 127.0.0.1 (tests/fakes/forge_gitlab.py, which cites the
documentation each endpoint follows: https://docs.gitlab.com/ee/api/merge_requests.html,
https://docs.gitlab.com/ee/api/notes.html, https://docs.gitlab.com/ee/api/issues.html,
https://docs.gitlab.com/ee/api/users.html,
https://docs.gitlab.com/ee/api/rest/index.html#pagination,
https://docs.gitlab.com/ee/user/gitlab_com/index.html#gitlabcom-specific-rate-limits).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

import httpx
import pytest

from fakes.api import Reply, json_reply
from fakes.forge_gitlab import LOST, FakeGitLabForge, message, rate_limited
from fakes.sleeps import Sleeps, run
from govern.config import ProposeConfig
from govern.errors import ForgeAuthError, ForgeError, ForgeRateLimited, ForgeUnavailable
from govern.exclusions.states import Via
from govern.forge.base import ChangeState, IssueRef, Opening, Seal
from govern.forge.gitlab import GitLabForge
from govern.forge.remote import forge_for
from govern.http.gitlab import BEARER, PRIVATE

TOKEN = "glpat-" + "forge-secret-0123456789"
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
T = TypeVar("T")

marker = Seal(b"forge-tests").marker  # markers signed as a store signs them


@pytest.fixture
def fake() -> Iterator[FakeGitLabForge]:
    """A started fake of project acme/platform/app with two items a page."""
    with FakeGitLabForge(token=TOKEN, page_size=2) as server:
        yield server


def using(
    fake: FakeGitLabForge,
    body: Callable[[GitLabForge], Awaitable[T]],
    *,
    token: str | None = TOKEN,
    token_kind: str = PRIVATE,
    project: str | None = None,
    sleeps: Sleeps | None = None,
) -> T:
    """Run ``body`` on a forge talking to ``fake`` (its clock stands at NOW)."""

    async def main() -> T:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = GitLabForge(
                project or fake.project_path,
                client,
                api_url=fake.url,
                token=token,
                token_kind=token_kind,
                sleep=sleeps or Sleeps(),
                clock=lambda: NOW,
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


def project_path(fake: FakeGitLabForge, rest: str = "") -> str:
    """The raw request path of a project endpoint (``:id`` URL-encoded)."""
    return f"/api/v4/projects/acme%2Fplatform%2Fapp{rest}"


# -- merge requests -------------------------------------------------------------------------


def test_a_merge_request_is_found_by_branch_and_marker_across_pages(
    fake: FakeGitLabForge,
) -> None:
    wanted = marker("proposal", "req-9")
    for _ in range(3):
        fake.add_merge_request("govern/req-9", "no marker here", state="closed")
    fake.add_merge_request("govern/other", str(wanted))
    older = fake.add_merge_request("govern/req-9", str(wanted), state="closed")
    newer = fake.add_merge_request("govern/req-9", f"again\n{wanted}", state="merged")
    for _ in range(2):
        fake.add_merge_request("govern/req-9", "still none", state="closed")
    found = using(fake, lambda f: f.find_change(branch="govern/req-9", marker=wanted))
    assert found is not None
    assert (found.number, found.state, found.branch, found.base) == (
        newer,
        ChangeState.MERGED,
        "govern/req-9",
        "main",
    )
    assert older == newer - 1
    listings = fake.sent("GET", "/merge_requests")
    assert len(listings) == 4  # 7 merge requests from the branch, 2 a page
    assert listings[0].query == {
        "source_branch": ["govern/req-9"],
        "state": ["all"],
        "per_page": ["100"],
    }
    assert [r.query.get("page") for r in listings] == [None, ["2"], ["3"], ["4"]]
    assert (
        using(
            fake,
            lambda f: f.find_change(branch="govern/req-9", marker=marker("proposal", "req-10")),
        )
        is None
    )


def test_a_merge_request_is_opened_once_with_labels_reviewers_assignees_and_draft(
    fake: FakeGitLabForge,
) -> None:
    wanted = opening(
        labels=("dependencies", "govern"),
        reviewers=("@alice", "bob"),
        assignees=("@carol",),
        draft=True,
    )
    change = using(fake, lambda f: f.open_change(wanted))
    assert (change.number, change.state, change.draft) == (1, ChangeState.OPEN, True)
    assert (change.title, change.body) == ("Relax req-1", wanted.body)
    assert (change.branch, change.base) == ("govern/req-1", "main")
    assert change.url == f"{fake.base}/acme/platform/app/-/merge_requests/1"
    assert change.head_sha == f"{1:040x}"
    posts = fake.sent("POST")
    assert [r.path for r in posts] == [project_path(fake, "/merge_requests")]
    assert posts[0].json() == {
        "source_branch": "govern/req-1",
        "target_branch": "main",
        "title": "Draft: Relax req-1",
        "description": wanted.body,
        "labels": "dependencies,govern",
        "reviewer_ids": [11, 12],
        "assignee_ids": [13],
    }
    assert [r.query["username"] for r in fake.sent("GET", "/users")] == [
        ["alice"],
        ["bob"],
        ["carol"],
    ]
    made = fake.merge_requests[1]
    assert made["labels"] == ["dependencies", "govern"]
    assert [u["username"] for u in made["reviewers"]] == ["alice", "bob"]
    assert [u["username"] for u in made["assignees"]] == ["carol"]
    assert made["draft"] is True
    assert fake.created == ["merge_request"]


def test_unknown_users_and_groups_are_skipped_with_nothing_sent_for_them(
    fake: FakeGitLabForge,
) -> None:
    wanted = opening(
        reviewers=("@nobody", "@acme/platform"),
        team_reviewers=("infra",),
        assignees=("ghost",),
    )
    change = using(fake, lambda f: f.open_change(wanted))
    assert change.draft is False
    assert fake.sent("POST")[0].json() == {
        "source_branch": "govern/req-1",
        "target_branch": "main",
        "title": "Relax req-1",
        "description": wanted.body,
    }
    assert [r.query["username"] for r in fake.sent("GET", "/users")] == [["nobody"], ["ghost"]]


@pytest.mark.parametrize(
    "lost", [LOST, message(502, "502 Bad Gateway")], ids=["connection-dropped", "502"]
)
def test_after_a_lost_answer_the_merge_request_is_found_by_its_marker_not_created_twice(
    fake: FakeGitLabForge, lost: Reply
) -> None:
    fake.on_create = lambda kind, document: lost
    sleeps = Sleeps()
    change = using(fake, lambda f: f.open_change(opening("req-3")), sleeps=sleeps)
    assert fake.created == ["merge_request"]  # applied once
    assert len(fake.sent("POST", "/merge_requests")) == 1  # sent once
    assert change.number == 1
    assert change.url == fake.merge_requests[1]["web_url"]
    assert fake.sent("GET", "/merge_requests")[0].query["source_branch"] == ["govern/req-3"]
    assert sleeps.delays == []


@pytest.mark.parametrize(
    ("fault", "reason", "status"),
    [
        (message(503, "503 Service Unavailable"), "HTTP 503", 503),
        (LOST, "connection failed (RemoteProtocolError)", None),
    ],
    ids=["503", "connection-dropped"],
)
def test_a_lost_answer_without_the_merge_request_is_raised(
    fake: FakeGitLabForge, fault: Reply, reason: str, status: int | None
) -> None:
    fake.fail(fault, method="POST", path="/merge_requests")
    with pytest.raises(ForgeUnavailable) as caught:
        using(fake, lambda f: f.open_change(opening()))
    assert str(caught.value).endswith(f"/merge_requests: {reason} after 1 attempt")
    assert caught.value.status == status
    assert len(fake.sent("POST", "/merge_requests")) == 1
    assert len(fake.sent("GET", "/merge_requests")) == 1  # looked for, not found
    assert fake.merge_requests == {}


def test_a_refused_create_is_not_looked_for(fake: FakeGitLabForge) -> None:
    fake.add_merge_request("govern/req-1", "opened by a person")
    # GitLab's 409 carries its message as a list, which ApiClient does not show
    with pytest.raises(ForgeError, match=r"merge_requests: HTTP 409$") as caught:
        using(fake, lambda f: f.open_change(opening()))
    assert caught.value.status == 409
    assert fake.sent("GET", "/merge_requests") == []
    assert fake.created == []


def test_a_merge_request_is_updated_and_a_draft_stays_a_draft(fake: FakeGitLabForge) -> None:
    plain = fake.add_merge_request("govern/a", "body")
    draft = using(fake, lambda f: f.open_change(opening("b", draft=True))).number

    async def body(forge: GitLabForge) -> tuple[Any, ...]:
        one = await forge.update_change(plain, title="New title", body="New body")
        two = await forge.update_change(draft, title="Relax b again", body="Newer body")
        return one, two

    one, two = using(fake, body)
    assert (one.number, one.title, one.body, one.draft) == (plain, "New title", "New body", False)
    assert (two.number, two.title, two.body, two.draft) == (
        draft,
        "Relax b again",
        "Newer body",
        True,
    )
    puts = fake.sent("PUT")
    assert [r.path for r in puts] == [
        project_path(fake, f"/merge_requests/{plain}"),
        project_path(fake, f"/merge_requests/{draft}"),
    ]
    assert puts[0].json() == {"title": "New title", "description": "New body"}
    assert puts[1].json() == {"title": "Draft: Relax b again", "description": "Newer body"}
    assert fake.merge_requests[draft]["title"] == "Draft: Relax b again"


def test_a_merge_request_is_closed_with_a_note(fake: FakeGitLabForge) -> None:
    iid = fake.add_merge_request("govern/a", "body")
    closed = using(fake, lambda f: f.close_change(iid, comment="Superseded."))
    assert closed.state is ChangeState.CLOSED
    writes = [(r.method, r.path) for r in fake.sent() if r.method != "GET"]
    assert writes == [
        ("POST", project_path(fake, f"/merge_requests/{iid}/notes")),
        ("PUT", project_path(fake, f"/merge_requests/{iid}")),
    ]
    assert fake.sent("POST")[0].json() == {"body": "Superseded."}
    assert fake.sent("PUT")[0].json() == {"state_event": "close"}
    notes = fake.notes[("merge_requests", iid)]
    assert [(n["body"], n["system"]) for n in notes] == [("Superseded.", False), ("closed", True)]


def test_a_close_retried_after_it_failed_notes_once(fake: FakeGitLabForge) -> None:
    iid = fake.add_merge_request("govern/a", "body")
    comment = f"Superseded.\n{marker('superseded', 'a')}"
    fake.fail(message(502, "502 Bad Gateway"), method="PUT", path=f"/merge_requests/{iid}", times=3)
    with pytest.raises(ForgeUnavailable):
        using(fake, lambda f: f.close_change(iid, comment=comment))
    assert fake.merge_requests[iid]["state"] == "opened"
    closed = using(fake, lambda f: f.close_change(iid, comment=comment))  # the retry
    assert closed.state is ChangeState.CLOSED
    notes = fake.notes[("merge_requests", iid)]
    assert [(n["body"], n["system"]) for n in notes] == [(comment, False), ("closed", True)]
    assert len(fake.sent("POST", f"/merge_requests/{iid}/notes")) == 1
    assert len(fake.sent("PUT", f"/merge_requests/{iid}")) == 4


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("opened", ChangeState.OPEN),
        ("locked", ChangeState.OPEN),
        ("closed", ChangeState.CLOSED),
        ("merged", ChangeState.MERGED),
    ],
)
def test_merge_request_states_are_mapped(
    fake: FakeGitLabForge, state: str, expected: ChangeState
) -> None:
    iid = fake.add_merge_request("govern/a", "body", state=state)
    assert using(fake, lambda f: f.get_change(iid)).state is expected


def test_a_merge_done_by_a_person_is_seen(fake: FakeGitLabForge) -> None:
    iid = fake.add_merge_request("govern/a", "body")
    assert using(fake, lambda f: f.get_change(iid)).state is ChangeState.OPEN
    fake.merge(iid)
    assert using(fake, lambda f: f.get_change(iid)).state is ChangeState.MERGED


def test_an_unknown_merge_request_state_is_an_unexpected_answer(fake: FakeGitLabForge) -> None:
    iid = fake.add_merge_request("govern/a", "body", state="archived")
    with pytest.raises(ForgeUnavailable, match="unexpected merge request state 'archived'"):
        using(fake, lambda f: f.get_change(iid))


def test_the_default_branch_is_the_projects(fake: FakeGitLabForge) -> None:
    fake.default_branch = "trunk"
    assert using(fake, lambda f: f.default_branch()) == "trunk"
    assert fake.sent("GET")[0].path == project_path(fake)


def test_an_empty_project_has_no_default_branch(fake: FakeGitLabForge) -> None:
    fake.default_branch = None
    with pytest.raises(ForgeError, match="has no default branch") as caught:
        using(fake, lambda f: f.default_branch())
    assert not isinstance(caught.value, ForgeUnavailable)


# A call, the request whose answer is replaced (method, end of path) and the call itself,
# on a merge request and an issue that exist.
Unreadable = tuple[str, str, Callable[[GitLabForge, int, int], Awaitable[Any]]]
READERS: dict[str, Unreadable] = {
    "open_issue": (
        "POST",
        "/issues",
        lambda f, mr, issue: f.open_issue(title="t", body=str(marker("pending", "r"))),
    ),
    "update_issue": (
        "PUT",
        "/issues/{issue}",
        lambda f, mr, issue: f.update_issue(issue, title="t", body="b"),
    ),
    "open_change": ("POST", "/merge_requests", lambda f, mr, issue: f.open_change(opening())),
    "get_change": ("GET", "/merge_requests/{mr}", lambda f, mr, issue: f.get_change(mr)),
    "comment": (
        "POST",
        "/issues/{issue}/notes",
        lambda f, mr, issue: f.comment(IssueRef(f.repository, issue), "hi"),
    ),
}


@pytest.mark.parametrize(
    ("answer", "got"),
    [(Reply(201, b""), "an empty body"), (json_reply(201, [{"iid": 1}]), "a list")],
    ids=["empty", "list"],
)
@pytest.mark.parametrize("call", list(READERS))
def test_an_answer_that_is_not_an_object_is_unavailable(
    fake: FakeGitLabForge, call: str, answer: Reply, got: str
) -> None:
    mr = fake.add_merge_request("govern/a", "body")
    issue = fake.add_issue("Pending", "list")
    method, path, body = READERS[call]
    fake.fail(answer, method=method, path=path.format(mr=mr, issue=issue))
    with pytest.raises(ForgeUnavailable, match=f"gitlab: unexpected answer: .* got {got}"):
        using(fake, lambda f: body(f, mr, issue))
    assert len(fake.sent(method, path.format(mr=mr, issue=issue))) == 1


# -- issue notes ----------------------------------------------------------------------------


def test_issue_notes_are_found_by_marker_across_pages_and_added(fake: FakeGitLabForge) -> None:
    fake.add_merge_request("govern/a", "a merge request has iid 1 too")
    issue = fake.add_issue("Pending relaxations", "list")
    ref = IssueRef(fake.project_path, issue)
    wanted = f"Still pending.\n{marker('reminder', 'a-1')}"

    async def body(forge: GitLabForge) -> tuple[Any, ...]:
        for i in range(4):
            await forge.comment(ref, f"chatter {i}")
        made = await forge.comment(ref, wanted)
        return made, await forge.find_comment(ref, marker("reminder", "a-1"))

    made, found = using(fake, body)
    assert found == made
    assert found is not None
    assert found.body == wanted
    assert found.id == fake.notes[("issues", issue)][-1]["id"]
    assert found.url == f"{fake.base}/acme/platform/app/-/issues/{issue}#note_{found.id}"
    listings = fake.sent("GET", f"/issues/{issue}/notes")
    assert len(listings) == 3  # 5 notes, 2 a page
    assert listings[0].query == {"order_by": ["created_at"], "sort": ["asc"], "per_page": ["100"]}
    assert [r.path for r in fake.sent("POST")] == [project_path(fake, f"/issues/{issue}/notes")] * 5
    assert ("merge_requests", 1) not in fake.notes
    assert using(fake, lambda f: f.find_comment(ref, marker("reminder", "b"))) is None


def test_a_system_note_is_never_the_comment(fake: FakeGitLabForge) -> None:
    issue = fake.add_issue("Pending", "list")
    mark = marker("reminder", "s")
    fake.add_note("issues", issue, f"changed the description {mark}", system=True)
    assert using(fake, lambda f: f.find_comment(IssueRef(fake.project_path, issue), mark)) is None


def test_a_lost_note_answer_is_found_by_its_marker(fake: FakeGitLabForge) -> None:
    issue = fake.add_issue("Pending", "list")
    fake.on_create = lambda kind, document: LOST
    ref = IssueRef(fake.project_path, issue)
    made = using(fake, lambda f: f.comment(ref, f"hi\n\n{marker('reminder', 'k')}"))
    assert fake.created == ["note"]
    assert len(fake.notes[("issues", issue)]) == 1
    assert made.id == fake.notes[("issues", issue)][0]["id"]


# -- the pending issue ----------------------------------------------------------------------


def test_the_pending_issue_is_opened_found_and_updated_reopening_it(
    fake: FakeGitLabForge,
) -> None:
    mark = marker("pending", "repo")
    fake.add_merge_request("govern/a", str(mark))  # a merge request with the marker is no issue

    async def body(forge: GitLabForge) -> tuple[Any, ...]:
        opened = await forge.open_issue(title="Pending", body=f"list\n{mark}", labels=["govern"])
        for i in range(3):
            await forge.open_issue(title=f"other {i}", body="x")
        return opened, await forge.find_issue(mark)

    opened, found = using(fake, body)
    assert found == opened
    assert (opened.number, opened.state, opened.labels) == (1, "open", ("govern",))
    assert opened.url == f"{fake.base}/acme/platform/app/-/issues/1"
    assert fake.sent("POST", "/issues")[0].json() == {
        "title": "Pending",
        "description": f"list\n{mark}",
        "labels": "govern",
    }
    assert fake.sent("POST", "/issues")[1].json() == {"title": "other 0", "description": "x"}
    listing = fake.sent("GET", "/issues")
    assert listing[0].query == {
        "state": ["all"],
        "order_by": ["created_at"],
        "sort": ["desc"],
        "per_page": ["100"],
    }
    assert len(listing) == 2  # 4 issues, newest first, 2 a page: found on the second

    fake.issues[opened.number]["state"] = "closed"
    updated = using(fake, lambda f: f.update_issue(opened.number, title="Pending 2", body="b"))
    assert (updated.state, updated.title, updated.body) == ("open", "Pending 2", "b")
    assert fake.sent("PUT")[-1].json() == {
        "title": "Pending 2",
        "description": "b",
        "state_event": "reopen",
    }
    again = using(fake, lambda f: f.update_issue(opened.number, title="Pending 3", body="c"))
    assert again.state == "open"
    assert fake.sent("PUT")[-1].json() == {"title": "Pending 3", "description": "c"}
    assert using(fake, lambda f: f.find_issue(marker("pending", "none"))) is None


def test_a_closed_issue_is_found_and_reported_closed(fake: FakeGitLabForge) -> None:
    mark = marker("pending", "repo")
    issue = fake.add_issue("Pending", str(mark), state="closed")
    found = using(fake, lambda f: f.find_issue(mark))
    assert found is not None
    assert (found.number, found.state) == (issue, "closed")


def test_a_lost_issue_answer_is_found_by_its_marker(fake: FakeGitLabForge) -> None:
    fake.on_create = lambda kind, document: message(500, "500 Internal Server Error")
    made = using(fake, lambda f: f.open_issue(title="t", body=str(marker("pending", "r"))))
    assert fake.created == ["issue"]
    assert list(fake.issues) == [made.number]


# -- pagination -----------------------------------------------------------------------------


def test_listings_follow_the_link_header_when_x_next_page_is_missing(
    fake: FakeGitLabForge,
) -> None:
    fake.hidden_headers = frozenset({"X-Next-Page", "X-Total", "X-Total-Pages"})
    wanted = marker("proposal", "p")
    fake.add_merge_request("govern/p", str(wanted))
    for _ in range(4):
        fake.add_merge_request("govern/p", "none", state="closed")
    found = using(fake, lambda f: f.find_change(branch="govern/p", marker=wanted))
    assert found is not None
    assert found.number == 1
    pages = [r.query.get("page") for r in fake.sent("GET", "/merge_requests")]
    assert pages == [None, ["2"], ["3"]]


def test_a_listing_without_next_page_headers_ends(fake: FakeGitLabForge) -> None:
    fake.hidden_headers = frozenset({"X-Next-Page", "Link"})
    for _ in range(3):
        fake.add_merge_request("govern/p", "none")
    assert (
        using(fake, lambda f: f.find_change(branch="govern/p", marker=marker("proposal", "q")))
        is None
    )
    assert len(fake.sent("GET", "/merge_requests")) == 1


# -- errors: auth, rate limits, outages ------------------------------------------------------


def test_a_429_with_retry_after_is_slept_through(fake: FakeGitLabForge) -> None:
    iid = fake.add_merge_request("govern/a", "b")
    reset = int((NOW + timedelta(seconds=60)).timestamp())
    fake.fail(rate_limited(retry_after=3, reset_at=reset), method="GET")
    sleeps = Sleeps()
    assert using(fake, lambda f: f.get_change(iid), sleeps=sleeps).number == iid
    assert sleeps.delays == [3.0]  # Retry-After wins over RateLimit-Reset
    assert len(fake.sent("GET")) == 2


def test_a_long_rate_limit_is_raised_with_its_reset(fake: FakeGitLabForge) -> None:
    reset = int((NOW + timedelta(minutes=30)).timestamp())
    fake.fail(rate_limited(retry_after=1800, reset_at=reset))
    sleeps = Sleeps()
    with pytest.raises(ForgeRateLimited) as caught:
        using(fake, lambda f: f.get_change(1), sleeps=sleeps)
    assert caught.value.until == NOW + timedelta(minutes=30)
    assert caught.value.status == 429
    assert sleeps.delays == []
    assert len(fake.sent()) == 1


def test_a_403_with_ratelimit_remaining_zero_is_a_rate_limit(fake: FakeGitLabForge) -> None:
    reset = int((NOW + timedelta(minutes=5)).timestamp())
    fake.fail(message(403, "403 Forbidden", ratelimit_remaining="0", ratelimit_reset=str(reset)))
    with pytest.raises(ForgeRateLimited) as caught:
        using(fake, lambda f: f.get_change(1))
    assert caught.value.until == NOW + timedelta(minutes=5)


def test_a_refused_token_is_an_auth_error_without_the_token(fake: FakeGitLabForge) -> None:
    wrong = "glpat-" + "wrong-token-987654321"
    with pytest.raises(ForgeAuthError) as caught:
        using(fake, lambda f: f.get_change(1), token=wrong)
    error = caught.value
    assert error.status == 401
    assert str(error) == "gitlab refused the token from $GITLAB_TOKEN (HTTP 401: 401 Unauthorized)"
    assert error.tip == (
        "check that $GITLAB_TOKEN holds a valid, unexpired token;"
        " govern needs a GitLab access token with the api scope"
    )
    text = f"{error} {error.tip} {error!r}"
    assert wrong not in text
    assert TOKEN not in text
    assert fake.sent()[0].headers["private-token"] == wrong
    assert "authorization" not in fake.sent()[0].headers


def test_a_token_without_the_scope_is_an_auth_error_naming_it(fake: FakeGitLabForge) -> None:
    fake.fail(
        Reply(
            403,
            b'{"error":"insufficient_scope","error_description":"The request requires'
            b' higher privileges than provided by the access token.","scope":"api"}',
        )
    )
    with pytest.raises(ForgeAuthError, match="HTTP 403: insufficient_scope") as caught:
        using(fake, lambda f: f.open_issue(title="t", body="b"))
    assert caught.value.tip is not None
    assert "$GITLAB_TOKEN" in caught.value.tip
    assert "api scope" in caught.value.tip
    assert fake.issues == {}


def test_a_bearer_token_is_sent_as_authorization(fake: FakeGitLabForge) -> None:
    assert using(fake, lambda f: f.default_branch(), token_kind=BEARER) == "main"
    sent = fake.sent()[0].headers
    assert sent["authorization"] == f"Bearer {TOKEN}"
    assert "private-token" not in sent


def test_no_token_sends_no_credentials(fake: FakeGitLabForge) -> None:
    with pytest.raises(ForgeAuthError):
        using(fake, lambda f: f.default_branch(), token=None)
    assert "private-token" not in fake.sent()[0].headers
    assert "authorization" not in fake.sent()[0].headers


def test_5xx_on_a_get_is_retried(fake: FakeGitLabForge) -> None:
    iid = fake.add_merge_request("govern/a", "b")
    fake.fail(message(502, "502 Bad Gateway"), method="GET", times=2)
    sleeps = Sleeps()
    assert using(fake, lambda f: f.get_change(iid), sleeps=sleeps).number == iid
    assert len(fake.sent("GET")) == 3
    assert len(sleeps.delays) == 2


# -- projects -------------------------------------------------------------------------------


def test_a_nested_group_project_path_is_url_encoded(fake: FakeGitLabForge) -> None:
    iid = fake.add_merge_request("govern/a", "b")
    assert using(fake, lambda f: f.get_change(iid)).number == iid
    assert fake.sent()[0].path == f"/api/v4/projects/acme%2Fplatform%2Fapp/merge_requests/{iid}"


def test_a_numeric_project_id_is_sent_as_it_is(fake: FakeGitLabForge) -> None:
    assert using(fake, lambda f: f.default_branch(), project="77") == "main"
    assert fake.sent()[0].path == "/api/v4/projects/77"


@pytest.mark.parametrize("project", ["just-a-name", "0", "group/../other", "", "a//b"])
def test_a_project_is_a_path_or_an_id(project: str) -> None:
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            GitLabForge(project, client)

    with pytest.raises(ForgeError, match="group/project"):
        run(main())


def test_a_token_kind_is_private_or_bearer() -> None:
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            GitLabForge("a/b", client, token_kind="trigger")

    with pytest.raises(ForgeError, match="private, bearer"):
        run(main())


# -- forge_for ------------------------------------------------------------------------------


def build(remote: str | None, settings: ProposeConfig, environ: dict[str, str]) -> GitLabForge:
    """forge_for(Via.GITLAB, ...) without a request sent."""

    async def main() -> GitLabForge:
        async with httpx.AsyncClient() as client:
            forge = forge_for(Via.GITLAB, remote, settings=settings, client=client, environ=environ)
            assert isinstance(forge, GitLabForge)
            return forge

    return run(main())


@pytest.mark.parametrize(
    ("remote", "repository", "api_url"),
    [
        (
            "git@gitlab.com:acme/platform/app.git",
            "acme/platform/app",
            "https://gitlab.com/api/v4",
        ),
        ("https://gitlab.com/acme/app.git", "acme/app", "https://gitlab.com/api/v4"),
        (
            "ssh://git@GitLab.Example.org:2222/group/sub/deeper/project.git",
            "group/sub/deeper/project",
            "https://gitlab.example.org/api/v4",
        ),
        (
            "https://oauth2:secret@gitlab.example.org/team/tool",
            "team/tool",
            "https://gitlab.example.org/api/v4",
        ),
    ],
)
def test_forge_for_builds_gitlab_from_an_ssh_or_https_remote(
    remote: str, repository: str, api_url: str
) -> None:
    forge = build(remote, ProposeConfig(via=Via.GITLAB), {})
    assert (forge.name, forge.repository, forge.api_url) == ("gitlab", repository, api_url)


def test_forge_for_gitlab_uses_a_self_hosted_api_url_and_the_token_env(
    fake: FakeGitLabForge,
) -> None:
    settings = ProposeConfig(via=Via.GITLAB, api_url=fake.url, token_env="MY_FORGE_TOKEN")

    async def main(environ: dict[str, str]) -> str:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = forge_for(
                Via.GITLAB,
                "git@gitlab.internal:acme/platform/app.git",
                settings=settings,
                client=client,
                environ=environ,
            )
            return await forge.default_branch()

    assert run(main({"MY_FORGE_TOKEN": TOKEN})) == "main"
    assert fake.sent()[0].path == project_path(fake)
    assert fake.sent()[0].headers["private-token"] == TOKEN
    with pytest.raises(ForgeAuthError, match=r"\$MY_FORGE_TOKEN"):
        run(main({"GITLAB_TOKEN": TOKEN}))


def test_forge_for_gitlab_reads_gitlab_token_by_default(fake: FakeGitLabForge) -> None:
    settings = ProposeConfig(via=Via.GITLAB, api_url=f"{fake.url}/")

    async def main() -> str:
        async with httpx.AsyncClient(timeout=5) as client:
            forge = forge_for(
                Via.GITLAB,
                "git@gitlab.internal:acme/platform/app.git",
                settings=settings,
                client=client,
                environ={"GITLAB_TOKEN": TOKEN},
            )
            assert isinstance(forge, GitLabForge)
            assert forge.api_url == fake.url
            return await forge.default_branch()

    assert run(main()) == "main"
    assert fake.sent()[0].headers["private-token"] == TOKEN


def test_forge_for_gitlab_takes_the_configured_forge_url() -> None:
    settings = ProposeConfig(via=Via.GITLAB, forge="https://gitlab.example.org/real/group/project")
    forge = build("git@gitlab.example.org:fork/project.git", settings, {})
    assert forge.repository == "real/group/project"


def test_forge_for_an_unknown_via_names_the_choices() -> None:
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            # a value the config never lets through, as a caller might still pass one
            stray = cast(Via, "bitbucket")
            forge_for(
                stray,
                "git@bitbucket.org:a/b.git",
                settings=ProposeConfig(via=stray),
                client=client,
                environ={},
            )

    with pytest.raises(ForgeError, match="has no forge client") as caught:
        run(main())
    assert caught.value.tip is not None
    assert 'via = "gitlab"' in caught.value.tip


def test_label_change_adds_labels_and_changes_on_lists_the_branch_s_open_requests(
    fake: FakeGitLabForge,
) -> None:
    number = using(fake, lambda f: f.open_change(opening(labels=("dependencies",)))).number
    fake.merge_requests[number]["labels"].append("needs-review")  # a person's label
    for _ in range(2):
        using(fake, lambda f: f.label_change(number, opening(labels=("dependencies", "govern"))))
    assert fake.merge_requests[number]["labels"] == ["dependencies", "needs-review", "govern"]
    theirs = fake.add_merge_request("govern/req-2", "a person's own")
    fork = fake.add_merge_request("govern/req-2", "from a fork")
    fake.merge_requests[fork]["source_project_id"] = 999  # a fork's branch of the same name
    found = using(fake, lambda f: f.changes_on("govern/req-2"))
    assert [c.number for c in found] == [theirs]
    said = [
        using(fake, lambda f: f.comment_change(theirs, f"hi\n{marker('x', 'k')}")) for _ in "ab"
    ]
    assert said[0].id == said[1].id, "commented once"
    assert len(fake.notes[("merge_requests", theirs)]) == 1
