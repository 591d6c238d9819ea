"""Exclusion keys: stable across line moves, distinct across markers, sources and clauses."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from govern.audit import AuditOptions, audit
from govern.config import Config
from govern.exclusions.model import Exclusion
from govern.policy.loader import load_policy

TODAY = date(2026, 12, 2)


def exclusions(root: Path, repository: str | None = None) -> list[Exclusion]:
    report = audit(
        [root],
        config=Config(repository=repository),
        policy=load_policy("default"),
        options=AuditOptions(today=TODAY),
    )
    return list(report.exclusions)


def test_same_package_under_different_markers_is_kept_apart(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(
        '# 2.0 broke 3.11\nfoo<2; python_version < "3.12"\n'
        '# 3.0.1 is broken on 3.12\nfoo!=3.0.1; python_version >= "3.12"\n',
        encoding="utf-8",
    )
    found = exclusions(tmp_path)
    assert [(e.clause, e.marker) for e in found] == [
        ("<2", 'python_version < "3.12"'),
        ("!=3.0.1", 'python_version >= "3.12"'),
    ]
    assert len({e.id for e in found}) == 2
    report = audit(
        [tmp_path], config=Config(), policy=load_policy("default"), options=AuditOptions(TODAY)
    )
    assert not [f for f in report.findings if f.rule == "inconsistent-exclusions"]


def test_keys_survive_moved_lines_and_normalize_spacing(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("# why: 14.1.0 broke it\ncupy-cuda13x != 14.1.0\n", encoding="utf-8")
    (before,) = exclusions(tmp_path)
    path.write_text(
        "lmcache>=0.3.9\n\n# why: 14.1.0 broke it\nCuPy_Cuda13x!=14.1.0  # moved\n",
        encoding="utf-8",
    )
    (after,) = exclusions(tmp_path)
    assert before.line == 2
    assert after.line == 4
    assert after.id == before.id
    assert after.package == "cupy-cuda13x"


def test_keys_differ_by_repository_source_and_clause(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("foo<2\nbar<2\n", encoding="utf-8")
    (tmp_path / "constraints.txt").write_text("foo<2\n", encoding="utf-8")
    ids = {(e.source, e.package): e.id for e in exclusions(tmp_path)}
    assert len(set(ids.values())) == 3
    other = {(e.source, e.package): e.id for e in exclusions(tmp_path, "org/other")}
    assert not set(ids.values()) & set(other.values())


def test_repository_from_git_origin_without_credentials(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = https://user:s3cret@github.com/vllm-project/vllm.git\n',
        encoding="utf-8",
    )
    (tmp_path / "requirements.txt").write_text("foo<2\n", encoding="utf-8")
    (found,) = exclusions(tmp_path)
    assert found.repository == "github.com/vllm-project/vllm"


def test_repository_of_a_worktree_comes_from_the_main_repository(tmp_path: Path) -> None:
    main_git = tmp_path / "main" / ".git"
    (main_git / "worktrees" / "wt").mkdir(parents=True)
    (main_git / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:vllm-project/vllm.git\n', encoding="utf-8"
    )
    (main_git / "worktrees" / "wt" / "commondir").write_text("../..\n", encoding="utf-8")
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {main_git / 'worktrees' / 'wt'}\n", encoding="utf-8")
    (worktree / "requirements.txt").write_text("foo<2\n", encoding="utf-8")
    (found,) = exclusions(worktree)
    assert found.repository == "github.com/vllm-project/vllm"
