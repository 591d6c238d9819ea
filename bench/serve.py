"""Benchmark ``govern serve``: the dashboard's front page over a store of 50,000 exclusions.

This is a benchmark, not a test: it prints figures and PASS/FAIL against the targets, and
always exits 0 unless the benchmark itself cannot run (tests/webseed.py or the web extra
missing: exit 2).

What is measured, per backend: SQLite (a fresh file in the work directory) by default;
PostgreSQL with ``--backends sqlite,postgresql`` or ``--postgresql URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``, trust auth; each run gets a schema of its
own, ``govern_bench_serve_<random>``, through ``?options=-csearch_path%3D<schema>``, dropped
CASCADE at the end, even on failure; an unreachable server is a SKIP):

1. Seeding (timed, not judged): ``tests/webseed.py``'s ``seed()`` fills the empty store (its
   schema made by the migrations): the CuPy story through the real tracker (``govern track``
   of a requirements file; a verified candidate 14.1.1 with its passed verification) plus
   ``--size`` (default 50,000) generated exclusions written in bulk over up to 20
   repositories and 60 files: every kind, 60% held and 40% candidate / verified /
   verifying (each of those with a release and a candidate), an annotation each (one in
   nine overdue for review, some with HTML in the reason). The seed's "now" is the wall
   clock when the run starts, as the server's clock is: ages, review dates and snoozes mean
   the same to both. The rows written are counted.

   Then any index declared in ``govern/store/models.py`` that the migrated schema lacks (a
   migration not written yet) is named and created, so that the run measures the models in
   the checkout; ``--migrated-schema`` leaves them out (the schema exactly as shipped). Once
   the migration exists, this step finds nothing. On PostgreSQL, ``VACUUM ANALYZE``
   follows: what autovacuum does within a minute of a bulk load (statistics, and the
   visibility map of index-only scans), so the plans do not depend on when it runs.

2. The server: ``python -m govern serve --host 127.0.0.1 --port <free> --db <url>`` started
   as a child process in the work directory (no ``.govern.toml`` there; no ``GOVERN_*``
   variable, so it is read-only; its output goes to a log in the work directory). It is
   ready when ``/healthz`` answers 200; it is stopped (SIGTERM, then SIGKILL after 10 s) at
   the end of the backend's run, even on failure.

3. The front page ``/`` (pending relaxations: verified first, oldest first, 50 a page;
   overdue, failed and held with their counts): one ``httpx.Client`` (keep-alive: one
   connection) requests it ``--warmup`` times (default 20, not timed), then ``--requests``
   times (default 300), each timed on the client with ``time.perf_counter`` (request sent to
   body read). Reported: min, p50, p95, p99 and max in ms (percentiles by linear
   interpolation between ranks).

   Every response is checked against the store, read apart with SQLAlchemy Core (not
   govern's views): status 200, the pending total, 50 pending rows, the oldest open verified
   exclusion in the first row, and ``cupy-cuda13x`` when CuPy is among the rows. At 50,000
   it is not: some 4,600 generated verified exclusions are older than its 80 days (the page
   is oldest first), so CuPy is checked on its own page instead (4).

4. As information, ``--info-requests`` (default 50) timed requests each, after 5 untimed:
   ``/exclusions`` (page 1), ``/exclusions?page=500`` (a deep page: OFFSET 24,950),
   ``/exclusions/<CuPy's id>`` (checked: it names ``cupy-cuda13x`` and 14.1.1),
   ``/api/v1/pending`` and ``/metrics``; each checked for status 200.

5. Server memory: VmHWM (peak resident set) and VmRSS from ``/proc/<pid>/status`` of the
   server process, read after every request above (and VmRSS once after start-up).

6. With ``--profile`` (the first backend's store, in-process, after the server stopped):
   ``views.pending`` and ``views.attention`` timed with every SQL statement (the median of
   5 runs; the statements by total time), then the ``/`` route's handler called in this
   thread (views, template and response; no HTTP), timed, and once under cProfile, with
   the top functions by cumulative and by own time.

Targets (from the issue), for the front page with 50,000 exclusions in the store:

- p95 ≤ 100 ms on loopback;
- server peak memory (VmHWM) ≤ 200 MB.

Usage::

    python bench/serve.py                                 # SQLite, 50,000 exclusions
    python bench/serve.py --backends sqlite,postgresql    # ... and PostgreSQL
    python bench/serve.py --size 10000 --requests 100 --profile --keep
    python bench/serve.py --migrated-schema              # without indexes not yet migrated

No network is used but 127.0.0.1 (the server started here, and PostgreSQL when asked for).
The work directory (under ``bench/.work/``, git-ignored) is removed at the end unless
``--keep`` is given.
"""

from __future__ import annotations

import argparse
import compileall
import cProfile
import math
import os
import platform
import pstats
import secrets
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import httpx
from benchkit import where as _where
from benchkit import work_directory
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "tests"))  # tests/webseed.py: the dashboard's seeded store

TARGET_SIZE = 50_000
P95_TARGET_MS = 100.0
RSS_TARGET_MB = 200.0
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
MARKER = "cupy-cuda13x"
PER_PAGE = 50  # rows of the front page (govern.store.queries.PER_PAGE)
DEEP_PAGE = 500
INFO_WARMUP = 5
BACKENDS = ("sqlite", "postgresql")
TABLES = ("exclusion", "annotation", "release", "candidate", "verification", "event")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of sorted values, interpolated linearly between ranks."""
    if not ordered:
        return math.nan
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# --------------------------------------------------------------------------
# Databases
# --------------------------------------------------------------------------


def _psycopg(url: str) -> str:
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def display(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


class Databases:
    """Fresh databases: SQLite files in the work dir, PostgreSQL schemas (dropped at the end)."""

    def __init__(self, work: Path, pg_url: str) -> None:
        self.work = work
        self.pg_url = pg_url
        self.schemas: list[str] = []

    def _execute(self, statement: str) -> Any:
        """Run one statement (autocommit); its first value, if it returns rows."""
        engine = create_engine(
            _psycopg(self.pg_url),
            isolation_level="AUTOCOMMIT",
            connect_args={"connect_timeout": 5},
        )
        try:
            with engine.connect() as connection:
                result = connection.execute(text(statement))
                return result.scalar() if result.returns_rows else None
        finally:
            engine.dispose()

    def reachable(self) -> tuple[str | None, str]:
        """(None, the server's version) when PostgreSQL answers, else (why not, "")."""
        try:
            version = self._execute("SHOW server_version")
        except Exception as exc:  # any failure to connect: the backend is skipped
            first = str(exc).strip().splitlines()
            return f"{type(exc).__name__}: {first[0] if first else ''}", ""
        return None, str(version)

    def sqlite(self, label: str) -> str:
        return f"sqlite:///{self.work / f'{label}.db'}"

    def postgresql(self) -> str:
        schema = f"govern_bench_serve_{secrets.token_hex(4)}"
        self.schemas.append(schema)  # first: dropped at the end whatever happens next
        self._execute(f'CREATE SCHEMA "{schema}"')
        separator = "&" if "?" in self.pg_url else "?"
        return f"{self.pg_url}{separator}options=-csearch_path%3D{schema}"

    def drop_all(self) -> None:
        for schema in self.schemas:
            try:
                self._execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            except Exception as exc:  # reported, never raised: the run's figures stand
                print(f"could not drop schema {schema}: {exc}")
        self.schemas.clear()


# --------------------------------------------------------------------------
# Seeding
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Seeded:
    """What was written, and what the front page must show (read back apart from govern)."""

    seconds: float
    rows: dict[str, int]
    by_state: dict[str, int]
    cupy_key: str
    pending_total: int  # open, candidate / verifying / verified, not snoozed
    first_verified: frozenset[str]  # the packages tied for the oldest open verified one
    older_verified: int  # open verified exclusions older than CuPy's

    @property
    def expect_cupy(self) -> bool:
        """Whether CuPy is among the front page's rows (verified first, oldest first)."""
        return self.older_verified < PER_PAGE


def seed_store(url: str, root: Path, size: int, now: datetime) -> Seeded:
    """Fill the empty store at ``url`` with the CuPy story and ``size`` generated exclusions."""
    from sqlalchemy import func, or_, select, table
    from webseed import seed

    from govern.store.db import Store
    from govern.store.models import StoredExclusion

    with Store(url) as store:
        start = time.perf_counter()
        key = seed(store, root, generated=size, now=now)
        seconds = time.perf_counter() - start
        with store.connection() as connection:
            rows = {
                name: int(
                    connection.execute(select(func.count()).select_from(table(name))).one()[0]
                )
                for name in TABLES
            }
            by_state = {
                str(state): int(number)
                for state, number in connection.execute(
                    text("SELECT state, count(*) FROM exclusion GROUP BY state ORDER BY state")
                )
            }
            # SQLAlchemy Core, not govern's views: what the page must show, found apart.
            x = StoredExclusion.__table__.c  # type: ignore[attr-defined]
            verified = (x.removed_at.is_(None), x.state == "verified")
            oldest = connection.execute(select(func.min(x.first_seen_at)).where(*verified))
            oldest_at = oldest.scalar_one()
            first = frozenset(
                str(package)
                for (package,) in connection.execute(
                    select(x.package).where(*verified, x.first_seen_at == oldest_at)
                )
            )
            cupy_seen = connection.execute(
                select(x.first_seen_at).where(x.package == MARKER)
            ).scalar_one()
            older = connection.execute(
                select(func.count()).where(*verified, x.first_seen_at < cupy_seen)
            ).scalar_one()
            total = connection.execute(
                select(func.count()).where(
                    x.removed_at.is_(None),
                    x.state.in_(("candidate", "verifying", "verified")),
                    or_(x.snoozed_until.is_(None), x.snoozed_until <= now.date()),
                )
            ).scalar_one()
    return Seeded(seconds, rows, by_state, key, int(total), first, int(older))


def declared_indexes(url: str, *, create: bool) -> list[str]:
    """The indexes declared in govern/store/models.py that the migrated schema lacks (a
    migration not written yet); created here (``create``) so the run measures the models."""
    from sqlalchemy import inspect
    from sqlmodel import SQLModel

    import govern.store.models  # noqa: F401  (the tables, on SQLModel.metadata)
    from govern.store.db import Store

    with Store(url) as store:
        store.ensure_schema()
        with store.engine.connect() as connection:
            inspector = inspect(connection)
            missing = []
            for table in SQLModel.metadata.sorted_tables:
                present = {found["name"] for found in inspector.get_indexes(table.name)}
                missing += sorted(
                    (index for index in table.indexes if index.name not in present),
                    key=lambda index: str(index.name),
                )
        if create and missing:
            with store.engine.begin() as connection:
                for index in missing:
                    index.create(connection)
    return [
        f"{index.name} ON {index.table.name if index.table is not None else '?'} "
        f"({', '.join(column.name for column in index.columns)})"
        for index in missing
    ]


def vacuum_analyze(url: str) -> float:
    """VACUUM ANALYZE (PostgreSQL) of govern's tables in the run's schema: what autovacuum
    does within a minute of a bulk load (the statistics, and the visibility map that
    index-only scans need), done now so that the plans do not depend on when it runs.
    Returns the seconds taken."""
    from sqlmodel import SQLModel

    import govern.store.models  # noqa: F401  (the tables, on SQLModel.metadata)
    from govern.store.db import Store

    names = ", ".join(f'"{table.name}"' for table in SQLModel.metadata.sorted_tables)
    with Store(url) as store:
        start = time.perf_counter()
        with store.engine.connect() as connection:
            autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
            autocommit.execute(text(f"VACUUM ANALYZE {names}"))  # the search_path's schema
        return time.perf_counter() - start


# --------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def proc_status(pid: int) -> dict[str, float]:
    """VmHWM and VmRSS of a process, in MiB (empty when it is gone)."""
    out: dict[str, float] = {}
    try:
        lines = Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines()
    except OSError:
        return out
    for line in lines:
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            out[name] = int(value.split()[0]) / 1024  # kB
    return out


class Server:
    """``python -m govern serve`` on 127.0.0.1 and a free port, as a child process."""

    def __init__(self, url: str, work: Path, label: str) -> None:
        self.url = url
        self.work = work
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = work / f"serve-{label}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "govern",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--db",
            self.url,
        ]

    def start(self, timeout: float) -> float:
        """Start it and wait for /healthz; returns the seconds that took."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GOVERN_")}
        env["PYTHONPATH"] = str(REPO)  # the checkout's govern, from any working directory
        self._log = self.log_path.open("wb")
        start = time.perf_counter()
        self.process = subprocess.Popen(
            self.argv(), cwd=self.work, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = start + timeout
        with httpx.Client(base_url=self.base, timeout=5.0) as client:
            while True:
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"govern serve exited {self.process.returncode} before answering:\n"
                        f"{self.log()[-3000:]}"
                    )
                try:
                    if client.get("/healthz").status_code == 200:
                        return time.perf_counter() - start
                except httpx.TransportError:
                    pass
                if time.perf_counter() > deadline:
                    raise RuntimeError(
                        f"govern serve did not answer /healthz within {timeout:.0f} s:\n"
                        f"{self.log()[-3000:]}"
                    )
                time.sleep(0.05)

    def log(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None


# --------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------


@dataclass(slots=True)
class Series:
    """Timed requests of one path."""

    label: str
    path: str
    times_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    size: int = 0  # bytes of the last body

    @property
    def ordered(self) -> list[float]:
        return sorted(self.times_ms)

    def p(self, q: float) -> float:
        return percentile(self.ordered, q)


def timed(
    client: httpx.Client,
    series: Series,
    warmup: int,
    count: int,
    check: Callable[[httpx.Response], str | None],
) -> Series:
    """``warmup`` untimed then ``count`` timed requests of ``series.path``, each checked."""
    for _ in range(warmup):
        response = client.get(series.path)
        problem = check(response)
        if problem is not None:
            series.failures.append(f"warm-up: {problem}")
            return series
    for _ in range(count):
        start = time.perf_counter()
        response = client.get(series.path)
        elapsed = time.perf_counter() - start
        series.times_ms.append(elapsed * 1000)
        series.size = len(response.content)
        problem = check(response)
        if problem is not None:
            series.failures.append(problem)
    return series


def _status_ok(response: httpx.Response) -> str | None:
    if response.status_code != 200:
        return f"status {response.status_code}"
    return None


def front_check(seeded: Seeded) -> Callable[[httpx.Response], str | None]:
    """Status 200, the pending total, a full page of rows, the oldest verified one first,
    and CuPy when it is among them."""
    total = f'Pending relaxations <span class="count">{seeded.pending_total}</span>'
    rows = min(PER_PAGE, seeded.pending_total)

    def check(response: httpx.Response) -> str | None:
        problem = _status_ok(response)
        if problem is not None:
            return problem
        body = response.text
        if total not in body:
            return f"the body does not show the pending total {seeded.pending_total}"
        if body.count('data-package="') != rows:
            return f"{body.count('data-package=')} pending rows, not {rows}"
        first = body[body.index('data-package="') :].split('"', 2)[1]
        if first not in seeded.first_verified:
            return f"the first row is {first}, not the oldest verified exclusion"
        if seeded.expect_cupy and MARKER not in body:
            return f"the body does not name {MARKER}"
        return None

    return check


def cupy_check(response: httpx.Response) -> str | None:
    problem = _status_ok(response)
    if problem is None and (MARKER not in response.text or "14.1.1" not in response.text):
        problem = f"the page does not name {MARKER} and its candidate 14.1.1"
    return problem


@dataclass(slots=True)
class BackendResult:
    backend: str
    url: str
    seeded: Seeded | None = None
    startup_s: float | None = None
    rss_started_mb: float | None = None
    front: Series | None = None
    info: list[Series] = field(default_factory=list)
    memory: dict[str, float] = field(default_factory=dict)
    missing_indexes: list[str] = field(default_factory=list)  # declared, not migrated
    indexes_created: bool = False
    error: str | None = None

    @property
    def schema(self) -> str:
        """The schema measured: the migrations', with or without the indexes they lack."""
        count = len(self.missing_indexes)
        if not count:
            return "migrated"
        if self.indexes_created:
            return f"+{count} model index{'es' if count > 1 else ''}"
        return f"migrated (-{count})"


def run_backend(
    backend: str, url: str, work: Path, args: argparse.Namespace, now: datetime
) -> BackendResult:
    result = BackendResult(backend, url)
    print(f"\n{backend}: {display(url)}")
    try:
        seeded = result.seeded = seed_store(url, work / f"repo-{backend}", args.size, now)
    except Exception as exc:  # the seed is what the benchmark stands on: reported, not raised
        result.error = f"seeding failed: {type(exc).__name__}: {exc}"
        print(f"  FAILED: {result.error}")
        return result
    print(
        f"  seeded in {seeded.seconds:.1f} s: "
        + ", ".join(f"{name} {number:,}" for name, number in seeded.rows.items())
    )
    print("  exclusions by state: " + ", ".join(f"{k} {v:,}" for k, v in seeded.by_state.items()))
    print(
        f"  the front page must show: pending total {seeded.pending_total:,}, "
        f"{min(PER_PAGE, seeded.pending_total)} rows, "
        f"first {' or '.join(sorted(seeded.first_verified))}"
        f"; CuPy {'among them' if seeded.expect_cupy else 'not among them'} "
        f"({seeded.older_verified:,} verified exclusions are older)"
    )
    try:
        indexes = result.missing_indexes = declared_indexes(url, create=not args.migrated_schema)
        result.indexes_created = bool(indexes) and not args.migrated_schema
        if indexes:
            what = (
                "left out (--migrated-schema)" if args.migrated_schema else "created for this run"
            )
            print(
                f"  indexes declared in govern/store/models.py that no migration creates yet, "
                f"{what}: {'; '.join(indexes)}"
            )
        if backend == "postgresql":
            seconds = vacuum_analyze(url)
            print(f"  VACUUM ANALYZE: {seconds:.1f} s (autovacuum's work after a bulk load)")
    except Exception as exc:  # as the seed: reported, not raised
        result.error = f"preparing the schema failed: {type(exc).__name__}: {exc}"
        print(f"  FAILED: {result.error}")
        return result
    server = Server(url, work, backend)
    try:
        result.startup_s = server.start(args.timeout)
        result.rss_started_mb = proc_status(server.pid).get("VmRSS")
        print(
            f"  server: pid {server.pid}, {server.base}/ answered /healthz after "
            f"{result.startup_s:.2f} s; RSS {result.rss_started_mb or 0:.1f} MB"
        )
        with httpx.Client(base_url=server.base, timeout=args.timeout) as client:
            front = result.front = timed(
                client, Series("front page", "/"), args.warmup, args.requests, front_check(seeded)
            )
            print(
                f"  /: {len(front.times_ms)} timed after {args.warmup} untimed, "
                f"p50 {front.p(50):.1f} ms, p95 {front.p(95):.1f} ms, {front.size:,} bytes"
                + (f", failed checks: {front.failures[0]}" if front.failures else "")
            )
            for label, path, check in (
                ("exclusions p1", "/exclusions", _status_ok),
                (f"exclusions p{DEEP_PAGE}", f"/exclusions?page={DEEP_PAGE}", _status_ok),
                ("cupy's page", f"/exclusions/{quote(seeded.cupy_key, safe='')}", cupy_check),
                ("api pending", "/api/v1/pending", _status_ok),
                ("metrics", "/metrics", _status_ok),
            ):
                series = timed(client, Series(label, path), INFO_WARMUP, args.info_requests, check)
                result.info.append(series)
                print(
                    f"  {path}: p50 {series.p(50):.1f} ms, p95 {series.p(95):.1f} ms, "
                    f"{series.size:,} bytes"
                    + (f", failed checks: {series.failures[0]}" if series.failures else "")
                )
        result.memory = proc_status(server.pid)
        print(
            f"  server memory: peak (VmHWM) {result.memory.get('VmHWM', math.nan):.1f} MB, "
            f"now (VmRSS) {result.memory.get('VmRSS', math.nan):.1f} MB"
        )
    except (RuntimeError, httpx.HTTPError) as exc:
        result.error = str(exc)
        print(f"  FAILED: {exc}")
    finally:
        server.stop()
        warnings = [
            line for line in server.log().splitlines() if "error" in line.lower() or "Trace" in line
        ]
        if warnings:
            print(f"  server log ({server.log_path.name}): {len(warnings)} error lines, first:")
            for line in warnings[:5]:
                print(f"    {line}")
    return result


# --------------------------------------------------------------------------
# Profile
# --------------------------------------------------------------------------


def print_profile(profile: cProfile.Profile, wall: float) -> None:
    # pstats' raw table: (calls, primitive calls, own s, cumulative s), full precision (its
    # get_stats_profile() rounds to the millisecond, too coarse for a request).
    table: dict[tuple[str, int, str], tuple[int, int, float, float, Any]]
    table = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    rows = [
        (key, calls, primitive, own, cum) for key, (primitive, calls, own, cum, _) in table.items()
    ]
    total = max((cum for *_, cum in rows), default=0.0) or 1.0
    print(f"\nthe / handler under cProfile: {wall * 1000:.1f} ms")
    for title, key, top in (
        ("top 25 by cumulative time", itemgetter(4), 25),
        ("top 15 by own time", itemgetter(3), 15),
    ):
        print(f"  {title}:")
        print(f"  {'ncalls':>12} {'own ms':>8} {'cum ms':>8} {'share':>6}  function")
        ordered = sorted(rows, key=key, reverse=True)
        for (file_name, line, name), calls, primitive, own, cum in ordered[:top]:
            ncalls = str(calls) if calls == primitive else f"{calls}/{primitive}"
            print(
                f"  {ncalls:>12} {own * 1000:>8.2f} {cum * 1000:>8.2f} "
                f"{cum / total * 100:>5.1f}%  {_where(file_name, line, name)}"
            )


def profile_section(url: str, now: datetime) -> None:
    from sqlalchemy import event
    from starlette.requests import Request
    from starlette.responses import Response

    from govern.store.db import Store
    from govern.store.pending import attention, relaxable
    from govern.web.app import create_app
    from govern.web.security import Secrets
    from govern.web.state import AppState

    with Store(url) as store:
        statements: list[tuple[str, float]] = []
        started: list[float] = []

        def before(*_: Any) -> None:
            started.append(time.perf_counter())

        def after(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
            statements.append((" ".join(statement.split()), time.perf_counter() - started.pop()))

        event.listen(store.engine, "before_cursor_execute", before)
        event.listen(store.engine, "after_cursor_execute", after)
        runs: dict[str, list[tuple[float, int, float]]] = defaultdict(list)
        last: dict[str, list[tuple[str, float]]] = {}
        for _ in range(5):
            with store.session() as session:
                for name, call in (
                    ("pending", lambda: relaxable(session, now=now)),
                    ("attention", lambda: attention(session, now=now)),
                ):
                    statements.clear()
                    start = time.perf_counter()
                    call()
                    wall = time.perf_counter() - start
                    sql = sum(seconds for _, seconds in statements)
                    runs[name].append((wall, len(statements), sql))
                    last[name] = list(statements)
        event.remove(store.engine, "before_cursor_execute", before)
        event.remove(store.engine, "after_cursor_execute", after)
        print("\nviews in-process (median of 5 runs, warm):")
        for name, measured in runs.items():
            wall, queries, sql = sorted(measured)[len(measured) // 2]
            print(
                f"  {name}: {wall * 1000:.1f} ms, {queries} statements, {sql * 1000:.1f} ms in "
                f"the database driver, {(wall - sql) * 1000:.1f} ms in Python"
            )
            grouped: dict[str, list[float]] = defaultdict(list)
            for statement, seconds in last[name]:
                grouped[statement[:110]].append(seconds)
            ordered = sorted(grouped.items(), key=lambda item: sum(item[1]), reverse=True)
            for statement, times in ordered[:6]:
                print(f"    {sum(times) * 1000:7.2f} ms x{len(times):<4} {statement}")

        # The route's handler itself, in this thread (a TestClient would run it in a worker
        # thread, out of the profiler's sight): the views, the template, the response.
        app = create_app(AppState(store=store, secrets=Secrets(), clock=lambda: now))
        route = next(r for r in app.routes if getattr(r, "path", None) == "/")
        endpoint: Callable[[Request], Response] = getattr(route, "endpoint")  # noqa: B009
        scope: dict[str, Any] = {
            "type": "http",
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": "/",
            "raw_path": b"/",
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1")],
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 50000),
            "app": app,
        }
        walls = []
        for _ in range(7):
            start = time.perf_counter()
            endpoint(Request(scope))
            walls.append(time.perf_counter() - start)
        print(
            f"\nthe / handler in-process (views, template, response; no HTTP): median of 7 "
            f"{statistics.median(walls) * 1000:.1f} ms"
        )
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        response = endpoint(Request(scope))
        profile.disable()
        wall = time.perf_counter() - start
        if response.status_code != 200:
            print(f"  the profiled request answered {response.status_code}")
        print_profile(profile, wall)


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def print_table(results: Sequence[BackendResult], size: int) -> None:
    print(
        f"\n{'backend':<10} {'request':<16} {'n':>4} {'min':>7} {'p50':>7} {'p95':>7} "
        f"{'p99':>7} {'max':>7} {'KiB':>6}  checks"
    )
    for result in results:
        for series in ([result.front] if result.front else []) + result.info:
            ordered = series.ordered
            if not ordered:
                continue
            print(
                f"{result.backend:<10} {series.label:<16} {len(ordered):>4} {ordered[0]:>7.1f} "
                f"{series.p(50):>7.1f} {series.p(95):>7.1f} {series.p(99):>7.1f} "
                f"{ordered[-1]:>7.1f} {series.size / 1024:>6.0f}  "
                + ("ok" if not series.failures else f"{len(series.failures)} FAILED")
            )
    print("(ms, timed on the client: one keep-alive httpx connection on loopback)")
    print(
        f"\n{'backend':<10} {'exclusions':>10} {'seed s':>7} {'start s':>7} "
        f"{'RSS start MB':>12} {'peak RSS MB':>11} {'RSS end MB':>10}  schema"
    )
    for result in results:
        seeded = result.seeded
        print(
            f"{result.backend:<10} {seeded.rows['exclusion'] if seeded else size:>10,} "
            f"{seeded.seconds if seeded else math.nan:>7.1f} "
            f"{result.startup_s if result.startup_s is not None else math.nan:>7.2f} "
            f"{result.rss_started_mb or math.nan:>12.1f} "
            f"{result.memory.get('VmHWM', math.nan):>11.1f} "
            f"{result.memory.get('VmRSS', math.nan):>10.1f}  {result.schema}"
        )
    print("(peak RSS: the server's VmHWM from /proc/<pid>/status after every request, MiB)")
    for result in results:
        if result.missing_indexes:
            what = "created for the run" if result.indexes_created else "left out"
            print(
                f"({result.backend} schema: indexes declared in govern/store/models.py that no "
                f"migration creates yet, {what}: {'; '.join(result.missing_indexes)})"
            )
    print(
        f"(machine: {os.cpu_count()} cpus, {platform.machine()}; python "
        f"{sys.version.split()[0]}; SQLite {sqlite3.sqlite_version})"
    )


def print_targets(results: Sequence[BackendResult], size: int) -> None:
    print("\ntargets:")
    note = "" if size >= TARGET_SIZE else f"  (--size {size:,}: below the target's size)"
    for result in results:
        front = result.front
        if front is None or not front.times_ms:
            why = result.error or (front.failures[0] if front and front.failures else "?")
            print(f"  {result.backend}: front page: FAIL (not measured: {why})")
            continue
        p95 = front.p(95)
        schema = f"  (schema: {result.schema})" if result.missing_indexes else ""
        print(
            f"  {result.backend}: front page p95 {p95:.1f} ms  target <= {P95_TARGET_MS:.0f} ms  "
            f"{verdict(p95 <= P95_TARGET_MS and not front.failures)}{note}{schema}"
        )
        peak = result.memory.get("VmHWM")
        if peak is None:
            print(f"  {result.backend}: server peak RSS: FAIL (not read)")
        else:
            print(
                f"  {result.backend}: server peak RSS {peak:.1f} MB  target <= "
                f"{RSS_TARGET_MB:.0f} MB  {verdict(peak <= RSS_TARGET_MB)}{note}"
            )
    print("\nchecks:")
    for result in results:
        if result.error is not None:
            print(f"  {result.backend}: FAIL  the run did not complete: {result.error[:300]}")
        for series in ([result.front] if result.front else []) + result.info:
            what = "200" + (
                " with the pending total, the rows and the oldest verified first"
                if series is result.front
                else f" and names {MARKER} 14.1.1"
                if series.label == "cupy's page"
                else ""
            )
            print(
                f"  {result.backend}: {verdict(not series.failures)}  {series.path}: "
                f"{len(series.times_ms) - len(series.failures)}/{len(series.times_ms)} answered "
                f"{what}" + (f" (first failure: {series.failures[0]})" if series.failures else "")
            )


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def _backends(text_value: str) -> list[str]:
    chosen = [part.strip() for part in text_value.split(",") if part.strip()]
    unknown = sorted(set(chosen) - set(BACKENDS))
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"backends are {', '.join(BACKENDS)}; not {unknown}")
    return [b for b in BACKENDS if b in chosen]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--size",
        type=int,
        default=TARGET_SIZE,
        help=f"generated exclusions in the store (default {TARGET_SIZE:,})",
    )
    parser.add_argument(
        "--backends",
        type=_backends,
        default=None,
        help="comma-separated: sqlite, postgresql (default sqlite; with --postgresql both)",
    )
    parser.add_argument(
        "--postgresql",
        metavar="URL",
        default=None,
        help=f"PostgreSQL server, trust auth (default {DEFAULT_PG_URL}); implies the backend",
    )
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests of / (20)")
    parser.add_argument("--requests", type=int, default=300, help="timed requests of / (300)")
    parser.add_argument(
        "--info-requests", type=int, default=50, help="timed requests of each other page (50)"
    )
    parser.add_argument("--profile", action="store_true", help="profile the views in-process")
    parser.add_argument(
        "--migrated-schema",
        action="store_true",
        help="the schema exactly as the migrations make it: no index that only models.py declares",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for the server or a request"
    )
    args = parser.parse_args(argv)
    if args.size < 0 or args.size > 99_999:
        parser.error("--size must be from 0 to 99,999 (package names are pkg-00000 ...)")
    if args.requests < 1 or args.warmup < 0 or args.info_requests < 1:
        parser.error("--requests and --info-requests must be positive, --warmup not negative")
    backends: list[str] = args.backends or (
        ["sqlite", "postgresql"] if args.postgresql else ["sqlite"]
    )
    pg_url: str = args.postgresql or DEFAULT_PG_URL

    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
        import webseed  # noqa: F401
    except ImportError as exc:
        print(f"cannot run: {exc} (needs the web extra and tests/webseed.py)", file=sys.stderr)
        return 2

    print(f"govern serve benchmark: python {sys.version.split()[0]} ({sys.executable})")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cpus, {platform.platform()}, "
        f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"SQLite {sqlite3.sqlite_version}"
    )
    print(
        f"store: {args.size:,} generated exclusions + CuPy; backends {', '.join(backends)}; "
        f"/ x {args.warmup} untimed + {args.requests} timed; others x {args.info_requests}"
    )
    import govern

    # As bench/audit.py: an installed wheel has its bytecode compiled; so has the checkout.
    compileall.compile_dir(Path(govern.__file__).parent, quiet=1)
    with work_directory(args.keep, "serve") as work:
        print(
            f"work dir: {work}{' (kept)' if args.keep else ' (removed at the end; --keep keeps)'}"
        )
        databases = Databases(work, pg_url)
        try:
            return _run(args, backends, work, databases)
        finally:
            databases.drop_all()


def _run(
    args: argparse.Namespace, backends: Sequence[str], work: Path, databases: Databases
) -> int:
    now = datetime.now(UTC).replace(microsecond=0)
    print(f"clock: {now.isoformat()} (the seed's now; the server reads the wall clock)")
    results: list[BackendResult] = []
    urls: dict[str, str] = {}
    for backend in backends:
        if backend == "postgresql":
            why_not, version = databases.reachable()
            if why_not is not None:
                print(f"\npostgresql: SKIP ({why_not})")
                continue
            print(f"\npostgresql: server {version}, a fresh schema")
            url = databases.postgresql()
        else:
            url = databases.sqlite("govern")
        urls[backend] = url
        results.append(run_backend(backend, url, work, args, now))
    if not results:
        print("\nnothing measured")
        return 0
    print_table(results, args.size)
    print_targets(results, args.size)
    if args.profile:
        backend = results[0].backend
        print("\n" + "=" * 78)
        print(f"profile ({backend}, {args.size:,} exclusions, in-process)")
        print("=" * 78)
        profile_section(urls[backend], now)
    return 0


if __name__ == "__main__":
    sys.exit(main())
