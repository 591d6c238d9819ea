"""``govern demo`` end to end: a real process, real git, the real local index and fresh
environments; the default store is never written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from packaging.requirements import Requirement

from govern.demo.world import relaxed_specifier


def test_the_demo_runs_the_loop_and_leaves_the_default_store_alone(tmp_path: Path) -> None:
    data_home = tmp_path / "xdg-data"
    data_home.mkdir()
    keep = tmp_path / "workspace"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOVERN_", "PIP_", "XDG_"))}
    env.update(XDG_DATA_HOME=str(data_home), HOME=str(tmp_path / "home"), NO_COLOR="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path.cwd()), env.get("PYTHONPATH")]))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "govern", "demo", "--keep", str(keep)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, (done.stdout, done.stderr)
    out = done.stdout
    assert "14.0.1 (admitted today): passed" in out
    assert "14.1.0 (kept out): failed" in out
    assert "candidate: demo-cupy 14.1.1 for <14.1.0" in out
    assert "passed: demo-cupy 14.1.1 (installed 14.1.1)" in out
    assert "verification passed  demo-cupy 14.1.1" in out  # the thread
    assert "+demo-cupy!=14.1.0" in out  # the branch's diff
    assert f"govern status --all --db sqlite:///{keep / 'govern.db'}" in out
    # Nothing under the user's data directory: the store was the workspace's.
    assert list(data_home.iterdir()) == []
    home = tmp_path / "home"
    assert not [p for p in home.rglob("*") if "govern" in p.name]  # nor elsewhere at home

    # The branch on the bare remote relaxes the line to != 14.1.0, and nothing else.
    remote = keep / "remote.git"
    branches = subprocess.run(
        ["git", "--git-dir", str(remote), "branch", "--list", "govern/relax/*"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len(branches) == 1
    text = subprocess.run(
        ["git", "--git-dir", str(remote), "show", f"{branches[0]}:requirements.txt"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    specifier = relaxed_specifier(text)
    assert specifier is not None
    relaxed = Requirement(f"demo-cupy{specifier}")
    assert str(relaxed.specifier) == "!=14.1.0"
    assert not relaxed.specifier.contains("14.1.0")
    assert relaxed.specifier.contains("14.1.1")
    assert relaxed.specifier.contains("14.0.1")
    base = subprocess.run(
        ["git", "--git-dir", str(remote), "show", "main:requirements.txt"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert relaxed_specifier(base) == "<14.1.0"  # the base branch is as it was
    print(f"govern demo took {took:.1f} s")  # shown with -s; the target is under 30 s


def test_keep_refuses_a_directory_with_something_in_it(tmp_path: Path) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "file").write_text("x")
    done = subprocess.run(
        [sys.executable, "-m", "govern", "demo", "--keep", str(tmp_path / "here")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "is not a new or empty directory" in done.stderr
    assert (tmp_path / "here").iterdir().__next__().name == "file"
