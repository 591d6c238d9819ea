"""Settled lines cost nothing: a ``!=V`` whose V is known bad has nothing left to relax.

Such a line admits every release after the one it keeps out, so no release can be a
candidate for it: the poll does not ask the index about it, no CI runs, it is not pending,
and its thread says so once. A release is a candidate only if the line's other clauses
admit it. Real processes of the CLI against a local PEP 691 index.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from clirun import run_cli as _run
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from sqlmodel import col, select

from fakes.index import IndexFile, StaticIndex
from govern.exclusions.clause import Clause
from govern.exclusions.states import EventKind, State
from govern.index.candidates import candidates
from govern.index.model import Release
from govern.index.parsing import file_from
from govern.index.profiles import Profile
from govern.lifecycle import advance
from govern.store.db import Store
from govern.store.models import Candidate, Event, StoredExclusion, Verification

PROFILE = Profile(name="default", python=Version("3.12"), platforms=("manylinux_2_28_x86_64",))


@pytest.mark.parametrize(
    ("text", "bad", "settled"),
    [
        ("!=14.1.0", ("14.1.0",), True),
        ("!=14.1", ("14.1.0",), True),  # the same version, PEP 440 padding
        ("!=1.2.*", ("1.2.*",), True),
        ("!=1.2.*", ("1.2.0",), False),  # 1.2.1 may be good: still worth a candidate
        ("!=14.1.0", ("13.0",), False),  # a bad= naming another version
        ("!=14.1.0", (), False),
        ("<14.1.0", ("14.1.0",), False),  # a cap keeps out every later release
    ],
)
def test_a_clause_is_settled_when_it_keeps_out_only_known_bad_releases(
    text: str, bad: tuple[str, ...], settled: bool
) -> None:
    kind = "not-equal" if text.startswith("!=") else "cap"
    assert Clause.parse(text, kind, known_bad=bad).settled is settled


def test_the_lifecycle_takes_a_settled_line_out_of_verification() -> None:
    for before in (State.CANDIDATE, State.VERIFYING, State.VERIFIED):
        assert advance(EventKind.SETTLED, before) is State.HELD
    for before in (State.HELD, State.PROPOSED):
        assert advance(EventKind.SETTLED, before) is before


def _release(version: str) -> Release:
    name = f"demo_lib-{version}-py3-none-any.whl"
    return Release(Version(version), (file_from(name, f"http://127.0.0.1/{name}"),))


def test_a_release_the_lines_other_clauses_keep_out_is_no_candidate() -> None:
    # demo-lib>=1.0,!=1.1.0,<2.0: 2.0.0 is kept out by <2.0, whatever !=1.1.0 says.
    clause = Clause.parse("!=1.1.0", "not-equal")
    releases = [_release(v) for v in ("1.0.0", "1.1.0", "1.1.1", "2.0.0")]
    now = datetime(2026, 8, 1, tzinfo=UTC)
    decisions = candidates(clause, releases, PROFILE, now=now, others=SpecifierSet(">=1.0,<2.0"))
    by_version = {str(d.version): d for d in decisions}
    assert by_version["2.0.0"].eligible is False
    assert by_version["2.0.0"].reason == "2.0.0 is kept out by <2.0 on the same line"
    assert by_version["1.1.1"].eligible is True
    # Without the line's other clauses, 2.0.0 would be the newest candidate.
    alone = candidates(clause, releases, PROFILE, now=now)
    assert [str(d.version) for d in alone if d.eligible] == ["1.1.1", "2.0.0"]


# -- end to end ---------------------------------------------------------------------------


def _files(*versions: str) -> list[IndexFile]:
    return [
        IndexFile(f"cupy_demo-{v}-py3-none-any.whl", upload_time="2026-05-01T00:00:00Z")
        for v in versions
    ]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[StaticIndex]:
    with StaticIndex(tmp_path / "index", {"cupy-demo": _files("14.0.1", "14.1.0")}) as served:
        yield served


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    return root


def _write(root: Path, text: str) -> None:
    (root / "requirements.txt").write_text(text, encoding="utf-8")


def _count_runs_command(counter: Path) -> str:
    """A check that counts its runs (and passes): any run at all is the failure here."""
    code = f"open({str(counter)!r}, 'a').write('run\\n')"
    return json.dumps([sys.executable, "-c", code])


def test_a_settled_line_sees_no_ci_run_across_three_new_releases(
    repo: Path, index: StaticIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    counter = tmp_path / "runs.txt"
    (repo / ".govern.toml").write_text(
        f'verify-with = "local"\n[ci.local]\nprovider = "command"\n'
        f"command = {_count_runs_command(counter)}\n",
        encoding="utf-8",
    )
    # The line a merged relaxation leaves behind: 14.1.0 is known bad (the clause names it).
    _write(repo, "# 14.1.0 broke the runtime image\ncupy-demo != 14.1.0\n")
    assert _run(["track", str(repo), "--db", db], capsys)[0] == 0

    versions = ["14.0.1", "14.1.0"]
    for serial, new in enumerate(("14.1.1", "14.2.0", "15.0.0"), start=2):
        versions.append(new)
        index.publish("cupy-demo", _files(*versions), serial=serial)
        code, out, err = _run(["poll", "--db", db, "--index-url", index.url], capsys)
        assert code == 0, err
        assert "candidate:" not in out
        assert "1 settled (nothing to relax)" in out
        code, out, err = _run(["verify", "--db", db, "--index-url", index.url], capsys)
        assert code == 0, (out, err)

    assert not counter.exists()  # no CI run, across three releases
    assert index.count("/simple/cupy-demo/") == 0  # the index was not even asked
    with Store(db) as store, store.session() as session:
        exclusion = session.exec(select(StoredExclusion)).one()
        assert exclusion.state == State.HELD
        assert session.exec(select(Candidate)).all() == []
        assert session.exec(select(Verification)).all() == []
        settled = session.exec(select(Event).where(col(Event.kind) == EventKind.SETTLED)).all()
        assert len(settled) == 1  # said once, not on every poll
        assert settled[0].detail["version"] == "14.1.0"

    code, out, _ = _run(["dashboard", "--db", db, "--format", "json"], capsys)
    assert code == 0
    assert json.loads(out)["pending"] == []  # not a pending relaxation
    code, out, _ = _run(["history", "cupy-demo", "--db", db], capsys)
    assert code == 0
    assert "settled  cupy-demo !=14.1.0: 14.1.0 is known bad" in out


def test_a_line_that_becomes_settled_leaves_verification_and_says_so(
    repo: Path, index: StaticIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    counter = tmp_path / "runs.txt"
    # bad= names another version: 14.1.0 is not known bad, so 14.1.1 is worth a candidate.
    _write(repo, "# govern: bad=13.0.0\ncupy-demo != 14.1.0\n")
    assert _run(["track", str(repo), "--db", db], capsys)[0] == 0
    index.publish("cupy-demo", _files("14.0.1", "14.1.0", "14.1.1"), serial=2)
    code, out, err = _run(["poll", "--db", db, "--index-url", index.url], capsys)
    assert code == 0, err
    assert "candidate: cupy-demo 14.1.1 for !=14.1.0" in out
    with Store(db) as store, store.session() as session:
        assert session.exec(select(StoredExclusion)).one().state == State.CANDIDATE

    # Now 14.1.0 is said to be bad: the line is settled; its candidate is never run.
    _write(repo, "# govern: bad=14.1.0\ncupy-demo != 14.1.0\n")
    assert _run(["track", str(repo), "--db", db], capsys)[0] == 0
    code, out, err = _run(["poll", "--db", db, "--index-url", index.url, "-f", "json"], capsys)
    assert code == 0, err
    document = json.loads(out)
    assert document["settled"] == 1
    assert [s["clause"] for s in document["newly_settled"]] == ["!=14.1.0"]
    code, out, err = _run(["verify", "--db", db, "--command", _count_runs_command(counter)], capsys)
    assert code == 0, (out, err)
    assert not counter.exists()
    with Store(db) as store, store.session() as session:
        assert session.exec(select(StoredExclusion)).one().state == State.HELD
        kinds = [e.kind for e in session.exec(select(Event).order_by(col(Event.id)))]
    assert kinds.count(EventKind.SETTLED) == 1
    assert kinds.index(EventKind.CANDIDATE_FOUND) < kinds.index(EventKind.SETTLED)
