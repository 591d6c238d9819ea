"""``govern poll``'s own option parser (argparse, so a poll loads no Typer).

The poll itself runs against real indexes in ``tests/service/test_poll.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli

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
