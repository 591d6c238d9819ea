"""The stored relaxation (``candidate.relaxation``): written when a verification concludes,
again when the known-bad versions change (a failure, an annotation's ``bad=``), filled in
for candidates without one; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from packaging.version import Version
from sqlmodel import col, select

from fakes.index import IndexFile, StaticIndex
from govern.ci.base import Conclusion, Provider, RunRef, RunStatus, Started, Trial
from govern.config import Config
from govern.exclusions.settings import ConfigAnnotation
from govern.exclusions.states import State
from govern.index.pipconfig import IndexSettings
from govern.service.track import TrackOptions, track
from govern.service.verify import Verifier
from govern.store import relaxations
from govern.store.db import Store
from govern.store.models import Candidate, StoredExclusion, StoredRelease
from govern.store.views import StoredRelaxation

NOW = datetime(2026, 8, 1, tzinfo=UTC)
LINE = "demo < 1.1\n"


class Later(Provider):
    """Passes 1.2 (and the control, 1.0) at once; 1.3's run goes on until ``ended`` says
    how it ended, and its re-run ends the same way at once."""

    kind = "scripted"

    def __init__(self) -> None:
        super().__init__("ci", timeout=3600.0)
        self.ended: RunStatus | None = None
        self.started = 0

    async def start(self, trial: Trial) -> Started:
        self.started += 1
        ref = RunRef(f"run-{self.started}", None)
        if str(trial.version) in ("1.0", "1.2"):
            passed = RunStatus(Conclusion.PASSED, "exit 0", installed=str(trial.version))
            return Started(ref, passed)
        return Started(ref, self.ended or RunStatus(None))

    async def status(self, trial: Trial, run: RunRef) -> RunStatus:
        return self.ended or RunStatus(None)

    async def cancel(self, run: RunRef) -> None:
        return None


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "app"
    root.mkdir()
    (root / "requirements.txt").write_text(LINE, encoding="utf-8")
    return root


@pytest.fixture
def store(database_url: str, repo: Path) -> Iterator[Store]:
    """``demo < 1.1`` tracked; 1.1 (the capped release), 1.2 and 1.3 published; 1.2 and 1.3
    candidates as a poll writes them: found, no relaxation yet."""
    with Store(database_url) as opened:
        _track(opened, repo)
        with opened.session(write=True) as session:
            exclusion = session.exec(select(StoredExclusion)).one()
            releases = [
                StoredRelease(package="demo", version=v, first_seen_at=NOW)
                for v in ("1.1", "1.2", "1.3")
            ]
            session.add_all(releases)
            session.flush()
            for release in releases[1:]:
                session.add(
                    Candidate(
                        exclusion_id=exclusion.id or 0,
                        release_id=release.id or 0,
                        profile="x86",
                        found_at=NOW,
                    )
                )
            exclusion.state = State.CANDIDATE
        yield opened


def _track(store: Store, root: Path) -> None:
    track(store, root, None, config=Config(repository="example/app"), options=TrackOptions(now=NOW))


@pytest.fixture(autouse=True)
def index(tmp_path: Path) -> Iterator[None]:
    """The index a control run reads (the release ``demo < 1.1`` admits today: 1.0)."""
    files = [IndexFile(f"demo-{v}-py3-none-any.whl") for v in ("1.0", "1.1", "1.2", "1.3")]
    with StaticIndex(tmp_path / "index", {"demo": files}) as served:
        _INDEX[:] = [IndexSettings(served.url, source="test")]
        try:
            yield
        finally:
            _INDEX.clear()


_INDEX: list[IndexSettings] = []


def _verify(store: Store, provider: Provider | None, *, at: datetime = NOW) -> None:
    verifier = Verifier(
        store,
        provider_for=lambda _profile: provider,
        providers={provider.name: provider} if provider else {},
        clock=lambda: at,
        index=_INDEX[0] if _INDEX else None,
    )
    asyncio.run(verifier.run())


def _stored(store: Store) -> dict[str, StoredRelaxation | None]:
    with store.session() as session:
        return {
            release.version: StoredRelaxation.read(candidate.relaxation)
            for candidate, release in session.exec(
                select(Candidate, StoredRelease)
                .join(StoredRelease, col(StoredRelease.id) == col(Candidate.release_id))
                .order_by(col(StoredRelease.version))
            )
        }


def _specifier(found: StoredRelaxation | None) -> str | None:
    assert found is not None, "no relaxation stored"
    return found.specifier


def test_a_verification_stores_it_and_a_failure_stores_it_again(store: Store) -> None:
    assert _stored(store) == {"1.2": None, "1.3": None}  # as the poll left them
    provider = Later()
    _verify(store, provider)
    first = _stored(store)["1.2"]
    assert first is not None
    assert first.specifier == "!=1.1"  # the capped release stays out
    assert first.requirement == "demo != 1.1"
    assert first.strategy == "exclude"
    assert first.refused is None
    # 1.3 fails later, and again, and the control passes: it is known bad now, and 1.2's
    # change keeps it out too.
    provider.ended = RunStatus(Conclusion.FAILED, "exit 1", installed="1.3")
    _verify(store, provider, at=NOW + timedelta(minutes=5))
    after = _stored(store)
    assert after["1.2"] is not None
    assert after["1.2"].specifier == "!=1.1,!=1.3"
    assert "known-bad 1.1, 1.3 stays out" in after["1.2"].note
    refused = after["1.3"]
    assert refused is not None
    assert refused.requirement is None
    assert refused.refused == "candidate 1.3 is known bad: it cannot be proposed"
    assert refused.note == f"no narrow change computed: {refused.refused}"


def test_a_sync_that_changes_the_known_bad_versions_stores_it_again(
    store: Store, repo: Path
) -> None:
    _verify(store, None)  # no provider: nothing runs, the missing ones are filled in
    assert _specifier(_stored(store)["1.2"]) == "!=1.1"
    (repo / "requirements.txt").write_text(f"# govern: bad=1.2.5\n{LINE}", encoding="utf-8")
    _track(store, repo)
    assert _specifier(_stored(store)["1.2"]) == "!=1.1,!=1.2.5"


def test_it_is_read_back_by_candidate(store: Store) -> None:
    with store.session(write=True) as session:
        assert relaxations.fill_missing(session) == 2
        assert relaxations.fill_missing(session) == 0  # nothing missing any more
        candidate = session.exec(select(Candidate).order_by(col(Candidate.id))).first()
        assert candidate is not None
        assert candidate.id is not None
        found = StoredRelaxation.read(candidate.relaxation)
        assert found is not None
        assert found.requirement == "demo != 1.1"
        assert StoredRelaxation.read(None) is None  # not computed yet


def test_a_version_too_long_to_read_is_skipped_not_a_crash() -> None:
    assert relaxations._versions(["1.0", "9" * 5000, "not a version"]) == [Version("1.0")]


@pytest.mark.parametrize(
    ("annotation", "config", "expected"),
    [
        ("", Config(repository="example/app"), "!=1.1"),  # the default: exclude
        ("# govern: strategy=keep-ceiling\n", Config(repository="example/app"), "!=1.1,<1.3"),
        ("", Config(repository="example/app", relax_strategy="keep-ceiling"), "!=1.1,<1.3"),
        (  # the package's, from configuration
            "",
            Config(
                repository="example/app",
                annotations=(ConfigAnnotation("demo", fields={"strategy": "keep-ceiling"}),),
            ),
            "!=1.1,<1.3",
        ),
        # an exclusion's own choice wins over the repository's
        (
            "# govern: strategy=exclude\n",
            Config(repository="example/app", relax_strategy="keep-ceiling"),
            "!=1.1",
        ),
    ],
)
def test_a_strategy_that_keeps_a_ceiling_is_chosen_per_exclusion_or_repository(
    store: Store, repo: Path, annotation: str, config: Config, expected: str
) -> None:
    (repo / "requirements.txt").write_text(f"{annotation}{LINE}", encoding="utf-8")
    track(store, repo, None, config=config, options=TrackOptions(now=NOW))
    with store.session(write=True) as session:
        relaxations.refresh(
            session, exclusion_ids={e.id or 0 for e in session.exec(select(StoredExclusion))}
        )
    assert _specifier(_stored(store)["1.2"]) == expected
