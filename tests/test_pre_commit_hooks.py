"""The pre-commit hook definitions point at a real command and match real files."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from govern.cli import main

HOOKS = Path(__file__).resolve().parents[1] / ".pre-commit-hooks.yaml"


def _hooks() -> list[dict[str, str]]:
    """A tiny reader for our flat hook list (no YAML dependency in the test extras)."""
    hooks: list[dict[str, str]] = []
    for line in HOOKS.read_text(encoding="utf-8").splitlines():
        if line.startswith("- id: "):
            hooks.append({"id": line[6:].strip()})
        elif line.startswith("  ") and ":" in line and hooks:
            key, value = line.strip().split(":", 1)
            hooks[-1][key] = value.strip().strip("'")
    return hooks


def test_hooks_run_govern_audit_on_the_whole_repository() -> None:
    hooks = _hooks()
    assert [h["id"] for h in hooks] == ["govern-audit", "govern-audit-strict"]
    for hook in hooks:
        assert hook["entry"].startswith("govern audit")
        assert hook["pass_filenames"] == "false"
        assert hook["language"] == "python"


@pytest.mark.parametrize(
    ("path", "matched"),
    [
        ("requirements.txt", True),
        ("requirements/cuda.txt", True),
        ("requirements-dev.in", True),
        ("sub/pyproject.toml", True),
        ("constraints.txt", True),
        ("README.md", False),
        ("docs/notes.txt", False),
    ],
)
def test_hook_file_pattern(path: str, matched: bool) -> None:
    pattern = re.compile(_hooks()[0]["files"])
    assert bool(pattern.search(path)) is matched


def test_hook_entry_is_a_valid_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "requirements.txt").write_text(
        "# 2.0 broke us, o/r#1\nfoo<2  # govern: review-by=2030-01-01\n"
    )
    for hook in _hooks():
        with pytest.raises(SystemExit) as exited:
            main(shlex.split(hook["entry"])[1:])
        assert exited.value.code == 0, capsys.readouterr()
