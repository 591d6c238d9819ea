"""The verifier's reads and writes: candidates waiting, runs going, runs concluded.

Keyword-only functions on a session; :mod:`govern.service.verify` keeps the workflow (what
to try, on which provider, what a conclusion means). A run's rows are written before it
starts and updated once it is known, each in its own short transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version
from sqlalchemy import select as columns
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, func, select

from govern.exclusions.model import Kind
from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import CandidateStatus, Conclusion, RunKind
from govern.sources.model import SourceFormat
from govern.store.models import (
    Candidate,
    IndexPage,
    Repository,
    StoredAnnotation,
    StoredExclusion,
    StoredRelease,
    StoredSource,
    Verification,
)
from govern.store.queries import current_notes
from govern.store.refs import from_row

_VERDICTS = (Conclusion.PASSED, Conclusion.FAILED)
# The statuses a person can take back (govern verify --forget).
_FORGETTABLE = (
    CandidateStatus.PASSED,
    CandidateStatus.FAILED,
    CandidateStatus.BAD,
    CandidateStatus.ERRORED,
)


@dataclass(frozen=True, slots=True)
class Ran:
    """One run of a candidate: what it tried, on which version, how it ended (None: going)."""

    kind: RunKind
    conclusion: Conclusion | None
    version: str


def open_exclusions(session: Session, *, key: str, package: str) -> list[int]:
    """The ids of the exclusions not removed whose key is ``key`` or whose package is
    ``package`` (a canonical name)."""
    found = session.exec(
        select(StoredExclusion.id).where(
            (col(StoredExclusion.key) == key) | (col(StoredExclusion.package) == package),
            col(StoredExclusion.removed_at).is_(None),
        )
    ).all()
    return [i for i in found if i is not None]


def running(
    session: Session,
    *,
    exclusion_ids: Collection[int] | None = None,
    providers: Collection[str] | None = None,
    run_ids: Collection[str] | None = None,
) -> list[Verification]:
    """Verifications not concluded yet: of some exclusions, providers and run ids (None:
    any)."""
    query = (
        select(Verification)
        .join(Candidate, col(Candidate.id) == col(Verification.candidate_id))
        .where(col(Verification.conclusion).is_(None))
    )
    if exclusion_ids is not None:
        query = query.where(col(Candidate.exclusion_id).in_(list(exclusion_ids)))
    if providers is not None:
        query = query.where(col(Verification.provider).in_(list(providers)))
    if run_ids is not None:
        query = query.where(col(Verification.run_id).in_(list(run_ids)))
    return list(session.exec(query).all())


@dataclass(frozen=True, slots=True)
class Waiting:
    """An eligible candidate waiting for a run: which release, on which profile, for which
    exclusion."""

    candidate_id: int
    exclusion_id: int
    release_id: int
    version: str  # as stored (not necessarily PEP 440)
    profile: str
    ref: ExclusionRef
    kind: Kind
    root: str = ""  # the repository's checkout, as tracked
    format: str = ""  # the intent's format (its source's)
    locked: bool = False  # the repository has a lock (sources/locks.py): its runs get pins


def _has_lock() -> Any:
    """Whether the repository of the row has a lock among its present sources."""
    lock = aliased(StoredSource)
    formats = [str(f) for f in SourceFormat if f.is_lock]
    return (
        columns(col(lock.id))
        .where(
            col(lock.repository_id) == col(Repository.id),
            col(lock.present),
            col(lock.format).in_(formats),
        )
        .exists()
    )


def waiting(
    session: Session, *, exclusion_ids: Collection[int] | None, profiles: Collection[str]
) -> list[Waiting]:
    """Eligible candidates ``found`` of open exclusions (of some, and of some profiles when
    given), by exclusion, profile and release."""
    query = (
        columns(
            Candidate,
            StoredRelease,
            StoredExclusion,
            col(StoredSource.path),
            col(StoredSource.format),
            col(Repository.name),
            col(Repository.root),
            _has_lock(),
        )
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .join(StoredExclusion, col(StoredExclusion.id) == col(Candidate.exclusion_id))
        .join(StoredSource, col(StoredSource.id) == col(StoredExclusion.source_id))
        .join(Repository, col(Repository.id) == col(StoredExclusion.repository_id))
        .where(
            col(Candidate.eligible),
            col(Candidate.status) == CandidateStatus.FOUND,
            col(StoredExclusion.removed_at).is_(None),
        )
        .order_by(col(StoredExclusion.id), col(Candidate.profile), col(StoredRelease.id))
    )
    if exclusion_ids is not None:
        query = query.where(col(StoredExclusion.id).in_(list(exclusion_ids)))
    if profiles:
        query = query.where(col(Candidate.profile).in_(list(profiles)))
    out: list[Waiting] = []
    for candidate, found, exclusion, path, fmt, name, root, locked in session.execute(query).all():
        assert candidate.id is not None
        assert exclusion.id is not None
        assert found.id is not None
        out.append(
            Waiting(
                candidate_id=candidate.id,
                exclusion_id=exclusion.id,
                release_id=found.id,
                version=found.version,
                profile=candidate.profile,
                ref=from_row(exclusion, repository=name, source=path),
                kind=exclusion.kind,
                root=root,
                format=fmt,
                locked=bool(locked),
            )
        )
    return out


def runs(session: Session, *, candidate_ids: Sequence[int]) -> dict[int, list[Ran]]:
    """Every run of each candidate, oldest first (the candidate's own, its re-runs, its
    controls and reproducer runs)."""
    out: dict[int, list[Ran]] = defaultdict(list)
    if not candidate_ids:
        return out
    query = (
        select(Verification, StoredRelease)
        .join(Candidate, col(Candidate.id) == col(Verification.candidate_id))
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .where(
            col(Verification.candidate_id).in_(list(candidate_ids)),
            col(Verification.id) > func.coalesce(col(Candidate.forgotten_upto), 0),
        )
        .order_by(col(Verification.id))
    )
    for row, found in session.exec(query).all():
        out[row.candidate_id].append(Ran(row.kind, row.conclusion, row.version or found.version))
    return out


def attempts(session: Session, *, candidate_ids: Sequence[int]) -> dict[int, int]:
    """Runs per candidate that gave no verdict yet (errored, cancelled, timed out, going):
    what the limit on attempts counts (a verdict and its control are not retries)."""
    out: dict[int, int] = defaultdict(int)
    for candidate_id, ran in runs(session, candidate_ids=candidate_ids).items():
        out[candidate_id] = sum(r.conclusion not in _VERDICTS for r in ran)
    return out


def claim(session: Session, *, candidate_ids: Sequence[int], limit: int) -> dict[int, int]:
    """Under the write lock, each candidate still ``found`` with fewer than ``limit`` runs
    without a verdict becomes ``verifying``; returns the attempt each claimed one is on (its
    runs so far, plus one), by id. (Another call may have tried or judged a candidate since
    it was read.)"""
    made = runs(session, candidate_ids=candidate_ids)
    claimed: dict[int, int] = {}
    for candidate_id in candidate_ids:
        candidate = session.get(Candidate, candidate_id)
        if candidate is None or candidate.status != CandidateStatus.FOUND:
            continue
        ran = made.get(candidate_id, [])
        if sum(r.conclusion not in _VERDICTS for r in ran) < limit:
            candidate.status = CandidateStatus.VERIFYING
            claimed[candidate_id] = len(ran) + 1
    return claimed


@dataclass(frozen=True, slots=True)
class Forgotten:
    """A verdict taken back: which candidate, of which exclusion, what it said."""

    exclusion_id: int
    candidate_id: int
    profile: str
    version: str
    verdict: CandidateStatus


def forget(session: Session, *, exclusion_ids: Sequence[int], version: Version) -> list[Forgotten]:
    """Take back the verdicts on ``version`` (passed, failed, bad, errored) of some
    exclusions' candidates: each is ``found`` again, and its runs so far are forgotten."""
    last = session.exec(select(func.max(Verification.id))).one() or 0
    out: list[Forgotten] = []
    query = (
        select(Candidate, StoredRelease)
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .where(
            col(Candidate.exclusion_id).in_(list(exclusion_ids)),
            col(Candidate.status).in_(_FORGETTABLE),
        )
        .order_by(col(Candidate.id))
    )
    for candidate, found in session.exec(query).all():
        try:
            same = Version(found.version) == version
        except InvalidVersion:
            same = False
        if not same or candidate.id is None:
            continue
        out.append(
            Forgotten(
                candidate.exclusion_id,
                candidate.id,
                candidate.profile,
                found.version,
                candidate.status,
            )
        )
        candidate.status = CandidateStatus.FOUND
        candidate.forgotten_upto = last
        session.add(candidate)
    session.flush()
    return out


def give_up(session: Session, *, candidate_id: int) -> bool:
    """A candidate still ``found`` whose runs cannot give a verdict becomes ``errored``
    (False: it was not ``found`` any more)."""
    candidate = session.get(Candidate, candidate_id)
    if candidate is None or candidate.status != CandidateStatus.FOUND:
        return False
    candidate.status = CandidateStatus.ERRORED
    session.add(candidate)
    return True


def reproducer_runs(
    session: Session, *, exclusion_id: int, check_key: str
) -> list[tuple[str, Conclusion]]:
    """The verdicts of a reproducer (by its key) on known-bad releases, for an exclusion's
    candidates, oldest first: (version, conclusion)."""
    query = (
        select(Verification)
        .join(Candidate, col(Candidate.id) == col(Verification.candidate_id))
        .where(
            col(Candidate.exclusion_id) == exclusion_id,
            col(Verification.kind) == RunKind.REPRODUCER,
            col(Verification.check_key) == check_key,
            col(Verification.conclusion).in_(_VERDICTS),
        )
        .order_by(col(Verification.id))
    )
    return [
        (row.version or "", row.conclusion)
        for row in session.exec(query).all()
        if row.conclusion is not None
    ]


def release_of(session: Session, *, package: str, version: str) -> StoredRelease | None:
    """A recorded release by package and version (as stored)."""
    return session.exec(
        select(StoredRelease).where(
            col(StoredRelease.package) == package, col(StoredRelease.version) == version
        )
    ).first()


def add_runs(session: Session, *, rows: Sequence[Verification]) -> None:
    """New verification rows, with their ids."""
    session.add_all(rows)
    session.flush()


def started(
    session: Session, *, rows: Sequence[Verification], run_id: str, url: str | None
) -> None:
    """The run the rows' provider started: its id and page."""
    for row in rows:
        row.run_id = run_id
        row.run_url = url
        session.add(row)


def rename_run(session: Session, *, verification_ids: Sequence[int | None], run_id: str) -> None:
    """The id a provider found out for a run (``dispatch:...`` → its number)."""
    for verification_id in verification_ids:
        row = session.get(Verification, verification_id)
        if row is not None:
            row.run_id = run_id


def release(session: Session, *, release_id: int) -> StoredRelease | None:
    """A release by id."""
    return session.get(StoredRelease, release_id)


def listed_by(session: Session, *, package: str) -> str | None:
    """The index (without credentials) whose page of ``package`` the poll stored."""
    return session.exec(
        select(IndexPage.index_url).where(col(IndexPage.package) == package)
    ).first()


def verification(session: Session, *, verification_id: int | None) -> Verification | None:
    """A verification by id."""
    return session.get(Verification, verification_id)


def candidate_of(session: Session, *, candidate_id: int) -> tuple[Candidate, StoredRelease] | None:
    """A candidate and its release (None: either is gone)."""
    candidate = session.get(Candidate, candidate_id)
    found = session.get(StoredRelease, candidate.release_id) if candidate is not None else None
    return (candidate, found) if candidate is not None and found is not None else None


def reproducer(session: Session, *, exclusion_id: int) -> str | None:
    """The exclusion's reproducer (its annotation's ``verify``), if any."""
    note: StoredAnnotation | None = current_notes(session, ids=[exclusion_id]).get(exclusion_id)
    return note.verify if note is not None else None


def mark_bad(session: Session, *, failed: Candidate) -> None:
    """The same release on the exclusion's other profiles is bad too (one line keeps it
    out): its siblings still ``found`` or ``errored`` become ``bad``."""
    for sibling in session.exec(
        select(Candidate).where(
            col(Candidate.exclusion_id) == failed.exclusion_id,
            col(Candidate.release_id) == failed.release_id,
            col(Candidate.id) != failed.id,
            col(Candidate.status).in_((CandidateStatus.FOUND, CandidateStatus.ERRORED)),
        )
    ):
        sibling.status = CandidateStatus.BAD


def candidate_statuses(
    session: Session, *, exclusion_ids: Collection[int]
) -> dict[int, dict[str, set[str]]]:
    """The statuses of each exclusion's eligible candidates, by exclusion and version."""
    session.flush()
    statuses: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for candidate, found in session.exec(
        select(Candidate, StoredRelease)
        .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
        .where(col(Candidate.exclusion_id).in_(sorted(exclusion_ids)), col(Candidate.eligible))
    ):
        statuses[candidate.exclusion_id][found.version].add(candidate.status)
    return statuses


def exclusion(session: Session, *, exclusion_id: int) -> StoredExclusion | None:
    """An exclusion by id."""
    return session.get(StoredExclusion, exclusion_id)
