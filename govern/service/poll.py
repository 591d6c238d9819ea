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

import hashlib
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from packaging.specifiers import InvalidSpecifier, Specifier
from packaging.version import InvalidVersion, Version
from sqlalchemy import insert, text, update
from sqlalchemy import select as columns
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
from govern.store.db import BULK, Store, advisory_key
from govern.store.models import (
    Annotation,
    Candidate,
    Event,
    Exclusion,
    IndexPage,
    PollRun,
    as_utc,
)
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


def _judging(profiles: Sequence[Profile], exclusions: Sequence[Watched]) -> str:
    """A hash of what judging a project depends on besides its page (and the clock)."""
    parts = [
        repr(sorted(repr(p) for p in profiles)),
        repr(sorted((e.id, e.clause, e.kind, e.known_bad) for e in exclusions)),
    ]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


_CHUNK = 500  # projects fetched and recorded per transaction (bounds memory)


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class _Recorder:
    """Writes one batch of poll results in bulk: a few statements per table.

    Everything a batch needs is read first (pages, releases, candidates), compared in
    Python, and written with executemany inserts and updates by primary key; no query
    runs between the writes, so nothing is flushed row by row.
    """

    def __init__(self, session: Session, names: Sequence[str], ids: Sequence[int], now: datetime):
        self.session = session
        self.now = now
        self.pages = {
            page.package: page
            for page in session.exec(select(IndexPage).where(col(IndexPage.package).in_(names)))
        }
        self.releases: dict[tuple[str, str], dict[str, Any]] = {}
        for row in session.execute(
            columns(
                col(ReleaseRow.id),
                col(ReleaseRow.package),
                col(ReleaseRow.version),
                col(ReleaseRow.first_seen_at),
                col(ReleaseRow.files),
            ).where(col(ReleaseRow.package).in_(names))
        ):
            self.releases[(row.package, row.version)] = dict(row._mapping)
        self.candidates: dict[tuple[int, int, str], tuple[int, bool, str | None, str]] = {}
        for chunk in _chunks(list(ids)):
            for row in session.execute(
                columns(
                    col(Candidate.id),
                    col(Candidate.exclusion_id),
                    col(Candidate.release_id),
                    col(Candidate.profile),
                    col(Candidate.eligible),
                    col(Candidate.reason),
                    col(Candidate.role),
                ).where(col(Candidate.exclusion_id).in_(chunk))
            ):
                key = (row.exclusion_id, row.release_id, row.profile)
                self.candidates[key] = (row.id, row.eligible, row.reason, row.role)
        self._by_package: dict[str, list[tuple[str, dict[str, Any]]]] | None = None
        self._ids: dict[str, tuple[dict[Version, int], dict[Version, datetime]]] = {}
        self.new_candidates: list[dict[str, Any]] = []
        self.changed_candidates: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.promoted: set[int] = set()

    def page(self, package: str, result: FetchResult) -> None:
        page = self.pages.get(package)
        if page is None:
            page = self.pages[package] = IndexPage(package=package, index_url="")
            self.session.add(page)
        if isinstance(result, Fetched):
            page.etag = result.page.etag
            page.last_modified = result.page.last_modified
            page.last_serial = result.page.last_serial
            page.index_url = redact_url(result.page.index_url)  # no credentials
        if isinstance(result, Fetched | NotModified):
            page.fetched_at = self.now
            page.failure = None
            page.failures = 0
        elif isinstance(result, FetchFailed):
            page.failed_at = self.now
            page.failure = result.reason
            page.failures += 1

    def record(self, fetched: dict[str, list[Release]]) -> int:
        """Insert new releases and update changed ones; returns how many are new."""
        new_rows: list[dict[str, Any]] = []
        changed: list[dict[str, Any]] = []
        for package, found in fetched.items():
            for release in found:
                files = [_file_json(f) for f in release.files]
                requires = sorted({f.requires_python for f in release.files if f.requires_python})
                values = {
                    "files": files,
                    "uploaded_at": release.upload_time,
                    "yanked": release.yanked,
                    "yanked_reason": release.yanked_reason,
                    "requires_python": "; ".join(requires)[:256] or None,
                }
                stored = self.releases.get((package, str(release.version)))
                if stored is None:
                    row = {
                        "package": package,
                        "version": str(release.version),
                        "first_seen_at": self.now,
                        **values,
                    }
                    new_rows.append(row)
                    self.releases[(package, str(release.version))] = {
                        "id": None,
                        "first_seen_at": self.now,
                        "files": files,
                    }
                elif stored["files"] != files:
                    changed.append({"id": stored["id"], **values})
                    stored["files"] = files
        if new_rows:
            self.session.execute(insert(ReleaseRow), new_rows, execution_options=BULK)
            for chunk in _chunks(sorted(fetched)):
                for new_id, package, version in self.session.execute(
                    columns(
                        col(ReleaseRow.id), col(ReleaseRow.package), col(ReleaseRow.version)
                    ).where(col(ReleaseRow.package).in_(chunk))
                ):
                    self.releases[(package, version)]["id"] = new_id
        if changed:
            self.session.execute(update(ReleaseRow), changed, execution_options=BULK)
        return len(new_rows)

    def _of(self, package: str) -> list[tuple[str, dict[str, Any]]]:
        """The stored releases of one package, indexed once per batch."""
        if self._by_package is None:
            self._by_package = defaultdict(list)
            for (name, version), row in self.releases.items():
                self._by_package[name].append((version, row))
        return self._by_package.get(package, [])

    def stored(self, package: str) -> list[Release]:
        """The releases recorded for a package (a 304: the page has not changed)."""
        files = [_file_from_json(item) for _, row in self._of(package) for item in row["files"]]
        return releases(files)

    def ids(self, package: str) -> tuple[dict[Version, int], dict[Version, datetime]]:
        """Release ids and first sightings of a package, by version."""
        cached = self._ids.get(package)
        if cached is not None:
            return cached
        ids: dict[Version, int] = {}
        seen: dict[Version, datetime] = {}
        for version, row in self._of(package):
            if row["id"] is None:
                continue
            try:
                parsed = Version(version)
            except InvalidVersion:
                continue
            ids[parsed] = row["id"]
            seen[parsed] = as_utc(row["first_seen_at"])
        self._ids[package] = (ids, seen)
        return ids, seen

    def judge(
        self,
        exclusion: Watched,
        found: list[Release],
        profiles: Sequence[Profile],
        result: PollResult,
    ) -> None:
        """Every profile's decisions for one exclusion; new candidates become events."""
        from govern.index.candidates import Excluded, candidates

        try:
            spec = Specifier(exclusion.clause)
            excluded = Excluded(
                kind=exclusion.kind,
                operator=spec.operator,
                version=spec.version,
                known_bad=exclusion.known_bad,
            )
        except (InvalidSpecifier, ValueError):
            return
        ids, first_seen = self.ids(exclusion.package)
        for profile in profiles:
            decisions: list[Decision] = candidates(
                excluded, found, profile, now=self.now, first_seen=first_seen
            )
            for decision in decisions:
                release_id = ids.get(decision.version)
                if release_id is None:
                    continue
                key = (exclusion.id, release_id, profile.name)
                role = str(decision.role)
                before = self.candidates.get(key)
                values = {"eligible": decision.eligible, "reason": decision.reason, "role": role}
                if before is None:
                    self.new_candidates.append(
                        {
                            "exclusion_id": exclusion.id,
                            "release_id": release_id,
                            "profile": profile.name,
                            "status": "found",
                            "found_at": self.now,
                            **values,
                        }
                    )
                    self.candidates[key] = (0, decision.eligible, decision.reason, role)
                elif before[1:] != (decision.eligible, decision.reason, role):
                    self.changed_candidates.append({"id": before[0], **values})
                if not decision.eligible or (before is not None and before[1]):
                    continue
                detail = {"version": str(decision.version), "profile": profile.name, "role": role}
                self.events.append(
                    {
                        "exclusion_id": exclusion.id,
                        "kind": "candidate-found",
                        "at": self.now,
                        "recorded_at": self.now,
                        "detail": detail,
                    }
                )
                result.candidates_found += 1
                result.found.append(
                    {"package": exclusion.package, "clause": exclusion.clause, **detail}
                )
                if exclusion.state == "held":
                    self.promoted.add(exclusion.id)

    def finish(self) -> None:
        """Write the candidates, events and state changes of the batch."""
        if self.new_candidates:
            self.session.execute(insert(Candidate), self.new_candidates, execution_options=BULK)
        changed = [c for c in self.changed_candidates if c["id"]]
        if changed:
            self.session.execute(update(Candidate), changed, execution_options=BULK)
        if self.events:
            self.session.execute(insert(Event), self.events, execution_options=BULK)
        if self.promoted:
            self.session.execute(
                update(Exclusion)
                .where(col(Exclusion.id).in_(sorted(self.promoted)), col(Exclusion.state) == "held")
                .values(state="candidate")
            )


async def poll(
    store: Store,
    client: IndexClient,
    profiles: Sequence[Profile],
    *,
    packages: Sequence[str] = (),
    now: datetime | None = None,
    on_done: Callable[[str, FetchResult], None] | None = None,
) -> PollResult:
    """Fetch every watched project once, then record releases and candidates.

    Projects go in batches of 500: each batch is fetched (outside any lock), then
    recorded in one transaction, and its pages are dropped before the next.
    """
    when = now or datetime.now(UTC)
    began = time.monotonic()
    result = PollResult()
    with store.session() as session:
        exclusions = watched(session, packages)
        names = sorted({e.package for e in exclusions})
        validators = _validators(session, names, client.settings)
    result.exclusions = len(exclusions)
    result.projects = len(names)
    by_package: dict[str, list[Watched]] = defaultdict(list)
    for exclusion in exclusions:
        by_package[exclusion.package].append(exclusion)
    for batch in _chunks(names):
        fetched = await client.fetch_many(batch, validators, on_done=on_done)
        with store.session(write=True) as session, session.no_autoflush:
            if session.get_bind().dialect.name == "postgresql":  # one poll writes at a time
                session.execute(
                    text("SELECT pg_advisory_xact_lock(:k)"), {"k": advisory_key("poll")}
                )
            ids = [e.id for name in batch for e in by_package[name]]
            recorder = _Recorder(session, batch, ids, when)
            pages: dict[str, list[Release]] = {}
            for package in batch:
                outcome = fetched.get(package)
                if outcome is None:
                    continue
                result.requests += outcome.requests
                recorder.page(package, outcome)
                if isinstance(outcome, FetchFailed):
                    result.failed += 1
                    result.failures.append((package, outcome.reason))
                elif isinstance(outcome, Fetched):
                    result.fetched += 1
                    pages[package] = releases(outcome.page.files)
                else:
                    result.not_modified += 1
            result.releases_new += recorder.record(pages)
            timeless = all(not p.minimum_release_age for p in profiles)
            for package in batch:
                outcome = fetched.get(package)
                if outcome is None or isinstance(outcome, FetchFailed):
                    continue
                inputs = _judging(profiles, by_package[package]) if timeless else None
                page = recorder.pages[package]
                if isinstance(outcome, NotModified) and inputs and page.judged == inputs:
                    continue  # same page, same profiles, clauses and known-bad: same verdicts
                found = pages.get(package) or recorder.stored(package)
                for exclusion in by_package[package]:
                    recorder.judge(exclusion, found, profiles, result)
                page.judged = inputs
            recorder.finish()
        del fetched
    with store.session(write=True) as session:  # one row per poll: /metrics and the dashboard
        elapsed = time.monotonic() - began
        session.add(
            PollRun(
                started_at=when,
                finished_at=when + timedelta(seconds=elapsed),
                duration_seconds=round(elapsed, 3),
                projects=result.projects,
                fetched=result.fetched,
                not_modified=result.not_modified,
                failed=result.failed,
                candidates_found=result.candidates_found,
            )
        )
    return result
