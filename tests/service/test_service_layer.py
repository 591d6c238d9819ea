"""The layers hold: the service's workflow has no SQL of its own (its statements live in
govern/store, behind named functions), and every advisory lock is taken in one module."""

from __future__ import annotations

import ast
from pathlib import Path

import govern

ROOT = Path(govern.__file__).parent
# The database libraries: the store's business, never the workflow's.
DATABASE = ("sqlalchemy", "sqlmodel", "psycopg", "sqlite3", "alembic")


def imported(path: Path) -> set[str]:
    """Every module a file imports, at any depth (under TYPE_CHECKING and in functions too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_service_imports_no_database_library() -> None:
    offenders = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "service").rglob("*.py"))
        for name in imported(path)
        if name.split(".")[0] in DATABASE
    }
    assert not offenders, "the service's SQL belongs in govern/store: " + ", ".join(
        sorted(offenders)
    )


def test_the_check_sees_an_import_anywhere(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from sqlmodel import Session\n"
        "def f():\n    import sqlalchemy.orm\n",
        encoding="utf-8",
    )
    assert {"sqlmodel", "sqlalchemy.orm"} <= imported(sample)


def test_advisory_locks_are_taken_in_one_module() -> None:
    takers = sorted(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if "pg_advisory" in path.read_text(encoding="utf-8")
        or "pg_try_advisory" in path.read_text(encoding="utf-8")
    )
    assert takers == ["store/locks.py"]
