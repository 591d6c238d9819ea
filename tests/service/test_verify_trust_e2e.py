"""A verdict only from a check that can tell: controls, re-runs and reproducer confirmation.

End to end with real processes: the CLI, fresh venvs, real pip, real wheels on a local PEP 691
index. A CuPy-like ``cupy-demo``: 14.0.1 works, 14.1.0 fails at import, 14.1.1 works; the
repository caps it ``< 14.1.0``, so 14.1.0 is known bad and 14.1.1 is the candidate.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import run_cli as _run
from sqlmodel import col, select
from wheels import cupy_demo

from fakes.index import StaticIndex
from govern.store.db import Store
from govern.store.models import Candidate, StoredExclusion, StoredRelease, Verification

CAP = "# cupy-demo 14.1.0 imports a test-only module at import time\ncupy-demo < 14.1.0{note}\n"
PROFILES = '[tool.govern.profiles.runtime]\npython = "{python}"\n'


@pytest.fixture
def index(tmp_path: Path) -> Iterator[StaticIndex]:
    files = [
        cupy_demo(tmp_path, "14.0.1"),
        cupy_demo(tmp_path, "14.1.0", broken=True),
        cupy_demo(tmp_path, "14.1.1"),
    ]
    with StaticIndex(tmp_path / "index", {"cupy-demo": files}) as served:
        yield served


def _world(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    index: StaticIndex,
    note: str = "",
) -> str:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(CAP.format(note=note), encoding="utf-8")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    (root / ".govern.toml").write_text(PROFILES.format(python=python), encoding="utf-8")
    monkeypatch.chdir(root)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(root), "--db", db], capsys)[0] == 0
    code, out, err = _run(["poll", "--db", db, "--index-url", index.url], capsys)
    assert code == 0, err
    assert "candidate: cupy-demo 14.1.1 for <14.1.0" in out
    return db


def _verify(
    db: str, index: StaticIndex, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str]:
    argv = ["verify", "cupy-demo", "--isolated", "--db", db, "--index-url", index.url, *extra]
    return _run(argv, capsys)


def _statuses(db: str) -> tuple[str, dict[str, str], list[tuple[str, str, str | None]]]:
    """The exclusion's state, each candidate's status by version, each run (kind, version
    tried when not the candidate's, conclusion), as strings."""
    with Store(db) as store, store.session() as session:
        state = str(session.exec(select(StoredExclusion)).one().state)
        statuses = {
            release.version: str(candidate.status)
            for candidate, release in session.exec(
                select(Candidate, StoredRelease).join(
                    StoredRelease, col(StoredRelease.id) == col(Candidate.release_id)
                )
            )
        }
        runs = [
            (v.kind.value, v.version or "", v.conclusion.value if v.conclusion else None)
            for v in session.exec(select(Verification).order_by(col(Verification.id)))
        ]
    return state, statuses, runs


def test_a_check_that_fails_everywhere_blacklists_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    index: StaticIndex,
) -> None:
    db = _world(tmp_path, monkeypatch, capsys, index)
    broken = "{python} -c 'import cupy_demo_check_helpers'"  # a module nobody ships
    code, out, err = _verify(db, index, capsys, "--command", broken)
    assert code == 0, (out, err)  # no candidate was found bad
    assert "=> errored: the check fails on 14.0.1 too" in out
    assert "| ModuleNotFoundError: No module named 'cupy_demo_check_helpers'" in out
    state, statuses, runs = _statuses(db)
    assert statuses["14.1.1"] == "errored"  # not failed: 14.1.1 is not known bad
    assert state == "candidate"
    assert runs == [
        ("candidate", "", "failed"),
        ("candidate", "", "failed"),  # the re-run
        ("control", "14.0.1", "failed"),  # what the line admits today fails too
    ]
    code, out, _ = _run(["status", "--db", db, "--format", "json"], capsys)
    assert json.loads(out)["exclusions"][0]["state"] == "candidate"


def test_the_isolated_environment_has_pip(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    index: StaticIndex,
) -> None:
    db = _world(tmp_path, monkeypatch, capsys, index)
    code, out, err = _verify(db, index, capsys, "--command", "{python} -m pip show {package}")
    assert code == 0, (out, err)
    assert "=> passed: 14.1.1 passed" in out
    # Progress on stderr while the environment is built and the check runs.
    assert "... cupy-demo==14.1.1: building a fresh environment" in err
    assert "... cupy-demo==14.1.1: environment ready in" in err
    assert "... cupy-demo==14.1.1: running the command" in err
    state, statuses, runs = _statuses(db)
    assert (state, statuses["14.1.1"]) == ("verified", "passed")
    assert runs == [("candidate", "", "passed")]


def test_a_reproducer_that_passes_on_the_known_bad_release_is_never_trusted(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    index: StaticIndex,
) -> None:
    note = "  # govern: verify=\"{python} -c 'print(1)'\""
    db = _world(tmp_path, monkeypatch, capsys, index, note)
    code, out, err = _verify(db, index, capsys)
    assert code == 0, (out, err)
    assert "=> errored: the reproducer passed on 14.1.0, a known-bad release" in out
    state, statuses, runs = _statuses(db)
    assert statuses["14.1.1"] == "errored"
    assert state == "candidate"
    assert runs == [("reproducer", "14.1.0", "passed")]  # 14.1.1 itself never ran
    code, out, _ = _verify(db, index, capsys)
    assert "0 run(s) started" in out  # the reproducer is not asked again


def test_a_true_reproducer_is_confirmed_once_then_certifies_the_fix(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    index: StaticIndex,
) -> None:
    note = "  # govern: verify=\"{python} -c 'import cupy_demo'\""
    db = _world(tmp_path, monkeypatch, capsys, index, note)
    code, out, err = _verify(db, index, capsys)
    assert code == 0, (out, err)
    assert "=> found: reproducer confirmed on 14.1.0" in out
    assert "=> passed: 14.1.1 passed" in out
    state, statuses, runs = _statuses(db)
    assert (state, statuses["14.1.1"]) == ("verified", "passed")
    assert runs == [("reproducer", "14.1.0", "failed"), ("candidate", "", "passed")]
    code, out, _ = _run(["history", "cupy-demo", "--db", db], capsys)
    assert "(reproducer on 14.1.0)" in out
    assert "reproducer confirmed on 14.1.0" in out


def test_forget_takes_a_verdict_back_and_the_release_is_a_candidate_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    index: StaticIndex,
) -> None:
    db = _world(tmp_path, monkeypatch, capsys, index)
    broken = "{python} -c 'import cupy_demo_check_helpers'"
    assert _verify(db, index, capsys, "--command", broken)[0] == 0
    assert _statuses(db)[1]["14.1.1"] == "errored"
    # Refused, nothing changed: no reason; a version with no verdict.
    code, _, err = _run(["verify", "cupy-demo", "--forget", "14.1.1", "--db", db], capsys)
    assert code == 2
    assert "--forget needs --reason" in err
    forget = ["verify", "cupy-demo", "--db", db, "--reason", "the check imported a typo"]
    code, _, err = _run([*forget, "--forget", "9.9"], capsys)
    assert code == 2
    assert "no verdict on cupy-demo 9.9 to take back" in err
    code, out, err = _run([*forget, "--forget", "14.1.1", "--actor", "ana"], capsys)
    assert code == 0, err
    assert "forgotten  cupy-demo 14.1.1 on runtime: was errored, a candidate again" in out
    assert _statuses(db)[1]["14.1.1"] == "found"
    # Its runs so far count no more: the fixed check verifies it from scratch.
    code, out, err = _verify(db, index, capsys, "--command", "{python} -m pip show {package}")
    assert code == 0, (out, err)
    state, statuses, runs = _statuses(db)
    assert (state, statuses["14.1.1"]) == ("verified", "passed")
    assert runs[-1] == ("candidate", "", "passed")
    code, out, _ = _run(["history", "cupy-demo", "--db", db], capsys)
    assert (
        'verdict forgotten  cupy-demo 14.1.1 (was errored) by ana: "the check imported a typo"'
        in out
    )
