"""The store's tables in SQLAlchemy Core, for the read side: the commands that only read
(``govern status``, ``history``, ``dashboard``) query these without importing the ORM,
SQLModel or pydantic, which cost more than the rest of such a command.

Written from the table models (govern/store/models.py, the schema's one home) by
tests/store/test_read_schema.py, which fails when the two drift; do not edit by hand:
``GOVERN_WRITE_SCHEMA=1 .venv/bin/python -m pytest tests/store/test_read_schema.py``.
Only what a query needs is here: columns, their types, nullability and primary keys (the
indexes and constraints live in the models and the migrations).
"""

from __future__ import annotations

from sqlalchemy import JSON, Boolean, Column, Date, Float, Integer, MetaData, String, Table, Text

from govern.exclusions import states
from govern.store.columns import ClosedSet, UTCDateTime

metadata = MetaData()

annotation = Table(
    "annotation",
    metadata,
    Column("id", Integer(), primary_key=True),
    Column("exclusion_id", Integer(), nullable=False),
    Column("current", Boolean(), nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("reason", Text()),
    Column("links", JSON(), nullable=False),
    Column("bad_versions", JSON(), nullable=False),
    Column("owner", String(256)),
    Column("review_by", Date()),
    Column("verify", Text()),
    Column("profiles", JSON(), nullable=False),
    Column("strategy", String(32)),
    Column("recorded_at", UTCDateTime(), nullable=False),
    Column("commit", String(64)),
)

candidate = Table(
    "candidate",
    metadata,
    Column("profile", String(128), nullable=False),
    Column("role", String(16), nullable=False),
    Column("eligible", Boolean(), nullable=False),
    Column("reason", Text()),
    Column("status", ClosedSet(states.CandidateStatus, 16), nullable=False),
    Column("id", Integer(), primary_key=True),
    Column("exclusion_id", Integer(), nullable=False),
    Column("release_id", Integer(), nullable=False),
    Column("found_at", UTCDateTime(), nullable=False),
    Column("relaxation", JSON()),
    Column("forgotten_upto", Integer()),
)

event = Table(
    "event",
    metadata,
    Column("kind", ClosedSet(states.EventKind, 32), nullable=False),
    Column("commit", String(64)),
    Column("pull_request", Integer()),
    Column("author", String(256)),
    Column("detail", JSON(), nullable=False),
    Column("id", Integer(), primary_key=True),
    Column("exclusion_id", Integer(), nullable=False),
    Column("at", UTCDateTime(), nullable=False),
    Column("recorded_at", UTCDateTime(), nullable=False),
    Column("related_id", Integer()),
)

exclusion = Table(
    "exclusion",
    metadata,
    Column("package", String(256), nullable=False),
    Column("clause", String(256), nullable=False),
    Column("requirement", Text(), nullable=False),
    Column("marker", Text()),
    Column("kind", ClosedSet(states.Kind, 16), nullable=False),
    Column("sub_kind", ClosedSet(states.SubKind, 16), nullable=False),
    Column("line", Integer(), nullable=False),
    Column("state", ClosedSet(states.State, 16), nullable=False),
    Column("id", Integer(), primary_key=True),
    Column("key", String(64), nullable=False),
    Column("repository_id", Integer(), nullable=False),
    Column("source_id", Integer(), nullable=False),
    Column("group", String(256)),
    Column("predecessor_id", Integer()),
    Column("first_seen_at", UTCDateTime(), nullable=False),
    Column("removed_at", UTCDateTime()),
    Column("introduced_commit", String(64)),
    Column("introduced_pull_request", Integer()),
    Column("snoozed_until", Date()),
    Column("assigned_owner", String(256)),
    Column("acknowledged_at", UTCDateTime()),
)

index_page = Table(
    "index_page",
    metadata,
    Column("id", Integer(), primary_key=True),
    Column("package", String(256), nullable=False),
    Column("index_url", Text(), nullable=False),
    Column("etag", Text()),
    Column("last_modified", String(64)),
    Column("last_serial", Integer()),
    Column("fetched_at", UTCDateTime()),
    Column("failed_at", UTCDateTime()),
    Column("failure", Text()),
    Column("failures", Integer(), nullable=False),
    Column("judged", String(64)),
    Column("fresh_until", UTCDateTime()),
)

lock_pin = Table(
    "lock_pin",
    metadata,
    Column("id", Integer(), primary_key=True),
    Column("source_id", Integer(), nullable=False),
    Column("package", String(256), nullable=False),
    Column("version", String(128), nullable=False),
    Column("since", UTCDateTime(), nullable=False),
    Column("since_commit", String(64), nullable=False),
    Column("until", UTCDateTime()),
    Column("until_commit", String(64)),
)

outbox = Table(
    "outbox",
    metadata,
    Column("id", Integer(), primary_key=True),
    Column("dedupe_key", String(256), nullable=False),
    Column("action", ClosedSet(states.OutboxAction, 32), nullable=False),
    Column("proposal_id", Integer()),
    Column("state", ClosedSet(states.OutboxState, 16), nullable=False),
    Column("attempts", Integer(), nullable=False),
    Column("next_attempt_at", UTCDateTime()),
    Column("last_error", Text()),
    Column("result", JSON(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("sent_at", UTCDateTime()),
)

poll_run = Table(
    "poll_run",
    metadata,
    Column("id", Integer(), primary_key=True),
    Column("started_at", UTCDateTime(), nullable=False),
    Column("finished_at", UTCDateTime(), nullable=False),
    Column("duration_seconds", Float(), nullable=False),
    Column("projects", Integer(), nullable=False),
    Column("fetched", Integer(), nullable=False),
    Column("not_modified", Integer(), nullable=False),
    Column("failed", Integer(), nullable=False),
    Column("candidates_found", Integer(), nullable=False),
)

proposal = Table(
    "proposal",
    metadata,
    Column("kind", ClosedSet(states.ProposalKind, 32), nullable=False),
    Column("state", ClosedSet(states.ProposalState, 16), nullable=False),
    Column("new_clause", String(256)),
    Column("url", Text()),
    Column("id", Integer(), primary_key=True),
    Column("exclusion_id", Integer(), nullable=False),
    Column("candidate_id", Integer()),
    Column("dedupe_key", String(128), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("via", ClosedSet(states.Via, 16)),
    Column("version", String(128)),
    Column("branch", String(256)),
    Column("number", Integer()),
    Column("old", Text()),
    Column("new", Text()),
    Column("updated_at", UTCDateTime()),
)

release = Table(
    "release",
    metadata,
    Column("id", Integer(), primary_key=True),
    Column("package", String(256), nullable=False),
    Column("version", String(128), nullable=False),
    Column("uploaded_at", UTCDateTime()),
    Column("yanked", Boolean(), nullable=False),
    Column("yanked_reason", Text()),
    Column("requires_python", String(256)),
    Column("files", JSON(), nullable=False),
    Column("first_seen_at", UTCDateTime(), nullable=False),
)

repository = Table(
    "repository",
    metadata,
    Column("id", Integer(), primary_key=True),
    Column("name", String(512), nullable=False),
    Column("root", Text(), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("synced_at", UTCDateTime()),
    Column("synced_commit", String(64)),
    Column("digest", String(64), key="synced_tree_hash"),
)

source = Table(
    "source",
    metadata,
    Column("id", Integer(), primary_key=True),
    Column("repository_id", Integer(), nullable=False),
    Column("path", String(1024), nullable=False),
    Column("format", String(32), nullable=False),
    Column("present", Boolean(), nullable=False),
    Column("first_seen_at", UTCDateTime(), nullable=False),
    Column("last_seen_at", UTCDateTime(), nullable=False),
    Column("commit", String(64)),
)

store_secret = Table(
    "store_secret",
    metadata,
    Column("name", String(32), primary_key=True),
    Column("value", String(128), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
)

verification = Table(
    "verification",
    metadata,
    Column("provider", String(32), nullable=False),
    Column("kind", ClosedSet(states.RunKind, 16), nullable=False),
    Column("version", String(128)),
    Column("conclusion", ClosedSet(states.Conclusion, 16)),
    Column("run_url", Text()),
    Column("detail", Text()),
    Column("id", Integer(), primary_key=True),
    Column("candidate_id", Integer(), nullable=False),
    Column("profile", String(128), nullable=False),
    Column("run_id", String(256)),
    Column("attempt", Integer(), nullable=False),
    Column("started_at", UTCDateTime(), nullable=False),
    Column("finished_at", UTCDateTime()),
    Column("installed_version", String(128)),
    Column("log_excerpt", Text()),
    Column("check_key", String(64)),
)
