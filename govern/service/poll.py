"""Polling: the index's releases for every tracked exclusion, and the candidates they give.

One request per project per poll, however many exclusions and repositories track it;
conditional requests (the validators are kept in ``index_page``), so an unchanged project
costs a 304 and no parsing. The index is read before the store's write lock is taken;
then, in one transaction, releases are recorded, every exclusion is judged for every
runtime profile (:func:`govern.index.candidates.candidates`), each release looked at is
recorded as a candidate or with the reason it is not one, and a release that became a
candidate adds a ``candidate-found`` event (and moves the exclusion from ``held`` to
``candidate``). A project that could not be fetched is recorded in ``index_page`` and
changes nothing else: a bad answer from the index is never a verdict.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from packaging.specifiers import InvalidSpecifier, Specifier
from packaging.version import InvalidVersion, Version
from sqlalchemy import select as columns
from sqlalchemy import text
from sqlmodel import Session, col, select

from govern.index.model import (
    DistributionFile,
    Fetched,
    FetchFailed,
    FetchResult,
    NotModified,
    Release,
    Validators,
    releases,
)
from govern.index.pipconfig import IndexSettings, redact_url
from govern.store.db import Store, advisory_key
from govern.store.models import Annotation, Candidate, Event, Exclusion, IndexPage
from govern.store.models import Release as ReleaseRow

if TYPE_CHECKING:
    from govern.index.candidates import Decision, Profile
    from govern.index.client import IndexClient

# Exclusions the watcher looks at: bans have no candidate, and requires-python is not a
# package on the index.
_WATCHED_KINDS = ("not-equal", "cap", "pin")


@dataclass(frozen=True, slots=True)
class Watched:
    """A tracked exclusion as the watcher needs it."""

    id: int
    package: str
    clause: str
    kind: str
    state: str
    known_bad: tuple[str, ...]


@dataclass(slots=True)
class PollResult:
    """What one poll did."""

    projects: int = 0
    fetched: int = 0
    not_modified: int = 0
    failed: int = 0
    requests: int = 0
    releases_new: int = 0
    exclusions: int = 0
    candidates_found: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)  # (package, reason)
    found: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The result, for JSON output."""
        return {
            "projects": self.projects,
            "fetched": self.fetched,
            "not_modified": self.not_modified,
            "failed": self.failed,
            "requests": self.requests,
            "releases_new": self.releases_new,
            "exclusions": self.exclusions,
            "candidates_found": self.candidates_found,
            "failures": [{"package": p, "reason": r} for p, r in self.failures],
            "found": self.found,
        }


def watched(session: Session, packages: Sequence[str] = ()) -> list[Watched]:
    """Active exclusions the watcher judges, with their known-bad versions."""
    query = (
        columns(
            col(Exclusion.id),
            col(Exclusion.package),
            col(Exclusion.clause),
            col(Exclusion.kind),
            col(Exclusion.state),
            col(Annotation.bad_versions),
        )
        .join(
            Annotation,
            (col(Annotation.exclusion_id) == col(Exclusion.id)) & col(Annotation.current),
            isouter=True,
        )
        .where(
            col(Exclusion.removed_at).is_(None),
            col(Exclusion.kind).in_(_WATCHED_KINDS),
            col(Exclusion.sub_kind) != "sentinel",
            col(Exclusion.package) != "python",
        )
    )
    if packages:
        query = query.where(col(Exclusion.package).in_(list(packages)))
    failed: dict[int, set[str]] = defaultdict(set)
    for exclusion_id, version in session.execute(
        columns(col(Candidate.exclusion_id), col(ReleaseRow.version))
        .join(ReleaseRow, col(ReleaseRow.id) == col(Candidate.release_id))
        .where(col(Candidate.status).in_(("failed", "bad")))
    ):
        failed[exclusion_id].add(version)
    return [
        Watched(
            id=row_id,
            package=package,
            clause=clause,
            kind=kind,
            state=state,
            known_bad=tuple(sorted({*(bad or []), *failed.get(row_id, set())})),
        )
        for row_id, package, clause, kind, state, bad in session.execute(query)
    ]


def _validators(
    session: Session, packages: Sequence[str], settings: IndexSettings
) -> dict[str, Validators]:
    """The stored validators of each page, if it came from the index asked first now.

    An ETag or serial of one index means nothing to another (a mapping that changed, a
    page that came from an extra index): sending it could make a fresh page look stale.
    """
    out: dict[str, Validators] = {}
    for page in session.exec(select(IndexPage).where(col(IndexPage.package).in_(packages))):
        if page.fetched_at is None:
            continue
        if page.index_url and page.index_url != redact_url(settings.indexes_for(page.package)[0]):
            continue
        out[page.package] = Validators(page.etag, page.last_modified, page.last_serial)
    return out


def _file_json(file: DistributionFile) -> dict[str, Any]:
    return {
        "filename": file.filename,
        "url": file.url,
        "requires_python": file.requires_python,
        "yanked": file.yanked,
        "yanked_reason": file.yanked_reason,
        "upload_time": file.upload_time.isoformat() if file.upload_time else None,
        "size": file.size,
        "hashes": dict(file.hashes),
    }


def _file_from_json(item: dict[str, Any]) -> DistributionFile:
    from govern.index.simple import file_from

    uploaded = item.get("upload_time")
    return file_from(
        str(item["filename"]),
        str(item["url"]),
        requires_python=item.get("requires_python"),
        yanked=bool(item.get("yanked")),
        yanked_reason=item.get("yanked_reason"),
        upload_time=datetime.fromisoformat(uploaded) if uploaded else None,
        size=item.get("size"),
        hashes=item.get("hashes") or {},
    )


def _stored_releases(session: Session, package: str) -> list[Release]:
    files: list[DistributionFile] = []
    for row in session.exec(select(ReleaseRow).where(ReleaseRow.package == package)):
        files.extend(_file_from_json(item) for item in row.files)
    return releases(files)


def _record_page(
    session: Session, package: str, result: FetchResult, index_url: str, now: datetime
) -> None:
    page = session.exec(select(IndexPage).where(IndexPage.package == package)).first()
    if page is None:
        page = IndexPage(package=package, index_url=index_url)
        session.add(page)
    if isinstance(result, Fetched):
        page.etag = result.page.etag
        page.last_modified = result.page.last_modified
        page.last_serial = result.page.last_serial
        page.index_url = redact_url(result.page.index_url or index_url)  # no credentials
    if isinstance(result, Fetched | NotModified):
        page.fetched_at = now
        page.failure = None
        page.failures = 0
    elif isinstance(result, FetchFailed):
        page.failed_at = now
        page.failure = result.reason
        page.failures += 1


def _record_releases(
    session: Session, package: str, found: list[Release], now: datetime
) -> tuple[dict[Version, int], int]:
    """Upsert the releases of a fetched page; returns their row ids and how many are new."""
    stored = {
        row.version: row
        for row in session.exec(select(ReleaseRow).where(ReleaseRow.package == package))
    }
    new = 0
    for release in found:
        row = stored.get(str(release.version))
        files = [_file_json(f) for f in release.files]
        requires = sorted({f.requires_python for f in release.files if f.requires_python})
        if row is None:
            row = ReleaseRow(
                package=package, version=str(release.version), first_seen_at=now, files=files
            )
            session.add(row)
            stored[str(release.version)] = row
            new += 1
        row.files = files
        row.uploaded_at = release.upload_time
        row.yanked = release.yanked
        row.yanked_reason = release.yanked_reason
        row.requires_python = "; ".join(requires)[:256] or None
    session.flush()
    ids: dict[Version, int] = {}
    for version, row in stored.items():
        try:
            if row.id is not None:
                ids[Version(version)] = row.id
        except InvalidVersion:
            continue
    return ids, new


def _judge(
    session: Session,
    exclusion: Watched,
    found: list[Release],
    ids: dict[Version, int],
    profiles: Sequence[Profile],
    now: datetime,
    result: PollResult,
    first_seen: dict[Version, datetime],
) -> None:
    """Every profile's decisions for one exclusion, recorded; new candidates are events."""
    from govern.index.candidates import Excluded, candidates

    try:
        spec = Specifier(exclusion.clause)
    except InvalidSpecifier:
        return
    excluded = Excluded(
        kind=exclusion.kind,
        operator=spec.operator,
        version=spec.version,
        known_bad=exclusion.known_bad,
    )
    existing = {
        (row.release_id, row.profile): row
        for row in session.exec(select(Candidate).where(Candidate.exclusion_id == exclusion.id))
    }
    became_candidate = False
    for profile in profiles:
        decisions: list[Decision] = candidates(
            excluded, found, profile, now=now, first_seen=first_seen
        )
        for decision in decisions:
            release_id = ids.get(decision.version)
            if release_id is None:
                continue
            row = existing.get((release_id, profile.name))
            newly = decision.eligible and (row is None or not row.eligible)
            if row is None:
                row = Candidate(
                    exclusion_id=exclusion.id,
                    release_id=release_id,
                    profile=profile.name,
                    found_at=now,
                )
                session.add(row)
                existing[(release_id, profile.name)] = row
            row.role = str(decision.role)
            row.eligible = decision.eligible
            row.reason = decision.reason
            if newly:
                became_candidate = True
                session.add(
                    Event(
                        exclusion_id=exclusion.id,
                        kind="candidate-found",
                        at=now,
                        recorded_at=now,
                        detail={
                            "version": str(decision.version),
                            "profile": profile.name,
                            "role": str(decision.role),
                        },
                    )
                )
                result.candidates_found += 1
                result.found.append(
                    {
                        "package": exclusion.package,
                        "clause": exclusion.clause,
                        "version": str(decision.version),
                        "profile": profile.name,
                        "role": str(decision.role),
                    }
                )
    if became_candidate and exclusion.state == "held":
        stored = session.get(Exclusion, exclusion.id)
        if stored is not None:
            stored.state = "candidate"


async def poll(
    store: Store,
    client: IndexClient,
    profiles: Sequence[Profile],
    *,
    packages: Sequence[str] = (),
    now: datetime | None = None,
    on_done: Callable[[str, FetchResult], None] | None = None,
) -> PollResult:
    """Fetch every watched project once, then record releases and candidates."""
    when = now or datetime.now(UTC)
    result = PollResult()
    with store.session() as session:
        exclusions = watched(session, packages)
        names = sorted({e.package for e in exclusions})
        validators = _validators(session, names, client.settings)
    result.exclusions = len(exclusions)
    result.projects = len(names)
    fetched = await client.fetch_many(names, validators, on_done=on_done)
    by_package: dict[str, list[Watched]] = defaultdict(list)
    for exclusion in exclusions:
        by_package[exclusion.package].append(exclusion)
    with store.session(write=True) as session:
        if session.get_bind().dialect.name == "postgresql":  # one poll writes at a time
            session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": advisory_key("poll")})
        for package in names:
            outcome = fetched.get(package)
            if outcome is None:
                continue
            result.requests += outcome.requests
            _record_page(session, package, outcome, "", when)
            if isinstance(outcome, FetchFailed):
                result.failed += 1
                result.failures.append((package, outcome.reason))
                continue
            if isinstance(outcome, Fetched):
                result.fetched += 1
                found = releases(outcome.page.files)
                ids, new = _record_releases(session, package, found, when)
                result.releases_new += new
            else:
                result.not_modified += 1
                found = _stored_releases(session, package)
                ids = {
                    Version(row.version): row.id
                    for row in session.exec(select(ReleaseRow).where(ReleaseRow.package == package))
                    if row.id is not None
                }
            # An index without upload times (PEP 503 HTML): the cooldown counts from when
            # govern first saw the release, a lower bound of its age.
            first_seen = {
                Version(row.version): row.first_seen_at
                for row in session.exec(select(ReleaseRow).where(ReleaseRow.package == package))
            }
            for exclusion in by_package[package]:
                _judge(session, exclusion, found, ids, profiles, when, result, first_seen)
    return result
