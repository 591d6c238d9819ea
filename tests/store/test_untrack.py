"""``govern untrack``: every row of one repository goes, on SQLite and PostgreSQL, and none
of another's; two repositories that went through the whole loop (govern demo's), so that
every table holds rows of both."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from sqlmodel import Session, col, select

from govern.demo.index import LocalIndex
from govern.demo.world import BROKEN, Workspace, run_loop
from govern.store.db import Store
from govern.store.models import (
    Candidate,
    Event,
    Outbox,
    Proposal,
    Repository,
    StoredAnnotation,
    StoredExclusion,
    StoredSource,
    Verification,
)

FIRST, SECOND = "demo/first", "demo/second"


def _loop(root: Path, name: str, url: str, stack: contextlib.ExitStack) -> None:
    index = stack.enter_context(LocalIndex(root / "index"))
    workspace = Workspace(root, index, name=name)
    workspace.publish("14.0.1")
    workspace.publish(BROKEN)
    workspace.create_repository()
    with Store(url) as store:
        outcome = run_loop(workspace, store, lambda _line: None)
    assert outcome.problems == []
    assert outcome.line == f"!={BROKEN}"


@pytest.fixture
def two(database_url: str, tmp_path: Path) -> Iterator[str]:
    with contextlib.ExitStack() as stack:
        _loop(tmp_path / "a", FIRST, database_url, stack)
        _loop(tmp_path / "b", SECOND, database_url, stack)
        yield database_url


def _ids(session: Session, column: Any, *where: Any) -> set[int]:
    return set(session.exec(select(column).where(*where)).all())


def _of(session: Session, name: str) -> dict[str, set[int]]:
    """Every row that belongs to repository ``name``, by table, found by its links."""
    repo = session.exec(select(Repository).where(col(Repository.name) == name)).one()
    mine = col(StoredExclusion.repository_id) == repo.id
    rows = session.exec(select(StoredExclusion).where(mine))
    keys = {e.id: e.key for e in rows if e.id is not None}
    exclusions = set(keys)
    candidates = _ids(session, Candidate.id, col(Candidate.exclusion_id).in_(exclusions))
    proposals = _ids(session, Proposal.id, col(Proposal.exclusion_id).in_(exclusions))
    outbox = {
        row.id
        for row in session.exec(select(Outbox))
        if row.proposal_id in proposals or any(f":{k}:" in row.dedupe_key for k in keys.values())
    }
    return {
        "repository": _ids(session, Repository.id, col(Repository.id) == repo.id),
        "source": _ids(session, StoredSource.id, col(StoredSource.repository_id) == repo.id),
        "exclusion": exclusions,
        "annotation": _ids(
            session, StoredAnnotation.id, col(StoredAnnotation.exclusion_id).in_(exclusions)
        ),
        "event": _ids(session, Event.id, col(Event.exclusion_id).in_(exclusions)),
        "candidate": candidates,
        "verification": _ids(
            session, Verification.id, col(Verification.candidate_id).in_(candidates)
        ),
        "proposal": proposals,
        "outbox": {i for i in outbox if i is not None},
    }


# Every table with a foreign-key path to a repository (govern/store/models.py).
TABLES = {
    "repository": Repository.id,
    "source": StoredSource.id,
    "exclusion": StoredExclusion.id,
    "annotation": StoredAnnotation.id,
    "event": Event.id,
    "candidate": Candidate.id,
    "verification": Verification.id,
    "proposal": Proposal.id,
    "outbox": Outbox.id,
}


def test_untrack_forgets_one_repository_and_keeps_the_other(
    two: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Store(two) as store, store.session() as session:
        first, second = _of(session, FIRST), _of(session, SECOND)
        releases_before = session.exec(select(Candidate.release_id)).all()
    for table, ids in (*first.items(), *second.items()):
        assert ids, f"{table} holds no row of a repository: the test would prove nothing"

    code, out, err = run_cli(["untrack", FIRST, "--yes", "--db", two], capsys)
    assert code == 0, err
    assert f"forgot {FIRST}" in out
    assert f"{len(first['exclusion'])} exclusions" in out
    assert f"{len(first['event'])} events" in out

    with Store(two) as store, store.session() as session:
        for table, column in TABLES.items():
            # What is left is exactly the other repository's rows.
            assert _ids(session, column) == second[table], table
        assert _of(session, SECOND) == second
        assert set(session.exec(select(Candidate.release_id)).all()) <= set(releases_before)

    # Gone is gone: a second untrack says so.
    code, _out, err = run_cli(["untrack", FIRST, "--yes", "--db", two], capsys)
    assert code == 2
    assert f"no repository named '{FIRST}' is tracked" in err


def _tracked_app(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """A store tracking one repository of one exclusion: its URL and the repository's name."""
    repo = tmp_path / "app"
    repo.mkdir()
    (repo / "requirements.txt").write_text("demo<2  # breaks the app\n", encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert run_cli(["track", str(repo), "--db", db], capsys)[0] == 0
    with Store(db) as store, store.session() as session:
        (name,) = session.exec(select(Repository.name)).all()
    return db, name


def test_untrack_asks_first_and_needs_a_terminal_to_ask(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, name = _tracked_app(tmp_path, capsys)

    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, _out, err = run_cli(["untrack", name, "--db", db], capsys)
    assert code == 2
    assert "no terminal to ask on" in err
    assert "--yes" in err
    with Store(db) as store, store.session() as session:
        assert len(session.exec(select(StoredExclusion)).all()) == 1  # nothing deleted


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_untrack_asks_and_a_no_keeps_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, name = _tracked_app(tmp_path, capsys)
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    code, out, _err = run_cli(["untrack", name, "--db", db], capsys)
    assert code == 1  # aborted
    assert f"Forget {name} and every row of it" in out
    with Store(db) as store, store.session() as session:
        assert len(session.exec(select(StoredExclusion)).all()) == 1
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    code, out, err = run_cli(["untrack", name, "--db", db], capsys)
    assert code == 0, err
    assert "1 exclusions, 0 lock pins, 1 sources" in out
    with Store(db) as store, store.session() as session:
        assert session.exec(select(StoredExclusion)).all() == []
        assert session.exec(select(Repository)).all() == []
