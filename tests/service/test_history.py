"""``govern track --history``: vLLM's kv_connectors.txt replayed from a real git repository.

The three versions are the corpus files (tests/data/vllm, see its PROVENANCE.md): before
CuPy was listed; after vllm-project/vllm#43530 (the cap, reconstructed from the diff
quoted in #45843); and after #44284 (the cap relaxed to a not-equal).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli as _run
from gitrepo import Repo

BEFORE = "history/kv_connectors.txt@4742f9e6"
CAPPED = "history/kv_connectors.txt@pr43530-reconstructed"
RELAXED = "requirements/kv_connectors.txt"
PATH = "requirements/kv_connectors.txt"


def _text(data: Path, name: str) -> str:
    return (data / "vllm" / name).read_text(encoding="utf-8")


@pytest.fixture
def vllm(tmp_path: Path, data: Path) -> Repo:
    repo = Repo(tmp_path / "vllm")
    repo.git("remote", "add", "origin", "https://github.com/vllm-project/vllm.git")
    repo.commit(
        "[KV Connector] Add kv connector requirements",
        "2026-03-02T10:00:00+00:00",
        {PATH: _text(data, BEFORE)},
    )
    repo.commit(
        "[Bugfix] Cap cupy-cuda13x below 14.1.0 for runtime images (#43530)",
        "2026-05-24T09:30:00+00:00",
        {PATH: _text(data, CAPPED)},
        author="Capper",
    )
    repo.commit("Unrelated change to docs", "2026-06-10T09:00:00+00:00", {"README.md": "docs\n"})
    repo.commit(
        "[Deps] Exclude only cupy 14.1.0 (#44284)",
        "2026-08-10T16:00:00+00:00",
        {PATH: _text(data, RELAXED)},
        author="Relaxer",
    )
    return repo


def test_history_replays_the_cupy_thread(
    vllm: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    code, out, err = _run(["track", str(vllm.root), "--history", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["repository"] == "github.com/vllm-project/vllm"
    assert result["replayed_commits"] == 3  # the docs commit does not touch the file
    assert result["changed"] == 1

    code, out, err = _run(["history", "cupy-cuda13x", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    document = json.loads(out)
    (thread,) = document["threads"]  # one thread: the cap and its successor
    assert [e["clause"] for e in thread["exclusions"]] == ["<14.1.0", "!=14.1.0"]
    events = [(e["kind"], e["clause"], e["pull_request"], e["at"][:10]) for e in thread["events"]]
    assert events == [
        ("added", "<14.1.0", 43530, "2026-05-24"),
        ("changed", "!=14.1.0", 44284, "2026-08-10"),
    ]
    added, changed = thread["events"]
    assert added["author"] == "Capper"
    assert "verified for runtime images" in added["reason"]
    assert "14.1.1 fixes the root cause" in changed["reason"]
    assert changed["detail"] == {"from": "<14.1.0", "to": "!=14.1.0", "direction": "relaxed"}
    cap, not_equal = thread["exclusions"]
    assert cap["state"] == "relaxed"
    assert not_equal["state"] == "held"
    assert cap["pull_request"] == 43530

    code, out, _ = _run(["history", "cupy-cuda13x", "--db", db], capsys)
    assert code == 0
    assert "thread 1: cupy-cuda13x (2 exclusions, github.com/vllm-project/vllm)" in out
    assert "2026-05-24  added  cupy-cuda13x <14.1.0  requirements/kv_connectors.txt  #43530" in out
    assert "2026-08-10  changed  cupy-cuda13x <14.1.0 -> !=14.1.0 (relaxed)" in out
    assert "#44284" in out
    flat = " ".join(out.split())  # reasons are wrapped
    assert "verified for runtime images" in flat
    assert "14.1.1 fixes the root cause" in flat
    assert "thread 2" not in out

    # Again: nothing new to replay, nothing to add.
    code, out, err = _run(["track", str(vllm.root), "--history", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    again = json.loads(out)
    assert again["replayed_commits"] == 0
    assert again["events"] == 0


def test_later_syncs_replay_only_new_commits(
    vllm: Repo, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(vllm.root), "--history", "--db", db], capsys)[0] == 0
    vllm.commit(
        "Relax cupy entirely (#45000)",
        "2026-09-01T08:00:00+00:00",
        {PATH: _text(data, RELAXED).replace("cupy-cuda13x != 14.1.0", "cupy-cuda13x")},
    )
    code, out, err = _run(["track", str(vllm.root), "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["replayed_commits"] == 1
    assert result["removed"] == 1
    code, out, _ = _run(["history", "cupy-cuda13x", "--db", db, "-f", "json"], capsys)
    (thread,) = json.loads(out)["threads"]
    last = thread["events"][-1]
    assert (last["kind"], last["pull_request"], last["at"][:10]) == ("removed", 45000, "2026-09-01")


def test_since_bounds_the_replay(
    vllm: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    code, out, err = _run(
        ["track", str(vllm.root), "--history", "--since", "2026-06-01", "--db", db, "-f", "json"],
        capsys,
    )
    assert code == 0, err
    assert json.loads(out)["replayed_commits"] == 1  # only #44284
    code, out, _ = _run(["history", "cupy-cuda13x", "--db", db, "-f", "json"], capsys)
    (thread,) = json.loads(out)["threads"]
    assert [(e["kind"], e["pull_request"]) for e in thread["events"]] == [("added", 44284)]


def test_without_history_the_added_event_comes_from_blame(
    vllm: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    vllm.write(PATH, (vllm.root / PATH).read_text(encoding="utf-8") + "uncommitted<2\n")
    assert _run(["track", str(vllm.root), "--db", db], capsys)[0] == 0
    code, out, _ = _run(["status", "--db", db, "-f", "json"], capsys)
    assert code == 0
    by_package = {e["package"]: e for e in json.loads(out)["exclusions"]}
    assert by_package["cupy-cuda13x"]["pull_request"] == 44284
    assert by_package["cupy-cuda13x"]["first_seen"].startswith("2026-08-10")
    assert by_package["uncommitted"]["commit"] is None  # not committed: dated now


def test_since_without_history_is_a_usage_error(
    vllm: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(["track", str(vllm.root), "--since", "2026-01-01"], capsys)
    assert code == 2
    assert "--since bounds --history" in err


def _history(db: str, package: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out, err = _run(["history", package, "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    threads: list[dict[str, Any]] = json.loads(out)["threads"]
    return threads


def test_replay_continues_after_its_marker_whatever_since_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("cap (#1)", "2024-01-01T00:00:00+00:00", {"requirements.txt": "cupy<14\n"})
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(repo.root), "--history", "--db", db], capsys)[0] == 0
    repo.commit("raise (#2)", "2024-06-01T00:00:00+00:00", {"requirements.txt": "cupy<15\n"})
    repo.commit("relax (#3)", "2024-07-01T00:00:00+00:00", {"requirements.txt": "cupy!=15.0\n"})
    code, out, err = _run(
        ["track", str(repo.root), "--history", "--since", "2024-06-15", "--db", db, "-f", "json"],
        capsys,
    )
    assert code == 0, err
    assert json.loads(out)["replayed_commits"] == 2  # both, though #2 is before --since
    (thread,) = _history(db, "cupy", capsys)
    events = [(e["kind"], e["pull_request"]) for e in thread["events"]]
    assert events == [("added", 1), ("changed", 2), ("changed", 3)]
    # And a later edit elsewhere records nothing false about cupy.
    repo.commit("numpy (#4)", "2024-08-01T00:00:00+00:00", {"constraints.txt": "numpy<2\n"})
    assert _run(["track", str(repo.root), "--db", db], capsys)[0] == 0
    (thread,) = _history(db, "cupy", capsys)
    assert len(thread["events"]) == 3


def test_a_commit_that_does_not_parse_is_skipped_not_a_removal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = '[project]\nname = "x"\nversion = "1"\ndependencies = ["numpy<2", "attrs!=25.2.0"]\n'
    repo = Repo(tmp_path / "r")
    repo.commit("ok (#1)", "2024-01-01T00:00:00+00:00", {"pyproject.toml": good})
    repo.commit("broken (#2)", "2024-02-01T00:00:00+00:00", {"pyproject.toml": good[:-3]})
    repo.commit("fixed (#3)", "2024-03-01T00:00:00+00:00", {"pyproject.toml": good})
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    code, out, err = _run(["track", str(repo.root), "--history", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert (result["added"], result["removed"], result["restored"]) == (2, 0, 0)
    assert any("did not parse" in note for note in result["notes"])
    # A working tree that does not parse keeps what is tracked.
    repo.write("pyproject.toml", good[:-3])
    code, out, err = _run(["track", str(repo.root), "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["removed"] == 0
    assert any("do not parse" in note for note in result["notes"])


def test_commit_dates_keep_their_offset_on_sqlite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("cap (#1)", "2024-01-01T23:30:00+05:00", {"requirements.txt": "cupy<14\n"})
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(repo.root), "--history", "--db", db], capsys)[0] == 0
    (thread,) = _history(db, "cupy", capsys)
    (event,) = thread["events"]
    assert event["at"] == "2024-01-01T18:30:00+00:00"


def test_tracking_one_file_leaves_the_others_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "r"
    (root / "sub").mkdir(parents=True)
    (root / "requirements.txt").write_text("numpy<2\nattrs!=25.2.0\n", encoding="utf-8")
    (root / "sub" / "requirements-extra.txt").write_text("torch<3\n", encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(root), "--db", db], capsys)[0] == 0
    os.chdir(root)
    code, out, err = _run(["track", "sub/requirements-extra.txt", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert (result["removed"], result["unchanged"]) == (0, 1)


def test_a_clause_that_comes_back_does_not_close_a_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "r"
    root.mkdir()
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    for text in ("numpy<2\n", "numpy<3\n", "numpy<2\n"):
        (root / "requirements.txt").write_text(text, encoding="utf-8")
        assert _run(["track", str(root), "--db", db], capsys)[0] == 0
    (thread,) = _history(db, "numpy", capsys)
    kinds = [(e["kind"], e["clause"]) for e in thread["events"]]
    assert kinds == [("added", "<2"), ("changed", "<3"), ("changed", "<2")]


def test_a_renamed_source_keeps_its_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM moved requirements-cuda.txt to requirements/cuda.txt; the caps moved with it."""
    repo = Repo(tmp_path / "r")
    repo.commit("cap (#1)", "2024-01-01T00:00:00+00:00", {"requirements-cuda.txt": "cupy<14\n"})
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(repo.root), "--history", "--db", db], capsys)[0] == 0
    (repo.root / "requirements").mkdir()
    repo.git("mv", "requirements-cuda.txt", "requirements/cuda.txt")
    repo.commit("move requirements (#2)", "2024-02-01T00:00:00+00:00")
    repo.commit(
        "relax (#3)", "2024-03-01T00:00:00+00:00", {"requirements/cuda.txt": "cupy!=14.0\n"}
    )
    code, out, err = _run(["track", str(repo.root), "--history", "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert (result["added"], result["removed"], result["changed"]) == (0, 0, 1)
    (thread,) = _history(db, "cupy", capsys)
    events = [(e["kind"], e["source"], e["pull_request"]) for e in thread["events"]]
    assert events == [
        ("added", "requirements/cuda.txt", 1),
        ("moved", "requirements/cuda.txt", 2),
        ("changed", "requirements/cuda.txt", 3),
    ]
    assert thread["events"][1]["detail"] == {
        "from": "requirements-cuda.txt",
        "to": "requirements/cuda.txt",
    }


def test_a_rename_without_history_moves_the_rows_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("cap (#1)", "2024-01-01T00:00:00+00:00", {"requirements-cuda.txt": "cupy<14\n"})
    db = f"sqlite:///{tmp_path / 'govern.db'}"
    assert _run(["track", str(repo.root), "--db", db], capsys)[0] == 0
    (repo.root / "requirements").mkdir()
    repo.git("mv", "requirements-cuda.txt", "requirements/cuda.txt")
    repo.commit("move requirements (#2)", "2024-02-01T00:00:00+00:00")
    code, out, err = _run(["track", str(repo.root), "--db", db, "-f", "json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert (result["added"], result["removed"], result["unchanged"]) == (0, 0, 1)
    (thread,) = _history(db, "cupy", capsys)
    assert [e["kind"] for e in thread["events"]] == ["added", "moved"]
