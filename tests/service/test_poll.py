"""``govern poll``: a CuPy-like project on a local index, its candidates, and bad answers.

The index is :class:`fakes.index.StaticIndex` (PEP 691 JSON and PEP 503 HTML over HTTP on
127.0.0.1, with ETags) and :class:`fakes.index.FaultServer`; the store runs on SQLite and
on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy
from packaging.version import Version
from sqlmodel import col, select

from fakes.index import FaultServer, IndexFile, Reply, StaticIndex, Truncated, json_page
from govern.cli import main
from govern.config import Config
from govern.index.client import IndexClient
from govern.index.pipconfig import IndexSettings
from govern.index.profiles import Profile
from govern.service.poll import PollResult, poll
from govern.service.track import TrackOptions, track
from govern.store import events, polling
from govern.store.db import Store
from govern.store.location import as_utc
from govern.store.models import Candidate, Event, IndexPage, PollRun, StoredExclusion
from govern.store.models import StoredRelease as ReleaseRow

NOW = datetime(2026, 8, 1, tzinfo=UTC)
X86 = Profile(name="cuda13", python=Version("3.12"), platforms=("manylinux_2_28_x86_64",))
ARM = Profile(name="arm", python=Version("3.12"), platforms=("manylinux_2_28_aarch64",))
CAP = (
    "# CuPy 14.1.0 imports pytest from cupy.testing._random. Use <14.1.0\n"
    "# until a fixed newer release is verified for runtime images.\n"
    "cupy-cuda13x < 14.1.0\n"
)


def _wheel(version: str, platform: str, day: str, **details: Any) -> IndexFile:
    name = f"cupy_cuda13x-{version}-cp312-cp312-{platform}.whl"
    return IndexFile(name, upload_time=f"{day}T12:00:00Z", **details)


def cupy_files() -> list[IndexFile]:
    """14.0.1, a broken 14.1.0, 14.1.1, a yanked 14.1.2 and an aarch64-only 14.1.3."""
    files = []
    for version, day in (
        ("14.0.1", "2026-04-01"),
        ("14.1.0", "2026-05-23"),
        ("14.1.1", "2026-06-01"),
    ):
        for platform in ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64"):
            files.append(_wheel(version, platform, day))
    for platform in ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64"):
        files.append(_wheel("14.1.2", platform, "2026-06-10", yanked="broken build"))
    files.append(_wheel("14.1.3", "manylinux_2_28_aarch64", "2026-06-20"))
    return files


@pytest.fixture
def index(tmp_path: Path) -> Iterator[StaticIndex]:
    with StaticIndex(tmp_path / "index", {"cupy-cuda13x": cupy_files()}, serial=10) as served:
        yield served


@pytest.fixture
def store(database_url: str, tmp_path: Path) -> Iterator[Store]:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(CAP, encoding="utf-8")
    with Store(database_url) as opened:
        track(opened, root, None, config=Config(), options=TrackOptions(now=NOW))
        yield opened


def _poll(
    store: Store,
    url: str,
    profiles: list[Profile],
    *,
    now: datetime = NOW,
    refresh: bool = False,
    window: int | None = None,
    **client: Any,
) -> PollResult:
    async def go() -> PollResult:
        async with httpx.AsyncClient(trust_env=False) as http:
            settings = IndexSettings(url, source="test")
            index = IndexClient(http, settings, **client)
            return await poll(store, index, profiles, now=now, refresh=refresh, window=window)

    return asyncio.run(go())


def _candidates(store: Store) -> dict[tuple[str, str], tuple[bool, str | None, str]]:
    with store.session() as session:
        rows = session.exec(
            select(Candidate, ReleaseRow).join(
                ReleaseRow, col(ReleaseRow.id) == col(Candidate.release_id)
            )
        ).all()
        return {(r.version, c.profile): (c.eligible, c.reason, c.role) for c, r in rows}


def test_a_fixed_release_becomes_a_candidate(store: Store, index: StaticIndex) -> None:
    result = _poll(store, index.url, [X86, ARM])
    assert (result.projects, result.fetched, result.failed, result.releases_new) == (1, 1, 0, 5)
    found = {(f["version"], f["profile"]) for f in result.found}
    assert found == {("14.1.1", "cuda13"), ("14.1.3", "arm")}
    decided = _candidates(store)
    eligible, reason, _ = decided[("14.1.3", "cuda13")]
    assert not eligible
    assert reason is not None
    assert "manylinux_2_28_x86_64" in reason
    eligible, reason, _ = decided[("14.1.2", "cuda13")]
    assert not eligible
    assert reason is not None
    assert "broken build" in reason
    assert decided[("14.1.1", "cuda13")] == (True, None, "newest")
    assert ("14.1.0", "cuda13") not in decided or not decided[("14.1.0", "cuda13")][0]
    with store.session() as session:
        cupy = session.exec(select(StoredExclusion)).one()
        events = session.exec(select(Event).where(Event.kind == "candidate-found")).all()
    assert cupy.state == "candidate"
    assert sorted(e.detail["version"] for e in events) == ["14.1.1", "14.1.3"]
    # The poll stores each new candidate's narrow change: no page computes it.
    with store.session() as session:
        stored = {
            r.version: c.relaxation
            for c, r in session.exec(
                select(Candidate, ReleaseRow).join(
                    ReleaseRow, col(ReleaseRow.id) == col(Candidate.release_id)
                )
            ).all()
        }
    assert stored["14.1.1"] is not None
    assert stored["14.1.1"]["specifier"] == "!=14.1.0"


def test_a_second_poll_is_a_304_and_adds_nothing(store: Store, index: StaticIndex) -> None:
    _poll(store, index.url, [X86])
    again = _poll(store, index.url, [X86])
    assert (again.fetched, again.not_modified, again.candidates_found) == (0, 1, 0)
    assert index.count(index.path("cupy-cuda13x")) == 2  # one request per poll
    with store.session() as session:
        assert len(session.exec(select(Event).where(Event.kind == "candidate-found")).all()) == 1


def test_one_request_per_project_however_many_exclusions(
    database_url: str, tmp_path: Path, index: StaticIndex
) -> None:
    with Store(database_url) as store:
        for number in range(3):
            root = tmp_path / f"repo{number}"
            root.mkdir()
            (root / "requirements.txt").write_text("cupy-cuda13x<14.1.0\n", encoding="utf-8")
            config = Config(repository=f"example.org/team/repo{number}")
            track(store, root, None, config=config, options=TrackOptions(now=NOW))
        result = _poll(store, index.url, [X86])
        assert (result.exclusions, result.projects, result.requests) == (3, 1, 1)
        assert index.count(index.path("cupy-cuda13x")) == 1
        assert result.candidates_found == 3


def test_a_failing_index_changes_nothing(store: Store, tmp_path: Path) -> None:
    with FaultServer() as faults:
        faults.script("cupy-cuda13x", Reply(500, b"oops"))
        result = _poll(store, faults.url, [X86], attempts=2, backoff=0.0)
    assert (result.failed, result.fetched) == (1, 0)
    ((package, reason),) = result.failures
    assert package == "cupy-cuda13x"
    assert "500" in reason
    with store.session() as session:
        page = session.exec(select(IndexPage)).one()
        assert page.failures == 1
        assert page.failure == reason
        assert session.exec(select(StoredExclusion)).one().state == "held"
        assert session.exec(select(Event).where(Event.kind == "candidate-found")).all() == []
        assert session.exec(select(ReleaseRow)).all() == []


def test_a_fresh_answer_is_not_asked_again_until_it_expires(store: Store) -> None:
    # RFC 9111: max-age less Age is how long the answer stays fresh (here 500 s).
    page = json_page("cupy-cuda13x", [f.filename for f in cupy_files()])
    cached = {"Cache-Control": "public, max-age=600", "Age": "100"}
    with FaultServer() as faults:
        path = faults.script("cupy-cuda13x", Reply(body=page, headers=cached))
        assert _poll(store, faults.url, [X86]).fetched == 1
        # Still fresh, and a new profile: judged again from the stored releases.
        again = _poll(store, faults.url, [X86, ARM], now=NOW + timedelta(seconds=499))
        assert faults.count(path) == 1
        assert (again.fresh, again.not_modified, again.fetched, again.requests) == (1, 1, 0, 0)
        assert _candidates(store)[("14.1.3", "arm")][0]  # the aarch64-only release, for arm
        later = _poll(store, faults.url, [X86], now=NOW + timedelta(seconds=501))
        assert (faults.count(path), later.fetched, later.fresh) == (2, 1, 0)
        forced = _poll(store, faults.url, [X86], now=NOW + timedelta(seconds=502), refresh=True)
        assert (faults.count(path), forced.fetched, forced.fresh) == (3, 1, 0)
    with store.session() as session:
        stored = session.exec(select(IndexPage)).one()
        assert stored.fresh_until is not None
        assert as_utc(stored.fresh_until) == NOW + timedelta(seconds=502 + 500)


def test_a_failure_ends_freshness_and_no_cache_never_starts_it(store: Store) -> None:
    page = json_page("cupy-cuda13x", [f.filename for f in cupy_files()])
    with FaultServer() as faults:
        path = faults.script(
            "cupy-cuda13x", Reply(body=page, headers={"Cache-Control": "max-age=60"})
        )
        _poll(store, faults.url, [X86])
        faults.script("cupy-cuda13x", Reply(404, b"gone"))
        failed = _poll(store, faults.url, [X86], now=NOW + timedelta(seconds=1), refresh=True)
        assert failed.failed == 1
        faults.script("cupy-cuda13x", Reply(body=page, headers={"Cache-Control": "no-cache"}))
        back = _poll(store, faults.url, [X86], now=NOW + timedelta(seconds=2))
        assert (back.fetched, back.fresh) == (1, 0)  # the failure ended the freshness
        again = _poll(store, faults.url, [X86], now=NOW + timedelta(seconds=3))
        assert (again.fetched, again.fresh) == (1, 0)  # no-cache: always asked
        assert faults.count(path) == 4


def test_a_stale_page_is_ignored(store: Store, index: StaticIndex) -> None:
    _poll(store, index.url, [X86])
    # The index (a lagging mirror) now serves an older page without 14.1.1.
    older = [f for f in cupy_files() if "14.1.1" not in f.filename]
    index.publish("cupy-cuda13x", older, serial=9)
    result = _poll(store, index.url, [X86])
    assert result.failed == 1
    assert "stale" in result.failures[0][1]
    assert _candidates(store)[("14.1.1", "cuda13")][0]  # still the candidate


def test_a_cooldown_holds_a_fresh_release_back(store: Store, index: StaticIndex) -> None:
    patient = Profile(
        name="cuda13",
        python=Version("3.12"),
        platforms=("manylinux_2_28_x86_64",),
        minimum_release_age=timedelta(days=365),
    )
    result = _poll(store, index.url, [patient])
    assert result.candidates_found == 0
    eligible, reason, _ = _candidates(store)[("14.1.1", "cuda13")]
    assert not eligible
    assert reason is not None
    assert "cooldown" in reason


def test_govern_poll_from_the_command_line(
    store: Store,
    index: StaticIndex,
    database_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / ".govern.toml").write_text(
        '[profiles.cuda13]\npython = "3.12"\nplatforms = ["manylinux_2_28_x86_64"]\n',
        encoding="utf-8",
    )
    os.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["poll", "--db", database_url, "--index-url", index.url, "-f", "json"])
    out, err = capsys.readouterr()
    assert exited.value.code in (0, None), err
    document = json.loads(out)
    assert document["schema"] == "govern.poll/1"
    assert document["fetched"] == 1
    assert document["found"][0]["package"] == "cupy-cuda13x"


def test_no_index_anywhere_is_a_clear_error(
    store: Store,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    with pytest.raises(SystemExit) as exited:
        main(["poll", "--db", database_url])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("govern: error:")
    assert "Tip:" in err


def _track_cupy_and_numpy(database_url: str, tmp_path: Path) -> None:
    """A store tracking the CuPy cap and a numpy exclusion; the working directory beside it."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(CAP + "numpy < 2.0.0  # broken\n", encoding="utf-8")
    with Store(database_url) as opened:
        track(opened, root, None, config=Config(), options=TrackOptions(now=NOW))
    os.chdir(tmp_path)


def test_a_poll_that_read_nothing_exits_2_after_its_report(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # DESIGN's contract: 2 when the run could not be done. An index that answers no
    # project (down, wrong URL, a proxy in the way) is that, for a cron job or CI; the
    # report still comes first and each failure is recorded.
    _track_cupy_and_numpy(database_url, tmp_path)
    with FaultServer() as faults:
        faults.script("cupy-cuda13x", Reply(500, b"oops"))
        faults.script("numpy", Reply(404, b"no such project"))
        argv = ["poll", "--db", database_url, "--index-url", faults.url, "-f", "json"]
        with pytest.raises(SystemExit) as exited:
            main(argv)
        out, err = capsys.readouterr()
        assert exited.value.code == 2
        document = json.loads(out)
        assert (document["projects"], document["failed"]) == (2, 2)
        assert err.startswith(
            "govern: error: the index answered none of the requests: "
            "could not read any of the 2 projects asked"
        )
        assert "500" in err.splitlines()[0]  # the first failure, sorted by package
        assert "Tip: check --index-url" in err

        # The next poll reads one project and fails the other: a normal poll, exit 0.
        faults.script("cupy-cuda13x", Reply(body=json_page("cupy-cuda13x")))
        with pytest.raises(SystemExit) as exited:
            main(argv)
        out, err = capsys.readouterr()
        assert exited.value.code == 0, err
        assert (json.loads(out)["fetched"], json.loads(out)["failed"]) == (1, 1)
    with Store(database_url) as opened, opened.session() as session:
        pages = {page.package: page.failures for page in session.exec(select(IndexPage))}
    assert pages == {"cupy-cuda13x": 0, "numpy": 2}


def test_an_outage_is_exit_2_even_while_some_pages_are_fresh(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _track_cupy_and_numpy(database_url, tmp_path)
    cupy = json_page("cupy-cuda13x", [f.filename for f in cupy_files()])
    with FaultServer() as faults:
        faults.script("cupy-cuda13x", Reply(body=cupy, headers={"Cache-Control": "max-age=600"}))
        faults.script("numpy", Reply(body=json_page("numpy", ["numpy-2.0.1-py3-none-any.whl"])))
        argv = ["poll", "--db", database_url, "--index-url", faults.url]
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 0
        capsys.readouterr()
        faults.script("numpy", Reply(404, b"gone"))  # and cupy-cuda13x is still fresh
        with pytest.raises(SystemExit) as exited:
            main(argv)
    out, err = capsys.readouterr()
    assert exited.value.code == 2
    assert "1 unchanged (1 still fresh, not asked), 1 failed" in out  # the report first
    assert "failed: numpy: not on the index" in err
    assert (
        "govern: error: the index answered none of the requests: could not read the project" in err
    )


def test_bad_answers_are_recorded_and_never_a_verdict(database_url: str, tmp_path: Path) -> None:
    """Several projects, each a different fault, and one good: the poll finishes."""
    names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(
        "".join(f"{name}<2\n" for name in names), encoding="utf-8"
    )
    good = json.dumps(
        {
            "meta": {"api-version": "1.1"},
            "name": "zeta",
            "files": [
                {
                    "filename": f"zeta-{version}-py3-none-any.whl",
                    "url": f"zeta-{version}-py3-none-any.whl",
                    "hashes": {},
                    "upload-time": "2026-01-01T00:00:00Z",
                }
                # 2.0 is the version the cap names: known bad, never a candidate
                for version in ("2.0", "2.1")
            ],
        }
    ).encode()
    with Store(database_url) as store, FaultServer() as faults:
        track(store, root, None, config=Config(), options=TrackOptions(now=NOW))
        faults.script("alpha", Reply(500, b"oops"))
        faults.script("beta", Reply(200, b"{not json"))
        faults.script(
            "gamma",
            Reply(
                200, b"<html>" + b"<div>" * 10_000 + b"<script>x</script>", content_type="text/html"
            ),
        )
        faults.script("delta", Truncated(b'{"meta": {"api-version"', claimed=10_000))
        faults.script("epsilon", Reply(429, b"", headers={"Retry-After": "1"}), Reply(200, b"[]"))
        faults.script("zeta", Reply(200, good))
        default = Profile(name="default", python=Version("3.12"))
        result = _poll(store, faults.url, [default], attempts=2, backoff=0.0, timeout=5.0)
        assert result.projects == 6
        assert result.fetched + result.failed == 6
        failed = dict(result.failures)
        assert {"alpha", "beta", "delta", "epsilon"} <= set(failed)
        assert result.found == [
            {
                "package": "zeta",
                "clause": "<2",
                "version": "2.1",
                "profile": "default",
                "role": "newest",
            }
        ]
        with store.session() as session:
            states = {e.package: e.state for e in session.exec(select(StoredExclusion))}
            pages = {p.package: p.failures for p in session.exec(select(IndexPage))}
        assert states == dict.fromkeys(names[:-1], "held") | {"zeta": "candidate"}
        assert all(pages[name] == 1 for name in failed)


def test_poll_through_pypiserver_with_real_wheels(database_url: str, tmp_path: Path) -> None:
    """pypiserver (PEP 503 HTML only, no upload times) serving wheels the test builds."""
    from wheels import build_wheel

    from fakes.index import run_pypiserver

    packages = tmp_path / "packages"
    packages.mkdir()
    for version in ("14.0.1", "14.1.0", "14.1.1"):
        build_wheel(packages, "cupy-cuda13x", version, tag="cp312-cp312-manylinux_2_28_x86_64")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(CAP, encoding="utf-8")
    with Store(database_url) as store, run_pypiserver(packages) as url:
        track(store, root, None, config=Config(), options=TrackOptions(now=NOW))
        result = _poll(store, url, [X86])
        assert (result.fetched, result.failed) == (1, 0)
        assert [(f["version"], f["role"]) for f in result.found] == [("14.1.1", "newest")]
        # Without upload times the cooldown counts from when govern first saw a release.
        patient = Profile(
            name="patient",
            python=Version("3.12"),
            platforms=("manylinux_2_28_x86_64",),
            minimum_release_age=timedelta(days=3),
        )
        assert _poll(store, url, [patient]).candidates_found == 0
        eligible, reason, _ = _candidates(store)[("14.1.1", "patient")]
        assert not eligible
        assert reason is not None
        assert "cooldown" in reason
        later = Profile(
            name="patient",
            python=Version("3.12"),
            platforms=("manylinux_2_28_x86_64",),
            minimum_release_age=timedelta(days=3),
        )

        async def go() -> PollResult:
            async with httpx.AsyncClient(trust_env=False) as http:
                client = IndexClient(http, IndexSettings(url, source="test"))
                return await poll(store, client, [later], now=NOW + timedelta(days=4))

        assert asyncio.run(go()).candidates_found == 1


def test_validators_of_one_index_are_not_sent_to_another(
    store: Store, index: StaticIndex, tmp_path: Path
) -> None:
    _poll(store, index.url, [X86])
    with StaticIndex(tmp_path / "other", {"cupy-cuda13x": cupy_files()}, serial=1) as other:
        # Serial 1 < 10 would look stale if index's validators were sent to this one.
        other_url = other.url
        result = _poll(store, other_url, [X86])
    assert (result.fetched, result.failed) == (1, 0)
    with store.session() as session:
        page = session.exec(select(IndexPage)).one()
    assert page.index_url == other_url
    assert page.last_serial == 1


def test_credentials_never_reach_the_store(store: Store, index: StaticIndex) -> None:
    secret = index.url.replace("http://", "http://govern:s3cret-token@")
    result = _poll(store, secret, [X86])
    assert result.fetched == 1
    with store.session() as session:
        page = session.exec(select(IndexPage)).one()
        files = [f for r in session.exec(select(ReleaseRow)) for f in r.files]
    assert "s3cret" not in page.index_url
    assert all("s3cret" not in f["url"] for f in files)


def test_an_unchanged_project_is_not_judged_again(
    store: Store, index: StaticIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    from govern.service import poll as poll_module

    _poll(store, index.url, [X86])
    calls = 0
    real = poll_module._Recorder.judge

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        real(self, *args, **kwargs)

    monkeypatch.setattr(poll_module._Recorder, "judge", counting)
    assert _poll(store, index.url, [X86]).not_modified == 1
    assert calls == 0  # 304, same profiles and clauses, no cooldown: nothing to judge
    _poll(store, index.url, [X86, ARM])  # another profile: judged again
    assert calls == 1
    patient = Profile(
        name="cuda13",
        python=Version("3.12"),
        platforms=("manylinux_2_28_x86_64",),
        minimum_release_age=timedelta(days=1),
    )
    _poll(store, index.url, [patient])  # a cooldown depends on the clock: always judged
    _poll(store, index.url, [patient])
    assert calls == 3


def test_a_failed_write_leaves_nothing_behind(store: Store) -> None:
    def interrupted() -> None:
        with store.transaction(write=True) as conn:
            polling.record_poll_run(conn, started_at=NOW, finished_at=NOW, counts={"projects": 1})
            raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        interrupted()
    with store.session() as session:
        assert session.exec(select(PollRun)).all() == []


def test_a_refused_statement_is_a_store_error_not_a_traceback(store: Store) -> None:
    from govern.errors import StoreError

    event = {"kind": "candidate-found", "at": NOW, "recorded_at": NOW, "detail": {}}

    def refused() -> None:
        with store.transaction(write=True) as conn:
            events.append_batch(conn, rows=[{"exclusion_id": 10**9, **event}])  # no such one

    with pytest.raises(StoreError) as raised:
        refused()
    assert "refused a change" in str(raised.value)
    assert raised.value.tip
    with store.transaction(write=True) as conn:  # the store is usable afterwards
        exclusion_id = polling.watched(conn)[0].id
        events.append_batch(conn, rows=[{"exclusion_id": exclusion_id, **event}])
    with store.session() as session:
        found = session.exec(select(Event).where(Event.kind == "candidate-found")).all()
        assert [e.exclusion_id for e in found] == [exclusion_id]


def test_a_watched_exclusion_carries_its_reference(store: Store, tmp_path: Path) -> None:
    with store.transaction() as conn:
        (found,) = polling.watched(conn)
    with store.session() as session:
        row = session.exec(select(StoredExclusion)).one()
    ref = found.ref
    assert (found.id, ref.key, ref.package, ref.clause) == (
        row.id,
        row.key,
        "cupy-cuda13x",
        "<14.1.0",
    )
    assert (ref.source, ref.line, ref.requirement) == (
        "requirements.txt",
        3,
        "cupy-cuda13x < 14.1.0",
    )
    assert ref.repository == str((tmp_path / "repo").resolve())


def test_govern_poll_creates_a_new_sqlite_store(
    index: StaticIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["poll", "--db", str(tmp_path / "fresh.db"), "--index-url", index.url, "-f", "json"])
    out, err = capsys.readouterr()
    assert exited.value.code in (0, None), err
    assert json.loads(out)["projects"] == 0
    assert (tmp_path / "fresh.db").is_file()


# -- a page of thousands of releases: only what judging needs (issue 14) ----------------------


def _many(count: int, good: frozenset[int] | set[int] = frozenset()) -> bytes:
    """A cupy-cuda13x page of ``count`` versions 14.<n>.0; only those in ``good`` have an
    x86 wheel (the others aarch64 only)."""
    names = [
        f"cupy_cuda13x-14.{n}.0-cp312-cp312-"
        f"{'manylinux_2_28_x86_64' if n in good else 'manylinux_2_28_aarch64'}.whl"
        for n in range(count)
    ]
    return json_page("cupy-cuda13x", names)


def _rows(store: Store) -> tuple[int, int]:
    with store.session() as session:
        return len(session.exec(select(ReleaseRow)).all()), len(
            session.exec(select(Candidate)).all()
        )


def test_a_page_of_thousands_of_releases_keeps_what_judging_needs(store: Store) -> None:
    with FaultServer() as faults:
        faults.script("cupy-cuda13x", Reply(200, _many(3_000, good={5})))
        result = _poll(store, faults.url, [X86, ARM], window=50)
    releases, candidates = _rows(store)
    # The 50 newest, the 50 nearest the newest end beyond <14.1.0 (the same ones), 14.1.0.
    assert (result.releases_new, releases) == (51, 51)
    assert result.releases_left_out == 3_000 - 51
    assert candidates <= 2 * 51
    # x86: 14.5.0 is the only x86 release, out of the window: said, not silently missed.
    assert [(w["clause"], w["profiles"], w["releases"]) for w in result.limited] == [
        ("<14.1.0", ["cuda13"], 3_000)
    ]
    assert (
        "2,949 of them were not looked at (at most 50 final releases per walk"
        in (result.limited[0]["message"])
    )
    assert result.as_dict()["limited"] == result.limited
    assert {(f["version"], f["profile"]) for f in result.found} == {("14.2999.0", "arm")}


def test_a_big_page_whose_candidate_is_in_reach_is_judged_as_a_whole_page(store: Store) -> None:
    with FaultServer() as faults:
        faults.script("cupy-cuda13x", Reply(200, _many(3_000, good={2_990})))
        result = _poll(store, faults.url, [X86], window=50)
    assert result.limited == []
    assert [(f["version"], f["role"]) for f in result.found] == [("14.2990.0", "newest")]
    decided = _candidates(store)
    assert sorted(v for v, _ in decided) == [f"14.{n}.0" for n in range(2_990, 3_000)]


def test_govern_poll_reports_a_walk_the_bound_cut_short(
    store: Store, database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".govern.toml").write_text(
        '[profiles.cuda13]\npython = "3.12"\nplatforms = ["manylinux_2_28_x86_64"]\n',
        encoding="utf-8",
    )
    os.chdir(tmp_path)
    with FaultServer() as faults:
        faults.script("cupy-cuda13x", Reply(200, _many(1_200, good={3})))
        for fmt in ("human", "json"):
            with pytest.raises(SystemExit) as exited:
                main(["poll", "--db", database_url, "--index-url", faults.url, "-f", fmt])
            assert exited.value.code in (0, None)
            out, err = capsys.readouterr()
            if fmt == "human":
                assert "warning: cupy-cuda13x <14.1.0: no candidate among the releases kept" in err
                assert "the page lists 1,200 releases" in err
            else:
                document = json.loads(out)
                assert document["limited"][0]["profiles"] == ["cuda13"]
                assert document["releases_left_out"] == 1_200 - 501
    releases, _ = _rows(store)
    assert releases == 501  # the default window: 500 per walk, and 14.1.0 the cap names


# -- the same page again, without validators: nothing written (issue 14) ----------------------


@pytest.mark.parametrize("cooldown", [timedelta(0), timedelta(days=7)])
def test_the_same_page_again_without_validators_writes_nothing(
    store: Store, cooldown: timedelta
) -> None:
    """No ETag, no Last-Modified, no Cache-Control, the same body: the second poll writes
    no release, candidate, event, exclusion or page row; only the poll's own row."""
    profile = Profile(
        name="cuda13",
        python=Version("3.12"),
        platforms=("manylinux_2_28_x86_64",),
        minimum_release_age=cooldown,
    )
    files = [StaticIndex._json_file(f) for f in cupy_files()]  # with upload times
    body = json.dumps({"meta": {"api-version": "1.1"}, "name": "cupy-cuda13x", "files": files})
    with FaultServer() as faults:
        faults.script("cupy-cuda13x", Reply(200, body.encode()))
        first = _poll(store, faults.url, [profile])
        assert (first.fetched, first.releases_new, first.candidates_found) == (1, 5, 1)

        def snapshot() -> list[Any]:
            with store.session() as session:
                return [
                    sorted(map(repr, session.exec(select(model)).all()))
                    for model in (ReleaseRow, Candidate, Event, StoredExclusion, IndexPage)
                ]

        before = snapshot()
        written: list[str] = []

        def counting(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
            if not statement.upper().startswith(("SELECT", "BEGIN", "COMMIT", "SHOW")):
                written.append(statement.split(" (")[0])

        sqlalchemy.event.listen(store.engine, "before_cursor_execute", counting)
        try:
            again = _poll(store, faults.url, [profile], now=NOW + timedelta(hours=1))
        finally:
            sqlalchemy.event.remove(store.engine, "before_cursor_execute", counting)
        assert faults.count(faults.path("cupy-cuda13x")) == 2  # asked again: a 200 each time
    assert written == ["INSERT INTO poll_run"]  # the one row that says the poll happened
    assert snapshot() == before
    assert (again.fetched, again.same, again.releases_new, again.candidates_found) == (1, 1, 0, 0)
    with store.session() as session:
        runs = session.exec(select(PollRun).order_by(col(PollRun.started_at))).all()
        assert [(r.started_at, r.fetched) for r in runs] == [
            (NOW, 1),
            (NOW + timedelta(hours=1), 1),
        ]
        assert session.exec(select(IndexPage)).one().fetched_at == NOW  # last changed then


def test_the_report_lists_the_releases_passed_over_and_why(
    store: Store, index: StaticIndex, capsys: pytest.CaptureFixture[str]
) -> None:
    from govern.cli.poll import _print_human

    result = _poll(store, index.url, [X86])
    why = {(p["version"], p["profile"]): p["reason"] for p in result.passed_over}
    assert "yanked: broken build" in why[("14.1.2", "cuda13")]
    assert "manylinux_2_28_x86_64" in why[("14.1.3", "cuda13")]  # no wheel for the profile
    assert result.passed_over_total == len(result.passed_over)
    assert all(p["clause"] == "<14.1.0" for p in result.passed_over)
    assert result.as_dict()["passed_over"] == result.passed_over
    _print_human(result)
    out = capsys.readouterr().out
    assert "candidate: cupy-cuda13x 14.1.1 for <14.1.0 (profile cuda13, the newest)" in out
    assert "passed over: cupy-cuda13x 14.1.2 for <14.1.0 (cuda13): 14.1.2 is yanked" in out
