"""The store's one builder of :class:`~govern.exclusions.ref.ExclusionRef` from a row."""

from __future__ import annotations

from govern.exclusions.ref import ExclusionRef
from govern.store.models import StoredExclusion


def from_row(row: StoredExclusion, *, repository: str, source: str) -> ExclusionRef:
    """The reference of a stored exclusion, with its repository's name and source's path."""
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
