"""Benchmark govern on hostile inputs: time and peak memory of each case against its target.

This is a benchmark, not a test: it prints one line per case (wall seconds, peak RSS of the
child process, the target and PASS/FAIL) and exits 0 unless the benchmark itself cannot run.
Each case runs in a fresh child process (``python bench/hostile.py --child CASE``) so that
its peak RSS is its own (read with ``os.wait4``).

Usage::

    python bench/hostile.py                 # every case
    python bench/hostile.py --case clauses  # one case
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchkit import work_directory


@dataclass(frozen=True)
class Case:
    """One hostile input: what it is, how to run it in a child, and its targets."""

    name: str
    what: str
    # In the child: writes its input under the scratch directory and returns the timed work.
    # Keep the input on disk (not in memory) so the peak RSS is the work's own.
    prepare: Callable[[Path], Callable[[], object]]
    max_seconds: float
    max_rss_mb: float


CASES: dict[str, Case] = {}


def case(name: str, what: str, *, max_seconds: float, max_rss_mb: float) -> Callable[..., object]:
    """Register ``prepare(work: Path) -> work_to_time`` as a case of this benchmark."""

    def register(
        prepare: Callable[[Path], Callable[[], object]],
    ) -> Callable[[Path], Callable[[], object]]:
        CASES[name] = Case(name, what, prepare, max_seconds, max_rss_mb)
        return prepare

    return register


# Cases are registered below this line, one function each (``@case(...)``).


def _child(name: str, work: Path) -> None:
    work_to_time = CASES[name].prepare(work)
    started = time.perf_counter()
    work_to_time()
    print(f"{time.perf_counter() - started:.3f}")


def _measure(name: str, work: Path) -> tuple[float, float]:
    """Wall seconds of the case's own work and the child's peak RSS in MB."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", name, "--work", str(work)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"case {name} failed (exit {os.waitstatus_to_exitcode(status)})")
    seconds = float(output.strip().splitlines()[-1])
    return seconds, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def main() -> None:
    """Run the chosen cases and print their figures against the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="run only these")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.work)
        return
    names = args.case or sorted(CASES)
    print(f"{'case':<12} {'seconds':>9} {'peak MB':>9}  target")
    with work_directory(args.keep, "hostile") as work:
        for name in names:
            spec = CASES[name]
            scratch = work / name
            scratch.mkdir()
            seconds, rss = _measure(name, scratch)
            verdict = "PASS" if seconds <= spec.max_seconds and rss <= spec.max_rss_mb else "FAIL"
            print(
                f"{name:<12} {seconds:>9.3f} {rss:>9.1f}  "
                f"≤ {spec.max_seconds:g} s, ≤ {spec.max_rss_mb:g} MB  {verdict}  ({spec.what})"
            )


if __name__ == "__main__":
    main()
