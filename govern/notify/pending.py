"""The repository's "Pending relaxations" issue, kept up to date in place; digest periods.

Notes: docs/internals.md#notify.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from govern.errors import ForgeAuthError, ForgeError
from govern.exclusions.notices import Overview
from govern.forge.base import Forge, Issue, Marker, Seal, with_markers
from govern.notify.base import repository_key
from govern.notify.issue import from_forge
from govern.notify.templates import pending_issue

__all__ = ["TrackingIssue", "find", "period", "publish", "render"]


def period(now: datetime, every: str) -> str | None:
    """The digest period ``now`` falls in: ``2026-06-02`` (daily), ``2026-W23`` (weekly,
    ISO 8601 weeks), None when digests are off."""
    if every == "daily":
        return now.date().isoformat()
    if every == "weekly":
        year, week, _day = now.isocalendar()
        return f"{year}-W{week:02d}"
    return None


@dataclass(frozen=True, slots=True)
class TrackingIssue:
    """The issue as it should read: title, body (ending in its marker), and their hash."""

    repository: str
    title: str
    body: str
    marker: Marker

    @property
    def text_hash(self) -> str:
        """A short hash of the title and body: what changed means a new hash (stored as the
        outbox result's ``digest``, a name kept for the rows already written)."""
        raw = f"{self.title}\0{self.body}".encode()
        return hashlib.sha256(raw).hexdigest()[:16]


def render(overview: Overview, seal: Seal) -> TrackingIssue:
    """The tracking issue of ``overview``'s repository (its pending relaxations), its marker
    signed by ``seal``."""
    title, body = pending_issue(overview)
    mark = seal.marker("pending", repository_key(overview.repository))
    return TrackingIssue(overview.repository, title, with_markers(body, mark), mark)


def _answer(issue: Issue, wanted: TrackingIssue, action: str) -> dict[str, Any]:
    return {"number": issue.number, "url": issue.url, "digest": wanted.text_hash, "action": action}


def _shows(issue: Issue, wanted: TrackingIssue) -> bool:
    return issue.title == wanted.title and issue.body.strip() == wanted.body.strip()


async def find(forge: Forge, wanted: TrackingIssue) -> dict[str, Any] | None:
    """The issue, if it already reads as ``wanted`` (a run that crashed after editing it)."""
    try:
        found = await forge.find_issue(wanted.marker)
    except ForgeError as exc:
        raise from_forge(exc, "pending issue") from exc
    if found is None or not _shows(found, wanted):
        return None
    return _answer(found, wanted, "found")


async def publish(forge: Forge, wanted: TrackingIssue, *, number: int | None) -> dict[str, Any]:
    """Open the issue, or edit it (``number``: where it was last sent) when it differs.

    An issue that is gone (deleted, transferred: 404) is looked for by its marker, then
    opened again.
    """
    try:
        if number is not None:
            try:
                updated = await forge.update_issue(number, title=wanted.title, body=wanted.body)
            except ForgeError as exc:
                if isinstance(exc, ForgeAuthError) or exc.status not in (404, 410):
                    raise
            else:
                return _answer(updated, wanted, "updated")
        existing = await forge.find_issue(wanted.marker)
        if existing is None:
            opened = await forge.open_issue(title=wanted.title, body=wanted.body)
            return _answer(opened, wanted, "opened")
        if _shows(existing, wanted):
            return _answer(existing, wanted, "unchanged")
        updated = await forge.update_issue(existing.number, title=wanted.title, body=wanted.body)
        return _answer(updated, wanted, "updated")
    except ForgeError as exc:
        raise from_forge(exc, "pending issue") from exc
