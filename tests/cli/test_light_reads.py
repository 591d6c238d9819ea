"""The commands that only read answer without the ORM: ``govern status``, ``history`` and
``dashboard`` import neither SQLModel nor pydantic nor ``sqlalchemy.orm`` (each costs more to
import than the whole command does without it; bench/cli_latency.py measures the rest)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("sqlmodel", "pydantic", "sqlalchemy.orm", "httpx", "alembic")

# Runs one command in a fresh interpreter, then prints what it imported of HEAVY on stderr.
PROBE = """
import json, sys
from govern.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.stderr)
"""


def _run(args: list[str], cwd: Path, db: str) -> tuple[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOVERN_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *args, "--db", db],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


@pytest.fixture
def tracked(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text(
        "cupy-cuda13x<14.1.0  # 14.1.0 breaks the runtime image\n", encoding="utf-8"
    )
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOVERN_")}
    subprocess.run(
        [sys.executable, "-m", "govern", "track", str(repo), "--db", db],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return repo, db


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["status"], "cupy-cuda13x <14.1.0"),
        (["status", "--format", "json"], '"clause": "<14.1.0"'),
        (["history", "cupy-cuda13x"], "14.1.0 breaks the runtime image"),
        (["history", "cupy-cuda13x", "--format", "json"], '"schema": "govern.history/1"'),
        (["dashboard"], "Held: 1"),
        (["dashboard", "--format", "json"], '"held_total": 1'),
    ],
)
def test_a_read_command_answers_without_the_orm(
    tracked: tuple[Path, str], args: list[str], says: str
) -> None:
    repo, db = tracked
    out, imported = _run(args, repo, db)
    assert says in out
    assert imported == []
