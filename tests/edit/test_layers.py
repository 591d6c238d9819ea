"""The edit sits above what it reads, and local git beside the hosted forges: no arrow back.

``edit/`` reads ``sources/`` and ``exclusions/``; neither reads it, and ``sources/`` does
not read ``exclusions/``. ``forge/`` (the hosted forges) does not read ``git/`` (the local
clone and the push). Every import counts, a lazy one inside a function too.

Across govern, a module imports only what another module made public: a name that starts
with ``_`` is its own module's (a helper two modules share is public, in the home of the
concept).
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


def module_name(file: Path) -> str:
    """A module's dotted name (``govern/index/simple.py`` → ``govern.index.simple``)."""
    parts = file.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private_imports(source: bytes, module: str, *, package: bool = False) -> list[str]:
    """The ``_private`` names ``module`` imports from another module of govern (relative
    imports resolved; ``package``: the module is a package's ``__init__``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if package else 0)]
                origin = ".".join([*base, origin] if origin else base)
            if origin.split(".")[0] != "govern" or origin == module:
                continue
            found.extend(
                f"{origin}.{alias.name}" for alias in node.names if _is_private(alias.name)
            )
        elif isinstance(node, ast.Import):
            found.extend(
                alias.name
                for alias in node.names
                if alias.name.split(".")[0] == "govern"
                and any(_is_private(part) for part in alias.name.split("."))
            )
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


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


def test_no_module_imports_another_modules_private_name() -> None:
    files = sorted(ROOT.rglob("*.py"))
    assert len(files) > 100
    wrong = [
        f"{file.relative_to(ROOT.parent)} imports {name}"
        for file in files
        for name in private_imports(
            file.read_bytes(), module_name(file), package=file.name == "__init__.py"
        )
    ]
    assert wrong == []


def test_the_private_import_check_sees_each_form() -> None:
    """The rule above is not vacuous: absolute, relative and dotted imports are caught."""
    source = (
        b"from govern.index.simple import Notes, _Resolver\n"
        b"from .model import _hidden\n"
        b"from . import _sibling\n"
        b"import govern._internal.x\n"
        b"from govern.ci.hosted import __all__\n"  # a dunder is no private name
        b"def lazy():\n    from govern.text import _quote\n"
    )
    assert private_imports(source, "govern.index.pep503") == [
        "govern.index.simple._Resolver",
        "govern.index.model._hidden",
        "govern.index._sibling",
        "govern._internal.x",
        "govern.text._quote",
    ]
    own = b"from govern.index.pep503 import _tag_end\n"
    assert private_imports(own, "govern.index.pep503") == []  # its own names
    in_package = private_imports(b"from .simple import _x\n", "govern.index", package=True)
    assert in_package == ["govern.index.simple._x"]
