"""The store's read side: exclusions as ``govern status``, the dashboard and the API show them.

The pieces the other read modules share (an exclusion's rows joined, its public form, the
versions known bad), and the lists: :func:`exclusions` (``govern status``), :func:`browse`
(the dashboard's list, filtered, searched and paginated in SQL), :func:`find` and
:func:`counts`. Threads and one exclusion's page are in :mod:`govern.store.history`, the
front page in :mod:`govern.store.pending`, debt over time in :mod:`govern.store.debt`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from sqlalchemy import Connection, func, or_
from sqlalchemy import select as columns
from sqlmodel import Session, col, select

from govern.exclusions.states import ENDED, REJECTED, State
from govern.store.models import (
    Candidate,
    Repository,
    StoredAnnotation,
    StoredExclusion,
    StoredRelease,
    StoredSource,
    as_utc,
)
from govern.store.views import ExclusionPage, ExclusionPublic

PER_PAGE = 50
MAX_PER_PAGE = 200

# An exclusion with its current annotation (None: it has none), source and repository.
ExclusionRow = tuple[StoredExclusion, StoredAnnotation | None, StoredSource, Repository]


def has_nul(*texts: str | None) -> bool:
    """Whether any of ``texts`` holds a NUL byte: a filter that matches nothing.

    No name, path or id govern stores can hold one; and the databases disagree on it
    (PostgreSQL refuses NUL in text, SQLite ends a LIKE pattern at it, matching every row).
    """
    return any(text and "\x00" in text for text in texts)


def like_literal(text: str) -> str:
    """``text`` for a LIKE pattern (``escape="\\"``): its own % and _ taken literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def shown_state(row: StoredExclusion, note: StoredAnnotation | None, today: date) -> State:
    """The state shown: the stored one, or ``overdue`` for an open one past its review date."""
    if row.state in ENDED:
        return row.state
    if note is not None and note.review_by is not None and note.review_by < today:
        return State.OVERDUE
    return row.state


def exclusion_public(
    row: ExclusionRow, *, now: datetime, assigned_owner: bool = True
) -> ExclusionPublic:
    """The public form of an exclusion's row; ``assigned_owner``: the owner set on the
    dashboard, if any, over the annotation's (``govern status`` shows the annotation's)."""
    exclusion, note, source, repository = row
    first = as_utc(exclusion.first_seen_at)
    end = as_utc(exclusion.removed_at) if exclusion.removed_at else None
    owner = note.owner if note else None
    if assigned_owner and exclusion.assigned_owner:
        owner = exclusion.assigned_owner
    return ExclusionPublic(
        id=exclusion.key,
        repository=repository.name,
        source=source.path,
        line=exclusion.line,
        package=exclusion.package,
        clause=exclusion.clause,
        requirement=exclusion.requirement,
        marker=exclusion.marker,
        kind=exclusion.kind,
        sub_kind=exclusion.sub_kind,
        state=shown_state(exclusion, note, now.date()),
        first_seen=first,
        removed=end,
        age_days=max(0, ((end or now) - first).days),
        reason=note.reason if note else None,
        links=list(note.links) if note else [],
        owner=owner,
        review_by=note.review_by if note else None,
        commit=exclusion.introduced_commit,
        pull_request=exclusion.introduced_pull_request,
    )


# An exclusion's annotation in force (joined outer: not every exclusion has one).
CURRENT_NOTE = (col(StoredAnnotation.exclusion_id) == col(StoredExclusion.id)) & col(
    StoredAnnotation.current
)


def joined(statement: Any) -> Any:
    """``statement`` (over Exclusion) joined to its source, repository and current note."""
    return (
        statement.join(StoredSource, col(StoredSource.id) == col(StoredExclusion.source_id))
        .join(Repository, col(Repository.id) == col(StoredExclusion.repository_id))
        .join(StoredAnnotation, CURRENT_NOTE, isouter=True)
    )


def exclusion_rows() -> Any:
    """Exclusions with their current annotation, source and repository (to filter)."""
    return joined(select(StoredExclusion, StoredAnnotation, StoredSource, Repository))


def ordered_rows(session: Session, *where: Any) -> list[ExclusionRow]:
    """The exclusion rows matching ``where``, by repository, file, line and clause."""
    statement = (
        exclusion_rows()
        .where(*where)
        .order_by(
            col(Repository.name),
            col(StoredSource.path),
            col(StoredExclusion.line),
            col(StoredExclusion.clause),
        )
    )
    return list(session.exec(statement).all())


def failed_versions(
    session: Session | Connection, *, ids: Sequence[int] | None
) -> dict[int, set[str]]:
    """Versions whose verification failed (or that were marked bad), by exclusion (of
    ``ids``; None: of every exclusion)."""
    out: dict[int, set[str]] = defaultdict(set)
    if ids is not None and not ids:
        return out
    query = (
        columns(col(Candidate.exclusion_id), col(StoredRelease.version))
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .where(col(Candidate.status).in_(REJECTED))
    )
    if ids is not None:
        query = query.where(col(Candidate.exclusion_id).in_(list(ids)))
    for exclusion_id, version in session.execute(query):
        out[exclusion_id].add(version)
    return out


def newest_first(version: str) -> tuple[int, Any]:
    """A sort key putting versions newest first (PEP 440), those that do not parse last."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        return (1, version)
    return (0, _Reversed(parsed))


class _Reversed:
    """Orders versions newest first inside a sort key."""

    __slots__ = ("version",)

    def __init__(self, version: Version) -> None:
        self.version = version

    def __lt__(self, other: _Reversed) -> bool:
        return self.version > other.version

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.version == other.version

    def __hash__(self) -> int:
        return hash(self.version)


# -- govern status ---------------------------------------------------------------------------


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
) -> list[ExclusionPublic]:
    """Exclusions with their state, newest annotation, age and owner, filtered.

    ``states`` may name ``overdue`` (active, review date passed) and the ended states;
    naming an ended state includes ended exclusions.
    """
    if has_nul(*packages, *repositories, *kinds, *states, owner):
        return []
    where: list[Any] = []
    if packages:
        where.append(col(StoredExclusion.package).in_([canonicalize_name(p) for p in packages]))
    if repositories:
        where.append(or_(*(col(Repository.name).contains(r) for r in repositories)))
    if kinds:
        where.append(col(StoredExclusion.kind).in_(list(kinds)))
    wanted = set(states)
    if not include_ended and not wanted & set(ENDED):
        where.append(col(StoredExclusion.removed_at).is_(None))
    shown = [
        exclusion_public(row, now=now, assigned_owner=False)
        for row in ordered_rows(session, *where)
    ]
    if wanted:
        shown = [v for v in shown if v.state in wanted]
    if owner:
        shown = [v for v in shown if v.owner and owner.lower() in v.owner.lower()]
    return shown


# -- the dashboard's list ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Filters:
    """The list filters (query parameters of /exclusions and /api/v1/exclusions)."""

    repository: str | None = None
    package: str | None = None
    kind: str | None = None
    state: str | None = None
    owner: str | None = None
    q: str | None = None

    def as_query(self) -> dict[str, str]:
        """The filters that are set, as query parameters."""
        return {
            name: value
            for name in ("repository", "package", "kind", "state", "owner", "q")
            if (value := getattr(self, name))
        }


def browse(
    session: Session, *, filters: Filters, now: datetime, page: int, per_page: int
) -> ExclusionPage:
    """All exclusions matching the filters, one page of them, ordered by repository and file."""
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    page = max(1, page)
    if has_nul(*filters.as_query().values()):
        return ExclusionPage(items=[], total=0, page=page, per_page=per_page)
    where = _filtered(filters, now.date())
    counted = joined(columns(func.count()).select_from(StoredExclusion)).where(*where)
    total = session.execute(counted).one()[0]
    rows = session.exec(
        exclusion_rows()
        .where(*where)
        .order_by(
            col(Repository.name),
            col(StoredSource.path),
            col(StoredExclusion.line),
            col(StoredExclusion.id),
        )
        .offset((page - 1) * per_page)
        .limit(per_page)
    ).all()
    return ExclusionPage(
        items=[exclusion_public(row, now=now) for row in rows],
        total=total,
        page=page,
        per_page=per_page,
    )


def _filtered(filters: Filters, today: date) -> list[Any]:
    """The WHERE clauses of the list's filters (over the joined rows)."""
    where: list[Any] = []
    if filters.repository:
        pattern = f"%{like_literal(filters.repository)}%"
        where.append(col(Repository.name).like(pattern, escape="\\"))
    if filters.package:
        where.append(col(StoredExclusion.package) == canonicalize_name(filters.package))
    if filters.kind:
        where.append(col(StoredExclusion.kind) == filters.kind)
    state = filters.state
    if state in ENDED:
        where.append(col(StoredExclusion.state) == state)
    else:
        where.append(col(StoredExclusion.removed_at).is_(None))
        if state == State.OVERDUE:
            where.append(col(StoredAnnotation.review_by) < today)
        elif state:  # as shown: an overdue exclusion is listed as overdue, not as its state
            where.append(col(StoredExclusion.state) == state)
            where.append(
                or_(
                    col(StoredAnnotation.review_by).is_(None),
                    col(StoredAnnotation.review_by) >= today,
                )
            )
    if filters.owner:
        where.append(
            _contains(filters.owner, StoredExclusion.assigned_owner, StoredAnnotation.owner)
        )
    if filters.q:
        searched = (
            StoredExclusion.package,
            StoredExclusion.requirement,
            StoredSource.path,
            StoredAnnotation.reason,
        )
        where.append(_contains(filters.q, *searched))
    return where


def _contains(text: str, *fields: Any) -> Any:
    """Any of ``fields`` holds ``text``, whatever the case (``text`` taken literally)."""
    pattern = f"%{like_literal(text.lower())}%"
    return or_(*(func.lower(col(field)).like(pattern, escape="\\") for field in fields))


def find_row(session: Session, *, key: str) -> ExclusionRow | None:
    """The rows of the exclusion with this id (the audit's stable key), or None."""
    if has_nul(key):
        return None
    found: ExclusionRow | None = session.exec(
        exclusion_rows().where(col(StoredExclusion.key) == key).limit(1)
    ).first()
    return found


def find(session: Session, *, key: str, now: datetime) -> ExclusionPublic | None:
    """The exclusion with this id (the audit's stable key), or None."""
    row = find_row(session, key=key)
    return exclusion_public(row, now=now) if row is not None else None


# -- counts ---------------------------------------------------------------------------------


def counts(session: Session, *, now: datetime) -> dict[str, int]:
    """Exclusions by state (``overdue`` counted apart, among the open ones)."""
    out: dict[str, int] = dict.fromkeys(State, 0)
    for state, number in session.execute(
        columns(col(StoredExclusion.state), func.count()).group_by(col(StoredExclusion.state))
    ).all():
        out[state] = int(number)
    out[State.OVERDUE] = overdue(session, today=now.date())
    return out


def overdue(session: Session, *, today: date) -> int:
    """Open exclusions whose current annotation's review date has passed."""
    return int(
        session.execute(
            columns(func.count())
            .select_from(StoredExclusion)
            .join(StoredAnnotation, CURRENT_NOTE)
            .where(
                col(StoredExclusion.removed_at).is_(None), col(StoredAnnotation.review_by) < today
            )
        ).one()[0]
    )


def current_notes(session: Session, *, ids: Sequence[int | None]) -> dict[int, StoredAnnotation]:
    """The annotation in force of each exclusion of ``ids`` that has one."""
    wanted = [i for i in ids if i is not None]
    if not wanted:
        return {}
    return {
        note.exclusion_id: note
        for note in session.exec(
            select(StoredAnnotation).where(
                col(StoredAnnotation.exclusion_id).in_(wanted), col(StoredAnnotation.current)
            )
        )
    }
