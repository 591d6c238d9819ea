"""Values the tracking workflow and the sync share (no database code)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Provenance:
    """When and where a change happened: a commit (with its pull request) or just a time."""

    at: datetime
    commit: str | None = None
    pull_request: int | None = None
    author: str | None = None


@dataclass(slots=True)
class SyncCounts:
    """What one sync did, by event kind."""

    added: int = 0
    restored: int = 0
    changed: int = 0
    annotation_changed: int = 0
    removed: int = 0
    unchanged: int = 0
    sources: int = 0

    @property
    def events(self) -> int:
        """Events written."""
        return self.added + self.restored + self.changed + self.annotation_changed + self.removed

    def as_dict(self) -> dict[str, int]:
        """The counts, for JSON output."""
        return {
            "sources": self.sources,
            "added": self.added,
            "restored": self.restored,
            "changed": self.changed,
            "annotation_changed": self.annotation_changed,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "events": self.events,
        }
