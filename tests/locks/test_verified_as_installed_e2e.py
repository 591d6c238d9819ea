"""Verified as it will be installed (issue 25): where the exclusion's intent has a lock, the
run installs the candidate with the lock's versions of everything else, as regenerated for
the candidate, so the evidence covers what the change installs.

Real uv, real pip in a fresh venv, real git, a local index of tiny wheels: cupy-demo 14.1.1
needs helper-demo, whose newest release (2.0) the project keeps out; a run that installed
the candidate alone would take 2.0 and try another environment than the change's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from clirun import run_cli
from gitrepo import Repo
from lockworld import PYPROJECT, UV, tool_env
from sqlmodel import col, select

from govern.ci.base import Trial
from govern.ci.hosted import trial_fields
from govern.demo.index import LocalIndex
from govern.demo.wheels import build_wheel
from govern.exclusions.ref import ExclusionRef
from govern.exclusions.states import EventKind
from govern.locks.installed import lock_pins, pins_digest
from govern.locks.regenerate import Regenerator
from govern.store.db import Store
from govern.store.models import Event, Verification

# The check: what the run installed beside the candidate.
CHECK = """\
import importlib.metadata as m
print("helper-demo", m.version("helper-demo"))
assert m.version("helper-demo") == "1.0", m.version("helper-demo")
"""


@pytest.fixture
def index(tmp_path: Path) -> Iterator[LocalIndex]:
    """cupy-demo 14.0.1, 14.1.0, 14.1.1 (which needs helper-demo); helper-demo 1.0, 2.0."""
    with LocalIndex(tmp_path / "index") as served:
        for version in ("14.0.1", "14.1.0", "14.1.1"):
            needs = ("helper-demo",) if version == "14.1.1" else ()
            wheel = build_wheel(
                tmp_path / "dists" / "cupy-demo" / version, "cupy-demo", version, requires=needs
            )
            served.publish("cupy-demo", wheel, "2026-05-01T00:00:00Z")
        for version in ("1.0", "2.0"):
            wheel = build_wheel(tmp_path / "dists" / "helper" / version, "helper-demo", version)
            served.publish("helper-demo", wheel, "2026-05-01T00:00:00Z")
        yield served


def _uv_lock(root: Path, index: LocalIndex, home: Path) -> None:
    env = tool_env(index.url, home)
    done = subprocess.run([UV, "lock"], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _repo(tmp_path: Path, index: LocalIndex, *, lock: bool = True) -> Path:
    repo = Repo(tmp_path / "repo")
    (repo.root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    (repo.root / ".govern.toml").write_text(
        f'[tool.govern.profiles.runtime]\npython = "{python}"\n', encoding="utf-8"
    )
    if lock:
        _uv_lock(repo.root, index, tmp_path / "home")
        assert 'name = "helper-demo"\nversion = "1.0"' in (repo.root / "uv.lock").read_text()
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "the project and its lock")
    return repo.root


def _verify(
    tmp_path: Path,
    root: Path,
    index: LocalIndex,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str, str, str]:
    monkeypatch.chdir(root)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert run_cli(["track", str(root), "--db", db], capsys)[0] == 0
    code, out, err = run_cli(["poll", "--db", db, "--index-url", index.url], capsys)
    assert code == 0, err
    assert "candidate: cupy-demo 14.1.1 for <14.1.0" in out
    check = tmp_path / "check.py"
    check.write_text(CHECK, encoding="utf-8")
    argv = ["verify", "cupy-demo", "--isolated", "--db", db, "--index-url", index.url]
    code, out, err = run_cli([*argv, "--command", f"{{python}} {check}"], capsys)
    return code, out, err, db


def test_the_run_installs_the_candidate_with_the_regenerated_locks_versions(
    tmp_path: Path,
    index: LocalIndex,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = _repo(tmp_path, index)
    code, out, err, db = _verify(tmp_path, root, index, monkeypatch, capsys)
    assert code == 0, (out, err)
    assert "=> passed: 14.1.1 passed" in out
    with Store(db) as store, store.session() as session:
        (run,) = session.exec(select(Verification)).all()
        assert run.installed_version == "14.1.1"
        started = session.exec(
            select(Event).where(col(Event.kind) == EventKind.VERIFICATION_STARTED)
        ).one()
    assert started.detail["lock"] == {
        "locks": ["uv.lock"],
        "from": "the checkout's last commit",  # no remote to fetch the base branch from
        "pins": 1,
        "digest": pins_digest(("helper-demo==1.0",)),  # the proposal compares its lock's
    }
    # The checkout was only read: its lock is as it was.
    assert 'name = "cupy-demo"\nversion = "14.0.1"' in (root / "uv.lock").read_text()


def test_without_a_lock_the_run_takes_what_the_index_offers(
    tmp_path: Path,
    index: LocalIndex,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The control of the test above: the same check, no lock; helper-demo 2.0 is what the
    candidate's run then installs, and the check fails on it."""
    root = _repo(tmp_path, index, lock=False)
    _code, out, _err, db = _verify(tmp_path, root, index, monkeypatch, capsys)
    assert "14.1.1 passed" not in out, out
    with Store(db) as store, store.session() as session:
        runs = session.exec(select(Verification).order_by(col(Verification.id))).all()
        started = session.exec(
            select(Event).where(col(Event.kind) == EventKind.VERIFICATION_STARTED)
        ).all()
    assert runs[0].conclusion is not None
    assert runs[0].conclusion.value == "failed"
    assert "helper-demo 2.0" in (runs[0].log_excerpt or "")
    assert all("lock" not in event.detail for event in started)


def test_a_lock_that_cannot_be_regenerated_leaves_the_run_without_pins_and_says_why(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "pylock.toml").write_text(  # another tool's: govern regenerates only pip's
        'lock-version = "1.0"\ncreated-by = "uv"\n\n'
        '[[packages]]\nname = "cupy-demo"\nversion = "14.0.1"\n',
        encoding="utf-8",
    )
    ref = ExclusionRef(
        key="k",
        repository="acme/app",
        source="pyproject.toml",
        line=7,
        package="cupy-demo",
        requirement="cupy-demo<14.1.0",
        clause="<14.1.0",
        group="project.dependencies",
    )
    found = lock_pins(root, ref=ref, fmt="pyproject", version="14.1.1", regenerator=Regenerator())
    assert found is not None
    assert found.locks == ("pylock.toml",)
    assert found.pins == ()
    assert found.refused is not None
    assert "written by uv" in found.refused
    assert json.dumps(found.detail())  # the event's detail is JSON
    # An intent without a lock: nothing to pin, nothing copied to say so.
    (root / "pylock.toml").unlink()
    assert (
        lock_pins(root, ref=ref, fmt="pyproject", version="14.1.1", regenerator=Regenerator())
        is None
    )


def test_hosted_ci_gets_the_pins_as_an_input_only_when_there_are_some() -> None:
    from packaging.version import Version

    trial = Trial("cupy-demo", Version("14.1.1"), "runtime", "govern-1-1")
    assert "pins" not in trial_fields(trial)
    assert trial.constraints == "cupy-demo==14.1.1\n"
    pinned = Trial(
        "cupy-demo", Version("14.1.1"), "runtime", "govern-1-1", pins=("a==1", "helper-demo==1.0")
    )
    assert trial_fields(pinned)["pins"] == "a==1\nhelper-demo==1.0"
    assert pinned.constraints == "cupy-demo==14.1.1\na==1\nhelper-demo==1.0\n"


def test_the_pins_reach_the_trial_and_a_failure_to_find_them_is_said_not_fatal(
    tmp_path: Path, database_url: str
) -> None:
    from reminderworld import verify

    from govern.config import Config
    from govern.errors import GovernError
    from govern.locks.installed import LockPins
    from govern.service.track import TrackOptions, track

    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "uv.lock").write_text(  # a repository with a lock: its runs get pins
        'version = 1\n\n[[package]]\nname = "cupy-demo"\nversion = "14.0.1"\n',
        encoding="utf-8",
    )
    with Store(database_url) as store:
        track(store, root, None, config=Config(), options=TrackOptions())
        asked: list[tuple[Path, str, str, str]] = []

        def pins(where: Path, ref: ExclusionRef, fmt: str, version: str) -> LockPins:
            asked.append((where, ref.package, fmt, version))
            return LockPins(("uv.lock",), ("helper-demo==1.0",))

        provider = verify(store, "14.1.1", package="cupy-demo", pins_for=pins)
        assert asked == [(root.resolve(), "cupy-demo", "pyproject", "14.1.1")]
        (trial,) = provider.trials
        assert trial.pins == ("helper-demo==1.0",)
        assert trial.constraints == "cupy-demo==14.1.1\nhelper-demo==1.0\n"

    def broken(*_args: object) -> LockPins:
        raise GovernError("git archive failed: the object store is corrupt")

    with Store(f"sqlite:///{tmp_path / 'other.db'}") as store:
        track(store, root, None, config=Config(), options=TrackOptions())
        provider = verify(store, "14.1.1", package="cupy-demo", pins_for=broken)
        (trial,) = provider.trials  # the run went on, without pins
        assert trial.pins == ()
        with store.session() as session:
            started = session.exec(
                select(Event).where(col(Event.kind) == EventKind.VERIFICATION_STARTED)
            ).one()
    assert started.detail["lock"]["refused"] == (
        "the locks could not be read: git archive failed: the object store is corrupt"
    )


def test_a_repository_without_a_lock_is_not_copied_for_pins(
    tmp_path: Path, database_url: str
) -> None:
    from reminderworld import verify

    from govern.config import Config
    from govern.service.track import TrackOptions, track

    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    asked: list[str] = []

    def pins(*args: object) -> None:
        asked.append(str(args))

    with Store(database_url) as store:
        track(store, root, None, config=Config(), options=TrackOptions())
        provider = verify(store, "14.1.1", package="cupy-demo", pins_for=pins)
    assert asked == []  # the store knows it has no lock: nothing regenerated, nothing copied
    assert provider.trials[0].pins == ()


def test_a_secret_in_a_refusal_is_hidden_before_the_refusal_is_cut(
    tmp_path: Path, database_url: str
) -> None:
    """The event keeps 500 characters of why the locks were not regenerated; a configured
    secret straddling that cut is hidden in the whole text first, so none of it is kept."""
    import asyncio

    from reminderworld import NOW, Passes

    from govern.config import Config
    from govern.exclusions.states import State
    from govern.locks.installed import LockPins
    from govern.redact import ConfiguredSecrets
    from govern.service.track import TrackOptions, track
    from govern.service.verify import Verifier
    from govern.store.models import Candidate, StoredExclusion, StoredRelease

    secret = "s3cr3t-t0ken-" + "x" * 30
    why = "a" * 490 + secret + " refused"
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "uv.lock").write_text('version = 1\n\n[[package]]\nname = "cupy-demo"\n', "utf-8")
    with Store(database_url) as store:
        track(store, root, None, config=Config(), options=TrackOptions())
        with store.session(write=True) as session:
            row = session.exec(
                select(StoredExclusion).where(StoredExclusion.package == "cupy-demo")
            ).one()
            release = StoredRelease(package="cupy-demo", version="14.1.1", first_seen_at=NOW)
            session.add(release)
            session.flush()
            session.add(
                Candidate(
                    exclusion_id=row.id or 0, release_id=release.id or 0, profile="p", found_at=NOW
                )
            )
            row.state = State.CANDIDATE
        provider = Passes()
        verifier = Verifier(
            store,
            provider_for=lambda _profile: provider,
            providers={provider.name: provider},
            clock=lambda: NOW,
            secrets=ConfiguredSecrets(values=(secret,)),
            pins_for=lambda *_args: LockPins(("uv.lock",), refused=why),
        )
        asyncio.run(verifier.run())
        with store.session() as session:
            started = session.exec(
                select(Event).where(col(Event.kind) == EventKind.VERIFICATION_STARTED)
            ).one()
    kept = started.detail["lock"]["refused"]
    assert "s3cr3t" not in kept
    assert kept.startswith("a" * 490)
