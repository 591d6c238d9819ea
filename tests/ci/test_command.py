"""The command provider and the evidence rules, with real processes.

The isolated path (a fresh venv, pip from a local index) runs end to end in
``tests/service/test_verify_e2e.py``; here the command itself: templates, the shell only
when asked (and quoted then), time-outs that kill the whole process group, bounded and
redacted logs, and what counts as evidence.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest
from packaging.version import Version

from govern.ci.base import Conclusion, RunStatus, Trial, excerpt, find_evidence, judge_evidence
from govern.ci.command import Command, from_config
from govern.errors import ConfigError

TRIAL = Trial(package="demo", version=Version("1.1"), profile="x86", correlation_id="govern-1-1")
PY = sys.executable


def _run(provider: Command, trial: Trial = TRIAL) -> RunStatus:
    return asyncio.run(provider.start(trial)).status


def _say(text: str) -> list[str]:
    return [PY, "-c", f"print({text!r})"]


def test_evidence_in_the_output_decides_a_green_run() -> None:
    status = _run(Command("local", command=_say("govern-verify: installed demo==1.1")))
    assert (status.conclusion, status.installed) == (Conclusion.PASSED, "1.1")
    status = _run(Command("local", command=_say("all tests passed")))
    assert status.conclusion is Conclusion.ERRORED
    assert "no evidence that demo==1.1 was installed" in status.detail
    status = _run(Command("local", command=_say("Successfully installed demo-1.0 six-1.16.0")))
    assert status.conclusion is Conclusion.ERRORED
    assert "installed demo 1.0, not 1.1" in status.detail


def test_a_red_run_with_evidence_is_a_failure() -> None:
    script = "print('govern-verify: installed demo==1.1'); raise SystemExit(3)"
    status = _run(Command("local", command=[PY, "-c", script]))
    assert status.conclusion is Conclusion.FAILED
    assert "exit status 3" in status.detail
    # Without evidence a red run says nothing about the candidate: errored.
    status = _run(Command("local", command=[PY, "-c", "raise SystemExit(3)"]))
    assert status.conclusion is Conclusion.ERRORED


def test_placeholders_fill_whole_arguments_and_the_environment(tmp_path: Path) -> None:
    out = tmp_path / "args.txt"
    script = (
        "import os, sys; open(sys.argv[1], 'w').write('|'.join(sys.argv[2:] + "
        "[os.environ['GOVERN_VERSION'], open(os.environ['GOVERN_CONSTRAINTS']).read()]))"
    )
    command = [PY, "-c", script, str(out), "{package}", "{version}", "{requirement}", "{profile}"]
    _run(Command("local", command=command))
    assert out.read_text() == "demo|1.1|demo==1.1|x86|1.1|demo==1.1\n"


def test_unknown_placeholders_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"unknown placeholder \{verison\}"):
        Command("local", command=["echo", "{verison}"])
    with pytest.raises(ConfigError, match="not a valid template"):
        Command("local", command=["echo", "{package"])


def test_a_shell_runs_only_when_asked_and_gets_quoted_values(tmp_path: Path) -> None:
    hostile = tmp_path / "a dir; touch PWNED $(touch PWNED2)"
    hostile.mkdir()
    python = hostile / "python"
    python.symlink_to(PY)
    workdir = tmp_path / "work"
    workdir.mkdir()
    shell = Command(  # noqa: S604 -- the point: a shell, asked for, with quoted values
        "sh",
        command=["{python} -c 'print(\"govern-verify: installed demo==1.1\")'"],
        shell=True,
        python=str(python),
        workdir=workdir,
    )
    assert _run(shell).conclusion is Conclusion.PASSED
    plain = Command(
        "argv",
        command=["{python}", "-c", "print('govern-verify: installed demo==1.1')"],
        python=str(python),
        workdir=workdir,
    )
    assert _run(plain).conclusion is Conclusion.PASSED
    assert sorted(os.listdir(workdir)) == []  # nothing was ever run by a shell's parsing
    assert not (tmp_path / "PWNED").exists()


def test_a_time_out_kills_the_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time; "
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        f"open({str(pid_file)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    started = time.monotonic()
    status = _run(Command("local", command=[PY, "-c", script], timeout=1.5))
    assert time.monotonic() - started < 15
    assert status.conclusion is Conclusion.TIMED_OUT
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{child}").exists():
        stat = Path(f"/proc/{child}/stat").read_text() if Path(f"/proc/{child}").exists() else ""
        if " Z " in stat:  # a zombie is dead, waiting for its (reparented) parent
            break
        time.sleep(0.05)
    alive = Path(f"/proc/{child}").exists() and " Z " not in Path(f"/proc/{child}/stat").read_text()
    assert not alive


def test_the_log_is_bounded_and_redacted() -> None:
    script = (
        "import sys; sys.stdout.write('x' * 3_000_000 + '\\n'); "
        "print('from https://ci:s3cretpass@pkgs.example.org/simple'); "
        "print('govern-verify: installed demo==1.1')"
    )
    status = _run(Command("local", command=[PY, "-c", script], log_limit=64 * 1024))
    assert status.conclusion is Conclusion.PASSED
    assert status.log_excerpt is not None
    assert len(status.log_excerpt) < 20_000
    assert "characters before" in status.log_excerpt
    assert "s3cretpass" not in status.log_excerpt
    assert "pkgs.example.org/simple" in status.log_excerpt


def test_nothing_to_run_is_an_error_not_a_pass() -> None:
    status = _run(Command("local"))
    assert status.conclusion is Conclusion.ERRORED
    assert "nothing to run" in status.detail


def test_a_missing_program_is_errored() -> None:
    status = _run(Command("local", command=["/nonexistent/program"]))
    assert status.conclusion is Conclusion.ERRORED
    assert status.log_excerpt is not None
    assert "cannot run" in status.log_excerpt


def test_from_config_checks_its_keys(tmp_path: Path) -> None:
    made = from_config(
        "local",
        {"provider": "command", "command": "pytest -x tests/{package}", "timeout": 60},
        root=tmp_path,
    )
    assert made.command == ("pytest", "-x", "tests/{package}")
    assert made.timeout == 60
    assert made.workdir == tmp_path
    for options, message in (
        ({"provider": "command", "comand": "x"}, "unknown key"),
        ({"provider": "command", "command": 3}, "list of arguments"),
        ({"provider": "command", "timeout": "1h"}, "positive number"),
        ({"provider": "command", "isolated": "yes"}, "true or false"),
        ({"provider": "command", "command": ["a", "b"], "shell": True}, "one command"),
    ):
        with pytest.raises(ConfigError, match=message):
            from_config("local", options, root=tmp_path)


@pytest.mark.parametrize(
    ("log", "found"),
    [
        ("govern-verify: installed demo==1.1\n", "1.1"),
        ("2026-06-02T10:00:00.1234567Z govern-verify: installed Demo==1.1.0\n", "1.1.0"),
        ("Successfully installed six-1.16 demo-1.1\n", "1.1"),
        (" + demo==1.1\n", "1.1"),
        ("Successfully installed demo-1.0\nSuccessfully installed demo-1.1\n", "1.1"),
        ("govern-verify: installed demo==1.1; rm -rf /\n", None),
        ("govern-verify: installed other==1.1\n", None),
        ("installed demo 1.1\n", None),
    ],
)
def test_find_evidence(log: str, found: str | None) -> None:
    assert find_evidence(log, "demo") == found


def test_judge_evidence_and_excerpt() -> None:
    assert judge_evidence(True, TRIAL, "1.1.0", "ok") == (Conclusion.PASSED, "ok")
    assert judge_evidence(False, TRIAL, "1.1", "exit 1")[0] is Conclusion.FAILED
    assert judge_evidence(True, TRIAL, None, "ok")[0] is Conclusion.ERRORED
    text = "".join(f"line {i}\n" for i in range(10_000))
    cut = excerpt(text, 1000)
    assert cut.endswith("line 9999\n")
    assert len(cut) < 1100
    assert cut.splitlines()[1].startswith("line ")  # cut at a line start


# -- regressions from the review of this provider ------------------------------------------


def test_credentials_stay_out_of_the_check_and_its_log() -> None:
    environ = {**os.environ, "GITHUB_TOKEN": "ghp_SECRET123456", "MY_API_KEY": "k3y-value-77"}
    script = (
        "import os; print('seen', os.environ.get('GITHUB_TOKEN'), os.environ.get('MY_API_KEY'));"
        "print('echo ghp_SECRET123456 k3y-value-77');"
        "print('govern-verify: installed demo==1.1')"
    )
    status = _run(Command("local", command=[PY, "-c", script], environ=environ))
    assert status.conclusion is Conclusion.PASSED
    assert status.log_excerpt is not None
    assert "seen None None" in status.log_excerpt
    assert "ghp_SECRET123456" not in status.log_excerpt
    assert "k3y-value-77" not in status.log_excerpt


def test_the_echoed_command_is_not_evidence() -> None:
    command = ["set -e\nfalse\necho govern-verify: installed {requirement}"]
    status = _run(Command("sh", command=command, shell=True))  # noqa: S604 -- the point
    assert status.conclusion is Conclusion.ERRORED  # never FAILED: nothing was installed
    assert "no evidence" in status.detail


def test_a_check_that_cannot_start_is_no_verdict() -> None:
    say = _say("govern-verify: installed demo==1.1")
    trial = Trial(
        package="demo",
        version=Version("1.1"),
        profile="x86",
        correlation_id="govern-1-1",
        reproducer="/nonexistent/pytest -k demo",
    )
    status = _run(Command("local", command=say), trial)
    assert status.conclusion is Conclusion.ERRORED
    assert "could not be run" in status.detail
    missing = _run(Command("sh", command=["no-such-program-xyz"], shell=True))  # noqa: S604
    assert missing.conclusion is Conclusion.ERRORED


def test_a_leftover_background_process_neither_blocks_nor_survives(tmp_path: Path) -> None:
    pid_file = tmp_path / "bg.pid"
    command = [f"sleep 37 & echo $! > {pid_file}; echo govern-verify: installed demo==1.1"]
    started = time.monotonic()
    status = _run(Command("sh", command=command, shell=True, timeout=20))  # noqa: S604
    assert time.monotonic() - started < 10
    assert status.conclusion is Conclusion.PASSED
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat")
        if not stat.exists() or " Z " in stat.read_text():
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the background sleep survived the run")


def test_an_isolated_run_without_an_index_never_guesses_one() -> None:
    status = _run(Command("local", isolated=True))
    assert status.conclusion is Conclusion.ERRORED
    assert "no index is configured" in status.detail
