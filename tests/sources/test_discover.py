"""Tests for :mod:`govern.sources.discover`: default rules, skipped dirs, globs."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from datetime import date
from pathlib import Path

import pytest
from auditrun import run_audit

from govern.audit import AuditOptions, audit
from govern.config import Config
from govern.policy.loader import load_policy
from govern.sources.discover import (
    NOT_REQUIREMENTS_RULE,
    discover,
    glob_match,
    sniff,
    source_format_for,
)
from govern.sources.model import Problem, SourceFormat


def make_tree(root: Path, files: Iterable[str]) -> None:
    """Create empty files at the given root-relative POSIX paths."""
    for relpath in files:
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")


def found(root: Path, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> list[str]:
    """What :func:`discover` returns, as root-relative POSIX paths."""
    paths = discover(root, include=include, exclude=exclude)
    return [path.relative_to(root).as_posix() for path in paths]


# Renovate's pip pattern and *constraints*.txt (issue 14)
NAMED_SO = [
    "myrequirements.txt",
    "test-requirements.txt",
    "global-requirements.txt",
    "requirements_dev.txt",
    "requirements.dev.txt",
    "requirements.pip",
    "doc/test-requirements.pip",
    "upper-constraints.txt",
]

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
    *NAMED_SO,
    "requirements.in",
    "dev-requirements.in",
    "requirements-dev.in",
    "requirements/docs.in",
]

NOT_SOURCES = [
    "README.md",
    "setup.py",
    "notes.txt",
    "requirements.md",
    "requirements/README.md",
    "docs/constraints.rst",
    "requirements.txt.bak",
    "pyproject.toml.orig",
    "deps/extra.pip",
    "deps/nested/more.pip",
    # templates are never sources, whatever they hold
    "MANIFEST.in",
    "Makefile.in",
    "src/config.h.in",
    "src/foo.pyx.in",
    "setup.cfg.in",
    "pkg/_version.py.in",
    "requirements/MANIFEST.in",
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
            *NAMED_SO,
        ]
    )


def test_exclude_directory_with_trailing_slash(tree: Path) -> None:
    result = found(tree, exclude=("requirements/",))
    assert "requirements/common.txt" not in result
    assert "requirements/test/cuda.in" not in result
    assert "requirements.txt" in result


def test_wildcard_include_does_not_enter_skipped_dirs(tree: Path) -> None:
    result = found(tree, include=("**/*.txt",))
    assert result == sorted({*SOURCES, "notes.txt"})


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
        ("upper-constraints.txt", SourceFormat.CONSTRAINTS),
        ("test-requirements.txt", SourceFormat.REQUIREMENTS),
        ("dev.in", SourceFormat.REQUIREMENTS),
        ("deps/extra.pip", SourceFormat.REQUIREMENTS),
    ],
)
def test_source_format_for(name: str, expected: SourceFormat) -> None:
    assert source_format_for(Path(name)) is expected


# Sniffing: a *.in that is not named for requirements is read only if its content is.

MANIFEST = "include AUTHORS\ninclude ChangeLog\nexclude .gitignore\nexclude .gitreview\n"


def rejected(
    root: Path, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()
) -> list[tuple[str, Problem]]:
    """The files :func:`discover` found by name but did not read, with why."""
    out: list[tuple[Path, Problem]] = []
    discover(root, include=include, exclude=exclude, rejected=out)
    return [(path.relative_to(root).as_posix(), problem) for path, problem in out]


def test_an_in_file_that_reads_as_requirements_is_a_source(tmp_path: Path) -> None:
    (tmp_path / "dev.in").write_text(
        "# tools\n-c constraints.txt\n\nblack>=24  # formatter\nruff\\\n  ==0.6\n"
        "mypy[reports] ; python_version >= '3.11'\n./vendored/pkg\n"
        "git+https://example.invalid/x.git#egg=x\nhashed==1.0 --hash=sha256:00\n"
    )
    assert found(tmp_path) == ["dev.in"]
    assert rejected(tmp_path) == []


def test_an_in_file_that_mostly_does_not_parse_is_one_finding_and_not_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.in").write_text(
        "# release notes template\nVersion @VERSION@ of the tool\nfoo>=1\n\nThanks to all\n"
    )
    assert found(tmp_path) == []
    ((path, problem),) = rejected(tmp_path)
    assert path == "notes.in"
    assert problem.rule == NOT_REQUIREMENTS_RULE
    assert problem.line == 2
    assert problem.message == (
        "notes.in is not read as requirements: 2 of its 3 lines are neither requirements"
        " nor pip options (the first is line 2)"
    )


def test_templates_are_neither_sources_nor_findings(tmp_path: Path) -> None:
    (tmp_path / "MANIFEST.in").write_text(MANIFEST)
    (tmp_path / "config.h.in").write_text("#undef HAVE_FOO\n")  # all "comments"
    (tmp_path / "foo.pyx.in").write_text("{{py: types = ['int']}}\ncdef class X:\n")
    assert found(tmp_path) == []
    assert rejected(tmp_path) == []


def test_an_empty_or_comment_only_in_file_is_a_source(tmp_path: Path) -> None:
    (tmp_path / "empty.in").write_text("")
    (tmp_path / "comments.in").write_text("# nothing yet\n\n")
    assert found(tmp_path) == ["comments.in", "empty.in"]


def test_a_binary_in_file_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "blob.in").write_bytes(b"foo==1\n\0\1\2")
    assert found(tmp_path) == []
    assert [p.message for _, p in rejected(tmp_path)] == [
        "blob.in is binary; not read as requirements"
    ]


def test_sniffing_reads_a_bounded_prefix(tmp_path: Path) -> None:
    path = tmp_path / "big.in"
    # Requirements first, then 8 MB of prose that a whole read would judge.
    path.write_text("pkg==1.0\n" * 500 + "not a requirement at all\n" * 320_000)
    assert sniff(path) is None
    path.write_text("not a requirement at all\n" * 150 + "pkg==1.0\n" * 320_000)
    problem = sniff(path)
    assert problem is not None
    assert problem.line == 1
    assert "150 of its first 200 lines are neither" in problem.message
    # One line of 8 MB: its first 64 KiB are judged, not an empty file.
    path.write_text("not-a-requirement " * 500_000)
    assert sniff(path) is not None


def test_names_say_so_whatever_the_content(tmp_path: Path) -> None:
    (tmp_path / "requirements.in").write_text(MANIFEST)
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "docs.in").write_text(MANIFEST)
    assert found(tmp_path) == ["requirements.in", "requirements/docs.in"]
    assert rejected(tmp_path) == []


def test_include_and_exclude_globs_skip_the_sniff(tmp_path: Path) -> None:
    (tmp_path / "notes.in").write_text(MANIFEST)
    (tmp_path / "MANIFEST.in").write_text(MANIFEST)
    assert found(tmp_path, include=("notes.in", "MANIFEST.in")) == ["MANIFEST.in", "notes.in"]
    assert rejected(tmp_path, exclude=("notes.in",)) == []


def test_a_link_out_of_the_tree_is_not_opened_by_discovery(tmp_path: Path) -> None:
    outside = tmp_path / "outside.cfg"
    outside.write_text("SECRET=1\n")
    root = tmp_path / "root"
    root.mkdir()
    try:
        os.symlink(outside, root / "env.in")
    except OSError:  # pragma: no cover - platforms without symlinks
        pytest.skip("symlinks are not available")
    # Returned as found, so that the audit refuses it as a link out of the tree.
    assert found(root) == ["env.in"]
    assert rejected(root) == []


def test_the_audit_reports_a_rejected_file_once_unless_excluded(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        make_tree(tmp_path, [f"{folder}/requirements.txt"])
        (tmp_path / folder / "notes.in").write_text(MANIFEST)

    def not_read(paths: list[Path], exclude: tuple[str, ...] = ()) -> list[tuple[str, int]]:
        report = audit(
            paths,
            config=Config(exclude=exclude),
            policy=load_policy("default"),
            options=AuditOptions(today=date(2026, 12, 2)),
            cwd=tmp_path,
        )
        assert [f.rule for f in report.findings] == [NOT_REQUIREMENTS_RULE] * len(report.findings)
        return [(f.source, f.line) for f in report.findings]

    assert not_read([tmp_path]) == [("a/notes.in", 1), ("b/notes.in", 1)]
    assert not_read([tmp_path], exclude=("a/**",)) == [("b/notes.in", 1)]
    # Two directories named: globs are relative to the working directory.
    assert not_read([tmp_path / "a", tmp_path / "b"], exclude=("b/notes.in",)) == [
        ("a/notes.in", 1)
    ]
    # A file named on the command line is read whatever its name (four parse errors).
    report = audit(
        [tmp_path / "a" / "notes.in", tmp_path / "b" / "requirements.txt"],
        config=Config(),
        policy=load_policy("default"),
        options=AuditOptions(today=date(2026, 12, 2)),
        cwd=tmp_path,
    )
    assert [f.rule for f in report.findings] == ["parse-error"] * 4


def test_a_discovered_link_out_of_the_tree_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("MYTOKEN=ghp_supersecret\n", encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").symlink_to(outside)
    report = run_audit([repo], repo)
    assert report.sources == ()
    (finding,) = report.findings
    assert finding.rule == "include-outside-root"
    assert "ghp_supersecret" not in json.dumps([f.message for f in report.findings])


def test_a_file_named_outside_the_working_directory_reads_its_siblings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "requirements.txt").write_text("-r base.txt\n", encoding="utf-8")
    (project / "base.txt").write_text("# 2.0 broke us\nfoo<2\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    report = run_audit([Path("../proj/requirements.txt")], work)
    assert not report.findings
    assert [e.package for e in report.exclusions] == ["foo"]


def test_several_directories_honour_the_configured_globs(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name / "fixtures").mkdir(parents=True)
        (tmp_path / name / "requirements.txt").write_text("x>=1\n", encoding="utf-8")
        (tmp_path / name / "fixtures" / "requirements.txt").write_text("y>=1\n", encoding="utf-8")
    report = run_audit(
        [tmp_path / "a", tmp_path / "b"], tmp_path, exclude=("a/fixtures/**", "b/fixtures/**")
    )
    assert sorted(s.path for s in report.sources) == ["a/requirements.txt", "b/requirements.txt"]


def test_a_constraints_named_list_of_another_shape_is_not_a_source(tmp_path: Path) -> None:
    # OpenStack's upper-constraints-xfails.txt lists "<dependency>==<version>;<affected,
    # packages>": after the ";" stands no marker, so each line was a parse error.
    (tmp_path / "upper-constraints-xfails.txt").write_text(
        "# Format is\n# <dependency that is incompatible>==<version>;<list,of,affected,packages>\n"
        "somelib==1.2.0;consumer-a\notherlib==0.4.2;consumer-a,consumer-b\n",
        encoding="utf-8",
    )
    (tmp_path / "upper-constraints.txt").write_text(
        "eventlet===0.36.1\nsomelib===1.3.0;python_version=='3.12'\n", encoding="utf-8"
    )
    rejected: list[tuple[Path, Problem]] = []
    paths = discover(tmp_path, rejected=rejected)
    assert [p.name for p in paths] == ["upper-constraints.txt"]
    ((path, problem),) = rejected
    assert path.name == "upper-constraints-xfails.txt"
    assert problem.rule == NOT_REQUIREMENTS_RULE
    assert problem.line == 3
    assert "2 of its 2 lines are neither requirements nor pip options" in problem.message
    report = run_audit([tmp_path], tmp_path)
    assert [(s.path, s.format) for s in report.sources] == [
        ("upper-constraints.txt", SourceFormat.CONSTRAINTS)
    ]
    assert [(f.source, f.rule) for f in report.findings] == [
        ("upper-constraints-xfails.txt", NOT_REQUIREMENTS_RULE)
    ]
