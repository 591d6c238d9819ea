"""The lifecycle of an exclusion: which event may happen in which state, and where it leaves it.

Notes: docs/design.md#lifecycle.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from govern.errors import StoreError
from govern.exclusions.states import (
    ENDED,
    REJECTED,
    VERIFYING_STATES,
    CandidateStatus,
    EventKind,
    State,
)

#: The states a stored exclusion can be in (``overdue`` is shown, never stored).
STORED = frozenset(state for state in State if state is not State.OVERDUE)
#: An exclusion whose line is in its file now.
OPEN = STORED - frozenset(ENDED)
# None as a state before: the exclusion is new (no row yet).
_NEW_OR_ENDED: frozenset[State | None] = frozenset({None, *ENDED})
_STAYS: frozenset[State] = frozenset()


class TransitionRefused(StoreError):
    """An event the lifecycle does not allow from the exclusion's state (lifecycle.py)."""


@dataclass(frozen=True, slots=True)
class Transition:
    """One row of the table: ``kind`` on an exclusion in one of ``before`` (None: new)
    leaves it in one of ``after`` (empty: where it was); ``related`` is where the event's
    related exclusion ends (a changed clause's predecessor), when it has one."""

    kind: EventKind
    before: frozenset[State | None]
    after: frozenset[State] = _STAYS
    related: frozenset[State] = _STAYS


def _rows(
    kind: EventKind, moves: frozenset[State | None], to: frozenset[State]
) -> tuple[Transition, Transition]:
    """``moves`` → ``to``; every other stored state stays where it is."""
    return (Transition(kind, moves, to), Transition(kind, frozenset(STORED - moves)))


_ANY: frozenset[State | None] = frozenset(STORED)
_OPEN: frozenset[State | None] = frozenset(OPEN)
_VERIFIED: frozenset[State | None] = frozenset({State.VERIFIED})

TABLE: tuple[Transition, ...] = (
    # The sync: a line appears (or comes back), changes in place, moves, goes.
    Transition(EventKind.ADDED, _NEW_OR_ENDED, frozenset({State.HELD})),
    Transition(
        EventKind.CHANGED,
        _NEW_OR_ENDED,
        frozenset({State.HELD}),
        related=frozenset(ENDED),  # the predecessor: relaxed, or removed when stricter
    ),
    Transition(EventKind.ANNOTATION_CHANGED, _OPEN),
    Transition(EventKind.MOVED, _OPEN),
    Transition(EventKind.REMOVED, _OPEN, frozenset({State.REMOVED})),
    # The poll: a held exclusion with a candidate has something to try.
    *_rows(EventKind.CANDIDATE_FOUND, frozenset({State.HELD}), frozenset({State.CANDIDATE})),
    # The verifier: an exclusion among VERIFYING_STATES moves by its candidates' statuses.
    *(
        row
        for kind in (
            EventKind.VERIFICATION_STARTED,
            EventKind.VERIFICATION_PASSED,
            EventKind.VERIFICATION_FAILED,
            EventKind.VERIFICATION_ERRORED,
            EventKind.VERDICT_FORGOTTEN,
        )
        for row in _rows(kind, frozenset(VERIFYING_STATES), frozenset(VERIFYING_STATES))
    ),
    # The poll: a ``!=V`` with V known bad has nothing left to relax; its candidates go.
    *_rows(
        EventKind.SETTLED,
        frozenset({State.CANDIDATE, State.VERIFYING, State.VERIFIED}),
        frozenset({State.HELD}),
    ),
    # The dashboard's actions change only their own fields.
    Transition(EventKind.SNOOZED, _ANY),
    Transition(EventKind.OWNER_ASSIGNED, _ANY),
    Transition(EventKind.ACKNOWLEDGED, _ANY),
    # Proposals and reminders: a verified exclusion is proposed (once: the others stay).
    *_rows(EventKind.PROPOSAL_OPENED, _VERIFIED, frozenset({State.PROPOSED})),
    *_rows(EventKind.PROPOSAL_UPDATED, _VERIFIED, frozenset({State.PROPOSED})),
    *_rows(EventKind.REMINDED, _VERIFIED, frozenset({State.PROPOSED})),
    Transition(EventKind.PROPOSAL_SUPERSEDED, _ANY),
    Transition(EventKind.PROPOSAL_HELD, _ANY),  # nothing was sent: the state stays
    Transition(EventKind.MERGED, _ANY),  # the next sync relaxes the line
    *_rows(
        EventKind.DECLINED, frozenset({State.PROPOSED, State.VERIFIED}), frozenset({State.HELD})
    ),
)


def _index(table: tuple[Transition, ...]) -> Mapping[EventKind, tuple[Transition, ...]]:
    by_kind: dict[EventKind, tuple[Transition, ...]] = {}
    for row in table:
        by_kind[row.kind] = (*by_kind.get(row.kind, ()), row)
    return by_kind


_BY_KIND = _index(TABLE)


def transition(kind: EventKind, before: State | None) -> Transition:
    """The row for ``kind`` from ``before`` (None: a new exclusion), or
    :class:`TransitionRefused`."""
    for row in _BY_KIND.get(kind, ()):
        if before in row.before:
            return row
    was = "new" if before is None else f"{before}"
    raise TransitionRefused(
        f"a {kind} event is not allowed on an exclusion that is {was}",
        tip="This is a bug in govern's workflow; report it with --debug.",
    )


def advance(kind: EventKind, before: State | None, *, to: State | None = None) -> State:
    """The state an exclusion in ``before`` is in after an event of ``kind``; ``to`` picks
    among the row's states after (needed where there are several)."""
    row = transition(kind, before)
    return _pick(row.after, before, to, f"a {kind} event")


def related_end(kind: EventKind, before: State | None, *, to: State) -> State:
    """Where an event of ``kind`` leaves its related exclusion (a changed clause's
    predecessor), which was in ``before``."""
    row = next((r for r in _BY_KIND.get(kind, ()) if r.related), None)
    if row is None or before not in OPEN:
        raise TransitionRefused(f"a {kind} event ends an exclusion that is {before}")
    return _pick(row.related, None, to, f"a {kind} event's related exclusion")


def _pick(after: frozenset[State], before: State | None, to: State | None, what: str) -> State:
    if not after:  # the state stays
        if before is None or (to is not None and to != before):
            raise TransitionRefused(f"{what} leaves the state as it is, not {to}")
        return before
    if to is None:
        if len(after) > 1:
            raise TransitionRefused(f"{what} needs one of {sorted(after)} named")
        return next(iter(after))
    if to not in after:
        raise TransitionRefused(f"{what} cannot leave an exclusion {to}")
    return to


def verification_state(statuses: Mapping[str, Collection[str]]) -> State:
    """Where the verification workflow leaves an exclusion among ``VERIFYING_STATES``, from the
    statuses of its eligible candidates by version (a version failed on any profile is
    bad for the whole line): verifying while a run is going, verified once a version
    passed on every profile it was tried on, candidate while one waits, else held."""
    by_version = [found for found in statuses.values() if not set(found) & set(REJECTED)]
    everything: set[str] = set().union(*by_version) if by_version else set()
    if CandidateStatus.VERIFYING in everything:
        return State.VERIFYING
    if any(set(found) == {CandidateStatus.PASSED} for found in by_version):
        return State.VERIFIED
    if everything & {CandidateStatus.FOUND, CandidateStatus.ERRORED, CandidateStatus.PASSED}:
        return State.CANDIDATE
    return State.HELD
