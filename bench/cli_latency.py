"""Commands that answer at once: ``govern status`` and its kind against the import floor.

This is a benchmark, not a test: it prints figures and PASS/FAIL against the target, and
always exits 0 unless the benchmark itself cannot run.

A small store is built in a scratch directory: a git repository of one
``requirements.txt`` with one exclusion (``requests>=2.0,!=2.30.0  # ...``), a bare
repository as its ``origin``, a ``.govern.toml`` that proposes through git
(``[propose] via = "git"``), tracked once into a fresh SQLite file (untimed). Then each of
these runs as a fresh process of this interpreter, ``--rounds`` times (default 9; one
untimed warm-up each), the commands in turn inside each round so that the machine's drift
hits them all alike:

- the floor: ``python -c 'import sqlalchemy, sqlite3'``;
- ``govern status``, ``govern history requests``, ``govern dashboard``;
- ``govern track REPO`` (a no-op: the second run over an unchanged repository);
- ``govern propose --dry-run`` (nothing is verified: it reads the store and says so);
- as information, with each checkout's code: ``import sqlite3, sqlmodel, typer`` (the ORM,
  which the reading commands no longer import) and ``import govern.cli.app,
  govern.application, govern.store.db`` (the CLI, the configuration and the store's opening,
  in both checkouts: what every command imports before its own work).

Each is printed as its median and minimum in seconds and as its median over the floor's
median from the same run. Target (issue 24, item 8): each command ≤ 1.5 x the floor.

``--baseline REF`` also runs every command from a ``git worktree`` of REF (a detached one
in the scratch directory, removed at the end), on a store of its own built by that code
(its schema may be another revision), side by side; the rounds alternate which checkout
goes first. ``--imports`` prints, for this checkout, the slowest imports of each command
(``python -X importtime``) as well.

Usage::

    cd bench && ../.venv/bin/python cli_latency.py --baseline main
    ../.venv/bin/python cli_latency.py --rounds 5 --imports --keep

Both checkouts' bytecode is compiled first, as pip does on install.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchkit import BENCH_DIR, work_directory

REPO = BENCH_DIR.parent
TARGET = 1.5  # x the floor
FLOOR = ("floor: import sqlalchemy, sqlite3", ["-c", "import sqlalchemy, sqlite3"])
# As information: what the ORM alone costs (the reading commands no longer import it), and
# what every reading command imports before its own work.
REFERENCES = (
    ("(import sqlmodel, typer)", ["-c", "import sqlite3, sqlmodel, typer"]),
    (
        "(import cli, config, store.db)",
        ["-c", "import govern.cli.app, govern.application, govern.store.db"],
    ),
)
REQUIREMENTS = "requests>=2.0,!=2.30.0  # 2.30.0 broke our uploads, see https://example.invalid/1\n"


@dataclass(frozen=True)
class Checkout:
    """Where a govern's code is, and the small store and repository it runs on."""

    label: str
    code: Path
    root: Path  # the tracked repository (the commands run here)
    db: str

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GOVERN_", "PIP_"))}
        env["PYTHONPATH"] = str(self.code)
        env["PIP_CONFIG_FILE"] = os.devnull
        return env

    def commands(self) -> list[tuple[str, list[str]]]:
        """Each command's name and its arguments after ``python -m govern``."""
        db = ["--db", self.db]
        return [
            ("govern status", ["status", *db]),
            ("govern history requests", ["history", "requests", *db]),
            ("govern dashboard", ["dashboard", *db]),
            ("govern track (no-op)", ["track", str(self.root), *db]),
            ("govern propose --dry-run", ["propose", "--dry-run", *db]),
        ]

    def timed(self) -> list[tuple[str, list[str]]]:
        """Every timed run's name and its arguments after ``python``."""
        return [*REFERENCES, *((name, ["-m", "govern", *argv]) for name, argv in self.commands())]


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "bench",
            "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        },
    )
    return done.stdout


def build_store(work: Path, slug: str, label: str, code: Path) -> Checkout:
    """A repository of one exclusion, its bare origin, tracked once with ``code``'s govern."""
    base = work / slug
    root, remote = base / "repo", base / "origin.git"
    root.mkdir(parents=True)
    _git(base, "init", "-q", "--bare", "-b", "main", str(remote))
    _git(root, "init", "-q", "-b", "main")
    (root / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    (root / ".govern.toml").write_text('[propose]\nvia = "git"\nremote = "origin"\n', "utf-8")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "requirements")
    _git(root, "remote", "add", "origin", str(remote))
    _git(root, "push", "-q", "origin", "main")
    checkout = Checkout(label, code, root, f"sqlite:///{base / 'govern.db'}")
    first = _run(checkout, ["track", str(root), "--db", checkout.db])
    if "1 added" not in first:
        raise SystemExit(f"{label}: the first track did not add the exclusion:\n{first}")
    for name, argv in checkout.commands():  # each works, before anything is timed
        _run(checkout, argv, name=name)
    return checkout


def _run(checkout: Checkout, argv: list[str], *, name: str = "") -> str:
    done = subprocess.run(
        [sys.executable, "-m", "govern", *argv],
        cwd=checkout.root,
        env=checkout.env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"{checkout.label}: {name or argv[0]} exited {done.returncode}:\n{done.stderr[-2000:]}"
        )
    return done.stdout


def time_once(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}")
    return elapsed


def measure(checkouts: list[Checkout], rounds: int) -> dict[tuple[str, str], list[float]]:
    """Seconds of every run, by (checkout label, command name); the floor under ``floor``."""
    times: dict[tuple[str, str], list[float]] = {}
    floor_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for index in range(rounds + 1):  # the first round warms the caches, untimed
        order = checkouts if index % 2 == 0 else checkouts[::-1]
        for position in range(len(checkouts[0].timed()) + 1):
            if position == 0:
                seconds = time_once([sys.executable, *FLOOR[1]], REPO, floor_env)
                if index:
                    times.setdefault(("floor", FLOOR[0]), []).append(seconds)
                continue
            for checkout in order:
                name, argv = checkout.timed()[position - 1]
                seconds = time_once([sys.executable, *argv], checkout.root, checkout.env())
                if index:
                    times.setdefault((checkout.label, name), []).append(seconds)
    return times


_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def slowest_imports(checkout: Checkout, argv: list[str], count: int = 12) -> list[str]:
    """The ``count`` slowest top-level imports of one run (cumulative ms), and their sum."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "govern", *argv],
        cwd=checkout.root,
        env=checkout.env(),
        capture_output=True,
        text=True,
        check=False,
    )
    rows = []
    for found in _IMPORTTIME.finditer(done.stderr):
        cumulative, depth, module = int(found[2]), (len(found[3]) - 1) // 2, found[4]
        if depth <= 1:
            rows.append((cumulative, depth, module))
    total = sum(c for c, depth, _ in rows if depth == 0)
    shown = sorted(rows, reverse=True)[:count]
    return [f"{total / 1000:7.1f} ms imported in all"] + [
        f"{c / 1000:7.1f} ms {'  ' * depth}{module}" for c, depth, module in shown
    ]


def report(checkouts: list[Checkout], times: dict[tuple[str, str], list[float]]) -> None:
    floor = statistics.median(times[("floor", FLOOR[0])])
    floor_min = min(times[("floor", FLOOR[0])])
    labels = [c.label for c in checkouts]
    head = "".join(f" | {label[:26]:>26}" for label in labels)
    print(f"\n{'':34}{head}")
    print(f"{'':34}" + " | median   min    x floor" * len(labels))
    print(f"{FLOOR[0]:34}" + f" | {floor:6.3f} {floor_min:6.3f}   {1.0:6.2f}  " * len(labels))
    ours = checkouts[-1]
    for name, _ in ours.timed():
        cells = []
        for label in labels:
            runs = times[(label, name)]
            median = statistics.median(runs)
            cells.append(f" | {median:6.3f} {min(runs):6.3f}   {median / floor:6.2f}x ")
        ratio = statistics.median(times[(ours.label, name)]) / floor
        verdict = "PASS" if ratio <= TARGET else "FAIL"
        verdict = "" if name.startswith("(") else f"  ≤ {TARGET}x {verdict}"
        print(f"{name:34}{''.join(cells)}{verdict}")
    print("\nseconds: median and minimum of each command's runs; x floor: median / floor median;")
    print("(in brackets): information, what a command that opens the store imports first")


def _worktree(work: Path, ref: str) -> Path:
    path = work / "baseline-code"
    _git(REPO, "worktree", "add", "-q", "--detach", str(path), ref)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="timed runs of each (default 9)")
    parser.add_argument("--baseline", metavar="REF", help="also run a worktree of this git ref")
    parser.add_argument("--imports", action="store_true", help="the slowest imports of each")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    print(f"govern commands against the import floor: python {sys.version.split()[0]}")
    print(f"rounds {args.rounds}; cpus {os.cpu_count()}, load average ", end="")
    print(", ".join(f"{x:.2f}" for x in os.getloadavg()))
    with work_directory(args.keep, "cli-latency") as work:
        baseline_code = None
        try:
            checkouts = []
            if args.baseline:
                baseline_code = _worktree(work, args.baseline)
                commit = _git(baseline_code, "rev-parse", "--short", "HEAD").strip()
                compileall.compile_dir(baseline_code / "govern", quiet=1)
                checkouts.append(
                    build_store(
                        work, "baseline", f"baseline {args.baseline} ({commit})", baseline_code
                    )
                )
            compileall.compile_dir(REPO / "govern", quiet=1)
            here = _git(REPO, "rev-parse", "--short", "HEAD").strip()
            dirty = " +changes" if _git(REPO, "status", "--porcelain", "govern").strip() else ""
            checkouts.append(build_store(work, "this", f"this checkout ({here}{dirty})", REPO))
            print(f"store: one exclusion in one repository, SQLite, in {work}")
            times = measure(checkouts, args.rounds)
            report(checkouts, times)
            if args.imports:
                for name, argv in checkouts[-1].commands():
                    print(f"\n{name}: slowest imports (python -X importtime, this checkout)")
                    print("\n".join(slowest_imports(checkouts[-1], argv)))
        finally:
            if baseline_code is not None:
                _git(REPO, "worktree", "remove", "--force", str(baseline_code))


if __name__ == "__main__":
    main()
