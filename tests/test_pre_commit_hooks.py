"""The pre-commit hook definitions point at a real command and match real files."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from govern.cli import main
from govern.sources.discover import HOOK_FILES, discover

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


# Names a hook change may touch: (path, whether discovery reads it and the hooks run).
NAMES = [
    # Renovate's default pip pattern, (^|/)[\w-]*requirements([-._]\w+)?\.(txt|pip)$
    ("requirements.txt", True),
    ("requirements-dev.txt", True),
    ("requirements_dev.txt", True),
    ("requirements.dev.txt", True),
    ("test-requirements.txt", True),
    ("global-requirements.txt", True),
    ("dev-requirements.txt", True),
    ("myrequirements.txt", True),
    ("requirements.pip", True),
    ("doc/test-requirements.pip", True),
    ("sub/requirements.txt", True),
    # requirements*.txt (pip-compile's outputs) and *constraints*.txt
    ("requirements-dev-gpu.txt", True),
    ("ci/py3.requirements.txt", True),
    ("services/api/requirements_lock.txt", True),
    ("constraints.txt", True),
    ("constraints-ci.txt", True),
    ("upper-constraints.txt", True),
    ("ci/test-constraints.txt", True),
    # pip-compile's inputs, and every *.txt / *.in below requirements/
    ("requirements.in", True),
    ("requirements-dev.in", True),
    ("dev-requirements.in", True),
    ("requirements/base.in", True),
    ("requirements/dev.txt", True),
    ("requirements/test/cuda.txt", True),
    ("services/api/requirements/prod.txt", True),
    # other *.in: read when their content reads as requirements (it does here)
    ("dev.in", True),
    ("tools/lint.in", True),
    ("pyproject.toml", True),
    ("sub/pyproject.toml", True),
    # not sources
    ("README.md", False),
    ("setup.py", False),
    ("notes.txt", False),
    ("docs/notes.txt", False),
    ("requirements.md", False),
    ("requirements/README.md", False),
    ("requirements.txt.bak", False),
    ("pyproject.toml.orig", False),
    ("deps/extra.pip", False),
    ("docs/constraints.rst", False),
    ("constraints.toml", False),
    # templates, whatever they hold
    ("MANIFEST.in", False),
    ("Makefile.in", False),
    ("src/config.h.in", False),
    ("src/foo.pyx.in", False),
    ("setup.cfg.in", False),
    ("pkg/_version.py.in", False),
    ("requirements/MANIFEST.in", False),
]


def test_hook_files_are_the_discovery_rule() -> None:
    assert {hook["files"] for hook in _hooks()} == {HOOK_FILES}


@pytest.mark.parametrize(("path", "matched"), [*NAMES, (".govern.toml", True)])
def test_hook_file_pattern(path: str, matched: bool) -> None:
    pattern = re.compile(_hooks()[0]["files"])  # pre-commit searches each path with it
    assert bool(pattern.search(path)) is matched


def test_discovery_and_the_hooks_agree_on_every_name(tmp_path: Path) -> None:
    for relpath, _ in NAMES:
        path = tmp_path / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("pkg==1.0\n" if path.suffix != ".toml" else "", encoding="utf-8")
    discovered = {p.relative_to(tmp_path).as_posix() for p in discover(tmp_path)}
    pattern = re.compile(_hooks()[0]["files"])
    assert discovered == {relpath for relpath, matched in NAMES if matched}
    assert discovered == {relpath for relpath, _ in NAMES if pattern.search(relpath)}


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
