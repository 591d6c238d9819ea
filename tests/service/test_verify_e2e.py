"""``govern verify --isolated`` end to end: real wheels, a local index, fresh venvs, real pip.

A CuPy-like package ``cupy-demo``: 14.0.1 works, 14.1.0 fails at import (it imports a
module nobody ships, as CuPy 14.1.0 imported pytest), 14.1.1 works. The repository pins
14.0.1. With only 14.1.0 beyond the pin, verification fails and 14.1.0 becomes known-bad;
after 14.1.1 is published it passes, with 14.1.1 as the installed version.

(With a ``< 14.1.0`` cap, 14.1.0 would never be a candidate: DESIGN.md keeps the capped
version out. A pin is the shape where the broken release itself is tried.)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli as _run
from sqlmodel import col, select
from wheels import build_wheel, cupy_demo

from fakes.index import IndexFile, StaticIndex
from govern.exclusions.states import EventKind
from govern.store.db import Store
from govern.store.models import Candidate, Event, StoredExclusion, StoredRelease, Verification

PIN = (
    "# cupy-demo 14.1.0 imports a test-only module at import time: hold 14.0.1\n"
    "# until a fixed release passes the import check on the runtime image.\n"
    "cupy-demo==14.0.1\n"
)
PROFILES = '[tool.govern.profiles.runtime]\npython = "{python}"\n'


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(PIN, encoding="utf-8")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / ".govern.toml").write_text(PROFILES.format(python=python), encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    return root


@pytest.fixture
def index(tmp_path: Path) -> Iterator[StaticIndex]:
    files = [cupy_demo(tmp_path, "14.0.1"), cupy_demo(tmp_path, "14.1.0", broken=True)]
    with StaticIndex(tmp_path / "index", {"cupy-demo": files}) as served:
        yield served


def _state(db: str) -> tuple[str, dict[str, str], list[tuple[str, str | None, str | None]]]:
    with Store(db) as store, store.session() as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        candidates: dict[str, str] = {
            release.version: candidate.status
            for candidate, release in session.exec(
                select(Candidate, StoredRelease).join(
                    StoredRelease, col(StoredRelease.id) == col(Candidate.release_id)
                )
            )
        }
        runs: list[tuple[str, str | None, str | None]] = [
            (v.conclusion or "", v.installed_version, v.detail)
            for v in session.exec(select(Verification).order_by(col(Verification.id)))
        ]
        return exclusion.state, candidates, runs


def test_the_broken_release_fails_and_the_fix_passes(
    repo: Path, index: StaticIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(repo), "--db", db], capsys)[0] == 0
    code, out, err = _run(["poll", "--db", db, "--index-url", index.url], capsys)
    assert code == 0, err
    assert "candidate: cupy-demo 14.1.0" in out

    code, out, err = _run(
        ["verify", "cupy-demo", "--isolated", "--db", db, "--index-url", index.url], capsys
    )
    assert code == 1, (out, err)  # a candidate failed
    assert "=> failed: 14.1.0 failed 2 times; the same check passed on 14.0.1" in out
    assert "| ModuleNotFoundError: No module named 'cupy_demo_testing_only_module'" in out
    state, candidates, runs = _state(db)
    assert candidates == {"14.1.0": "failed"}
    assert state == "held"
    # The candidate, its re-run (a flake would pass), the control on the pinned 14.0.1.
    assert [(c, i) for c, i, _ in runs] == [
        ("failed", "14.1.0"),
        ("failed", "14.1.0"),
        ("passed", "14.0.1"),
    ]
    detail = runs[0][2]
    assert detail is not None
    assert "import check failed" in detail
    with Store(db) as store, store.session() as session:
        log = session.exec(select(Verification)).first().log_excerpt or ""  # type: ignore[union-attr]
    assert "cupy_demo_testing_only_module" in log  # the ModuleNotFoundError is kept

    # 14.1.1 is published; 14.1.0 is known-bad now, so the watcher offers 14.1.1.
    index.publish(
        "cupy-demo",
        [
            cupy_demo(tmp_path, "14.0.1"),
            cupy_demo(tmp_path, "14.1.0", broken=True),
            cupy_demo(tmp_path, "14.1.1"),
        ],
        serial=2,
    )
    code, out, err = _run(["poll", "--db", db, "--index-url", index.url], capsys)
    assert code == 0, err
    assert "candidate: cupy-demo 14.1.1" in out
    code, out, err = _run(
        [
            "verify",
            "cupy-demo",
            "--isolated",
            "--db",
            db,
            "--index-url",
            index.url,
            "--format",
            "json",
        ],
        capsys,
    )
    assert code == 0, (out, err)
    document = json.loads(out)
    assert document["schema"] == "govern.verify/1"
    assert [(r["version"], r["conclusion"], r["installed"]) for r in document["runs"]] == [
        ("14.1.1", "passed", "14.1.1")
    ]
    state, candidates, runs = _state(db)
    assert candidates["14.1.1"] == "passed"
    assert candidates["14.1.0"] == "failed"
    assert state == "verified"
    # Verifying again starts nothing: every candidate has a verdict.
    code, out, _ = _run(
        ["verify", "cupy-demo", "--isolated", "--db", db, "--index-url", index.url], capsys
    )
    assert code == 0
    assert "0 run(s) started" in out

    code, out, _ = _run(["history", "cupy-demo", "--db", db], capsys)
    assert code == 0
    assert "verification failed  cupy-demo 14.1.0" in out
    assert "verification passed  cupy-demo 14.1.1" in out
    with Store(db) as store, store.session() as session:
        kinds = [e.kind for e in session.exec(select(Event).order_by(col(Event.id)))]
    assert kinds.count(EventKind.VERIFICATION_STARTED) == 4
    assert kinds.count(EventKind.VERIFICATION_FAILED) == 2
    assert kinds.count(EventKind.VERIFICATION_PASSED) == 2  # the control and 14.1.1


# -- the candidate comes from the index the poll read, and only with its hash ------------------


def _working(tmp: Path, version: str, tag: str) -> IndexFile:
    """A wheel that passes the import check, told apart from another by ``tag``."""
    path = build_wheel(
        tmp / tag / version,
        "cupy-demo",
        version,
        files={"cupy_demo/__init__.py": f'__version__ = "{version}"\nBUILT_BY = "{tag}"\n'},
    )
    return IndexFile.of(path, upload_time="2026-05-01T00:00:00Z")


def _verify_isolated(
    repo: Path, index: StaticIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[str, dict[str, str], list[tuple[str, str | None, str | None]]]:
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(repo), "--db", db], capsys)[0] == 0
    code, out, err = _run(["poll", "--db", db, "--index-url", index.url], capsys)
    assert code == 0, err
    assert "candidate: cupy-demo 14.1.0" in out
    _run(["verify", "cupy-demo", "--isolated", "--db", db, "--index-url", index.url], capsys)
    return _state(db)


def _never_a_verdict(state: tuple[str, dict[str, str], list[Any]]) -> list[str]:
    """The candidate was not installed: no verdict, attempts used up; the runs' details."""
    exclusion, candidates, runs = state
    assert exclusion != "verified"
    assert candidates == {"14.1.0": "errored"}  # tried again later, never known-bad
    assert {conclusion for conclusion, _, _ in runs} == {"errored"}
    assert all(installed is None for _, installed, _ in runs)
    return [detail or "" for _, _, detail in runs]


@pytest.mark.parametrize("where", ["another port", "127.1", "[::1]"])
def test_a_file_redirected_to_another_origin_is_never_fetched(
    where: str,
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The index's page gives the wheel's sha256, and its file URL redirects to a host
    nobody configured that serves that wheel: pip would follow; govern does not ask."""
    wheel = _working(tmp_path, "14.1.0", "elsewhere")
    elsewhere = StaticIndex(tmp_path / "elsewhere", {"cupy-demo": [wheel]})
    if where == "[::1]":
        elsewhere.host = "::1"
    with (
        StaticIndex(
            tmp_path / "index", {"cupy-demo": [cupy_demo(tmp_path, "14.0.1"), wheel]}
        ) as index,
        elsewhere,
    ):
        base = f"http://127.1:{elsewhere.port}" if where == "127.1" else elsewhere.base
        index.file_redirects[wheel.filename] = f"{base}/files/{wheel.filename}"
        details = _never_a_verdict(
            _verify_isolated(index=index, repo=repo, tmp_path=tmp_path, capsys=capsys)
        )
        assert elsewhere.count(f"/files/{wheel.filename}") == 0  # never asked
        assert index.count(f"/files/{wheel.filename}") == 3  # one per attempt
    assert all("another origin than the index's" in d for d in details), details
    assert all("trusted-redirects" in d for d in details)


def test_a_file_the_page_gives_no_hash_for_is_not_installed(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a sha256 on the page nothing ties the file to what the poll saw: the
    redirect to another port serving another wheel is not even looked at."""
    theirs = _working(tmp_path, "14.1.0", "elsewhere")
    files = [cupy_demo(tmp_path, "14.0.1"), cupy_demo(tmp_path, "14.1.0", broken=True)]
    with (
        StaticIndex(tmp_path / "index", {"cupy-demo": files}, hashes=False) as index,
        StaticIndex(tmp_path / "elsewhere", {"cupy-demo": [theirs]}) as elsewhere,
    ):
        index.file_redirects[theirs.filename] = f"{elsewhere.base}/files/{theirs.filename}"
        details = _never_a_verdict(_verify_isolated(repo, index, tmp_path, capsys))
        assert elsewhere.count(f"/files/{theirs.filename}") == 0
    assert all("gives no sha256" in d for d in details), details


def test_a_wheel_whose_hash_is_not_the_stored_one_is_refused(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The poll stored 14.1.0's sha256; the index then serves another file under the same
    name (and a page that agrees with it): the file is refused, whatever the page says now."""
    with StaticIndex(
        tmp_path / "index",
        {"cupy-demo": [cupy_demo(tmp_path, "14.0.1"), cupy_demo(tmp_path, "14.1.0", broken=True)]},
    ) as index:
        db = f"sqlite:///{tmp_path / 'govern.db'}"
        assert _run(["track", str(repo), "--db", db], capsys)[0] == 0
        assert _run(["poll", "--db", db, "--index-url", index.url], capsys)[0] == 0
        swapped = _working(tmp_path, "14.1.0", "swapped")
        index.publish("cupy-demo", [cupy_demo(tmp_path, "14.0.1"), swapped], serial=2)
        _run(["verify", "cupy-demo", "--isolated", "--db", db, "--index-url", index.url], capsys)
        details = _never_a_verdict(_state(db))
    assert all("not the" in d and "the index's page gave" in d for d in details), details
