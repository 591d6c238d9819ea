"""Verification: try current candidates on their runtime profiles through CI, and record it.

Notes: docs/internals.md#service.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from govern.ci.base import Conclusion, Provider, RunRef, RunStatus, Trial
from govern.errors import CIAuthError, CIError, CIRateLimited, GovernError
from govern.exclusions.clause import Clause
from govern.exclusions.model import Kind
from govern.exclusions.states import VERIFYING_STATES, CandidateStatus, EventKind, RunKind
from govern.index.model import DistributionFile
from govern.index.parsing import strip_credentials
from govern.index.pipconfig import IndexSettings
from govern.lifecycle import verification_state
from govern.redact import ConfiguredSecrets
from govern.service.controls import (
    FAILURES_NEEDED,
    check_key,
    control_version,
    judge,
    known_bad_version,
    next_run,
    reproducer_said,
)
from govern.service.poll import file_from_json
from govern.store import events, relaxations, verifying
from govern.store.db import Store
from govern.store.models import Verification, as_utc, utcnow
from govern.store.polling import others_of
from govern.store.queries import current_notes, failed_versions

if TYPE_CHECKING:
    from govern.locks.installed import LockPins, PinsFor
    from govern.store.db import Session

log = logging.getLogger(__name__)

# A row without a run id older than its provider's time-out plus this lost its process (a
# local command has no run id until it ends; installs may take half an hour more).
_ORPHAN_AFTER = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class _Wanted:
    """One candidate waiting to be tried, with what its trial needs."""

    waiting: verifying.Waiting
    version: Version  # the stored version, parsed
    reproducer: str | None
    attempt: int  # the attempt this run would be
    kind: RunKind = RunKind.CANDIDATE
    # The version this run tries: the candidate's, a known-bad one (the reproducer's
    # confirmation), None for a control until the index says which (see _start_group).
    run_version: Version | None = None
    known_bad: tuple[str, ...] = ()

    @property
    def check_key(self) -> str | None:
        return check_key(self.reproducer)


@dataclass(frozen=True, slots=True)
class _QueuedEvent:
    """An event of a run, recorded once its candidates' statuses are written."""

    exclusion_id: int
    kind: EventKind
    detail: dict[str, Any]
    at: datetime
    recorded_at: datetime


@dataclass(slots=True)
class VerifyResult:
    """What one call did."""

    started: int = 0
    running: int = 0
    concluded: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    runs: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    auth_failed: bool = False
    # Candidates' verdicts this call (passed, failed, errored): a failed run is one only
    # once it has failed twice and its control passed.
    verdicts: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def as_dict(self) -> dict[str, Any]:
        """The result, for JSON output."""
        return {
            "started": self.started,
            "running": self.running,
            "concluded": {c.value: self.concluded.get(c.value, 0) for c in Conclusion},
            "runs": self.runs,
            "verdicts": {s.value: self.verdicts.get(s.value, 0) for s in _VERDICT_STATUSES},
            "skipped": self.skipped,
            "errors": self.errors,
        }


ProviderFor = Callable[[str], Provider | None]
# The statuses a candidate's runs end in when they have said all they can.
_VERDICT_STATUSES = (CandidateStatus.PASSED, CandidateStatus.FAILED, CandidateStatus.ERRORED)


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    """What one verification call asks for (``govern verify``'s options; the daemon's
    defaults: every exclusion, every profile, the configured providers, no waiting)."""

    query: str | None = None  # an exclusion id or a package; None: every exclusion
    profiles: tuple[str, ...] = ()  # none: every profile
    command: str | None = None  # an ad hoc check to run instead of the configured providers
    isolated: bool = False  # install the candidate into a fresh venv first
    timeout: float | None = None  # seconds one ad hoc run may take
    wait: bool = False  # poll hosted runs until they end (else: the next call collects them)
    wait_timeout: float = 3600.0
    poll_interval: float = 15.0


#: A reason for taking a verdict back is kept to this many characters.
MAX_FORGET_REASON = 500


def forget_verdict(
    store: Store,
    query: str,
    version: str,
    *,
    reason: str,
    actor: str,
    now: datetime | None = None,
) -> list[dict[str, str]]:
    """Take back the recorded verdicts on ``version`` of the open exclusions ``query`` names
    (an id or a package): each candidate is ``found`` again (the release is a candidate
    again, not known bad), its runs so far count no more, and each exclusion's thread says
    who, when and why (``verdict-forgotten``). Raises :class:`GovernError` when there is
    nothing to take back (nothing is changed then)."""
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise GovernError(f"{version!r} is not a PEP 440 version") from None
    why = " ".join(reason.split())[:MAX_FORGET_REASON]
    if not why:
        raise GovernError("say why the verdict is taken back", tip="--reason TEXT")
    when = now or utcnow()
    with store.session(write=True) as session:
        ids = verifying.open_exclusions(session, key=query, package=canonicalize_name(query))
        forgotten = verifying.forget(session, exclusion_ids=ids, version=parsed)
        if not forgotten:
            raise GovernError(
                f"no verdict on {query} {version} to take back",
                tip="`govern history PACKAGE` lists the verifications and their verdicts",
            )
        by_exclusion: dict[int, list[verifying.Forgotten]] = defaultdict(list)
        for item in forgotten:
            by_exclusion[item.exclusion_id].append(item)
        statuses = verifying.candidate_statuses(session, exclusion_ids=set(by_exclusion))
        for exclusion_id, items in sorted(by_exclusion.items()):
            exclusion = verifying.exclusion(session, exclusion_id=exclusion_id)
            if exclusion is None:
                continue
            detail = {
                "version": items[0].version,
                "profiles": sorted({i.profile for i in items}),
                "verdicts": sorted({i.verdict.value for i in items}),
                "reason": why,
                "by": actor,
            }
            to = (
                verification_state(statuses.get(exclusion_id, {}))
                if exclusion.state in VERIFYING_STATES
                else None
            )
            events.record(session, exclusion, EventKind.VERDICT_FORGOTTEN, detail, when, to=to)
        relaxations.refresh(session, exclusion_ids=set(by_exclusion))
    return [
        {"version": i.version, "profile": i.profile, "verdict": i.verdict.value} for i in forgotten
    ]


class Verifier:
    """One ``govern verify`` call over a store and the providers of its profiles."""

    def __init__(
        self,
        store: Store,
        *,
        provider_for: ProviderFor,
        providers: Mapping[str, Provider],
        index: IndexSettings | None = None,
        attempts: int = 3,
        clock: Callable[[], datetime] = utcnow,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        secrets: ConfiguredSecrets | None = None,
        pins_for: PinsFor | None = None,
    ) -> None:
        """``provider_for(profile)`` picks the provider that starts a run on a profile;
        ``providers`` by name are those that may own runs still going (to poll them);
        ``secrets`` are scrubbed out of every log and detail stored; ``pins_for`` gives the
        versions a run installs beside the candidate when its intent has a lock
        (:mod:`govern.locks.installed`; None: the candidate alone)."""
        self.store = store
        self.secrets = secrets or ConfiguredSecrets()
        self.provider_for = provider_for
        self.providers = dict(providers)
        self.index = index
        self.attempts = max(1, attempts)
        self.clock = clock
        self.sleep = sleep
        self.result = VerifyResult()
        # Providers that refused the credentials or asked to wait: no more runs this call.
        self._refused: set[str] = set()
        self.pins_for = pins_for
        self._pins: dict[tuple[int, str], LockPins | None] = {}

    # -- the call -------------------------------------------------------------------------

    async def run(
        self,
        query: str | None = None,
        *,
        profiles: Sequence[str] = (),
        wait: bool = False,
        poll_interval: float = 15.0,
        deadline: float | None = None,
    ) -> VerifyResult:
        """Poll running verifications, start new ones; with ``wait``, until all have ended
        (or ``deadline`` seconds have passed: what is still running stays running)."""
        exclusion_ids = self._exclusions(query)
        with self.store.session(write=True) as session:
            relaxations.fill_missing(session, exclusion_ids=exclusion_ids)
        await self.poll(exclusion_ids)
        for _round in range(self.attempts):
            if not await self.start(exclusion_ids, profiles):
                break
        started = self.clock()
        while wait and self._running(exclusion_ids):
            if deadline is not None and (self.clock() - started).total_seconds() >= deadline:
                break
            await self.sleep(poll_interval)
            await self.poll(exclusion_ids)
            await self.start(exclusion_ids, profiles)  # retries of runs that errored
        self.result.running = len(self._running(exclusion_ids))
        return self.result

    def _exclusions(self, query: str | None) -> list[int] | None:
        """The exclusion ids asked about (None: all); an unknown query is an empty list."""
        if query is None:
            return None
        with self.store.session() as session:
            return verifying.open_exclusions(session, key=query, package=canonicalize_name(query))

    # -- running ones ---------------------------------------------------------------------

    def _running(
        self, exclusion_ids: list[int] | None, only: set[tuple[str, str]] | None = None
    ) -> list[Verification]:
        """Verifications not concluded yet (of some exclusions; of some runs: a webhook's)."""
        with self.store.session() as session:
            if only is None:
                return verifying.running(session, exclusion_ids=exclusion_ids)
            # Narrowed in SQL; the exact pairs are checked by the caller.
            return verifying.running(
                session,
                exclusion_ids=exclusion_ids,
                providers={provider for provider, _ in only},
                run_ids={run_id for _, run_id in only},
            )

    async def refresh(self, provider: str, run_ids: Sequence[str]) -> int:
        """Conclude the runs a webhook says have ended (one status call per run, no loop);
        returns how many verifications were concluded."""
        before = sum(self.result.concluded.values())
        await self.poll(None, only={(provider, run_id) for run_id in run_ids})
        return sum(self.result.concluded.values()) - before

    async def poll(
        self, exclusion_ids: list[int] | None, *, only: set[tuple[str, str]] | None = None
    ) -> None:
        """Ask each provider about its runs still going; conclude those that ended.

        ``only``: just these (provider, run id) pairs (a webhook's), orphans left alone.
        """
        runs: dict[tuple[str, str], list[Verification]] = defaultdict(list)
        now = self.clock()
        for row in self._running(exclusion_ids, only):
            if only is not None and (row.provider, row.run_id or "") not in only:
                continue
            if row.run_id is None:
                owner = self.providers.get(row.provider)
                bound = _ORPHAN_AFTER + timedelta(seconds=owner.timeout if owner else 0)
                if now - as_utc(row.started_at) > bound:
                    detail = "the govern process that started this run ended before recording it"
                    await self._conclude([row], RunStatus(Conclusion.ERRORED, detail))
                continue
            runs[(row.provider, row.run_id)].append(row)
        for (name, run_id), rows in sorted(runs.items()):
            provider = self.providers.get(name)
            if provider is None:
                self._skip(rows[0], f"provider {name!r} is not configured any more")
                continue
            trial = self._trial_of(rows[0])
            if trial is None:
                continue
            run = RunRef(run_id, rows[0].run_url)
            try:  # asked first: a run that ended is concluded, however late it is polled
                status = await provider.status(trial, run)
            except CIError as exc:
                self._error(name, exc)
                status = RunStatus(None)
            if status.run_id and status.run_id != run_id:
                self._rename(rows, status.run_id)
            if status.done:
                await self._conclude(rows, status)
                continue
            if (now - as_utc(rows[0].started_at)).total_seconds() > provider.timeout:
                await provider.cancel(run)
                status = RunStatus(
                    Conclusion.TIMED_OUT,
                    f"no conclusion after {provider.timeout:g} s; cancelled",
                    url=rows[0].run_url,
                )
                await self._conclude(rows, status)

    # -- new ones -------------------------------------------------------------------------

    async def start(self, exclusion_ids: list[int] | None, profiles: Sequence[str]) -> int:
        """Start a run for each group of candidates waiting; returns how many runs started."""
        groups: dict[tuple[str, str, str, str | None, str], list[_Wanted]] = defaultdict(list)
        for wanted in self._wanted(exclusion_ids, profiles):
            profile = wanted.waiting.profile
            provider = self.provider_for(profile)
            if provider is None:
                self.result.skipped.append(
                    self._described(wanted, f"no CI provider for profile {profile!r}")
                )
                continue
            if provider.name in self._refused:
                continue
            key = (
                wanted.waiting.ref.package,
                str(wanted.version),
                profile,
                wanted.reproducer,
                wanted.kind.value,
            )
            groups[key].append(wanted)
        started = 0
        for group in groups.values():
            provider = self.provider_for(group[0].waiting.profile)
            assert provider is not None
            if provider.name in self._refused:
                continue
            started += await self._start_group(provider, group)
        return started

    def _wanted(self, exclusion_ids: list[int] | None, profiles: Sequence[str]) -> list[_Wanted]:
        """Eligible candidates not yet tried (or tried without a verdict, attempts left),
        each with the run it waits for (:func:`govern.service.controls.next_run`)."""
        refused: list[tuple[int, str, _Wanted]] = []
        out: list[_Wanted] = []
        with self.store.session() as session:
            rows = verifying.waiting(session, exclusion_ids=exclusion_ids, profiles=profiles)
            ids = sorted({row.exclusion_id for row in rows})
            notes = current_notes(session, ids=ids)
            bad = failed_versions(session, ids=ids)
            candidate_ids = [row.candidate_id for row in rows]
            tries = verifying.attempts(session, candidate_ids=candidate_ids)
            made = verifying.runs(session, candidate_ids=candidate_ids)
            for row in rows:
                try:
                    version = Version(row.version)
                except InvalidVersion:
                    self.result.skipped.append(
                        {
                            "package": row.ref.package,
                            "version": row.version,
                            "profile": row.profile,
                            "reason": "not a PEP 440 version: never passed to CI",
                        }
                    )
                    continue
                note = notes.get(row.exclusion_id)
                known_bad = {*(note.bad_versions if note else ()), *bad.get(row.exclusion_id, ())}
                if any(_same(version, b) for b in known_bad) or _settled(row.ref.clause, known_bad):
                    continue  # known bad, or the line has nothing left to relax
                if tries.get(row.candidate_id, 0) >= self.attempts:
                    continue
                wanted = _Wanted(
                    waiting=row,
                    version=version,
                    reproducer=note.verify if note else None,
                    attempt=len(made.get(row.candidate_id, [])) + 1,
                    known_bad=tuple(sorted(known_bad)),
                )
                confirmed = False
                key = wanted.check_key
                if key is not None:
                    said = verifying.reproducer_runs(
                        session, exclusion_id=row.exclusion_id, check_key=key
                    )
                    if said:
                        confirmed, why = reproducer_said(*said[-1])
                        if not confirmed:
                            refused.append((row.candidate_id, why, wanted))
                            continue
                kind = next_run(
                    made.get(row.candidate_id, []), confirmed=confirmed, reproducer=key is not None
                )
                if kind is None:
                    continue
                run_version: Version | None = version
                if kind is RunKind.REPRODUCER:
                    run_version = known_bad_version(_clause_of(row), known_bad)
                    if run_version is None:
                        why = (
                            "the reproducer (verify=) cannot be confirmed: no known-bad release "
                            "to run it on (name one with bad=)"
                        )
                        refused.append((row.candidate_id, why, wanted))
                        continue
                elif kind is RunKind.CONTROL:
                    run_version = None
                out.append(dataclasses.replace(wanted, kind=kind, run_version=run_version))
        for candidate_id, why, wanted in refused:
            self._refuse(candidate_id, why, wanted)
        return out

    def _refuse(self, candidate_id: int, why: str, wanted: _Wanted) -> None:
        """A candidate whose runs cannot give a verdict: ``errored``, with why (once)."""
        with self.store.session(write=True) as session:
            if not verifying.give_up(session, candidate_id=candidate_id):
                return
            detail = {
                "version": str(wanted.version),
                "profile": wanted.waiting.profile,
                "verdict": CandidateStatus.ERRORED.value,
                "why": why,
            }
            now = self.clock()
            self._record(
                session,
                [
                    _QueuedEvent(
                        wanted.waiting.exclusion_id,
                        EventKind.VERIFICATION_ERRORED,
                        detail,
                        now,
                        now,
                    )
                ],
            )
        self.result.verdicts[CandidateStatus.ERRORED.value] += 1
        self.result.skipped.append(self._described(wanted, why))

    async def _start_group(self, provider: Provider, group: list[_Wanted]) -> bool:
        """Start one run for the group's candidates still waiting; False if none was."""
        first = group[0]
        files: tuple[DistributionFile, ...] | None = None
        if first.kind is RunKind.CONTROL:
            found = await self._control(first)
            if isinstance(found, str):
                for wanted in group:
                    self._refuse(wanted.waiting.candidate_id, found, wanted)
                return False
            run_version, files = found
            group = [dataclasses.replace(w, run_version=run_version) for w in group]
        # The locks are regenerated before any run is claimed (it may take minutes): a run
        # row never waits without a run for them.
        await self._lock_pins(first)
        now = self.clock()
        with self.store.session(write=True) as session:
            # Read again under the write lock: another call (the dashboard, another process,
            # an earlier group of this one) may have tried or judged a candidate meanwhile.
            claimed = verifying.claim(
                session,
                candidate_ids=[w.waiting.candidate_id for w in group],
                limit=self.attempts,
            )
            group = [
                dataclasses.replace(w, attempt=claimed[w.waiting.candidate_id])
                for w in group
                if w.waiting.candidate_id in claimed
            ]
            rows = [
                Verification(
                    candidate_id=w.waiting.candidate_id,
                    provider=provider.name,
                    profile=w.waiting.profile,
                    attempt=w.attempt,
                    started_at=now,
                    kind=w.kind,
                    version=None if w.kind is RunKind.CANDIDATE else str(w.run_version),
                    check_key=w.check_key if w.kind is RunKind.REPRODUCER else None,
                )
                for w in group
            ]
            verifying.add_runs(session, rows=rows)
        if not group:
            return False
        first = group[0]
        ref = first.waiting.ref
        run_version = first.run_version or first.version
        locked = await self._lock_pins(first)  # known by now (the same candidate's, or fresh)
        indexes = self.index.indexes_for(ref.package) if self.index is not None else ()
        stored, files_index = self._files(first.waiting, run_version)
        trial = Trial(
            package=ref.package,
            version=run_version,
            profile=first.waiting.profile,
            correlation_id=f"govern-{rows[0].id}-{first.attempt}",
            clause=ref.clause,
            index_url=indexes[0] if indexes else None,
            extra_index_urls=tuple(indexes[1:]),
            reproducer=first.reproducer,
            reproducer_only=first.kind is RunKind.REPRODUCER,
            files=files if files is not None else stored,
            files_index=files_index,
            trusted_redirects=self.index.trusted_redirects if self.index is not None else (),
            pins=locked.pins if locked is not None else (),
        )
        try:
            started = await provider.start(trial)
        except CIError as exc:
            self._error(provider.name, exc)
            status = RunStatus(Conclusion.ERRORED, f"the run could not start: {exc.message}")
            await self._conclude(rows, status)
            return True
        self.result.started += 1
        with self.store.session(write=True) as session:
            verifying.started(session, rows=rows, run_id=started.run.run_id, url=started.run.url)
            recorded_at = self.clock()
            self._record(
                session,
                [
                    _QueuedEvent(
                        _exclusion_of(group, row),
                        EventKind.VERIFICATION_STARTED,
                        self._detail(row, first, locked),
                        now,
                        recorded_at,
                    )
                    for row in rows
                ],
            )
        if started.status.done:
            await self._conclude(rows, started.status)
        return True

    async def _control(self, wanted: _Wanted) -> tuple[Version, tuple[DistributionFile, ...]] | str:
        """The release the line admits today and its files, from the index's page now (the
        poll keeps only releases beyond the bound), or why there is none."""
        ref = wanted.waiting.ref
        if self.index is None:
            return "no control run: no index is configured to find the release the line admits"
        from govern.index.client import IndexClient, http_client
        from govern.index.model import Fetched

        async with http_client() as http:
            fetched = await IndexClient(http, self.index).fetch(ref.package)
        if not isinstance(fetched, Fetched):
            return f"no control run: the index did not answer for {ref.package}"
        try:
            clause = Clause.parse(ref.clause, wanted.waiting.kind, known_bad=wanted.known_bad)
        except ValueError:
            return f"no control run: {ref.clause} cannot be judged"
        by_version: dict[Version, list[DistributionFile]] = defaultdict(list)
        for file in fetched.page.files:
            if file.version is not None:
                by_version[file.version].append(file)
        yanked = [v for v, fs in by_version.items() if all(f.yanked for f in fs)]
        chosen = control_version(
            by_version, clause, others_of(ref.requirement, ref.clause), yanked=yanked
        )
        if chosen is None:
            return (
                f"no control run: the index has no release that {ref.requirement} admits "
                "today to run the same check on"
            )
        return chosen, tuple(by_version[chosen])

    def _files(
        self, waiting: verifying.Waiting, version: Version
    ) -> tuple[tuple[DistributionFile, ...], str | None]:
        """The files of ``version`` (the candidate's, or a known-bad one's) as the poll
        stored them (with their hashes), and the configured index (with its credentials)
        whose page listed them: None when that index is not configured any more (an install
        from elsewhere is never a guess)."""
        with self.store.session() as session:
            if str(version) == waiting.version:
                release = verifying.release(session, release_id=waiting.release_id)
            else:
                release = verifying.release_of(
                    session, package=waiting.ref.package, version=str(version)
                )
            page = verifying.listed_by(session, package=waiting.ref.package)
        stored = release.files if release is not None else []
        files = tuple(file_from_json(item) for item in stored)
        indexes = self.index.indexes_for(waiting.ref.package) if self.index is not None else ()
        listed = next((i for i in indexes if page and strip_credentials(i) == page), None)
        return files, listed

    # -- conclusions ----------------------------------------------------------------------

    async def _conclude(self, rows: Sequence[Verification], status: RunStatus) -> None:
        """Record a run's end on each of its verifications, their candidates and exclusions."""
        assert status.conclusion is not None
        conclusion = status.conclusion
        now = self.clock()
        with self.store.session(write=True) as session:
            queued: list[_QueuedEvent] = []
            for stale in rows:
                row = verifying.verification(session, verification_id=stale.id)
                if row is None or row.conclusion is not None:
                    continue  # concluded by another process meanwhile
                row.conclusion = conclusion
                row.finished_at = status.finished_at or now
                row.installed_version = status.installed
                # Every configured secret by its value, whatever the provider printed.
                row.log_excerpt = self._hide(status.log_excerpt)
                row.detail = (self._hide(status.detail) or "")[:2000]
                row.run_url = status.url or row.run_url
                found = verifying.candidate_of(session, candidate_id=row.candidate_id)
                if found is None:
                    continue
                candidate, release = found
                session.flush()
                ran = verifying.runs(session, candidate_ids=[row.candidate_id])[row.candidate_id]
                verdict, why = self._verdict(row, ran, release.version)
                candidate.status = verdict
                if verdict is CandidateStatus.FAILED:
                    verifying.mark_bad(session, failed=candidate)
                if verdict in _VERDICT_STATUSES:
                    self.result.verdicts[verdict.value] += 1
                ended = {
                    "version": release.version,
                    "profile": row.profile,
                    "provider": row.provider,
                    "attempt": row.attempt,
                    "kind": row.kind.value,
                    "ran": row.version or release.version,
                    "conclusion": conclusion.value,
                    "installed": status.installed,
                    "run_url": row.run_url,
                    "detail": row.detail,
                    "verdict": verdict.value,
                    "why": why,
                }
                queued.append(
                    _QueuedEvent(
                        candidate.exclusion_id,
                        EventKind.concluded(conclusion),
                        ended,
                        row.finished_at,
                        now,
                    )
                )
                tail = None
                if conclusion is not Conclusion.PASSED or verdict is CandidateStatus.ERRORED:
                    tail = log_tail(row.log_excerpt)
                self.result.runs.append(
                    {
                        "verification": row.id,
                        "package": release.package,
                        **ended,
                        "log_tail": tail,
                    }
                )
                self.result.concluded[conclusion.value] += 1
            self._record(session, queued)
            relaxations.refresh(session, exclusion_ids={p.exclusion_id for p in queued})

    def _verdict(
        self, row: Verification, ran: Sequence[verifying.Ran], candidate: str
    ) -> tuple[CandidateStatus, str]:
        """The candidate's status after ``row`` ended, and why (docs/design.md#verdicts)."""
        conclusion = row.conclusion
        assert conclusion is not None
        if conclusion not in (Conclusion.PASSED, Conclusion.FAILED):
            errored = sum(r.conclusion not in (Conclusion.PASSED, Conclusion.FAILED) for r in ran)
            if errored >= self.attempts:
                return CandidateStatus.ERRORED, f"no verdict after {errored} attempts"
            return CandidateStatus.FOUND, f"the run {conclusion}: tried again"
        if row.kind is RunKind.REPRODUCER:
            confirmed, why = reproducer_said(row.version or "", conclusion)
            return (CandidateStatus.FOUND if confirmed else CandidateStatus.ERRORED), why
        judged = judge(ran, candidate=candidate)
        if judged.status is not None:
            return judged.status, judged.why
        if row.kind is RunKind.CANDIDATE and conclusion is Conclusion.FAILED:
            failures = sum(
                r.kind is RunKind.CANDIDATE and r.conclusion is Conclusion.FAILED for r in ran
            )
            if failures < FAILURES_NEEDED:
                return CandidateStatus.FOUND, "failed once: run again before it counts"
            return CandidateStatus.FOUND, (
                "failed again: the same check runs on the release the line admits today "
                "before it counts"
            )
        return CandidateStatus.FOUND, "more runs are needed"

    def _record(self, session: Session, queued: Sequence[_QueuedEvent]) -> None:
        """Record the events, each exclusion moved by its candidates' statuses (the
        lifecycle moves only those among ``VERIFYING_STATES``; the others keep their state)."""
        if not queued:
            return
        ids = {p.exclusion_id for p in queued}
        statuses = verifying.candidate_statuses(session, exclusion_ids=ids)
        for p in queued:
            exclusion = verifying.exclusion(session, exclusion_id=p.exclusion_id)
            if exclusion is None:
                continue
            to = (
                verification_state(statuses.get(p.exclusion_id, {}))
                if exclusion.state in VERIFYING_STATES
                else None
            )
            events.record(
                session, exclusion, p.kind, p.detail, p.at, to=to, recorded_at=p.recorded_at
            )

    # -- helpers --------------------------------------------------------------------------

    def _trial_of(self, row: Verification) -> Trial | None:
        """The trial a running verification was started for (to ask its provider)."""
        with self.store.session() as session:
            found = verifying.candidate_of(session, candidate_id=row.candidate_id)
            if found is None:
                return None
            candidate, release = found
            exclusion = verifying.exclusion(session, exclusion_id=candidate.exclusion_id)
            if exclusion is None:
                return None
            reproducer = verifying.reproducer(session, exclusion_id=candidate.exclusion_id)
        try:
            version = Version(release.version)
        except InvalidVersion:
            return None
        return Trial(
            package=release.package,
            version=version,
            profile=row.profile,
            correlation_id=f"govern-{row.id}-{row.attempt}",
            clause=exclusion.clause,
            reproducer=reproducer,
        )

    def _hide(self, text: str | None) -> str | None:
        return self.secrets.hide(text) if text is not None else None

    def _rename(self, rows: Sequence[Verification], run_id: str) -> None:
        """Store the id a provider found out for a run (``dispatch:...`` → its number)."""
        with self.store.session(write=True) as session:
            verifying.rename_run(
                session, verification_ids=[stale.id for stale in rows], run_id=run_id[:256]
            )
        for stale in rows:
            stale.run_id = run_id[:256]

    def _error(self, provider: str, exc: CIError) -> None:
        message = exc.message + (f" ({exc.tip})" if exc.tip else "")
        if message not in self.result.errors:
            self.result.errors.append(message)
        if isinstance(exc, CIAuthError | CIRateLimited):
            self._refused.add(provider)
        if isinstance(exc, CIAuthError):
            self.result.auth_failed = True

    def _skip(self, row: Verification, reason: str) -> None:
        self.result.skipped.append(
            {"verification": str(row.id), "profile": row.profile, "reason": reason}
        )

    @staticmethod
    def _described(wanted: _Wanted, reason: str) -> dict[str, str]:
        return {
            "package": wanted.waiting.ref.package,
            "version": str(wanted.version),
            "profile": wanted.waiting.profile,
            "reason": reason,
        }

    def _detail(
        self, row: Verification, wanted: _Wanted, locked: LockPins | None = None
    ) -> dict[str, Any]:
        detail: dict[str, Any] = {
            "version": str(wanted.version),
            "kind": row.kind.value,
            "ran": str(wanted.run_version or wanted.version),
            "profile": row.profile,
            "provider": row.provider,
            "attempt": row.attempt,
            "run_url": row.run_url,
        }
        if locked is not None:
            detail["lock"] = locked.detail()
        return detail

    async def _lock_pins(self, wanted: _Wanted) -> LockPins | None:
        """What the runs of a candidate install beside it: its intent's locks regenerated
        for it (once per call), or None when the intent has none."""
        if self.pins_for is None or not wanted.waiting.root or not wanted.waiting.locked:
            return None  # no lock tracked in the repository: nothing to copy or regenerate
        key = (wanted.waiting.exclusion_id, str(wanted.version))
        if key not in self._pins:
            try:
                found = await asyncio.to_thread(
                    self.pins_for,
                    Path(wanted.waiting.root),
                    wanted.waiting.ref,
                    wanted.waiting.format,
                    str(wanted.version),
                )
            except Exception as exc:  # the run goes on without pins, and says why
                from govern.locks.installed import LockPins

                why = exc.message if isinstance(exc, GovernError) else repr(exc)
                if not isinstance(exc, GovernError):  # a bug: its traceback, in the log
                    log.warning("regenerating the locks for %s failed", key, exc_info=True)
                found = LockPins((), refused=f"the locks could not be read: {why}")
            if found is not None and found.refused is not None:
                # Secrets hidden in the whole text, before any of it is cut for the event.
                found = dataclasses.replace(found, refused=self._hide(found.refused))
            self._pins[key] = found
        return self._pins[key]


def log_tail(log: str | None, lines: int = 40) -> str | None:
    """The last ``lines`` lines of a (redacted) run log: what a person reads first."""
    if not log:
        return None
    return "\n".join(log.rstrip("\n").splitlines()[-lines:])


def _exclusion_of(group: Sequence[_Wanted], row: Verification) -> int:
    return next(w.waiting.exclusion_id for w in group if w.waiting.candidate_id == row.candidate_id)


def _clause_of(row: verifying.Waiting) -> Clause | None:
    try:
        return Clause.parse(row.ref.clause, row.kind)
    except ValueError:
        return None


def _settled(clause: str, known_bad: Collection[str]) -> bool:
    """Whether a ``!=V`` clause has V known bad (:attr:`Clause.settled`): no run for it."""
    if not clause.startswith("!="):
        return False
    try:
        return Clause.parse(clause, Kind.NOT_EQUAL, known_bad=sorted(known_bad)).settled
    except ValueError:
        return False


def _same(version: Version, text: str) -> bool:
    try:
        return Version(text) == version
    except InvalidVersion:
        return False
