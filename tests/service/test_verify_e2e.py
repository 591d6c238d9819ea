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

import pytest
from clirun import run_cli as _run
from sqlmodel import col, select
from wheels import build_wheel

from fakes.index import IndexFile, StaticIndex
from govern.store.db import Store
from govern.store.models import Candidate, Event, Exclusion, Release, Verification

PIN = (
    "# cupy-demo 14.1.0 imports a test-only module at import time: hold 14.0.1\n"
    "# until a fixed release passes the import check on the runtime image.\n"
    "cupy-demo==14.0.1\n"
)
PROFILES = '[tool.govern.profiles.runtime]\npython = "{python}"\n'


def _wheel(tmp: Path, version: str, broken: bool = False) -> IndexFile:
    body = f'__version__ = "{version}"\n'
    if broken:
        body = f"import cupy_demo_testing_only_module  # noqa\n{body}"
    path = build_wheel(
        tmp / "dists" / version, "cupy-demo", version, files={"cupy_demo/__init__.py": body}
    )
    return IndexFile.of(path, upload_time="2026-05-01T00:00:00Z")


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
    files = [_wheel(tmp_path, "14.0.1"), _wheel(tmp_path, "14.1.0", broken=True)]
    with StaticIndex(tmp_path / "index", {"cupy-demo": files}) as served:
        yield served


def _state(db: str) -> tuple[str, dict[str, str], list[tuple[str, str | None, str | None]]]:
    with Store(db) as store, store.session() as session:
        exclusion = session.exec(select(Exclusion)).one()
        candidates = {
            release.version: candidate.status
            for candidate, release in session.exec(
                select(Candidate, Release).join(
                    Release, col(Release.id) == col(Candidate.release_id)
                )
            )
        }
        runs = [
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
    assert "failed" in out
    state, candidates, runs = _state(db)
    assert candidates == {"14.1.0": "failed"}
    assert state == "held"
    assert len(runs) == 1
    conclusion, installed, detail = runs[0]
    assert (conclusion, installed) == ("failed", "14.1.0")  # it really ran 14.1.0
    assert detail is not None
    assert "import check failed" in detail
    with Store(db) as store, store.session() as session:
        log = session.exec(select(Verification)).one().log_excerpt or ""
    assert "cupy_demo_testing_only_module" in log  # the ModuleNotFoundError is kept

    # 14.1.1 is published; 14.1.0 is known-bad now, so the watcher offers 14.1.1.
    index.publish(
        "cupy-demo",
        [
            _wheel(tmp_path, "14.0.1"),
            _wheel(tmp_path, "14.1.0", broken=True),
            _wheel(tmp_path, "14.1.1"),
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
    assert kinds.count("verification-started") == 2
    assert kinds.count("verification-failed") == 1
    assert kinds.count("verification-passed") == 1


def test_an_ad_hoc_command_with_a_reproducer(
    repo: Path, index: StaticIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--command runs in the fresh venv ({python} is its interpreter); the exclusion's own
    ``verify=`` reproducer runs after it, and both must pass."""
    (repo / "requirements.txt").write_text(
        PIN.replace(
            "cupy-demo==14.0.1\n",
            "cupy-demo==14.0.1  # govern: verify=\"{python} -c 'import cupy_demo'\"\n",
        ),
        encoding="utf-8",
    )
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(repo), "--db", db], capsys)[0] == 0
    assert _run(["poll", "--db", db, "--index-url", index.url], capsys)[0] == 0
    marker = tmp_path / "ran.txt"
    command = (
        f"{{python}} -c \"import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')\" "
        f"{marker} {{version}}"
    )
    code, out, err = _run(
        ["verify", "--isolated", "--command", command, "--db", db, "--index-url", index.url],
        capsys,
    )
    assert code == 1, (out, err)
    assert marker.read_text() == "14.1.0\n"  # the command passed; the reproducer failed
    _, candidates, runs = _state(db)
    assert candidates == {"14.1.0": "failed"}
    assert runs[0][2] is not None
    assert "reproducer failed" in runs[0][2]
