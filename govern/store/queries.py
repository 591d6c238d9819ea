"""What the commands ask the store: exclusions with their state, and governance threads."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from packaging.utils import canonicalize_name
from sqlalchemy import select as columns
from sqlmodel import Session, col, or_, select

from govern.exclusions.states import ENDED, REJECTED, State
from govern.store.models import (
    Annotation,
    Candidate,
    Event,
    Exclusion,
    Release,
    Repository,
    Source,
    as_utc,
)


@dataclass(frozen=True, slots=True)
class ExclusionView:
    """One exclusion as ``govern status`` shows it."""

    id: str
    repository: str
    source: str
    line: int
    package: str
    clause: str
    requirement: str
    marker: str | None
    kind: str
    sub_kind: str
    state: str  # the lifecycle state, or "overdue" when the review date has passed
    first_seen: datetime
    removed: datetime | None
    age_days: int
    reason: str | None
    links: tuple[str, ...]
    owner: str | None
    review_by: date | None
    introduced_commit: str | None
    introduced_pull_request: int | None
    predecessor: int | None
    row_id: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``row_id`` and ``predecessor`` are internal)."""
        return {
            "id": self.id,
            "repository": self.repository,
            "source": self.source,
            "line": self.line,
            "package": self.package,
            "clause": self.clause,
            "requirement": self.requirement,
            "marker": self.marker,
            "kind": self.kind,
            "sub_kind": self.sub_kind,
            "state": self.state,
            "first_seen": self.first_seen.isoformat(),
            "removed": self.removed.isoformat() if self.removed else None,
            "age_days": self.age_days,
            "reason": self.reason,
            "links": list(self.links),
            "owner": self.owner,
            "review_by": self.review_by.isoformat() if self.review_by else None,
            "commit": self.introduced_commit,
            "pull_request": self.introduced_pull_request,
        }


def has_nul(*texts: str | None) -> bool:
    """Whether any of ``texts`` holds a NUL byte: a filter that matches nothing.

    No name, path or id govern stores can hold one; and the databases disagree on it
    (PostgreSQL refuses NUL in text, SQLite ends a LIKE pattern at it, matching every row).
    """
    return any(text and "\x00" in text for text in texts)


def _state(row: Exclusion, note: Annotation | None, today: date) -> str:
    if row.state in ENDED:
        return row.state
    if note is not None and note.review_by is not None and note.review_by < today:
        return State.OVERDUE
    return row.state


def _view(
    row: Exclusion,
    note: Annotation | None,
    source: Source,
    repository: Repository,
    now: datetime,
) -> ExclusionView:
    assert row.id is not None
    first = as_utc(row.first_seen_at)
    end = as_utc(row.removed_at) if row.removed_at else None
    return ExclusionView(
        id=row.key,
        repository=repository.name,
        source=source.path,
        line=row.line,
        package=row.package,
        clause=row.clause,
        requirement=row.requirement,
        marker=row.marker,
        kind=row.kind,
        sub_kind=row.sub_kind,
        state=_state(row, note, now.date()),
        first_seen=first,
        removed=end,
        age_days=max(0, ((end or now) - first).days),
        reason=note.reason if note else None,
        links=tuple(note.links) if note else (),
        owner=note.owner if note else None,
        review_by=note.review_by if note else None,
        introduced_commit=row.introduced_commit,
        introduced_pull_request=row.introduced_pull_request,
        predecessor=row.predecessor_id,
        row_id=row.id,
    )


# An exclusion's annotation in force (joined outer: not every exclusion has one).
CURRENT_NOTE = (col(Annotation.exclusion_id) == col(Exclusion.id)) & col(Annotation.current)


def joined(statement: Any) -> Any:
    """``statement`` (over Exclusion) joined to its source, repository and current note."""
    return (
        statement.join(Source, col(Source.id) == col(Exclusion.source_id))
        .join(Repository, col(Repository.id) == col(Exclusion.repository_id))
        .join(Annotation, CURRENT_NOTE, isouter=True)
    )


def exclusion_rows() -> Any:
    """Exclusions with their current annotation, source and repository (to filter)."""
    return joined(select(Exclusion, Annotation, Source, Repository))


def failed_versions(session: Session, ids: Sequence[int]) -> dict[int, set[str]]:
    """Versions whose verification failed (or that were marked bad), by exclusion."""
    out: dict[int, set[str]] = defaultdict(set)
    if not ids:
        return out
    for exclusion_id, version in session.execute(
        columns(col(Candidate.exclusion_id), col(Release.version))
        .join(Release, col(Release.id) == col(Candidate.release_id))
        .where(
            col(Candidate.exclusion_id).in_(list(ids)),
            col(Candidate.status).in_(REJECTED),
        )
    ):
        out[exclusion_id].add(version)
    return out


def _rows(
    session: Session, *where: Any
) -> list[tuple[Exclusion, Annotation | None, Source, Repository]]:
    statement = (
        exclusion_rows()
        .where(*where)
        .order_by(
            col(Repository.name), col(Source.path), col(Exclusion.line), col(Exclusion.clause)
        )
    )
    return list(session.exec(statement).all())


def exclusions(
    session: Session,
    *,
    now: datetime,
    packages: Sequence[str] = (),
    repositories: Sequence[str] = (),
    kinds: Sequence[str] = (),
    states: Sequence[str] = (),
    owner: str | None = None,
    include_ended: bool = False,
) -> list[ExclusionView]:
    """Exclusions with their state, newest annotation, age and owner, filtered.

    ``states`` may name ``overdue`` (active, review date passed) and the ended states;
    naming an ended state includes ended exclusions.
    """
    if has_nul(*packages, *repositories, *kinds, *states, owner):
        return []
    where: list[Any] = []
    if packages:
        where.append(col(Exclusion.package).in_([canonicalize_name(p) for p in packages]))
    if repositories:
        where.append(or_(*(col(Repository.name).contains(r) for r in repositories)))
    if kinds:
        where.append(col(Exclusion.kind).in_(list(kinds)))
    wanted = set(states)
    if not include_ended and not wanted & set(ENDED):
        where.append(col(Exclusion.removed_at).is_(None))
    views = [_view(*row, now) for row in _rows(session, *where)]
    if wanted:
        views = [v for v in views if v.state in wanted]
    if owner:
        views = [v for v in views if v.owner and owner.lower() in v.owner.lower()]
    return views


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """One event of a thread, with the exclusion it belongs to."""

    at: datetime
    kind: str
    exclusion: ExclusionView
    commit: str | None
    pull_request: int | None
    author: str | None
    detail: dict[str, Any]
    reason: str | None  # the reason as it stood after this event
    links: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "at": self.at.isoformat(),
            "kind": self.kind,
            "exclusion": self.exclusion.id,
            "source": self.exclusion.source,
            "package": self.exclusion.package,
            "clause": self.exclusion.clause,
            "commit": self.commit,
            "pull_request": self.pull_request,
            "author": self.author,
            "detail": self.detail,
            "reason": self.reason,
            "links": list(self.links),
        }


@dataclass(frozen=True, slots=True)
class Thread:
    """Exclusions that belong together (a clause and its successors, or a shared link)."""

    exclusions: tuple[ExclusionView, ...]
    events: tuple[TimelineEvent, ...]
    links: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "exclusions": [e.as_dict() for e in self.exclusions],
            "links": list(self.links),
            "events": [e.as_dict() for e in self.events],
        }


def threads(session: Session, query: str, *, now: datetime) -> list[Thread]:
    """The governance threads of a package (by name) or of one exclusion (by id).

    A thread is a clause with its predecessors and successors (``< 14.1.0`` that became
    ``!= 14.1.0``), joined with every exclusion that shares a linked issue or pull
    request with it (a cap on the same bug in another file, the same package's thread
    in another repository).
    """
    if has_nul(query):
        return []
    name = canonicalize_name(query)
    seed_query = columns(col(Exclusion.id)).where(
        or_(col(Exclusion.key) == query, col(Exclusion.package) == name)
    )
    seeds = [row_id for (row_id,) in session.execute(seed_query)]
    if not seeds:
        return []
    # Each connected part reached from the seeds is one thread. The graph is walked level by
    # level in SQL (predecessor edges both ways, and exclusions whose annotations share a
    # link), so a thread costs a few queries however large the store is.
    component: dict[int, int] = {}
    for seed in seeds:
        if seed in component:
            continue
        component[seed] = seed
        frontier = {seed}
        seen_links: set[str] = set()
        while frontier:
            reached = _predecessor_neighbours(session, frontier)
            links = _links_of(session, frontier) - seen_links
            seen_links |= links
            reached |= _sharing(session, links)
            frontier = reached - component.keys()
            for other in frontier:
                component[other] = seed
    all_rows: dict[int, tuple[Exclusion, Annotation | None, Source, Repository]] = {}
    members_ids = list(component)
    for start in range(0, len(members_ids), 500):
        for row in _rows(session, col(Exclusion.id).in_(members_ids[start : start + 500])):
            assert row[0].id is not None
            all_rows[row[0].id] = row
    notes = _all_notes(session, list(all_rows))
    groups: dict[int, list[int]] = defaultdict(list)
    for row_id in all_rows:
        groups[component[row_id]].append(row_id)
    views = {row_id: _view(*row, now) for row_id, row in all_rows.items() if row_id is not None}
    events = _events(session, list(views))
    out: list[Thread] = []
    for members in groups.values():
        member_views = sorted((views[m] for m in members), key=lambda v: (v.first_seen, v.row_id))
        timeline = sorted(
            (
                _timeline(event, views[event.exclusion_id], notes.get(event.exclusion_id, []))
                for m in members
                for event in events.get(m, [])
            ),
            key=lambda e: (e.at, e.exclusion.row_id),
        )
        shared = sorted({link for m in members for n in notes.get(m, []) for link in n.links})
        out.append(Thread(tuple(member_views), tuple(timeline), tuple(shared)))
    out.sort(key=lambda t: (t.exclusions[0].package != name, t.exclusions[0].first_seen))
    return out


_BATCH = 500


def _batches(ids: set[int]) -> list[list[int]]:
    ordered = sorted(ids)
    return [ordered[i : i + _BATCH] for i in range(0, len(ordered), _BATCH)]


def _predecessor_neighbours(session: Session, ids: set[int]) -> set[int]:
    """Exclusions one predecessor edge away (either direction) from any of ``ids``."""
    out: set[int] = set()
    for batch in _batches(ids):
        for row_id, predecessor in session.execute(
            columns(col(Exclusion.id), col(Exclusion.predecessor_id)).where(
                or_(col(Exclusion.id).in_(batch), col(Exclusion.predecessor_id).in_(batch))
            )
        ):
            out.add(row_id)
            if predecessor is not None:
                out.add(predecessor)
    return out


def _links_of(session: Session, ids: set[int]) -> set[str]:
    """Every link in any annotation version of ``ids``."""
    out: set[str] = set()
    for batch in _batches(ids):
        for (links,) in session.execute(
            columns(col(Annotation.links)).where(col(Annotation.exclusion_id).in_(batch))
        ):
            out.update(link for link in links or () if isinstance(link, str))
    return out


def _sharing(session: Session, links: set[str]) -> set[int]:
    """Exclusions with an annotation version that lists any of ``links``.

    The JSON column is matched as text first (``LIKE '%"<link>"%'``, which an index cannot
    serve but the database scans without decoding a row), then checked exactly.
    """
    import json

    from sqlalchemy import Text, cast

    out: set[int] = set()
    for link in sorted(links):
        needle = json.dumps(link)
        pattern = f"%{like_literal(needle)}%"
        for exclusion_id, found in session.execute(
            columns(col(Annotation.exclusion_id), col(Annotation.links)).where(
                cast(col(Annotation.links), Text).like(pattern, escape="\\")
            )
        ):
            if link in (found or ()):
                out.add(exclusion_id)
    return out


def like_literal(text: str) -> str:
    """``text`` for a LIKE pattern (``escape="\\"``): its own % and _ taken literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _all_notes(session: Session, ids: list[int | None]) -> dict[int, list[Annotation]]:
    out: dict[int, list[Annotation]] = defaultdict(list)
    statement = (
        select(Annotation).where(col(Annotation.exclusion_id).in_(ids)).order_by(col(Annotation.id))
    )
    for note in session.exec(statement):
        out[note.exclusion_id].append(note)
    return out


def _events(session: Session, ids: list[int]) -> dict[int, list[Event]]:
    out: dict[int, list[Event]] = defaultdict(list)
    statement = select(Event).where(col(Event.exclusion_id).in_(ids)).order_by(col(Event.id))
    for event in session.exec(statement):
        out[event.exclusion_id].append(event)
    return out


def _timeline(event: Event, view: ExclusionView, notes: list[Annotation]) -> TimelineEvent:
    at = as_utc(event.at)
    # The annotation in force right after the event: the newest recorded at or before it.
    note = None
    for candidate in notes:
        if as_utc(candidate.recorded_at) <= at:
            note = candidate
    if note is None and notes:
        note = notes[0]
    return TimelineEvent(
        at=at,
        kind=event.kind,
        exclusion=view,
        commit=event.commit,
        pull_request=event.pull_request,
        author=event.author,
        detail=dict(event.detail),
        reason=note.reason if note else None,
        links=tuple(note.links) if note else (),
    )
