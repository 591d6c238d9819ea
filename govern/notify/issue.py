"""Reminders as a comment on the exclusion's linked issue, through the repository's forge.

Notes: docs/internals.md#notify.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from govern.errors import (
    ForgeError,
    NotifyAuthError,
    NotifyError,
    NotifyUnavailable,
    RemoteAuthError,
    RemoteError,
    RemoteRateLimited,
    RemoteUnavailable,
)
from govern.forge.base import Forge, IssueRef, Marker, with_markers
from govern.notify.base import Message, Skipped

__all__ = ["IssueNotifier", "from_forge", "linked_issue"]

_GITLAB = re.compile(r"/(?P<repo>[^/]+(?:/[^/]+)+?)/-/issues/(?P<number>\d+)/?")
_GITHUB = re.compile(r"/(?P<repo>[^/]+/[^/]+)/issues/(?P<number>\d+)/?")
_SHORT = re.compile(r"#(?P<number>\d+)")


def linked_issue(link: str, *, host: str, repository: str) -> IssueRef | None:
    """The issue ``link`` names on ``host``, or None: an issue URL of GitHub's or GitLab's
    shape (a fragment, ``#issuecomment-1``, is ignored), or ``#N`` for ``repository``'s own."""
    text = link.strip()
    if found := _SHORT.fullmatch(text):
        return IssueRef(repository, int(found["number"]))
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or (parts.hostname or "").lower() != host.lower():
        return None
    found = _GITLAB.fullmatch(parts.path) or _GITHUB.fullmatch(parts.path)
    return IssueRef(found["repo"], int(found["number"])) if found else None


def _namespace(repository: str) -> str:
    """``owner`` of ``owner/repo``, ``group/sub`` of ``group/sub/project``."""
    return repository.rsplit("/", 1)[0].lower()


def from_forge(exc: RemoteError, what: str = "issue comment") -> NotifyError:
    """The forge's error as the notifier's, of the same kind (a refused token, a transient
    failure, a rate limit: retried like one); its message is scrubbed by the forge."""
    cls: type[NotifyError] = NotifyError
    if isinstance(exc, RemoteAuthError):
        cls = NotifyAuthError
    elif isinstance(exc, RemoteUnavailable | RemoteRateLimited):
        cls = NotifyUnavailable
    return cls(f"{what}: {exc.message}", tip=exc.tip, status=exc.status)


class IssueNotifier:
    """Comments on the linked issue through ``forge`` (None: the repository has none
    configured, and ``why_not`` says so), for links on ``host``."""

    name = "issue"

    def __init__(
        self, forge: Forge | None, *, host: str, why_not: str = "no forge is configured"
    ) -> None:
        self.forge = forge
        self.host = host.lower()
        self.why_not = why_not

    def issue_for(self, message: Message) -> IssueRef | Skipped:
        """The first linked issue in the forge's namespace, or why there is none."""
        if self.forge is None:
            return Skipped(self.why_not)
        own = self.forge.repository
        for link in message.links:
            ref = linked_issue(link, host=self.host, repository=own)
            # Only this repository's own namespace: an upstream tracker (cupy/cupy#9963) is
            # where the bug was reported, not where this repository's people talk.
            if ref is not None and _namespace(ref.repository) == _namespace(own):
                return ref
        return Skipped(f"no linked issue under {_namespace(own)}/ on {self.host}")

    def target(self, message: Message) -> str | Skipped:
        """``owner/repo#123``, or why there is no issue to comment on."""
        ref = self.issue_for(message)
        return ref if isinstance(ref, Skipped) else str(ref)

    @staticmethod
    def marker_of(message: Message) -> Marker:
        """The signed marker the comment ends with; a message without one is refused (it
        could not be found again after a crash, and would be posted twice)."""
        if message.marker is None:
            raise NotifyError("issue comment: the message carries no marker; nothing was sent")
        return message.marker

    def _issue(self, message: Message) -> tuple[Forge, IssueRef]:
        ref = self.issue_for(message)
        if isinstance(ref, Skipped):
            raise NotifyError(f"issue comment: {ref.reason}")
        assert self.forge is not None
        return self.forge, ref

    async def send(self, message: Message) -> dict[str, Any]:
        """Comment on the issue: the message's markdown, then its marker."""
        forge, ref = self._issue(message)
        body = with_markers(message.markdown, self.marker_of(message))
        try:
            made = await forge.comment(ref, body)
        except ForgeError as exc:
            raise from_forge(exc) from exc
        return {"issue": str(ref), "id": made.id, "url": made.url}

    async def find(self, message: Message) -> dict[str, Any] | None:
        """The comment holding the message's marker, as :meth:`send` answers; or None."""
        forge, ref = self._issue(message)
        try:
            found = await forge.find_comment(ref, self.marker_of(message))
        except ForgeError as exc:
            raise from_forge(exc) from exc
        if found is None:
            return None
        return {"issue": str(ref), "id": found.id, "url": found.url, "found": True}
