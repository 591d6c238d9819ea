"""``govern track``: the sync's events, idempotence, atomicity and concurrency, on both backends."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from govern.config import Config
from govern.service import sync as sync_module
from govern.service.track import TrackOptions, TrackResult, track
from govern.store.db import Store
from govern.store.models import Event, StoredAnnotation, StoredExclusion, StoredSource

T0 = datetime(2026, 5, 24, 12, 0, tzinfo=UTC)
T1 = datetime(2026, 8, 10, 12, 0, tzinfo=UTC)

CAP = (
    "lmcache >= 0.3.9\n"
    "# CuPy 14.1.0 imports pytest from cupy.testing._random. Use <14.1.0\n"
    "# until a fixed newer release is verified for runtime images.\n"
    "cupy-cuda13x < 14.1.0\n"
    "attrs!=25.2.0  # https://github.com/python-attrs/attrs/issues/1400\n"
)
NOT_EQUAL = CAP.replace("cupy-cuda13x < 14.1.0", "cupy-cuda13x != 14.1.0").replace(
    "Use <14.1.0\n# until a fixed newer release is verified for runtime images.",
    "14.1.1 fixes the root cause,\n# so only 14.1.0 is excluded.",
)


def _sync(store: Store, root: Path, when: datetime = T0) -> TrackResult:
    return track(store, root, None, config=Config(), options=TrackOptions(now=when))


def _snapshot(store: Store) -> dict[str, Any]:
    """What a user can see: exclusions with state, and every event (without ids)."""
    with store.session() as session:
        rows = session.exec(select(StoredExclusion).order_by(col(StoredExclusion.key))).all()
        keys = {row.id: row.key for row in rows}
        events = session.exec(select(Event).order_by(col(Event.id))).all()
        notes = session.exec(select(StoredAnnotation)).all()
        sources = session.exec(select(StoredSource)).all()
        return {
            "exclusions": sorted(
                (r.key, r.package, r.clause, r.state, keys.get(r.predecessor_id or -1))
                for r in rows
            ),
            "events": sorted((keys[e.exclusion_id], e.kind) for e in events),
            "annotations": sorted((keys[n.exclusion_id], n.reason, n.current) for n in notes),
            "sources": sorted((s.path, s.present) for s in sources),
        }


@pytest.fixture
def store(database_url: str) -> Any:
    with Store(database_url) as opened:
        yield opened


def test_first_sync_adds_and_a_second_adds_nothing(store: Store, tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(CAP, encoding="utf-8")
    first = _sync(store, tmp_path)
    assert first.counts.added == 2
    assert first.counts.events == 2
    before = _snapshot(store)
    assert before["events"] == sorted((key, "added") for key, *_ in before["exclusions"])
    second = _sync(store, tmp_path, T1)
    assert second.counts.events == 0
    assert second.counts.unchanged == 2
    assert _snapshot(store) == before
    with store.session() as session:
        cupy = session.exec(
            select(StoredExclusion).where(StoredExclusion.package == "cupy-cuda13x")
        ).one()
        note = session.exec(
            select(StoredAnnotation).where(StoredAnnotation.exclusion_id == cupy.id)
        ).one()
    assert cupy.kind == "cap"
    assert cupy.state == "held"
    assert note.reason is not None
    assert "verified for runtime images" in note.reason
    assert note.bad_versions == ["14.1.0"]  # the reason names the capped version


def test_a_changed_reason_is_an_annotation_change_and_both_are_kept(
    store: Store, tmp_path: Path
) -> None:
    source = tmp_path / "requirements.txt"
    source.write_text(CAP, encoding="utf-8")
    _sync(store, tmp_path)
    source.write_text(
        CAP.replace(
            "attrs!=25.2.0  # https://github.com/python-attrs/attrs/issues/1400",
            "attrs!=25.2.0  # broken slots, see https://github.com/python-attrs/attrs/issues/1401",
        ),
        encoding="utf-8",
    )
    result = _sync(store, tmp_path, T1)
    assert result.counts.annotation_changed == 1
    assert result.counts.events == 1
    with store.session() as session:
        attrs = session.exec(
            select(StoredExclusion).where(StoredExclusion.package == "attrs")
        ).one()
        notes = session.exec(
            select(StoredAnnotation)
            .where(StoredAnnotation.exclusion_id == attrs.id)
            .order_by(col(StoredAnnotation.id))
        ).all()
        event = session.exec(select(Event).where(Event.kind == "annotation-changed")).one()
    assert [n.current for n in notes] == [False, True]
    assert notes[0].links == ["https://github.com/python-attrs/attrs/issues/1400"]
    assert notes[1].links == ["https://github.com/python-attrs/attrs/issues/1401"]
    assert event.detail["links"]["from"] == ["https://github.com/python-attrs/attrs/issues/1400"]
    assert "reason" in event.detail


def test_a_clause_changed_in_place_is_linked_to_its_predecessor(
    store: Store, tmp_path: Path
) -> None:
    source = tmp_path / "requirements.txt"
    source.write_text(CAP, encoding="utf-8")
    _sync(store, tmp_path)
    source.write_text(NOT_EQUAL, encoding="utf-8")
    result = _sync(store, tmp_path, T1)
    assert result.counts.changed == 1
    assert result.counts.added == 0
    assert result.counts.removed == 0
    with store.session() as session:
        old = session.exec(select(StoredExclusion).where(StoredExclusion.clause == "<14.1.0")).one()
        new = session.exec(
            select(StoredExclusion).where(StoredExclusion.clause == "!=14.1.0")
        ).one()
        changed = session.exec(select(Event).where(Event.kind == "changed")).one()
    assert new.predecessor_id == old.id
    assert old.state == "relaxed"
    assert new.state == "held"
    assert changed.exclusion_id == new.id
    assert changed.related_id == old.id
    assert changed.detail == {"from": "<14.1.0", "to": "!=14.1.0", "direction": "relaxed"}
    # A second sync of the same content adds nothing.
    assert _sync(store, tmp_path, T1).counts.events == 0


def test_lowering_a_cap_is_tightened_and_the_old_one_removed(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "requirements.txt"
    source.write_text("numpy<2\n", encoding="utf-8")
    _sync(store, tmp_path)
    source.write_text("numpy<1.26\n", encoding="utf-8")
    _sync(store, tmp_path, T1)
    with store.session() as session:
        old = session.exec(select(StoredExclusion).where(StoredExclusion.clause == "<2")).one()
        changed = session.exec(select(Event).where(Event.kind == "changed")).one()
    assert old.state == "removed"
    assert changed.detail["direction"] == "tightened"


def test_markers_and_sources_are_kept_apart(store: Store, tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(
        "torch<2.9 ; sys_platform == 'linux'\ntorch<2.8 ; sys_platform == 'darwin'\n",
        encoding="utf-8",
    )
    (tmp_path / "constraints.txt").write_text("torch<2.9\n", encoding="utf-8")
    assert _sync(store, tmp_path).counts.added == 3
    # The linux cap changes; the darwin one and the constraint stay.
    (tmp_path / "requirements.txt").write_text(
        "torch<2.10 ; sys_platform == 'linux'\ntorch<2.8 ; sys_platform == 'darwin'\n",
        encoding="utf-8",
    )
    result = _sync(store, tmp_path, T1)
    assert (result.counts.changed, result.counts.unchanged) == (1, 2)


def test_removed_then_restored_keeps_one_row_and_its_thread(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "requirements.txt"
    source.write_text(CAP, encoding="utf-8")
    _sync(store, tmp_path)
    source.write_text("lmcache >= 0.3.9\n", encoding="utf-8")
    removed = _sync(store, tmp_path, T1)
    assert removed.counts.removed == 2
    source.write_text(CAP, encoding="utf-8")
    restored = _sync(store, tmp_path, datetime(2026, 9, 1, tzinfo=UTC))
    assert restored.counts.restored == 2
    snapshot = _snapshot(store)
    assert len(snapshot["exclusions"]) == 2
    assert all(state == "held" for _, _, _, state, _ in snapshot["exclusions"])
    kinds = sorted(kind for _, kind in snapshot["events"])
    assert kinds == ["added", "added", "added", "added", "removed", "removed"]


def test_a_deleted_source_removes_its_exclusions(store: Store, tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(CAP, encoding="utf-8")
    (tmp_path / "constraints.txt").write_text("urllib3<3\n", encoding="utf-8")
    _sync(store, tmp_path)
    (tmp_path / "constraints.txt").unlink()
    result = _sync(store, tmp_path, T1)
    assert result.counts.removed == 1
    assert ("constraints.txt", False) in _snapshot(store)["sources"]


def test_a_crash_in_the_middle_leaves_the_previous_state(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "requirements.txt"
    source.write_text(CAP, encoding="utf-8")
    _sync(store, tmp_path)
    before = _snapshot(store)
    source.write_text(NOT_EQUAL + "urllib3<3\nrequests!=2.32.0\n", encoding="utf-8")
    calls = 0
    real_event = sync_module.Sync._event

    class Crash(Exception):
        pass

    def crash_on_third(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:  # rows and events of this sync are already flushed
            raise Crash
        real_event(self, *args, **kwargs)

    monkeypatch.setattr(sync_module.Sync, "_event", crash_on_third)
    with pytest.raises(Crash):
        _sync(store, tmp_path, T1)
    assert calls == 3
    assert _snapshot(store) == before
    monkeypatch.undo()
    assert _sync(store, tmp_path, T1).counts.events == 3  # changed + 2 added, all at once


def _cli_track(root: Path, url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "govern", "track", str(root), "--db", url, "--format", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_concurrent_syncs_end_as_one_after_the_other(database_url: str, tmp_path: Path) -> None:
    """Three processes at once on an empty database (the migration races too)."""
    root = tmp_path / "repo"
    root.mkdir()
    lines = [f"pkg{i} != 1.{i}.0  # broken build, see #{i}" for i in range(120)]
    (root / "requirements.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    runs = [_cli_track(root, database_url) for _ in range(3)]
    outputs = [run.communicate(timeout=120) for run in runs]
    for run, (_, err) in zip(runs, outputs, strict=True):
        assert run.returncode == 0, err
    with Store(database_url) as store:
        concurrent = _snapshot(store)
    assert len(concurrent["exclusions"]) == 120
    assert len(concurrent["events"]) == 120  # no duplicate rows: each added once
    assert len(concurrent["annotations"]) == 120
    # The same as one after the other, on a database of its own.
    with Store(f"sqlite:///{tmp_path / 'sequential.db'}") as store:
        for _ in range(3):
            _sync(store, root)
        assert _snapshot(store) == concurrent


def test_a_resync_of_an_unchanged_tree_reads_no_requirement(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "requirements.txt"
    source.write_text(CAP, encoding="utf-8")
    _sync(store, tmp_path)
    from govern import audit as audit_module

    def no_audit(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an unchanged tree was audited again")

    monkeypatch.setattr(audit_module, "audit_targets", no_audit)
    again = _sync(store, tmp_path, T1)
    assert again.counts.unchanged == 2
    assert again.counts.events == 0
    monkeypatch.undo()
    # Any byte changed, or the configuration: a full sync.
    source.write_text(CAP.replace("issues/1400", "issues/1401"), encoding="utf-8")
    assert _sync(store, tmp_path, T1).counts.annotation_changed == 1
    configured = Config(repository="example.org/team/app")
    result = track(store, tmp_path, None, config=configured, options=TrackOptions(now=T1))
    assert result.repository == "example.org/team/app"
    assert result.counts.added == 2  # another repository name: other keys


def test_a_file_that_reads_the_environment_is_always_synced(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "requirements.txt").write_text("-c ${CONSTRAINTS}\nnumpy<2\n", encoding="utf-8")
    _sync(store, tmp_path)
    from govern import audit as audit_module

    calls = 0
    real = audit_module.audit_targets

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(audit_module, "audit_targets", counting)
    _sync(store, tmp_path, T1)
    assert calls == 1
