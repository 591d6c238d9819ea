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
from sqlalchemy import func, or_, select

from govern.exclusions.states import ENDED, REJECTED, State
from govern.store.core import Reader, record, records
from govern.store.location import as_utc
from govern.store.schema import annotation, candidate, exclusion, release, repository, source
from govern.store.views import ExclusionPage, ExclusionPublic

PER_PAGE = 50
MAX_PER_PAGE = 200

# An exclusion with its current annotation (None: it has none), source and repository: the
# ORM's rows, or Core's read as them (core.records), alike.
ExclusionRow = tuple[Any, Any, Any, Any]
#: The tables of an :data:`ExclusionRow`, in its order.
ROW_TABLES = (exclusion, annotation, source, repository)


def has_nul(*texts: str | None) -> bool:
    """Whether any of ``texts`` holds a NUL byte: a filter that matches nothing.

    No name, path or id govern stores can hold one; and the databases disagree on it
    (PostgreSQL refuses NUL in text, SQLite ends a LIKE pattern at it, matching every row).
    """
    return any(text and "\x00" in text for text in texts)


def like_literal(text: str) -> str:
    """``text`` for a LIKE pattern (``escape="\\"``): its own % and _ taken literally."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def shown_state(row: Any, note: Any, today: date) -> State:
    """The state shown: the stored one, or ``overdue`` for an open one past its review date."""
    stored = State(row.state)
    if stored in ENDED:
        return stored
    if note is not None and note.review_by is not None and note.review_by < today:
        return State.OVERDUE
    return stored


def exclusion_public(
    row: ExclusionRow, *, now: datetime, assigned_owner: bool = True
) -> ExclusionPublic:
    """The public form of an exclusion's row; ``assigned_owner``: the owner set on the
    dashboard, if any, over the annotation's (``govern status`` shows the annotation's)."""
    found, note, where, repo = row
    first = as_utc(found.first_seen_at)
    end = as_utc(found.removed_at) if found.removed_at else None
    owner = note.owner if note else None
    if assigned_owner and found.assigned_owner:
        owner = found.assigned_owner
    return ExclusionPublic(
        id=found.key,
        repository=repo.name,
        source=where.path,
        line=found.line,
        package=found.package,
        clause=found.clause,
        requirement=found.requirement,
        marker=found.marker,
        kind=found.kind,
        sub_kind=found.sub_kind,
        state=shown_state(found, note, now.date()),
        first_seen=first,
        removed=end,
        age_days=max(0, ((end or now) - first).days),
        reason=note.reason if note else None,
        links=list(note.links) if note else [],
        owner=owner,
        review_by=note.review_by if note else None,
        commit=found.introduced_commit,
        pull_request=found.introduced_pull_request,
    )


# An exclusion's annotation in force (joined outer: not every exclusion has one).
CURRENT_NOTE = (annotation.c.exclusion_id == exclusion.c.id) & annotation.c.current


def joined(statement: Any) -> Any:
    """``statement`` (over exclusion) joined to its source, repository and current note."""
    return (
        statement.join(source, source.c.id == exclusion.c.source_id)
        .join(repository, repository.c.id == exclusion.c.repository_id)
        .join(annotation, CURRENT_NOTE, isouter=True)
    )


def exclusion_rows() -> Any:
    """Exclusions with their current annotation, source and repository (to filter; read
    each result with :func:`as_rows`)."""
    return joined(select(*ROW_TABLES).select_from(exclusion))


def as_rows(found: Any) -> list[ExclusionRow]:
    """The results of :func:`exclusion_rows` as :data:`ExclusionRow` tuples."""
    return [records(row, *ROW_TABLES) for row in found]


def ordered_rows(session: Reader, *where: Any) -> list[ExclusionRow]:
    """The exclusion rows matching ``where``, by repository, file, line and clause."""
    statement = (
        exclusion_rows()
        .where(*where)
        .order_by(repository.c.name, source.c.path, exclusion.c.line, exclusion.c.clause)
    )
    return as_rows(session.execute(statement))


def failed_versions(session: Reader, *, ids: Sequence[int] | None) -> dict[int, set[str]]:
    """Versions whose verification failed (or that were marked bad), by exclusion (of
    ``ids``; None: of every exclusion)."""
    out: dict[int, set[str]] = defaultdict(set)
    if ids is not None and not ids:
        return out
    query = (
        select(candidate.c.exclusion_id, release.c.version)
        .join(release, release.c.id == candidate.c.release_id)
        .where(candidate.c.status.in_(REJECTED))
    )
    if ids is not None:
        query = query.where(candidate.c.exclusion_id.in_(list(ids)))
    for exclusion_id, version in session.execute(query):
        out[exclusion_id].add(version)
    return out


def known_bad(session: Reader) -> dict[str, dict[str, str]]:
    """Every version the store knows is bad, by package: named in a ``bad=`` of an open
    exclusion, or found bad by a verification, in any tracked repository; each with where it
    is known (for a finding: ``failed verification in acme/app``)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    failed = (
        select(exclusion.c.package, release.c.version, repository.c.name)
        .select_from(candidate)
        .join(release, release.c.id == candidate.c.release_id)
        .join(exclusion, exclusion.c.id == candidate.c.exclusion_id)
        .join(repository, repository.c.id == exclusion.c.repository_id)
        .where(candidate.c.status.in_(REJECTED))
    )
    for package, version, name in session.execute(failed):
        out[package].setdefault(version, f"found bad by a verification in {name}")
    named = (
        select(exclusion.c.package, annotation.c.bad_versions, repository.c.name, source.c.path)
        .select_from(exclusion)
        .join(annotation, CURRENT_NOTE)
        .join(repository, repository.c.id == exclusion.c.repository_id)
        .join(source, source.c.id == exclusion.c.source_id)
        .where(exclusion.c.removed_at.is_(None))
    )
    for package, versions, name, path in session.execute(named):
        for version in versions or ():
            if isinstance(version, str):
                out[package].setdefault(version, f"bad= in {name} {path}")
    return dict(out)


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
    session: Reader,
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
        where.append(exclusion.c.package.in_([canonicalize_name(p) for p in packages]))
    if repositories:
        where.append(or_(*(repository.c.name.contains(r) for r in repositories)))
    if kinds:
        where.append(exclusion.c.kind.in_(list(kinds)))
    wanted = set(states)
    if not include_ended and not wanted & set(ENDED):
        where.append(exclusion.c.removed_at.is_(None))
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
    session: Reader, *, filters: Filters, now: datetime, page: int, per_page: int
) -> ExclusionPage:
    """All exclusions matching the filters, one page of them, ordered by repository and file."""
    per_page = max(1, min(per_page, MAX_PER_PAGE))
    page = max(1, page)
    if has_nul(*filters.as_query().values()):
        return ExclusionPage(items=[], total=0, page=page, per_page=per_page)
    where = _filtered(filters, now.date())
    counted = joined(select(func.count()).select_from(exclusion)).where(*where)
    total = session.execute(counted).one()[0]
    rows = as_rows(
        session.execute(
            exclusion_rows()
            .where(*where)
            .order_by(
                repository.c.name,
                source.c.path,
                exclusion.c.line,
                exclusion.c.id,
            )
            .offset((page - 1) * per_page)
            .limit(per_page)
        )
    )
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
        where.append(repository.c.name.like(pattern, escape="\\"))
    if filters.package:
        where.append(exclusion.c.package == canonicalize_name(filters.package))
    if filters.kind:
        where.append(exclusion.c.kind == filters.kind)
    state = filters.state
    if state in ENDED:
        where.append(exclusion.c.state == state)
    else:
        where.append(exclusion.c.removed_at.is_(None))
        if state == State.OVERDUE:
            where.append(annotation.c.review_by < today)
        elif state:  # as shown: an overdue exclusion is listed as overdue, not as its state
            where.append(exclusion.c.state == state)
            where.append(
                or_(
                    annotation.c.review_by.is_(None),
                    annotation.c.review_by >= today,
                )
            )
    if filters.owner:
        where.append(_contains(filters.owner, exclusion.c.assigned_owner, annotation.c.owner))
    if filters.q:
        searched = (
            exclusion.c.package,
            exclusion.c.requirement,
            source.c.path,
            annotation.c.reason,
        )
        where.append(_contains(filters.q, *searched))
    return where


def _contains(text: str, *fields: Any) -> Any:
    """Any of ``fields`` holds ``text``, whatever the case (``text`` taken literally)."""
    pattern = f"%{like_literal(text.lower())}%"
    return or_(*(func.lower(field).like(pattern, escape="\\") for field in fields))


def find_row(session: Reader, *, key: str) -> ExclusionRow | None:
    """The rows of the exclusion with this id (the audit's stable key), or None."""
    if has_nul(key):
        return None
    found = as_rows(session.execute(exclusion_rows().where(exclusion.c.key == key).limit(1)))
    return found[0] if found else None


def find(session: Reader, *, key: str, now: datetime) -> ExclusionPublic | None:
    """The exclusion with this id (the audit's stable key), or None."""
    row = find_row(session, key=key)
    return exclusion_public(row, now=now) if row is not None else None


# -- counts ---------------------------------------------------------------------------------


def counts(session: Reader, *, now: datetime) -> dict[str, int]:
    """Exclusions by state (``overdue`` counted apart, among the open ones)."""
    out: dict[str, int] = dict.fromkeys(State, 0)
    for state, number in session.execute(
        select(exclusion.c.state, func.count()).group_by(exclusion.c.state)
    ).all():
        out[state] = int(number)
    out[State.OVERDUE] = overdue(session, today=now.date())
    return out


def overdue(session: Reader, *, today: date) -> int:
    """Open exclusions whose current annotation's review date has passed."""
    return int(
        session.execute(
            select(func.count())
            .select_from(exclusion)
            .join(annotation, CURRENT_NOTE)
            .where(exclusion.c.removed_at.is_(None), annotation.c.review_by < today)
        ).one()[0]
    )


def current_notes(session: Reader, *, ids: Sequence[int | None]) -> dict[int, Any]:
    """The annotation in force of each exclusion of ``ids`` that has one (read only: a
    :func:`govern.store.core.record` of its row)."""
    wanted = [i for i in ids if i is not None]
    if not wanted:
        return {}
    found = session.execute(
        select(annotation).where(annotation.c.exclusion_id.in_(wanted), annotation.c.current)
    )
    return {note.exclusion_id: note for note in (record(row, annotation) for row in found)}
