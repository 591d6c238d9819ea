"""The forges' webhook deliveries about a change request ending, read as the vendors shape
them, and whether one is about a given proposal's change request.

Notes: docs/internals.md#forge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from govern.forge.base import ChangeState

__all__ = ["ChangeEnded", "Hosting", "merge_request_ended", "pull_request_ended"]

_MAX_FIELD = 1024  # no branch, repository path or address govern writes is longer


class Hosting(StrEnum):
    """The forges that send change request webhooks (a proposal's ``via``)."""

    GITHUB = "github"
    GITLAB = "gitlab"


@dataclass(frozen=True, slots=True)
class ChangeEnded:
    """A change request merged or closed, as a forge's webhook told it."""

    hosting: Hosting
    repository: str  # GitHub's owner/repo; GitLab's project page (web_url), no trailing /
    branch: str
    number: int  # GitHub's pull request number, GitLab's merge request iid
    state: ChangeState  # MERGED or CLOSED

    def names(self, *, via: str | None, url: str | None) -> bool:
        """Whether this is the change request a proposal opened: same forge and the same
        repository as the proposal's change request page (``url``), compared without case
        as both forges do. A proposal without a page is never matched (the forge is asked
        on the next run instead)."""
        if via is not None and via != self.hosting:
            return False
        if not url:
            return False
        if self.hosting is Hosting.GITHUB:
            return _github_repository(url, self.number) == self.repository.casefold()
        page = f"{self.repository}/-/merge_requests/{self.number}"
        return url.rstrip("/").casefold() == page.casefold()


def _text(value: Any) -> str | None:
    """A non-empty string field of bounded length, else None."""
    if isinstance(value, str) and 0 < len(value) <= _MAX_FIELD:
        return value
    return None


def _number(value: Any) -> int | None:
    """A positive integer field (JSON's true is not one), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _github_repository(url: str, number: int) -> str | None:
    """``owner/repo`` (case folded) of a pull request's page ``.../owner/repo/pull/N``."""
    parts = [part for part in urlsplit(url).path.split("/") if part]
    if len(parts) < 4 or parts[-2] != "pull" or parts[-1] != str(number):
        return None
    return f"{parts[-4]}/{parts[-3]}".casefold()


def pull_request_ended(payload: Mapping[str, Any]) -> ChangeEnded | None:
    """A GitHub ``pull_request`` ``closed`` delivery; None for any other or a malformed one."""
    pull = payload.get("pull_request")
    repository = payload.get("repository")
    if payload.get("action") != "closed" or not isinstance(pull, Mapping):
        return None
    if not isinstance(repository, Mapping):
        return None
    head = pull.get("head")
    branch = _text(head.get("ref")) if isinstance(head, Mapping) else None
    number = _number(pull.get("number"))
    full_name = _text(repository.get("full_name"))
    # A full name is exactly owner/repo: anything else could match a page's path partly.
    if branch is None or number is None or full_name is None or full_name.count("/") != 1:
        return None
    if any(not part for part in full_name.split("/")):
        return None
    merged = pull.get("merged") is True
    state = ChangeState.MERGED if merged else ChangeState.CLOSED
    return ChangeEnded(Hosting.GITHUB, full_name, branch, number, state)


def merge_request_ended(payload: Mapping[str, Any]) -> ChangeEnded | None:
    """A GitLab merge request delivery whose action is ``merge`` or ``close``; None for
    any other or a malformed one."""
    attributes = payload.get("object_attributes")
    project = payload.get("project")
    if payload.get("object_kind") != "merge_request" or not isinstance(attributes, Mapping):
        return None
    action = attributes.get("action")
    if action not in ("merge", "close") or not isinstance(project, Mapping):
        return None
    branch = _text(attributes.get("source_branch"))
    number = _number(attributes.get("iid"))
    page = _text(project.get("web_url"))
    path = _text(project.get("path_with_namespace"))
    if branch is None or number is None or page is None or path is None:
        return None
    page = page.rstrip("/")
    # The project's page ends with its path: a delivery whose two disagree names no project.
    if urlsplit(page).scheme not in ("http", "https") or not page.endswith(f"/{path}"):
        return None
    state = ChangeState.MERGED if action == "merge" else ChangeState.CLOSED
    return ChangeEnded(Hosting.GITLAB, page, branch, number, state)
