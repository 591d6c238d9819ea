"""`govern audit` on hostile files: each is a finding or a one-line exit 2, never a crash.

Every case runs the real command line in-process (its error boundary included) and
checks the exit code, the rule or message, and that no traceback or "internal error"
is printed. Issue 14, item 2.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from clirun import run_cli

from govern.audit import MAX_INCLUDE_DEPTH
from govern.sources.reading import MAX_SOURCE_BYTES


class Hung(Exception):
    """Raised in a case that hangs (not an OSError: the code under test may catch those)."""


@pytest.fixture(autouse=True)
def _bounded_time() -> Iterator[None]:
    """A case that hangs (a blocking open of a FIFO) fails instead of stopping the suite."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise Hung("the audit hung")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(60)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case runs in its own directory, as a user in a checkout would."""
    monkeypatch.chdir(tmp_path)


def audit_json(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any], str]:
    """``govern audit --format json ARGV``: exit code, document, stderr (checked clean)."""
    code, out, err = run_cli(["audit", "--format", "json", *argv], capsys)
    assert_clean(out + err)
    assert code in (0, 1), err
    return code, json.loads(out), err


def assert_clean(output: str) -> None:
    assert "internal error" not in output
    assert "Traceback" not in output


def rules(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The findings by rule (the last one of each rule)."""
    return {f["rule"]: f for f in document["findings"]}


# -- versions ------------------------------------------------------------------------


def test_a_version_of_5000_digits_is_a_parse_error_with_its_caret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text(f"ok==1.0\nfoo!={'1' * 5000},<2\n", encoding="utf-8")
    code, document, _ = audit_json(["requirements.txt"], capsys)
    assert code == 1
    error = rules(document)["parse-error"]
    assert (error["line"], error["column"]) == (2, 6)
    assert error["message"].startswith("a version number of 5,000 digits is longer than")
    assert [e["package"] for e in document["exclusions"]] == ["ok"]


def test_huge_numbers_in_reasons_and_annotations_are_not_crashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    digits = "9" * 5000
    (tmp_path / "requirements.txt").write_text(
        f"# broken since 1.{digits}\nfoo<2  # govern: bad=1.{digits}\n", encoding="utf-8"
    )
    code, document, _ = audit_json(["requirements.txt"], capsys)
    assert code == 0
    assert rules(document)["invalid-annotation"]["message"].startswith("bad='1.999")


def test_a_huge_requires_python_in_pyproject_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "x"\nrequires-python = "<{"1" * 5000}"\n'
        f'dependencies = ["foo<{"2" * 5000}"]\n',
        encoding="utf-8",
    )
    code, document, _ = audit_json(["."], capsys)
    assert code == 1
    assert {f["line"] for f in document["findings"] if f["rule"] == "parse-error"} == {3, 4}


# -- paths ---------------------------------------------------------------------------


def test_an_include_path_too_long_for_the_os_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text(
        f"-r {'a' * 300}.txt\n-c {'b/' * 3000}c.txt\n", encoding="utf-8"
    )
    code, document, _ = audit_json(["requirements.txt"], capsys)
    assert code == 1
    found = [f for f in document["findings"] if f["rule"] == "include-not-found"]
    assert [f["line"] for f in found] == [1, 2]
    assert all("too long for the operating system" in f["message"] for f in found)
    assert all(len(f["message"]) < 400 for f in found)  # the path is cut short


def test_a_path_too_long_on_the_command_line_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["audit", "a" * 5000], capsys)
    assert code == 2
    assert_clean(out + err)
    first, tip = err.splitlines()
    assert first.startswith("govern: error: aaaa")
    assert first.endswith(
        "(5,000 characters) cannot be read: the path is too long for the operating system"
    )
    assert tip.startswith("Tip: ")


def test_a_nul_byte_in_an_include_path_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "requirements.txt").write_text("foo\n-r a\0b.txt\n", encoding="utf-8")
    code, document, _ = audit_json(["requirements.txt"], capsys)
    assert code == 1
    finding = rules(document)["include-not-found"]
    assert finding["line"] == 2
    assert finding["message"] == "a\\x00b.txt cannot be followed: the path holds a NUL byte"


# -- include chains ------------------------------------------------------------------


def test_a_requirements_chain_1000_deep_stops_at_the_depth_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(1000):
        (tmp_path / f"r{i}.txt").write_text(f"pkg{i}\n-r r{i + 1}.txt\n", encoding="utf-8")
    code, document, _ = audit_json(["r0.txt"], capsys)
    assert code == 1
    assert len(document["sources"]) == MAX_INCLUDE_DEPTH
    (deep,) = [f for f in document["findings"] if f["rule"] == "include-too-deep"]
    assert (deep["source"], deep["line"]) == (f"r{MAX_INCLUDE_DEPTH - 1}.txt", 2)
    assert deep["message"] == (
        f"r{MAX_INCLUDE_DEPTH}.txt is not followed: includes are followed "
        f"{MAX_INCLUDE_DEPTH} files deep"
    )


def test_a_constraints_chain_through_parent_directories_is_normalised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # d0/r.txt: -c ../d1/r.txt, d1/r.txt: -c ../d2/r.txt, ...: unnormalised, the path
    # grows by "../dN/" at each step until the OS refuses it.
    for i in range(400):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "r.txt").write_text(f"-c ../d{i + 1}/r.txt\n", encoding="utf-8")
    code, document, _ = audit_json(["d0/r.txt"], capsys)
    assert code == 1
    assert document["sources"][0]["path"] == "d0/r.txt"
    assert all(s["path"].count("/") == 1 for s in document["sources"])
    assert rules(document)["include-too-deep"]["message"].startswith("../d32/r.txt ")


def test_a_cycle_through_parent_directories_is_one_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in range(3):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "r.txt").write_text(
            f"-c ../d{(i + 1) % 3}/./r.txt\n", encoding="utf-8"
        )
    code, document, _ = audit_json(["d0/r.txt"], capsys)
    assert code == 1
    (cycle,) = [f for f in document["findings"] if f["rule"] == "include-cycle"]
    assert cycle["message"] == "include cycle: d0/r.txt -> d1/r.txt -> d2/r.txt -> d0/r.txt"


# -- TOML nested deeply ----------------------------------------------------------------


def test_a_pyproject_nested_900_deep_beside_the_audited_file_is_no_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(f"a = {'[' * 900}{']' * 900}\n", encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("foo\n", encoding="utf-8")
    code, document, _ = audit_json(["requirements.txt"], capsys)
    assert (code, document["summary"]["requirements"]) == (0, 1)
    code, document, _ = audit_json(["."], capsys)  # a source now: its error is a finding
    assert code == 1
    assert rules(document)["parse-error"]["source"] == "pyproject.toml"


def test_a_config_nested_900_deep_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".govern.toml").write_text(f"a = {'[' * 900}{']' * 900}\n", encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("foo\n", encoding="utf-8")
    code, out, err = run_cli(["audit", "requirements.txt"], capsys)
    assert code == 2
    assert_clean(out + err)
    assert err.splitlines()[0].endswith(".govern.toml: tables or arrays nested too deeply")


# -- encodings -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["undefined", "punycode", "no-such-codec"])
def test_a_coding_line_pip_cannot_use_is_a_finding_at_its_name(
    codec: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "requirements.txt").write_bytes(f"# -*- coding: {codec} -*-\nfoo==1.0\n".encode())
    code, document, _ = audit_json(["requirements.txt"], capsys)
    assert code == 1
    error = rules(document)["parse-error"]
    assert (error["line"], error["column"]) == (1, 15)
    assert error["message"].startswith(f"the coding line names '{codec}', which pip cannot use")
    assert [e["package"] for e in document["exclusions"]] == ["foo"]  # read as UTF-8


# -- files that are not files ------------------------------------------------------------


def test_a_named_link_to_proc_environ_is_refused_and_prints_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GOVERN_TEST_SECRET", "hunter2-s3cret")
    (tmp_path / "requirements.txt").symlink_to("/proc/self/environ")
    for extra in ([], ["--allow-outside-root"]):
        code, out, err = run_cli(["audit", *extra, "requirements.txt"], capsys)
        assert code == 1
        assert_clean(out + err)
        assert "hunter2-s3cret" not in out + err
        assert ("source-refused" if extra else "include-outside-root") in out
    code, document, _ = audit_json(["--allow-outside-root", "requirements.txt"], capsys)
    assert rules(document)["source-refused"]["message"] == (
        "requirements.txt is a system file under /proc, not a source; not read"
    )


def test_proc_named_directly_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, document, _ = audit_json(["/proc/self/environ"], capsys)
    assert code == 1
    assert rules(document)["source-refused"]["source"] == "/proc/self/environ"


def test_a_fifo_named_or_included_is_refused_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / "fifo.txt")
    (tmp_path / "requirements.txt").write_text("foo\n-r fifo.txt\n", encoding="utf-8")
    code, document, _ = audit_json(["fifo.txt"], capsys)
    assert code == 1
    assert rules(document)["source-refused"]["message"] == (
        "fifo.txt is a FIFO (named pipe), not a regular file; not read"
    )
    code, document, _ = audit_json(["requirements.txt"], capsys)
    assert code == 1
    assert rules(document)["source-refused"]["line"] == 2


def test_a_link_to_dev_zero_is_refused_even_when_outside_links_are_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    (tmp_path / "requirements.txt").write_text("-r zero.txt\n", encoding="utf-8")
    code, document, _ = audit_json(["--allow-outside-root", "requirements.txt"], capsys)
    assert code == 1
    assert rules(document)["source-refused"]["message"] == (
        "zero.txt is a system file under /dev, not a source; not read"
    )


def test_a_file_over_the_size_cap_is_one_finding_not_a_partial_parse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (tmp_path / "requirements.txt").open("wb") as handle:
        handle.write(b"foo<2\n")
        handle.truncate(MAX_SOURCE_BYTES + 1)  # sparse: cheap to make
    code, document, _ = audit_json(["requirements.txt"], capsys)
    assert code == 1
    assert [f["rule"] for f in document["findings"]] == ["source-too-large"]
    assert document["findings"][0]["message"] == (
        "requirements.txt is larger than 16 MiB; not read"
    )
    assert document["exclusions"] == []


@pytest.mark.parametrize("name", [".govern.toml", "pyproject.toml"])
def test_a_config_file_that_is_a_fifo_does_not_block(
    name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    os.mkfifo(tmp_path / name)
    (tmp_path / "requirements.txt").write_text("foo\n", encoding="utf-8")
    code, out, err = run_cli(["audit", "requirements.txt"], capsys)
    assert_clean(out + err)
    if name == ".govern.toml":
        assert code == 2
        assert err.splitlines()[0].endswith(
            ".govern.toml is a FIFO (named pipe), not a regular file; not read"
        )
    else:  # a pyproject.toml that cannot be read holds no configuration
        assert code == 0


def test_a_config_link_to_proc_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".govern.toml").symlink_to("/proc/self/environ")
    (tmp_path / "requirements.txt").write_text("foo\n", encoding="utf-8")
    code, out, err = run_cli(["audit", "requirements.txt"], capsys)
    assert code == 2
    assert_clean(out + err)
    assert "outside the audited directory" in err.splitlines()[0]
    code, out, err = run_cli(["audit", "--config", "/proc/self/environ", "."], capsys)
    assert code == 2
    assert "system file under /proc" in err.splitlines()[0]


def test_a_git_pointer_that_is_a_fifo_does_not_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / ".git")
    (tmp_path / "requirements.txt").write_text("foo<2  # 2.0 broke us\n", encoding="utf-8")
    code, document, _ = audit_json(["requirements.txt"], capsys)
    assert code == 0
    assert len(document["exclusions"]) == 1
