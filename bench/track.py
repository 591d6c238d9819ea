"""Benchmark ``govern track``: the first sync of a large tree, and a re-sync with no change.

This is a benchmark, not a test: it prints figures and PASS/FAIL against the targets, and
always exits 0 unless the benchmark itself cannot run.

What is measured, on SQLite (a fresh file in the work directory) and, when it answers, on
PostgreSQL (``--pg-url``, default ``postgresql://postgres@127.0.0.1:5432/test``; each run
gets a schema of its own, ``govern_bench_<random>``, dropped CASCADE at the end, even on
failure):

1. A deterministic generated tree (``--seed``) of files of about 500 lines under
   ``requirements/`` holding at least ``--exclusions`` (default 10,000) exclusion clauses:
   ``!=`` lists (some with ``.*``), ``<``, ``<=``, ``~=`` and ``==``, beside floors and bare
   names; about half of the requirements carry a reason (a comment block above naming the
   package, with a link, some with a ``# govern:`` line: owner, review date, issue, bad
   versions; or an inline comment with a link), so annotations with content are stored.

   The tree is NOT a git repository, and ``GIT_CEILING_DIRECTORIES`` is set to the work
   directory so that git does not find the checkout around ``bench/.work/``: provenance is
   then "now" for every line, and no ``git blame`` runs. ``--git`` adds the same runs on a
   copy of the tree committed to a fresh git repository (one commit), where the first sync
   runs ``git blame`` (and a ``git log``) per source.

2. Three runs per backend, each a fresh process
   ``python -m govern track DIR --db URL --format json`` timed by wall clock (start-up,
   audit, schema creation on the empty database, sync and commit included):

   a. first sync into the empty database (checked: ``added`` ≥ the generated clauses);
   b. re-sync with no change, three times, the median reported (checked: ``added`` 0 and
      ``events`` 0, no row written);
   c. re-sync after editing ~1% of the requirement lines (``--edit``): half get another
      inline reason (``annotation-changed`` events), half get one clause moved
      (``changed`` events; the predecessor is relaxed).

   After each run the rows of the ``exclusion``, ``annotation`` and ``event`` tables are
   counted with SQLAlchemy.

3. With ``--profile``: one first sync and one re-sync run in-process under cProfile (fresh
   SQLite database, schema created before profiling; ``--profile-backend postgresql`` to
   profile on PostgreSQL), with the top 25 functions by cumulative time and the top 15 by
   own time.

Targets (from the issue):

- first sync of 10,000 generated exclusions ≤ 10 s;
- a re-sync with no change ≤ 20% of the first sync (wall of b / wall of a).

Usage::

    python bench/track.py                 # SQLite and (if reachable) PostgreSQL
    python bench/track.py --profile       # ... plus cProfile of a first sync and a re-sync
    python bench/track.py --git           # ... plus the same runs on a committed tree
    python bench/track.py --no-postgres --exclusions 20000 --keep
    python bench/track.py --history       # instead: long histories against git log -p

``--history`` replays two generated histories shaped like openstack/requirements'
``upper-constraints.txt`` (6,294 commits x 575 lines) and ``global-requirements.txt``
(2,293 commits) with ``govern track --history`` and times it beside ``git log -p
--follow --first-parent`` of the same files (target: ≤ 10x); see bench/track_history.py.

No network is used besides PostgreSQL on 127.0.0.1. The work directory (under
``bench/.work/``, git-ignored) is removed at the end unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import compileall
import cProfile
import json
import os
import pstats
import random
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchkit import where as _where
from benchkit import work_directory
from sqlalchemy import create_engine, func, select, table, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

BENCH_DIR = Path(__file__).resolve().parent

FIRST_TARGET_EXCLUSIONS = 10_000
FIRST_TARGET_SECONDS = 10.0
RESYNC_TARGET_RATIO = 0.20
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
TABLES = ("exclusion", "annotation", "event")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# --------------------------------------------------------------------------
# The generated tree
# --------------------------------------------------------------------------

LINES_PER_FILE = 500

_MARKERS = (
    'python_version >= "3.10"',
    'python_version < "3.13"',
    'sys_platform == "linux"',
    'platform_machine == "x86_64" and python_version < "3.13"',
)
_REASONS = (
    "{name} {v} crashes on import, see https://github.com/example/{name}/issues/{n}",
    "{name} {v} breaks the build on aarch64 (example/{name}#{n})",
    "{name} {v} is vulnerable, CVE-2024-{n4}; https://nvd.nist.gov/vuln/detail/CVE-2024-{n4}",
    "cap until {name} fixes the API regression, https://bugs.launchpad.net/example/+bug/{n}",
    "{name} {v} leaks memory in workers; see https://github.com/example/{name}/pull/{n}",
)
_STRUCTURED = (
    '# govern: reason="{name} {v} regressed the API" issue=example/{name}#{n} review-by=2027-01-01',
    "# govern: owner=@runtime-team review-by=2027-06-30 "
    "link=https://github.com/example/{name}/issues/{n}",
    '# govern: bad={v} owner=@platform verify="pytest -k {name}"',
)
# (weight, shape): the clauses of one requirement. Floors (>=) are not exclusions.
_SHAPES: tuple[tuple[int, tuple[str, ...]], ...] = (
    (20, ("!={bad0}",)),
    (12, (">={lo}", "!={bad0}", "!={bad1}")),
    (12, (">={lo}", "<{hi}")),
    (8, (">={lo}", "<={hi}.{m}")),
    (8, ("~={lo}.{m}",)),
    (12, ("=={bad0}",)),
    (10, (">={lo}", "!={bad0}", "!={bad1}", "!={bad2}", "<{hi}")),
    (6, ("!={lo}.*", "!={bad0}")),
    (8, (">={lo}",)),
    (4, ()),
)
_SHAPE_CLAUSES = tuple(shape for _, shape in _SHAPES)
_SHAPE_WEIGHTS = tuple(weight for weight, _ in _SHAPES)


def _is_exclusion(clause: str) -> bool:
    return not clause.startswith(">")


def _reason(rng: random.Random, name: str, number: int | None = None) -> str:
    n = rng.randint(1, 99_999) if number is None else number
    template = rng.choice(_REASONS)
    return template.format(name=name, v=_version(rng), n=n, n4=n % 10_000)


def _version(rng: random.Random) -> str:
    return f"{rng.randint(0, 30)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"


@dataclass(slots=True)
class Requirement:
    """One generated requirement line, kept so that it can be edited and written again."""

    line: int  # index in its file's lines
    name: str
    clauses: list[str]
    marker: str | None
    comment: str | None  # inline

    @property
    def exclusions(self) -> int:
        return sum(1 for clause in self.clauses if _is_exclusion(clause))

    def text(self) -> str:
        written = self.name + ",".join(self.clauses)
        if self.marker is not None:
            written += f"; {self.marker}"
        if self.comment is not None:
            written += f"  # {self.comment}"
        return written


@dataclass(slots=True)
class GeneratedFile:
    path: Path
    lines: list[str]
    requirements: list[Requirement]

    def write(self) -> None:
        self.path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")


@dataclass(slots=True)
class Tree:
    """A generated tree: its files, and what they hold."""

    root: Path
    files: list[GeneratedFile]

    @property
    def requirements(self) -> int:
        return sum(len(f.requirements) for f in self.files)

    @property
    def exclusions(self) -> int:
        return sum(r.exclusions for f in self.files for r in f.requirements)

    @property
    def lines(self) -> int:
        return sum(len(f.lines) for f in self.files)

    @property
    def annotated(self) -> int:
        """Requirements with a reason: an inline comment or a block above."""
        count = 0
        for generated in self.files:
            for req in generated.requirements:
                above = generated.lines[req.line - 1] if req.line else ""
                count += req.comment is not None or above.startswith("#")
        return count


def _requirement(rng: random.Random, name: str, line: int) -> Requirement:
    (shape,) = rng.choices(_SHAPE_CLAUSES, weights=_SHAPE_WEIGHTS)
    major, minor = rng.randint(0, 9), rng.randint(0, 20)
    patches = rng.sample(range(10), 3)  # distinct: one line never repeats a clause
    values = {
        "lo": f"{major}.{minor}",
        "hi": str(rng.randint(10, 20)),
        "m": str(rng.randint(0, 9)),
        **{f"bad{i}": f"{major}.{minor + 1}.{patch}" for i, patch in enumerate(patches)},
    }
    clauses = [clause.format(**values) for clause in shape]
    marker = rng.choice(_MARKERS) if rng.random() < 0.15 else None
    return Requirement(line, name, clauses, marker, None)


def generate_tree(root: Path, exclusions: int, seed: int) -> Tree:
    """Write files of ~500 lines under ``root/requirements/`` until ``exclusions`` clauses."""
    rng = random.Random(seed)
    directory = root / "requirements"
    directory.mkdir(parents=True)
    files: list[GeneratedFile] = []
    total = index = 0
    while total < exclusions:
        number = len(files)
        lines = [f"# generated by bench/track.py: file {number}, seed {seed}", ""]
        requirements: list[Requirement] = []
        while len(lines) < LINES_PER_FILE - 4 and total < exclusions:
            roll = rng.random()
            if roll < 0.02:
                lines += ["", f"## section: group-{rng.randint(1, 99)}"]
            elif roll < 0.05:
                lines.append("")
            name = f"pkg-{index}"
            index += 1
            req = _requirement(rng, name, 0)
            if req.exclusions and rng.random() < 0.45:  # a reason block above, naming it
                lines += ["", f"# {_reason(rng, name)}"]
                if rng.random() < 0.4:
                    template = rng.choice(_STRUCTURED)
                    lines.append(
                        template.format(name=name, v=_version(rng), n=rng.randint(1, 99_999))
                    )
            elif req.exclusions and rng.random() < 0.6:
                req.comment = _reason(rng, name)
            req.line = len(lines)
            lines.append(req.text())
            requirements.append(req)
            total += req.exclusions
        generated = GeneratedFile(directory / f"part-{number:04d}.txt", lines, requirements)
        generated.write()
        files.append(generated)
    return Tree(root, files)


@dataclass(frozen=True, slots=True)
class Edit:
    """What :func:`edit_tree` changed."""

    lines: int  # requirement lines edited
    reasons: int  # ... of which with a new inline reason
    clauses: int  # ... of which with one clause moved
    reason_exclusions: int  # exclusions on the lines whose reason changed


def _moved(clause: str) -> str:
    """The clause with its last number raised by 10 (a cap raised, another bad version)."""
    op = clause[: len(clause) - len(clause.lstrip("<>=!~"))]
    parts = clause[len(op) :].split(".")
    parts[-1] = str(int(parts[-1]) + 10)
    return op + ".".join(parts)


def edit_tree(tree: Tree, fraction: float, seed: int) -> Edit:
    """Edit ``fraction`` of the requirement lines that hold an exclusion, and write them.

    Alternately: a new inline reason (another issue number), or one exclusion clause moved
    (``<15`` -> ``<25``, ``!=3.4.5`` -> ``!=3.4.15``). Line numbers do not move.
    """
    rng = random.Random(seed + 1)
    candidates = [
        (generated, req)
        for generated in tree.files
        for req in generated.requirements
        if any(_is_exclusion(c) and not c.endswith(".*") for c in req.clauses)
    ]
    chosen = rng.sample(candidates, max(1, round(len(candidates) * fraction)))
    reasons = clauses = reason_exclusions = 0
    touched: set[int] = set()
    for position, (generated, req) in enumerate(chosen):
        if position % 2 == 0:
            req.comment = f"edited: {_reason(rng, req.name, 100_000 + position)}"
            reasons += 1
            reason_exclusions += req.exclusions
        else:
            movable = [
                i for i, c in enumerate(req.clauses) if _is_exclusion(c) and not c.endswith(".*")
            ]
            which = rng.choice(movable)
            req.clauses[which] = _moved(req.clauses[which])
            clauses += 1
        generated.lines[req.line] = req.text()
        touched.add(id(generated))
    for generated in tree.files:
        if id(generated) in touched:
            generated.write()
    return Edit(len(chosen), reasons, clauses, reason_exclusions)


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z",
    }
    subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=root,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def commit_tree(root: Path) -> None:
    """Make ``root`` a fresh git repository with one commit holding every file."""
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "--no-verify", "-m", "generated tree (#1)")


# --------------------------------------------------------------------------
# Databases
# --------------------------------------------------------------------------


class Databases:
    """Fresh databases: SQLite files in the work dir, PostgreSQL schemas (dropped at the end)."""

    def __init__(self, work: Path, pg_url: str | None) -> None:
        self.work = work
        self.pg_url = pg_url
        self.schemas: list[str] = []

    def sqlite(self, label: str) -> str:
        return f"sqlite:///{self.work / f'{label}.db'}"

    def admin_url(self) -> str:
        assert self.pg_url is not None
        url = make_url(self.pg_url)
        if url.drivername in ("postgresql", "postgres"):
            url = url.set(drivername="postgresql+psycopg")
        return url.render_as_string(hide_password=False)

    def _execute(self, statement: str) -> None:
        engine = create_engine(
            self.admin_url(), isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 5}
        )
        try:
            with engine.connect() as connection:
                connection.execute(text(statement))
        finally:
            engine.dispose()

    def reachable(self) -> str | None:
        """None when PostgreSQL answers, else why not."""
        if self.pg_url is None:
            return "disabled (--no-postgres)"
        try:
            self._execute("SELECT 1")
        except Exception as exc:  # any failure to connect: the backend is skipped
            first = str(exc).strip().splitlines()
            return f"{type(exc).__name__}: {first[0] if first else ''}"
        return None

    def postgresql(self) -> str:
        schema = f"govern_bench_{secrets.token_hex(4)}"
        self._execute(f'CREATE SCHEMA "{schema}"')
        self.schemas.append(schema)
        url = make_url(self.admin_url()).set(query={"options": f"-csearch_path={schema}"})
        return url.render_as_string(hide_password=False)

    def drop_all(self) -> None:
        while self.schemas:
            schema = self.schemas.pop()
            try:
                self._execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            except Exception as exc:  # report, and go on dropping the others
                print(f"warning: could not drop schema {schema}: {exc}", file=sys.stderr)


def count_rows(url: str) -> dict[str, int]:
    """Rows in the exclusion, annotation and event tables."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return {
                name: int(
                    connection.execute(select(func.count()).select_from(table(name))).scalar_one()
                )
                for name in TABLES
            }
    finally:
        engine.dispose()


def display(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


# --------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """One ``govern track`` process: its wall time, its JSON counts, the rows after it."""

    backend: str
    tree: str  # "plain" or "git"
    name: str
    wall: float
    counts: dict[str, int]
    rows: dict[str, int]


def track_argv(root: Path, url: str) -> list[str]:
    return [sys.executable, "-m", "govern", "track", str(root), "--db", url, "--format", "json"]


def run_track(
    backend: str, tree: str, name: str, root: Path, url: str, work: Path, timeout: float
) -> Run:
    """Time one ``govern track`` process; raises when it fails."""
    start = time.perf_counter()
    completed = subprocess.run(
        track_argv(root, url),
        cwd=work,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    wall = time.perf_counter() - start
    if completed.returncode != 0:
        raise RuntimeError(
            f"govern track ({backend}, {name}) exited {completed.returncode}:\n"
            f"{completed.stderr[-3000:]}"
        )
    document = json.loads(completed.stdout)
    counts = {
        key: int(document[key])
        for key in (
            "sources",
            "added",
            "restored",
            "changed",
            "annotation_changed",
            "removed",
            "unchanged",
            "events",
        )
    }
    return Run(backend, tree, name, wall, counts, count_rows(url))


@dataclass(slots=True)
class Scenario:
    """The three runs of one backend on one tree, and the checks on them."""

    backend: str
    tree: str
    runs: list[Run] = field(default_factory=list)
    checks: list[tuple[str, bool]] = field(default_factory=list)
    edit: Edit | None = None
    error: str | None = None


def scenario(
    backend: str,
    tree_kind: str,
    url: str,
    work: Path,
    *,
    exclusions: int,
    seed: int,
    edit_fraction: float,
    timeout: float,
) -> Scenario:
    result = Scenario(backend, tree_kind)
    root = work / f"tree-{backend}-{tree_kind}"
    tree = generate_tree(root, exclusions, seed)
    if tree_kind == "git":
        commit_tree(root)
    generated = tree.exclusions
    print(f"  {backend} / {tree_kind}: {display(url)}")
    try:
        first = run_track(backend, tree_kind, "first sync", root, url, work, timeout)
        result.runs.append(first)
        print(f"    first sync  {first.wall:7.2f} s")
        result.checks.append(
            (
                f"first sync added {first.counts['added']:,} >= {generated:,} generated clauses",
                first.counts["added"] >= generated,
            ),
        )
        # A re-sync is short and repeatable: the median of three, against noise on a
        # shared machine (the first sync cannot be repeated on the same database).
        resyncs = [
            run_track(backend, tree_kind, "re-sync", root, url, work, timeout) for _ in range(3)
        ]
        again = sorted(resyncs, key=lambda run: run.wall)[1]
        result.runs.append(again)
        print(
            f"    re-sync     {again.wall:7.2f} s  (median of "
            f"{', '.join(f'{run.wall:.2f}' for run in resyncs)})"
        )
        result.checks.append(
            (
                f"re-sync added {again.counts['added']} and events {again.counts['events']} "
                "(both 0), rows unchanged",
                again.counts["added"] == 0
                and again.counts["events"] == 0
                and again.rows == first.rows,
            )
        )
        edit = result.edit = edit_tree(tree, edit_fraction, seed)
        edited = run_track(
            backend, tree_kind, f"{edit_fraction:.0%} edited", root, url, work, timeout
        )
        result.runs.append(edited)
        print(f"    edited      {edited.wall:7.2f} s")
        result.checks.append(
            (
                f"edited run: changed {edited.counts['changed']} (== {edit.clauses} clauses "
                f"moved), annotation-changed {edited.counts['annotation_changed']} "
                f"(>= {edit.reason_exclusions} on re-reasoned lines), added 0",
                edited.counts["changed"] == edit.clauses
                and edited.counts["annotation_changed"] >= edit.reason_exclusions
                and edited.counts["added"] == 0,
            )
        )
    except (RuntimeError, ValueError, SQLAlchemyError, subprocess.TimeoutExpired) as exc:
        result.error = str(exc)
        print(f"    FAILED: {exc}")
    return result


# --------------------------------------------------------------------------
# Profile
# --------------------------------------------------------------------------


def print_profile(profile: cProfile.Profile, label: str, wall: float) -> None:
    stats = pstats.Stats(profile).get_stats_profile()
    functions = list(stats.func_profiles.items())
    # Shares are of the outermost call (track()), the time the profile covers.
    total = max((fp.cumtime for _, fp in functions), default=0.0) or 1.0
    print(f"\n{label}: {wall:.2f} s in-process under cProfile (track() {total:.2f} s)")
    for title, key, top in (
        ("top 25 by cumulative time", "cumtime", 25),
        ("top 15 by own time", "tottime", 15),
    ):
        print(f"  {title}:")
        print(f"  {'ncalls':>12} {'own s':>8} {'cum s':>8} {'share':>6}  function")
        ordered = sorted(functions, key=lambda item: getattr(item[1], key), reverse=True)
        for name, fp in ordered[:top]:
            print(
                f"  {fp.ncalls:>12} {fp.tottime:>8.3f} {fp.cumtime:>8.3f} "
                f"{fp.cumtime / total * 100:>5.1f}%  "
                f"{_where(fp.file_name, fp.line_number, name)}"
            )


def profile_section(url: str, root: Path) -> None:
    from govern.config import load_config
    from govern.service.track import TrackOptions, track
    from govern.store.db import Store

    config = load_config(root)
    with Store(url) as store:
        store.ensure_schema()  # the migration is not what is profiled
        for label in ("first sync", "re-sync"):
            profile = cProfile.Profile()
            start = time.perf_counter()
            profile.enable()
            result = track(store, root, None, config=config, options=TrackOptions())
            profile.disable()
            wall = time.perf_counter() - start
            counts = result.counts
            print(
                f"\n--- {label}: added {counts.added:,}, unchanged {counts.unchanged:,}, "
                f"events {counts.events:,}"
            )
            print_profile(profile, label, wall)


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def print_table(scenarios: Sequence[Scenario]) -> None:
    print(
        f"\n{'backend':<10} {'tree':<5} {'run':<12} {'wall s':>7} {'added':>7} {'changed':>7} "
        f"{'annot':>6} {'removed':>7} {'unchanged':>9} {'events':>7}  "
        f"{'excl rows':>9} {'annot rows':>10} {'event rows':>10}"
    )
    for item in scenarios:
        for run in item.runs:
            c, r = run.counts, run.rows
            print(
                f"{run.backend:<10} {run.tree:<5} {run.name:<12} {run.wall:>7.2f} "
                f"{c['added']:>7,} {c['changed']:>7,} {c['annotation_changed']:>6,} "
                f"{c['removed']:>7,} {c['unchanged']:>9,} {c['events']:>7,}  "
                f"{r['exclusion']:>9,} {r['annotation']:>10,} {r['event']:>10,}"
            )
    print(
        "(annot: annotation-changed events; removed: removed events (the predecessor of a "
        "changed clause is ended by its changed event); rows: counted after the run; "
        "wall: a fresh process, start-up included)"
    )


def print_targets(scenarios: Sequence[Scenario]) -> None:
    print("\ntargets:")
    for item in scenarios:
        label = f"{item.backend}/{item.tree}"
        note = "" if item.tree == "plain" else "  (--git: informational)"
        if item.error is not None or len(item.runs) < 2:
            print(f"  {label}: FAIL (the benchmark run did not complete){note}")
            continue
        first, again = item.runs[0], item.runs[1]
        ratio = again.wall / first.wall
        first_ok = (
            first.wall <= FIRST_TARGET_SECONDS and first.counts["added"] >= FIRST_TARGET_EXCLUSIONS
        )
        print(
            f"  {label}: first sync of {first.counts['added']:,} exclusions {first.wall:.2f} s  "
            f"target <= {FIRST_TARGET_SECONDS:.0f} s  "
            f"{verdict(first_ok)}{note}"
        )
        print(
            f"  {label}: re-sync / first sync = {again.wall:.2f} / {first.wall:.2f} = "
            f"{ratio:.3f}  target <= {RESYNC_TARGET_RATIO:.2f}  "
            f"{verdict(ratio <= RESYNC_TARGET_RATIO)}{note}"
        )
    print("\nchecks:")
    for item in scenarios:
        for what, ok in item.checks:
            print(f"  {item.backend}/{item.tree}: {verdict(ok)}  {what}")
        if item.edit is not None:
            edit = item.edit
            print(
                f"  {item.backend}/{item.tree}: edit = {edit.lines} requirement lines: "
                f"{edit.reasons} new reasons ({edit.reason_exclusions} exclusions), "
                f"{edit.clauses} clauses moved"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--exclusions",
        type=int,
        default=FIRST_TARGET_EXCLUSIONS,
        help=f"exclusion clauses to generate (default {FIRST_TARGET_EXCLUSIONS:,})",
    )
    parser.add_argument("--seed", type=int, default=2026, help="seed of the generated tree")
    parser.add_argument(
        "--edit", type=float, default=0.01, help="fraction of lines edited for the third run"
    )
    parser.add_argument("--git", action="store_true", help="also run on a committed git tree")
    parser.add_argument("--profile", action="store_true", help="cProfile a first sync + re-sync")
    parser.add_argument(
        "--profile-backend",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="the database profiled (default sqlite)",
    )
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL, help="PostgreSQL server (trust auth)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="seconds before one run is abandoned"
    )
    parser.add_argument(
        "--history",
        action="store_true",
        help="instead: replay generated histories against git log -p (bench/track_history.py)",
    )
    parser.add_argument("--upper-commits", type=int, default=6294, help="with --history")
    parser.add_argument("--global-commits", type=int, default=2293, help="with --history")
    parser.add_argument("--lines", type=int, default=575, help="with --history: file lines")
    parser.add_argument(
        "--check",
        type=int,
        default=150,
        help="with --history: commits of each file replayed both ways and compared (0: none)",
    )
    args = parser.parse_args(argv)
    if args.exclusions < 1:
        parser.error("--exclusions must be positive")
    if not 0 < args.edit <= 1:
        parser.error("--edit must be in (0, 1]")

    print(f"govern track benchmark: python {sys.version.split()[0]} ({sys.executable})")
    print(f"cpus: {os.cpu_count()}, load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    import govern

    # As bench/audit.py: an installed wheel has its bytecode compiled; so has the checkout.
    compileall.compile_dir(Path(govern.__file__).parent, quiet=1)
    with work_directory(args.keep, "track") as work:
        print(
            f"work dir: {work}{' (kept)' if args.keep else ' (removed at the end; --keep keeps)'}"
        )
        # The plain trees must not be seen as part of the checkout around bench/.work.
        os.environ["GIT_CEILING_DIRECTORIES"] = str(work)
        if args.history:
            import track_history

            track_history.run(
                work,
                seed=args.seed,
                upper=args.upper_commits,
                global_=args.global_commits,
                lines=args.lines,
                check=args.check,
                timeout=max(args.timeout, 3600.0),
            )
            return 0
        databases = Databases(work, None if args.no_postgres else args.pg_url)
        try:
            return _run(args, work, databases)
        finally:
            databases.drop_all()


def _run(args: argparse.Namespace, work: Path, databases: Databases) -> int:
    sample = generate_tree(work / "sample", args.exclusions, args.seed)
    print(
        f"tree: {sample.exclusions:,} exclusion clauses in {sample.requirements:,} requirements, "
        f"{len(sample.files)} files, {sample.lines:,} lines; "
        f"{sample.annotated:,} requirements with a reason (seed {args.seed})"
    )
    shutil.rmtree(sample.root)
    why_not = databases.reachable()
    backends = ["sqlite"] + (["postgresql"] if why_not is None else [])
    if why_not is None:
        print(f"postgresql: {display(databases.admin_url())} (a fresh schema per run)")
    else:
        print(f"postgresql: skipped ({why_not})")
    trees = ["plain", "git"] if args.git else ["plain"]
    print(
        f"provenance: plain tree not in git (GIT_CEILING_DIRECTORIES={work}); "
        f"{'also a committed git tree' if args.git else '--git adds a committed tree'}"
    )

    # Warm the OS cache: the interpreter, govern and the database modules.
    subprocess.run(
        [sys.executable, "-c", "import govern.service.track, govern.cli.track, alembic, psycopg"],
        check=False,
        capture_output=True,
    )
    print("\nruns:")
    scenarios: list[Scenario] = []
    for tree_kind in trees:
        for backend in backends:
            label = f"{backend}-{tree_kind}"
            url = databases.sqlite(label) if backend == "sqlite" else databases.postgresql()
            scenarios.append(
                scenario(
                    backend,
                    tree_kind,
                    url,
                    work,
                    exclusions=args.exclusions,
                    seed=args.seed,
                    edit_fraction=args.edit,
                    timeout=args.timeout,
                )
            )
    print_table(scenarios)
    print_targets(scenarios)

    if args.profile:
        print("\n" + "=" * 78)
        print(f"cProfile ({args.profile_backend}, plain tree, in-process)")
        print("=" * 78)
        if args.profile_backend == "postgresql" and why_not is not None:
            print(f"postgresql not reachable ({why_not}): profile skipped")
            return 0
        root = work / "tree-profile"
        generate_tree(root, args.exclusions, args.seed)
        url = (
            databases.sqlite("profile")
            if args.profile_backend == "sqlite"
            else databases.postgresql()
        )
        profile_section(url, root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
