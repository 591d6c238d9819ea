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
import threading
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


_PAGE_FILES = 100_000  # file links on the one project page (one version each)
_JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def _serve_tree(root: Path) -> str:
    """Serve ``root`` on 127.0.0.1 from a thread (a static tree, PEP 691 content type);
    returns the index URL (``.../simple/``)."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Handler(SimpleHTTPRequestHandler):
        # The base class declares it per instance; a class-level table is how it is set.
        extensions_map = {".json": _JSON_TYPE}  # noqa: RUF012

        def translate_path(self, path: str) -> str:
            """A project directory's page is its ``index.json``."""
            local = super().translate_path(path)
            return os.path.join(local, "index.json") if path.endswith("/") else local

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the benchmark prints its own line."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/simple/"


@case(
    "page",
    "a PEP 691 page of 100,000 file links, polled once",
    max_seconds=5,
    max_rss_mb=200,
)
def page(work: Path) -> Callable[[], object]:
    """One tracked project (a cap and a not-equal) whose page lists 100,000 versions, none
    installable here (so that every walk goes to its end)."""
    import json

    project = work / "www" / "simple" / "bigpkg"
    project.mkdir(parents=True)
    files = []
    for number in range(_PAGE_FILES):
        name = f"bigpkg-1.{number // 1000}.{number % 1000}-cp27-cp27m-win32.whl"
        files.append({"filename": name, "url": f"../../f/{name}", "hashes": {}})
    document = {"meta": {"api-version": "1.1"}, "name": "bigpkg", "files": files}
    (project / "index.json").write_text(json.dumps(document, separators=(",", ":")))
    repo = work / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text(
        "# 1.50.0 broke the importer and 1.20.3 the CLI: keep both out until verified.\n"
        "bigpkg >= 1.0, < 1.50.0, != 1.20.3\n"
    )
    db = f"sqlite:///{work / 'govern.db'}"
    # Tracked by a child: the store's ORM stays out of this process (a poll needs none).
    env = {**os.environ, "HOME": str(work), "PIP_CONFIG_FILE": os.devnull}
    subprocess.run(
        [sys.executable, "-m", "govern", "track", str(repo), "--db", db],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=work,
        env=env,
    )
    url = _serve_tree(work / "www")
    os.chdir(work)

    def run() -> object:
        from govern.cli.poll import poll

        result = poll(index_url=url, db=db)
        assert result.fetched == 1, result.summary()
        return result

    return run


def _audit_cli(work: Path, file: Path) -> Callable[[], object]:
    """``govern audit --format json FILE -o report.json`` in this process, as a user runs it."""

    def run() -> object:
        from govern.cli import main

        try:
            main(["audit", "--format", "json", "-o", str(work / "report.json"), str(file)])
        except SystemExit as exc:
            if exc.code not in (0, 1):
                raise
        return None

    return run


@case(
    "clauses",
    "one requirement line of 8,000 != clauses",
    max_seconds=1,
    max_rss_mb=200,
)
def _clauses(work: Path) -> Callable[[], object]:
    file = work / "requirements.txt"
    clauses = ",".join(f"!=1.{i}" for i in range(8000))
    file.write_text(f"# 1.x releases broke us, see o/r#1\nfoo{clauses}\n", encoding="utf-8")
    return _audit_cli(work, file)


@case(
    "lines",
    "a requirements file of 100,000 lines (bench/audit.py's realistic lines)",
    max_seconds=5,
    max_rss_mb=300,
)
def _lines(work: Path) -> Callable[[], object]:
    from audit import generate_tree  # bench/audit.py: the corpus-like line generator

    tree = generate_tree(work / "tree", 100_000, seed=14)
    file = work / "requirements.txt"
    with file.open("w", encoding="utf-8") as out:
        written = 0
        for part in sorted((tree.root / "requirements").glob("*.txt")):
            for line in part.read_text(encoding="utf-8").splitlines():
                if written < 100_000 and not line.startswith("-r "):
                    out.write(line + "\n")
                    written += 1
    return _audit_cli(work, file)


@case(
    "dense-lines",
    "100,000 lines, every requirement an exclusion (a harder file than people write)",
    max_seconds=5,
    max_rss_mb=300,
)
def _dense_lines(work: Path) -> Callable[[], object]:
    file = work / "requirements.txt"
    with file.open("w", encoding="utf-8") as out:
        for i in range(100_000):
            if i % 4 == 0:
                out.write(f"# pkg{i} 2.{i % 7}.0 broke the import, see o/r#{i}\n")
            elif i % 4 == 1:
                out.write(f"pkg{i}>=1.{i % 5},!=2.{i % 7}.0,<3  # govern: owner=team\n")
            elif i % 4 == 2:
                out.write(f"pkg{i}[extra]=={i % 9}.{i % 11}.{i % 13} ; python_version >= '3.9'\n")
            else:
                out.write(f"pkg{i}~=1.{i % 17}\n")
    return _audit_cli(work, file)


_BOMB_GB = 4  # what the gzip-bomb page inflates to (the issue's 3,477-byte page: 4.1 GB)


def _double_gzip_bomb(gigabytes: int) -> bytes:
    """``gigabytes`` GiB of zeros gzipped twice, a few KB, built without compressing them
    all: each MiB of zeros after a full flush deflates to the same bytes, so the inner
    stream is one such piece repeated, with gzip's header and trailer (CRC-32, size)."""
    import gzip
    import struct
    import zlib

    block = bytes(1024 * 1024)
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw deflate
    piece = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    again = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    assert piece == again, "a full flush no longer repeats: build the bomb otherwise"
    end = packer.flush()
    count = gigabytes * 1024
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip, no name, no time
    trailer = struct.pack("<II", crc, (count * len(block)) & 0xFFFFFFFF)
    inner = header + piece * count + end + trailer
    return gzip.compress(inner, compresslevel=9, mtime=0)


def _serve_bytes(body: bytes, headers: dict[str, str], every: float | None = None) -> str:
    """Answer every GET on 127.0.0.1 with ``body`` and ``headers`` (from a thread; one
    byte each ``every`` seconds when set); returns the server's root URL."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if every is None:
                self.wfile.write(body)
                return
            for byte in body:
                time.sleep(every)
                self.wfile.write(bytes([byte]))
                self.wfile.flush()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet: the benchmark prints its own line."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


@case(
    "gzip-bomb",
    f"a page sent as Content-Encoding: gzip, gzip that inflates to {_BOMB_GB} GiB, polled once",
    max_seconds=5,
    # A poll of a one-release page peaks near 83 MB; a page may be decoded up to the
    # client's 20 MB bound before it is refused: the bomb may cost that, never more.
    max_rss_mb=120,
)
def gzip_bomb(work: Path) -> Callable[[], object]:
    """One tracked project whose index answers with a double-gzip bomb: the poll must
    refuse it as too big (20 MB, the client's bound) without inflating it."""
    body = _double_gzip_bomb(_BOMB_GB)
    print(f"bomb: {len(body):,} bytes", file=sys.stderr)
    repo = work / "repo"
    repo.mkdir()
    (repo / "requirements.txt").write_text("bombpkg >= 1.0, != 1.2.0  # 1.2.0 broke the CLI\n")
    db = f"sqlite:///{work / 'govern.db'}"
    env = {**os.environ, "HOME": str(work), "PIP_CONFIG_FILE": os.devnull}
    subprocess.run(
        [sys.executable, "-m", "govern", "track", str(repo), "--db", db],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=work,
        env=env,
    )
    headers = {"Content-Type": _JSON_TYPE, "Content-Encoding": "gzip, gzip"}
    url = _serve_bytes(body, headers) + "/simple/"
    os.chdir(work)

    def run() -> object:
        from govern.cli.poll import poll
        from govern.errors import GovernError

        try:
            result = poll(index_url=url, db=db)
        except GovernError as exc:  # every project failed: the run says so
            said = exc.message
        else:
            said = "; ".join(reason for _, reason in result.failures)
        # Printed, not asserted: the code before the bound is measured too.
        print(f"poll: {said} (want: body over 20 MB)", file=sys.stderr)
        return said

    return run


_TRICKLE_TIMEOUT = 2.0  # seconds: the API client's timeout in the trickle case


@case(
    "trickle",
    f"a CI API answer trickled a byte a second, under a {_TRICKLE_TIMEOUT:g} s timeout",
    max_seconds=_TRICKLE_TIMEOUT + 1,
    max_rss_mb=100,
)
def trickle(work: Path) -> Callable[[], object]:
    """A 30-byte JSON answer sent one byte a second: each read is inside the timeout,
    the request must still end at it (a deadline, not a per-read limit)."""
    url = _serve_bytes(
        b'{"state": "' + b"x" * 17 + b'"}', {"Content-Type": "application/json"}, 1.0
    )

    def run() -> object:
        import asyncio

        import httpx

        from govern.errors import CI_ERRORS, CIError
        from govern.http.client import ApiClient

        async def ask() -> str:
            async with httpx.AsyncClient(timeout=_TRICKLE_TIMEOUT) as http:
                api = ApiClient(
                    http,
                    vendor="buildkite",
                    base_url=url,
                    headers={"Authorization": "Bearer bench"},
                    secrets=(),
                    token_source="$BUILDKITE_TOKEN",  # noqa: S106 - a variable name
                    attempts=1,
                    errors=CI_ERRORS,
                )
                try:
                    return repr(await api.json("GET", "/builds/1"))
                except CIError as exc:
                    return exc.message

        said = asyncio.run(ask())
        print(f"api: {said}", file=sys.stderr)
        return said

    return run


# Issue 22, item 9: shapes that were quadratic or cubic; each target is 2 s.

_DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def _one_line_case(work: Path, line: str) -> Callable[[], object]:
    """A requirements file of one reason and one (long) requirement line."""
    file = work / "requirements.txt"
    file.write_text(f"# 1.x broke us, see o/r#1\n{line}\n", encoding="utf-8")
    return _audit_cli(work, file)


@case("caps-2k", "one line of 2,000 <V clauses (11 KB)", max_seconds=2, max_rss_mb=300)
def _caps_2k(work: Path) -> Callable[[], object]:
    return _one_line_case(work, "foo" + ",".join(f"<1.{i}" for i in range(2_000)))


@case("caps-100k", "one line of 100,000 <V clauses", max_seconds=2, max_rss_mb=600)
def _caps_100k(work: Path) -> Callable[[], object]:
    return _one_line_case(work, "foo" + ",".join(f"<1.{i}" for i in range(100_000)))


@case("wildcards-100k", "one line of 100,000 !=V.* clauses", max_seconds=2, max_rss_mb=600)
def _wildcards_100k(work: Path) -> Callable[[], object]:
    return _one_line_case(work, "foo" + ",".join(f"!=1.{i}.*" for i in range(100_000)))


@case("issue-links", "# govern: issue= with 20,000 links", max_seconds=2, max_rss_mb=300)
def _issue_links(work: Path) -> Callable[[], object]:
    links = ",".join(f"o/r#{i}" for i in range(20_000))
    file = work / "requirements.txt"
    file.write_text(f"# govern: issue={links}\nfoo<2\n", encoding="utf-8")
    return _audit_cli(work, file)


# Real lines of the corpus under tests/data (each file's PROVENANCE.md says where from).
_REAL_LINES = {
    "vllm-transformers": "transformers >= 4.56.0, < 5",  # vllm/requirements/common.txt
    "vllm-mhcs": "model-hosting-container-standards >= 0.1.13, < 1.0.0",  # the same
    "ha-pubnub": "pubnub!=6.4.0",  # home-assistant/homeassistant__package_constraints.txt
    "ha-urllib3": "urllib3>=1.26.5,<2",  # the same
    "ha-pandas": "pandas~=2.2.3",  # the same
    "os-eventlet": (  # openstack/global-requirements.txt
        "eventlet!=0.18.3,!=0.20.1,!=0.21.0,!=0.23.0,!=0.25.0,!=0.32.0,!=0.34.1,!=0.34.2,"
        "!=0.34.3,!=0.35.0,!=0.36.0  # MIT"
    ),
    "os-alembic": "alembic!=1.2.0,!=1.6.3  # MIT",  # the same
    "af-otel": "opentelemetry-proto<9999,>=1.27.0",  # airflow/airflow-core__pyproject.toml
    "af-fastapi": "fastapi[standard-no-fastapi-cloud-cli]>=0.121.0, <0.126.0",  # the same
}


def _repeated_line(key: str) -> Callable[[Path], Callable[[], object]]:
    def prepare(work: Path) -> Callable[[], object]:
        file = work / "requirements.txt"
        file.write_text((_REAL_LINES[key] + "\n") * 100_000, encoding="utf-8")
        return _audit_cli(work, file)

    return prepare


for _key in _REAL_LINES:
    case(f"x100k-{_key}", f"{_key}'s line repeated 100,000 times", max_seconds=2, max_rss_mb=600)(
        _repeated_line(_key)
    )


@case(
    "denylist-runs",
    "OpenStack's denylist.txt, each requirement line repeated 1,100 times (82,523 lines)",
    max_seconds=2,
    max_rss_mb=300,
)
def _denylist_runs(work: Path) -> Callable[[], object]:
    lines: list[str] = []
    for line in (_DATA / "openstack" / "denylist.txt").read_text(encoding="utf-8").splitlines():
        lines.extend([line] * (1_100 if line and not line.startswith("#") else 1))
    file = work / "denylist.txt"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return _audit_cli(work, file)


@case(
    "denylist-caps",
    "OpenStack's denylist.txt, each name given 1,000 <V clauses",
    max_seconds=2,
    max_rss_mb=300,
)
def _denylist_caps(work: Path) -> Callable[[], object]:
    caps = ",".join(f"<1.{i}" for i in range(1_000))
    lines = [
        line + caps if line and not line.startswith("#") else line
        for line in (_DATA / "openstack" / "denylist.txt").read_text(encoding="utf-8").splitlines()
    ]
    file = work / "denylist.txt"
    file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return _audit_cli(work, file)


def _child(name: str, work: Path) -> None:
    work_to_time = CASES[name].prepare(work)
    started = time.perf_counter()
    work_to_time()
    print(f"{time.perf_counter() - started:.3f}")


def _measure(
    name: str, work: Path, *, code: str | None = None, limit: float | None = None
) -> tuple[float, float] | None:
    """Wall seconds of the case's own work and the child's peak RSS in MB.

    ``code``: a checkout whose govern the child imports (``PYTHONPATH``; by default this
    one), for a baseline;
    ``limit``: seconds after which the child is killed (None is returned).
    """
    # This checkout's govern unless told otherwise (an installed govern may be another's).
    env = {**os.environ, "PYTHONPATH": code or str(Path(__file__).resolve().parent.parent)}
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", name, "--work", str(work)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        process.kill()

    # A timer, not communicate(timeout=): the child is reaped here, by wait4, for its RSS.
    timer = threading.Timer(limit, kill) if limit else None
    if timer:
        timer.start()
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    if timer:
        timer.cancel()
    if killed.is_set():
        return None
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
    parser.add_argument(
        "--baseline",
        metavar="CHECKOUT",
        help="also run each case on this checkout's govern (killed after 60 s), side by side",
    )
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.work)
        return
    names = args.case or sorted(CASES)
    wide = max(len(name) for name in names)
    before = f" {'baseline':>9}" if args.baseline else ""
    print(f"{'case':<{wide}}{before} {'seconds':>9} {'peak MB':>9}  target")
    with work_directory(args.keep, "hostile") as work:
        for name in names:
            spec = CASES[name]
            if args.baseline:
                (work / f"{name}.baseline").mkdir()
                old = _measure(name, work / f"{name}.baseline", code=args.baseline, limit=60)
                before = f" {'>60 s':>9}" if old is None else f" {old[0]:>9.3f}"
            scratch = work / name
            scratch.mkdir()
            measured = _measure(name, scratch)
            assert measured is not None  # no limit: it runs to its end
            seconds, rss = measured
            verdict = "PASS" if seconds <= spec.max_seconds and rss <= spec.max_rss_mb else "FAIL"
            print(
                f"{name:<{wide}}{before} {seconds:>9.3f} {rss:>9.1f}  "
                f"≤ {spec.max_seconds:g} s, ≤ {spec.max_rss_mb:g} MB  {verdict}  ({spec.what})"
            )


if __name__ == "__main__":
    main()
