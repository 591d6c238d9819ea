"""GitHub's pull requests, issues and comments over its REST API (version 2022-11-28).

Notes: docs/internals.md#forge.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from govern.errors import FORGE_ERRORS, ForgeError
from govern.forge.base import (
    ChangeRequest,
    ChangeState,
    Comment,
    Issue,
    IssueRef,
    Marker,
    Opening,
    answer_field,
    answer_items,
    answer_labels,
    answer_object,
    answer_text,
    create_once,
    own_marker,
    split_reviewers,
)
from govern.http.client import ApiClient
from govern.http.github import API_URL, DEFAULT_ENV, GitHubApi, TokenSource
from govern.http.pages import pages

__all__ = ["GitHubForge"]

PER_PAGE = 100


def _now() -> datetime:
    return datetime.now(UTC)


def _field(document: Any, key: str, kind: type) -> Any:
    return answer_field("github", document, key, kind)


def _object(document: Any, what: str) -> dict[str, Any]:
    return answer_object("github", document, what)


def _change(document: Any) -> ChangeRequest:
    document = _object(document, "a pull request")
    if document.get("merged") is True or document.get("merged_at"):
        state = ChangeState.MERGED
    elif _field(document, "state", str) == "closed":
        state = ChangeState.CLOSED
    else:
        state = ChangeState.OPEN
    head = _field(document, "head", dict)
    return ChangeRequest(
        number=_field(document, "number", int),
        url=_field(document, "html_url", str),
        state=state,
        branch=_field(head, "ref", str),
        base=_field(_field(document, "base", dict), "ref", str),
        title=answer_text(document, "title"),
        body=answer_text(document, "body"),
        draft=document.get("draft") is True,
        head_sha=head.get("sha") if isinstance(head.get("sha"), str) else None,
    )


def _issue(document: Any) -> Issue:
    document = _object(document, "an issue")
    return Issue(
        number=_field(document, "number", int),
        url=_field(document, "html_url", str),
        title=answer_text(document, "title"),
        body=answer_text(document, "body"),
        state=answer_text(document, "state") or "open",
        labels=answer_labels(document),
    )


def _comment(document: Any) -> Comment:
    document = _object(document, "a comment")
    return Comment(
        id=_field(document, "id", int),
        url=_field(document, "html_url", str),
        body=answer_text(document, "body"),
    )


class GitHubForge:
    """One GitHub repository's pull requests and issues."""

    name = "github"

    def __init__(
        self,
        repository: str,
        client: httpx.AsyncClient,
        *,
        api_url: str = API_URL,
        token: str | None = None,
        token_source: str | None = None,
        per_page: int = PER_PAGE,
        attempts: int = 3,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], datetime] = _now,
        app: TokenSource | None = None,
    ) -> None:
        """``repository`` is ``owner/repo``; ``token`` is sent as a bearer token and
        never shown (``token_source`` names where it came from in messages); ``app``
        gives a GitHub App's installation tokens instead, renewed as they expire."""
        owner, _, repo = repository.partition("/")
        if not owner or not repo or "/" in repo:
            raise ForgeError(f"github: a repository is owner/repo, not {repository!r}")
        self.repository = repository
        self.owner = owner
        self._per_page = per_page
        self._api = GitHubApi(
            client,
            errors=FORGE_ERRORS,
            token=token,
            token_source=token_source or f"${DEFAULT_ENV}",
            app=app,
            api_url=api_url,
            attempts=attempts,
            sleep=sleep,
            clock=clock,
        )

    async def _client(self) -> ApiClient:
        """The REST client, with the App's current installation token when there is one."""
        return await self._api.client()

    def _repo(self, rest: str) -> str:
        return f"/repos/{self.repository}/{rest.lstrip('/')}"

    async def _call(self, method: str, path: str, body: Any = None, *, once: bool = False) -> Any:
        api = await self._client()
        return await api.json(method, path, json_body=body, attempts=1 if once else None)

    async def _pages(self, path: str, params: Mapping[str, str]) -> AsyncIterator[Any]:
        """Every item of a listing, following the ``Link: rel="next"`` pages."""
        async for response in pages(await self._client(), path, params, per_page=self._per_page):
            for item in answer_items("github", response):
                yield item

    # -- change requests ------------------------------------------------------------------

    async def default_branch(self) -> str:
        """The repository's default branch."""
        return str(
            _field(await self._call("GET", f"/repos/{self.repository}"), "default_branch", str)
        )

    async def find_change(self, *, branch: str, marker: Marker) -> ChangeRequest | None:
        """The newest pull request from ``branch`` whose body ends with ``marker``."""
        params = {"head": f"{self.owner}:{branch}", "state": "all"}
        found: list[ChangeRequest] = []
        async for item in self._pages(self._repo("pulls"), params):
            # Unsigned markers count on change requests alone: the branch is govern's (only
            # those who may push wrote it), and one opened before signing is found again.
            if marker.ends(answer_text(item, "body"), unsigned=True):
                found.append(_change(item))
        return max(found, key=lambda change: change.number, default=None)

    async def get_change(self, number: int) -> ChangeRequest:
        """One pull request (merged when GitHub says ``merged`` or ``merged_at``)."""
        return _change(await self._call("GET", self._repo(f"pulls/{number}")))

    async def open_change(self, opening: Opening) -> ChangeRequest:
        """Open a pull request (once); its labels, reviewers and assignees are
        :meth:`label_change`'s (GitHub's create takes none of them)."""
        body = {
            "title": opening.title,
            "head": opening.branch,
            "base": opening.base,
            "body": opening.body,
            "draft": opening.draft,
        }
        return await create_once(
            self._call("POST", self._repo("pulls"), body, once=True),
            _change,
            lambda mark: self.find_change(branch=opening.branch, marker=mark),
            opening.body,
        )

    async def label_change(self, number: int, opening: Opening) -> None:
        """Add the labels, request the reviewers, add the assignees (each adds to what the
        pull request has: a retry changes nothing)."""
        if opening.labels:
            await self._call(
                "POST", self._repo(f"issues/{number}/labels"), {"labels": list(opening.labels)}
            )
        users, teams = split_reviewers(opening.reviewers)
        teams += [team.removeprefix("@").split("/")[-1] for team in opening.team_reviewers]
        if users or teams:
            await self._call(
                "POST",
                self._repo(f"pulls/{number}/requested_reviewers"),
                {"reviewers": users, "team_reviewers": teams},
            )
        if opening.assignees:
            assignees = [name.removeprefix("@") for name in opening.assignees]
            await self._call(
                "POST", self._repo(f"issues/{number}/assignees"), {"assignees": assignees}
            )

    async def changes_on(self, branch: str) -> list[ChangeRequest]:
        """The open pull requests whose head is ``branch`` of this repository."""
        params = {"head": f"{self.owner}:{branch}", "state": "open"}
        return [_change(item) async for item in self._pages(self._repo("pulls"), params)]

    async def comment_change(self, number: int, body: str) -> Comment:
        """Comment on a pull request (its issue's comments) unless the body's marker is there."""
        issue = IssueRef(self.repository, number)
        mark = own_marker(body)
        found = await self.find_comment(issue, mark) if mark else None
        return found if found is not None else await self.comment(issue, body)

    async def update_change(self, number: int, *, title: str, body: str) -> ChangeRequest:
        """Replace a pull request's title and body."""
        document = {"title": title, "body": body}
        return _change(await self._call("PATCH", self._repo(f"pulls/{number}"), document))

    async def close_change(self, number: int, *, comment: str) -> ChangeRequest:
        """Comment (unless a comment with the same marker is there: a retry after a failed
        close does not comment twice), then close."""
        issue = IssueRef(self.repository, number)
        mark = own_marker(comment)
        if mark is None or await self.find_comment(issue, mark) is None:
            await self.comment(issue, comment)
        return _change(
            await self._call("PATCH", self._repo(f"pulls/{number}"), {"state": "closed"})
        )

    # -- comments -------------------------------------------------------------------------

    async def find_comment(self, issue: IssueRef, marker: Marker) -> Comment | None:
        """The newest comment on ``issue`` ending with ``marker``."""
        found = None
        async for item in self._pages(self._issue_path(issue, "comments"), {}):
            if marker.ends(answer_text(item, "body")):
                found = _comment(item)
        return found

    async def comment(self, issue: IssueRef, body: str) -> Comment:
        """Add a comment (once; after a lost answer, the comment with its marker is it)."""
        return await create_once(
            self._call("POST", self._issue_path(issue, "comments"), {"body": body}, once=True),
            _comment,
            lambda mark: self.find_comment(issue, mark),
            body,
        )

    def _issue_path(self, issue: IssueRef, rest: str) -> str:
        return f"/repos/{issue.repository}/issues/{issue.number}/{rest}"

    # -- issues ---------------------------------------------------------------------------

    async def find_issue(self, marker: Marker) -> Issue | None:
        """The newest issue (not pull request) whose body ends with ``marker``."""
        params = {"state": "all", "sort": "created", "direction": "desc"}
        async for item in self._pages(self._repo("issues"), params):
            if "pull_request" not in item and marker.ends(answer_text(item, "body")):
                return _issue(item)
        return None

    async def open_issue(self, *, title: str, body: str, labels: Sequence[str] = ()) -> Issue:
        """Open an issue (once; after a lost answer, the issue with its marker is it)."""
        document = {"title": title, "body": body, "labels": list(labels)}
        return await create_once(
            self._call("POST", self._repo("issues"), document, once=True),
            _issue,
            self.find_issue,
            body,
        )

    async def update_issue(self, number: int, *, title: str, body: str) -> Issue:
        """Replace an issue's title and body, reopening it."""
        document = {"title": title, "body": body, "state": "open"}
        return _issue(await self._call("PATCH", self._repo(f"issues/{number}"), document))
