"""``govern track --history`` by diffs: the same events as re-reading every version, and a
line that does not parse keeps its own exclusions while every other line syncs.

The histories are generated (seeded) in real git repositories: adds, removals, edits,
reason blocks and their changes, unparsable lines that come and go, blank lines,
options, duplicated clauses, renames and the odd line that forces a whole re-read.
"""

from __future__ import annotations

import random
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from gitrepo import Repo
from sqlmodel import col, select

from govern.config import Config
from govern.service.track import TrackOptions, TrackResult, track
from govern.store.db import Store
from govern.store.models import Event, Repository, StoredExclusion

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PACKAGES = ("numpy", "pytz", "sushy", "lesscpy", "cupy", "attrs", "boto3", "botocore", "six")
CLAUSES = ("!=1.2.0", "<3", "<=2.1", "==1.0", "===2.0.1", "~=1.4", ">=1", "!=1.3.*", "<2,!=1.5")
BAD = ("pytz>=2010h", "lesscpy>=0.9j", "sushy!=1.9.0<3.0.0", "numpy>=", "?? what")
REASONS = (
    "# NOTE(ada): {p} 1.2.0 broke the gate, see https://github.com/x/{p}/issues/{n}",
    "# {p} must stay below 3 until the API regression is fixed (#{n})",
    "# govern: owner=@team-{n} review-by=2027-01-01",
    "# testing",
    "# via -r base.txt",
    "# ^govern: owner=@below-{n}",
)


@pytest.fixture
def store(database_url: str) -> Any:
    with Store(database_url) as opened:
        yield opened


def _requirement(rng: random.Random) -> str:
    line = rng.choice(PACKAGES) + rng.choice(CLAUSES)
    if rng.random() < 0.15:
        line += '; python_version < "3.12"'
    if rng.random() < 0.2:
        line += f"  # see https://github.com/x/y/issues/{rng.randint(1, 99)}"
    return line


def _edit(rng: random.Random, lines: list[str]) -> None:
    """One random change to the file's lines."""
    roll = rng.random()
    where = rng.randint(0, len(lines))
    if roll < 0.25 or not lines:
        lines.insert(where, _requirement(rng))
    elif roll < 0.40:
        del lines[min(where, len(lines) - 1)]
    elif roll < 0.55:
        lines[min(where, len(lines) - 1)] = _requirement(rng)
    elif roll < 0.67:
        text = rng.choice(REASONS).format(p=rng.choice(PACKAGES), n=rng.randint(1, 999))
        lines.insert(where, text)
    elif roll < 0.75:
        lines.insert(where, "")
    elif roll < 0.85:
        lines[min(where, len(lines) - 1)] = rng.choice(BAD)
    elif roll < 0.88:
        lines.insert(where, rng.choice(("-r base.txt", "--index-url https://example.invalid/")))
    elif roll < 0.92 and lines:
        lines.insert(where, lines[rng.randrange(len(lines))])  # a duplicated line
    elif roll < 0.94:
        lines.insert(where, rng.choice(PACKAGES) + "<9 \\")  # a continuation
    elif roll < 0.96:
        lines.insert(where, rng.choice(PACKAGES) + "!=4.0\r")  # a CRLF line
    else:
        target = rng.randrange(len(lines))
        lines[target] = lines[target].replace("1", "7", 1)


def _history(root: Path, seed: int, commits: int) -> Repo:
    rng = random.Random(seed)  # noqa: S311 (a reproducible history, not a secret)
    repo = Repo(root)
    lines = [_requirement(rng) for _ in range(8)]
    name = "requirements.txt"
    when = datetime(2024, 1, 1, tzinfo=UTC)
    for number in range(1, commits + 1):
        for _ in range(rng.randint(1, 4)):
            _edit(rng, lines)
        when += timedelta(days=1)
        if number > 1 and rng.random() < 0.08:  # a rename, with an edit or not
            new = "requirements-old.txt" if name == "requirements.txt" else "requirements.txt"
            repo.git("mv", name, new)
            name = new
        repo.commit(f"change {number} (#{number})", when.isoformat(), {name: "\n".join(lines)})
    return repo


def _track(store: Store, root: Path, *, reread: bool) -> TrackResult:
    options = TrackOptions(history=True, now=NOW, reread=reread)
    return track(store, root, None, config=Config(), options=options)


def _events(store: Store, root: Path) -> list[tuple[Any, ...]]:
    """Every event of the repository at root, in order, and its exclusions at the end."""
    found, rows = _read(store, root)
    return found + rows


def _read(store: Store, root: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    with store.session() as session:
        (repo_id,) = session.exec(
            select(Repository.id).where(Repository.root == str(root.resolve()))
        ).all()
        rows = session.exec(
            select(StoredExclusion).where(StoredExclusion.repository_id == repo_id)
        ).all()
        keys = {row.id: row.key for row in rows}
        events = session.exec(
            select(Event).where(col(Event.exclusion_id).in_(keys)).order_by(col(Event.id))
        ).all()
        found = [
            (
                event.kind,
                keys[event.exclusion_id],
                event.commit,
                event.at,
                event.detail,
                keys.get(event.related_id or -1),
            )
            for event in events
        ]
        return found, sorted((r.key, r.state, r.line, r.predecessor_id is None) for r in rows)


@pytest.mark.parametrize("seed", range(6))
def test_replay_by_diffs_writes_the_events_of_a_full_re_read(
    store: Store, tmp_path: Path, seed: int
) -> None:
    repo = _history(tmp_path / "diffs", seed, commits=30)
    copy = tmp_path / "reread"
    shutil.copytree(repo.root, copy)
    by_diffs = _track(store, repo.root, reread=False)
    reread = _track(store, copy, reread=True)
    assert by_diffs.replayed == reread.replayed >= 25  # (a commit may leave the file as it was)
    assert by_diffs.counts == reread.counts
    events = _events(store, repo.root)
    assert len(events) > 30  # the history did something
    assert events == _events(store, copy)


def test_a_line_that_does_not_parse_keeps_its_own_exclusions_only(
    store: Store, tmp_path: Path
) -> None:
    """openstack/requirements: ``pytz>=2010h`` for a while; numpy's change still syncs."""
    repo = Repo(tmp_path / "r")
    base = "pytz>=2010b,!=2011.1\nnumpy<2\nattrs!=25.2.0\n"
    repo.commit("add (#1)", "2024-01-01T00:00:00+00:00", {"requirements.txt": base})
    broken = base.replace("pytz>=2010b,!=2011.1", "pytz>=2010h,!=2011.1")
    repo.commit(
        "bump (#2)",
        "2024-02-01T00:00:00+00:00",
        {"requirements.txt": broken.replace("numpy<2", "numpy<3")},
    )
    repo.commit(
        "attrs (#3)",
        "2024-03-01T00:00:00+00:00",
        {"requirements.txt": broken.replace("numpy<2", "numpy<3").replace("attrs!=25.2.0\n", "")},
    )
    fixed = "pytz>=2011.1,!=2011.2\nnumpy<3\n"
    repo.commit("fix (#4)", "2024-04-01T00:00:00+00:00", {"requirements.txt": fixed})
    for reread in (False, True):
        root = repo.root if not reread else tmp_path / "copy"
        if reread:
            shutil.copytree(repo.root, root)
        result = _track(store, root, reread=reread)
        assert result.replayed == 4
        assert any("did not parse at" in note for note in result.notes)
        events = [(kind, commit) for kind, _, commit, *_ in _read(store, root)[0]]
        shas = repo.git("log", "--format=%H", "--reverse").split()
        assert events == [
            ("added", shas[0]),  # pytz !=2011.1
            ("added", shas[0]),  # numpy <2
            ("added", shas[0]),  # attrs !=25.2.0
            ("changed", shas[1]),  # numpy <2 -> <3, while pytz's line does not parse
            ("removed", shas[2]),  # attrs, while pytz's line still does not parse
            ("changed", shas[3]),  # pytz parses again: !=2011.1 -> !=2011.2
        ], events


def test_a_working_tree_line_that_does_not_parse_keeps_only_its_own(
    store: Store, tmp_path: Path
) -> None:
    (tmp_path / "requirements.txt").write_text("pytz>=2010b,!=2011.1\nnumpy<2\n")
    first = track(store, tmp_path, None, config=Config(), options=TrackOptions(now=NOW))
    assert first.counts.added == 2
    (tmp_path / "requirements.txt").write_text("pytz>=2010h,!=2011.1\nnumpy<3\n")
    again = track(store, tmp_path, None, config=Config(), options=TrackOptions(now=NOW))
    assert (again.counts.changed, again.counts.removed) == (1, 0)
    assert any("do not parse" in note for note in again.notes)
    with store.session() as session:
        states = sorted((row.clause, row.state) for row in session.exec(select(StoredExclusion)))
    assert states == [("!=2011.1", "held"), ("<2", "relaxed"), ("<3", "held")]
