"""What the store's read side answers: exclusions, threads, candidates, proposals and pages as
``govern status``, ``history``, ``dashboard``, the pages and the API show them.

Plain frozen dataclasses, not models: a command that only reads imports no validation
library (bench/cli_latency.py). :func:`as_json` is their JSON form, the one the contracts
name (docs/contracts.md): every field, a moment as ``datetime.isoformat()``, a member of a
closed set as its string.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import Enum
from typing import Any

from govern.exclusions.states import (
    CandidateStatus,
    Conclusion,
    EventKind,
    Kind,
    OutboxAction,
    OutboxState,
    ProposalKind,
    ProposalState,
    RunKind,
    State,
    SubKind,
    Via,
)

__all__ = [
    "CandidatePublic",
    "ChangePublic",
    "DebtDay",
    "DebtPublic",
    "DeliveryPublic",
    "EventPublic",
    "EvidencePublic",
    "ExclusionDetail",
    "ExclusionPage",
    "ExclusionPublic",
    "PendingPage",
    "PendingPublic",
    "ProposalPublic",
    "ReviewPublic",
    "RunPublic",
    "StoredRelaxation",
    "ThreadPublic",
    "VerificationPublic",
    "as_json",
]


def as_json(value: Any) -> Any:
    """``value`` (a view, or lists and dicts of them) as JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        shown = {f.name: as_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
        for name in getattr(value, "computed", ()):
            shown[name] = as_json(getattr(value, name))
        return shown
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [as_json(item) for item in value]
    if isinstance(value, dict):
        return {str(key): as_json(item) for key, item in value.items()}
    return value


@dataclass(frozen=True, kw_only=True, slots=True)
class ExclusionPublic:
    """An exclusion with its state (``overdue`` once its review date passed), current
    annotation, age and owner."""

    package: str  # canonical (PEP 503)
    clause: str  # normalized: "!=14.1.0"
    requirement: str  # the line as written
    marker: str | None
    kind: Kind
    sub_kind: SubKind
    line: int
    state: State
    id: str  # the audit's stable key
    repository: str
    source: str
    first_seen: datetime
    removed: datetime | None
    age_days: int
    reason: str | None
    links: list[str]
    owner: str | None
    review_by: date | None
    commit: str | None  # the commit that introduced it
    pull_request: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class EventPublic:
    """One event of a thread, with the exclusion it belongs to and the reason as it stood
    right after it."""

    kind: EventKind
    commit: str | None
    pull_request: int | None
    author: str | None
    detail: dict[str, Any]
    at: datetime
    exclusion: str  # its id
    source: str
    package: str
    clause: str
    reason: str | None
    links: list[str]


@dataclass(frozen=True, kw_only=True, slots=True)
class ThreadPublic:
    """Exclusions that belong together (a clause and its successors, or a shared link)."""

    exclusions: list[ExclusionPublic]
    links: list[str]
    events: list[EventPublic]


@dataclass(frozen=True, slots=True)
class LockHeld:
    """One version of one package a lock held, from ``since`` to ``until`` (None: it still
    does): govern/locks/history.py finds them, the ``lock_pin`` table keeps them."""

    package: str
    version: str
    since: datetime
    since_commit: str
    until: datetime | None = None
    until_commit: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class LockHeldPublic(LockHeld):
    """What a lock of a tracked repository held, and when (``govern history``)."""

    repository: str
    path: str

    @property
    def said(self) -> str:
        """``uv.lock held cupy-demo 14.1.0 from 2026-05-23 to 2026-08-10``."""
        until = f"to {self.until.date()}" if self.until is not None else "(still held)"
        return f"{self.path} held {self.package} {self.version} from {self.since.date()} {until}"


@dataclass(frozen=True, kw_only=True, slots=True)
class RunPublic:
    """What a CI run of a candidate said: where it ran, how it ended and why."""

    provider: str
    kind: RunKind = RunKind.CANDIDATE
    version: str | None = None  # the version tried when not the candidate's
    conclusion: Conclusion | None = None
    run_url: str | None = None
    detail: str | None = None  # why, in a line


@dataclass(frozen=True, kw_only=True, slots=True)
class VerificationPublic(RunPublic):
    """One verification of a candidate, with its log excerpt."""

    attempt: int
    installed: str | None
    started: datetime
    finished: datetime | None
    log: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class EvidencePublic(RunPublic):
    """The latest verification of a candidate."""

    profile: str
    installed: str | None
    finished: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class CandidatePublic:
    """A release considered for the exclusion on a profile, with its verifications."""

    profile: str
    role: str  # newest, first
    eligible: bool
    reason: str | None  # why not, when not
    status: CandidateStatus
    version: str
    found: datetime
    verifications: list[VerificationPublic]


@dataclass(frozen=True, kw_only=True, slots=True)
class DeliveryPublic:
    """One outgoing action of a proposal as the outbox holds it: failed sends are retried
    with backoff (``next_attempt``), ``dead`` ones wait for a person, and ``unconfirmed``
    ones (a webhook or an email whose answer was lost) may not have arrived."""

    action: OutboxAction
    state: OutboxState
    attempts: int
    error: str | None  # never a token
    next_attempt: datetime | None
    sent: datetime | None
    note: str | None = None  # what govern decided instead (a branch left alone, renamed)


@dataclass(frozen=True, kw_only=True, slots=True)
class ProposalPublic:
    """A proposal made for an exclusion, with its change request and its deliveries."""

    kind: ProposalKind
    state: ProposalState = ProposalState.OPEN
    new_clause: str | None = None
    url: str | None = None
    created: datetime
    version: str | None = None
    number: int | None = None
    branch: str | None = None
    via: Via | None = None
    deliveries: list[DeliveryPublic] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredRelaxation:
    """A candidate's narrow relaxation as stored (``candidate.relaxation``, its JSON form):
    the specifiers and line it would write, or why none can be (``refused``); ``note`` is
    what the dashboard shows beside it."""

    specifier: str | None  # "!=14.1.0"; None when refused
    requirement: str | None  # the line rewritten; None when refused
    strategy: str
    note: str
    refused: str | None = None

    @classmethod
    def read(cls, value: dict[str, Any] | None) -> StoredRelaxation | None:
        """The relaxation a candidate row holds (None: not computed yet)."""
        if not value:
            return None
        return cls(
            specifier=value.get("specifier"),
            requirement=value.get("requirement"),
            strategy=str(value.get("strategy", "")),
            note=str(value.get("note", "")),
            refused=value.get("refused"),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ChangePublic:
    """The line before and after the narrow relaxation (``after`` null: none computed)."""

    before: str
    after: str | None
    note: str


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingPublic:
    """An exclusion that could be relaxed, with its candidate and evidence."""

    exclusion: ExclusionPublic
    candidate: str  # the version
    profiles: list[str]
    verified: bool
    evidence: EvidencePublic | None
    change: ChangePublic
    proposal_url: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ReviewPublic:
    """A proposal that waits on a person: its change request or branch, since when, what it
    proposes and the evidence it carries."""

    exclusion: ExclusionPublic
    kind: ProposalKind
    via: Via | None
    branch: str | None
    url: str | None
    number: int | None
    candidate: str | None  # the version proposed
    change: ChangePublic
    opened: datetime
    age_days: int
    evidence: EvidencePublic | None


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingPage:
    """The pending relaxations (the front page), verified first, and the proposals that
    wait on a person (oldest first)."""

    items: list[PendingPublic]
    total: int
    awaiting_review: list[ReviewPublic] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True, slots=True)
class ExclusionPage:
    """One page of exclusions."""

    computed = ("pages",)  # in the JSON form too

    items: list[ExclusionPublic]
    total: int
    page: int
    per_page: int

    @property
    def pages(self) -> int:
        """How many pages there are (at least one)."""
        return max(1, -(-self.total // self.per_page))


@dataclass(frozen=True, kw_only=True, slots=True)
class ExclusionDetail:
    """One exclusion: itself, its thread's events, candidates and proposals."""

    exclusion: ExclusionPublic
    thread: list[EventPublic]  # oldest first
    candidates: list[CandidatePublic]
    proposals: list[ProposalPublic]


@dataclass(frozen=True, kw_only=True, slots=True)
class DebtDay:
    """Open exclusions on a day, and their median age."""

    day: date
    count: int
    median_age_days: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class DebtPublic:
    """Held-back debt over time, and the ages of the exclusions open now."""

    series: list[DebtDay]
    ages_days: list[float]
