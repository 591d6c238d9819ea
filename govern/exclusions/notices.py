"""What the pending-relaxations issue and the digest list: values the store builds.

:func:`govern.store.notices.overview` fills them; :mod:`govern.notify.templates` and
:mod:`govern.notify.pending` render them (notify/ reads no store row itself). They live
here, below both, so that neither imports the other for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import State


@dataclass(frozen=True, slots=True)
class Notice:
    """One exclusion as the pending issue and the digest list it."""

    ref: ExclusionRef
    state: State
    reason: str | None
    links: tuple[str, ...]
    review_by: date | None = None
    version: str | None = None  # the verified candidate (relaxable ones)
    new: str | None = None  # the line relaxed
    run_url: str | None = None  # the first passed verification run


@dataclass(frozen=True, slots=True)
class Overview:
    """A repository's open exclusions by what they wait for."""

    repository: str
    relaxable: tuple[Notice, ...]
    overdue: tuple[Notice, ...]
    held: tuple[Notice, ...]

    @property
    def actionable(self) -> bool:
        """Whether anything waits for a person (relaxable or overdue ones)."""
        return bool(self.relaxable or self.overdue)
