"""The store's tables: what govern remembers between runs.

Notes: docs/internals.md#store, docs/design.md#vocabulary.
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    Index,
    String,
    Text,
    UniqueConstraint,
    event,
)
from sqlalchemy.orm import Session as OrmSession
from sqlmodel import Field, SQLModel

from govern.exclusions.model import Kind, SubKind
from govern.exclusions.states import (
    CandidateStatus,
    Conclusion,
    EventKind,
    OutboxAction,
    OutboxState,
    ProposalKind,
    ProposalState,
    RunKind,
    State,
    Via,
)
from govern.store.columns import ClosedSet, UTCDateTime
from govern.store.columns import utcnow as utcnow  # re-exported: the models write with it
from govern.store.location import as_utc as as_utc  # re-exported: the models read with it

# Named constraints, so later migrations can alter them (SQLite's batch mode needs names).
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _closed(
    members: type[StrEnum],
    length: int,
    *,
    default: Any = ...,
    nullable: bool = False,
    index: bool = False,
) -> Any:
    """A column holding a member of ``members`` (:class:`ClosedSet`)."""
    column: Column[Any] = Column(ClosedSet(members, length), nullable=nullable, index=index)
    if default is ...:
        return Field(sa_column=column)
    return Field(default=default, sa_column=column)


def _when(*, nullable: bool = False, index: bool = False) -> Any:
    return Field(
        default=None,
        sa_column=Column(UTCDateTime(), nullable=nullable, index=index),
    )


class Repository(SQLModel, table=True):
    """A repository whose sources are tracked, by its stable name (git origin or configured)."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, max_length=512)  # github.com/vllm-project/vllm, or a path
    root: str = Field(sa_column=Column(Text, nullable=False))  # where it was last tracked from
    created_at: datetime = _when()
    synced_at: datetime | None = _when(nullable=True)
    synced_commit: str | None = Field(default=None, max_length=64)
    # The tree hash of the last sync (service/tree_hash.py): everything it read (files,
    # configuration, govern's version); when nothing of it changed, a re-sync has nothing
    # to do. Stored in the column ``digest``, its name since the column was added.
    synced_tree_hash: str | None = Field(
        default=None, sa_column=Column("digest", String(64), key="synced_tree_hash")
    )


class StoredSource(SQLModel, table=True):
    """A requirements file or pyproject.toml of a repository."""

    __tablename__ = "source"

    __table_args__ = (UniqueConstraint("repository_id", "path"),)

    id: int | None = Field(default=None, primary_key=True)
    repository_id: int = Field(foreign_key="repository.id", index=True)
    path: str = Field(max_length=1024)  # relative to the repository root, POSIX
    format: str = Field(max_length=32)
    present: bool = True
    first_seen_at: datetime = _when()
    last_seen_at: datetime = _when()
    # The newest commit of this file replayed into the store (govern track --history);
    # later syncs replay the commits after it, so no step of the thread is skipped.
    commit: str | None = Field(default=None, max_length=64)


class LockPin(SQLModel, table=True):
    """A version a lock held, and when (``govern track --history``): from the commit that
    wrote it to the one that took it out (``until`` None: the lock still holds it)."""

    __tablename__ = "lock_pin"

    __table_args__ = (Index("ix_lock_pin_package", "package", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    source_id: int = Field(foreign_key="source.id", index=True)
    package: str = Field(max_length=256)  # canonical (PEP 503)
    version: str = Field(max_length=128)
    since: datetime = _when()
    since_commit: str = Field(max_length=64)
    until: datetime | None = _when(nullable=True)
    until_commit: str | None = Field(default=None, max_length=64)


class StoredAnnotation(SQLModel, table=True):
    """One version of what is known about an exclusion (reason, links, owner, ...).

    A changed reason adds a row and clears ``current`` on the one it replaces.
    """

    __tablename__ = "annotation"

    __table_args__ = (
        Index("ix_annotation_current", "exclusion_id", "current"),
        # The dashboard's overdue reviews (count, and the soonest first): a range of the
        # current ones, covering the join to the exclusion (bench/serve.py).
        Index("ix_annotation_current_review_by", "current", "review_by", "exclusion_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    exclusion_id: int = Field(foreign_key="exclusion.id", index=True)
    current: bool = True
    fingerprint: str = Field(max_length=64)  # sha256 of the fields below
    reason: str | None = Field(default=None, sa_column=Column(Text))
    links: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    bad_versions: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    owner: str | None = Field(default=None, max_length=256)
    review_by: date | None = None
    verify: str | None = Field(default=None, sa_column=Column(Text))
    profiles: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    strategy: str | None = Field(default=None, max_length=32)  # strategy= (None: the default)
    recorded_at: datetime = _when()
    commit: str | None = Field(default=None, max_length=64)


class ExclusionBase(SQLModel):
    """What an exclusion is: the clause, the line it is on, its kind and lifecycle state."""

    package: str = Field(max_length=256)  # canonical (PEP 503)
    clause: str = Field(max_length=256)  # normalized: "!=14.1.0"
    requirement: str = Field(sa_column=Column(Text, nullable=False))  # the line as written
    marker: str | None = Field(default=None, sa_column=Column(Text))
    kind: Kind = _closed(Kind, 16)
    sub_kind: SubKind = _closed(SubKind, 16)
    line: int
    state: State = _closed(State, 16, default=State.HELD, index=True)


class StoredExclusion(ExclusionBase, table=True):
    """One clause that keeps versions out, under its stable key, with its lifecycle state."""

    __tablename__ = "exclusion"

    __table_args__ = (
        UniqueConstraint("repository_id", "key"),
        Index("ix_exclusion_package_state", "package", "state"),
        # The dashboard's open exclusions by state, oldest first (pending, held), and their
        # counts: one ordered range per state, stopped at a page; the counts read only this
        # index. first_seen_at right after state: PostgreSQL takes no order from an index
        # past a column matched by IS NULL (bench/serve.py).
        Index("ix_exclusion_state_open", "state", "first_seen_at", "removed_at", "snoozed_until"),
    )

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(max_length=64)  # the audit's stable id
    repository_id: int = Field(foreign_key="repository.id", index=True)
    source_id: int = Field(foreign_key="source.id", index=True)
    group: str | None = Field(default=None, max_length=256)  # pyproject table
    predecessor_id: int | None = Field(default=None, foreign_key="exclusion.id")
    first_seen_at: datetime = _when()  # when the clause appeared (its commit's date if known)
    removed_at: datetime | None = _when(nullable=True)
    introduced_commit: str | None = Field(default=None, max_length=64)
    introduced_pull_request: int | None = None
    snoozed_until: date | None = None
    # Set from the dashboard (govern serve): an owner over the annotation's, an acknowledgement.
    assigned_owner: str | None = Field(default=None, max_length=256)
    acknowledged_at: datetime | None = _when(nullable=True)


class EventBase(SQLModel):
    """What one step of an exclusion's thread records: its kind, commit, author, details."""

    kind: EventKind = _closed(EventKind, 32)
    commit: str | None = Field(default=None, max_length=64)
    pull_request: int | None = None
    author: str | None = Field(default=None, max_length=256)
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class Event(EventBase, table=True):
    """One step of an exclusion's timeline; rows are only ever added (never updated)."""

    id: int | None = Field(default=None, primary_key=True)
    exclusion_id: int = Field(foreign_key="exclusion.id", index=True)
    at: datetime = _when(index=True)  # when it happened (a commit's date when known)
    recorded_at: datetime = _when()  # when govern learned of it
    related_id: int | None = Field(default=None, foreign_key="exclusion.id")


class StoredRelease(SQLModel, table=True):
    """A release of a package seen on an index."""

    __tablename__ = "release"

    __table_args__ = (UniqueConstraint("package", "version"),)

    id: int | None = Field(default=None, primary_key=True)
    package: str = Field(max_length=256, index=True)
    version: str = Field(max_length=128)  # normalized PEP 440
    uploaded_at: datetime | None = _when(nullable=True)
    yanked: bool = False
    yanked_reason: str | None = Field(default=None, sa_column=Column(Text))
    requires_python: str | None = Field(default=None, max_length=256)
    files: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    first_seen_at: datetime = _when()


class IndexPage(SQLModel, table=True):
    """What the last poll learnt of a project's page: validators for the next request,
    and the last failure (recorded, never a verdict)."""

    __tablename__ = "index_page"
    __table_args__ = (UniqueConstraint("package"),)

    id: int | None = Field(default=None, primary_key=True)
    package: str = Field(max_length=256)  # canonical
    index_url: str = Field(sa_column=Column(Text, nullable=False))  # credentials removed
    etag: str | None = Field(default=None, sa_column=Column(Text))
    last_modified: str | None = Field(default=None, max_length=64)
    last_serial: int | None = None
    # The last 200 or 304 that changed the row: the same answer again writes nothing.
    fetched_at: datetime | None = _when(nullable=True)
    failed_at: datetime | None = _when(nullable=True)
    failure: str | None = Field(default=None, sa_column=Column(Text))
    failures: int = 0  # consecutive
    # What the last judging of this project's exclusions depended on: 32 hex of a hash of
    # the profiles, clauses and known-bad versions, 32 of the page's content (the releases
    # kept); on a 304 or the same content with the same inputs and no cooldown, nothing
    # can have changed and the judging is skipped (service/poll.py).
    judged: str | None = Field(default=None, max_length=64)
    # Until when the last answer is fresh (its Cache-Control max-age, less its Age, at
    # most an hour): a poll before then does not ask again (RFC 9111), unless --refresh.
    fresh_until: datetime | None = _when(nullable=True)


class CandidateBase(SQLModel):
    """A release considered for an exclusion on one profile: eligible or why not, its status."""

    profile: str = Field(default="default", max_length=128)
    role: str = Field(default="newest", max_length=16)  # newest, first
    eligible: bool = True
    reason: str | None = Field(default=None, sa_column=Column(Text))  # why not, when not
    status: CandidateStatus = _closed(CandidateStatus, 16, default=CandidateStatus.FOUND)


class Candidate(CandidateBase, table=True):
    """A release that could replace an exclusion, for one runtime profile, and why (not)."""

    __table_args__ = (UniqueConstraint("exclusion_id", "release_id", "profile"),)

    id: int | None = Field(default=None, primary_key=True)
    exclusion_id: int = Field(foreign_key="exclusion.id", index=True)
    release_id: int = Field(foreign_key="release.id", index=True)
    found_at: datetime = _when()
    # The narrow relaxation that would admit this release (a StoredRelaxation), computed
    # when it can change (govern.store.relaxations); None until then.
    relaxation: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON(none_as_null=True))
    )
    # Runs up to this verification id were taken back (govern verify --forget): they say
    # nothing any more about this candidate.
    forgotten_upto: int | None = None


class VerificationBase(SQLModel):
    """What a CI run of a candidate said: where it ran, how it ended and why."""

    provider: str = Field(max_length=32)
    kind: RunKind = _closed(RunKind, 16, default=RunKind.CANDIDATE)
    # The version this run tried when it is not the candidate's (a control, a reproducer).
    version: str | None = Field(default=None, max_length=128)
    conclusion: Conclusion | None = _closed(Conclusion, 16, default=None, nullable=True)
    run_url: str | None = Field(default=None, sa_column=Column(Text))
    detail: str | None = Field(default=None, sa_column=Column(Text))  # why, in a line


class Verification(VerificationBase, table=True):
    """One CI run of one candidate on one profile, with its evidence."""

    id: int | None = Field(default=None, primary_key=True)
    candidate_id: int = Field(foreign_key="candidate.id", index=True)
    profile: str = Field(max_length=128)
    run_id: str | None = Field(default=None, max_length=256)
    attempt: int = 1
    started_at: datetime = _when()
    finished_at: datetime | None = _when(nullable=True)
    installed_version: str | None = Field(default=None, max_length=128)
    log_excerpt: str | None = Field(default=None, sa_column=Column(Text))
    check_key: str | None = Field(default=None, max_length=64)  # a reproducer's, hashed


class ProposalBase(SQLModel):
    """What govern proposed for an exclusion: how, its state, the new clause, where."""

    kind: ProposalKind = _closed(ProposalKind, 32)
    state: ProposalState = _closed(ProposalState, 16, default=ProposalState.OPEN)
    new_clause: str | None = Field(default=None, max_length=256)
    url: str | None = Field(default=None, sa_column=Column(Text))


class Proposal(ProposalBase, table=True):
    """What govern did about a verified candidate, recorded so it is never sent twice."""

    __table_args__ = (UniqueConstraint("dedupe_key"),)

    id: int | None = Field(default=None, primary_key=True)
    exclusion_id: int = Field(foreign_key="exclusion.id", index=True)
    candidate_id: int | None = Field(default=None, foreign_key="candidate.id")
    dedupe_key: str = Field(max_length=128)
    created_at: datetime = _when()
    via: Via | None = _closed(Via, 16, default=None, nullable=True)  # git, github, gitlab, remind
    version: str | None = Field(default=None, max_length=128)  # the candidate proposed
    branch: str | None = Field(default=None, max_length=256)
    number: int | None = None  # the change request's number (GitHub) or iid (GitLab)
    old: str | None = Field(default=None, sa_column=Column(Text))  # the line before
    new: str | None = Field(default=None, sa_column=Column(Text))  # and after
    updated_at: datetime | None = _when(nullable=True)


class Outbox(SQLModel, table=True):
    """One outgoing action (push, change request, comment, message, mail), written before
    it is sent and marked when confirmed; ``dedupe_key`` makes a second send impossible."""

    __table_args__ = (UniqueConstraint("dedupe_key"), Index("ix_outbox_state", "state"))

    id: int | None = Field(default=None, primary_key=True)
    dedupe_key: str = Field(max_length=256)
    action: OutboxAction = _closed(OutboxAction, 32)
    proposal_id: int | None = Field(default=None, foreign_key="proposal.id", index=True)
    state: OutboxState = _closed(OutboxState, 16, default=OutboxState.PENDING)
    attempts: int = 0
    next_attempt_at: datetime | None = _when(nullable=True)
    last_error: str | None = Field(default=None, sa_column=Column(Text))  # no token, ever
    result: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = _when()
    sent_at: datetime | None = _when(nullable=True)


class StoreSecret(SQLModel, table=True):
    """A secret of this store, made once (``name``: what it is for, e.g. ``marker``);
    never shown, logged or returned by the API (:mod:`govern.store.secrets`)."""

    __tablename__ = "store_secret"

    name: str = Field(primary_key=True, max_length=32)
    value: str = Field(max_length=128)  # hex
    created_at: datetime = _when()


class PollRun(SQLModel, table=True):
    """One ``govern poll``: when, how long, what it found (for /metrics and the dashboard)."""

    __tablename__ = "poll_run"

    id: int | None = Field(default=None, primary_key=True)
    started_at: datetime = _when(index=True)
    finished_at: datetime = _when()
    duration_seconds: float = 0.0
    projects: int = 0
    fetched: int = 0
    not_modified: int = 0
    failed: int = 0
    candidates_found: int = 0


# -- what the store shows (status, history, the dashboard, the API) ------------------------


class AppendOnly(Exception):
    """An attempt to change or delete an event: the governance thread is append-only."""


@event.listens_for(OrmSession, "before_flush")
def _events_are_append_only(session: OrmSession, _context: Any, _instances: Any) -> None:
    for row in (*session.dirty, *session.deleted):
        if isinstance(row, Event) and (row in session.deleted or session.is_modified(row)):
            raise AppendOnly(
                f"event {row.id} cannot be changed or deleted: the thread is append-only"
            )
