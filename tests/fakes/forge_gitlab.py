"""A fake of GitLab's merge requests, issues and notes on 127.0.0.1 for the forge's tests.

:class:`FakeGitLabForge` serves one project of the REST API v4 on
:class:`fakes.api.FakeServer` (real sockets, every request recorded, faults scripted
with ``fail``) the way GitLab documents it:

- the project is known by its numeric id or its URL-encoded path (``acme%2Fplatform%2Fapp``);
  a path sent unencoded matches no route (404), as on GitLab;
- the token is read from ``PRIVATE-TOKEN`` or ``Authorization: Bearer``; a missing or wrong
  one is refused with 401 ``{"message": "401 Unauthorized"}``;
- merge requests and issues each have a global ``id`` and a per-project ``iid``, numbered
  apart (merge request !1 and issue #1 both exist); ``web_url`` is the page a person opens;
- a merge request is ``opened``, ``closed``, ``locked`` or ``merged``; it is a ``draft``
  when its title starts with ``Draft:``, ``[Draft]`` or ``(Draft)``; ``labels`` arrive
  comma-separated, ``reviewer_ids`` and ``assignee_ids`` must be known users (else 404);
  a second open merge request from the same source branch is refused (409);
- notes have no ``web_url``; closing or reopening adds a system note, as GitLab does;
- listings are paginated (``page``, ``per_page`` capped at :attr:`page_size`) with
  ``X-Page``, ``X-Per-Page``, ``X-Total``, ``X-Total-Pages``, ``X-Next-Page`` (empty on the
  last page), ``X-Prev-Page`` and ``Link`` (``prev``, ``next``, ``first``, ``last``);
  :attr:`FakeGitLabForge.hidden_headers` leaves some out, as GitLab.com may.

Faults: :meth:`~fakes.api.FakeServer.fail` plays a reply instead of the API's
(:func:`message` writes GitLab's error body, :func:`rate_limited` its documented 429);
:attr:`FakeGitLabForge.on_create` is called right after a create is applied and before
its answer is sent (with the server's lock held): a Reply it returns is sent instead
(a 5xx after creating), and :data:`LOST` closes the connection with no answer at all.
:attr:`FakeGitLabForge.created` counts the creates applied.

The endpoints, with the documentation each one follows:

- GET /projects/:id
  https://docs.gitlab.com/ee/api/projects.html#get-a-single-project
- GET, POST /projects/:id/merge_requests (``source_branch``, ``state``)
  https://docs.gitlab.com/ee/api/merge_requests.html#list-project-merge-requests
  https://docs.gitlab.com/ee/api/merge_requests.html#create-mr
- GET, PUT /projects/:id/merge_requests/:merge_request_iid (``state_event``)
  https://docs.gitlab.com/ee/api/merge_requests.html#get-single-mr
  https://docs.gitlab.com/ee/api/merge_requests.html#update-mr
- GET, POST /projects/:id/merge_requests/:merge_request_iid/notes and
  GET, POST /projects/:id/issues/:issue_iid/notes (``sort``, ``order_by``)
  https://docs.gitlab.com/ee/api/notes.html
- GET, POST /projects/:id/issues; GET, PUT /projects/:id/issues/:issue_iid
  https://docs.gitlab.com/ee/api/issues.html#list-project-issues
  https://docs.gitlab.com/ee/api/issues.html#new-issue
  https://docs.gitlab.com/ee/api/issues.html#edit-an-issue
- GET /users?username=
  https://docs.gitlab.com/ee/api/users.html#list-users
- drafts: https://docs.gitlab.com/ee/user/project/merge_requests/drafts.html
- authentication: https://docs.gitlab.com/ee/api/rest/authentication.html
- pagination: https://docs.gitlab.com/ee/api/rest/index.html#pagination
- path encoding: https://docs.gitlab.com/ee/api/rest/index.html#namespaced-path-encoding
- rate limits: https://docs.gitlab.com/ee/user/gitlab_com/index.html#gitlabcom-specific-rate-limits
  and https://docs.gitlab.com/ee/administration/settings/user_and_ip_rate_limits.html
"""

from __future__ import annotations

import email.utils
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from fakes.api import TEXT_TYPE, FakeServer, Recorded, Reply, json_reply
from fakes.index import Handler

__all__ = ["LOST", "FakeGitLabForge", "message", "rate_limited"]

#: what ``on_create`` returns to drop the connection without answering (a lost answer)
LOST = Reply(599, b"", None)
CREATED_AT = "2026-06-01T12:00:00.000Z"
OnCreate = Callable[[str, dict[str, Any]], Reply | None]
_DRAFT = re.compile(r"^\s*(?:\[draft\]|\(draft\)|draft:)", re.IGNORECASE)


def message(status: int, text: Any, **headers: str) -> Reply:
    """GitLab's error body ``{"message": ...}`` (header names written with ``_`` for ``-``)."""
    return json_reply(
        status, {"message": text}, {k.replace("_", "-"): v for k, v in headers.items()}
    )


def rate_limited(retry_after: int, reset_at: int) -> Reply:
    """The documented 429 of a throttle: ``Retry-After`` in seconds, ``RateLimit-Reset`` a
    Unix time, ``RateLimit-ResetTime`` its HTTP date; the body is plain text."""
    return Reply(
        429,
        b"Retry later\n",
        TEXT_TYPE,
        {
            "Retry-After": str(retry_after),
            "RateLimit-Name": "throttle_authenticated_api",
            "RateLimit-Limit": "2000",
            "RateLimit-Observed": "2001",
            "RateLimit-Remaining": "0",
            "RateLimit-Reset": str(reset_at),
            "RateLimit-ResetTime": email.utils.formatdate(reset_at, usegmt=True),
        },
    )


class FakeGitLabForge(FakeServer):
    """GitLab's merge requests, issues and notes for one project."""

    def __init__(
        self,
        *,
        token: str,
        project_path: str = "acme/platform/app",
        project_id: int = 77,
        default_branch: str | None = "main",
        page_size: int = 100,
    ) -> None:
        super().__init__()
        self.token = token
        self.project_path = project_path
        self.project_id = project_id
        self.default_branch = default_branch
        self.page_size = page_size
        self.merge_requests: dict[int, dict[str, Any]] = {}  # iid -> merge request
        self.issues: dict[int, dict[str, Any]] = {}  # iid -> issue
        self.notes: dict[tuple[str, int], list[dict[str, Any]]] = {}  # (kind, iid) -> notes
        self.users: dict[str, int] = {"alice": 11, "bob": 12, "carol": 13}
        self.on_create: OnCreate | None = None
        #: pagination headers left out of listings (GitLab.com omits some on large ones)
        self.hidden_headers: frozenset[str] = frozenset()
        self.created: list[str] = []  # the kinds of the creates applied, in order
        self._ids = {"merge_request": 5000, "issue": 7000, "note": 9000}

    @property
    def url(self) -> str:
        """The API root (``api-url``): ``http://127.0.0.1:<port>/api/v4``."""
        return f"{self.base}/api/v4"

    @property
    def encoded(self) -> str:
        """The project's path as ``:id`` (URL-encoded)."""
        return quote(self.project_path, safe="")

    def web(self, rest: str) -> str:
        """A page's URL on the web side."""
        return f"{self.base}/{self.project_path}/-/{rest}"

    # -- state a test sets up ------------------------------------------------------------

    def add_merge_request(
        self, branch: str, description: str, *, state: str = "opened", target: str = "main"
    ) -> int:
        """A merge request made elsewhere (another run, a person); its iid."""
        with self._lock:
            merge_request = self._new_merge_request(
                {"source_branch": branch, "target_branch": target, "title": f"from {branch}"}
            )
            merge_request.update(description=description, state=state)
            return int(merge_request["iid"])

    def merge(self, iid: int) -> None:
        """Merge a merge request (as a person would)."""
        with self._lock:
            self.merge_requests[iid].update(state="merged", merged_at=CREATED_AT)

    def add_issue(self, title: str, description: str, *, state: str = "opened") -> int:
        """An issue made elsewhere; its iid."""
        with self._lock:
            issue = self._new_issue({"title": title, "description": description})
            issue["state"] = state
            return int(issue["iid"])

    def add_note(self, kind: str, iid: int, body: str, *, system: bool = False) -> int:
        """A note on a merge request or issue (``kind``: ``merge_requests`` or ``issues``)
        made elsewhere, or a system note (GitLab's own: "closed", "changed the description");
        its id."""
        with self._lock:
            items = self.merge_requests if kind == "merge_requests" else self.issues
            return int(self._new_note(kind, items[iid], body, system=system)["id"])

    # -- serving --------------------------------------------------------------------------

    def answer(self, handler: Handler, reply: Reply) -> None:
        """:meth:`FakeServer.answer`, and :data:`LOST` closes the connection unanswered."""
        if reply is LOST:
            handler.close_connection = True
            return
        super().answer(handler, reply)

    def route(self, request: Recorded) -> Reply:
        """Authenticate, then answer the project's endpoints and the users listing."""
        if not self._authenticated(request):
            return message(401, "401 Unauthorized")
        if not request.path.startswith("/api/v4/"):
            return json_reply(404, {"error": "404 Not Found"})
        rest = request.path[len("/api/v4") :]
        fields = self._fields(request)
        method = request.method
        if rest == "/users" and method == "GET":
            return self._users(request)
        found = re.fullmatch(r"/projects/([^/]+)(/.*)?", rest)
        if found is None:
            return json_reply(404, {"error": "404 Not Found"})
        if found.group(1) not in (self.encoded, str(self.project_id)):
            return message(404, "404 Project Not Found")
        rest = found.group(2) or ""
        if rest == "" and method == "GET":
            return json_reply(200, self._project())
        if rest == "/merge_requests":
            if method == "POST":
                return self._create_merge_request(fields)
            return self._page(request, self._listed_merge_requests(request))
        if found := re.fullmatch(r"/(merge_requests|issues)/(\d+)(/notes)?", rest):
            kind, iid, notes = found.group(1), int(found.group(2)), found.group(3)
            items = self.merge_requests if kind == "merge_requests" else self.issues
            item = items.get(iid)
            if item is None:
                return message(404, "404 Not found")
            if notes:
                return self._on_notes(request, kind, item, fields)
            if method == "PUT":
                return self._edit(kind, item, fields)
            return json_reply(200, item)
        if rest == "/issues":
            if method == "POST":
                if not isinstance(fields.get("title"), str) or not fields["title"]:
                    return json_reply(400, {"error": "title is missing"})
                return self._create("issue", self._new_issue(fields))
            return self._page(request, self._listed_issues(request))
        return json_reply(404, {"error": "404 Not Found"})

    def _authenticated(self, request: Recorded) -> bool:
        token = request.headers.get("private-token")
        bearer = request.headers.get("authorization", "")
        if token is None and bearer.startswith("Bearer "):
            token = bearer[len("Bearer ") :]
        return token == self.token

    @staticmethod
    def _fields(request: Recorded) -> dict[str, Any]:
        """The request's attributes: the query string, then a JSON body."""
        fields: dict[str, Any] = {k: v[-1] for k, v in request.query.items()}
        if request.body:
            document = request.json()
            if isinstance(document, dict):
                fields.update(document)
        return fields

    def _project(self) -> dict[str, Any]:
        return {
            "id": self.project_id,
            "path": self.project_path.rsplit("/", 1)[-1],
            "path_with_namespace": self.project_path,
            "default_branch": self.default_branch,
            "web_url": f"{self.base}/{self.project_path}",
        }

    def _user(self, username: str) -> dict[str, Any]:
        return {
            "id": self.users[username],
            "username": username,
            "name": username.title(),
            "state": "active",
            "avatar_url": None,
            "web_url": f"{self.base}/{username}",
        }

    def _users(self, request: Recorded) -> Reply:
        username = self._one(request, "username")
        if username is None:
            return self._page(request, [self._user(name) for name in sorted(self.users)])
        known = [name for name in self.users if name.lower() == username.lower()]
        return json_reply(200, [self._user(name) for name in known])

    def _next_id(self, kind: str) -> int:
        self._ids[kind] += 1
        return self._ids[kind]

    # -- merge requests -------------------------------------------------------------------

    def _new_merge_request(self, fields: dict[str, Any]) -> dict[str, Any]:
        iid = len(self.merge_requests) + 1
        title = str(fields["title"])
        labels = fields.get("labels") or []
        merge_request: dict[str, Any] = {
            "id": self._next_id("merge_request"),
            "iid": iid,
            "project_id": self.project_id,
            "title": title,
            "description": fields.get("description"),
            "state": "opened",
            "created_at": CREATED_AT,
            "updated_at": CREATED_AT,
            "merged_at": None,
            "closed_at": None,
            "target_branch": fields["target_branch"],
            "source_branch": fields["source_branch"],
            "source_project_id": self.project_id,
            "target_project_id": self.project_id,
            "labels": labels.split(",") if isinstance(labels, str) else list(labels),
            "draft": bool(_DRAFT.match(title)),
            "work_in_progress": bool(_DRAFT.match(title)),
            "assignees": [self._user_by_id(i) for i in fields.get("assignee_ids") or []],
            "reviewers": [self._user_by_id(i) for i in fields.get("reviewer_ids") or []],
            "sha": f"{iid:040x}",
            "web_url": self.web(f"merge_requests/{iid}"),
            "references": {"short": f"!{iid}", "full": f"{self.project_path}!{iid}"},
        }
        self.merge_requests[iid] = merge_request
        return merge_request

    def _user_by_id(self, user_id: int) -> dict[str, Any]:
        name = next(name for name, known in self.users.items() if known == user_id)
        return self._user(name)

    def _create_merge_request(self, fields: dict[str, Any]) -> Reply:
        for key in ("source_branch", "target_branch", "title"):
            if not isinstance(fields.get(key), str) or not fields[key]:
                return json_reply(400, {"error": f"{key} is missing"})
        ids = [*(fields.get("reviewer_ids") or []), *(fields.get("assignee_ids") or [])]
        if any(user_id not in self.users.values() for user_id in ids):
            return message(404, "404 User Not Found")
        for other in self.merge_requests.values():
            if other["source_branch"] == fields["source_branch"] and other["state"] == "opened":
                return message(
                    409,
                    [
                        "Another open merge request already exists for this source branch:"
                        f" !{other['iid']}"
                    ],
                )
        return self._create("merge_request", self._new_merge_request(fields))

    def _listed_merge_requests(self, request: Recorded) -> list[dict[str, Any]]:
        state = self._one(request, "state") or "all"
        branch = self._one(request, "source_branch")
        return [
            item
            for item in sorted(self.merge_requests.values(), key=lambda m: m["id"], reverse=True)
            if state in ("all", item["state"]) and branch in (None, item["source_branch"])
        ]

    def _edit(self, kind: str, item: dict[str, Any], fields: dict[str, Any]) -> Reply:
        """PUT: title, description, labels, add_labels, state_event (close, reopen)."""
        for key in ("title", "description"):
            if key in fields:
                item[key] = fields[key]
        if isinstance(fields.get("labels"), str):
            item["labels"] = [label for label in fields["labels"].split(",") if label]
        if isinstance(fields.get("add_labels"), str):
            # add_labels: the names added to those there (PUT /merge_requests/:iid,
            # https://docs.gitlab.com/ee/api/merge_requests.html#update-mr).
            added = [label for label in fields["add_labels"].split(",") if label]
            item["labels"] += [label for label in added if label not in item["labels"]]
        if kind == "merge_requests":
            draft = bool(_DRAFT.match(item["title"]))
            item.update(draft=draft, work_in_progress=draft)
        event = fields.get("state_event")
        if event == "close" and item["state"] in ("opened", "locked"):
            item.update(state="closed", closed_at=CREATED_AT)
            self._system_note(kind, item, "closed")
        elif event == "reopen" and item["state"] == "closed":
            item.update(state="opened", closed_at=None)
            self._system_note(kind, item, "reopened")
        return json_reply(200, item)

    # -- issues ---------------------------------------------------------------------------

    def _new_issue(self, fields: dict[str, Any]) -> dict[str, Any]:
        iid = len(self.issues) + 1
        labels = fields.get("labels") or []
        issue: dict[str, Any] = {
            "id": self._next_id("issue"),
            "iid": iid,
            "project_id": self.project_id,
            "title": fields["title"],
            "description": fields.get("description"),
            "state": "opened",
            "created_at": CREATED_AT,
            "updated_at": CREATED_AT,
            "closed_at": None,
            "labels": labels.split(",") if isinstance(labels, str) else list(labels),
            "assignees": [],
            "web_url": self.web(f"issues/{iid}"),
            "references": {"short": f"#{iid}", "full": f"{self.project_path}#{iid}"},
        }
        self.issues[iid] = issue
        return issue

    def _listed_issues(self, request: Recorded) -> list[dict[str, Any]]:
        state = self._one(request, "state") or "all"
        labels = [label for label in (self._one(request, "labels") or "").split(",") if label]
        ascending = self._one(request, "sort") == "asc"
        return [
            item
            for item in sorted(self.issues.values(), key=lambda i: i["id"], reverse=not ascending)
            if state in ("all", item["state"]) and all(label in item["labels"] for label in labels)
        ]

    # -- notes ----------------------------------------------------------------------------

    def _on_notes(
        self, request: Recorded, kind: str, item: dict[str, Any], fields: dict[str, Any]
    ) -> Reply:
        thread = self.notes.setdefault((kind, item["iid"]), [])
        if request.method == "GET":
            ascending = self._one(request, "sort") == "asc"
            return self._page(request, thread if ascending else thread[::-1])
        if not isinstance(fields.get("body"), str) or not fields["body"]:
            return json_reply(400, {"error": "body is missing"})
        note = self._new_note(kind, item, fields["body"], system=False)
        return self._create("note", note)

    def _new_note(self, kind: str, item: dict[str, Any], body: str, *, system: bool) -> Any:
        note = {
            "id": self._next_id("note"),
            "type": None,
            "body": body,
            "author": self._user("alice") if not system else {"id": 1, "username": "root"},
            "created_at": CREATED_AT,
            "updated_at": CREATED_AT,
            "system": system,
            "noteable_id": item["id"],
            "noteable_type": "MergeRequest" if kind == "merge_requests" else "Issue",
            "noteable_iid": item["iid"],
            "resolvable": False,
            "confidential": False,
            "internal": False,
        }
        self.notes.setdefault((kind, item["iid"]), []).append(note)
        return note

    def _system_note(self, kind: str, item: dict[str, Any], body: str) -> None:
        self._new_note(kind, item, body, system=True)

    # -- shared ---------------------------------------------------------------------------

    def _create(self, kind: str, document: dict[str, Any]) -> Reply:
        self.created.append(kind)
        if self.on_create is not None:
            replaced = self.on_create(kind, document)
            if replaced is not None:
                return replaced
        return json_reply(201, document)

    def _page(self, request: Recorded, items: list[dict[str, Any]]) -> Reply:
        """One page of a listing with GitLab's pagination headers."""
        per_page = min(int(self._one(request, "per_page") or 20), 100, self.page_size)
        page = max(1, int(self._one(request, "page") or 1))
        pages = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        query = {k: v[-1] for k, v in request.query.items()}

        def link(number: int, rel: str) -> str:
            target = urlencode({**query, "page": str(number), "per_page": str(per_page)})
            return f'<{self.base}{request.path}?{target}>; rel="{rel}"'

        links = [link(page - 1, "prev")] if page > 1 else []
        links += [link(page + 1, "next")] if page < pages else []
        links += [link(1, "first"), link(pages, "last")]
        headers = {
            "X-Page": str(page),
            "X-Per-Page": str(per_page),
            "X-Total": str(len(items)),
            "X-Total-Pages": str(pages),
            "X-Next-Page": str(page + 1) if page < pages else "",
            "X-Prev-Page": str(page - 1) if page > 1 else "",
            "Link": ", ".join(links),
        }
        headers = {k: v for k, v in headers.items() if k not in self.hidden_headers}
        return Reply(200, json.dumps(chunk).encode(), "application/json", headers)

    @staticmethod
    def _one(request: Recorded, name: str) -> str | None:
        values = request.query.get(name)
        return values[-1] if values else None
