"""``bench/track.py --history``: replaying long histories, against ``git log -p`` of them.

Two generated histories in one repository (written with ``git fast-import``, seeded):

- ``upper-constraints.txt``, shaped like openstack/requirements': ~575 sorted
  ``name===version`` lines; each commit bumps one to four of them, some add or drop a
  package, a few leave a line that does not parse for a while (``name==2010h``); the
  file is renamed once (to ``requirements/upper-constraints.txt``);
- ``global-requirements.txt``: sorted ``name>=floor,!=bad,<cap  # Licence`` lines in
  paragraphs, ``# NOTE(dev): ...`` reason blocks inside the list, commits that bump
  floors, add ``!=`` clauses and caps, edit or drop reasons, and lines like
  ``pytz>=2010h``, ``lesscpy>=0.9j`` or ``sushy!=1.9.0<3.0.0`` that stay a while.

Measured: ``git log -p --follow --first-parent`` of each file (median of three), and one
``python -m govern track DIR --history`` (a fresh process, a fresh SQLite database) with
its wall time and peak RSS; then the same with ``upper-constraints.txt`` named a lock in
``.govern.toml`` (``[[locks]]``: its pins are no exclusions and its history is not
replayed). Target: govern ≤ 10x the sum of the git runs. ``--check``
also replays a shorter history of both kinds by diffs and by re-reading every version
(in-process) and compares the events (kind, key, commit, detail, in order).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HISTORY_TARGET_RATIO = 10.0
UC = "upper-constraints.txt"
UC_MOVED = "requirements/upper-constraints.txt"
GR = "global-requirements.txt"
LICENCES = ("Apache-2.0", "MIT", "BSD", "LGPLv2.1", "PSF")
BAD_GR = ("pytz>=2010h", "lesscpy>=0.9j", "sushy!=1.9.0<3.0.0")


def _name(rng: random.Random) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "".join(rng.choice(letters) for _ in range(rng.randint(4, 10))) + (
        f"-{rng.choice(letters)}{rng.randint(1, 9)}" if rng.random() < 0.3 else ""
    )


@dataclass
class _Pin:
    name: str
    version: list[int]
    bad: str | None = None  # the unparsable text shown instead, for a while

    def text(self) -> str:
        return self.bad or f"{self.name}==={'.'.join(map(str, self.version))}"


@dataclass
class _Line:
    name: str
    floor: list[int]
    bad: list[str]
    cap: int | None
    licence: str
    note: list[str]  # the reason block above it (inside the list)
    broken: str | None = None

    def lines(self) -> list[str]:
        if self.broken is not None:
            return [*self.note, f"{self.broken}  # {self.licence}"]
        clauses = [">=" + ".".join(map(str, self.floor)), *(f"!={b}" for b in self.bad)]
        if self.cap is not None:
            clauses.append(f"<{self.cap}")
        return [*self.note, f"{self.name}{','.join(clauses)}  # {self.licence}"]


def _upper(rng: random.Random, lines: int) -> Iterator[tuple[str, str]]:
    """(path, text) after each commit of an upper-constraints.txt history."""
    pins = sorted(
        (
            _Pin(_name(rng), [rng.randint(0, 9), rng.randint(0, 30), rng.randint(0, 9)])
            for _ in range(lines)
        ),
        key=lambda pin: pin.name,
    )
    path = UC
    yield path, "".join(pin.text() + "\n" for pin in pins)
    number = 0
    while True:
        number += 1
        for pin in pins:  # a line that does not parse is mended after a few commits
            if pin.bad is not None and rng.random() < 0.25:
                pin.bad = None
        for _ in range(rng.randint(1, 4)):
            pin = rng.choice(pins)
            pin.version[-1] += 1
        roll = rng.random()
        if roll < 0.03:
            pins.append(_Pin(_name(rng), [1, 0, 0]))
            pins.sort(key=lambda pin: pin.name)
        elif roll < 0.05 and len(pins) > 10:
            pins.remove(rng.choice(pins))
        elif roll < 0.06:
            rng.choice(pins).bad = f"{rng.choice(pins).name}==2010h"
        if number == 2000:
            path = UC_MOVED  # a pure rename commit (from upper-constraints.txt)
            yield path, "".join(pin.text() + "\n" for pin in pins)
            continue
        yield path, "".join(pin.text() + "\n" for pin in pins)


def _note(rng: random.Random, name: str) -> list[str]:
    note = [
        f"# NOTE(dev{rng.randint(1, 99)}): {name} {rng.randint(1, 9)}.{rng.randint(0, 9)}.0 "
        f"broke the gate, see https://bugs.launchpad.net/x/+bug/{rng.randint(1000, 999999)}"
    ]
    if rng.random() < 0.3:
        note.append("# Keep it out until the fix is released.")
    return note


def _global(rng: random.Random, lines: int) -> Iterator[tuple[str, str]]:
    """(path, text) after each commit of a global-requirements.txt history."""
    entries = sorted(
        (
            _Line(
                _name(rng),
                [rng.randint(0, 9), rng.randint(0, 20)],
                [f"{rng.randint(0, 9)}.{rng.randint(0, 9)}.0" for _ in range(rng.randint(0, 3))]
                if rng.random() < 0.3
                else [],
                rng.randint(2, 9) if rng.random() < 0.1 else None,
                rng.choice(LICENCES),
                [],
            )
            for _ in range(lines)
        ),
        key=lambda line: line.name,
    )
    for entry in entries:
        if rng.random() < 0.07:
            entry.note = _note(rng, entry.name)
    breaks = {rng.randrange(len(entries)) for _ in range(len(entries) // 60)}

    def text() -> str:
        out = [
            "# The order of packages is significant, because pip processes them in the order",
            "# of appearance. Changing the order has an impact on the overall integration.",
            "",
        ]
        for index, entry in enumerate(entries):
            if index in breaks:
                out.append("")
            out += entry.lines()
        return "".join(line + "\n" for line in out)

    yield GR, text()
    while True:
        for line in entries:  # a line that does not parse is mended after a while
            if line.broken is not None and rng.random() < 0.1:
                line.broken = None
        entry = rng.choice(entries)
        roll = rng.random()
        if roll < 0.35:
            entry.floor[-1] += 1
        elif roll < 0.55:
            entry.bad.append(f"{entry.floor[0]}.{entry.floor[-1] + 1}.{rng.randint(0, 9)}")
        elif roll < 0.62:
            entry.cap = None if entry.cap is not None else entry.floor[0] + 1
        elif roll < 0.72:
            entry.note = [] if entry.note else _note(rng, entry.name)
        elif roll < 0.78 and entry.note:
            entry.note = [entry.note[0].replace("broke", "still breaks")]
        elif roll < 0.83:
            entries.append(_Line(_name(rng), [1, 0], [], None, rng.choice(LICENCES), []))
            entries.sort(key=lambda line: line.name)
        elif roll < 0.86 and len(entries) > 10:
            entries.remove(entry)
        elif roll < 0.88:
            entry.broken = rng.choice(BAD_GR)
        else:
            entry.bad = entry.bad[1:]
        yield GR, text()


def write_history(root: Path, *, seed: int, upper: int, global_: int, lines: int) -> list[str]:
    """A repository at root with ``upper`` and ``global_`` commits, interleaved.

    Returns the paths of the two files at the end.
    """
    rng = random.Random(seed)
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--initial-branch=main"], cwd=root, check=True)
    streams = [(upper, _upper(rng, lines)), (global_, _global(rng, lines - 100))]
    left = [count for count, _ in streams]
    last_path: dict[int, str] = {}
    proc = subprocess.Popen(
        ["git", "fast-import", "--quiet", "--done"], cwd=root, stdin=subprocess.PIPE
    )
    assert proc.stdin is not None
    write = proc.stdin.write
    mark = 0
    stamp = 1_262_304_000  # 2010-01-01
    while any(left):
        which = rng.choice([i for i, count in enumerate(left) if count])
        left[which] -= 1
        path, content = next(streams[which][1])
        mark += 1
        stamp += 3600
        message = f"Update {path} (#{mark})\n".encode()
        data = content.encode()
        write(f"commit refs/heads/main\nmark :{mark}\n".encode())
        write(f"committer Bench <bench@example.invalid> {stamp} +0000\n".encode())
        write(b"data %d\n%s" % (len(message), message))
        if mark > 1:
            write(f"from :{mark - 1}\n".encode())
        previous = last_path.get(which)
        if previous is not None and previous != path:
            write(f"R {previous} {path}\n".encode())
        else:
            write(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
        last_path[which] = path
    write(b"done\n")
    proc.stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    subprocess.run(["git", "checkout", "-q", "main"], cwd=root, check=True)
    return [last_path[which] for which in sorted(last_path)]


def git_log_seconds(root: Path, path: str) -> float:
    """The median wall time of three ``git log -p --follow --first-parent`` of path."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(
            ["git", "log", "-p", "--follow", "--first-parent", "--", path],
            cwd=root,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _lock_pins(url: str) -> int:
    """How many versions-held intervals the lock's history gave."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sqlalchemy.text("SELECT count(*) FROM lock_pin")).scalar() or 0)
    finally:
        engine.dispose()


def govern_history(
    root: Path, url: str, timeout: float, only: str | None = None
) -> tuple[float, float, dict[str, object]]:
    """One ``govern track --history`` process (of one file, ``only``, when given): wall
    seconds, peak RSS (MB), its JSON."""
    target = str(root / only) if only else str(root)
    argv = [sys.executable, "-m", "govern", "track", target, "--history", "--db", url]
    out_file, err_file = root.parent / "history.out", root.parent / "history.err"
    start = time.perf_counter()
    with out_file.open("wb") as out, err_file.open("wb") as err:
        proc = subprocess.Popen([*argv, "--format", "json"], stdout=out, stderr=err, cwd=root)
        deadline = start + timeout
        while True:  # wait4: this child's own peak RSS, not that of earlier children
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                raise RuntimeError(f"govern track --history took over {timeout:.0f} s")
            time.sleep(0.01)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        message = err_file.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"govern track --history exited {proc.returncode}: {message}")
    return wall, usage.ru_maxrss / 1024, json.loads(out_file.read_text())


def check_equivalence(work: Path, seed: int, commits: int) -> tuple[bool, str]:
    """Replay a shorter history by diffs and by re-reading; the same events, in order?"""
    from sqlalchemy import create_engine, text

    from govern.config import load_config
    from govern.service.track import TrackOptions, track
    from govern.store.db import Store

    rows: dict[bool, list[tuple[object, ...]]] = {}
    for reread in (False, True):
        root = work / f"check-{'reread' if reread else 'diffs'}"
        write_history(root, seed=seed, upper=commits, global_=commits, lines=575)
        url = f"sqlite:///{work / f'check-{reread}.db'}"
        with Store(url) as store:
            track(
                store,
                root,
                None,
                config=load_config(root),
                options=TrackOptions(history=True, reread=reread),
            )
        engine = create_engine(url)
        with engine.connect() as connection:
            rows[reread] = [
                tuple(row)
                for row in connection.execute(
                    text(
                        'SELECT e.kind, x.key, e."commit", e.detail FROM event e '
                        "JOIN exclusion x ON x.id = e.exclusion_id ORDER BY e.id"
                    )
                )
            ]
        engine.dispose()
    same = rows[False] == rows[True]
    return same, f"{len(rows[False]):,} events by diffs, {len(rows[True]):,} by re-reading"


def run(
    work: Path, *, seed: int, upper: int, global_: int, lines: int, check: int, timeout: float
) -> None:
    """The history benchmark: print the figures and the verdict."""
    root = work / "history"
    start = time.perf_counter()
    paths = write_history(root, seed=seed, upper=upper, global_=global_, lines=lines)
    print(
        f"history: {upper:,} commits of {paths[0]} (~{lines} lines) and "
        f"{global_:,} of {GR} (~{lines - 100} lines), written in "
        f"{time.perf_counter() - start:.1f} s (seed {seed})"
    )
    gits = {path: git_log_seconds(root, path) for path in paths}
    for path, seconds in gits.items():
        print(f"  git log -p --follow --first-parent {path}: {seconds:.2f} s (median of 3)")
    baseline = sum(gits.values())
    wall, peak, document = govern_history(root, f"sqlite:///{work / 'history.db'}", timeout)
    notes = [str(note) for note in document.get("notes", [])]  # type: ignore[attr-defined]
    print(
        f"  govern track --history: {wall:.2f} s, peak RSS {peak:.0f} MB; replayed "
        f"{document['replayed_commits']:,} commits, {document['events']:,} events "
        f"(added {document['added']:,}, changed {document['changed']:,}, "
        f"removed {document['removed']:,}, annotation-changed "
        f"{document['annotation_changed']:,})"
    )
    for note in notes:
        print(f"    note: {note[:160]}")
    ratio = wall / baseline
    verdict = "PASS" if ratio <= HISTORY_TARGET_RATIO else "FAIL"
    print(
        f"  target: govern / git log -p = {wall:.2f} / {baseline:.2f} = {ratio:.1f}x  "
        f"<= {HISTORY_TARGET_RATIO:.0f}x  {verdict}"
    )
    # The same history where the repository names upper-constraints.txt as the lock it is
    # ([[tool.govern.locks]], as OpenStack would): a lock's pins are no exclusions (issue
    # 25); its history is read for what it held when (lock_pin rows), not replayed as events.
    (root / ".govern.toml").write_text('[[locks]]\npath = "**/upper-constraints.txt"\n')
    lock_db = f"sqlite:///{work / 'history-locked.db'}"
    wall_l, peak_l, doc_l = govern_history(root, lock_db, timeout)
    ratio_l = wall_l / baseline
    print(
        f"  with upper-constraints.txt named a lock: {wall_l:.2f} s, peak RSS {peak_l:.0f} MB; "
        f"replayed {doc_l['replayed_commits']:,} commits, {doc_l['events']:,} events, "
        f"{_lock_pins(lock_db):,} lock pin intervals"
    )
    print(
        f"  target (locked): govern / git log -p = {wall_l:.2f} / {baseline:.2f} = "
        f"{ratio_l:.1f}x  <= {HISTORY_TARGET_RATIO:.0f}x  "
        f"{'PASS' if ratio_l <= HISTORY_TARGET_RATIO else 'FAIL'}"
    )
    # The lock alone, against git log -p of it alone (the issue's own measure).
    lone_db = f"sqlite:///{work / 'history-lock-alone.db'}"
    wall_u, _, _ = govern_history(root, lone_db, timeout, only=UC_MOVED)
    ratio_u = wall_u / gits[UC_MOVED]
    print(
        f"  the lock alone ({UC_MOVED}, {_lock_pins(lone_db):,} intervals): govern / git log -p "
        f"= {wall_u:.2f} / {gits[UC_MOVED]:.2f} = {ratio_u:.1f}x  <= {HISTORY_TARGET_RATIO:.0f}x  "
        f"{'PASS' if ratio_u <= HISTORY_TARGET_RATIO else 'FAIL'}"
    )
    (root / ".govern.toml").unlink()
    if check:
        same, what = check_equivalence(work, seed + 1, check)
        print(
            f"  check ({check} commits of each file): diffs and re-reading give the same "
            f"events: {'PASS' if same else 'FAIL'} ({what})"
        )
