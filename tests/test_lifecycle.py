"""The lifecycle's table: one row per event and state, refusals said, the verifier's settling."""

from __future__ import annotations

import pytest

from govern.exclusions.states import VERIFYING_STATES, CandidateStatus, EventKind, State
from govern.lifecycle import (
    OPEN,
    STORED,
    TABLE,
    TransitionRefused,
    advance,
    related_end,
    transition,
    verification_state,
)


def test_each_event_and_state_has_at_most_one_row() -> None:
    for kind in EventKind:
        for before in (None, *STORED):
            rows = [row for row in TABLE if row.kind is kind and before in row.before]
            assert len(rows) <= 1, (kind, before)


def test_every_event_kind_has_a_row() -> None:
    assert {row.kind for row in TABLE} == set(EventKind)


def test_overdue_is_never_a_state_before_or_after() -> None:
    for row in TABLE:
        assert State.OVERDUE not in row.before
        assert State.OVERDUE not in row.after


@pytest.mark.parametrize(
    ("kind", "before", "after"),
    [
        (EventKind.ADDED, None, State.HELD),
        (EventKind.ADDED, State.REMOVED, State.HELD),  # the same key came back
        (EventKind.CHANGED, State.RELAXED, State.HELD),
        (EventKind.REMOVED, State.PROPOSED, State.REMOVED),
        (EventKind.MOVED, State.VERIFIED, State.VERIFIED),
        (EventKind.CANDIDATE_FOUND, State.HELD, State.CANDIDATE),
        (EventKind.CANDIDATE_FOUND, State.VERIFIED, State.VERIFIED),
        (EventKind.PROPOSAL_OPENED, State.VERIFIED, State.PROPOSED),
        (EventKind.PROPOSAL_OPENED, State.PROPOSED, State.PROPOSED),
        (EventKind.REMINDED, State.VERIFIED, State.PROPOSED),
        (EventKind.DECLINED, State.PROPOSED, State.HELD),
        (EventKind.DECLINED, State.RELAXED, State.RELAXED),
        (EventKind.MERGED, State.PROPOSED, State.PROPOSED),  # the next sync relaxes it
        (EventKind.VERIFICATION_PASSED, State.PROPOSED, State.PROPOSED),
        (EventKind.SNOOZED, State.REMOVED, State.REMOVED),
    ],
)
def test_advance(kind: EventKind, before: State | None, after: State) -> None:
    assert advance(kind, before) is after


@pytest.mark.parametrize(
    ("kind", "before"),
    [
        (EventKind.ADDED, State.HELD),  # an open line is not added twice
        (EventKind.REMOVED, State.REMOVED),  # nor removed twice
        (EventKind.REMOVED, None),
        (EventKind.ANNOTATION_CHANGED, State.RELAXED),
        (EventKind.CANDIDATE_FOUND, None),
    ],
)
def test_refused(kind: EventKind, before: State | None) -> None:
    with pytest.raises(TransitionRefused, match=str(kind)):
        advance(kind, before)


def test_the_verifier_names_where_an_exclusion_in_verification_goes() -> None:
    for before in VERIFYING_STATES:
        with pytest.raises(TransitionRefused, match="needs one of"):
            advance(EventKind.VERIFICATION_STARTED, before)
        assert advance(EventKind.VERIFICATION_STARTED, before, to=State.VERIFYING) is (
            State.VERIFYING
        )
    with pytest.raises(TransitionRefused):  # outside VERIFYING_STATES a run moves nothing
        advance(EventKind.VERIFICATION_FAILED, State.PROPOSED, to=State.HELD)
    with pytest.raises(TransitionRefused):
        advance(EventKind.VERIFICATION_FAILED, State.HELD, to=State.PROPOSED)


def test_a_change_ends_its_predecessor() -> None:
    assert related_end(EventKind.CHANGED, State.VERIFIED, to=State.RELAXED) is State.RELAXED
    assert related_end(EventKind.CHANGED, State.HELD, to=State.REMOVED) is State.REMOVED
    with pytest.raises(TransitionRefused):
        related_end(EventKind.CHANGED, State.HELD, to=State.HELD)
    with pytest.raises(TransitionRefused):
        related_end(EventKind.CHANGED, State.REMOVED, to=State.RELAXED)
    with pytest.raises(TransitionRefused):
        related_end(EventKind.ADDED, State.HELD, to=State.REMOVED)
    assert not transition(EventKind.ADDED, None).related


@pytest.mark.parametrize(
    ("statuses", "state"),
    [
        ({}, State.HELD),
        ({"2.0": {CandidateStatus.FOUND}}, State.CANDIDATE),
        ({"2.0": {CandidateStatus.PASSED, CandidateStatus.VERIFYING}}, State.VERIFYING),
        ({"2.0": {CandidateStatus.PASSED}}, State.VERIFIED),
        ({"2.0": {CandidateStatus.PASSED, CandidateStatus.ERRORED}}, State.CANDIDATE),
        # failed on one profile: bad for the whole line, whatever passed elsewhere
        ({"2.0": {CandidateStatus.PASSED, CandidateStatus.FAILED}}, State.HELD),
        ({"2.0": {CandidateStatus.BAD}, "2.1": {CandidateStatus.PASSED}}, State.VERIFIED),
    ],
)
def test_verification_state(statuses: dict[str, set[str]], state: State) -> None:
    assert verification_state(statuses) is state
    assert state in OPEN
