"""`govern audit` from the command line: exit codes, formats, errors, imports."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import bidi
import pytest
from auditrun import run_audit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from govern.audit import AuditOptions, audit
from govern.cli import STATE, main
from govern.cli import audit as audit_cli
from govern.config import Config
from govern.output import OutputFormat, render
from govern.policy.loader import load_policy

CUPY = (
    "lmcache >= 0.3.9\n"
    "# CuPy 14.1.0 imports pytest from cupy.testing._random. Use <14.1.0\n"
    "# until a fixed newer release is verified for runtime images.\n"
    "cupy-cuda13x < 14.1.0\n"
    "attrs!=25.2.0\n"
)


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``govern`` in-process through its real error boundary."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "requirements.txt").write_text(CUPY, encoding="utf-8")
    os.chdir(tmp_path)
    return tmp_path


def test_exit_0_when_nothing_at_the_fail_level(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(["audit"], capsys)
    assert code == 0
    assert "cupy-cuda13x < 14.1.0" in out
    assert "missing-reason" in out  # a warning, below the default fail level


def test_the_collector_is_back_on_after_an_audit(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gc.isenabled()
    code, _, _ = run_cli(["audit", "-f", "json"], capsys)
    assert code == 0
    assert gc.isenabled()
    run_cli(["audit", "missing.txt"], capsys)  # an error path too
    assert gc.isenabled()


def test_exit_1_with_fail_on_warning(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_cli(["audit", "--fail-on", "warning"], capsys)
    assert code == 1
    code, _, _ = run_cli(["audit", "--fail-on", "never", "--policy", "strict"], capsys)
    assert code == 0
    code, _, _ = run_cli(["audit", "--policy", "strict"], capsys)
    assert code == 1


def test_exit_1_on_parse_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "requirements.txt").write_text("pkg=1.0\n", encoding="utf-8")
    code, out, _ = run_cli(["audit"], capsys)
    assert code == 1
    assert "requirements.txt:1:4: error parse-error" in out
    assert "    pkg=1.0\n       ^\n" in out
    assert "did you mean ==?" in out


@pytest.mark.parametrize(
    ("argv", "message", "tip"),
    [
        (["audit", "missing.txt"], "missing.txt does not exist", "Tip: Name a requirements"),
        (["audit", "--policy", "nope"], "neither a shipped policy", "Tip: Use one of"),
        (["audit", "--as-of", "someday"], "is not a date", "Tip: Write it as YYYY-MM-DD"),
    ],
)
def test_exit_2_with_one_line_and_a_tip(
    repo: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str, tip: str
) -> None:
    code, out, err = run_cli(argv, capsys)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith("govern: error: ")
    assert message in lines[0]
    assert lines[1].startswith(tip)
    assert "Traceback" not in err


def test_exit_2_on_invalid_config_and_unknown_option(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "pyproject.toml").write_text(
        '[tool.govern]\npolicy = "strict"\ncolour = 1\n', encoding="utf-8"
    )
    code, _, err = run_cli(["audit"], capsys)
    assert code == 2
    assert "unknown [tool.govern] key(s) colour" in err
    code, _, err = run_cli(["audit", "--bogus"], capsys)
    assert code == 2
    assert "No such option" in err


def test_config_chooses_policy_and_annotations(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "pyproject.toml").write_text(
        '[tool.govern]\npolicy = "strict"\nfail-on = "never"\n'
        '[[tool.govern.annotations]]\npackage = "attrs"\nreason = "25.2.0 broke slots"\n'
        'issue = "python-attrs/attrs#1400"\nreview-by = 2027-01-31\n',
        encoding="utf-8",
    )
    code, out, _ = run_cli(["audit", "--format", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["policy"] == "strict"
    (attrs,) = [e for e in doc["exclusions"] if e["package"] == "attrs"]
    assert attrs["reason"] == "25.2.0 broke slots"
    assert attrs["links"] == ["https://github.com/python-attrs/attrs/issues/1400"]
    assert attrs["review_by"] == "2027-01-31"


def test_json_contract(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["audit", "-f", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "govern.audit/1"
    assert doc["sources"] == [
        {"path": "requirements.txt", "format": "requirements", "requirements": 3}
    ]
    (cupy,) = [e for e in doc["exclusions"] if e["package"] == "cupy-cuda13x"]
    for key in (
        "id",
        "package",
        "source",
        "line",
        "requirement",
        "marker",
        "clause",
        "kind",
        "reason",
        "links",
        "bad_versions",
        "owner",
        "review_by",
    ):
        assert key in cupy
    assert (cupy["source"], cupy["line"], cupy["clause"], cupy["kind"]) == (
        "requirements.txt",
        4,
        "<14.1.0",
        "cap",
    )
    assert cupy["bad_versions"] == ["14.1.0"]
    (finding,) = doc["findings"]
    assert set(finding) >= {"rule", "severity", "source", "line", "package", "exclusion", "message"}
    assert finding["exclusion"] in {e["id"] for e in doc["exclusions"]}
    assert doc["summary"] == {
        "sources": 1,
        "requirements": 3,
        "exclusions": 2,
        "findings": {"error": 0, "warning": 1, "info": 0},
    }


@pytest.mark.parametrize("fmt", ["sarif", "github", "markdown"])
def test_other_formats(repo: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code, out, _ = run_cli(["audit", "--format", fmt], capsys)
    assert code == 0
    if fmt == "sarif":
        log = json.loads(out)
        assert log["version"] == "2.1.0"
        assert log["runs"][0]["results"][0]["ruleId"] == "missing-reason"
    elif fmt == "github":
        assert out.startswith(
            "::warning file=requirements.txt,line=5,col=1,title=govern "
            "missing-reason::attrs !=25.2.0"
        )
    else:
        assert "| warning |" in out


def test_output_file(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["audit", "-f", "json", "-o", "report.json"], capsys)
    assert code == 0
    assert out == ""
    assert json.loads((repo / "report.json").read_text())["schema"] == "govern.audit/1"
    # The report is written: the process may end without its teardown (govern.cli.run).
    assert STATE.fast_exit


def _on_a_terminal(repo: Path, env: dict[str, str]) -> str:
    """Run ``govern audit`` with its stdout on a pseudo-terminal; return what it wrote."""
    import pty

    master, slave = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, "-m", "govern", "audit"],
            cwd=repo,
            env=env,
            stdout=slave,
            stderr=subprocess.DEVNULL,
            check=False,
            timeout=120,
        )
    finally:
        os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal is closed and drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return b"".join(chunks).decode()


def test_colour_only_on_a_terminal_and_never_with_no_color(repo: Path) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    base["TERM"] = "xterm"
    assert "\x1b[" in _on_a_terminal(repo, base)
    assert "\x1b[" not in _on_a_terminal(repo, {**base, "NO_COLOR": "1"})
    piped = subprocess.run(
        [sys.executable, "-m", "govern", "audit"],
        cwd=repo,
        env=base,
        capture_output=True,
        text=True,
        check=False,
    )
    assert piped.returncode == 0
    assert "\x1b[" not in piped.stdout
    forced = subprocess.run(
        [sys.executable, "-m", "govern", "audit"],
        cwd=repo,
        env={**base, "FORCE_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert "\x1b[" in forced.stdout


def test_audit_imports_no_database_http_or_web_code(repo: Path) -> None:
    probe = (
        "import sys\n"
        "from govern.cli import main\n"
        "try:\n"
        "    main(['audit', '--format', 'json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {'sqlalchemy', 'sqlmodel',"
        " 'alembic', 'httpx', 'httpcore', 'apscheduler', 'starlette', 'fastapi', 'rich',"
        " 'platformdirs', 'asyncio', 'ssl'})\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
        "online = sorted(m for m in sys.modules if m in {'govern.index.candidates',"
        " 'govern.index.simple', 'govern.index.parsing', 'govern.index.model',"
        " 'govern.policy.online'})\n"
        "print('ONLINE', online, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, check=True
    )
    assert "HEAVY []" in done.stderr
    assert "ONLINE []" in done.stderr  # the index code is for --online only


def test_the_process_exit_loses_no_output(tmp_path: Path) -> None:
    """Every byte of a large report reaches a pipe or a file, and the exit code survives."""
    lines = [f"pkg{i} != 1.{i}.0  # broken build, see #{i}" for i in range(3000)]
    (tmp_path / "requirements.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    piped = subprocess.run(
        [sys.executable, "-m", "govern", "audit", "--format", "json", "--fail-on", "never"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    document = json.loads(piped.stdout)
    assert len(document["exclusions"]) == 3000
    with (tmp_path / "requirements.txt").open("a", encoding="utf-8") as stream:
        stream.write("pkg=1.0\n")  # a parse error: exit 1
    failing = subprocess.run(
        [sys.executable, "-m", "govern", "audit", "-o", "report.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert failing.returncode == 1
    report = (tmp_path / "report.txt").read_text(encoding="utf-8")
    assert "pkg2999 != 1.2999.0" in report
    errored = subprocess.run(
        [sys.executable, "-m", "govern", "audit", "missing.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert errored.returncode == 2
    assert "govern: error:" in errored.stderr


def test_python_dash_m_and_version(repo: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "govern", "--version"], capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("govern ")


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=300)
    | st.lists(
        st.sampled_from(
            [
                "foo>=1",
                "!=1.0",
                "-r x.txt",
                "\\",
                "# c",
                "pkg=1.0",
                "-e .",
                "--hash=sha256:ab",
                "${VAR}",
                "[",
                "@",
                ";",
                " ",
                "\n",
                "===1",
                "<0",
                "~=1",
                "==1.*",
            ]
        ),
        max_size=30,
    ).map("".join)
)
def test_arbitrary_text_never_raises_out_of_audit(tmp_path: Path, text: str) -> None:
    (tmp_path / "requirements.txt").write_text(text, encoding="utf-8", errors="surrogatepass")
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
    report = audit(
        [tmp_path],
        config=Config(),
        policy=load_policy("strict"),
        options=AuditOptions(today=date(2026, 12, 2)),
    )
    for fmt in OutputFormat:
        assert isinstance(render(report, fmt), str)
    assert all(f.line >= 1 for f in report.findings)


def test_rules_lists_every_rule_with_the_policy_severity(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from govern.policy.rules import RULES

    code, out, _ = run_cli(["rules", "--policy", "strict"], capsys)
    assert code == 0
    assert out.startswith("policy strict:")
    for rule in RULES:
        assert f"\n{rule} " in out
    (line,) = [x for x in out.splitlines() if x.startswith("missing-review-by ")]
    assert " error " in line
    code, out, _ = run_cli(["rules"], capsys)
    (line,) = [x for x in out.splitlines() if x.startswith("missing-review-by ")]
    assert " off " in line


def test_an_internal_error_exits_2_with_a_tip(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(audit_cli, "audit_targets", broken)
    code, _, err = run_cli(["audit"], capsys)
    assert code == 2
    assert err.splitlines() == [
        "govern: internal error: RuntimeError: boom",
        "Tip: this is a bug in govern; rerun as `govern --debug ...` for the traceback"
        " and report it.",
    ]
    # --debug adds the traceback and keeps exit 2: an uncaught exception would exit 1,
    # which CI reads as findings.
    code, _, err = run_cli(["--debug", "audit"], capsys)
    assert code == 2
    assert err.startswith("Traceback (most recent call last):\n")
    assert err.splitlines()[-2:] == [
        "govern: internal error: RuntimeError: boom",
        "Tip: this is a bug in govern; report it with the traceback above.",
    ]
    assert "RuntimeError: boom\n" in err


def test_debug_keeps_exit_2_for_an_error_of_the_run(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["--debug", "audit", str(repo / "missing.txt")], capsys)
    assert code == 2
    assert "Traceback (most recent call last):" in err
    assert "SourceNotFound" in err
    assert err.splitlines()[-2].startswith("govern: error: ")
    assert "missing.txt does not exist" in err.splitlines()[-2]


def test_config_annotation_with_an_invalid_clause_is_exit_2(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".govern.toml").write_text(
        '[[annotations]]\npackage = "cupy"\nclause = "below 14"\nreason = "x"\n',
        encoding="utf-8",
    )
    code, _, err = run_cli(["audit"], capsys)
    assert code == 2
    assert "is not a version clause" in err


@pytest.mark.parametrize("target", ["missing-dir/x.json", "."])
def test_an_unwritable_output_is_exit_2_with_a_tip(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    target: str,
) -> None:
    (tmp_path / "requirements.txt").write_text(CUPY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["audit", "-f", "json", "-o", target], capsys)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("govern: error: cannot write --output ")
    assert lines[1] == "Tip: Check that the directory exists and is writable."
    assert "internal error" not in err


def test_audit_shows_bidi_controls_and_escapes_visibly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = bidi.repository(tmp_path / "repo")
    shown = {"human": "<U+202E>gnp.exe<U+202E>", "markdown": "&lt;U+202E&gt;gnp.exe"}
    for output_format, expected in shown.items():
        _, out, _ = run_cli(["audit", str(root), "--format", output_format], capsys)
        assert not set(out) & bidi.HIDDEN, output_format
        assert expected in out, output_format


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


def test_environment_is_untouched(tmp_path: Path) -> None:
    """The variables an audit expands from (``AuditOptions.environ``) stay out of os.environ."""
    (tmp_path / "requirements.txt").write_text("-r ${SECRETDIR}/x.txt\n", encoding="utf-8")
    before = dict(os.environ)
    run_audit([tmp_path], tmp_path, environ={"SECRETDIR": "hunter2"})
    assert dict(os.environ) == before
    assert "SECRETDIR" not in os.environ
