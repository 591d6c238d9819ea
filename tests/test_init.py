"""``govern init`` and ``govern config check`` on real git repositories and real files."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitrepo import Repo

from govern.cli import main
from govern.config import load_config


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``govern`` in-process through its real error boundary."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def run_ok(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``govern`` and expect exit 0; its stdout."""
    code, out, err = run(argv, capsys)
    assert code == 0, err
    return out


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A GitHub-hosted project: a workflow, requires-python, a requirements file."""
    repo = Repo(tmp_path / "widget")
    repo.git("remote", "add", "origin", "git@github.com:acme/widget.git")
    repo.write(".github/workflows/tests.yml", "on: push\n")
    repo.write(
        "pyproject.toml",
        '[project]\nname = "widget"\nrequires-python = ">=3.10"\ndependencies = ["attrs"]\n',
    )
    repo.write("requirements.txt", "cupy-cuda13x < 14.1.0\n")
    repo.git("add", ".")
    repo.git("commit", "-q", "-m", "start")
    return repo


def test_init_writes_a_commented_config_that_loads_and_checks(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run_ok(["init", str(repo.root)], capsys)
    target = repo.root / ".govern.toml"
    assert f"wrote {target}" in out
    text = target.read_text()
    config = load_config(repo.root)
    assert config.path == target
    assert config.repository == "github.com/acme/widget"
    assert config.forge == "https://github.com/acme/widget"
    assert (config.propose.via, config.propose.remote, config.propose.base) == (
        "github",
        "origin",
        "main",
    )
    [ci] = config.ci
    assert (ci.name, ci.provider) == ("github", "github-actions")
    assert ci.as_dict()["workflow"] == "tests.yml"
    assert ci.as_dict()["repository"] == "acme/widget"
    assert [(p.name, p.python) for p in config.profiles] == [("py310", "3.10"), ("py314", "3.14")]
    assert config.verify_with is None  # written commented out, with what to do first
    assert '# verify-with = "github"' in text
    assert "#   requirements.txt" in text  # the sources discovery finds
    for line in text.splitlines():  # every key written is explained just above it
        if "=" in line and not line.startswith(("#", "[")):
            before = text.splitlines()[text.splitlines().index(line) - 1]
            assert before.startswith("#") or "  # " in line, line
    out = run_ok(["config", "check", str(repo.root)], capsys)
    assert out.startswith(f"ok: {target}")
    assert "profiles: py310 (3.10), py314 (3.14)" in out


def test_init_refuses_to_overwrite_without_force_and_prints_with_stdout(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    target = repo.root / ".govern.toml"
    target.write_text('policy = "strict"\n')
    code, _, err = run(["init", str(repo.root)], capsys)
    assert code == 2
    assert "exists; not overwritten" in err
    assert "--force" in err
    assert target.read_text() == 'policy = "strict"\n'
    printed = run_ok(["init", str(repo.root), "--stdout"], capsys)
    assert 'via = "github"' in printed
    assert target.read_text() == 'policy = "strict"\n'
    run_ok(["init", str(repo.root), "--force"], capsys)
    assert target.read_text() == printed


def test_init_without_a_remote_writes_the_unknown_keys_commented_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = Repo(tmp_path / "plain")
    repo.write(".gitlab-ci.yml", "test:\n  script: [pytest]\n")
    repo.write(".buildkite/pipeline.yml", "steps: []\n")
    text = run_ok(["init", str(repo.root), "--stdout"], capsys)
    assert "# repository = " in text
    assert "TODO" in text
    assert "# [ci.gitlab]" in text
    assert "# [ci.buildkite]" in text
    assert "# [profiles.default]" in text
    (repo.root / ".govern.toml").write_text(text)
    config = load_config(repo.root)
    assert (config.repository, config.ci, config.profiles, config.propose.base) == (
        None,
        (),
        (),
        None,
    )


BROKEN = """\
policy = "strict"
verify-atempts = 3
fail-on = "fatal"

[propose]
via = "git"
bse = "main"
"""


def test_check_prints_every_problem_with_its_line_and_a_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".govern.toml").write_text(BROKEN)
    code, out, err = run(["config", "check", str(tmp_path)], capsys)
    assert code == 2
    assert "3 problems in the configuration" in err
    file = tmp_path / ".govern.toml"
    lines = out.splitlines()
    assert lines[0] == f"{file}:2:1: unknown [tool.govern] key(s) verify-atempts"
    assert lines[1].strip().startswith("Tip: Did you mean verify-attempts?")
    assert lines[2].startswith(f"{file}:3:1: fail-on must be one of error, warning, info, never")
    assert lines[4] == f"{file}:7:1: unknown [tool.govern.propose] key(s) bse"
    assert lines[5].strip().startswith("Tip: Did you mean base?")
    assert len(lines) == 6
    # Loading stops at the first, and says there are more.
    code, _, err = run(["audit", str(tmp_path)], capsys)
    assert code == 2
    assert "unknown [tool.govern] key(s) verify-atempts" in err
    assert "(2 more problems: govern config check)" in err


def test_check_places_pyproject_problems_and_toml_syntax_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.govern]\nverify-with = "gpu"\n\n'
        "[tool.govern.profiles.cuda]\npython = 3.12\n"
    )
    code, out, _ = run(["config", "check", str(tmp_path)], capsys)
    file = tmp_path / "pyproject.toml"
    assert code == 2
    assert f"{file}:5:1: verify-with names CI 'gpu', which is not defined" in out
    assert f"{file}:8:1: profiles.cuda.python must be a string, not a number" in out
    (tmp_path / ".govern.toml").write_text('policy = "strict"\ninclude = [1,\n')
    code, out, _ = run(["config", "check", str(tmp_path)], capsys)
    assert code == 2
    assert out.startswith(f"{tmp_path / '.govern.toml'}:2:")
    assert "invalid TOML" in out


def test_check_with_no_configuration_is_ok(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_ok(["config", "check", str(tmp_path)], capsys).startswith("ok: no configuration")
