"""States in colour on a terminal, never with NO_COLOR, never in a pipe."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import run_cli

HELD = "\x1b[33mheld\x1b[0m"
LONG = "CuPy 14.1.0 imports pytest at import time. " * 6  # past the list view's 100 characters


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(f"# {LONG}\ncupy-cuda13x < 14.1.0\n", encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'govern.db'}"
    assert run_cli(["track", str(root), "--db", url], capsys)[0] == 0
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    return url


def test_states_are_coloured_only_when_asked_and_never_with_no_color(
    db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_cli(["status", "--db", db], capsys)[1]
    assert "held" in out
    assert "\x1b[" not in out  # not a terminal: plain
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert HELD in run_cli(["status", "--db", db], capsys)[1]
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run_cli(["status", "--db", db], capsys)[1]


def test_one_exclusion_shows_its_reason_in_full(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_cli(["status", "--db", db], capsys)[1]
    flat = " ".join(out.split())
    assert LONG.strip() in flat  # the only exclusion: in full, wrapped
