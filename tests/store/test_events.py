"""store.events.record: an event and its transition, written together or not at all."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import col, func, select

from govern.config import Config
from govern.exclusions.states import EventKind, State
from govern.lifecycle import TransitionRefused
from govern.service.track import TrackOptions, track
from govern.store import events
from govern.store.db import Store
from govern.store.models import Event, StoredExclusion

NOW = datetime(2025, 3, 1, 12, tzinfo=UTC)


@pytest.fixture
def store(database_url: str, tmp_path: Path) -> Iterator[Store]:
    """``demo < 1.1`` tracked (held, with its ``added`` event)."""
    root = tmp_path / "app"
    root.mkdir()
    (root / "requirements.txt").write_text("demo<1.1\n", encoding="utf-8")
    with Store(database_url) as opened:
        config = Config(repository="example/app")
        track(opened, root, None, config=config, options=TrackOptions(now=NOW))
        yield opened


def _seen(store: Store) -> tuple[str, list[str]]:
    with store.session() as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        kinds = session.exec(select(Event.kind).order_by(col(Event.id))).all()
    return exclusion.state, list(kinds)


def _set(store: Store, state: State) -> None:
    with store.session(write=True) as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        exclusion.state = state


def test_record_appends_the_event_and_moves_the_state(store: Store) -> None:
    _set(store, State.VERIFIED)
    with store.session(write=True) as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        after = events.record(session, exclusion, EventKind.REMINDED, {"version": "1.1"}, NOW)
    assert after is State.PROPOSED
    assert _seen(store) == (State.PROPOSED, [EventKind.ADDED, EventKind.REMINDED])


def test_record_by_id_keeps_a_state_the_event_does_not_move(store: Store) -> None:
    with store.session() as session:
        exclusion_id = session.exec(select(StoredExclusion.id)).one()
    assert exclusion_id is not None
    with store.session(write=True) as session:
        events.record(session, exclusion_id, EventKind.SNOOZED, {"by": "dashboard"}, NOW)
    assert _seen(store) == (State.HELD, [EventKind.ADDED, EventKind.SNOOZED])


def test_a_refused_event_writes_nothing(store: Store) -> None:
    before = _seen(store)
    with store.session(write=True) as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        with pytest.raises(TransitionRefused, match="added event is not allowed"):
            events.record(session, exclusion, EventKind.ADDED, {}, NOW)
    assert _seen(store) == before
    with store.session() as session:
        assert session.exec(select(func.count()).select_from(Event)).one() == 1


def test_the_verifier_must_say_where_a_settled_exclusion_goes(store: Store) -> None:
    with store.session(write=True) as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        with pytest.raises(TransitionRefused, match="needs one of"):
            events.record(session, exclusion, EventKind.VERIFICATION_STARTED, {}, NOW)
    with store.session(write=True) as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        events.record(
            session, exclusion, EventKind.VERIFICATION_STARTED, {}, NOW, to=State.VERIFYING
        )
    assert _seen(store)[0] == State.VERIFYING
