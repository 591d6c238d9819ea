"""Benchmark ``govern audit``: start-up cost against a bare floor, and growth with size.

This is a benchmark, not a test: it prints figures and PASS/FAIL against the targets, and
always exits 0 unless the benchmark itself cannot run.

What is measured, in one run:

1. Corpus comparison. The real requirement sources of /work/shared/corpus (vLLM, OpenStack,
   Home Assistant, and Airflow's ``airflow-core/pyproject.toml``) are copied into a work
   directory laid out so that discovery finds them (``requirements/*.txt``, ``*.in``,
   ``airflow-core/pyproject.toml``; vLLM's ``-r common.txt`` still resolves). Then, alternating
   for ``--rounds`` rounds, the wall time of two fresh processes is taken:

   a. ``python -m govern audit DIR --format json --fail-on never``;
   b. a bare baseline script that reads the same files and parses every requirement line with
      ``packaging.requirements.Requirement`` (comments stripped naively, option lines skipped,
      the pyproject's dependency arrays read with ``tomllib``): Python start-up plus parsing,
      the floor.

   Reported: median and p90 wall of each, the number of requirements, and the ratio of the
   medians. ``python -X importtime`` shows the ten slowest imports (cumulative), and a
   ``sys.modules`` check says whether any heavy module (database, HTTP, scheduler, web, rich)
   was imported by ``govern audit``.

2. Scale. Deterministic generated trees of 1,000 / 10,000 / 100,000 requirements
   (``--sizes``), in files of about 500 lines under ``requirements/`` with realistic lines
   (specifiers, markers, extras, inline comments, reason blocks with links and
   ``# govern:`` annotations, section headers, blank lines, a few ``-r`` includes). Each size
   is audited once to warm the OS cache (its JSON is checked) and once timed; the child's
   peak RSS comes from ``os.wait4``. Reported: wall, peak RSS, microseconds per requirement
   and how the time grows with size.

Targets (from the issue):

- median wall ratio ``govern audit`` / bare packaging script ≤ 2.0 on the corpus;
- a generated tree of 100,000 requirements audited in ≤ 5 s with ≤ 300 MB peak RSS;
- report how the time grows with size.

Usage::

    python bench/audit.py            # 21 rounds; 1,000 / 10,000 / 100,000 requirements
    python bench/audit.py --quick    # 5 rounds; 1,000 / 10,000
    python bench/audit.py --rounds 11 --sizes 1000,50000 --keep

No network is used. The work directory (under ``bench/.work/``, git-ignored) is removed at
the end unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import itertools
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

BENCH_DIR = Path(__file__).resolve().parent
# The corpus as committed under tests/data (byte-for-byte copies of shared/corpus, with
# their provenance), so that the benchmark runs from any clone.
CORPUS = BENCH_DIR.parent / "tests" / "data"

RATIO_TARGET = 2.0
SCALE_TARGET_SIZE = 100_000
SCALE_TARGET_SECONDS = 5.0
SCALE_TARGET_MB = 300.0

HEAVY_MODULES = (
    "sqlalchemy",
    "sqlmodel",
    "httpx",
    "alembic",
    "apscheduler",
    "starlette",
    "fastapi",
    "rich",
)

# corpus file -> where it goes in the work tree (names discovery finds; vLLM's cuda.txt says
# "-r common.txt", so common.txt keeps its basename and sits in the same directory).
CORPUS_LAYOUT: tuple[tuple[str, str], ...] = (
    ("vllm/requirements/common.txt", "requirements/common.txt"),
    ("vllm/requirements/cuda.txt", "requirements/vllm-cuda.txt"),
    ("vllm/requirements/kv_connectors.txt", "requirements/vllm-kv-connectors.txt"),
    ("vllm/requirements/test/cuda.in", "requirements/vllm-test-cuda.in"),
    ("openstack/global-requirements.txt", "requirements/openstack-global.txt"),
    ("openstack/denylist.txt", "requirements/openstack-denylist.txt"),
    (
        "home-assistant/homeassistant__package_constraints.txt",
        "requirements/constraints-home-assistant.txt",
    ),
    ("airflow/airflow-core__pyproject.toml", "airflow-core/pyproject.toml"),
)

BASELINE_SCRIPT = '''\
"""The floor: Python start-up, read the files, parse every requirement with packaging."""

import sys
import tomllib
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement


def from_pyproject(path):
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    project = data.get("project", {})
    strings = list(project.get("dependencies", []))
    for values in project.get("optional-dependencies", {}).values():
        strings.extend(values)
    for values in data.get("dependency-groups", {}).values():
        strings.extend(value for value in values if isinstance(value, str))
    strings.extend(data.get("build-system", {}).get("requires", []))
    return strings


def from_requirements(path):
    strings = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.partition("#")[0].strip()
        if line and not line.startswith("-"):
            strings.append(line)
    return strings


parsed = failed = 0
for arg in sys.argv[1:]:
    path = Path(arg)
    reader = from_pyproject if path.name == "pyproject.toml" else from_requirements
    for text in reader(path):
        try:
            Requirement(text)
        except InvalidRequirement:
            failed += 1
        else:
            parsed += 1
print(parsed, failed)
'''

IMPORT_CHECK_SCRIPT = '''\
"""Run ``govern audit DIR`` in-process, then report which heavy modules were imported."""

import json
import sys

from govern.cli import main

heavy = json.loads(sys.argv[2])
try:  # main, not the process entry point (run), which ends the process with os._exit
    main(["audit", sys.argv[1], "--format", "json", "--fail-on", "never"])
except SystemExit:
    pass
loaded = sorted({name.partition(".")[0] for name in sys.modules} & set(heavy))
sys.stderr.write("GOVERN-BENCH-HEAVY=" + json.dumps(loaded) + "\\n")
'''

_IMPORTTIME_RE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S.*)$")


# --------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` (linear interpolation between order stats)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * fraction
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def govern_argv(directory: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "govern",
        "audit",
        str(directory),
        "--format",
        "json",
        "--fail-on",
        "never",
    ]


def time_run(argv: Sequence[str], cwd: Path) -> float:
    """Wall time of one child process, output discarded; raises when it fails."""
    start = time.perf_counter()
    completed = subprocess.run(
        argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        stderr = completed.stderr.decode("utf-8", "replace")
        raise RuntimeError(f"{argv[:4]} exited {completed.returncode}:\n{stderr[-2000:]}")
    return elapsed


@dataclass(frozen=True, slots=True)
class ChildRun:
    """One child process measured with ``os.wait4``."""

    wall: float
    max_rss_kib: int
    exit_code: int
    stderr: str
    timed_out: bool


def run_measured(
    argv: Sequence[str], cwd: Path, stdout_path: Path | None, timeout: float
) -> ChildRun:
    """Run ``argv``; wall time and peak RSS (``ru_maxrss``, KiB) of exactly that child."""
    with contextlib.ExitStack() as stack:
        stderr_file = stack.enter_context(tempfile.TemporaryFile())
        stdout: IO[bytes] | int = subprocess.DEVNULL
        if stdout_path is not None:
            stdout = stack.enter_context(stdout_path.open("wb"))
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=stdout, stderr=stderr_file)
        timed_out = threading.Event()

        def _kill() -> None:
            timed_out.set()
            proc.kill()

        timer = threading.Timer(timeout, _kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: tell Popen
        stderr_file.seek(0)
        stderr = stderr_file.read().decode("utf-8", "replace")
    return ChildRun(wall, usage.ru_maxrss, proc.returncode, stderr, timed_out.is_set())


# --------------------------------------------------------------------------
# 1. Corpus comparison
# --------------------------------------------------------------------------


def build_corpus(root: Path) -> list[Path]:
    """Copy the corpus sources into ``root`` (byte for byte); the files, in layout order."""
    files: list[Path] = []
    for source, target in CORPUS_LAYOUT:
        destination = root / target
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORPUS / source, destination)
        files.append(destination)
    return files


def parse_importtime(stderr: str) -> list[tuple[int, int, int, str]]:
    """``(cumulative_us, self_us, depth, module)`` for each line of ``-X importtime``."""
    rows: list[tuple[int, int, int, str]] = []
    for line in stderr.splitlines():
        match = _IMPORTTIME_RE.match(line)
        if match is None:
            continue  # the header, or the audit's own stderr
        self_us, cumulative_us, indent, name = match.groups()
        rows.append((int(cumulative_us), int(self_us), len(indent) // 2, name.strip()))
    return rows


def corpus_section(work: Path, rounds: int) -> None:
    print("=" * 78)
    print("1. Corpus: govern audit vs the bare packaging floor")
    print("=" * 78)
    corpus_dir = work / "corpus"
    files = build_corpus(corpus_dir)
    baseline = work / "baseline.py"
    baseline.write_text(BASELINE_SCRIPT, encoding="utf-8")
    baseline_argv = [sys.executable, str(baseline), *map(str, files)]
    govern = govern_argv(corpus_dir)

    # The counts, and a check that both commands work, before anything is timed.
    counted = subprocess.run(
        baseline_argv, cwd=work, capture_output=True, text=True, check=True
    ).stdout.split()
    parsed, failed = int(counted[0]), int(counted[1])
    report = subprocess.run(govern, cwd=work, capture_output=True, text=True, check=False)
    if report.returncode != 0:
        raise RuntimeError(f"govern audit failed on the corpus:\n{report.stderr[-2000:]}")
    summary = json.loads(report.stdout)["summary"]
    physical = sum(len(path.read_bytes().splitlines()) for path in files)

    print(f"work dir:     {corpus_dir}")
    print(f"files:        {len(files)} ({physical} physical lines)")
    for path in files:
        print(f"              {path.relative_to(corpus_dir)}")
    print(
        f"requirements: {parsed + failed} requirement lines by the baseline's reading "
        f"({parsed} parsed, {failed} rejected by its naive comment stripping)"
    )
    print(
        f"              govern: {summary['requirements']} requirements in "
        f"{summary['sources']} sources, {summary['exclusions']} exclusions, "
        f"findings {summary['findings']}"
    )

    print(f"\ntiming {rounds} rounds, alternating (plus one untimed warm-up each) ...")
    time_run(govern, work)
    time_run(baseline_argv, work)
    govern_times: list[float] = []
    baseline_times: list[float] = []
    for index in range(rounds):
        # Alternate which goes first, so slow drift of the machine hits both equally.
        if index % 2 == 0:
            govern_times.append(time_run(govern, work))
            baseline_times.append(time_run(baseline_argv, work))
        else:
            baseline_times.append(time_run(baseline_argv, work))
            govern_times.append(time_run(govern, work))

    g_med, b_med = statistics.median(govern_times), statistics.median(baseline_times)
    paired = statistics.median(g / b for g, b in zip(govern_times, baseline_times, strict=True))
    ratio = g_med / b_med
    print(f"{'':28}{'median':>11}{'p90':>11}{'min':>11}")
    for label, values in (
        ("govern audit (json)", govern_times),
        ("baseline (packaging floor)", baseline_times),
    ):
        print(
            f"{label:28}{ms(statistics.median(values))} {ms(percentile(values, 0.9))} "
            f"{ms(min(values))}"
        )
    print(f"requirements: {parsed + failed}")
    print(
        f"median ratio govern/baseline: {ratio:.2f}  (median of per-round ratios {paired:.2f})"
        f"  target <= {RATIO_TARGET:.1f}  {verdict(ratio <= RATIO_TARGET)}"
    )
    print(f"govern minus floor (median): {ms(g_med - b_med).strip()}")

    # Where govern's start-up goes.
    traced = subprocess.run(
        [sys.executable, "-X", "importtime", *govern[1:]],
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    rows = parse_importtime(traced.stderr)
    total_us = sum(cumulative for cumulative, _, depth, _ in rows if depth == 0)
    print(
        f"\npython -X importtime: {len(rows)} modules imported, {total_us / 1000:.1f} ms in total"
    )
    print("top 10 by cumulative time:")
    print(f"  {'cumulative':>12} {'self':>10}  module")
    for cumulative, self_us, depth, name in sorted(rows, reverse=True)[:10]:
        print(f"  {cumulative / 1000:9.1f} ms {self_us / 1000:7.1f} ms  {'  ' * depth}{name}")

    checker = work / "check_imports.py"
    checker.write_text(IMPORT_CHECK_SCRIPT, encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, str(checker), str(corpus_dir), json.dumps(HEAVY_MODULES)],
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    marker = "GOVERN-BENCH-HEAVY="
    found = [line for line in checked.stderr.splitlines() if line.startswith(marker)]
    if not found:
        raise RuntimeError(f"the import check did not report:\n{checked.stderr[-2000:]}")
    heavy: list[str] = json.loads(found[-1][len(marker) :])
    by_importtime = sorted({name.partition(".")[0] for _, _, _, name in rows} & set(HEAVY_MODULES))
    print(f"watched for heavy imports: {', '.join(HEAVY_MODULES)}")
    print(f"heavy imports: {', '.join(heavy) if heavy else 'none'}  {verdict(not heavy)}")
    if by_importtime != heavy:
        print(f"  (importtime saw: {', '.join(by_importtime) or 'none'})")


# --------------------------------------------------------------------------
# 2. Scale
# --------------------------------------------------------------------------

LINES_PER_FILE = 500
INCLUDE_EVERY = 10  # file k (k % 10 == 1) includes file k - 1

_MARKERS = (
    'python_version >= "3.10"',
    'python_version < "3.12"',
    'sys_platform == "linux"',
    'sys_platform != "win32"',
    'platform_machine == "x86_64" and python_version < "3.13"',
    'implementation_name == "cpython"',
)
_INLINE = (
    "pinned by CI",
    "Apache-2.0",
    "BSD License",
    "see https://github.com/example/{name}/issues/{n}",
    "until {name} {v} is fixed, #{n}",
    'govern: reason="{v} breaks the build" review-by=2026-01-01',
)
_REASONS = (
    "# NOTE(dev): {name} {v} crashes on import, see https://github.com/example/{name}/issues/{n}",
    "# {name} {v} is broken on aarch64 (example/{name}#{n})",
    "# Pinned because of CVE-2024-{n:04d}; https://nvd.nist.gov/vuln/detail/CVE-2024-{n:04d}",
    "# Cap until a fixed newer release is verified for runtime images",
    "# https://bugs.launchpad.net/example/+bug/{n}",
)
_ANNOTATIONS = (
    '# govern: reason="{name} {v} regressed the API" review-by=2026-01-01',
    '# govern: reason="wheel missing for 3.13" issue=example/{name}#{n} review-by=2026-01-01',
    '# govern: reason="waiting for upstream fix" bad={v} owner=@runtime-team review-by=2026-01-01',
)


@dataclass(frozen=True, slots=True)
class Tree:
    """A generated tree: its root, requirement count, file count and physical lines."""

    root: Path
    requirements: int
    files: int
    lines: int


def _version(rng: random.Random) -> str:
    return f"{rng.randint(0, 30)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"


# (weight, template): close to the corpus's density, where a third of the requirements
# carry an exclusion clause (!=, <, ==, ~=), ~0.4 clauses per requirement, and the rest are
# floors or bare names.
_SPECIFIERS: tuple[tuple[int, str], ...] = (
    (50, ">={lo}"),
    (12, ""),
    (7, ">={lo},<{hi}"),
    (5, "!={bad}"),
    (3, ">={lo},!={bad},<{hi}"),
    (7, "=={bad}"),
    (4, "~={bad}"),
    (3, "<{hi}"),
    (2, ">={lo},!={bad},!={bad2},!={bad3},!={lo}.*"),  # a long != list with a wildcard
    (3, " >= {lo} , < {hi}"),  # spaces around operators
    (4, ">={lo}rc1"),  # a pre-release floor
)
_SPECIFIER_TEMPLATES = tuple(template for _, template in _SPECIFIERS)
_SPECIFIER_WEIGHTS = tuple(weight for weight, _ in _SPECIFIERS)


def _specifier(rng: random.Random) -> str:
    (template,) = rng.choices(_SPECIFIER_TEMPLATES, weights=_SPECIFIER_WEIGHTS)
    return template.format(
        lo=f"{rng.randint(0, 9)}.{rng.randint(0, 9)}",
        hi=f"{rng.randint(10, 20)}.0",
        bad=_version(rng),
        bad2=_version(rng),
        bad3=_version(rng),
    )


def _requirement(rng: random.Random, name: str, marker: str | None) -> str:
    extras = "[extra]" if rng.random() < 0.05 else ""
    text = f"{name}{extras}{_specifier(rng)}"
    if marker is not None:
        text += f"; {marker}"
    if rng.random() < 0.15:
        comment = rng.choice(_INLINE).format(name=name, v=_version(rng), n=rng.randint(1, 9999))
        text += f"  # {comment}"
    return text


def generate_tree(root: Path, size: int, seed: int) -> Tree:
    """Write ``size`` requirement lines under ``root/requirements/`` (deterministic)."""
    rng = random.Random(seed)
    directory = root / "requirements"
    directory.mkdir(parents=True)
    written = files = lines_total = 0
    index = 0
    while written < size:
        lines = [f"# generated file {files} (seed {seed})", ""]
        if files % INCLUDE_EVERY == 1:
            lines += [f"-r part-{files - 1:05d}.txt", ""]
        if files == 0:
            lines += ["--extra-index-url https://example.invalid/simple", ""]
        while len(lines) < LINES_PER_FILE and written < size:
            roll = rng.random()
            if roll < 0.02:
                lines += ["", f"## section: group-{rng.randint(1, 99)}"]
            elif roll < 0.06:
                lines.append("")
            name = f"pkg-{index}"
            version = _version(rng)
            number = rng.randint(1, 99999)
            if rng.random() < 0.10:  # a reason block above
                block = [rng.choice(_REASONS).format(name=name, v=version, n=number)]
                if rng.random() < 0.5:
                    block.append(rng.choice(_ANNOTATIONS).format(name=name, v=version, n=number))
                lines += block
            if rng.random() < 0.02 and size - written >= 2:  # one package split by marker
                lines.append(_requirement(rng, name, 'python_version < "3.12"'))
                lines.append(_requirement(rng, name, 'python_version >= "3.12"'))
                written += 2
            else:
                marker = rng.choice(_MARKERS) if rng.random() < 0.20 else None
                lines.append(_requirement(rng, name, marker))
                written += 1
            index += 1
        (directory / f"part-{files:05d}.txt").write_text("\n".join(lines) + "\n", "utf-8")
        files += 1
        lines_total += len(lines)
    return Tree(root, written, files, lines_total)


@dataclass(frozen=True, slots=True)
class ScaleResult:
    tree: Tree
    run: ChildRun
    counted: int | None  # requirements in govern's JSON summary
    exclusions: int | None
    findings: int | None
    report_mb: float  # size of the JSON report


def _count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def scale_section(work: Path, sizes: Sequence[int], seed: int, timeout: float) -> None:
    print()
    print("=" * 78)
    print("2. Scale: generated trees")
    print("=" * 78)
    results: list[ScaleResult] = []
    for size in sizes:
        root = work / f"scale-{size}"
        started = time.perf_counter()
        tree = generate_tree(root, size, seed)
        generated = time.perf_counter() - started
        print(
            f"generated {tree.requirements:,} requirements in {tree.files} files "
            f"({tree.lines:,} lines) at {root} in {generated:.1f} s"
        )
        argv = govern_argv(root)
        # Warm the OS cache, and check the report, with an untimed run.
        out = work / f"scale-{size}.json"
        warm = run_measured(argv, work, out, timeout)
        counted = exclusions = findings = None
        report_mb = 0.0
        if warm.exit_code == 0:
            report_mb = out.stat().st_size / 2**20
            summary = json.loads(out.read_text("utf-8"))["summary"]
            counted = int(summary["requirements"])
            exclusions = int(summary["exclusions"])
            findings = sum(int(count) for count in summary["findings"].values())
        out.unlink(missing_ok=True)
        run = run_measured(argv, work, None, timeout) if warm.exit_code == 0 else warm
        if run.exit_code != 0:
            why = f"killed after {timeout:.0f} s" if run.timed_out else f"exit {run.exit_code}"
            print(f"  govern audit FAILED ({why}):\n{run.stderr[-2000:]}")
        elif counted != tree.requirements:
            print(f"  note: govern counted {counted} requirements, {tree.requirements} generated")
        results.append(ScaleResult(tree, run, counted, exclusions, findings, report_mb))

    print()
    print(
        f"{'requirements':>12} {'files':>6} {'exclusions':>10} {'findings':>9} {'json MB':>8} "
        f"{'wall s':>8} {'peak MB':>8} {'us/req':>8}  status"
    )
    for result in results:
        tree, run = result.tree, result.run
        status = "ok" if run.exit_code == 0 else ("timeout" if run.timed_out else "failed")
        print(
            f"{tree.requirements:>12,} {tree.files:>6} {_count(result.exclusions):>10} "
            f"{_count(result.findings):>9} {result.report_mb:>8.1f} {run.wall:>8.2f} "
            f"{run.max_rss_kib / 1024:>8.1f} {run.wall / tree.requirements * 1e6:>8.1f}  {status}"
        )
    print("(peak MB: the child's ru_maxrss from os.wait4, in MiB; us/req: wall / requirements)")

    ok = [result for result in results if result.run.exit_code == 0]
    if len(ok) >= 2:
        print("\ngrowth of wall time with size:")
        for small, large in itertools.pairwise(ok):
            n_factor = large.tree.requirements / small.tree.requirements
            t_factor = large.run.wall / small.run.wall
            exponent = math.log(t_factor) / math.log(n_factor) if n_factor > 1 else float("nan")
            marginal = (large.run.wall - small.run.wall) / (
                large.tree.requirements - small.tree.requirements
            )
            print(
                f"  {small.tree.requirements:>7,} -> {large.tree.requirements:>7,}: "
                f"{n_factor:.0f}x requirements -> {t_factor:.1f}x time "
                f"(time ~ n^{exponent:.2f}; {marginal * 1e6:.1f} us per added requirement)"
            )
        first = ok[0]
        print(
            "  (wall includes the fixed start-up, ~the corpus run; "
            f"{first.tree.requirements:,} requirements took {first.run.wall:.2f} s)"
        )

    print("\ntargets:")
    target = [result for result in results if result.tree.requirements == SCALE_TARGET_SIZE]
    if not target:
        print(f"  {SCALE_TARGET_SIZE:,} requirements: not measured (not in --sizes)")
        return
    run = target[0].run
    if run.exit_code != 0:
        print(f"  {SCALE_TARGET_SIZE:,} requirements: FAIL (the audit did not complete)")
        return
    peak_mb = run.max_rss_kib / 1024
    print(
        f"  {SCALE_TARGET_SIZE:,} requirements wall {run.wall:.2f} s  "
        f"target <= {SCALE_TARGET_SECONDS:.0f} s  {verdict(run.wall <= SCALE_TARGET_SECONDS)}"
    )
    print(
        f"  {SCALE_TARGET_SIZE:,} requirements peak {peak_mb:.1f} MB  "
        f"target <= {SCALE_TARGET_MB:.0f} MB  {verdict(peak_mb <= SCALE_TARGET_MB)}"
    )


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not sizes or any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError("sizes must be positive integers")
    return sizes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=None, help="corpus rounds (default 21)")
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=None,
        help="comma-separated tree sizes in requirements (default 1000,10000,100000)",
    )
    parser.add_argument("--quick", action="store_true", help="rounds=5, sizes=1000,10000")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument("--seed", type=int, default=2026, help="seed of the generated trees")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds before a scale run is killed"
    )
    args = parser.parse_args(argv)
    rounds: int = args.rounds if args.rounds is not None else (5 if args.quick else 21)
    sizes: list[int] = (
        args.sizes
        if args.sizes is not None
        else ([1000, 10000] if args.quick else [1000, 10000, 100000])
    )
    if rounds < 1:
        parser.error("--rounds must be at least 1")

    parent = BENCH_DIR / ".work"
    parent.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="audit-", dir=parent))
    print(f"govern audit benchmark: python {sys.version.split()[0]} ({sys.executable})")
    print(f"rounds {rounds}, sizes {', '.join(f'{size:,}' for size in sizes)}, seed {args.seed}")
    print(f"work dir: {work}{' (kept)' if args.keep else ' (removed at the end; --keep keeps)'}")
    print(f"cpus: {os.cpu_count()}, load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    # An installed wheel has its bytecode compiled by pip, as packaging's has; an
    # editable checkout run with PYTHONDONTWRITEBYTECODE=1 would recompile govern
    # from source on every start (~60 ms). Compile it once so both sides compare alike.
    import govern

    compileall.compile_dir(Path(govern.__file__).parent, quiet=1)
    print(f"bytecode: compiled {Path(govern.__file__).parent} (as pip does on install)")
    print()
    try:
        corpus_section(work, rounds)
        scale_section(work, sizes, args.seed, args.timeout)
    finally:
        if args.keep:
            print(f"\nwork dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
            with contextlib.suppress(OSError):
                parent.rmdir()  # only when nothing else (a kept run) is in it
    return 0


if __name__ == "__main__":
    sys.exit(main())
