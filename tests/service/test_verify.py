"""The verification workflow (``govern.service.verify``) with a scripted provider.

The provider here is in-process and scripted (each start answers the next status of a
script), so the workflow's decisions can be checked one by one on SQLite and PostgreSQL:
grouping, retries, time-outs, rate limits, refused tokens, hostile versions, orphans.
The real providers are tested against real processes (``test_verify_e2e.py``) and local
servers that follow the vendors' documentation (``tests/ci``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import col, select

from fakes.index import IndexFile, StaticIndex
from govern.ci.base import Conclusion, Provider, RunRef, RunStatus, Started, Trial
from govern.config import Config
from govern.errors import CIAuthError, CIRateLimited
from govern.exclusions.states import CandidateStatus, State
from govern.index.pipconfig import IndexSettings
from govern.service.track import TrackOptions, track
from govern.service.verify import Verifier, VerifyResult
from govern.store import verifying
from govern.store.db import Store
from govern.store.models import Candidate, StoredExclusion, StoredRelease, Verification

NOW = datetime(2026, 8, 1, tzinfo=UTC)


class Scripted(Provider):
    """Answers each start with the next outcome: a RunStatus (final or running) or an error.

    ``later`` is what :meth:`status` answers for runs still going (None: still running).
    """

    kind = "scripted"

    def __init__(self, *outcomes: RunStatus | Exception, timeout: float = 3600.0) -> None:
        super().__init__("ci", timeout=timeout)
        self.outcomes = list(outcomes)
        self.trials: list[Trial] = []
        self.later: RunStatus | None = None
        self.cancelled: list[str] = []

    async def start(self, trial: Trial) -> Started:
        self.trials.append(trial)
        outcome = self.outcomes.pop(0) if self.outcomes else RunStatus(None)
        if isinstance(outcome, Exception):
            raise outcome
        return Started(
            RunRef(f"run-{len(self.trials)}", f"https://ci.test/{len(self.trials)}"), outcome
        )

    async def status(self, trial: Trial, run: RunRef) -> RunStatus:
        return self.later or RunStatus(None)

    async def cancel(self, run: RunRef) -> None:
        self.cancelled.append(run.run_id)


def passed(version: str) -> RunStatus:
    return RunStatus(Conclusion.PASSED, "exit status 0", installed=version)


@pytest.fixture
def store(database_url: str, tmp_path: Path) -> Iterator[Store]:
    """Two repositories pinning ``demo==1.0``; releases 1.1 and 1.2, candidates on two
    profiles for 1.1 (eligible, found)."""
    with Store(database_url) as opened:
        for name in ("one", "two"):
            root = tmp_path / name
            root.mkdir()
            (root / "requirements.txt").write_text("demo==1.0  # broken 1.1 builds\n")
            config = Config(repository=f"example/{name}")
            track(opened, root, None, config=config, options=TrackOptions(now=NOW))
        with opened.session(write=True) as session:
            releases = [
                StoredRelease(package="demo", version=v, first_seen_at=NOW) for v in ("1.1",)
            ]
            session.add_all(releases)
            session.flush()
            for exclusion in session.exec(select(StoredExclusion)):
                assert exclusion.id is not None
                for profile in ("x86", "arm"):
                    session.add(
                        Candidate(
                            exclusion_id=exclusion.id,
                            release_id=releases[0].id or 0,
                            profile=profile,
                            found_at=NOW,
                        )
                    )
                exclusion.state = State.CANDIDATE
        yield opened


def _verify(
    store: Store, provider: Provider, *, clock: datetime = NOW, **options: object
) -> VerifyResult:
    verifier = Verifier(
        store,
        provider_for=lambda _profile: provider,
        providers={provider.name: provider},
        attempts=int(options.pop("attempts", 3)),  # type: ignore[call-overload]
        index=options.pop("index", None),  # type: ignore[arg-type]
        clock=lambda: clock,
    )
    return asyncio.run(verifier.run(**options))  # type: ignore[arg-type]


def _rows(store: Store) -> list[Verification]:
    with store.session() as session:
        return list(session.exec(select(Verification).order_by(col(Verification.id))))


def _statuses(store: Store) -> dict[tuple[int, str], str]:
    with store.session() as session:
        return {(c.exclusion_id, c.profile): c.status for c in session.exec(select(Candidate))}


def _states(store: Store) -> list[str]:
    with store.session() as session:
        return [
            e.state for e in session.exec(select(StoredExclusion).order_by(col(StoredExclusion.id)))
        ]


def test_one_run_per_release_and_profile_however_many_repositories(store: Store) -> None:
    provider = Scripted(passed("1.1"), passed("1.1"))
    result = _verify(store, provider)
    assert [(t.requirement, t.profile) for t in provider.trials] == [
        ("demo==1.1", "arm"),
        ("demo==1.1", "x86"),
    ]
    rows = _rows(store)
    assert len(rows) == 4  # a verification per candidate, two runs
    assert {r.run_id for r in rows} == {"run-1", "run-2"}
    assert {r.conclusion for r in rows} == {"passed"}
    assert {r.installed_version for r in rows} == {"1.1"}
    assert set(_statuses(store).values()) == {"passed"}
    assert _states(store) == ["verified", "verified"]
    assert result.started == 2
    assert result.concluded["passed"] == 4


def test_a_waiting_candidate_carries_its_exclusions_reference(store: Store) -> None:
    with store.session() as session:
        waiting = verifying.waiting(session, exclusion_ids=None, profiles=())
    assert [(w.ref.repository, w.profile, w.version) for w in waiting] == [
        ("example/one", "arm", "1.1"),
        ("example/one", "x86", "1.1"),
        ("example/two", "arm", "1.1"),
        ("example/two", "x86", "1.1"),
    ]
    ref = waiting[0].ref
    assert (ref.source, ref.line, ref.package, ref.clause) == (
        "requirements.txt",
        1,
        "demo",
        "==1.0",
    )


def test_errored_runs_are_retried_and_never_count(store: Store) -> None:
    errored = RunStatus(Conclusion.ERRORED, "runner lost")
    cancelled = RunStatus(Conclusion.CANCELLED, "cancelled by a person")
    provider = Scripted(errored, cancelled, passed("1.1"), errored, errored, errored)
    result = _verify(store, provider, profiles=["x86", "arm"])
    statuses = _statuses(store)
    # Rounds alternate between the groups: arm errored then passed; x86 was cancelled,
    # then errored twice.
    assert {v for (_, p), v in statuses.items() if p == "arm"} == {"passed"}
    # x86: no verdict after three attempts: it waits for a person
    assert {v for (_, p), v in statuses.items() if p == "x86"} == {"errored"}
    attempts = sorted((r.profile, r.attempt, r.conclusion) for r in _rows(store))
    assert attempts == sorted(
        [
            (p, a, c)
            for p, a, c in [
                ("arm", 1, "errored"),
                ("arm", 2, "passed"),
                ("x86", 1, "cancelled"),
                ("x86", 2, "errored"),
                ("x86", 3, "errored"),
            ]
            for _ in range(2)
        ]
    )
    assert result.concluded["failed"] == 0
    # Only a pass on every profile makes the exclusion verified; x86 has no verdict.
    assert _states(store) == ["candidate", "candidate"]
    # A fourth call starts nothing: the attempts are spent.
    again = Scripted(passed("1.1"))
    _verify(store, again)
    assert again.trials == []


def _index(tmp_path: Path) -> Iterator[IndexSettings]:
    files = [IndexFile(f"demo-{v}-py3-none-any.whl") for v in ("1.0", "1.1")]
    with StaticIndex(tmp_path / "index", {"demo": files}) as served:
        yield IndexSettings(served.url, source="test")


index = pytest.fixture(_index)


def test_a_failure_counts_after_a_rerun_and_a_passing_control_on_every_profile(
    store: Store, index: IndexSettings
) -> None:
    failed = RunStatus(Conclusion.FAILED, "exit status 1", installed="1.1")
    control = RunStatus(Conclusion.PASSED, "exit status 0", installed="1.0")
    provider = Scripted(failed, failed, control)
    result = _verify(store, provider, profiles=["arm"], index=index)
    assert result.concluded["failed"] == 4  # two runs, each for both repositories' line
    assert result.verdicts["failed"] == 2
    # The candidate, its re-run, then the control on the pinned 1.0.
    assert [str(t.version) for t in provider.trials] == ["1.1", "1.1", "1.0"]
    assert [r.kind for r in _rows(store)] == ["candidate"] * 4 + ["control"] * 2
    statuses = _statuses(store)
    assert {v for (_, p), v in statuses.items() if p == "arm"} == {"failed"}
    assert {v for (_, p), v in statuses.items() if p == "x86"} == {"bad"}
    assert _states(store) == ["held", "held"]
    # The known-bad version is never tried again, on any profile.
    again = Scripted(passed("1.1"))
    _verify(store, again, index=index)
    assert again.trials == []


def test_a_check_that_fails_on_the_control_gives_no_verdict(
    store: Store, index: IndexSettings
) -> None:
    failed = RunStatus(Conclusion.FAILED, "exit status 1", installed="1.1")
    broken = RunStatus(Conclusion.FAILED, "exit status 1", installed="1.0")
    provider = Scripted(failed, failed, broken)
    result = _verify(store, provider, query="demo", profiles=["arm"], index=index)
    assert result.verdicts["failed"] == 0
    assert result.verdicts["errored"] >= 1
    runs = [r for r in result.runs if r["kind"] == "control"]
    assert runs[0]["verdict"] == "errored"
    assert "the check fails on 1.0 too" in runs[0]["why"]
    assert "failed" not in set(_statuses(store).values())  # 1.1 is not known bad


def test_a_failure_then_a_pass_is_a_flake_and_a_pass(store: Store, index: IndexSettings) -> None:
    failed = RunStatus(Conclusion.FAILED, "exit status 1", installed="1.1")
    provider = Scripted(failed, passed("1.1"))
    result = _verify(store, provider, profiles=["arm"], index=index)
    assert result.verdicts == {"passed": 2}
    assert result.runs[0]["why"] == "failed once: run again before it counts"
    assert "a flake" in result.runs[2]["why"]
    assert {v for (_, p), v in _statuses(store).items() if p == "arm"} == {"passed"}


def test_a_hosted_run_is_polled_and_timed_out(store: Store) -> None:
    provider = Scripted(RunStatus(None), RunStatus(None), timeout=600)
    result = _verify(store, provider)
    assert result.started == 2
    assert result.running == 4
    assert _states(store) == ["verifying", "verifying"]
    assert {r.conclusion for r in _rows(store)} == {None}
    # Five minutes later the provider says a run passed; the other is still going.
    provider.outcomes = []
    provider.later = passed("1.1")
    result = _verify(store, provider, clock=NOW + timedelta(minutes=5))
    assert result.concluded["passed"] == 4
    assert provider.trials[2:] == []  # nothing new started
    # Past the time-out a run that never ends is cancelled and recorded as timed-out.
    fresh = Scripted(RunStatus(None), timeout=600)
    with store.session(write=True) as session:  # fresh candidates: no runs yet
        for row in session.exec(select(Verification)):
            session.delete(row)
        for candidate in session.exec(select(Candidate)):
            candidate.status = CandidateStatus.FOUND
    _verify(store, fresh, profiles=["x86"])
    later = _verify(store, fresh, clock=NOW + timedelta(minutes=11), profiles=["x86"], attempts=1)
    assert fresh.cancelled == ["run-1"]
    assert later.concluded["timed-out"] == 2
    assert {v for (_, p), v in _statuses(store).items() if p == "x86"} == {"errored"}


def test_a_rate_limit_or_a_refused_token_stops_starting_runs(store: Store) -> None:
    limited = Scripted(CIRateLimited("ci: rate limited until 12:00", until=NOW))
    result = _verify(store, limited)
    assert len(limited.trials) == 1  # the second group was not started
    assert result.errors == ["ci: rate limited until 12:00"]
    assert not result.auth_failed
    refused = Scripted(CIAuthError("ci refused the token from $CI_TOKEN (HTTP 401)"))
    result = _verify(store, refused)
    assert len(refused.trials) == 1
    assert result.auth_failed
    assert "refused the token" in result.errors[0]
    assert "errored" in {r.conclusion for r in _rows(store)}
    assert "passed" not in {r.conclusion for r in _rows(store)}


def test_a_version_that_is_not_pep440_never_reaches_a_provider(store: Store) -> None:
    with store.session(write=True) as session:
        for candidate in session.exec(select(Candidate)):
            candidate.status = CandidateStatus.PASSED
        hostile = StoredRelease(package="demo", version="1.0; rm -rf /", first_seen_at=NOW)
        session.add(hostile)
        session.flush()
        exclusion = session.exec(select(StoredExclusion)).first()
        assert exclusion is not None
        session.add(
            Candidate(
                exclusion_id=exclusion.id or 0,
                release_id=hostile.id or 0,
                profile="x86",
                found_at=NOW,
            )
        )
    provider = Scripted(passed("1.0"))
    result = _verify(store, provider)
    assert provider.trials == []
    assert [s["version"] for s in result.skipped] == ["1.0; rm -rf /"]
    assert "PEP 440" in result.skipped[0]["reason"]


def test_a_run_whose_process_died_before_recording_it_is_closed(store: Store) -> None:
    with store.session(write=True) as session:
        candidate = session.exec(select(Candidate)).first()
        assert candidate is not None
        candidate.status = CandidateStatus.VERIFYING
        session.add(
            Verification(
                candidate_id=candidate.id or 0,
                provider="ci",
                profile=candidate.profile,
                started_at=NOW,
            )
        )
    provider = Scripted(passed("1.1"), passed("1.1"))
    _verify(store, provider, clock=NOW + timedelta(hours=1, minutes=30))
    assert _rows(store)[0].conclusion is None  # within the provider's time-out: still going
    _verify(store, provider, clock=NOW + timedelta(hours=3))
    orphan = _rows(store)[0]
    assert orphan.conclusion == "errored"
    assert orphan.detail is not None
    assert "ended before recording" in orphan.detail


def test_a_run_that_ended_is_concluded_however_late_it_is_polled(store: Store) -> None:
    provider = Scripted(RunStatus(None), RunStatus(None), timeout=600)
    _verify(store, provider)
    provider.later = passed("1.1")
    result = _verify(store, provider, clock=NOW + timedelta(hours=2))  # far past the time-out
    assert result.concluded["passed"] == 4
    assert result.concluded.get("timed-out", 0) == 0
    assert provider.cancelled == []


class Racing(Scripted):
    """While its first run goes, another caller judges the second group's candidates."""

    def __init__(self, store: Store, *outcomes: RunStatus | Exception) -> None:
        super().__init__(*outcomes)
        self.store = store

    async def start(self, trial: Trial) -> Started:
        if not self.trials:
            with self.store.session(write=True) as session:
                for candidate in session.exec(select(Candidate).where(Candidate.profile == "x86")):
                    candidate.status = CandidateStatus.FAILED
        return await super().start(trial)


def test_a_group_judged_meanwhile_is_not_started_again(store: Store) -> None:
    provider = Racing(store, passed("1.1"), passed("1.1"))
    result = _verify(store, provider)
    assert [t.profile for t in provider.trials] == ["arm"]  # x86 was judged meanwhile
    assert result.started == 1
    statuses = _statuses(store)
    assert {v for (_, p), v in statuses.items() if p == "x86"} == {"failed"}  # kept
    assert _states(store) == ["held", "held"]  # 1.1 failed on x86: bad for the whole line


class Renaming(Scripted):
    """A provider that learns its run's real id only when asked about it."""

    async def status(self, trial: Trial, run: RunRef) -> RunStatus:
        self.asked = [*getattr(self, "asked", []), run.run_id]
        if run.run_id.startswith("run-"):
            return RunStatus(None, "listed now", run_id=f"9{run.run_id.removeprefix('run-')}")
        return self.later or RunStatus(None)


def test_a_run_id_found_out_later_is_stored_for_webhooks(store: Store) -> None:
    provider = Renaming(RunStatus(None), RunStatus(None))
    _verify(store, provider)
    _verify(store, provider, clock=NOW + timedelta(minutes=1))  # learns the real ids
    assert {r.run_id for r in _rows(store)} == {"91", "92"}
    provider.later = passed("1.1")
    verifier = Verifier(
        store,
        provider_for=lambda _profile: provider,
        providers={provider.name: provider},
        clock=lambda: NOW + timedelta(minutes=2),
    )
    concluded = asyncio.run(verifier.refresh(provider.name, ["91"]))
    assert concluded == 2  # the two repositories' verifications of that run
