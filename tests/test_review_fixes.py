"""Regressions found in review: confinement, secrets, same-line entries, keys, bad versions."""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path

import pytest

from govern.audit import AuditOptions, audit
from govern.cli import main
from govern.config import Config
from govern.policy.loader import load_policy
from govern.report import AuditReport

TODAY = date(2026, 12, 2)


def run(paths: list[Path], cwd: Path, **config: object) -> AuditReport:
    return audit(
        paths,
        config=Config(**config),  # type: ignore[arg-type]
        policy=load_policy("default"),
        options=AuditOptions(today=TODAY, environ={"SECRETDIR": "hunter2"}),
        cwd=cwd,
    )


def test_a_discovered_link_out_of_the_tree_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("MYTOKEN=ghp_supersecret\n", encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").symlink_to(outside)
    report = run([repo], repo)
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
    report = run([Path("../proj/requirements.txt")], work)
    assert not report.findings
    assert [e.package for e in report.exclusions] == ["foo"]


def test_several_directories_honour_the_configured_globs(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name / "fixtures").mkdir(parents=True)
        (tmp_path / name / "requirements.txt").write_text("x>=1\n", encoding="utf-8")
        (tmp_path / name / "fixtures" / "requirements.txt").write_text("y>=1\n", encoding="utf-8")
    report = run(
        [tmp_path / "a", tmp_path / "b"], tmp_path, exclude=("a/fixtures/**", "b/fixtures/**")
    )
    assert sorted(s.path for s in report.sources) == ["a/requirements.txt", "b/requirements.txt"]


def test_secrets_stay_out_of_messages_and_excerpts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "requirements.txt").write_text(
        "--extra-index-url https://user:s3cret@host/simple --bogus\n"
        "-r ${SECRETDIR}/x.txt\n"
        "pkg=1.0 @ https://u:p@ss@host/x.whl\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("SECRETDIR", "hunter2")
    monkeypatch.chdir(tmp_path)
    for fmt in ("human", "json", "sarif", "github", "markdown"):
        with pytest.raises(SystemExit):
            main(["audit", "--format", fmt])
        out = capsys.readouterr().out
        assert "s3cret" not in out
        assert "hunter2" not in out
        assert "p@ss" not in out
        assert "ss@host" not in out


def test_requirements_sharing_a_pyproject_line_are_judged_apart(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\n'
        'dependencies = ["aaa<5", "foo!=1.0", "bar>=2,!=1.0"]  # 1.0 and 5 broke us\n'
        "[project.optional-dependencies]\n"
        'a = ["baz<3"]\nb = ["baz<3", "foo!=1.0"]\n',
        encoding="utf-8",
    )
    report = run([tmp_path], tmp_path)
    redundant = [f for f in report.findings if f.rule == "redundant-exclusion"]
    assert [(f.package, f.message.split(" is ")[0]) for f in redundant] == [("bar", "bar !=1.0")]
    ids = [e.id for e in report.exclusions]
    assert len(ids) == len(set(ids))  # the two extras' baz<3 are two exclusions
    assert all(
        e.annotation.reason == "1.0 and 5 broke us"
        for e in report.exclusions
        if e.group == "project.dependencies"
    )


@pytest.mark.parametrize(
    ("line", "bad"),
    [
        ("# CuPy 14.1.0 imports pytest\ncupy<14.1.0\n", ["14.1.0"]),
        ("# wait for 2.1, which fixes the regression from 2.0.0\nfoo<2\n", ["2"]),
        ("# numpy 2 needs Python 3.12\nnumpy<2\n", []),  # a bare "2" is not read as a version
        ("# see https://h/x/tag/v9.0.1\nbar==1.0\n", []),
        ("# 2.0.0 broke the build\nfoo<2.1\n", []),
        ("# govern: bad=2.0.0,2.0.1\nfoo<2.1\n", ["2.0.0", "2.0.1"]),
    ],
)
def test_bad_versions_are_never_guessed_from_other_numbers(
    tmp_path: Path, line: str, bad: list[str]
) -> None:
    (tmp_path / "requirements.txt").write_text(line, encoding="utf-8")
    (exclusion,) = run([tmp_path], tmp_path).exclusions
    assert list(exclusion.bad_versions) == bad


def test_environment_is_untouched(tmp_path: Path) -> None:
    assert "SECRETDIR" not in os.environ
