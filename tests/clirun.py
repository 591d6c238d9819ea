"""Running ``govern`` in-process from a test: the exit status and what it printed."""

from __future__ import annotations

import pytest

from govern.cli import main


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``govern ARGV``: (exit status, stdout, stderr)."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err
