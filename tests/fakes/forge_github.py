"""A fake of GitHub's pull requests, issues and comments on 127.0.0.1 for the forge's tests.

:class:`FakeGitHubForge` serves one repository on :class:`fakes.api.FakeServer` (real
sockets, every request recorded, faults scripted with ``fail``) the way GitHub documents
its REST API (version 2022-11-28). Pull requests and issues share one number sequence,
as on GitHub, and the issues listing includes pull requests (with a ``pull_request``
key). Listings are paginated with a ``Link`` header; ``page_size`` caps ``per_page`` so
that a test sees several pages with a few items. A wrong token is refused (401 "Bad
credentials"). :attr:`FakeGitHubForge.on_create` is called right after a create is
applied and before its answer is sent (with the server's lock held); a Reply it returns
is sent instead of the answer (a lost answer, say).

The endpoints, with the documentation each one follows:

- GET /repos/{owner}/{repo}
  https://docs.github.com/en/rest/repos/repos#get-a-repository
- GET, POST /repos/{owner}/{repo}/pulls (``head=owner:branch``, ``state``)
  https://docs.github.com/en/rest/pulls/pulls#list-pull-requests
  https://docs.github.com/en/rest/pulls/pulls#create-a-pull-request
- GET, PATCH /repos/{owner}/{repo}/pulls/{pull_number}
  https://docs.github.com/en/rest/pulls/pulls#get-a-pull-request
  https://docs.github.com/en/rest/pulls/pulls#update-a-pull-request
- POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers
  https://docs.github.com/en/rest/pulls/review-requests#request-reviewers-for-a-pull-request
- POST /repos/{owner}/{repo}/issues/{issue_number}/labels
  https://docs.github.com/en/rest/issues/labels#add-labels-to-an-issue
- POST /repos/{owner}/{repo}/issues/{issue_number}/assignees
  https://docs.github.com/en/rest/issues/assignees#add-assignees-to-an-issue
- GET, POST /repos/{owner}/{repo}/issues/{issue_number}/comments
  https://docs.github.com/en/rest/issues/comments#list-issue-comments
  https://docs.github.com/en/rest/issues/comments#create-an-issue-comment
- GET, POST /repos/{owner}/{repo}/issues; PATCH /repos/{owner}/{repo}/issues/{issue_number}
  https://docs.github.com/en/rest/issues/issues#list-repository-issues
  https://docs.github.com/en/rest/issues/issues#create-an-issue
  https://docs.github.com/en/rest/issues/issues#update-an-issue
- POST /app/installations/{installation_id}/access_tokens (a JWT signed RS256 by the app)
  https://docs.github.com/en/rest/apps/apps#create-an-installation-access-token-for-an-app
  https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/generating-a-json-web-token-jwt-for-a-github-app
- pagination: https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api
- rate limits: https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from fakes.api import FakeServer, Recorded, Reply, json_reply
from fakes.github import message

__all__ = ["FakeGitHubForge", "message"]

OnCreate = Callable[[str, dict[str, Any]], Reply | None]


class FakeGitHubForge(FakeServer):
    """GitHub's pulls and issues for one repository."""

    def __init__(
        self,
        *,
        token: str,
        owner: str = "octo-org",
        repo: str = "app",
        default_branch: str = "main",
        page_size: int = 100,
    ) -> None:
        super().__init__()
        self.token = token
        self.owner = owner
        self.repo = repo
        self.default_branch = default_branch
        self.page_size = page_size
        self.pulls: dict[int, dict[str, Any]] = {}
        self.issues: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.on_create: OnCreate | None = None
        #: (app id, installation id, the app's public key) when it answers app token requests
        self.app: tuple[str, int, rsa.RSAPublicKey] | None = None
        self.token_lifetime = timedelta(hours=1)
        self.issued: list[str] = []  # the installation tokens given out, in order
        self._next_number = 1
        self._next_comment = 9001

    @property
    def repository(self) -> str:
        """``owner/repo``."""
        return f"{self.owner}/{self.repo}"

    def html(self, rest: str) -> str:
        """A page's URL on the web side."""
        return f"{self.url}/web/{self.repository}/{rest}"

    # -- state a test sets up ------------------------------------------------------------

    def add_pull(self, branch: str, body: str, *, state: str = "open", base: str = "main") -> int:
        """A pull request made elsewhere (another run, a person)."""
        with self._lock:
            pull = self._new_pull(
                {"title": f"from {branch}", "head": branch, "base": base, "body": body}
            )
            pull["state"] = state
            return int(pull["number"])

    def add_issue(self, title: str, body: str, *, state: str = "open") -> int:
        """An issue made elsewhere (another run, a person); its number."""
        with self._lock:
            issue = self._new_issue({"title": title, "body": body})
            issue["state"] = state
            return int(issue["number"])

    def merge(self, number: int) -> None:
        """Merge a pull request (as a person would)."""
        with self._lock:
            pull = self.pulls[number]
            pull.update(state="closed", merged=True, merged_at="2026-06-02T10:00:00Z")

    # -- serving --------------------------------------------------------------------------

    def route(self, request: Recorded) -> Reply:
        if found := re.fullmatch(r"/app/installations/(\d+)/access_tokens", request.path):
            return self._app_token(request, int(found.group(1)))
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return message(401, "Bad credentials")
        prefix = f"/repos/{self.repository}"
        if not request.path.startswith(prefix):
            return message(404, "Not Found")
        rest = request.path[len(prefix) :]
        body = request.json() if request.body else {}
        method = request.method
        if rest == "" and method == "GET":
            return json_reply(
                200, {"full_name": self.repository, "default_branch": self.default_branch}
            )
        if rest == "/pulls":
            if method == "POST":
                return self._create("pull", self._new_pull(body))
            return self._page(request, self._pulls(request))
        if found := re.fullmatch(r"/pulls/(\d+)", rest):
            return _get_or_patch(self.pulls.get(int(found.group(1))), method, body)
        if found := re.fullmatch(r"/pulls/(\d+)/requested_reviewers", rest):
            pull = self.pulls[int(found.group(1))]
            pull["requested_reviewers"] += [{"login": name} for name in body.get("reviewers", [])]
            pull["requested_teams"] += [{"slug": slug} for slug in body.get("team_reviewers", [])]
            return json_reply(201, pull)
        if found := re.fullmatch(r"/issues/(\d+)/(labels|assignees|comments)", rest):
            return self._on_issue(int(found.group(1)), found.group(2), request, body)
        if rest == "/issues":
            if method == "POST":
                return self._create("issue", self._new_issue(body))
            state = _one(request, "state") or "open"
            items = [
                *(i for i in self.issues.values() if state in ("all", i["state"])),
                *(
                    {**p, "pull_request": {"url": p["url"]}}
                    for p in self.pulls.values()
                    if state in ("all", p["state"])
                ),
            ]
            items.sort(key=lambda item: item["number"], reverse=True)
            return self._page(request, items)
        if found := re.fullmatch(r"/issues/(\d+)", rest):
            return _get_or_patch(self.issues.get(int(found.group(1))), method, body)
        return message(404, "Not Found")

    def _app_token(self, request: Recorded, installation: int) -> Reply:
        """A new installation token for a valid app JWT; it replaces the accepted token."""
        jwt = request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.app is None or request.method != "POST" or not _valid_jwt(jwt, self.app):
            return message(401, "A JSON web token could not be decoded")
        if installation != self.app[1]:
            return message(404, "Not Found")
        self.token = "ghs_" + secrets.token_hex(16)
        self.issued.append(self.token)
        expires = datetime.now(UTC) + self.token_lifetime
        return json_reply(
            201,
            {
                "token": self.token,
                "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "permissions": {"pull_requests": "write", "issues": "write"},
            },
        )

    def _create(self, kind: str, document: dict[str, Any]) -> Reply:
        if self.on_create is not None:
            replaced = self.on_create(kind, document)
            if replaced is not None:
                return replaced
        return json_reply(201, document)

    def _number(self) -> int:
        number = self._next_number
        self._next_number += 1
        return number

    def _new_pull(self, body: dict[str, Any]) -> dict[str, Any]:
        number = self._number()
        pull = {
            "number": number,
            "url": f"{self.url}/repos/{self.repository}/pulls/{number}",
            "html_url": self.html(f"pull/{number}"),
            "state": "open",
            "title": body["title"],
            "body": body.get("body"),
            "draft": bool(body.get("draft", False)),
            "head": {
                "ref": body["head"],
                "label": f"{self.owner}:{body['head']}",
                "sha": f"{number:040x}",
            },
            "base": {"ref": body["base"]},
            "merged": False,
            "merged_at": None,
            "labels": [],
            "assignees": [],
            "requested_reviewers": [],
            "requested_teams": [],
        }
        self.pulls[number] = pull
        return pull

    def _new_issue(self, body: dict[str, Any]) -> dict[str, Any]:
        number = self._number()
        issue = {
            "number": number,
            "html_url": self.html(f"issues/{number}"),
            "state": "open",
            "title": body["title"],
            "body": body.get("body"),
            "labels": [{"name": name} for name in body.get("labels", [])],
            "assignees": [],
        }
        self.issues[number] = issue
        return issue

    def _pulls(self, request: Recorded) -> list[dict[str, Any]]:
        state = _one(request, "state") or "open"
        head = _one(request, "head")
        return [
            pull
            for pull in sorted(self.pulls.values(), key=lambda p: p["number"], reverse=True)
            if state in ("all", pull["state"]) and (head is None or pull["head"]["label"] == head)
        ]

    def _on_issue(self, number: int, what: str, request: Recorded, body: dict[str, Any]) -> Reply:
        target = self.issues.get(number) or self.pulls.get(number)
        if target is None:
            return message(404, "Not Found")
        if what == "labels":
            target["labels"] += [{"name": name} for name in body["labels"]]
            return json_reply(200, target["labels"])
        if what == "assignees":
            target["assignees"] += [{"login": name} for name in body["assignees"]]
            return json_reply(201, target)
        thread = self.comments.setdefault(number, [])
        if request.method == "GET":
            return self._page(request, thread)
        comment = {
            "id": self._next_comment,
            "html_url": self.html(f"issues/{number}#c{self._next_comment}"),
            "body": body["body"],
        }
        self._next_comment += 1
        thread.append(comment)
        return self._create("comment", comment)

    def _page(self, request: Recorded, items: list[dict[str, Any]]) -> Reply:
        """One page of a listing, with ``Link: <...>; rel="next"`` when more follow."""
        per_page = min(int(_one(request, "per_page") or 30), self.page_size)
        page = int(_one(request, "page") or 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            query = {k: v[0] for k, v in request.query.items()}
            query.update(page=str(page + 1), per_page=str(per_page))
            headers["Link"] = f'<{self.url}{request.path}?{urlencode(query)}>; rel="next"'
        return Reply(200, json.dumps(chunk).encode(), "application/json", headers)


def _get_or_patch(item: dict[str, Any] | None, method: str, body: dict[str, Any]) -> Reply:
    """A pull request's or issue's GET, or PATCH of its title, body and state."""
    if item is None:
        return message(404, "Not Found")
    if method == "PATCH":
        item.update({k: body[k] for k in ("title", "body", "state") if k in body})
    return json_reply(200, item)


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _valid_jwt(jwt: str, app: tuple[str, int, rsa.RSAPublicKey]) -> bool:
    """An RS256 JWT signed by the app's key, issued by the app id, not expired, at most
    ten minutes long (GitHub's rules)."""
    try:
        header, payload, signature = jwt.split(".")
        app[2].verify(
            _unb64(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
        )
        claims = json.loads(_unb64(payload))
        algorithm = json.loads(_unb64(header))["alg"]
    except (ValueError, KeyError, InvalidSignature):
        return False
    now = time.time()
    return bool(
        algorithm == "RS256"
        and claims.get("iss") == app[0]
        and claims["iat"] <= now < claims["exp"]
        and claims["exp"] - claims["iat"] <= 600
    )


def _one(request: Recorded, name: str) -> str | None:
    values = request.query.get(name)
    return values[0] if values else None
