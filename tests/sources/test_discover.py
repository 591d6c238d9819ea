"""Tests for :mod:`govern.sources.discover`: default rules, skipped dirs, globs."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from govern.sources.discover import discover, glob_match, source_format_for
from govern.sources.model import SourceFormat


def make_tree(root: Path, files: Iterable[str]) -> None:
    """Create empty files at the given root-relative POSIX paths."""
    for relpath in files:
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")


def found(root: Path, **kwargs: tuple[str, ...]) -> list[str]:
    """What :func:`discover` returns, as root-relative POSIX paths."""
    return [path.relative_to(root).as_posix() for path in discover(root, **kwargs)]


SOURCES = [
    "requirements.txt",
    "requirements-dev.txt",
    "constraints.txt",
    "constraints-ci.txt",
    "pyproject.toml",
    "dev.in",
    "requirements/common.txt",
    "requirements/test/cuda.txt",
    "requirements/test/cuda.in",
    "services/api/pyproject.toml",
    "services/api/requirements/prod/deep/base.txt",
    "services/api/requirements_lock.txt",
]

NOT_SOURCES = [
    "README.md",
    "setup.py",
    "notes.txt",
    "requirements.md",
    "requirements/README.md",
    "docs/constraints.rst",
    "myrequirements.txt",
    "requirements.txt.bak",
    "pyproject.toml.orig",
    "deps/extra.pip",
    "deps/nested/more.pip",
    # skipped directories
    ".venv/lib/python3.11/site-packages/pkg/requirements.txt",
    "venv/requirements.txt",
    "node_modules/x/requirements.txt",
    ".git/requirements.txt",
    ".hg/pyproject.toml",
    ".tox/py311/requirements.txt",
    ".nox/x/pyproject.toml",
    "__pycache__/requirements.txt",
    "site-packages/pkg/pyproject.toml",
    "build/lib/requirements.txt",
    "dist/pyproject.toml",
    ".ci/requirements.txt",
    "services/api/.cache/pyproject.toml",
    "services/api/node_modules/requirements/a.txt",
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project with matching and non-matching files."""
    make_tree(tmp_path, SOURCES + NOT_SOURCES)
    return tmp_path


def test_default_rules(tree: Path) -> None:
    assert found(tree) == sorted(SOURCES)


def test_results_are_root_joined_and_sorted(tree: Path) -> None:
    paths = discover(tree)
    assert all(path.is_file() and path.is_relative_to(tree) for path in paths)
    keys = [path.relative_to(tree).as_posix() for path in paths]
    assert keys == sorted(keys)


def test_include_adds_files(tree: Path) -> None:
    assert found(tree, include=("deps/**/*.pip", "notes.txt")) == sorted(
        [*SOURCES, "deps/extra.pip", "deps/nested/more.pip", "notes.txt"]
    )


def test_exclude_removes_files_and_wins(tree: Path) -> None:
    result = found(
        tree,
        include=("deps/**/*.pip",),
        exclude=("services/**", "**/*.in", "deps/nested/*"),
    )
    assert result == sorted(
        [
            "requirements.txt",
            "requirements-dev.txt",
            "constraints.txt",
            "constraints-ci.txt",
            "pyproject.toml",
            "requirements/common.txt",
            "requirements/test/cuda.txt",
            "deps/extra.pip",
        ]
    )


def test_exclude_directory_with_trailing_slash(tree: Path) -> None:
    result = found(tree, exclude=("requirements/",))
    assert "requirements/common.txt" not in result
    assert "requirements/test/cuda.in" not in result
    assert "requirements.txt" in result


def test_wildcard_include_does_not_enter_skipped_dirs(tree: Path) -> None:
    result = found(tree, include=("**/*.txt",))
    assert result == sorted({*SOURCES, "notes.txt", "myrequirements.txt"})


def test_literal_include_reaches_into_skipped_dir(tree: Path) -> None:
    make_tree(tree, [".ci/deep/requirements-ci.txt"])
    result = found(tree, include=(".ci/*.txt", ".ci/**/*.txt"))
    assert ".ci/requirements.txt" in result
    assert ".ci/deep/requirements-ci.txt" in result
    # Nothing else from skipped directories came along.
    assert not [p for p in result if p.startswith((".venv", "node_modules", ".git/"))]


def test_symlinked_directories_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_tree(outside, ["requirements.txt"])
    root = tmp_path / "root"
    make_tree(root, ["pyproject.toml"])
    try:
        os.symlink(outside, root / "linked", target_is_directory=True)
        os.symlink(root / "missing.txt", root / "requirements-broken.txt")
    except OSError:  # pragma: no cover - platforms without symlinks
        pytest.skip("symlinks are not available")
    assert found(root) == ["pyproject.toml"]


def test_symlinked_file_is_kept(tmp_path: Path) -> None:
    make_tree(tmp_path, ["shared/base.cfg"])
    try:
        os.symlink(tmp_path / "shared" / "base.cfg", tmp_path / "requirements.txt")
    except OSError:  # pragma: no cover - platforms without symlinks
        pytest.skip("symlinks are not available")
    assert found(tmp_path) == ["requirements.txt"]


def test_root_inside_a_skipped_name_is_still_walked(tmp_path: Path) -> None:
    root = tmp_path / ".venv"
    make_tree(root, ["requirements.txt", "build/requirements.txt"])
    assert found(root) == ["requirements.txt"]


def test_empty_and_missing_roots(tmp_path: Path) -> None:
    assert discover(tmp_path) == []
    assert discover(tmp_path / "missing") == []


@pytest.mark.parametrize(
    ("pattern", "relpath", "expected"),
    [
        ("deps/**/*.pip", "deps/a.pip", True),
        ("deps/**/*.pip", "deps/x/a.pip", True),
        ("deps/**/*.pip", "deps/x/y/z/a.pip", True),
        ("deps/**/*.pip", "other/deps/a.pip", False),
        ("deps/**/*.pip", "deps/a.txt", False),
        ("**/requirements.txt", "requirements.txt", True),
        ("**/requirements.txt", "a/b/requirements.txt", True),
        ("**/requirements.txt", "a/b/my-requirements.txt", False),
        ("**", "anything/at/all.txt", True),
        ("services/**", "services/api/pyproject.toml", True),
        ("services/**", "servicesX/pyproject.toml", False),
        ("a/**/b/**/c.txt", "a/b/c.txt", True),
        ("a/**/b/**/c.txt", "a/x/b/y/z/c.txt", True),
        ("a/**/b/**/c.txt", "a/x/c.txt", False),
        ("*.txt", "requirements.txt", True),
        ("*.txt", "dir/requirements.txt", False),  # anchored at the root
        ("*/*.txt", "dir/requirements.txt", True),
        ("req?.txt", "req1.txt", True),
        ("req?.txt", "req12.txt", False),
        ("req?.txt", "req/.txt", False),
        ("a*b/x", "a/b/x", False),  # * never crosses a /
        ("a**b", "a-x-b", True),  # ** inside a segment is just *
        ("a**b", "a/x/b", False),
        ("req[0-9].txt", "req5.txt", True),
        ("req[!0-9].txt", "req5.txt", False),
        ("req[!0-9].txt", "reqx.txt", True),
        ("req[.txt", "req[.txt", True),  # an unterminated class is literal
        ("[z-a].txt", "[z-a].txt", True),  # an invalid range falls back to literal
        ("a+b(c).txt", "a+b(c).txt", True),  # regex characters are literal
        ("./requirements.txt", "requirements.txt", True),
        ("/requirements.txt", "requirements.txt", True),
        ("requirements/", "requirements/a/b.txt", True),
        ("", "requirements.txt", False),
    ],
)
def test_glob_match(pattern: str, relpath: str, expected: bool) -> None:
    assert glob_match(pattern, relpath) is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pyproject.toml", SourceFormat.PYPROJECT),
        ("sub/pyproject.toml", SourceFormat.PYPROJECT),
        ("constraints.txt", SourceFormat.CONSTRAINTS),
        ("constraints-ci.txt", SourceFormat.CONSTRAINTS),
        ("requirements.txt", SourceFormat.REQUIREMENTS),
        ("requirements/constraints.txt", SourceFormat.CONSTRAINTS),
        ("dev.in", SourceFormat.REQUIREMENTS),
        ("deps/extra.pip", SourceFormat.REQUIREMENTS),
    ],
)
def test_source_format_for(name: str, expected: SourceFormat) -> None:
    assert source_format_for(Path(name)) is expected
