"""Polling: the index's releases for every tracked exclusion, and the candidates they give.

Notes: docs/internals.md#service.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from packaging.version import Version

from govern.exclusions.states import CandidateStatus, EventKind
from govern.index.candidates import (
    RELEASE_WINDOW,
    Decision,
    Needed,
    candidates,
    cut_short,
    needed,
)
from govern.index.client import IndexClient, http_client
from govern.index.model import (
    DistributionFile,
    Fetched,
    FetchFailed,
    FetchResult,
    NotModified,
    Validators,
)
from govern.index.parsing import file_from
from govern.index.pipconfig import IndexSettings
from govern.index.profiles import Profile
from govern.lifecycle import advance
from govern.redact import redact as redact_url
from govern.store import events, polling, relaxations
from govern.store.db import Connection, Store
from govern.store.polling import CandidateRow, Watched

__all__ = ["PageSource", "PollResult", "Watched", "poll", "poll_index"]


class PageSource(Protocol):
    """Where a poll reads project pages: an :class:`~govern.index.client.IndexClient`."""

    @property
    def settings(self) -> IndexSettings:
        """The indexes it reads (the stored validators are kept per index)."""
        ...

    async def fetch_many(
        self,
        names: Iterable[str],
        validators: Mapping[str, Validators] | None = None,
        *,
        on_done: Callable[[str, FetchResult], None] | None = None,
    ) -> dict[str, FetchResult]:
        """Every project once; see :meth:`govern.index.client.IndexClient.fetch_many`."""
        ...


@dataclass(slots=True)
class PollResult:
    """What one poll did."""

    projects: int = 0
    fetched: int = 0
    not_modified: int = 0  # unchanged pages: a 304, or fresh and not asked
    fresh: int = 0  # of which not asked: the last answer is still fresh (Cache-Control)
    failed: int = 0
    requests: int = 0
    releases_new: int = 0
    exclusions: int = 0
    candidates_found: int = 0
    same: int = 0  # of the fetched: the same content as stored (nothing written)
    releases_left_out: int = 0  # releases of fetched pages past the bound (not recorded)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (package, reason)
    found: list[dict[str, Any]] = field(default_factory=list)
    # Releases this poll judged and passed over, with why (at most PASSED_OVER per
    # exclusion and profile; ``passed_over_total`` counts them all).
    passed_over: list[dict[str, Any]] = field(default_factory=list)
    passed_over_total: int = 0
    settled: int = 0  # exclusions with nothing left to relax: not asked about, no candidates
    newly_settled: list[dict[str, Any]] = field(default_factory=list)  # their event this poll
    # Walks the bound may have decided otherwise than the whole page (see poll()).
    limited: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The result, for JSON output."""
        return {
            "projects": self.projects,
            "fetched": self.fetched,
            "not_modified": self.not_modified,
            "fresh": self.fresh,
            "failed": self.failed,
            "requests": self.requests,
            "releases_new": self.releases_new,
            "exclusions": self.exclusions,
            "candidates_found": self.candidates_found,
            "same": self.same,
            "releases_left_out": self.releases_left_out,
            "failures": [{"package": p, "reason": r} for p, r in self.failures],
            "found": self.found,
            "passed_over": self.passed_over,
            "passed_over_total": self.passed_over_total,
            "settled": self.settled,
            "newly_settled": self.newly_settled,
            "limited": self.limited,
        }

    def summary(self) -> str:
        """One line: what was asked and what came of it."""
        fresh = f" ({self.fresh} still fresh, not asked)" if self.fresh else ""
        same = f" ({self.same} the same as before)" if self.same else ""
        return (
            f"{self.projects} projects for {self.exclusions} exclusions: "
            f"{self.fetched} fetched{same}, {self.not_modified} unchanged{fresh}, "
            f"{self.failed} failed; {self.releases_new} new releases, "
            f"{self.candidates_found} new candidates"
            + (f"; {self.settled} settled (nothing to relax)" if self.settled else "")
        )

    @property
    def unavailable(self) -> bool:
        """Every project asked failed: the index (or the way to it) is the problem."""
        asked = self.projects - self.fresh
        return bool(asked) and self.failed == asked


@dataclass(slots=True)
class _Page:
    """An ``index_page`` row, as the poll reads and writes it."""

    id: int | None
    package: str
    index_url: str = ""
    etag: str | None = None
    last_modified: str | None = None
    last_serial: int | None = None
    fetched_at: datetime | None = None
    failed_at: datetime | None = None
    failure: str | None = None
    failures: int = 0
    judged: str | None = None
    fresh_until: datetime | None = None
    changed: bool = False

    def values(self) -> dict[str, Any]:
        """The row's columns to write (all but ``id`` and ``package``)."""
        return {name: getattr(self, name) for name in _PAGE_COLUMNS}

    def said(self) -> dict[str, Any]:
        """What the row says, but when it was last said (``fetched_at``)."""
        said = self.values()
        del said["fetched_at"]
        return said


_PAGE_COLUMNS = tuple(f.name for f in fields(_Page) if f.name not in ("id", "package", "changed"))


def _pages(conn: Connection, packages: Sequence[str]) -> dict[str, _Page]:
    """The stored ``index_page`` rows of some packages."""
    return {
        row.package: _Page(**row._mapping) for row in polling.index_pages(conn, packages=packages)
    }


def _stored(
    conn: Connection, packages: Sequence[str], settings: IndexSettings, now: datetime
) -> tuple[dict[str, Validators], set[str]]:
    """The stored validators of each page, and the pages still fresh at ``now``.

    Only a page that came from the index asked first now counts: an ETag or serial of
    one index means nothing to another (a mapping that changed, a page that came from
    an extra index), and sending it could make a fresh page look stale. A page is fresh
    when its last answer said so (``fresh_until``) and no failure came after it.
    """
    validators: dict[str, Validators] = {}
    fresh: set[str] = set()
    for page in _pages(conn, packages).values():
        if page.fetched_at is None:
            continue
        if page.index_url and page.index_url != redact_url(settings.indexes_for(page.package)[0]):
            continue
        validators[page.package] = Validators(page.etag, page.last_modified, page.last_serial)
        failed_since = page.failed_at is not None and page.failed_at >= page.fetched_at
        if page.fresh_until is not None and page.fresh_until > now and not failed_since:
            fresh.add(page.package)
    return validators, fresh


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


def file_from_json(item: dict[str, Any]) -> DistributionFile:
    """A file of a ``release.files`` row, as the poll stored it from the index's page."""
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


def _needed(
    exclusions: Sequence[Watched], files: Iterable[DistributionFile], window: int
) -> Needed:
    """The releases of a page that judging its exclusions needs (bounded by ``window``).

    As :func:`govern.index.model.releases` groups them, but only the kept versions are
    made releases.
    """
    by_version: dict[Version, list[DistributionFile]] = defaultdict(list)
    for file in files:
        if file.version is not None:
            by_version[file.version].append(file)
    clauses = [e.clause for e in exclusions if e.clause is not None]
    return needed(clauses, sorted(by_version), window=window).of(by_version)


@dataclass(slots=True)
class _Kept:
    """A fetched page's releases to record and judge, encoded once as the rows hold them."""

    needed: Needed
    files: list[list[dict[str, Any]]]  # per kept release: its ``release.files`` value
    digest: str  # of what judging reads of the page: the kept releases, and how many not


def _kept(found: Needed) -> _Kept:
    files = [[_file_json(f) for f in release.files] for release in found.releases]
    digest = hashlib.sha256(str(found.left_out).encode())
    for release, item in zip(found.releases, files, strict=True):
        # The JSON text as stored: the digest of an unchanged page never moves.
        digest.update(f"\0{release.version}\0{json.dumps(item)}".encode())
    return _Kept(found, files, digest.hexdigest())


def _limited(exclusion: Watched, found: Needed, profiles: list[str]) -> dict[str, Any]:
    """The warning for a walk the bound may have cut short."""
    total = len(found.releases) + found.left_out
    which = ", ".join(profiles)
    message = (
        f"{exclusion.ref.package} {exclusion.ref.clause}: no candidate among the releases kept for "
        f"profile {which}; the page lists {total:,} releases and {found.left_out:,} of them "
        f"were not looked at (at most {found.window:,} final releases per walk are kept)"
    )
    return {
        "package": exclusion.ref.package,
        "clause": exclusion.ref.clause,
        "profiles": profiles,
        "releases": total,
        "left_out": found.left_out,
        "message": message,
    }


def _judging(profiles: str, exclusions: Sequence[Watched]) -> str:
    """A hash of what judging a project depends on besides its page (and the clock).

    ``profiles`` is :func:`_profiles_key` of the poll's profiles.
    """
    # The kind's string, not the member: its repr would change the hashes stored.
    judged = sorted(
        (e.id, e.ref.clause, e.ref.requirement, e.kind.value, e.known_bad) for e in exclusions
    )
    parts = [profiles, repr(judged)]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def _profiles_key(profiles: Sequence[Profile]) -> str:
    return repr(sorted(repr(p) for p in profiles))


_BATCH = 500  # projects fetched and recorded per transaction (bounds memory)
_POLL_RUN_COUNTS = ("projects", "fetched", "not_modified", "failed", "candidates_found")


class _Recorder:
    """Writes one batch of poll results in bulk: a few statements per table.

    Everything a batch needs is read first (pages, releases, candidates), compared in
    Python, and written with executemany inserts and updates by primary key.
    """

    def __init__(self, conn: Connection, names: Sequence[str], now: datetime):
        self.conn = conn
        self.now = now  # every row of the batch is stamped with it
        self.pages = _pages(conn, names)
        self.releases: dict[tuple[str, str], dict[str, Any]] = {}
        self.candidates: dict[tuple[int, int, str], CandidateRow] = {}
        self._by_package: dict[str, list[tuple[str, dict[str, Any]]]] | None = None
        self._ids: dict[str, tuple[dict[Version, int], dict[Version, datetime]]] = {}
        self.new_candidates: list[dict[str, Any]] = []
        self.changed_candidates: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.promoted: set[int] = set()

    def load(self, names: Sequence[str], ids: Sequence[int]) -> None:
        """Read the stored releases of ``names`` and the candidates of exclusions ``ids``.

        Only the projects to record (a 200) or to judge again: an unchanged project
        judged on the same inputs (the usual 304) needs neither.
        """
        for row in polling.releases_of(self.conn, packages=names):
            self.releases[(row.package, row.version)] = {
                "id": row.id,
                "first_seen_at": row.first_seen_at,
                "files": row.files,
            }
        for candidate in polling.candidates_of(self.conn, exclusion_ids=ids):
            self.candidates[candidate.key] = candidate

    def page(self, package: str, result: FetchResult) -> None:
        page = self.pages.get(package)
        if page is None:
            page = self.pages[package] = _Page(id=None, package=package)
        if isinstance(result, NotModified) and not result.requests:
            return  # not asked (still fresh): nothing learnt, nothing to write
        before = page.said()
        if isinstance(result, Fetched):
            page.etag = result.page.etag
            page.last_modified = result.page.last_modified
            page.last_serial = result.page.last_serial
            page.index_url = redact_url(result.page.index_url)  # no credentials
        if isinstance(result, Fetched | NotModified):
            page.fetched_at = self.now
            page.failure = None
            page.failures = 0
            # Counted from the poll's start: an answer later in the poll expires early.
            fresh_for = result.fresh_for
            page.fresh_until = self.now + timedelta(seconds=fresh_for) if fresh_for > 0 else None
        elif isinstance(result, FetchFailed):
            page.failed_at = self.now
            page.failure = result.reason
            page.failures += 1
            page.fresh_until = None
        # Written only when what the row says changed: the same answer again (a 304, or
        # the same body without validators) writes nothing; fetched_at moves with a write.
        if page.id is None or page.said() != before:
            page.changed = True

    def judged(self, package: str, inputs: str) -> None:
        """Remember what the judging of a package depended on (written if it changed)."""
        page = self.pages[package]
        if page.judged != inputs:
            page.judged = inputs
            page.changed = True

    def record(self, fetched: dict[str, _Kept]) -> int:
        """Insert new releases and update changed ones; returns how many are new."""
        new_rows: list[dict[str, Any]] = []
        changed: list[dict[str, Any]] = []
        for package, kept in fetched.items():
            for release, files in zip(kept.needed.releases, kept.files, strict=True):
                requires = sorted({f.requires_python for f in release.files if f.requires_python})
                values = {
                    "files": files,
                    "uploaded_at": release.upload_time,
                    "yanked": release.yanked,
                    "yanked_reason": release.yanked_reason,
                    "requires_python": "; ".join(requires)[:256] or None,
                }
                version = str(release.version)
                stored = self.releases.get((package, version))
                if stored is None:
                    new_rows.append(
                        {
                            "package": package,
                            "version": version,
                            "first_seen_at": self.now,
                            **values,
                        }
                    )
                    self.releases[(package, version)] = {
                        "id": None,
                        "first_seen_at": self.now,
                        "files": files,
                    }
                elif stored["files"] != files:
                    changed.append({"id": stored["id"], **values})
                    stored["files"] = files
        polling.insert_releases(self.conn, rows=new_rows)
        if new_rows:
            for key, new_id in polling.release_ids(self.conn, packages=sorted(fetched)).items():
                self.releases[key]["id"] = new_id
        polling.update_releases(self.conn, rows=changed)
        return len(new_rows)

    def _of(self, package: str) -> list[tuple[str, dict[str, Any]]]:
        """The stored releases of one package, indexed once per batch."""
        if self._by_package is None:
            self._by_package = defaultdict(list)
            for (name, version), row in self.releases.items():
                self._by_package[name].append((version, row))
        return self._by_package.get(package, [])

    def stored_files(self, package: str) -> list[DistributionFile]:
        """The files recorded for a package (a 304: the page has not changed)."""
        return [file_from_json(item) for _, row in self._of(package) for item in row["files"]]

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
            except ValueError:  # InvalidVersion, or a number past the int-string limit
                continue
            ids[parsed] = row["id"]
            seen[parsed] = row["first_seen_at"]
        self._ids[package] = (ids, seen)
        return ids, seen

    def judge(
        self,
        exclusion: Watched,
        found: Needed,
        profiles: Sequence[Profile],
        result: PollResult,
    ) -> None:
        """Every profile's decisions for one exclusion; new candidates become events."""
        clause = exclusion.clause
        if clause is None:
            return
        ids, first_seen = self.ids(exclusion.ref.package)
        limited: list[str] = []
        for profile in profiles:
            decisions: list[Decision] = candidates(
                clause,
                found.releases,
                profile,
                now=self.now,
                first_seen=first_seen,
                others=exclusion.others,
            )
            if cut_short(found, clause, decisions, profile):
                limited.append(profile.name)
            skipped = [d for d in decisions if not d.eligible and d.reason]
            result.passed_over_total += len(skipped)
            result.passed_over.extend(
                {
                    "package": exclusion.ref.package,
                    "clause": exclusion.ref.clause,
                    "version": str(d.version),
                    "profile": profile.name,
                    "reason": d.reason,
                }
                for d in skipped[:PASSED_OVER]
            )
            for decision in decisions:
                release_id = ids.get(decision.version)
                if release_id is None:
                    continue
                role = str(decision.role)
                fresh = CandidateRow(
                    id=0,  # not inserted yet
                    exclusion_id=exclusion.id,
                    release_id=release_id,
                    profile=profile.name,
                    eligible=decision.eligible,
                    reason=decision.reason,
                    role=role,
                )
                before = self.candidates.get(fresh.key)
                values = {"eligible": decision.eligible, "reason": decision.reason, "role": role}
                if before is None:
                    self.new_candidates.append(
                        {
                            "exclusion_id": exclusion.id,
                            "release_id": release_id,
                            "profile": profile.name,
                            "status": CandidateStatus.FOUND,
                            "found_at": self.now,
                            **values,
                        }
                    )
                    self.candidates[fresh.key] = fresh
                elif before.id and before.judged() != fresh.judged():
                    self.changed_candidates.append({"id": before.id, **values})
                if not decision.eligible or (before is not None and before.eligible):
                    continue
                detail = {"version": str(decision.version), "profile": profile.name, "role": role}
                self.events.append(
                    {
                        "exclusion_id": exclusion.id,
                        "kind": EventKind.CANDIDATE_FOUND,
                        "at": self.now,
                        "recorded_at": self.now,
                        "detail": detail,
                    }
                )
                result.candidates_found += 1
                result.found.append(
                    {"package": exclusion.ref.package, "clause": exclusion.ref.clause, **detail}
                )
                # A held exclusion with a candidate moves (the lifecycle's table).
                if advance(EventKind.CANDIDATE_FOUND, exclusion.state) != exclusion.state:
                    self.promoted.add(exclusion.id)
        if limited:
            result.limited.append(_limited(exclusion, found, limited))

    def finish(self) -> None:
        """Write the pages, candidates, events and state changes of the batch."""
        conn = self.conn
        changed = [page for page in self.pages.values() if page.changed]
        polling.insert_pages(
            conn,
            rows=[{"package": p.package, **p.values()} for p in changed if p.id is None],
        )
        polling.update_pages(
            conn, rows=[{"id": p.id, **p.values()} for p in changed if p.id is not None]
        )
        polling.insert_candidates(conn, rows=self.new_candidates)
        polling.update_candidates(conn, rows=self.changed_candidates)
        events.append_batch(conn, rows=self.events)
        polling.promote(conn, exclusion_ids=sorted(self.promoted))
        # New candidates get their narrow change now, so pages never compute one.
        found = {row["exclusion_id"] for row in self.new_candidates}
        if found:
            relaxations.fill_missing(conn, exclusion_ids=found)


#: Releases passed over listed per exclusion and profile in a poll's report.
PASSED_OVER = 10


async def poll(
    store: Store,
    client: PageSource,
    profiles: Sequence[Profile],
    *,
    packages: Sequence[str] = (),
    now: datetime | None = None,
    on_done: Callable[[str, FetchResult], None] | None = None,
    refresh: bool = False,
    window: int | None = None,
) -> PollResult:
    """Fetch every watched project once, then record releases and candidates.

    Projects go in batches of 500: each batch is fetched (outside any lock), then
    recorded in one transaction, and its pages are dropped before the next. A project
    whose last answer is still fresh (the index's Cache-Control, at most an hour) is not
    asked again, unless ``refresh``: it counts as unchanged.

    Only the releases judging needs are recorded and judged
    (:func:`govern.index.candidates.needed`, at most ``window`` per walk, default
    :data:`~govern.index.candidates.RELEASE_WINDOW`): a walk that found nothing inside its
    window while releases past it were left out is a warning in ``PollResult.limited``.
    A page whose content is as recorded (the same releases kept, whatever its validators
    say) is not judged again when nothing else it depends on changed: it writes nothing.
    """
    window = window or RELEASE_WINDOW
    when = now or datetime.now(UTC)
    began = time.monotonic()
    result = PollResult()
    with store.transaction() as conn:
        exclusions = polling.watched(conn, packages=packages)
    settled = [e for e in exclusions if e.settled]
    if settled:
        _settle(store, settled, when, result)
        exclusions = [e for e in exclusions if not e.settled]
    with store.transaction() as conn:
        names = sorted({e.ref.package for e in exclusions})
        validators, fresh = _stored(conn, names, client.settings, when)
    if refresh:
        fresh = set()
    result.exclusions = len(exclusions)
    result.projects = len(names)
    by_package: dict[str, list[Watched]] = defaultdict(list)
    for exclusion in exclusions:
        by_package[exclusion.ref.package].append(exclusion)
    # Judging without a cooldown depends on no clock: a page as recorded (a 304, or the
    # same content) judged on the same inputs (profiles, clauses, known-bad) is skipped.
    timeless = all(not p.minimum_release_age for p in profiles)
    profiles_key = _profiles_key(profiles)
    for start in range(0, len(names), _BATCH):
        batch = names[start : start + _BATCH]
        asked = [name for name in batch if name not in fresh]
        # Nothing to ask (every page fresh): an on-demand client stays closed.
        fetched = await client.fetch_many(asked, validators, on_done=on_done) if asked else {}
        for name in batch:
            if name in fresh:
                fetched[name] = NotModified(name, requests=0)
                if on_done is not None:
                    on_done(name, fetched[name])
        with store.transaction(write=True) as conn:
            polling.lock(conn)  # one poll writes at a time
            recorder = _Recorder(conn, batch, when)
            pages: dict[str, _Kept] = {}
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
                    kept = _needed(by_package[package], outcome.page.files, window)
                    pages[package] = _kept(kept)
                    result.releases_left_out += kept.left_out
                else:
                    result.not_modified += 1
                    if not outcome.requests:
                        result.fresh += 1
            judging: dict[str, str] = {}
            for package in batch:
                outcome = fetched.get(package)
                if outcome is None or isinstance(outcome, FetchFailed):
                    continue
                # judged: 32 hex of the inputs' hash, 32 of the page content's (a 304 keeps
                # the stored content's).
                stored = recorder.pages[package].judged or ""
                page = pages.get(package)
                content = page.digest[:32] if page is not None else stored[32:]
                judged = _judging(profiles_key, by_package[package])[:32] + content
                if page is not None and content == stored[32:]:
                    result.same += 1
                cut = page is not None and bool(page.needed.horizons)  # re-judged: warned again
                if timeless and len(judged) == 64 and judged == stored and not cut:
                    # Same page, profiles, clauses and known-bad: same verdicts.
                    pages.pop(package, None)
                    continue
                judging[package] = judged
            recorder.load(
                sorted(judging), [e.id for name in sorted(judging) for e in by_package[name]]
            )
            result.releases_new += recorder.record(pages)
            for package, judged in judging.items():
                page = pages.get(package)
                found = (
                    page.needed
                    if page is not None
                    else _needed(by_package[package], recorder.stored_files(package), window)
                )
                for exclusion in by_package[package]:
                    recorder.judge(exclusion, found, profiles, result)
                recorder.judged(package, judged)
            recorder.finish()
        del fetched
    with store.transaction(write=True) as conn:  # one row per poll: /metrics and the dashboard
        elapsed = time.monotonic() - began
        counts = result.as_dict()
        polling.record_poll_run(
            conn,
            started_at=when,
            finished_at=when + timedelta(seconds=elapsed),
            counts={name: counts[name] for name in _POLL_RUN_COUNTS},
        )
    return result


def _settle(store: Store, settled: Sequence[Watched], when: datetime, result: PollResult) -> None:
    """Settled exclusions (``!=V``, V known bad) cost nothing: not asked about, no
    candidates; each thread says so once, and one in the verification workflow leaves it."""
    result.settled = len(settled)
    with store.transaction(write=True) as conn:
        polling.lock(conn)
        done = polling.settled_ids(conn, exclusion_ids=[e.id for e in settled])
        fresh = [e for e in settled if e.id not in done]
        rows = []
        for exclusion in fresh:
            version = exclusion.ref.clause.removeprefix("!=")
            detail = {
                "clause": exclusion.ref.clause,
                "version": version,
                "why": f"{version} is known bad: the line admits every release after it",
            }
            rows.append(
                {
                    "exclusion_id": exclusion.id,
                    "kind": EventKind.SETTLED,
                    "at": when,
                    "recorded_at": when,
                    "detail": detail,
                }
            )
            result.newly_settled.append({"package": exclusion.ref.package, **detail})
        events.append_batch(conn, rows=rows)
        polling.settle(conn, moves={e.id: e.state for e in fresh})


async def poll_index(
    store: Store,
    settings: IndexSettings,
    profiles: Sequence[Profile],
    *,
    packages: Sequence[str] = (),
    on_done: Callable[[str, FetchResult], None] | None = None,
    refresh: bool = False,
) -> PollResult:
    """One :func:`poll` on an index client of its own (``govern poll``, the daemon)."""
    async with http_client() as http:
        client = IndexClient(http, settings)
        return await poll(
            store, client, profiles, packages=packages, on_done=on_done, refresh=refresh
        )
