"""The sync: the exclusions of a source, compared with the store and written as events.

Notes: docs/internals.md#service.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from govern.exclusions.model import Exclusion, Kind, SubKind, exclusion_key
from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import EventKind, ProposalState, State
from govern.lifecycle import advance, related_end
from govern.service.values import Provenance, SyncCounts
from govern.store import events as thread
from govern.store import proposals, relaxations, tracking
from govern.store.models import Repository, StoredSource
from govern.store.refs import from_row

if TYPE_CHECKING:
    from govern.git.history import Revision
    from govern.store.db import Session


def annotation_values(seen: Exclusion) -> dict[str, Any]:
    """The annotation fields an exclusion carries, as stored."""
    note = seen.annotation
    return {
        "reason": note.reason,
        "links": [str(link) for link in note.links],
        "bad_versions": list(seen.bad_versions),
        "owner": note.owner,
        "review_by": note.review_by,
        "verify": note.verify,
        "profiles": list(note.profiles),
        # Only when set: the fingerprints of annotations without one stay as they were.
        **({"strategy": note.strategy} if note.strategy else {}),
    }


def fingerprint(values: dict[str, Any]) -> str:
    """A hash of the annotation fields: equal when nothing a reader sees has changed."""
    raw = json.dumps(values, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def _bound(clause: str) -> Version | None:
    digits = clause.lstrip("<>=!~").removesuffix(".*")
    try:
        return Version(digits)
    except InvalidVersion:
        return None


def direction(old_kind: str, old_clause: str, new: Exclusion) -> str:
    """Whether a clause that changed in place lets more versions in (``relaxed``) or fewer.

    A cap or pin that became a not-equal is relaxed (the CuPy case); a cap raised is
    relaxed, lowered is ``tightened``; anything else is ``changed``.
    """
    order: dict[str, int] = {Kind.BAN: 0, Kind.PIN: 1, Kind.CAP: 2, Kind.NOT_EQUAL: 3}
    if old_kind != new.kind:
        if old_kind in order and new.kind in order:
            return "relaxed" if order[new.kind] > order[old_kind] else "tightened"
        return "changed"
    before, after = _bound(old_clause), _bound(new.clause)
    if before is None or after is None or before == after or old_kind == Kind.NOT_EQUAL:
        return "changed"
    return "relaxed" if after > before else "tightened"


@dataclass(slots=True, eq=False)
class _Row:
    """An exclusion as the sync sees it: loaded by columns, written back in bulk.

    ``ref`` is frozen: a line, requirement, key or source that moves replaces it
    (:meth:`move`), and the row is written back at the end.
    """

    id: int | None
    ref: ExclusionRef
    source_id: int
    kind: Kind
    sub_kind: SubKind
    state: State | None  # None: new, until its first event (the lifecycle's table moves it)
    removed_at: datetime | None
    predecessor_id: int | None
    dirty: bool = False
    predecessor: _Row | None = None  # linked in this sync (its id may come at the end)

    def move(
        self,
        *,
        line: int | None = None,
        requirement: str | None = None,
        key: str | None = None,
        source: str | None = None,
    ) -> None:
        """The reference with what moved (what is None stays), to be written back."""
        ref = self.ref
        self.ref = replace(
            ref,
            line=ref.line if line is None else line,
            requirement=ref.requirement if requirement is None else requirement,
            key=ref.key if key is None else key,
            source=ref.source if source is None else source,
        )
        self.dirty = True


@dataclass(slots=True, eq=False)
class _Note:
    """The current annotation of an exclusion: stored (``id``) or written at the end."""

    fingerprint: str
    id: int | None = None  # stored already
    row: _Row | None = None  # new: written at the end, for this exclusion
    values: dict[str, Any] | None = None
    recorded_at: datetime | None = None
    commit: str | None = None
    current: bool = True


@dataclass(slots=True, eq=False)
class _QueuedEvent:
    row: _Row
    kind: EventKind
    provenance: Provenance
    detail: dict[str, Any]
    related: _Row | None


@dataclass
class _SourceState:
    row: StoredSource
    active: dict[str, _Row] = field(default_factory=dict)


class Sync:
    """One sync of one repository, inside one write session (see :func:`track`).

    The comparison runs on plain records (a new exclusion is linked to its predecessor
    by reference until it has an id); new exclusions, annotations, events and changed
    rows are written in batches by :meth:`finish`: a few dozen statements for
    10,000 exclusions instead of one round trip per row.
    """

    def __init__(
        self, session: Session, repository: Repository, *, now: datetime, repository_key: str
    ) -> None:
        self.session = session
        self.repository = repository
        self.repository_key = repository_key  # the name inside exclusion keys ("" if none)
        self.now = now
        self.counts = SyncCounts()
        assert repository.id is not None
        repo_id = repository.id
        self.sources: dict[str, _SourceState] = {}
        for source in tracking.sources_of(session, repository_id=repo_id):
            self.sources[source.path] = _SourceState(source)
        by_source = {state.row.id: state for state in self.sources.values()}
        self.by_key: dict[str, _Row] = {}
        for values in tracking.exclusion_rows(session, repository_id=repo_id):
            held = by_source[values.source_id]
            row = _Row(
                id=values.id,
                ref=from_row(values, repository=repository.name, source=held.row.path),
                source_id=values.source_id,
                kind=values.kind,
                sub_kind=values.sub_kind,
                state=values.state,
                removed_at=values.removed_at,
                predecessor_id=values.predecessor_id,
            )
            self.by_key[row.ref.key] = row
            if row.removed_at is None:
                held.active[row.ref.key] = row
        self.current: dict[int, _Note] = {}
        current = tracking.current_fingerprints(session, repository_id=repo_id)
        for note_id, exclusion_id, digest in current:
            self.current[exclusion_id] = _Note(fingerprint=digest, id=note_id)
        self._new_notes: dict[int, _Note] = {}  # by id() of the row, for rows without ids
        self._notes: list[_Note] = []
        self._retired: list[int] = []
        self._events: list[_QueuedEvent] = []
        self._inserts: list[tuple[_Row, datetime, str | None, int | None]] = []
        self._compare: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
        self._synced: set[str] = set()
        self._linked: list[_Row] = []  # rows given a predecessor: its id is set at the end
        self._relax: set[int] = set()  # stored rows whose line or annotation changed
        self.by_id: dict[int, _Row] = {row.id: row for row in self.by_key.values() if row.id}
        # Branches govern pushed (via git) still open: a line that becomes the proposed one
        # is their merge (no forge says so).
        self._branches = proposals.open_branches(session, repository_id=repo_id)
        self._merged: list[int] = []

    # -- sources --------------------------------------------------------------------

    def _source(self, path: str, fmt: str, at: datetime) -> _SourceState:
        state = self.sources.get(path)
        if state is None:
            assert self.repository.id is not None
            row = tracking.add_source(
                self.session, repository_id=self.repository.id, path=path, format=fmt, at=at
            )
            state = self.sources[path] = _SourceState(row)
        elif not state.row.present or state.row.format != fmt:
            state.row.present = True
            state.row.format = fmt
            state.row.last_seen_at = at
        return state

    def sync_source(
        self,
        path: str,
        fmt: str,
        seen: Iterable[Exclusion],
        provenance: Callable[[Exclusion], Provenance],
        removal: Provenance,
        *,
        keep: Callable[[str], bool] | None = None,
        lines: Mapping[str, int] | None = None,
    ) -> set[str]:
        """Bring one source's exclusions in the store to ``seen``.

        keep (a package name -> bool) spares vanished exclusions of the packages whose
        lines did not parse: they may still be there, so they are neither removed nor
        paired. lines gives the line each key was on before, where the rows were not
        kept up to date (a replay by diffs). Returns the keys spared.
        """
        state = self._begin(path, fmt, removal)
        now_seen: dict[str, Exclusion] = {}
        for item in seen:
            now_seen.setdefault(item.id, item)
        vanished = [row for key, row in state.active.items() if key not in now_seen]
        for row in vanished if lines else ():
            line = lines.get(row.ref.key) if lines else None
            if line is not None and row.ref.line != line:
                row.move(line=line)
        return self._bring(state, now_seen, vanished, provenance, removal, keep)

    def sync_changes(
        self,
        path: str,
        fmt: str,
        seen: Iterable[Exclusion],
        *,
        gone: Mapping[str, int | None],
        outside: int,
        provenance: Callable[[Exclusion], Provenance],
        removal: Provenance,
        keep: Callable[[str], bool] | None = None,
    ) -> set[str]:
        """:meth:`sync_source` for a source of which only some lines changed.

        seen holds the exclusions of the changed lines, gone the keys those lines held
        before (with the line each was on: the order in which changed clauses pair), and
        outside how many other exclusions the source holds, unchanged. The events are
        those :meth:`sync_source` would write given the whole source.
        """
        state = self._begin(path, fmt, removal)
        now_seen: dict[str, Exclusion] = {}
        for item in seen:
            now_seen.setdefault(item.id, item)
        missing = [key for key in gone if key not in now_seen and key in state.active]
        if len(missing) > 1:  # in the order sync_source finds them (the dict's order)
            order = list(state.active)
            missing.sort(key=order.index)
        vanished = []
        for key in missing:
            row = state.active[key]
            line = gone[key]
            if line is not None and row.ref.line != line:
                row.move(line=line)
            vanished.append(row)
        self.counts.unchanged += outside
        return self._bring(state, now_seen, vanished, provenance, removal, keep)

    def _begin(self, path: str, fmt: str, removal: Provenance) -> _SourceState:
        self._synced.add(path)
        self.counts.sources = len(self._synced)
        return self._source(path, fmt, removal.at)

    def _bring(
        self,
        state: _SourceState,
        now_seen: dict[str, Exclusion],
        vanished: list[_Row],
        provenance: Callable[[Exclusion], Provenance],
        removal: Provenance,
        keep: Callable[[str], bool] | None,
    ) -> set[str]:
        appeared: list[Exclusion] = []
        for key, item in now_seen.items():
            row = state.active.get(key)
            if row is None:
                appeared.append(item)
                continue
            self.counts.unchanged += 1
            if row.id is not None and row.ref.requirement != item.requirement:
                self._relax.add(row.id)
            if row.ref.line != item.line or row.ref.requirement != item.requirement:
                row.move(line=item.line, requirement=item.requirement)
            self._annotate(row, item, removal)
        kept: set[str] = set()
        if keep is not None and vanished:
            kept = {row.ref.key for row in vanished if keep(row.ref.package)}
            vanished = [row for row in vanished if row.ref.key not in kept]
        pairs, appeared, vanished = _pair(appeared, vanished)
        for item in appeared:
            self._add(state, item, provenance(item))
        for old, item in pairs:
            self._change(state, old, item, provenance(item))
        for row in vanished:
            self._remove(state, row, removal, {"clause": row.ref.clause})
        return kept

    def rename_source(self, old: str, new: str, when: Provenance) -> bool:
        """A source that git renamed: same row, same exclusions (re-keyed), a ``moved`` event.

        Keys contain the source path, so each exclusion gets the key it has under the new
        path; its history stays on the same row. Returns False (nothing done) when the
        new path is tracked already.
        """
        state = self.sources.get(old)
        if state is None or new in self.sources:
            return False
        del self.sources[old]
        state.row.path = new
        self.sources[new] = state
        for row in [r for r in self.by_key.values() if r.source_id == state.row.id]:
            ref = row.ref
            key = exclusion_key(
                self.repository_key, new, ref.package, ref.marker, ref.clause, group=ref.group
            )
            if key in self.by_key:
                row.ref = replace(ref, source=new)  # the path is the source row's: not written
                continue
            del self.by_key[ref.key]
            active = state.active.pop(ref.key, None)
            row.move(key=key, source=new)
            self.by_key[key] = row
            if active is not None:
                state.active[key] = row
                self._event(row, EventKind.MOVED, when, {"from": old, "to": new})
        return True

    def mark_replayed(self, path: str, fmt: str, sha: str) -> None:
        """Record the newest commit of ``path`` replayed into the store."""
        self._source(path, fmt, self.now).row.commit = sha

    def lock_held(
        self,
        path: str,
        fmt: str,
        revisions: Sequence[Revision],
        blobs: Sequence[bytes | None],
        *,
        rebuild: bool = False,
    ) -> None:
        """Record what the lock at ``path`` held at each of ``revisions`` (oldest first,
        after its replay marker; ``blobs`` their texts), and move the marker; ``rebuild``:
        ``revisions`` are its whole history, what was recorded before is replaced."""
        from govern.locks.history import held_over_time
        from govern.sources.model import SourceFormat

        if not revisions:
            return
        row = self._source(path, fmt, self.now).row
        assert row.id is not None
        if rebuild:
            tracking.forget_lock_pins(self.session, source_id=row.id)
        still = tracking.open_lock_pins(self.session, source_id=row.id)
        held = held_over_time(revisions, blobs, SourceFormat(fmt), open_=still)
        tracking.record_lock_pins(self.session, source_id=row.id, held=held)
        row.commit = revisions[-1].commit.sha

    def drop_sources(self, keep: Iterable[str], removal: Provenance) -> None:
        """Sources no longer present: their exclusions are removed (a lock's versions, no
        longer held)."""
        wanted = set(keep)
        for path, state in self.sources.items():
            if path in wanted or not state.row.present:
                continue
            for row in list(state.active.values()):
                self._remove(state, row, removal, {"clause": row.ref.clause})
            if state.row.id is not None:  # a lock gone holds nothing any more
                tracking.close_lock_pins(
                    self.session, source_id=state.row.id, at=removal.at, commit=removal.commit
                )
            state.row.present = False
            state.row.last_seen_at = removal.at

    # -- the changes ------------------------------------------------------------------

    def _event(
        self,
        row: _Row,
        kind: EventKind,
        provenance: Provenance,
        detail: dict[str, Any],
        related: _Row | None = None,
        related_to: State | None = None,
    ) -> None:
        """Queue an event and move the row's state (and its related row's) by the table."""
        row.state = advance(kind, row.state)
        if related is not None and related_to is not None:
            related.state = related_end(kind, related.state, to=related_to)
        self._events.append(_QueuedEvent(row, kind, provenance, detail, related))

    def _note_of(self, row: _Row) -> _Note | None:
        if row.id is not None:
            return self.current.get(row.id)
        return self._new_notes.get(id(row))

    def _retire(self, note: _Note) -> None:
        note.current = False
        if note.id is not None:
            self._retired.append(note.id)

    def _note(self, row: _Row, values: dict[str, Any], digest: str, when: Provenance) -> None:
        note = _Note(
            fingerprint=digest, row=row, values=values, recorded_at=when.at, commit=when.commit
        )
        self._notes.append(note)
        if row.id is not None:
            self.current[row.id] = note
        else:
            self._new_notes[id(row)] = note

    def _annotate(self, row: _Row, item: Exclusion, when: Provenance) -> None:
        values = annotation_values(item)
        digest = fingerprint(values)
        before = self._note_of(row)
        if before is not None and before.fingerprint == digest:
            return
        detail: dict[str, Any] = {}
        if before is not None:
            if before.values is not None:
                detail.update(_differences(before.values, values))
            elif before.id is not None:  # stored: compared in finish(), all in one query
                self._compare.append((before.id, values, detail))
            self._retire(before)
        self._note(row, values, digest, when)
        if row.id is not None:
            self._relax.add(row.id)
        self._event(row, EventKind.ANNOTATION_CHANGED, when, detail)
        self.counts.annotation_changed += 1

    def _compare_stored(self) -> None:
        """Fill the details of annotation changes from the versions they replace."""
        wanted = [note_id for note_id, _, _ in self._compare]
        stored = tracking.annotation_fields(self.session, ids=wanted)
        for note_id, values, detail in self._compare:
            detail.update(_differences(stored.get(note_id, {}), values))
        self._compare.clear()

    def _annotate_new(self, row: _Row, item: Exclusion, when: Provenance) -> None:
        values = annotation_values(item)
        digest = fingerprint(values)
        before = self._note_of(row)
        if before is not None:
            if before.fingerprint == digest:
                return
            self._retire(before)
        self._note(row, values, digest, when)

    def _add(self, state: _SourceState, item: Exclusion, provenance: Provenance) -> _Row:
        row = self.by_key.get(item.id)
        detail: dict[str, Any] = {"clause": item.clause, "kind": str(item.kind)}
        if row is not None:  # the same key came back: same row, same thread
            self._revive(state, row, item)
            detail["restored"] = True
            self.counts.restored += 1
        else:
            row = self._new_row(state, item, provenance)
            self.counts.added += 1
        state.active[item.id] = row
        self._event(row, EventKind.ADDED, provenance, detail)
        self._annotate_new(row, item, provenance)
        return row

    def _revive(self, state: _SourceState, row: _Row, item: Exclusion) -> None:
        assert state.row.id is not None
        row.removed_at = None  # the ADDED or CHANGED event that follows holds it again
        row.source_id = state.row.id
        row.move(line=item.line, requirement=item.requirement, source=state.row.path)
        if row.id is not None:
            self._relax.add(row.id)

    def _new_row(self, state: _SourceState, item: Exclusion, provenance: Provenance) -> _Row:
        assert state.row.id is not None
        ref = ExclusionRef(
            key=item.id,
            repository=self.repository.name,
            source=state.row.path,
            line=item.line,
            package=item.package,
            requirement=item.requirement,
            clause=item.clause,
            marker=item.marker,
            group=item.group,
        )
        row = _Row(
            id=None,
            ref=ref,
            source_id=state.row.id,
            kind=item.kind,
            sub_kind=item.sub_kind,
            state=None,  # its first event (added, changed) sets it
            removed_at=None,
            predecessor_id=None,
        )
        self._inserts.append((row, provenance.at, provenance.commit, provenance.pull_request))
        self.by_key[item.id] = row
        return row

    def _insert_new_rows(self) -> None:
        """Insert the exclusions this sync added, in one batch, and learn their ids."""
        if not self._inserts:
            return
        assert self.repository.id is not None
        rows = [
            {
                "key": row.ref.key,
                "repository_id": self.repository.id,
                "source_id": row.source_id,
                "package": row.ref.package,
                "marker": row.ref.marker,
                "group": row.ref.group,
                "clause": row.ref.clause,
                "kind": row.kind,
                "sub_kind": row.sub_kind,
                "requirement": row.ref.requirement,
                "line": row.ref.line,
                "state": row.state,
                "predecessor_id": row.predecessor_id,
                "first_seen_at": at,
                "removed_at": row.removed_at,
                "introduced_commit": commit,
                "introduced_pull_request": pull_request,
            }
            for row, at, commit, pull_request in self._inserts
        ]
        ids = tracking.insert_exclusions(self.session, repository_id=self.repository.id, rows=rows)
        for row, *_rest in self._inserts:
            new_id = ids[row.ref.key]
            row.id = new_id
            self.by_id[new_id] = row
            row.dirty = False  # inserted as it stands
            note = self._new_notes.pop(id(row), None)
            if note is not None:
                self.current[new_id] = note
        self._inserts.clear()
        for row in self._linked:
            assert row.predecessor is not None
            if row.predecessor_id != row.predecessor.id:
                row.predecessor_id, row.dirty = row.predecessor.id, True
        self._linked.clear()

    def _change(
        self, state: _SourceState, old: _Row, item: Exclusion, provenance: Provenance
    ) -> None:
        way = direction(old.kind, old.ref.clause, item)
        end = State.RELAXED if way == "relaxed" else State.REMOVED
        branch = self._branches.get(old.id) if old.id is not None else None
        if branch is not None and same_line(branch.new, item.requirement):
            # The base branch's line became the proposed one: the branch was merged. Not
            # before it was proposed, whatever the commit's date (a fast-forward keeps the
            # time govern made the commit): merged, then changed, in the thread's order.
            provenance = replace(provenance, at=max(provenance.at, branch.since))
            detail = {"via": "git", "branch": branch.branch, "line": item.requirement}
            self._event(old, EventKind.MERGED, provenance, detail)
            self._merged.append(branch.proposal_id)
            del self._branches[branch.exclusion_id]
        self._remove(state, old, provenance, None)  # its end comes with the CHANGED event
        row = self.by_key.get(item.id)
        if row is not None:
            self._revive(state, row, item)
        else:
            row = self._new_row(state, item, provenance)
        if not self._would_loop(row, old):  # A -> B -> A again: keep the first link
            row.predecessor_id, row.predecessor = old.id, old
            self._linked.append(row)
        row.dirty = True
        state.active[item.id] = row
        self._event(
            row,
            EventKind.CHANGED,
            provenance,
            {"from": old.ref.clause, "to": item.clause, "direction": way},
            related=old,
            related_to=end,
        )
        self._annotate_new(row, item, provenance)
        self.counts.changed += 1

    def _remove(
        self,
        state: _SourceState,
        row: _Row,
        provenance: Provenance,
        detail: dict[str, Any] | None,
    ) -> None:
        row.removed_at = provenance.at
        row.dirty = True
        state.active.pop(row.ref.key, None)
        if detail is not None:  # a change records one event, on its successor
            self._event(row, EventKind.REMOVED, provenance, detail)
            self.counts.removed += 1

    def _would_loop(self, row: _Row, old: _Row) -> bool:
        """Whether linking ``row`` after ``old`` would close a cycle of predecessors."""
        seen: set[int] = set()
        current: _Row | None = old
        while current is not None and id(current) not in seen:
            if current is row:
                return True
            seen.add(id(current))
            current = current.predecessor or self.by_id.get(current.predecessor_id or -1)
        return False

    def finish(self) -> None:
        """Write what the comparison decided: changed rows, annotations, events."""
        self._insert_new_rows()
        self._compare_stored()
        dirty = [row for row in self.by_key.values() if row.dirty and row.id is not None]
        if dirty:
            tracking.update_exclusions(
                self.session,
                rows=[
                    {
                        "id": row.id,
                        "key": row.ref.key,
                        "source_id": row.source_id,
                        "line": row.ref.line,
                        "requirement": row.ref.requirement,
                        "state": row.state,
                        "removed_at": row.removed_at,
                        "predecessor_id": row.predecessor_id,
                    }
                    for row in dirty
                ],
            )
        tracking.retire_annotations(self.session, ids=self._retired)
        notes = [
            {
                "exclusion_id": note.row.id,
                "fingerprint": note.fingerprint,
                "current": note.current,
                "recorded_at": note.recorded_at,
                "commit": note.commit,
                **(note.values or {}),
            }
            for note in self._notes
            if note.row is not None
        ]
        tracking.insert_annotations(self.session, rows=notes)
        events = [
            {
                "exclusion_id": event.row.id,
                "kind": event.kind,
                "at": event.provenance.at,
                "recorded_at": self.now,
                "commit": event.provenance.commit,
                "pull_request": event.provenance.pull_request,
                "author": event.provenance.author,
                "related_id": event.related.id if event.related is not None else None,
                "detail": event.detail,
            }
            for event in self._events
        ]
        thread.append_batch(self.session, rows=events)
        for proposal_id in self._merged:  # recorded once: the proposal is open no more
            proposals.set_proposal_state(
                self.session, proposal_id=proposal_id, state=ProposalState.MERGED, at=self.now
            )
        self._merged.clear()
        self._notes.clear()
        self._retired.clear()
        self._events.clear()
        if self._relax:  # after the annotations: it reads their known-bad versions
            relaxations.refresh(self.session, exclusion_ids=self._relax)
            self._relax.clear()


def same_line(proposed: str | None, written: str) -> bool:
    """Whether a line as written is the one a proposal proposed: the same requirement
    (name, extras, specifiers, marker), however it is spaced."""
    if proposed is None:
        return False
    try:
        a, b = Requirement(proposed), Requirement(written)
    except InvalidRequirement:
        return " ".join(proposed.split()) == " ".join(written.split())
    return (
        canonicalize_name(a.name) == canonicalize_name(b.name)
        and a.extras == b.extras
        and a.specifier == b.specifier
        and str(a.marker) == str(b.marker)
    )


def _differences(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The annotation fields that differ, as ``{"field": {"from": ..., "to": ...}}``."""
    out: dict[str, Any] = {}
    for name, value in new.items():
        before = old.get(name)
        if _jsonable(before) != _jsonable(value):
            out[name] = {"from": _jsonable(before), "to": _jsonable(value)}
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _pair(
    appeared: Sequence[Exclusion], vanished: Sequence[_Row]
) -> tuple[list[tuple[_Row, Exclusion]], list[Exclusion], list[_Row]]:
    """Match clauses that changed in place: same package, marker and group.

    Within a package, a vanished clause pairs first with a new one of its own kind (a
    cap raised), then with any (a cap turned into a not-equal), in line order.
    """
    if not appeared or not vanished:
        return [], list(appeared), list(vanished)
    old_by: dict[tuple[str, str | None, str | None], list[_Row]] = defaultdict(list)
    for row in sorted(vanished, key=lambda r: (r.ref.line, r.ref.clause)):
        old_by[(row.ref.package, row.ref.marker, row.ref.group)].append(row)
    pairs: list[tuple[_Row, Exclusion]] = []
    rest: list[Exclusion] = []
    by_group: dict[tuple[str, str | None, str | None], list[Exclusion]] = defaultdict(list)
    for item in sorted(appeared, key=lambda s: (s.line, s.clause)):
        by_group[(item.package, item.marker, item.group)].append(item)
    for group_key, items in by_group.items():
        olds = old_by.get(group_key, [])
        unmatched: list[Exclusion] = []
        for item in items:
            same = next((o for o in olds if o.kind == item.kind), None)
            if same is not None:
                olds.remove(same)
                pairs.append((same, item))
            else:
                unmatched.append(item)
        for item in unmatched:
            if olds:
                pairs.append((olds.pop(0), item))
            else:
                rest.append(item)
    paired = {id(old) for old, _ in pairs}
    left = [row for row in vanished if id(row) not in paired]
    return pairs, rest, left


# -- the workflow: audit, provenance, replay, sync ---------------------------------------
