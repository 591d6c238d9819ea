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
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version
from sqlalchemy import text
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


def _bound(clause: str) -> Version | None:
    digits = clause.lstrip("<>=!~").removesuffix(".*")
    try:
        return Version(digits)
    except InvalidVersion:
        return None


def direction(old: Exclusion, new: Seen) -> str:
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


@dataclass
class _SourceState:
    row: Source
    active: dict[str, Exclusion] = field(default_factory=dict)


class Sync:
    """One sync of one repository, inside one write session (see :func:`track`)."""

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
        self.by_key: dict[str, Exclusion] = {}
        for row in session.exec(select(Exclusion).where(Exclusion.repository_id == repo_id)):
            self.by_key[row.key] = row
            if row.removed_at is None:
                by_source[row.source_id].active[row.key] = row
        self.current: dict[int, Annotation] = {
            note.exclusion_id: note
            for note in session.exec(
                select(Annotation)
                .join(Exclusion, col(Exclusion.id) == col(Annotation.exclusion_id))
                .where(Exclusion.repository_id == repo_id, col(Annotation.current))
            )
        }

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
        if state.row.id is None:
            self.session.flush()
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
                row.line, row.requirement = item.line, item.requirement
            self._annotate(row, item, removal)
        vanished = [row for key, row in state.active.items() if key not in now_seen]
        pairs, appeared, vanished = _pair(appeared, vanished)
        for item in appeared:
            self._add(state, item, provenance(item))
        for old, item in pairs:
            self._change(state, old, item, provenance(item))
        for row in vanished:
            self._remove(state, row, "removed", removal, {"clause": row.clause})

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
        row: Exclusion,
        kind: str,
        provenance: Provenance,
        detail: dict[str, Any],
        related: Exclusion | None = None,
    ) -> None:
        assert row.id is not None
        self.session.add(
            Event(
                exclusion_id=row.id,
                kind=kind,
                at=provenance.at,
                recorded_at=self.now,
                commit=provenance.commit,
                pull_request=provenance.pull_request,
                author=provenance.author,
                related_id=related.id if related is not None else None,
                detail=detail,
            )
        )

    def _note(self, row: Exclusion, values: dict[str, Any], provenance: Provenance) -> None:
        assert row.id is not None
        note = Annotation(
            exclusion_id=row.id,
            fingerprint=fingerprint(values),
            recorded_at=provenance.at,
            commit=provenance.commit,
            **values,
        )
        self.session.add(note)
        self.current[row.id] = note

    def _annotate(self, row: Exclusion, item: Seen, when: Provenance) -> None:
        assert row.id is not None
        values = annotation_values(item)
        before = self.current.get(row.id)
        if before is not None and before.fingerprint == fingerprint(values):
            return
        detail: dict[str, Any] = {}
        if before is not None:
            before.current = False
            for name, value in values.items():
                old = getattr(before, name)
                if _jsonable(old) != _jsonable(value):
                    detail[name] = {"from": _jsonable(old), "to": _jsonable(value)}
        self._note(row, values, when)
        self._event(row, "annotation-changed", when, detail)
        self.counts.annotation_changed += 1

    def _add(self, state: _SourceState, item: Seen, provenance: Provenance) -> Exclusion:
        row = self.by_key.get(item.id)
        detail: dict[str, Any] = {"clause": item.clause, "kind": str(item.kind)}
        if row is not None:  # the same key came back: same row, same thread
            row.removed_at = None
            row.state = "held"
            row.source_id = state.row.id or row.source_id
            row.line, row.requirement = item.line, item.requirement
            detail["restored"] = True
            self.counts.restored += 1
        else:
            row = self._new_row(state, item, provenance)
            self.counts.added += 1
        state.active[item.id] = row
        self._event(row, "added", provenance, detail)
        self._annotate_new(row, item, provenance)
        return row

    def _annotate_new(self, row: Exclusion, item: Seen, provenance: Provenance) -> None:
        assert row.id is not None
        values = annotation_values(item)
        before = self.current.get(row.id)
        if before is not None:
            if before.fingerprint == fingerprint(values):
                return
            before.current = False
        self._note(row, values, provenance)

    def _new_row(self, state: _SourceState, item: Seen, provenance: Provenance) -> Exclusion:
        assert self.repository.id is not None
        assert state.row.id is not None
        row = Exclusion(
            key=item.id,
            repository_id=self.repository.id,
            source_id=state.row.id,
            package=item.package,
            marker=item.marker,
            group=item.group,
            clause=item.clause,
            kind=str(item.kind),
            sub_kind=str(item.sub_kind),
            requirement=item.requirement,
            line=item.line,
            first_seen_at=provenance.at,
            introduced_commit=provenance.commit,
            introduced_pull_request=provenance.pull_request,
        )
        self.session.add(row)
        self.session.flush()  # the id, for its annotation and events
        self.by_key[item.id] = row
        return row

    def _change(
        self, state: _SourceState, old: Exclusion, item: Seen, provenance: Provenance
    ) -> None:
        way = direction(old, item)
        self._remove(
            state,
            old,
            "relaxed" if way == "relaxed" else "removed",
            provenance,
            None,
        )
        restored = item.id in self.by_key
        row = self.by_key.get(item.id) or self._new_row(state, item, provenance)
        if restored:
            row.removed_at = None
            row.state = "held"
            row.line, row.requirement = item.line, item.requirement
        row.predecessor_id = old.id
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
        row: Exclusion,
        end: str,
        provenance: Provenance,
        detail: dict[str, Any] | None,
    ) -> None:
        row.state = end
        row.removed_at = provenance.at
        state.active.pop(row.key, None)
        if detail is not None:  # a change records one event, on its successor
            self._event(row, "removed", provenance, detail)
            self.counts.removed += 1


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _pair(
    appeared: Sequence[Seen], vanished: Sequence[Exclusion]
) -> tuple[list[tuple[Exclusion, Seen]], list[Seen], list[Exclusion]]:
    """Match clauses that changed in place: same package, marker and group.

    Within a package, a vanished clause pairs first with a new one of its own kind (a
    cap raised), then with any (a cap turned into a not-equal), in line order.
    """
    if not appeared or not vanished:
        return [], list(appeared), list(vanished)
    old_by: dict[tuple[str, str | None, str | None], list[Exclusion]] = defaultdict(list)
    for row in sorted(vanished, key=lambda r: (r.line, r.clause)):
        old_by[(row.package, row.marker, row.group)].append(row)
    pairs: list[tuple[Exclusion, Seen]] = []
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

    now = options.now or utcnow()
    report = audit_targets(
        root,
        files,
        config=config,
        policy=load_policy("default", base=root),
        options=AuditOptions(today=now.date()),
    )
    key_name = repository_name(root, config)
    name = key_name or str(root.resolve())
    git = Git.discover(root)
    head = git.head() if git is not None else None
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
        repository.synced_at = now
        repository.synced_commit = head
    return TrackResult(
        repository=name, counts=sync.counts, replayed=replayed, commit=head, notes=tuple(notes)
    )
