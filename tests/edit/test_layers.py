"""The edit sits above what it reads, and local git beside the hosted forges: no arrow back.

``edit/`` reads ``sources/`` and ``exclusions/``; neither reads it, and ``sources/`` does
not read ``exclusions/``. ``forge/`` (the hosted forges) does not read ``git/`` (the local
clone and the push). Every import counts, a lazy one inside a function too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import govern

ROOT = Path(govern.__path__[0])

# package -> the packages of govern it must never import
NEVER = {
    "sources": ("exclusions", "edit"),
    "exclusions": ("edit",),
    "forge": ("git",),
}


def imports(file: Path) -> set[str]:
    """Every module ``file`` imports (absolute names)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(file.read_bytes(), filename=str(file))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("package", sorted(NEVER))
def test_no_arrow_runs_back_up(package: str) -> None:
    files = sorted((ROOT / package).rglob("*.py"))
    assert files
    wrong = [
        f"{file.relative_to(ROOT)} imports {name}"
        for file in files
        for name in sorted(imports(file))
        for below in NEVER[package]
        if name == f"govern.{below}" or name.startswith(f"govern.{below}.")
    ]
    assert wrong == []


def test_the_edit_reads_the_sources_and_the_exclusions() -> None:
    """The rule above is not vacuous: the edit does read both."""
    read = set().union(*(imports(f) for f in (ROOT / "edit").rglob("*.py")))
    assert any(name.startswith("govern.sources.") for name in read)
    assert any(name.startswith("govern.exclusions.") for name in read)
