"""GitLab's merge requests, issues and notes over its REST API v4.

Notes: docs/internals.md#forge.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from govern.errors import FORGE_ERRORS, ForgeAuthError, ForgeError, ForgeUnavailable
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
)
from govern.http.gitlab import API_URL, DEFAULT_ENV, PRIVATE, TOKEN_KINDS, gitlab_client
from govern.http.pages import pages
from govern.http.retry import is_digits

__all__ = ["GitLabForge"]

PER_PAGE = 100
SCOPE = "api"
DRAFT_PREFIX = "Draft: "
# GitLab's own reading of a draft title: [Draft], (Draft) or Draft: at the start.
_DRAFT = re.compile(r"^\s*(?:(?:\[draft\]|\(draft\)|draft:)\s*)+", re.IGNORECASE)
_PROJECT = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.+-]*(?:/[A-Za-z0-9_.][A-Za-z0-9_.+-]*)+\Z")
_STATES = {
    "opened": ChangeState.OPEN,
    "locked": ChangeState.OPEN,  # "a short-lived, transitional state" while merging
    "closed": ChangeState.CLOSED,
    "merged": ChangeState.MERGED,
}

log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


def _field(document: Any, key: str, kind: type) -> Any:
    return answer_field("gitlab", document, key, kind)


def _undrafted(title: str) -> str:
    """A title without GitLab's draft prefix."""
    return _DRAFT.sub("", title, count=1)


def _drafted(title: str) -> str:
    """A title that marks a draft (unchanged when it already does)."""
    return title if _DRAFT.match(title) else f"{DRAFT_PREFIX}{title}"


def _object(document: Any, what: str) -> dict[str, Any]:
    return answer_object("gitlab", document, what)


def _change(document: Any) -> ChangeRequest:
    document = _object(document, "a merge request")
    state = _STATES.get(_field(document, "state", str))
    if state is None:
        raise ForgeUnavailable(f"gitlab: unexpected merge request state {document['state']!r}")
    draft = document.get("draft") is True or document.get("work_in_progress") is True
    title = answer_text(document, "title")
    sha = document.get("sha")
    return ChangeRequest(
        number=_field(document, "iid", int),
        url=_field(document, "web_url", str),
        state=state,
        branch=_field(document, "source_branch", str),
        base=_field(document, "target_branch", str),
        title=_undrafted(title) if draft else title,
        body=answer_text(document, "description"),
        draft=draft,
        head_sha=sha if isinstance(sha, str) else None,
    )


def _issue(document: Any) -> Issue:
    document = _object(document, "an issue")
    state = answer_text(document, "state")
    return Issue(
        number=_field(document, "iid", int),
        url=_field(document, "web_url", str),
        title=answer_text(document, "title"),
        body=answer_text(document, "description"),
        state="open" if state in ("opened", "") else state,
        labels=answer_labels(document),
    )


def _note(document: Any, page: str) -> Comment:
    document = _object(document, "a note")
    note = _field(document, "id", int)
    return Comment(id=note, url=f"{page}#note_{note}", body=answer_text(document, "body"))


def _username(owner: str) -> str | None:
    """A user's name from an owner (``@alice``, ``alice``); None for a group (``@a/b``)."""
    name = owner.strip().removeprefix("@")
    return name if name and "/" not in name else None


class GitLabForge:
    """One GitLab project's merge requests and issues."""

    name = "gitlab"

    def __init__(
        self,
        project: str,
        client: httpx.AsyncClient,
        *,
        api_url: str = API_URL,
        token: str | None = None,
        token_source: str | None = None,
        token_kind: str = PRIVATE,
        per_page: int = PER_PAGE,
        attempts: int = 3,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        """``project`` is the project's path (``group/sub/project``) or numeric id;
        ``token`` is sent as ``PRIVATE-TOKEN`` (``token_kind="private"``, an access
        token) or ``Authorization: Bearer`` (``"bearer"``, an OAuth token) and never
        shown: ``token_source`` names where it came from in messages."""
        project = project.strip().strip("/")
        if not (
            (is_digits(project) and int(project) > 0)
            or (_PROJECT.match(project) and ".." not in project.split("/"))
        ):
            raise ForgeError(
                f"gitlab: a project is group/project (any depth) or a numeric id,"
                f" not {project[:80]!r}"
            )
        if token_kind not in TOKEN_KINDS:
            raise ForgeError(
                f"gitlab: token_kind is one of {', '.join(TOKEN_KINDS)}, not {token_kind!r}"
            )
        self.repository = project
        self.api_url = api_url.rstrip("/")
        self._project = f"/projects/{quote(project, safe='')}"
        self._per_page = per_page
        self._token_source = token_source or f"${DEFAULT_ENV}"
        self._users: dict[str, int | None] = {}
        self._api = gitlab_client(
            client,
            token=token,
            token_source=self._token_source,
            errors=FORGE_ERRORS,
            kind=token_kind,
            api_url=api_url,
            attempts=attempts,
            sleep=sleep,
            clock=clock,
        )

    # -- requests -------------------------------------------------------------------------

    @contextmanager
    def _scoped(self) -> Iterator[None]:
        """Auth errors with what the token needs: GitLab's ``api`` scope."""
        try:
            yield
        except ForgeAuthError as error:
            raise ForgeAuthError(
                error.message,
                tip=f"{error.tip}; govern needs a GitLab access token with the {SCOPE} scope",
                status=error.status,
            ) from None

    async def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: Mapping[str, str] | None = None,
        once: bool = False,
    ) -> Any:
        with self._scoped():
            return await self._api.json(
                method, path, json_body=body, params=params, attempts=1 if once else None
            )

    async def _pages(self, path: str, params: Mapping[str, str]) -> AsyncIterator[Any]:
        """Every item of a listing: ``X-Next-Page``, else a ``Link: rel="next"`` under the
        API's own URL (the token is never sent elsewhere)."""
        with self._scoped():
            async for response in pages(self._api, path, params, per_page=self._per_page):
                for item in answer_items("gitlab", response):
                    yield item

    def _mr(self, iid: int, rest: str = "") -> str:
        return f"{self._project}/merge_requests/{iid}{rest}"

    @staticmethod
    def _issue_path(repository: str, iid: int, rest: str = "") -> str:
        return f"/projects/{quote(repository, safe='')}/issues/{iid}{rest}"

    # -- change requests ------------------------------------------------------------------

    async def default_branch(self) -> str:
        """The project's default branch."""
        project = await self._call("GET", self._project)
        if isinstance(project, dict) and project.get("default_branch") is None:
            raise ForgeError(
                f"gitlab: project {self.repository!r} has no default branch (no commit yet)",
                tip='Push a first commit, or write base = "main" in [tool.govern.propose].',
            )
        return str(_field(project, "default_branch", str))

    async def find_change(self, *, branch: str, marker: Marker) -> ChangeRequest | None:
        """The newest merge request from ``branch`` whose description ends with ``marker``."""
        params = {"source_branch": branch, "state": "all"}
        found: list[ChangeRequest] = []
        async for item in self._pages(f"{self._project}/merge_requests", params):
            # Unsigned markers count on change requests alone: the branch is govern's (only
            # those who may push wrote it), and one opened before signing is found again.
            if (
                marker.ends(answer_text(item, "description"), unsigned=True)
                and item.get("source_branch") == branch
            ):
                found.append(_change(item))
        return max(found, key=lambda change: change.number, default=None)

    async def get_change(self, number: int) -> ChangeRequest:
        """One merge request by its iid."""
        return _change(await self._call("GET", self._mr(number)))

    async def open_change(self, opening: Opening) -> ChangeRequest:
        """Open a merge request (once) with its labels, reviewers and assignees."""
        for team in (*opening.team_reviewers, *(o for o in opening.reviewers if "/" in o)):
            log.info("gitlab: %s cannot be asked for a review (a group); skipped", team)
        reviewers = await self._user_ids(opening.reviewers)
        assignees = await self._user_ids(opening.assignees)
        body: dict[str, Any] = {
            "source_branch": opening.branch,
            "target_branch": opening.base,
            "title": _drafted(opening.title) if opening.draft else opening.title,
            "description": opening.body,
        }
        if opening.labels:
            body["labels"] = ",".join(opening.labels)
        if reviewers:
            body["reviewer_ids"] = reviewers
        if assignees:
            body["assignee_ids"] = assignees
        return await create_once(
            self._call("POST", f"{self._project}/merge_requests", body, once=True),
            _change,
            lambda mark: self.find_change(branch=opening.branch, marker=mark),
            opening.body,
        )

    async def label_change(self, number: int, opening: Opening) -> None:
        """Add the labels (``add_labels`` keeps the ones there); the reviewers and assignees
        travelled in the create itself, which GitLab applies as one."""
        if opening.labels:
            await self._call("PUT", self._mr(number), {"add_labels": ",".join(opening.labels)})

    async def changes_on(self, branch: str) -> list[ChangeRequest]:
        """The open merge requests from ``branch`` of this project (a fork's branch of the
        same name is another branch)."""
        params = {"source_branch": branch, "state": "opened"}
        return [
            _change(item)
            async for item in self._pages(f"{self._project}/merge_requests", params)
            if item.get("source_branch") == branch
            and item.get("source_project_id") == item.get("target_project_id")
        ]

    async def comment_change(self, number: int, body: str) -> Comment:
        """Add a note to a merge request unless a note with the body's marker is there."""
        current = await self.get_change(number)
        mark = own_marker(body)
        found = await self._find_note(self._mr(number), mark) if mark else None
        if found is not None:
            return _note(found, current.url)
        return await self._add_note(self._mr(number), body, current.url)

    async def _user_ids(self, owners: Sequence[str]) -> list[int]:
        """The ids of the users named (groups and unknown users left out), in order."""
        ids: list[int] = []
        for owner in owners:
            name = _username(owner)
            if name is None:
                continue
            if name not in self._users:
                users = await self._call("GET", "/users", params={"username": name})
                self._users[name] = next(
                    (
                        user["id"]
                        for user in (users if isinstance(users, list) else [])
                        if isinstance(user, dict)
                        and str(user.get("username", "")).lower() == name.lower()
                        and isinstance(user.get("id"), int)
                    ),
                    None,
                )
                if self._users[name] is None:
                    log.warning("gitlab: no user %r; not asked to review or assigned", name)
            user_id = self._users[name]
            if user_id is not None and user_id not in ids:
                ids.append(user_id)
        return ids

    async def update_change(self, number: int, *, title: str, body: str) -> ChangeRequest:
        """Replace a merge request's title and description (a draft stays a draft)."""
        current = await self.get_change(number)
        document = {"title": _drafted(title) if current.draft else title, "description": body}
        return _change(await self._call("PUT", self._mr(number), document))

    async def close_change(self, number: int, *, comment: str) -> ChangeRequest:
        """Add a note to the merge request (unless a note with the same marker is there:
        a retry after a failed close does not comment twice), then close it unmerged."""
        current = await self.get_change(number)
        mark = own_marker(comment)
        if mark is None or await self._find_note(self._mr(number), mark) is None:
            await self._add_note(self._mr(number), comment, current.url)
        return _change(await self._call("PUT", self._mr(number), {"state_event": "close"}))

    # -- notes ----------------------------------------------------------------------------

    async def _find_note(self, noteable: str, marker: Marker) -> dict[str, Any] | None:
        """The newest note (not a system note) under ``noteable`` ending with ``marker``."""
        found = None
        params = {"order_by": "created_at", "sort": "asc"}
        async for item in self._pages(f"{noteable}/notes", params):
            if item.get("system") is not True and marker.ends(answer_text(item, "body")):
                found = item
        return found

    async def _add_note(self, noteable: str, body: str, page: str) -> Comment:
        """Add a note (once; after a lost answer, the note with its marker is it)."""

        async def find(mark: Marker) -> Comment | None:
            found = await self._find_note(noteable, mark)
            return None if found is None else _note(found, page)

        return await create_once(
            self._call("POST", f"{noteable}/notes", {"body": body}, once=True),
            lambda document: _note(document, page),
            find,
            body,
        )

    async def _issue_url(self, issue: IssueRef) -> str:
        return str(
            _field(
                await self._call("GET", self._issue_path(issue.repository, issue.number)),
                "web_url",
                str,
            )
        )

    async def find_comment(self, issue: IssueRef, marker: Marker) -> Comment | None:
        """The newest note on the issue ``issue`` ending with ``marker``."""
        noteable = self._issue_path(issue.repository, issue.number)
        found = await self._find_note(noteable, marker)
        return None if found is None else _note(found, await self._issue_url(issue))

    async def comment(self, issue: IssueRef, body: str) -> Comment:
        """Add a note to the issue ``issue`` (once)."""
        page = await self._issue_url(issue)  # read before the create: nothing after it fails
        return await self._add_note(self._issue_path(issue.repository, issue.number), body, page)

    # -- issues ---------------------------------------------------------------------------

    async def find_issue(self, marker: Marker) -> Issue | None:
        """The newest issue whose description ends with ``marker``, open or closed.

        Every issue is listed and read: GitLab's ``search`` matches words, not an HTML
        comment, so it cannot be trusted to find a marker."""
        params = {"state": "all", "order_by": "created_at", "sort": "desc"}
        async for item in self._pages(f"{self._project}/issues", params):
            if marker.ends(answer_text(item, "description")):
                return _issue(item)
        return None

    async def open_issue(self, *, title: str, body: str, labels: Sequence[str] = ()) -> Issue:
        """Open an issue (once; after a lost answer, the issue with its marker is it)."""
        document = {"title": title, "description": body}
        if labels:
            document["labels"] = ",".join(labels)
        return await create_once(
            self._call("POST", f"{self._project}/issues", document, once=True),
            _issue,
            self.find_issue,
            body,
        )

    async def update_issue(self, number: int, *, title: str, body: str) -> Issue:
        """Replace an issue's title and description, reopening it if it was closed."""
        path = self._issue_path(self.repository, number)
        current = _issue(await self._call("GET", path))
        document = {"title": title, "description": body}
        if current.state == "closed":
            document["state_event"] = "reopen"
        return _issue(await self._call("PUT", path, document))
