"""What one ``govern propose`` run did: each exclusion's :class:`Outcome` and the run's
:class:`ProposeResult` (the ``govern.propose/1`` document), without the proposing stack
(a dry run with nothing verified answers from here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import RunState, Via

SCHEMA = "govern.propose/1"


@dataclass(slots=True)
class Outcome:
    """One exclusion's proposal, as ``--format json`` prints it (docs/contracts.md);
    ``old`` is the ref's requirement as written."""

    ref: ExclusionRef
    new: str | None
    via: Via
    branch: str | None = None
    url: str | None = None
    state: RunState = RunState.SENT
    number: int | None = None
    message: str | None = None
    diff: str | None = None
    body: str | None = None
    tip: str | None = None  # what to do about a failure (the error's tip)
    sent_now: bool = False  # this run sent something (a push, a request); not a re-read

    def as_dict(self) -> dict[str, Any]:
        """The contract's fields, then govern's additions."""
        out: dict[str, Any] = {
            "exclusion": self.ref.key,
            "package": self.ref.package,
            "source": self.ref.source,
            "line": self.ref.line,
            "old": self.ref.requirement,
            "new": self.new,
            "via": self.via,
            "branch": self.branch,
            "url": self.url,
            "state": self.state,
            "number": self.number,
            "message": self.message,
            "sent_now": self.sent_now,
        }
        if self.diff is not None:
            out["diff"] = self.diff
        if self.tip is not None:
            out["tip"] = self.tip
        return out


@dataclass(slots=True)
class ProposeResult:
    """Every proposal of one run."""

    proposals: list[Outcome] = field(default_factory=list)
    closed: list[dict[str, Any]] = field(default_factory=list)  # merged or declined this run

    @property
    def failed(self) -> bool:
        """An action failed, or a lock could not be regenerated (both tried again at the
        next run); standing aside for another run that is
        sending it, or leaving alone a branch with other people's commits, is no failure."""
        return any(p.state in (RunState.FAILED, RunState.HELD) for p in self.proposals)

    def as_dict(self) -> dict[str, Any]:
        """The ``govern.propose/1`` document."""
        return {
            "schema": SCHEMA,
            "proposals": [p.as_dict() for p in self.proposals],
            "closed": self.closed,
        }
