"""``govern audit --db``: a lock that pins a version another tracked repository knows is bad
is a finding (issue 25: 14.1.0 found bad in one repository is bad in the next one's lock)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clirun import run_cli
from reminderworld import NOW
from sqlmodel import select

from govern.config import Config
from govern.exclusions.states import CandidateStatus
from govern.service.track import TrackOptions, track
from govern.store.db import Store
from govern.store.models import Candidate, StoredExclusion, StoredRelease
from govern.store.queries import known_bad

UV_LOCK = """\
version = 1
revision = 3
requires-python = ">=3.11"

[[package]]
name = "app"
version = "0.1"
source = { virtual = "." }

[[package]]
name = "cupy-demo"
version = "14.1.0"
source = { registry = "https://example.invalid/simple" }
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def world(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """A tracked repository that knows 14.1.0 is bad, and another one whose lock holds it."""
    knows = _write(
        tmp_path / "knows",
        {
            "requirements.txt": (
                '# govern: reason="14.1.0 imports pytest" bad=14.1.0\ncupy-demo<14.1.0\n'
            ),
            ".govern.toml": 'repository = "acme/knows"\n',
        },
    )
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    code, _, err = run_cli(["track", str(knows), "--db", db], capsys)
    assert code == 0, err
    holds = _write(
        tmp_path / "holds",
        {
            "pyproject.toml": '[project]\nname = "app"\nversion = "0.1"\n'
            'dependencies = ["cupy-demo"]\n',
            "uv.lock": UV_LOCK,
        },
    )
    return holds, db


def test_only_the_store_knows_and_with_db_the_lock_is_a_finding(
    world: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    holds, db = world
    code, out, _ = run_cli(["audit", str(holds)], capsys)
    assert code == 0, out  # on its own the repository knows nothing against 14.1.0
    assert "lock-holds-known-bad" not in out
    code, out, _ = run_cli(["audit", str(holds), "--db", db], capsys)
    assert code == 1, out
    assert "uv.lock:12:" in out
    assert "lock-holds-known-bad" in out
    assert "bad= in acme/knows requirements.txt" in out


def test_a_failed_verification_anywhere_makes_a_version_known_bad(
    database_url: str, tmp_path: Path
) -> None:
    with Store(database_url) as store:
        repo = _write(tmp_path / "r", {"requirements.txt": "cupy-demo<14.1.0  # imports pytest\n"})
        track(store, repo, None, config=Config(repository="acme/r"), options=TrackOptions(now=NOW))
        with store.session(write=True) as session:
            row = session.exec(select(StoredExclusion)).one()
            release = StoredRelease(package="cupy-demo", version="14.1.2", first_seen_at=NOW)
            session.add(release)
            session.flush()
            session.add(
                Candidate(
                    exclusion_id=row.id or 0,
                    release_id=release.id or 0,
                    status=CandidateStatus.BAD,
                    found_at=NOW,
                )
            )
        with store.connection() as conn:
            found = known_bad(conn)
    assert found["cupy-demo"]["14.1.2"] == "found bad by a verification in acme/r"


def test_tracking_the_repository_whose_lock_holds_it_says_so(
    world: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    holds, db = world
    code, _, err = run_cli(["track", str(holds), "--db", db], capsys)
    assert code == 0
    assert (
        "note: uv.lock:12: lock-holds-known-bad: uv.lock pins cupy-demo 14.1.0, which is known "
        "bad (bad= in acme/knows requirements.txt)"
    ) in err
    code, out, _ = run_cli(["status", "--db", db, "--format", "json"], capsys)
    assert [e["source"] for e in json.loads(out)["exclusions"]] == ["requirements.txt"]
