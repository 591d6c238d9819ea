"""``govern poll``'s options, help and usage errors (the poll itself runs against real
indexes in ``tests/service/test_poll.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

from fakes.index import FaultServer, Redirect, Reply
from govern.cli import STATE
from govern.cli import poll as poll_cli
from govern.cli.output import ViewFormat
from govern.service.poll import PollResult


def test_options_parse_into_the_poll(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, Any] = {}

    def fake_poll(**kwargs: Any) -> Any:
        seen.update(kwargs)
        return PollResult(projects=2)

    monkeypatch.setattr(poll_cli, "poll", fake_poll)
    code, out, err = run_cli(
        [
            "poll",
            "--package",
            "CuPy_Cuda13x",
            "--package",
            "numpy",
            "--profile",
            "cuda13",
            "--index-url",
            "http://127.0.0.1:1/simple",
            "--config",
            "x.toml",
            "--db",
            "sqlite:////tmp/g.db",
            "-f",
            "json",
            "--refresh",
        ],
        capsys,
    )
    assert code == 0, err
    assert json.loads(out)["schema"] == "govern.poll/1"
    assert seen == {
        "packages": ["CuPy_Cuda13x", "numpy"],
        "profiles": ["cuda13"],
        "index_url": "http://127.0.0.1:1/simple",
        "config_file": Path("x.toml"),
        "db": "sqlite:////tmp/g.db",
        "fmt": ViewFormat.JSON,
        "refresh": True,
    }


def test_help_and_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["poll", "--help"], capsys)
    assert code == 0
    assert "Ask the package index about every tracked exclusion" in out
    for option in ("--package NAME", "--profile NAME", "--refresh", "--index-url", "--db"):
        assert option in out
    assert "--format <human|json>" in out
    code, _, err = run_cli(["poll", "--bogus"], capsys)
    assert code == 2
    assert "No such option: --bogus" in err
    code, _, err = run_cli(["poll", "--pack", "numpy"], capsys)  # no abbreviations
    assert code == 2
    assert "No such option: --pack" in err
    code, _, err = run_cli(["poll", "--format", "yaml"], capsys)
    assert code == 2
    assert "'yaml' is not one of 'human', 'json'" in err


def test_a_global_option_first_reaches_the_same_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(["--debug", "poll", "--help"], capsys)
    assert code == 0
    assert out.startswith("Usage: govern poll")
    code, out, _ = run_cli(["--help"], capsys)
    assert code == 0
    assert "Ask the package index about every tracked exclusion" in out


def test_debug_keeps_exit_2_when_the_poll_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'no-such-folder' / 'govern.db'}"
    code, _, err = run_cli(["--debug", "poll", "--db", db], capsys)
    assert code == 2  # not 1, which CI reads as findings
    assert err.startswith("Traceback (most recent call last):\n")
    message, tip = err.splitlines()[-2:]
    assert message.startswith("govern: error: ")
    assert tip.startswith("Tip: ")


# -- end to end, against servers as real ones answer -----------------------------------------


def _real_like_page(serial: str) -> bytes:
    """A page as the index pip uses answers: ``_last-serial`` a string, PEP 700 fields."""
    return json.dumps(
        {
            "meta": {"api-version": "1.1", "_last-serial": serial},
            "name": "demo",
            "versions": ["1.0", "1.1"],
            "files": [
                {
                    "filename": f"demo-{v}-py3-none-any.whl",
                    "url": f"https://files.test/demo-{v}-py3-none-any.whl",
                    "hashes": {"sha256": "00" * 32},
                    "requires-python": ">=3.8",
                    "size": 1234,
                    "upload-time": "2026-01-02T03:04:05.123456Z",
                    "yanked": False,
                    "core-metadata": {"sha256": "11" * 32},
                    "data-dist-info-metadata": {"sha256": "11" * 32},
                    "provenance": None,
                }
                for v in ("1.0", "1.1")
            ],
        }
    ).encode()


def _tracked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], line: str
) -> tuple[Path, str]:
    """A repository whose requirements file is ``line``, tracked in a fresh SQLite store."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "requirements.txt").write_text(line, encoding="utf-8")
    monkeypatch.chdir(root)
    db = f"sqlite:///{tmp_path / 'g.db'}"
    assert run_cli(["track", str(root), "--db", db], capsys)[0] == 0
    return root, db


def test_poll_works_against_a_server_without_validators_or_freshness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = _tracked(tmp_path, monkeypatch, capsys, "demo<1.0  # broken\n")
    with FaultServer() as server:  # no ETag, Last-Modified, Cache-Control or Expires
        path = server.script("demo", Reply(body=_real_like_page("40603035")))
        polls = [run_cli(["poll", "--db", db, "--index-url", server.url, "-f", "json"], capsys)]
        polls.append(run_cli(["poll", "--db", db, "--index-url", server.url, "-f", "json"], capsys))
        sent = server.headers[path]
    for code, out, err in polls:
        assert code == 0, err
        report = json.loads(out)
        assert (report["fetched"], report["failed"], report["failures"]) == (1, 0, [])
    # Nothing to revalidate with and nothing saying the page stays fresh: asked each time.
    assert len(sent) == 2
    assert not STATE.fast_exit  # a poll ends as any process does (no os._exit)
    assert all("if-none-match" not in h and "if-modified-since" not in h for h in sent)


def test_a_redirect_to_a_host_nobody_configured_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = _tracked(tmp_path, monkeypatch, capsys, "demo<1.1  # 1.1 is broken\n")
    with FaultServer() as index, FaultServer() as elsewhere:
        other = elsewhere.port
        # The other host offers 1.2, which would be a candidate for the cap.
        elsewhere.script("demo", Reply(body=_real_like_page("7").replace(b"1.1", b"1.2")))
        index.script("demo", Redirect(f"http://127.1:{elsewhere.port}/simple/demo/"))
        code, out, _ = run_cli(["poll", "--db", db, "--index-url", index.url, "-f", "json"], capsys)
        assert elsewhere.count(elsewhere.path("demo")) == 0
    assert code == 2  # the one project asked could not be read: the poll did not happen
    report = json.loads(out)
    assert (report["fetched"], report["candidates_found"], report["found"]) == (0, 0, [])
    (failure,) = report["failures"]
    assert failure["package"] == "demo"
    assert failure["reason"].startswith(
        f"HTTP 302: redirected to http://127.1:{other}/simple/demo/"
    )


def test_a_redirect_to_an_origin_in_trusted_redirects_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, db = _tracked(tmp_path, monkeypatch, capsys, "demo<1.1  # 1.1 is broken\n")
    with FaultServer() as index, FaultServer() as mirror:
        (root / ".govern.toml").write_text(
            f'trusted-redirects = ["{mirror.base}"]\n', encoding="utf-8"
        )
        mirror.script("demo", Reply(body=_real_like_page("7")))
        index.script("demo", Redirect(f"{mirror.base}/simple/demo/"))
        code, out, err = run_cli(
            ["poll", "--db", db, "--index-url", index.url, "-f", "json"], capsys
        )
        assert mirror.count(mirror.path("demo")) == 1
    assert code == 0, err
    report = json.loads(out)
    assert (report["fetched"], report["failures"]) == (1, [])
