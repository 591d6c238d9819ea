"""``govern poll``'s own option parser (argparse, so a poll loads no Typer).

The poll itself runs against real indexes in ``tests/service/test_poll.py``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from fakes.index import FaultServer, Redirect, Reply

from govern.cli import options as track_cli
from govern.cli import poll as poll_cli
from govern.cli.output import ViewFormat


def _action(option: str) -> argparse.Action:
    parser = poll_cli.parser()
    for action in parser._actions:
        if option in action.option_strings:
            return action
    raise AssertionError(f"govern poll has no {option}")


def _typer_help(annotated: Any) -> str:
    return str(annotated.__metadata__[0].help)


@pytest.mark.parametrize(
    ("option", "shared"),
    [
        ("--db", track_cli.DbOption),
        ("--config", track_cli.ConfigOption),
        ("--index-url", track_cli.IndexOption),
        ("--format", track_cli.FormatOption),
    ],
)
def test_the_shared_options_read_as_in_every_other_command(option: str, shared: Any) -> None:
    """The same names and help as the Typer options of ``verify``, ``track``, ``serve``."""
    action = _action(option)
    info = shared.__metadata__[0]
    # Typer reads a leading "--name" given as the first argument as a declaration.
    names = {*info.param_decls, *([info.default] if isinstance(info.default, str) else [])}
    assert names == set(action.option_strings)
    assert _typer_help(shared).rstrip(".") in (action.help or "")


def test_options_parse_into_the_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_poll(**kwargs: Any) -> Any:
        seen.update(kwargs)
        from govern.service.poll import PollResult

        return PollResult(projects=2)

    monkeypatch.setattr(poll_cli, "poll", fake_poll)
    with pytest.raises(SystemExit) as exited:
        poll_cli.poll_main(
            [
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
            ]
        )
    assert exited.value.code == 0
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
    assert "--index-url URL" in out
    assert "--format {human,json}" in out
    code, _, err = run_cli(["poll", "--bogus"], capsys)
    assert code == 2
    assert "govern poll: error: unrecognized arguments: --bogus" in err
    code, _, err = run_cli(["poll", "--pack", "numpy"], capsys)  # no abbreviations
    assert code == 2
    assert "unrecognized arguments: --pack" in err
    code, _, err = run_cli(["poll", "--format", "yaml"], capsys)
    assert code == 2
    assert "invalid ViewFormat value" in err or "invalid choice" in err


def test_a_global_option_first_goes_through_typer_to_the_same_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(["--debug", "poll", "--help"], capsys)
    assert code == 0
    assert out.startswith("usage: govern poll")
    code, out, _ = run_cli(["--help"], capsys)
    assert code == 0
    assert "poll" in out
    assert "Ask the package index about every tracked exclusion" in out


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
    _, db = _tracked(tmp_path, monkeypatch, capsys, "demo!=1.0  # broken\n")
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
