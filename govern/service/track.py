"""Tracking: the exclusions an audit sees, synced into the store as a governance thread.

Notes: docs/internals.md#service.
"""

from __future__ import annotations

import itertools
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from govern.audit import repository_name
from govern.config import Config
from govern.exclusions.model import Exclusion
from govern.service.replay import (
    Changes,
    LineReplay,
    SourceReader,
    Whole,
    kept_packages,
    split_lines,
)
from govern.service.tree_hash import tree_hash, unchanged
from govern.service.values import Provenance, SyncCounts
from govern.sources.model import Source as SourceRecord
from govern.store.db import Store
from govern.store.synced import SourceState, stored_sources

if TYPE_CHECKING:
    from govern.git.history import Commit, Git, Hunk, Patch, Revision
    from govern.report import AuditReport
    from govern.service.sync import Sync


@dataclass(frozen=True, slots=True)
class TrackOptions:
    """How ``govern track`` runs."""

    history: bool = False  # replay each source's git history first
    since: date | None = None  # ... from this day on
    now: datetime | None = None  # the sync's clock (tests)
    reread: bool = False  # replay by reading every version whole, not by diffs (the reference)


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


def _always(when: Provenance) -> Callable[[Exclusion], Provenance]:
    return lambda _item: when


def _git_path(git: Git | None, root: Path, path: str) -> str | None:
    if git is None:
        return None
    try:
        return (root / path).resolve().relative_to(git.top.resolve()).as_posix()
    except ValueError:
        return None


def _renames(
    git: Git, root: Path, sources: dict[str, SourceRecord], stored: dict[str, SourceState]
) -> dict[str, tuple[str, Provenance]]:
    """Sources that git renamed from a tracked path that is gone: new -> (old, commit).

    Only paths new to the store are looked at, and only when a tracked one has gone.
    """
    gone = {path for path in stored if path not in sources}
    if not gone:
        return {}
    out: dict[str, tuple[str, Provenance]] = {}
    top = git.top.resolve()
    for path in sources:
        git_path = _git_path(git, root, path)
        if path in stored or git_path is None:
            continue
        history = git.file_history(git_path)
        # The newest rename from a tracked path (Q -> R -> P finds Q).
        for before, after in reversed(list(itertools.pairwise(history))):
            if before.path == after.path:
                continue
            try:
                old = (top / before.path).relative_to(root.resolve()).as_posix()
            except ValueError:
                continue
            if old in gone:
                out[path] = (old, _provenance(after.commit))
                gone.discard(old)
                break
    return out


def _broken(source: SourceRecord) -> bool:
    """Whether a source has lines that do not parse.

    Such a line might hold exclusions: taking their absence as a removal would write a
    false event into an append-only thread. Every other line is synced; the exclusions
    of the package such a line names stay as they were (:func:`kept_packages`).
    """
    return any(problem.rule == "parse-error" for problem in source.problems)


@dataclass(slots=True)
class _Replay:
    """The commits of one source to replay, read from git before the write lock.

    The first commit's text is read whole; each later one is the one before with
    that commit's hunks applied (``patches``), or, when reread or a patch does not
    apply, read whole from git (``blobs``).
    """

    source: SourceRecord
    after: str | None  # the replay marker the plan was made against
    revisions: list[Revision]
    first: bytes | None  # the text at revisions[0]
    patches: dict[str, Patch]
    blobs: list[bytes | None] | None  # every version (reread, pyproject)


def _plan_replay(
    git: Git,
    root: Path,
    sources: dict[str, SourceRecord],
    stored: dict[str, SourceState],
    options: TrackOptions,
    notes: list[str],
) -> tuple[list[_Replay], dict[str, str]]:
    """What to replay, and markers to move without replaying (history rewritten).

    A source replayed before continues after its marker (``--since`` bounds only a
    first backfill). A source tracked without history is not replayed over its present.
    A lock is not replayed: its pins were never exclusions.
    """
    from govern.sources.model import SourceFormat

    plan: list[_Replay] = []
    moved: dict[str, str] = {}
    for path, source in sources.items():
        if source.lock is not None:
            # A lock's history holds no exclusion events (its pins are none): what it held
            # when is read instead (_plan_lock_replay).
            continue
        git_path = _git_path(git, root, path)
        if git_path is None:
            continue
        known = stored.get(path)
        last = known.commit if known is not None else None
        if last is None:
            if not options.history:
                continue
            if known is not None and known.tracked:
                notes.append(
                    f"{path}: tracked before without --history; its past is not replayed "
                    "over the present (track a fresh database to backfill)"
                )
                continue
            revisions = git.file_history(git_path, since=options.since)
        else:
            revisions = git.file_history(git_path)
            shas = [revision.commit.sha for revision in revisions]
            if last not in shas:
                if revisions:
                    moved[path] = shas[-1]
                    notes.append(
                        f"{path}: its replayed commit {last[:10]} is no longer in the history "
                        "(rebased?); replay continues from the current one"
                    )
                continue
            revisions = revisions[shas.index(last) + 1 :]
        if not revisions:
            continue
        if options.reread or source.format is SourceFormat.PYPROJECT:
            blobs = git.read_blobs([(r.commit.sha, r.path) for r in revisions])
            plan.append(_Replay(source, last, revisions, blobs[0], {}, blobs))
            continue
        (first,) = git.read_blobs([(revisions[0].commit.sha, revisions[0].path)])
        patches = (
            git.file_patches(git_path, after=revisions[0].commit.sha) if len(revisions) > 1 else {}
        )
        plan.append(_Replay(source, last, revisions, first, patches, None))
    return plan, moved


@dataclass(frozen=True, slots=True)
class _LockReplay:
    """The commits of one lock to read what it held, with their texts (None: deleted)."""

    path: str
    format: str
    revisions: list[Revision]
    blobs: list[bytes | None]
    rebuild: bool = False  # the history was rewritten: what was recorded is read again


def _plan_lock_replay(
    git: Git,
    root: Path,
    sources: dict[str, SourceRecord],
    stored: dict[str, SourceState],
    options: TrackOptions,
    notes: list[str],
) -> list[_LockReplay]:
    """The commits of each lock after its marker (its whole history with ``--history``
    the first time; ``--since`` bounds it), read before the write lock."""
    plan: list[_LockReplay] = []
    for path, source in sources.items():
        if source.lock is None:
            continue
        known = stored.get(path)
        last = known.commit if known is not None else None
        if last is None and not options.history:
            continue
        git_path = _git_path(git, root, path)
        if git_path is None:
            continue
        revisions = git.file_history(git_path, since=options.since if last is None else None)
        rebuild = False
        if last is not None:
            shas = [revision.commit.sha for revision in revisions]
            if last in shas:
                revisions = revisions[shas.index(last) + 1 :]
            else:  # the history was rewritten (rebased?): what the lock held is read again
                rebuild = True
                notes.append(
                    f"{path}: its last read commit {last[:10]} is no longer in the history "
                    "(rebased?); what the lock held is read again from its whole history"
                )
        if not revisions:
            continue
        # A deletion's path names no file at its commit: git gives None for it.
        blobs = git.read_blobs([(r.commit.sha, r.path) for r in revisions])
        plan.append(_LockReplay(path, str(source.format), revisions, blobs, rebuild))
    return plan


def _replay(
    sync: Sync,
    replay: _Replay,
    *,
    git: Git,
    config: Config,
    step: Callable[[str], None],
    notes: list[str],
) -> None:
    """Sync one source as it was at each commit of ``replay``, dated by its commit."""
    source = replay.source
    state = sync.sources.get(source.path)
    marker = state.row.commit if state is not None else None
    revisions, blobs = replay.revisions, replay.blobs
    start = 0
    if marker != replay.after:  # another sync replayed some of it meanwhile
        shas = [revision.commit.sha for revision in revisions]
        if marker not in shas:
            return
        start = shas.index(marker) + 1
    if start >= len(revisions):
        return
    fmt = str(source.format)
    broken_at: list[str] = []
    kept: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="govern-replay-") as scratch:
        reader = SourceReader(
            Path(scratch),
            path=source.path,
            fmt=source.format,
            config=config,
            repository=sync.repository_key,
        )
        lines = LineReplay(reader)
        text: list[bytes] = []
        for index, revision in enumerate(revisions):
            when = _provenance(revision.commit)
            if blobs is not None:  # every version read whole
                if index < start:
                    continue
                blob = blobs[index]
                outcome: Whole | Changes = Whole([], None)
                if blob is not None and not revision.deleted:
                    read, seen = reader.read(blob)
                    outcome = Whole(seen, kept_packages(read))
            else:
                if index % _AHEAD == 1:  # the regions of the next commits, in one read
                    lines.prefetch(_upcoming(replay, revisions[index : index + _AHEAD]))
                outcome, text = _next_version(git, replay, index, revision, text, lines)
                if index < start:
                    continue
                if index == start and isinstance(outcome, Changes):
                    outcome = lines.whole(text)  # the store is at another sync's replay
            if isinstance(outcome, Whole):
                kept = sync.sync_source(
                    source.path,
                    fmt,
                    outcome.seen,
                    _always(when),
                    when,
                    keep=outcome.keep,
                    lines=outcome.before,
                )
            else:
                gone: dict[str, int | None] = dict(outcome.gone)
                for key in kept:
                    gone.setdefault(key, None)
                kept = sync.sync_changes(
                    source.path,
                    fmt,
                    outcome.seen,
                    gone=gone,
                    outside=outcome.outside,
                    provenance=_always(when),
                    removal=when,
                    keep=outcome.keep,
                )
            if outcome.keep is not None:
                broken_at.append(revision.commit.sha[:10])
            step(source.path)
    sync.mark_replayed(source.path, fmt, revisions[-1].commit.sha)
    if broken_at:
        shown = ", ".join(broken_at[:5])
        more = f" and {len(broken_at) - 5} more" if len(broken_at) > 5 else ""
        notes.append(
            f"{source.path}: had lines that did not parse at {shown}{more}; every other "
            "line was synced, and the exclusions of those lines were kept as they were"
        )


_AHEAD = 64  # commits whose changed regions are read in one file


def _upcoming(replay: _Replay, revisions: list[Revision]) -> Iterator[Sequence[Hunk]]:
    """The hunks of the next commits, up to one that is not a plain text change."""
    for revision in revisions:
        patch = replay.patches.get(revision.commit.sha)
        if patch is None or not patch.usable or revision.deleted:
            return
        yield patch.hunks


def _next_version(
    git: Git,
    replay: _Replay,
    index: int,
    revision: Revision,
    text: list[bytes],
    lines: LineReplay,
) -> tuple[Whole | Changes, list[bytes]]:
    """The file at ``revision`` from the one before (its hunks), and what its lines hold."""
    if revision.deleted:
        return lines.whole([]), []
    if index == 0:
        new = split_lines(replay.first) if replay.first is not None else []
        return lines.whole(new), new
    patch = replay.patches.get(revision.commit.sha)
    applied = patch.apply(text) if patch is not None else None
    if patch is None or applied is None:
        (blob,) = git.read_blobs([(revision.commit.sha, revision.path)])
        new = split_lines(blob) if blob is not None else []
        return lines.whole(new), new
    return lines.step(applied, patch.hunks), applied


def track(
    store: Store,
    root: Path,
    files: list[Path] | None,
    *,
    config: Config,
    options: TrackOptions,
    progress: Progress | None = None,
) -> TrackResult:
    """Audit ``root`` (or ``files``) and sync its exclusions into ``store``, in one transaction.

    Git is read (history, blobs, blame) before the write lock is taken, so that a
    concurrent sync waits only for the other's database work.
    """
    from govern.git.history import Git
    from govern.sources.discover import discover

    now = options.now or datetime.now(UTC)
    key_name = repository_name(root, config)
    name = key_name or str(root.resolve())
    git = Git.discover(root)
    head = git.head() if git is not None else None
    discovered = (
        discover(root, include=config.include, exclude=config.exclude) if files is None else None
    )
    if discovered is not None:
        same = unchanged(store, root, name, config, discovered, head, history=options.history)
        if same is not None:
            return TrackResult(
                repository=name,
                counts=SyncCounts(unchanged=same.exclusions, sources=same.sources),
                replayed=0,
                commit=head,
            )
    from govern.audit import AuditOptions, audit_targets  # the sync, from here on
    from govern.policy.loader import load_policy
    from govern.service.sync import Sync  # the ORM
    from govern.store import tracking

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
    broken = sorted(path for path, source in sources.items() if _broken(source))
    for path in broken:
        notes.append(
            f"{path} has lines that do not parse (see govern audit); every other line is "
            "synced, and the tracked exclusions of those lines are kept as they were"
        )
    by_source: dict[str, list[Exclusion]] = defaultdict(list)
    for item in report.exclusions:
        if config.relax_strategy and item.annotation.strategy is None:  # the repository's
            item = replace(
                item, annotation=replace(item.annotation, strategy=config.relax_strategy)
            )
        by_source[item.source].append(item)

    # Git, before the lock: renames, the commits to replay, blame for new clauses.
    with store.connection() as conn:
        stored = stored_sources(conn, name=name)
    plan: list[_Replay] = []
    lock_plan: list[_LockReplay] = []
    moved: dict[str, str] = {}
    renamed: dict[str, tuple[str, Provenance]] = {}
    blamed: dict[str, dict[int, Commit]] = {}
    if git is not None:
        renamed = _renames(git, root, sources, stored)
        for new, (old, _) in renamed.items():
            stored[new] = stored.pop(old)
        plan, moved = _plan_replay(git, root, sources, stored, options, notes)
        lock_plan = _plan_lock_replay(git, root, sources, stored, options, notes)
        replayed_paths = {replay.source.path for replay in plan}
        for path, items in by_source.items():
            known = stored.get(path)
            fresh = known is None or any(item.id not in known.keys for item in items)
            # A replayed source's committed lines come with the replay: blame is needed
            # only for a line that appears after it (uncommitted), and then read late.
            if fresh and path not in replayed_paths:
                git_path = _git_path(git, root, path)
                blamed[path] = git.blame(git_path) if git_path else {}
    here = Provenance(at=now)

    def line_provenance(item: Exclusion) -> Provenance:
        if git is None:
            return here
        if item.source not in blamed:  # new since the plan: a concurrent edit
            git_path = _git_path(git, root, item.source)
            blamed[item.source] = git.blame(git_path) if git_path else {}
        commit = blamed[item.source].get(item.line)
        return _provenance(commit) if commit is not None else here

    replayed = 0
    total = sum(len(replay.revisions) for replay in plan) + sum(
        len(lock.revisions) for lock in lock_plan
    )

    def step(what: str) -> None:
        nonlocal replayed
        replayed += 1
        if progress is not None:
            progress(replayed, total, what)

    with store.session(write=True) as session:
        repository = tracking.lock_repository(session, name=name, root=str(root.resolve()), now=now)
        sync = Sync(session, repository, now=now, repository_key=key_name)
        for new, (old, when) in renamed.items():
            sync.rename_source(old, new, when)
        for replay in plan:
            assert git is not None  # a plan comes from git
            _replay(sync, replay, git=git, config=config, step=step, notes=notes)
        for lock in lock_plan:
            sync.lock_held(lock.path, lock.format, lock.revisions, lock.blobs, rebuild=lock.rebuild)
            for _revision in lock.revisions:
                step(lock.path)
        for path, sha in moved.items():
            sync.mark_replayed(path, str(sources[path].format), sha)
        # The working tree last: uncommitted lines too, dated now.
        for path, source in sources.items():
            sync.sync_source(
                path,
                str(source.format),
                by_source.get(path, []),
                line_provenance,
                here,
                keep=kept_packages(source),
            )
        if files is None:  # the whole repository was read: what is missing is gone
            sync.drop_sources(sources, here)
        sync.finish()
        repository.synced_at = now
        repository.synced_commit = head
        replaying = any(state.row.commit for state in sync.sources.values())
        repository.synced_tree_hash = (
            tree_hash(
                root,
                config,
                name,
                [*discovered, *(root / p for p in sources)],
                head if replaying else None,
            )
            if discovered is not None and not broken
            else None
        )
    notes.extend(_lock_notes(store, report, name))
    return TrackResult(
        repository=name, counts=sync.counts, replayed=replayed, commit=head, notes=tuple(notes)
    )


def _lock_notes(store: Store, report: AuditReport, name: str) -> list[str]:
    """The repository's locks judged with what the store knows (every tracked repository's
    ``bad=`` and failed verifications): a lock holding a version found bad elsewhere, or one
    its intent keeps out, is said after the sync."""
    if not any(source.lock is not None for source in report.sources):
        return []
    from govern.edit.blocks import same_version
    from govern.policy.engine import evaluate
    from govern.store.history import lock_history
    from govern.store.queries import known_bad
    from govern.text import line

    with store.connection() as conn:
        known = known_bad(conn)
        # A known-bad version a lock here held in the past (track --history): when. The
        # versions compare as PEP 440 ("2.0" is "2.0.0").
        past = [
            (held, why)
            for package, versions in sorted(known.items())
            for held in lock_history(conn, package=package, repository_name=name)
            if held.until is not None
            for bad, why in versions.items()
            if same_version(held.version, bad)
        ]
    findings = evaluate(
        report.policy,
        report.sources,
        report.exclusions,
        today=datetime.now(UTC).date(),
        known_bad=known,
    )
    return [
        f"{f.source}:{f.line}: {f.rule}: {f.message}"
        for f in findings
        if f.rule in ("lock-stale", "lock-holds-known-bad")
    ] + [
        f"{held.path}: {held.package} {held.version} was installed from "
        f"{held.since.date()} to {held.until.date()} ({held.since_commit[:10]}.."
        f"{(held.until_commit or '')[:10]}); it is known bad: {line(why, 200)}"
        for held, why in past
        if held.until is not None
    ]
