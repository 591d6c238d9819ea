"""Tracking: the exclusions an audit sees, synced into the store as a governance thread.

A sync compares what a source holds now with what the store holds for it:

- a new key adds the exclusion with an ``added`` event (a key seen before and removed
  is restored, with the same row and its history);
- a changed reason, links, owner, review date, ... adds an annotation version and an
  ``annotation-changed`` event;
- a clause that changed in place (same package, source, marker and pyproject group:
  ``< 14.1.0`` became ``!= 14.1.0``) becomes a new exclusion linked to its predecessor,
  with a ``changed`` event; the predecessor is ``relaxed`` (or ``removed`` when the new
  clause is stricter);
- a vanished clause is ``removed``.

Nothing changes when nothing changed: a second sync writes no row. Every write of one
sync happens in one transaction, under a lock per repository, so that two syncs at once
end as one after the other, and a crash leaves the previous state.

``replay`` feeds the same sync one commit at a time, from a source's git history, so
that years of history yield their threads at once.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from packaging.version import InvalidVersion, Version
from sqlalchemy import func, insert, text, update
from sqlalchemy import select as columns
from sqlmodel import Session, col, select

from govern.audit import repository_name, source_exclusions
from govern.config import Config
from govern.exclusions.model import Exclusion as Seen
from govern.sources.model import Source as SourceRecord
from govern.store.db import Store, advisory_key
from govern.store.models import Annotation, Event, Exclusion, Repository, Source, utcnow

if TYPE_CHECKING:
    from govern.forge.git import Commit, Git, Revision

#: Lifecycle states (DESIGN.md); ``overdue`` is derived from the review date, not stored.
ACTIVE_STATES = ("held", "candidate", "verifying", "verified", "proposed")
ENDED_STATES = ("relaxed", "removed")


@dataclass(frozen=True, slots=True)
class Provenance:
    """When and where a change happened: a commit (with its pull request) or just a time."""

    at: datetime
    commit: str | None = None
    pull_request: int | None = None
    author: str | None = None


@dataclass(slots=True)
class SyncCounts:
    """What one sync did, by event kind."""

    added: int = 0
    restored: int = 0
    changed: int = 0
    annotation_changed: int = 0
    removed: int = 0
    unchanged: int = 0
    sources: int = 0

    @property
    def events(self) -> int:
        """Events written."""
        return self.added + self.restored + self.changed + self.annotation_changed + self.removed

    def as_dict(self) -> dict[str, int]:
        """The counts, for JSON output."""
        return {
            "sources": self.sources,
            "added": self.added,
            "restored": self.restored,
            "changed": self.changed,
            "annotation_changed": self.annotation_changed,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "events": self.events,
        }


def annotation_values(seen: Seen) -> dict[str, Any]:
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
    }


def fingerprint(values: dict[str, Any]) -> str:
    """A hash of the annotation fields: equal when nothing a reader sees has changed."""
    raw = json.dumps(values, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class _Clause(Protocol):
    kind: str
    clause: str


def _bound(clause: str) -> Version | None:
    digits = clause.lstrip("<>=!~").removesuffix(".*")
    try:
        return Version(digits)
    except InvalidVersion:
        return None


def direction(old: _Clause, new: Seen) -> str:
    """Whether a clause that changed in place lets more versions in (``relaxed``) or fewer.

    A cap or pin that became a not-equal is relaxed (the CuPy case); a cap raised is
    relaxed, lowered is ``tightened``; anything else is ``changed``.
    """
    order = {"ban": 0, "pin": 1, "cap": 2, "not-equal": 3}
    if old.kind != new.kind:
        if old.kind in order and new.kind in order:
            return "relaxed" if order[new.kind] > order[old.kind] else "tightened"
        return "changed"
    before, after = _bound(old.clause), _bound(new.clause)
    if before is None or after is None or before == after or old.kind == "not-equal":
        return "changed"
    return "relaxed" if after > before else "tightened"


@dataclass(slots=True, eq=False)
class _Row:
    """An exclusion as the sync sees it: loaded by columns, written back in bulk."""

    id: int | None
    key: str
    source_id: int
    package: str
    marker: str | None
    group: str | None
    kind: str
    sub_kind: str
    clause: str
    line: int
    requirement: str
    state: str
    removed_at: datetime | None
    predecessor_id: int | None
    dirty: bool = False


_ROW_COLUMNS = (
    col(Exclusion.id),
    col(Exclusion.key),
    col(Exclusion.source_id),
    col(Exclusion.package),
    col(Exclusion.marker),
    col(Exclusion.group),
    col(Exclusion.kind),
    col(Exclusion.sub_kind),
    col(Exclusion.clause),
    col(Exclusion.line),
    col(Exclusion.requirement),
    col(Exclusion.state),
    col(Exclusion.removed_at),
    col(Exclusion.predecessor_id),
)


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
class _PendingEvent:
    row: _Row
    kind: str
    provenance: Provenance
    detail: dict[str, Any]
    related: _Row | None


@dataclass
class _SourceState:
    row: Source
    active: dict[str, _Row] = field(default_factory=dict)


class Sync:
    """One sync of one repository, inside one write session (see :func:`track`).

    The comparison runs on plain records; new exclusions are inserted in one batch
    per source (their ids come back with ``RETURNING``), and annotations, events and
    changed rows are written in batches by :meth:`finish`: a few dozen statements for
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
        for source in session.exec(select(Source).where(Source.repository_id == repo_id)):
            self.sources[source.path] = _SourceState(source)
        by_source = {state.row.id: state for state in self.sources.values()}
        self.by_key: dict[str, _Row] = {}
        for values in session.execute(
            columns(*_ROW_COLUMNS).where(col(Exclusion.repository_id) == repo_id)
        ):
            row = _Row(*values)
            self.by_key[row.key] = row
            if row.removed_at is None:
                by_source[row.source_id].active[row.key] = row
        self.current: dict[int, _Note] = {}
        current = (
            columns(col(Annotation.id), col(Annotation.exclusion_id), col(Annotation.fingerprint))
            .join(Exclusion, col(Exclusion.id) == col(Annotation.exclusion_id))
            .where(col(Exclusion.repository_id) == repo_id, col(Annotation.current))
        )
        for note_id, exclusion_id, digest in session.execute(current):
            self.current[exclusion_id] = _Note(fingerprint=digest, id=note_id)
        self._new_notes: dict[int, _Note] = {}  # by id() of the row, for rows without ids
        self._notes: list[_Note] = []
        self._retired: list[int] = []
        self._events: list[_PendingEvent] = []
        self._inserts: list[tuple[_Row, datetime, str | None, int | None]] = []

    # -- sources --------------------------------------------------------------------

    def _source(self, path: str, fmt: str, at: datetime) -> _SourceState:
        state = self.sources.get(path)
        if state is None:
            assert self.repository.id is not None
            row = Source(
                repository_id=self.repository.id,
                path=path,
                format=fmt,
                first_seen_at=at,
                last_seen_at=at,
            )
            self.session.add(row)
            self.session.flush()
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
        seen: Iterable[Seen],
        provenance: Callable[[Seen], Provenance],
        removal: Provenance,
    ) -> None:
        """Bring one source's exclusions in the store to ``seen``."""
        self.counts.sources += 1
        state = self._source(path, fmt, removal.at)
        now_seen: dict[str, Seen] = {}
        for item in seen:
            now_seen.setdefault(item.id, item)
        appeared: list[Seen] = []
        for key, item in now_seen.items():
            row = state.active.get(key)
            if row is None:
                appeared.append(item)
                continue
            self.counts.unchanged += 1
            if row.line != item.line or row.requirement != item.requirement:
                row.line, row.requirement, row.dirty = item.line, item.requirement, True
            self._annotate(row, item, removal)
        vanished = [row for key, row in state.active.items() if key not in now_seen]
        pairs, appeared, vanished = _pair(appeared, vanished)
        for item in appeared:
            self._add(state, item, provenance(item))
        for old, item in pairs:
            self._change(state, old, item, provenance(item))
        for row in vanished:
            self._remove(state, row, "removed", removal, {"clause": row.clause})
        self._insert_new_rows()

    def drop_sources(self, keep: Iterable[str], removal: Provenance) -> None:
        """Sources no longer present: their exclusions are removed."""
        wanted = set(keep)
        for path, state in self.sources.items():
            if path in wanted or not state.row.present:
                continue
            for row in list(state.active.values()):
                self._remove(state, row, "removed", removal, {"clause": row.clause})
            state.row.present = False
            state.row.last_seen_at = removal.at

    # -- the changes ------------------------------------------------------------------

    def _event(
        self,
        row: _Row,
        kind: str,
        provenance: Provenance,
        detail: dict[str, Any],
        related: _Row | None = None,
    ) -> None:
        self._events.append(_PendingEvent(row, kind, provenance, detail, related))

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

    def _annotate(self, row: _Row, item: Seen, when: Provenance) -> None:
        values = annotation_values(item)
        digest = fingerprint(values)
        before = self._note_of(row)
        if before is not None and before.fingerprint == digest:
            return
        detail: dict[str, Any] = {}
        if before is not None:
            old_values = before.values if before.values is not None else self._stored(before)
            self._retire(before)
            for name, value in values.items():
                old = old_values.get(name)
                if _jsonable(old) != _jsonable(value):
                    detail[name] = {"from": _jsonable(old), "to": _jsonable(value)}
        self._note(row, values, digest, when)
        self._event(row, "annotation-changed", when, detail)
        self.counts.annotation_changed += 1

    def _stored(self, note: _Note) -> dict[str, Any]:
        """The fields of a stored annotation (read only when one has changed)."""
        stored = self.session.get(Annotation, note.id)
        if stored is None:  # pragma: no cover - the row was read in this transaction
            return {}
        return {name: getattr(stored, name) for name in _NOTE_FIELDS}

    def _annotate_new(self, row: _Row, item: Seen, when: Provenance) -> None:
        values = annotation_values(item)
        digest = fingerprint(values)
        before = self._note_of(row)
        if before is not None:
            if before.fingerprint == digest:
                return
            self._retire(before)
        self._note(row, values, digest, when)

    def _add(self, state: _SourceState, item: Seen, provenance: Provenance) -> _Row:
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
        self._event(row, "added", provenance, detail)
        self._annotate_new(row, item, provenance)
        return row

    def _revive(self, state: _SourceState, row: _Row, item: Seen) -> None:
        assert state.row.id is not None
        row.removed_at = None
        row.state = "held"
        row.source_id = state.row.id
        row.line, row.requirement = item.line, item.requirement
        row.dirty = True

    def _new_row(self, state: _SourceState, item: Seen, provenance: Provenance) -> _Row:
        assert state.row.id is not None
        row = _Row(
            id=None,
            key=item.id,
            source_id=state.row.id,
            package=item.package,
            marker=item.marker,
            group=item.group,
            kind=str(item.kind),
            sub_kind=str(item.sub_kind),
            clause=item.clause,
            line=item.line,
            requirement=item.requirement,
            state="held",
            removed_at=None,
            predecessor_id=None,
        )
        self._inserts.append((row, provenance.at, provenance.commit, provenance.pull_request))
        self.by_key[item.id] = row
        return row

    def _insert_new_rows(self) -> None:
        """Insert the exclusions this source added, in one batch, and learn their ids."""
        if not self._inserts:
            return
        assert self.repository.id is not None
        rows = [
            {
                "key": row.key,
                "repository_id": self.repository.id,
                "source_id": row.source_id,
                "package": row.package,
                "marker": row.marker,
                "group": row.group,
                "clause": row.clause,
                "kind": row.kind,
                "sub_kind": row.sub_kind,
                "requirement": row.requirement,
                "line": row.line,
                "state": row.state,
                "predecessor_id": row.predecessor_id,
                "first_seen_at": at,
                "removed_at": row.removed_at,
                "introduced_commit": commit,
                "introduced_pull_request": pull_request,
            }
            for row, at, commit, pull_request in self._inserts
        ]
        statement = insert(Exclusion).returning(col(Exclusion.id), sort_by_parameter_order=True)
        ids = self.session.execute(statement, rows).scalars().all()
        for (row, *_rest), new_id in zip(self._inserts, ids, strict=True):
            row.id = new_id
            row.dirty = False  # inserted as it stands
            note = self._new_notes.pop(id(row), None)
            if note is not None:
                self.current[new_id] = note
        self._inserts.clear()

    def _change(self, state: _SourceState, old: _Row, item: Seen, provenance: Provenance) -> None:
        way = direction(old, item)
        self._remove(state, old, "relaxed" if way == "relaxed" else "removed", provenance, None)
        row = self.by_key.get(item.id)
        if row is not None:
            self._revive(state, row, item)
        else:
            row = self._new_row(state, item, provenance)
        row.predecessor_id = old.id
        row.dirty = True
        state.active[item.id] = row
        self._event(
            row,
            "changed",
            provenance,
            {"from": old.clause, "to": item.clause, "direction": way},
            related=old,
        )
        self._annotate_new(row, item, provenance)
        self.counts.changed += 1

    def _remove(
        self,
        state: _SourceState,
        row: _Row,
        end: str,
        provenance: Provenance,
        detail: dict[str, Any] | None,
    ) -> None:
        row.state = end
        row.removed_at = provenance.at
        row.dirty = True
        state.active.pop(row.key, None)
        if detail is not None:  # a change records one event, on its successor
            self._event(row, "removed", provenance, detail)
            self.counts.removed += 1

    def finish(self) -> None:
        """Write what the comparison decided: changed rows, annotations, events."""
        self._insert_new_rows()
        dirty = [row for row in self.by_key.values() if row.dirty and row.id is not None]
        if dirty:
            self.session.execute(
                update(Exclusion),
                [
                    {
                        "id": row.id,
                        "source_id": row.source_id,
                        "line": row.line,
                        "requirement": row.requirement,
                        "state": row.state,
                        "removed_at": row.removed_at,
                        "predecessor_id": row.predecessor_id,
                    }
                    for row in dirty
                ],
            )
        if self._retired:
            self.session.execute(
                update(Annotation)
                .where(col(Annotation.id).in_(self._retired))
                .values(current=False)
            )
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
        if notes:
            self.session.execute(insert(Annotation), notes)
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
        if events:
            self.session.execute(insert(Event), events)
        self._notes.clear()
        self._retired.clear()
        self._events.clear()


_NOTE_FIELDS = ("reason", "links", "bad_versions", "owner", "review_by", "verify", "profiles")


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _pair(
    appeared: Sequence[Seen], vanished: Sequence[_Row]
) -> tuple[list[tuple[_Row, Seen]], list[Seen], list[_Row]]:
    """Match clauses that changed in place: same package, marker and group.

    Within a package, a vanished clause pairs first with a new one of its own kind (a
    cap raised), then with any (a cap turned into a not-equal), in line order.
    """
    if not appeared or not vanished:
        return [], list(appeared), list(vanished)
    old_by: dict[tuple[str, str | None, str | None], list[_Row]] = defaultdict(list)
    for row in sorted(vanished, key=lambda r: (r.line, r.clause)):
        old_by[(row.package, row.marker, row.group)].append(row)
    pairs: list[tuple[_Row, Seen]] = []
    rest: list[Seen] = []
    by_group: dict[tuple[str, str | None, str | None], list[Seen]] = defaultdict(list)
    for item in sorted(appeared, key=lambda s: (s.line, s.clause)):
        by_group[(item.package, item.marker, item.group)].append(item)
    for group_key, items in by_group.items():
        olds = old_by.get(group_key, [])
        unmatched: list[Seen] = []
        for item in items:
            same = next((o for o in olds if o.kind == str(item.kind)), None)
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


def lock_repository(session: Session, name: str, root: str, now: datetime) -> Repository:
    """The repository's row, created if new, with this transaction holding its lock.

    PostgreSQL: a transaction-scoped advisory lock per repository name (a second sync of
    the same repository waits for the first to commit, then sees its rows). SQLite: the
    write session already holds the database's write lock (``BEGIN IMMEDIATE``).
    """
    bind = session.get_bind()
    if bind.dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": advisory_key(name)})
    repository = session.exec(select(Repository).where(Repository.name == name)).first()
    if repository is None:
        repository = Repository(name=name, root=root, created_at=now)
        session.add(repository)
        session.flush()
    elif repository.root != root:
        repository.root = root
    return repository


# -- the workflow: audit, provenance, replay, sync ---------------------------------------


@dataclass(frozen=True, slots=True)
class TrackOptions:
    """How ``govern track`` runs."""

    history: bool = False  # replay each source's git history first
    since: date | None = None  # ... from this day on
    now: datetime | None = None  # the sync's clock (tests)


@dataclass(frozen=True, slots=True)
class TrackResult:
    """What a ``govern track`` run did."""

    repository: str
    counts: SyncCounts
    replayed: int  # commits replayed
    commit: str | None  # HEAD when the sync ran
    notes: tuple[str, ...] = ()  # things the user should know (not errors)


Progress = Callable[[int, int, str], None]  # (done, total, what)


def _provenance(commit: Commit) -> Provenance:
    return Provenance(
        at=commit.date,
        commit=commit.sha,
        pull_request=commit.pull_request,
        author=commit.author,
    )


def _always(when: Provenance) -> Callable[[Seen], Provenance]:
    return lambda _item: when


def _git_path(git: Git | None, root: Path, path: str) -> str | None:
    if git is None:
        return None
    try:
        return (root / path).resolve().relative_to(git.top.resolve()).as_posix()
    except ValueError:
        return None


def _pending(sync: Sync, git: Git, path: str, git_path: str, since: date | None) -> list[Revision]:
    """The commits of one source not yet replayed into the store, oldest first."""
    revisions = git.file_history(git_path, since=since)
    state = sync.sources.get(path)
    last = state.row.commit if state is not None else None
    if last is None:
        return revisions
    shas = [r.commit.sha for r in revisions]
    if last not in shas:
        return []  # history rewritten or bounded out: the working tree sync covers it
    return revisions[shas.index(last) + 1 :]


def _replay_source(
    sync: Sync,
    git: Git,
    source: SourceRecord,
    revisions: Sequence[Revision],
    *,
    config: Config,
    step: Callable[[str], None],
) -> None:
    """Sync one source as it was at each of ``revisions``, dated by their commits."""
    blobs = git.read_blobs([(r.commit.sha, r.path) for r in revisions])
    with tempfile.TemporaryDirectory(prefix="govern-replay-") as scratch:
        file = Path(scratch) / Path(source.path).name
        for revision, blob in zip(revisions, blobs, strict=True):
            when = _provenance(revision.commit)
            seen: list[Seen] = []
            if blob is not None and not revision.deleted:
                file.write_bytes(blob)
                _, seen = source_exclusions(
                    file,
                    display_path=source.path,
                    fmt=source.format,
                    config=config,
                    repository=sync.repository_key,
                )
            sync.sync_source(source.path, str(source.format), seen, _always(when), when)
            step(source.path)
    sync.sources[source.path].row.commit = revisions[-1].commit.sha


def tree_digest(
    root: Path, config: Config, name: str, files: Iterable[Path], head: str | None
) -> str | None:
    """A hash of everything a sync of ``root`` reads, or None when that cannot be known.

    The files' bytes, the configuration, the repository's name, govern's version and,
    for a repository whose history is replayed, HEAD. A file that uses ``${VAR}`` reads
    the environment too: then there is no digest (every sync runs in full).
    """
    from govern import __version__

    digest = hashlib.sha256()
    for part in (__version__, name, repr(config), head or ""):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    for path in sorted({_relative(root, file) for file in files}):
        try:
            data = (root / path).read_bytes()
        except OSError:
            data = None
        if data is not None and b"${" in data:
            return None
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(hashlib.sha256(data).digest() if data is not None else b"missing")
    return digest.hexdigest()


def _relative(root: Path, file: Path) -> str:
    try:
        return file.relative_to(root).as_posix()
    except ValueError:
        return file.as_posix()


def _unchanged(
    store: Store,
    root: Path,
    name: str,
    config: Config,
    discovered: list[Path],
    head: str | None,
    options: TrackOptions,
) -> TrackResult | None:
    """The result of a sync that has nothing to do, or None when it must run in full.

    Nothing to do: the repository's digest (files read last time and now, configuration,
    govern's version, HEAD when its history is replayed) is the one stored by the last
    sync, and ``--history`` has nothing left to backfill.
    """
    with store.session() as session:
        repository = session.exec(select(Repository).where(Repository.name == name)).first()
        if repository is None or repository.digest is None or repository.id is None:
            return None
        present = session.exec(
            select(Source).where(Source.repository_id == repository.id, col(Source.present))
        ).all()
        replaying = any(source.commit for source in present)
        if options.history and not all(source.commit for source in present):
            return None
        files = [*discovered, *(root / source.path for source in present)]
        if tree_digest(root, config, name, files, head if replaying else None) != repository.digest:
            return None
        active = session.exec(
            select(func.count())
            .select_from(Exclusion)
            .where(Exclusion.repository_id == repository.id, col(Exclusion.removed_at).is_(None))
        ).one()
    counts = SyncCounts(unchanged=int(active), sources=len(present))
    return TrackResult(repository=name, counts=counts, replayed=0, commit=head)


def track(
    store: Store,
    root: Path,
    files: list[Path] | None,
    *,
    config: Config,
    options: TrackOptions,
    progress: Progress | None = None,
) -> TrackResult:
    """Audit ``root`` (or ``files``) and sync its exclusions into ``store``, in one transaction."""
    from govern.audit import AuditOptions, audit_targets
    from govern.forge.git import Git
    from govern.policy.loader import load_policy
    from govern.sources.discover import discover

    now = options.now or utcnow()
    key_name = repository_name(root, config)
    name = key_name or str(root.resolve())
    git = Git.discover(root)
    head = git.head() if git is not None else None
    discovered = (
        discover(root, include=config.include, exclude=config.exclude) if files is None else None
    )
    if discovered is not None:
        unchanged = _unchanged(store, root, name, config, discovered, head, options)
        if unchanged is not None:
            return unchanged
    report = audit_targets(
        root,
        files,
        config=config,
        policy=load_policy("default", base=root),
        options=AuditOptions(today=now.date(), findings=False),
    )
    notes: list[str] = []
    if options.history and git is None:
        notes.append(f"{root} is not in a git repository: no history to replay")
    sources = {source.path: source for source in report.sources}
    by_source: dict[str, list[Seen]] = defaultdict(list)
    for item in report.exclusions:
        by_source[item.source].append(item)
    with store.session(write=True) as session:
        repository = lock_repository(session, name, str(root.resolve()), now)
        sync = Sync(session, repository, now=now, repository_key=key_name)
        replayed = 0
        if git is not None:
            plan: list[tuple[SourceRecord, list[Revision]]] = []
            for path, source in sources.items():
                git_path = _git_path(git, root, path)
                state = sync.sources.get(path)
                if git_path is None:
                    continue
                if state is None or state.row.commit is None:
                    if not options.history:
                        continue
                    if state is not None and any(
                        row.source_id == state.row.id for row in sync.by_key.values()
                    ):
                        notes.append(
                            f"{path}: tracked before without --history; its past is not "
                            "replayed over the present (track a fresh database to backfill)"
                        )
                        continue
                revisions = _pending(sync, git, path, git_path, options.since)
                if revisions:
                    plan.append((source, revisions))
            total = sum(len(revisions) for _, revisions in plan)

            def step(what: str) -> None:
                nonlocal replayed
                replayed += 1
                if progress is not None:
                    progress(replayed, total, what)

            for source, revisions in plan:
                _replay_source(sync, git, source, revisions, config=config, step=step)
        # The working tree last: uncommitted lines too, dated now.
        blamed: dict[str, dict[int, Commit]] = {}
        here = Provenance(at=now)

        def line_provenance(item: Seen) -> Provenance:
            if git is None:
                return here
            if item.source not in blamed:
                git_path = _git_path(git, root, item.source)
                blamed[item.source] = git.blame(git_path) if git_path else {}
            commit = blamed[item.source].get(item.line)
            return _provenance(commit) if commit is not None else here

        for path, source in sources.items():
            sync.sync_source(
                path, str(source.format), by_source.get(path, []), line_provenance, here
            )
        sync.drop_sources(sources, here)
        sync.finish()
        repository.synced_at = now
        repository.synced_commit = head
        replaying = any(state.row.commit for state in sync.sources.values())
        repository.digest = (
            tree_digest(
                root,
                config,
                name,
                [*discovered, *(root / p for p in sources)],
                head if replaying else None,
            )
            if discovered is not None
            else None
        )
    return TrackResult(
        repository=name, counts=sync.counts, replayed=replayed, commit=head, notes=tuple(notes)
    )
