"""The ``postgresql`` marker: without a reachable PostgreSQL the tests that need it are
skipped with the reason, deselected by ``-m 'not postgresql'``, and failed, never skipped,
under GOVERN_REQUIRE_POSTGRESQL=1 (as .ci/run sets)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REQUIRE_POSTGRESQL, postgresql_unreachable

ROOT = Path(__file__).resolve().parent.parent
TINY = """
def test_on_both_backends(database_url: str) -> None:
    assert database_url
"""


def _closed_port() -> int:
    """A port of 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pytest(tmp_path: Path, *args: str, require: bool) -> tuple[str, dict[str, int]]:
    """Run pytest, with this repository's conftest as a plugin, on a tiny test that takes
    ``database_url``, PostgreSQL pointed at a closed port: (output, outcome counts)."""
    (tmp_path / "test_tiny.py").write_text(TINY)
    env = {k: v for k, v in os.environ.items() if k not in (REQUIRE_POSTGRESQL, "PYTHONPATH")}
    env["PYTHONPATH"] = str(ROOT / "tests")
    port = _closed_port()
    env["GOVERN_TEST_POSTGRESQL"] = f"postgresql+psycopg://postgres:sekrit@127.0.0.1:{port}/t"
    if require:
        env[REQUIRE_POSTGRESQL] = "1"
    command = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml")]
    command += ["--rootdir", str(ROOT), "-p", "conftest", "-p", "no:cacheprovider", "-rsE"]
    done = subprocess.run(
        [*command, *args, str(tmp_path / "test_tiny.py")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", done.stdout.splitlines()[-1])}
    return done.stdout, counts


def test_an_unreachable_postgresql_skips_with_the_reason(tmp_path: Path) -> None:
    out, counts = _pytest(tmp_path, require=False)
    assert counts == {"passed": 1, "skipped": 1}, out
    assert "SKIPPED [1]" in out, out
    assert "is not reachable" in out, out
    assert "-m 'not postgresql'" in out, out
    assert "sekrit" not in out, out  # the URL's password is hidden


def test_under_govern_require_postgresql_an_unreachable_one_is_an_error(tmp_path: Path) -> None:
    out, counts = _pytest(tmp_path, require=True)
    assert counts == {"passed": 1, "error": 1}, out
    assert "is not reachable" in out, out
    assert f"({REQUIRE_POSTGRESQL} is set)" in out, out
    assert "SKIPPED" not in out, out


def test_the_marker_deselects_the_postgresql_case(tmp_path: Path) -> None:
    out, counts = _pytest(tmp_path, "-m", "not postgresql", require=True)
    assert counts == {"passed": 1, "deselected": 1}, out


@pytest.mark.parametrize("value", ["", "0"])
def test_an_empty_or_zero_requirement_is_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(REQUIRE_POSTGRESQL, value)
    with pytest.raises(pytest.skip.Exception, match="not reachable"):
        postgresql_unreachable("PostgreSQL at x is not reachable")
