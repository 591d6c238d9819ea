"""The store's one builder of :class:`~govern.exclusions.ref.ExclusionRef` from a row."""

from __future__ import annotations

from typing import Protocol

from govern.exclusions.ref import ExclusionRef


class _Columns(Protocol):
    """The ``exclusion`` columns of a reference: a stored row, ORM object or Core row."""

    @property
    def key(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def package(self) -> str: ...
    @property
    def requirement(self) -> str: ...
    @property
    def clause(self) -> str: ...
    @property
    def marker(self) -> str | None: ...
    @property
    def group(self) -> str | None: ...


def from_row(row: _Columns, *, repository: str, source: str) -> ExclusionRef:
    """The reference of a stored exclusion (a :class:`~govern.store.models.StoredExclusion`
    or a Core row of its columns), with its repository's name and source's path."""
    return ExclusionRef(
        key=row.key,
        repository=repository,
        source=source,
        line=row.line,
        package=row.package,
        requirement=row.requirement,
        clause=row.clause,
        marker=row.marker,
        group=row.group,
    )
