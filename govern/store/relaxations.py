"""The narrow relaxation of each candidate, computed when it can change and stored on its row.

Notes: docs/internals.md#store.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import Any, cast

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier
from packaging.version import InvalidVersion, Version
from sqlalchemy import Connection, Table, bindparam, update
from sqlalchemy import select as columns
from sqlmodel import Session, col

from govern.edit import relax as relaxation
from govern.store.models import (
    Candidate,
    StoredAnnotation,
    StoredExclusion,
    StoredRelease,
)
from govern.store.queries import failed_versions
from govern.store.views import StoredRelaxation, as_json

Executor = Session | Connection
STRATEGY: relaxation.Strategy = "exclude"  # the dashboard's and the proposals' default
_CHUNK = 500  # ids per IN list (SQLite bounds a statement's parameters)
_CANDIDATE = cast(Table, Candidate.__table__)  # type: ignore[attr-defined]  # set by SQLModel


def compute(
    *,
    requirement: str,
    clause: str,
    version: str,
    bad: Sequence[Version],
    published: Sequence[Version],
    strategy: str | None = None,
) -> StoredRelaxation:
    """The relaxation of ``clause`` in the line ``requirement`` that admits ``version``, or
    why there is none (``bad`` and ``published`` parsed once by the caller: :func:`_versions`)."""
    try:
        candidate = Version(version)
        specifiers = Requirement(requirement.split("#", 1)[0].strip()).specifier
        result = relaxation.relax(
            specifiers,
            clause,
            candidate,
            bad,
            published=published,
            strategy=_strategy(strategy),
        )
        after = result.rewrite(requirement)
    except (InvalidVersion, InvalidSpecifier, ValueError) as exc:
        return StoredRelaxation(
            specifier=None,
            requirement=None,
            strategy=STRATEGY,
            note=f"no narrow change computed: {exc}",
            refused=str(exc),
        )
    return StoredRelaxation(
        specifier=",".join(result.after_clauses),
        requirement=after,
        strategy=result.strategy,
        note=result.note,
    )


def _strategy(chosen: str | None) -> relaxation.Strategy:
    """The strategy an annotation asked for (``strategy=``), else the default."""
    return "keep-ceiling" if chosen == "keep-ceiling" else STRATEGY


def _versions(texts: Iterable[str]) -> list[Version]:
    """The valid versions among ``texts``, sorted."""
    out: set[Version] = set()
    for text in texts:
        try:
            out.add(Version(text))
        except (InvalidVersion, ValueError):  # ValueError: more digits than int() takes
            continue
    return sorted(out)


def refresh(
    executor: Executor, *, exclusion_ids: Collection[int], missing_only: bool = False
) -> int:
    """Compute and store the relaxation of every candidate of these exclusions (only of
    those without one, with ``missing_only``); returns how many rows were written."""
    ids = sorted(set(exclusion_ids))
    return sum(
        _refresh(executor, ids[start : start + _CHUNK], missing_only)
        for start in range(0, len(ids), _CHUNK)
    )


def fill_missing(executor: Executor, *, exclusion_ids: Collection[int] | None = None) -> int:
    """Store a relaxation for each candidate without one (of these exclusions; None: all)."""
    if exclusion_ids is None:
        exclusion_ids = list(
            executor.execute(
                columns(col(Candidate.exclusion_id))
                .where(col(Candidate.relaxation).is_(None))
                .distinct()
            ).scalars()
        )
    return refresh(executor, exclusion_ids=exclusion_ids, missing_only=True)


def _refresh(executor: Executor, ids: Sequence[int], missing_only: bool) -> int:
    where = [col(Candidate.exclusion_id).in_(ids)]
    if missing_only:
        where.append(col(Candidate.relaxation).is_(None))
    candidates = executor.execute(
        columns(col(Candidate.id), col(Candidate.exclusion_id), col(StoredRelease.version))
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .where(*where)
    ).all()
    if not candidates:
        return 0
    wanted = sorted({exclusion_id for _, exclusion_id, _ in candidates})
    lines = {
        row_id: (requirement, clause, package)
        for row_id, requirement, clause, package in executor.execute(
            columns(
                col(StoredExclusion.id),
                col(StoredExclusion.requirement),
                col(StoredExclusion.clause),
                col(StoredExclusion.package),
            ).where(col(StoredExclusion.id).in_(wanted))
        )
    }
    bad: dict[int, set[str]] = defaultdict(set)
    strategies: dict[int, str | None] = {}
    for exclusion_id, versions, strategy in executor.execute(
        columns(
            col(StoredAnnotation.exclusion_id),
            col(StoredAnnotation.bad_versions),
            col(StoredAnnotation.strategy),
        ).where(col(StoredAnnotation.exclusion_id).in_(wanted), col(StoredAnnotation.current))
    ):
        bad[exclusion_id].update(v for v in versions or () if isinstance(v, str))
        strategies[exclusion_id] = strategy
    for exclusion_id, versions in failed_versions(executor, ids=wanted).items():
        bad[exclusion_id] |= versions
    published: dict[str, list[str]] = defaultdict(list)
    for package, version in executor.execute(
        columns(col(StoredRelease.package), col(StoredRelease.version)).where(
            col(StoredRelease.package).in_(sorted({line[2] for line in lines.values()}))
        )
    ):
        published[package].append(version)
    bad_versions = {exclusion_id: _versions(texts) for exclusion_id, texts in bad.items()}
    releases = {package: _versions(texts) for package, texts in published.items()}
    computed: dict[tuple[int, str], StoredRelaxation] = {}
    rows: list[dict[str, Any]] = []
    for candidate_id, exclusion_id, version in candidates:
        if exclusion_id not in lines:
            continue
        key = (exclusion_id, version)
        if key not in computed:  # the row's JSON (views.as_json)
            requirement, clause, package = lines[exclusion_id]
            computed[key] = compute(
                requirement=requirement,
                clause=clause,
                version=version,
                bad=bad_versions.get(exclusion_id, []),
                published=releases.get(package, []),
                strategy=strategies.get(exclusion_id),
            )
        rows.append({"row_id": candidate_id, "value": as_json(computed[key])})
    if rows:
        executor.execute(
            update(_CANDIDATE)
            .where(_CANDIDATE.c.id == bindparam("row_id"))
            .values(relaxation=bindparam("value")),
            rows,
        )
    return len(rows)
