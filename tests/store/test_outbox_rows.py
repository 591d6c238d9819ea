"""The outbox's rows: keys and actions as stored, and the reads that match on them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert
from sqlmodel import select

from govern.exclusions.states import OutboxAction, OutboxState
from govern.store import outbox
from govern.store.db import Store
from govern.store.models import Outbox
from govern.store.outbox import KeyKind, key_prefix, on_channel, outbox_key

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(database_url: str) -> Iterator[Store]:
    with Store(database_url) as opened:
        yield opened


def test_keys_are_spelled_as_rows_already_stored_them() -> None:
    """Rows written before the key builder existed must still dedupe: same spelling."""
    assert outbox_key(KeyKind.CHANGE, "r:x", "1.2") == "change:r:x:1.2"
    assert outbox_key(KeyKind.LEFT_ALONE, "r:x", "1.2") == "left-alone:r:x:1.2"
    assert outbox_key(KeyKind.LABELS, "r:x", 7) == "labels:r:x:7"
    assert key_prefix(KeyKind.PUSH, "r:x") == "push:r:x:"
    assert on_channel(outbox_key(KeyKind.REMIND, "r:x", "1.2"), "email") == ("remind:r:x:1.2:email")
    # The proposal rows' keys too (Proposal.dedupe_key), and a close keyed by one of them.
    proposal = outbox_key(KeyKind.PROPOSAL, "r:x", "1.2")
    assert proposal == "proposal:r:x:1.2"
    assert outbox_key(KeyKind.REMINDER, "r:x", "1.2") == "reminder:r:x:1.2"
    assert outbox_key(KeyKind.SUPERSEDED, "r:x", "1.2") == "superseded:r:x:1.2"
    assert outbox_key(KeyKind.CLOSE, proposal, 7) == "close:proposal:r:x:1.2:7"
    assert outbox_key(KeyKind.PENDING, "repo-ab", 3, "f00d") == "pending:repo-ab:3:f00d"


def test_actions_are_the_strings_already_stored() -> None:
    """A reminder's and a digest's action name their channel; an unknown one is refused."""
    assert OutboxAction.remind("webhook") == "remind-webhook"
    assert OutboxAction.digest("email") is OutboxAction.DIGEST_EMAIL
    assert OutboxAction("open-change") is OutboxAction.OPEN_CHANGE
    with pytest.raises(ValueError, match="remind-pager"):
        OutboxAction.remind("pager")


def test_pushed_to_reads_rows_stored_with_a_plain_action_string(store: Store) -> None:
    """A row written as ``action="push"`` (a str, before the enum) is read as a push; a
    push of another exclusion whose key shares the characters is not (the prefix ends in
    ``:``)."""
    with store.session(write=True) as session:
        rows = [
            {
                "dedupe_key": key,
                "action": "push",
                "state": "sent",
                "attempts": 0,
                "result": {"branch": branch, "sha": sha},
                "created_at": NOW,
            }
            for key, branch, sha in (
                ("push:r:a:1", "govern/a", "1" * 40),
                ("push:r:a:2", "govern/a", "2" * 40),
                ("push:r:ab:1", "govern/ab", "3" * 40),
            )
        ]
        session.execute(insert(Outbox), rows)
    with store.session() as session:
        record = outbox.pushed_to(session, prefix=key_prefix(KeyKind.PUSH, "r:a"))
        read = session.exec(select(Outbox)).first()
        assert read is not None
        assert (read.action, read.state) == (OutboxAction.PUSH, OutboxState.SENT)
        assert type(read.action) is OutboxAction  # the column reads the member back
    assert record == outbox.PushRecord("govern/a", frozenset({"1" * 40, "2" * 40}))
    with store.engine.connect() as connection:  # and stores the plain strings
        stored = connection.exec_driver_sql("SELECT DISTINCT action, state FROM outbox").all()
    assert [tuple(row) for row in stored] == [("push", "sent")]


def test_supersede_leaves_sent_and_sending_rows_alone(store: Store) -> None:
    """Only unsent rows under the prefix are superseded; the sent key and a row another run
    is sending keep their state."""
    states = {
        "change:r:a:1": OutboxState.FAILED,
        "change:r:a:2": OutboxState.SENDING,
        "change:r:a:3": OutboxState.SENT,
        "change:r:ab:1": OutboxState.FAILED,
    }
    with store.session(write=True) as session:
        for key, state in states.items():
            session.add(
                Outbox(dedupe_key=key, action=OutboxAction.OPEN_CHANGE, state=state, created_at=NOW)
            )
    with store.session(write=True) as session:
        done = outbox.supersede(
            session, prefix=key_prefix(KeyKind.CHANGE, "r:a"), sent="change:r:a:3"
        )
    assert done == 1
    with store.session() as session:
        now = {key: outbox.row(session, key=key) for key in states}
    assert {key: row.state for key, row in now.items() if row is not None} == {
        **states,
        "change:r:a:1": OutboxState.SUPERSEDED,
    }
