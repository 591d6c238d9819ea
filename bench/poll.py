"""Benchmark ``govern poll`` against ``uv pip compile --no-deps`` on one local static index.

This is a benchmark, not a test: it prints figures and PASS/FAIL against the targets, and
always exits 0 unless the benchmark itself cannot run (a missing nginx that cannot be
installed is a SKIP, exit 0).

What is measured, in one run, side by side against the same index:

1. One nginx (Debian ``nginx-light``; installed with ``apt-get install -y nginx-light`` when
   missing and running as root) started by this script on 127.0.0.1 with a free port and a
   configuration written to the work directory (pid, logs and temp paths there too;
   ``daemon off``, stopped at the end, even on failure). It serves a static Simple API:
   ``etag on`` and ``if_modified_since exact`` (a conditional request for an unchanged page
   gets a 304), and PEP 691 content negotiation with a ``map`` on ``Accept``: a header that
   names ``application/vnd.pypi.simple.v1+json`` (not with ``q=0``) gets ``index.json``
   (served as that type), any other gets ``index.html`` (``text/html``); ``Vary: Accept``
   and ``Cache-Control: max-age=0, must-revalidate`` (so a caching client revalidates).
   Before anything is timed, both formats, the root listing, a metadata file, a wheel and
   the 304s (``If-None-Match`` and ``If-Modified-Since``) are checked with httpx, and both
   pages are parsed with govern's own parsers.

2. For each size (``--sizes``, default 50 and 1,000 projects) a generated static tree under
   ``/n<size>/simple/``: projects ``pkg-00001`` ... each with 8 versions (1.0.0 ... 1.3.0,
   2.0.0 ... 2.3.0), one ``py3-none-any`` wheel per version with a sha256 hash,
   ``requires-python``, a ``size``, an ``upload-time`` (JSON only: PEP 700 is not in HTML),
   some yanked (1.1.0 of every third project, 2.3.0 of every fifth); PEP 658/714 metadata
   (``data-dist-info-metadata`` and ``data-core-metadata`` in HTML, ``core-metadata`` and
   ``dist-info-metadata`` in JSON) with the ``<wheel>.metadata`` file beside each wheel;
   the tiny wheels themselves (a valid METADATA, WHEEL and RECORD; about 850 bytes each) are
   written too, so the index is complete, though with ``--no-deps`` uv reads only the
   project pages (no ``.metadata``, no wheel: the server's log says what it fetched). A
   root ``simple/index.html`` / ``index.json`` lists the projects, and ``requirements.txt``
   has one line per project with exclusions govern tracks::

       pkg-00001>=1.0,!=1.1.0,<2.0  # broken build, see https://example.invalid/issues/1

   (the excluded version rotates over 1.0.0 ... 1.3.0; every project has a ``!=`` and a
   ``<`` clause: 2 exclusions per project).

3. govern: ``python -m govern track <tree> --db sqlite:///<work>/...`` once (not timed; its
   wall is printed), the tracked SQLite file copied aside; then per round the copy is
   restored (so ``index_page`` is empty: a cold poll) and two fresh processes are timed:
   ``python -m govern poll --db ... --index-url http://127.0.0.1:PORT/n<size>/simple
   --format json`` cold (checked: ``fetched`` == projects == size, ``failed`` 0) and again
   warm (checked: ``not_modified`` == size, ``fetched`` 0: every page a 304). The rows
   govern wrote are counted afterwards (release, candidate, event, index_page). The child
   gets no ``PIP_*`` variable but ``PIP_CONFIG_FILE=/dev/null``: govern reads pip's
   configuration as pip does, and a ``--index-url`` keeps pip.conf's extra indexes.

4. uv, installed with ``pip install uv`` into a venv of its own in the work directory (or
   ``--uv PATH``): ``uv pip compile --no-deps --no-config --index-url ... --python <this
   python> requirements.txt -o /dev/null --no-cache`` (cold), and, as information, warm
   with a cache directory in the work directory (primed by one untimed run; uv then
   revalidates each page, which nginx answers with a 304). The child gets no ``PIP_*`` or
   ``UV_*`` variable but ``UV_NO_CONFIG=1``, ``UV_NO_PROGRESS=1`` and
   ``UV_PYTHON_DOWNLOADS=never``, so no other index or configuration is consulted. One
   untimed run writes its output and every pin is checked against the version expected.

   Each child (govern and uv) is timed by wall clock (start-up included) with its peak RSS
   from ``os.wait4``, both taken by a small launcher (``python -I -S``) that spawns it:
   Linux starts a child's ``ru_maxrss`` from its spawner's high-water mark, and this
   script's is far above a bare interpreter's. The requests it made are read from nginx's access log
   (status and what was fetched). The median of ``--rounds`` rounds (default 3) is
   reported, with every round's figure; govern and uv alternate which goes first.

5. Peak memory: a tree of ``--memory-size`` (default 10,000) projects (pages only: govern
   never fetches files), tracked, then one cold ``govern poll`` child whose ``ru_maxrss``
   (KiB, from ``os.wait4``) is reported in MiB; one warm poll follows, as information.
   ``--no-memory`` skips it.

6. The start-up floor, as information: the medians of ``python -c pass``, ``python -m
   govern --version`` and a bare import of what a poll imports, and ``python -X
   importtime`` of a warm poll (the twelve slowest imports); govern's cold median is split
   into that floor and the rest.

7. As information beside the targets, each size polled cold and warm inside this process
   with govern's modules already loaded (as a daemon would poll): the medians of
   ``--rounds`` rounds and warm / cold without the start-up a fresh process pays.

8. Polls that repeat, in ``govern daemon``: for each size, ``--rounds`` daemon children on
   the tracked database, each polling every second or two (sync and verify off); the
   first poll of each is cold, the next three warm (all 304). Their medians (the poll's
   ``duration_seconds`` from the daemon's JSON lines) are judged against the warm target:
   a daemon pays the interpreter's start-up once, not on every poll.

9. With ``--profile``, on the largest size, in-process (``govern.cli.main``, govern's
   modules already imported): a cold and a warm poll with their phases timed (the client's
   ``fetch_many``, the rest of the service's ``poll``: store and judging, and the CLI
   around it), then a cold and a warm poll under cProfile, with the top functions by
   cumulative and by own time.

Renovate (npm ``renovate``, local platform, lookup only) is not run here: it needs Node.js
and a Renovate install the project does not otherwise use.

Targets (from the issue):

- ``govern poll`` cold ≤ 2 x ``uv pip compile --no-deps`` (cold, ``--no-cache``), at 50 and
  at 1,000 projects;
- warm (all 304) ≤ 0.5 x cold (judged both for fresh ``govern poll`` processes and for
  the polls of one ``govern daemon``);
- peak memory ≤ 150 MB at 10,000 projects.

Usage::

    python bench/poll.py                          # 50 and 1,000 projects, 3 rounds, 10,000 RSS
    python bench/poll.py --sizes 50 --no-memory   # quick
    python bench/poll.py --rounds 5 --profile --keep

No network is used but 127.0.0.1 (the nginx started here); ``pip install uv`` uses pip's
own configuration. The work directory (under ``bench/.work/``, git-ignored) is removed at
the end unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import cProfile
import email.utils
import grp
import hashlib
import html
import io
import json
import os
import pstats
import pwd
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchkit import where as _where
from benchkit import work_directory

BENCH_DIR = Path(__file__).resolve().parent

UV_RATIO_TARGET = 2.0  # govern cold / uv cold
UV_TARGET_SIZES = (50, 1000)
WARM_RATIO_TARGET = 0.5  # govern warm / govern cold
MEMORY_TARGET_SIZE = 10_000
MEMORY_TARGET_MB = 150.0
REFERENCE_UV_50 = 0.07  # seconds, on the reference machine (from the issue)
REFERENCE_RENOVATE_50 = 1.8

VERSIONS = ("1.0.0", "1.1.0", "1.2.0", "1.3.0", "2.0.0", "2.1.0", "2.2.0", "2.3.0")
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT_JSON = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
FIRST_UPLOAD = datetime(2023, 1, 2, 3, 4, 5, tzinfo=UTC)
_ZIP_TIME = (2023, 1, 1, 0, 0, 0)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# --------------------------------------------------------------------------
# The static index
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Project:
    """One generated project: its name, what is excluded, and what a resolver must pick."""

    name: str
    number: int
    bad: str  # the version excluded with !=
    yanked: frozenset[str]

    @property
    def requirement(self) -> str:
        return f"{self.name}>=1.0,!={self.bad},<2.0"

    @property
    def expected(self) -> str:
        """What ``>=1.0,!=bad,<2.0`` resolves to (yanked versions are skipped)."""
        allowed = [
            v for v in VERSIONS if v.startswith("1.") and v != self.bad and v not in self.yanked
        ]
        return allowed[-1]


def project(number: int) -> Project:
    yanked = set()
    if number % 3 == 0:
        yanked.add("1.1.0")
    if number % 5 == 0:
        yanked.add("2.3.0")
    return Project(f"pkg-{number:05d}", number, VERSIONS[number % 4], frozenset(yanked))


_REASONS = (
    "broken build, see https://example.invalid/issues/{n}",
    "segfaults on import (example/{name}#{n})",
    "regressed the API; https://example.invalid/{name}/pull/{n}",
    "wheel missing for 3.13, https://example.invalid/issues/{n}",
)


def _requires_python(version: str) -> str:
    return ">=3.9" if version.startswith("2.") else ">=3.8"


def _metadata(project: Project, version: str) -> bytes:
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {project.name}\n"
        f"Version: {version}\n"
        "Summary: generated by bench/poll.py\n"
        f"Requires-Python: {_requires_python(version)}\n"
        "\n"
    ).encode()


def _wheel(project: Project, version: str, metadata: bytes) -> tuple[str, bytes]:
    """The filename and bytes of a tiny valid pure-Python wheel (deterministic)."""
    stem = f"{project.name.replace('-', '_')}-{version}"
    dist_info = f"{stem}.dist-info"
    wheel_file = b"Wheel-Version: 1.0\nGenerator: bench/poll.py\nRoot-Is-Purelib: true\n"
    wheel_file += b"Tag: py3-none-any\n"
    members = ((f"{dist_info}/METADATA", metadata), (f"{dist_info}/WHEEL", wheel_file))
    record = "".join(
        f"{path},sha256={_b64(hashlib.sha256(data).digest())},{len(data)}\n"
        for path, data in members
    )
    record += f"{dist_info}/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for path, data in (*members, (f"{dist_info}/RECORD", record.encode())):
            archive.writestr(zipfile.ZipInfo(path, _ZIP_TIME), data)
    return f"{stem}-py3-none-any.whl", buffer.getvalue()


def _b64(digest: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass(slots=True)
class IndexTree:
    """A generated tree: the index part served by nginx, and the requirements govern tracks."""

    size: int
    www: Path  # <www>/n<size>/ : simple/ and files/
    prefix: str  # URL path of the tree, "/n<size>"
    repo: Path  # the directory tracked (requirements.txt)
    projects: list[Project]
    page_files: int = 0
    other_files: int = 0
    bytes_written: int = 0
    seconds: float = 0.0

    @property
    def requirements(self) -> Path:
        return self.repo / "requirements.txt"


def generate(work: Path, www: Path, size: int, *, files: bool) -> IndexTree:
    """Write the pages (and, with ``files``, the wheels and their metadata) of ``size`` projects."""
    started = time.perf_counter()
    prefix = f"/n{size}"
    base = www / prefix.lstrip("/")
    tree = IndexTree(
        size, www, prefix, work / f"repo-{size}", [project(i) for i in range(1, size + 1)]
    )
    simple = base / "simple"
    simple.mkdir(parents=True)
    tree.repo.mkdir()

    def write(path: Path, data: bytes, *, page: bool) -> None:
        path.write_bytes(data)
        tree.bytes_written += len(data)
        if page:
            tree.page_files += 1
        else:
            tree.other_files += 1

    for index, item in enumerate(tree.projects):
        entries: list[dict[str, Any]] = []
        anchors: list[str] = []
        folder = base / "files" / item.name
        if files:
            folder.mkdir(parents=True)
        for position, version in enumerate(VERSIONS):
            metadata = _metadata(item, version)
            filename, wheel = _wheel(item, version, metadata)
            wheel_sha = hashlib.sha256(wheel).hexdigest()
            metadata_sha = hashlib.sha256(metadata).hexdigest()
            if files:
                write(folder / filename, wheel, page=False)
                write(folder / f"{filename}.metadata", metadata, page=False)
            url = f"../../files/{item.name}/{filename}"
            uploaded = FIRST_UPLOAD + timedelta(days=45 * position, seconds=item.number)
            yanked: str | bool = False
            if version in item.yanked:
                yanked = f"broken upload of {version}"
            entries.append(
                {
                    "filename": filename,
                    "url": url,
                    "hashes": {"sha256": wheel_sha},
                    "requires-python": _requires_python(version),
                    "core-metadata": {"sha256": metadata_sha},
                    "dist-info-metadata": {"sha256": metadata_sha},
                    "size": len(wheel),
                    "upload-time": uploaded.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    "yanked": yanked,
                }
            )
            attributes = (
                f' data-requires-python="{html.escape(_requires_python(version))}"'
                f' data-dist-info-metadata="sha256={metadata_sha}"'
                f' data-core-metadata="sha256={metadata_sha}"'
            )
            if yanked:
                attributes += f' data-yanked="{html.escape(str(yanked))}"'
            anchors.append(f'<a href="{url}#sha256={wheel_sha}"{attributes}>{filename}</a><br>')
        serial = 1000 + index * 10
        document = {
            "meta": {"api-version": "1.1", "_last-serial": serial},
            "name": item.name,
            "versions": list(VERSIONS),
            "files": entries,
        }
        page = simple / item.name
        page.mkdir()
        write(page / "index.json", json.dumps(document).encode(), page=True)
        write(
            page / "index.html",
            (
                "<!DOCTYPE html>\n<html>\n<head>\n"
                '<meta name="pypi:repository-version" content="1.1">\n'
                f"<title>Links for {item.name}</title>\n</head>\n<body>\n"
                f"<h1>Links for {item.name}</h1>\n" + "\n".join(anchors) + "\n</body>\n</html>\n"
            ).encode(),
            page=True,
        )
    root_json = {
        "meta": {"api-version": "1.1", "_last-serial": 1000 + size * 10},
        "projects": [{"name": item.name} for item in tree.projects],
    }
    write(simple / "index.json", json.dumps(root_json).encode(), page=True)
    links = "\n".join(f'<a href="{p.name}/">{p.name}</a><br>' for p in tree.projects)
    write(
        simple / "index.html",
        (
            '<!DOCTYPE html>\n<html>\n<head>\n<meta name="pypi:repository-version" '
            f'content="1.1">\n<title>Simple index</title>\n</head>\n<body>\n{links}\n'
            "</body>\n</html>\n"
        ).encode(),
        page=True,
    )
    lines = [f"# generated by bench/poll.py: {size} projects, each with a != and a < exclusion", ""]
    for item in tree.projects:
        reason = _REASONS[item.number % len(_REASONS)].format(n=item.number, name=item.name)
        lines.append(f"{item.requirement}  # {reason}")
    tree.requirements.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tree.seconds = time.perf_counter() - started
    return tree


# --------------------------------------------------------------------------
# nginx
# --------------------------------------------------------------------------

NGINX_CONF = """\
# Written by bench/poll.py: a static PEP 503 / PEP 691 index on 127.0.0.1.
daemon off;
master_process on;
worker_processes {workers};
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
{user}
events {{
    worker_connections 1024;
}}

http {{
    types {{
        text/html html;
        application/vnd.pypi.simple.v1+json json;
        application/octet-stream whl metadata;
    }}
    default_type application/octet-stream;
    charset utf-8;
    log_format bench '$status|$request_method|$request_uri|'
                     '$sent_http_content_type|$body_bytes_sent';
    access_log {prefix}/access.log bench;
    client_body_temp_path {prefix}/temp/body;
    proxy_temp_path {prefix}/temp/proxy;
    fastcgi_temp_path {prefix}/temp/fastcgi;
    uwsgi_temp_path {prefix}/temp/uwsgi;
    scgi_temp_path {prefix}/temp/scgi;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 100000;
    absolute_redirect off;
    server_tokens off;
    # Conditional requests: an unchanged page is a 304 (ETag: mtime-size; Last-Modified).
    etag on;
    if_modified_since exact;

    # PEP 691 content negotiation: JSON when the client names it (unless with q=0).
    map $http_accept $simple_index {{
        "~application/vnd\\.pypi\\.simple\\.v1\\+json\\s*;\\s*q=0(\\.0*)?(?![.0-9])" index.html;
        "~application/vnd\\.pypi\\.simple\\.v1\\+json" index.json;
        default index.html;
    }}

    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{
            index $simple_index;
            add_header Vary Accept always;
            # Every client revalidates (uv's warm run too): a 304, not a fresh cache hit.
            add_header Cache-Control "max-age=0, must-revalidate" always;
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def find_nginx() -> tuple[str | None, str]:
    """The nginx binary, installing Debian's ``nginx-light`` when missing; else why not."""
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate, "found"
    apt = shutil.which("apt-get")
    if os.geteuid() != 0 or apt is None:
        return None, "nginx is not installed and this is not a root shell with apt-get"
    print("nginx not found: apt-get install -y nginx-light ...")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "nginx-light"]):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0 and argv[1] == "install":
            return None, f"apt-get install failed:\n{done.stderr[-1500:]}"
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate, "installed nginx-light with apt-get"
    return None, "apt-get install nginx-light left no nginx binary"


@dataclass(slots=True)
class Nginx:
    """Our own nginx process (not the system's service), its port and access log."""

    binary: str
    prefix: Path
    root: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def access_log(self) -> Path:
        return self.prefix / "access.log"

    @property
    def error_log(self) -> Path:
        return self.prefix / "error.log"

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        (self.prefix / "temp").mkdir(parents=True, exist_ok=True)
        user = ""
        if os.geteuid() == 0:
            # The tree is in a private (0700) work directory: the workers run as this
            # user, not as the compiled-in default, so that they can read it.
            user_name = pwd.getpwuid(os.geteuid()).pw_name
            group_name = grp.getgrgid(os.getegid()).gr_name
            user = f"user {user_name} {group_name};"
        conf = self.prefix / "nginx.conf"
        for _attempt in range(5):
            self.port = free_port()
            conf.write_text(
                NGINX_CONF.format(
                    workers=min(2, os.cpu_count() or 1),
                    prefix=self.prefix,
                    user=user,
                    port=self.port,
                    root=self.root,
                ),
                encoding="utf-8",
            )
            argv = [
                self.binary,
                "-p",
                f"{self.prefix}/",
                "-c",
                str(conf),
                "-e",
                str(self.error_log),
            ]
            tested = subprocess.run(
                [*argv, "-t", "-q"], capture_output=True, text=True, check=False
            )
            if tested.returncode != 0:
                raise RuntimeError(f"nginx -t rejected {conf}:\n{tested.stderr[-2000:]}")
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    break
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection(("127.0.0.1", self.port), timeout=0.2),
                ):
                    return
                time.sleep(0.05)
            stderr = self._stop_process()
            if "Address already in use" not in stderr:
                raise RuntimeError(f"nginx did not start:\n{stderr[-2000:]}")
        raise RuntimeError("nginx found no free port in 5 attempts")

    def _stop_process(self) -> str:
        process, self.process = self.process, None
        if process is None:
            return ""
        if process.poll() is None:
            process.terminate()  # SIGTERM: nginx's fast shutdown (workers too)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        stderr = process.stderr.read().decode("utf-8", "replace") if process.stderr else ""
        if self.error_log.exists():
            stderr += self.error_log.read_text("utf-8", "replace")
        return stderr

    def stop(self) -> None:
        self._stop_process()

    def log_offset(self) -> int:
        return self.access_log.stat().st_size if self.access_log.exists() else 0

    def requests_since(self, offset: int) -> Requests:
        """The requests logged after ``offset`` (waits for the log to settle, ≤ 1 s)."""
        previous = -1
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            current = self.log_offset()
            if current == previous:
                break
            previous = current
            time.sleep(0.02)
        with self.access_log.open("rb") as handle:
            handle.seek(offset)
            data = handle.read().decode("utf-8", "replace")
        return Requests.parse(data)


@dataclass(slots=True)
class Requests:
    """What nginx's access log says a run asked for."""

    total: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)

    @classmethod
    def parse(cls, text: str) -> Requests:
        found = cls()
        for line in text.splitlines():
            parts = line.split("|")
            if len(parts) < 5:
                continue
            status, _method, uri, content_type, _sent = parts[:5]
            uri = uri.partition("?")[0]
            if uri.endswith("/"):
                if content_type.startswith(JSON_TYPE):
                    kind = "json page"
                elif content_type.startswith("text/html"):
                    kind = "html page"
                else:
                    kind = "page"  # a 304 has no body, and no type
            elif uri.endswith(".metadata"):
                kind = "metadata"
            elif uri.endswith(".whl"):
                kind = "wheel"
            else:
                kind = "other"
            found.total += 1
            found.by_status[status] += 1
            found.by_kind[kind] += 1
        return found

    def describe(self) -> str:
        statuses = " ".join(f"{k}:{v}" for k, v in sorted(self.by_status.items()))
        kinds = ", ".join(f"{v} {k}" for k, v in sorted(self.by_kind.items()))
        return f"{statuses} ({kinds})" if self.total else "none"


def check_server(server: Nginx, tree: IndexTree) -> list[tuple[str, bool]]:
    """Both formats, the root listing, files and the 304s, before anything is timed."""
    import httpx

    from govern.index.simple import parse_html, parse_json

    checks: list[tuple[str, bool]] = []
    item = max(tree.projects[:15], key=lambda p: (len(p.yanked), -p.number))
    page_url = server.url(f"{tree.prefix}/simple/{item.name}/")
    with httpx.Client(trust_env=False, timeout=10.0) as client:
        as_json = client.get(page_url, headers={"Accept": ACCEPT_JSON})
        checks.append(
            (
                f"JSON page: {as_json.status_code} {as_json.headers.get('content-type')}",
                as_json.status_code == 200
                and as_json.headers.get("content-type", "").startswith(JSON_TYPE),
            )
        )
        parsed_json = parse_json(as_json.content, name=item.name, base_url=page_url)
        checks.append(
            (
                f"govern parses the JSON page: {len(parsed_json.files)} files",
                len(parsed_json.files) == len(VERSIONS),
            )
        )
        as_html = client.get(page_url, headers={"Accept": "text/html"})
        checks.append(
            (
                f"HTML page: {as_html.status_code} {as_html.headers.get('content-type')}",
                as_html.status_code == 200
                and as_html.headers.get("content-type", "").startswith("text/html"),
            )
        )
        parsed_html = parse_html(as_html.content, name=item.name, base_url=page_url)
        yanked = sum(1 for f in parsed_html.files if f.yanked)
        checks.append(
            (
                f"govern parses the HTML page: {len(parsed_html.files)} files, {yanked} yanked",
                len(parsed_html.files) == len(VERSIONS) and yanked == len(item.yanked),
            )
        )
        refused = client.get(page_url, headers={"Accept": f"{JSON_TYPE};q=0, text/html"})
        checks.append(
            (
                f"JSON with q=0 gets HTML: {refused.headers.get('content-type')}",
                refused.headers.get("content-type", "").startswith("text/html"),
            )
        )
        etag = as_json.headers.get("etag")
        modified = as_json.headers.get("last-modified")
        checks.append(
            (
                f"validators: ETag {etag}, Last-Modified {modified}, Vary "
                f"{as_json.headers.get('vary')}",
                bool(etag) and bool(modified) and as_json.headers.get("vary") == "Accept",
            )
        )
        again = client.get(
            page_url, headers={"Accept": ACCEPT_JSON, "If-None-Match": etag or '"none"'}
        )
        checks.append((f"If-None-Match: {again.status_code}", again.status_code == 304))
        since = client.get(
            page_url,
            headers={"Accept": ACCEPT_JSON, "If-Modified-Since": modified or "never"},
        )
        checks.append((f"If-Modified-Since: {since.status_code}", since.status_code == 304))
        stale = email.utils.format_datetime(datetime(2000, 1, 1, tzinfo=UTC), usegmt=True)
        changed = client.get(page_url, headers={"Accept": ACCEPT_JSON, "If-Modified-Since": stale})
        checks.append(
            (f"If-Modified-Since (older): {changed.status_code}", changed.status_code == 200)
        )
        root = client.get(server.url(f"{tree.prefix}/simple/"), headers={"Accept": ACCEPT_JSON})
        listed = len(root.json().get("projects", [])) if root.status_code == 200 else 0
        checks.append((f"root listing (JSON): {listed} projects", listed == tree.size))
        root_html = client.get(server.url(f"{tree.prefix}/simple/"))
        checks.append(
            (
                f"root listing (HTML): {root_html.status_code} "
                f"{root_html.headers.get('content-type')}",
                root_html.status_code == 200
                and root_html.headers.get("content-type", "").startswith("text/html"),
            )
        )
        if tree.other_files:
            entry = json.loads(as_json.content)["files"][-1]
            file_url = str(httpx.URL(page_url).join(entry["url"]))
            metadata = client.get(f"{file_url}.metadata")
            wheel = client.get(file_url)
            checks.append(
                (
                    f"metadata file: {metadata.status_code}, sha256 matches core-metadata",
                    metadata.status_code == 200
                    and hashlib.sha256(metadata.content).hexdigest()
                    == entry["core-metadata"]["sha256"],
                )
            )
            checks.append(
                (
                    f"wheel file: {wheel.status_code}, {len(wheel.content)} bytes, sha256 matches",
                    wheel.status_code == 200
                    and hashlib.sha256(wheel.content).hexdigest() == entry["hashes"]["sha256"],
                )
            )
    return checks


# --------------------------------------------------------------------------
# Child processes
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChildRun:
    """One child process measured with ``os.wait4``."""

    wall: float
    max_rss_kib: int
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool

    @property
    def peak_mb(self) -> float:
        return self.max_rss_kib / 1024


# A child's ru_maxrss starts from the high-water mark of the process that spawned it
# (Linux carries the pre-exec memory's peak across exec, fork and vfork alike): from this
# benchmark (60+ MB once govern and httpx are imported) every child would seem at least as
# big. So children are spawned by this small launcher (python -I -S, about 8 MB), which
# times the child and reads its ru_maxrss with os.wait4.
LAUNCHER = """\
import os, sys, time
out, argv = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
pid = os.posix_spawn(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(out, "w") as handle:
    handle.write(f"{wall!r} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""


def run_measured(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> ChildRun:
    """Run ``argv`` (``argv[0]`` absolute); wall time and peak RSS (KiB) of exactly that child.

    The wall is taken in the launcher, around the child alone; on a timeout the launcher's
    process group (the launcher and the child) is killed.
    """
    if not os.path.isabs(argv[0]):
        raise ValueError(f"not an absolute path: {argv[0]}")
    with (
        tempfile.TemporaryFile() as stdout_file,
        tempfile.TemporaryFile() as stderr_file,
        tempfile.TemporaryDirectory() as scratch,
    ):
        report = Path(scratch) / "measured"
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", LAUNCHER, str(report), *argv],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=stdout_file,
            stderr=stderr_file,
            start_new_session=True,  # its own process group, so that a timeout ends both
        )
        timed_out = threading.Event()

        def _kill() -> None:
            timed_out.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(timeout, _kill)
        timer.start()
        try:
            proc.wait()
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        stdout_file.seek(0)
        stderr_file.seek(0)
        stdout = stdout_file.read().decode("utf-8", "replace")
        stderr = stderr_file.read().decode("utf-8", "replace")
        try:
            measured_wall, max_rss, exit_code = report.read_text("utf-8").split()
        except (OSError, ValueError):  # killed, or the launcher failed
            return ChildRun(wall, 0, proc.returncode or -1, stdout, stderr, timed_out.is_set())
    return ChildRun(
        float(measured_wall), int(max_rss), int(exit_code), stdout, stderr, timed_out.is_set()
    )


def base_env(work: Path) -> dict[str, str]:
    """The environment of every child: no pip or uv settings, no proxy for 127.0.0.1."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull  # pip (and what reads pip's config) sees none
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["GIT_CEILING_DIRECTORIES"] = str(work)  # the trees are not part of the checkout
    return env


def uv_env(work: Path) -> dict[str, str]:
    env = base_env(work)
    env.update(
        UV_NO_CONFIG="1",
        UV_NO_PROGRESS="1",
        UV_PYTHON_DOWNLOADS="never",
        UV_CACHE_DIR=str(work / "uv-cache-unused"),  # --no-cache makes a temporary one
        XDG_CONFIG_HOME=str(work / "xdg-config"),
    )
    return env


@dataclass(slots=True)
class Measured:
    """One timed run: the child, what the server saw, and what its output said."""

    run: ChildRun
    requests: Requests
    counts: dict[str, int] = field(default_factory=dict)


def measure(
    server: Nginx, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> Measured:
    offset = server.log_offset()
    run = run_measured(argv, cwd, env, timeout)
    return Measured(run, server.requests_since(offset))


def failure(what: str, run: ChildRun, timeout: float) -> str:
    why = f"killed after {timeout:.0f} s" if run.timed_out else f"exit {run.exit_code}"
    return f"{what} failed ({why}):\n{run.stderr[-3000:]}{run.stdout[-1000:]}"


# --------------------------------------------------------------------------
# govern
# --------------------------------------------------------------------------

POLL_KEYS = ("projects", "exclusions", "fetched", "not_modified", "failed", "requests")


def track(tree: IndexTree, db: Path, work: Path, timeout: float) -> tuple[float, dict[str, Any]]:
    """``govern track`` the tree into a fresh SQLite file (not timed as a result)."""
    argv = [
        sys.executable,
        "-m",
        "govern",
        "track",
        str(tree.repo),
        "--db",
        f"sqlite:///{db}",
        "--format",
        "json",
    ]
    run = run_measured(argv, tree.repo, base_env(work), timeout)
    if run.exit_code != 0:
        raise RuntimeError(failure("govern track", run, timeout))
    document: dict[str, Any] = json.loads(run.stdout)
    return run.wall, document


ROW_QUERIES = {
    "exclusion": "SELECT count(*) FROM exclusion",
    "release": "SELECT count(*) FROM release",
    "candidate": "SELECT count(*) FROM candidate",
    "event": "SELECT count(*) FROM event",
    "index_page": "SELECT count(*) FROM index_page",
}


def count_rows(db: Path) -> str:
    """Rows of the tables a poll writes, read with sqlite3 (the file govern wrote)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
            counts = [
                f"{name} {connection.execute(query).fetchone()[0]:,}"
                for name, query in ROW_QUERIES.items()
            ]
    except sqlite3.Error as exc:
        return f"rows not counted ({exc})"
    return "rows: " + ", ".join(counts)


def poll_argv(server: Nginx, tree: IndexTree, db: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "govern",
        "poll",
        "--db",
        f"sqlite:///{db}",
        "--index-url",
        server.url(f"{tree.prefix}/simple"),
        "--format",
        "json",
    ]


def restore(snapshot: Path, db: Path) -> None:
    """The tracked database as it was before any poll (``index_page`` empty: a cold poll)."""
    for suffix in ("-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(snapshot, db)


def poll_once(
    server: Nginx, tree: IndexTree, db: Path, work: Path, timeout: float, label: str
) -> Measured:
    measured = measure(server, poll_argv(server, tree, db), tree.repo, base_env(work), timeout)
    if measured.run.exit_code != 0:
        raise RuntimeError(
            failure(f"govern poll ({label}, {tree.size} projects)", measured.run, timeout)
        )
    document = json.loads(measured.run.stdout)
    measured.counts = {key: int(document.get(key, -1)) for key in POLL_KEYS}
    return measured


def check_poll(label: str, size: int, measured: Measured, *, warm: bool) -> tuple[str, bool]:
    c = measured.counts
    if warm:
        ok = c["projects"] == size and c["not_modified"] == size and c["fetched"] == 0
        want = f"not_modified {c['not_modified']} == {size}, fetched {c['fetched']} == 0"
    else:
        ok = c["projects"] == size and c["fetched"] == size
        want = f"fetched {c['fetched']} == {size}"
    ok = ok and c["failed"] == 0
    served = measured.requests.by_status
    return (
        f"{label}: projects {c['projects']}, {want}, failed {c['failed']}; requests "
        f"{c['requests']} (server log: {measured.requests.describe()}; "
        f"200s {served.get('200', 0)}, 304s {served.get('304', 0)})",
        ok,
    )


# --------------------------------------------------------------------------
# uv
# --------------------------------------------------------------------------


def install_uv(work: Path) -> tuple[Path | None, str]:
    """``pip install uv`` into a venv of its own (pip's own configuration is used)."""
    venv = work / "uv-venv"
    made = subprocess.run(
        [sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, check=False
    )
    if made.returncode != 0:
        return None, f"python -m venv failed:\n{made.stderr[-1500:]}"
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "uv"],
        capture_output=True,
        text=True,
        check=False,
    )
    uv = venv / "bin" / "uv"
    if installed.returncode != 0 or not uv.exists():
        return None, f"pip install uv failed:\n{installed.stderr[-1500:]}"
    return uv, "pip install uv (a venv in the work dir)"


def uv_argv(uv: Path, server: Nginx, tree: IndexTree, output: str, cache: Path | None) -> list[str]:
    argv = [
        str(uv),
        "pip",
        "compile",
        "--no-deps",
        "--no-config",
        "--index-url",
        server.url(f"{tree.prefix}/simple"),
        "--python",
        sys.executable,
        "--no-header",
        "--no-annotate",
        "--quiet",
        str(tree.requirements),
        "-o",
        output,
    ]
    argv += ["--no-cache"] if cache is None else ["--cache-dir", str(cache)]
    return argv


def uv_once(
    uv: Path, server: Nginx, tree: IndexTree, work: Path, timeout: float, cache: Path | None
) -> Measured:
    argv = uv_argv(uv, server, tree, os.devnull, cache)
    measured = measure(server, argv, tree.repo, uv_env(work), timeout)
    if measured.run.exit_code != 0:
        raise RuntimeError(failure(f"uv pip compile ({tree.size} projects)", measured.run, timeout))
    return measured


def check_uv(
    uv: Path, server: Nginx, tree: IndexTree, work: Path, timeout: float
) -> tuple[str, bool]:
    """One untimed run writing its output: every project pinned to the version expected."""
    output = work / f"uv-{tree.size}.txt"
    argv = uv_argv(uv, server, tree, str(output), None)
    measured = measure(server, argv, tree.repo, uv_env(work), timeout)
    if measured.run.exit_code != 0:
        raise RuntimeError(failure(f"uv pip compile ({tree.size} projects)", measured.run, timeout))
    pins: dict[str, str] = {}
    for line in output.read_text("utf-8").splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            pins[name.strip()] = version.split()[0] if version.split() else ""
    wrong = [p.name for p in tree.projects if pins.get(p.name) != p.expected]
    return (
        f"uv check run: exit 0, {len(pins)} pins, {len(wrong)} not the version expected "
        f"{wrong[:3] if wrong else ''}; server log: {measured.requests.describe()}",
        not wrong and len(pins) == tree.size,
    )


# --------------------------------------------------------------------------
# One size
# --------------------------------------------------------------------------


@dataclass(slots=True)
class Series:
    """The rounds of one (size, tool, run)."""

    size: int
    tool: str
    run: str
    measured: list[Measured] = field(default_factory=list)
    note: str = ""

    @property
    def walls(self) -> list[float]:
        return [m.run.wall for m in self.measured]

    @property
    def median(self) -> float:
        return statistics.median(self.walls)


@dataclass(slots=True)
class SizeResult:
    size: int
    series: dict[str, Series] = field(default_factory=dict)
    checks: list[tuple[str, bool]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # tool -> why it did not complete

    def get(self, key: str) -> Series | None:
        found = self.series.get(key)
        return found if found is not None and found.measured else None


def size_section(
    server: Nginx,
    tree: IndexTree,
    uv: Path | None,
    work: Path,
    rounds: int,
    timeout: float,
) -> SizeResult:
    """Track once, then alternate govern (cold, warm) and uv (cold, warm) for ``rounds``.

    A tool that fails is reported and left out of the later rounds; the other goes on.
    """
    result = SizeResult(tree.size)
    db = work / "db" / f"govern-{tree.size}.db"
    snapshot = work / "db" / f"tracked-{tree.size}.db"
    db.parent.mkdir(exist_ok=True)
    print(f"\n--- {tree.size:,} projects ({server.url(tree.prefix + '/simple')})")
    cold = result.series["govern cold"] = Series(tree.size, "govern", "cold")
    warm = result.series["govern warm"] = Series(tree.size, "govern", "warm (304)")
    cold.note = "fresh copy of the tracked DB"
    warm.note = "second poll, same DB"
    uv_cold = result.series["uv cold"] = Series(tree.size, "uv", "cold --no-cache")
    uv_warm = result.series["uv warm"] = Series(tree.size, "uv", "warm (info)")
    uv_warm.note = "cache dir primed once"
    uv_cache = work / f"uv-cache-{tree.size}"
    errors: dict[str, str] = {}
    caught = (RuntimeError, ValueError, KeyError, subprocess.SubprocessError)

    try:
        wall, tracked = track(tree, db, work, timeout)
        print(
            f"govern track (not timed as a result): {wall:.2f} s, added {tracked.get('added')} "
            f"exclusions in {tracked.get('sources')} source(s)"
        )
        result.checks.append(
            (
                f"track added {tracked.get('added')} == {2 * tree.size} (2 per project)",
                tracked.get("added") == 2 * tree.size,
            )
        )
        shutil.copyfile(db, snapshot)
        # Warm the OS cache with one untimed poll, and see that it works at all.
        restore(snapshot, db)
        first = poll_once(server, tree, db, work, timeout, "untimed")
        print(f"govern poll untimed warm-up: {first.run.wall:.2f} s")
    except caught as exc:
        errors["govern"] = str(exc)
        print(f"govern FAILED: {exc}")
    if uv is not None:
        try:
            result.checks.append(check_uv(uv, server, tree, work, timeout))
            primed = uv_once(uv, server, tree, work, timeout, uv_cache)  # fills the cache
            print(f"uv cache primed: {primed.run.wall:.2f} s, {primed.requests.describe()}")
        except caught as exc:
            errors["uv"] = str(exc)
            print(f"uv FAILED: {exc}")

    for index in range(rounds):
        order = ("govern", "uv") if index % 2 == 0 else ("uv", "govern")
        for tool in order:
            if tool in errors or (tool == "uv" and uv is None):
                continue
            try:
                if tool == "govern":
                    restore(snapshot, db)
                    cold.measured.append(poll_once(server, tree, db, work, timeout, "cold"))
                    warm.measured.append(poll_once(server, tree, db, work, timeout, "warm"))
                elif uv is not None:
                    uv_cold.measured.append(uv_once(uv, server, tree, work, timeout, None))
                    uv_warm.measured.append(uv_once(uv, server, tree, work, timeout, uv_cache))
            except caught as exc:
                errors[tool] = str(exc)
                print(f"{tool} FAILED in round {index + 1}: {exc}")
        parts = [f"round {index + 1}:"]
        if cold.measured and len(cold.measured) == len(warm.measured) == index + 1:
            parts.append(f"govern cold {cold.walls[-1]:.3f} s, warm {warm.walls[-1]:.3f} s;")
        if uv_cold.measured and len(uv_cold.measured) == len(uv_warm.measured) == index + 1:
            parts.append(f"uv cold {uv_cold.walls[-1]:.3f} s, warm {uv_warm.walls[-1]:.3f} s")
        print(" ".join(parts).rstrip(";"))

    if cold.measured and warm.measured:
        print(f"after the last warm poll: {count_rows(db)}")
        result.checks.append(
            check_poll("govern cold (round 1)", tree.size, cold.measured[0], warm=False)
        )
        result.checks.append(
            check_poll("govern warm (round 1)", tree.size, warm.measured[0], warm=True)
        )
        for label, series, is_warm in (("cold", cold, False), ("warm", warm, True)):
            bad = [
                i + 1
                for i, m in enumerate(series.measured)
                if not check_poll(label, tree.size, m, warm=is_warm)[1]
            ]
            result.checks.append(
                (
                    f"govern {label}: every round's counts as expected "
                    f"(bad rounds: {bad or 'none'})",
                    not bad,
                )
            )
    result.errors = errors
    return result


# --------------------------------------------------------------------------
# Peak memory
# --------------------------------------------------------------------------


@dataclass(slots=True)
class MemoryResult:
    size: int
    cold: Measured | None = None
    warm: Measured | None = None
    checks: list[tuple[str, bool]] = field(default_factory=list)
    error: str | None = None


def memory_section(server: Nginx, tree: IndexTree, work: Path, timeout: float) -> MemoryResult:
    result = MemoryResult(tree.size)
    db = work / "db" / f"govern-{tree.size}.db"
    db.parent.mkdir(exist_ok=True)
    print(f"\n--- peak memory: {tree.size:,} projects ({server.url(tree.prefix + '/simple')})")
    try:
        wall, tracked = track(tree, db, work, timeout)
        print(f"govern track (not timed as a result): {wall:.2f} s, added {tracked.get('added')}")
        result.cold = poll_once(server, tree, db, work, timeout, "cold")
        print(
            f"govern poll cold: {result.cold.run.wall:.2f} s, peak {result.cold.run.peak_mb:.1f} MB"
        )
        print(f"  after it: {count_rows(db)}")
        result.checks.append(check_poll("memory run cold", tree.size, result.cold, warm=False))
        result.warm = poll_once(server, tree, db, work, timeout, "warm")
        print(
            f"govern poll warm: {result.warm.run.wall:.2f} s, peak {result.warm.run.peak_mb:.1f} MB"
        )
        result.checks.append(check_poll("memory run warm", tree.size, result.warm, warm=True))
    except (RuntimeError, ValueError, KeyError, subprocess.SubprocessError) as exc:
        result.error = str(exc)
        print(f"FAILED: {exc}")
    return result


# --------------------------------------------------------------------------
# Start-up floor
# --------------------------------------------------------------------------

# What a poll imports before its first request (the CLI, then its lazy imports).
POLL_IMPORTS = (
    "govern.cli",
    "govern.cli.poll",
    "asyncio",
    "govern.config",
    "govern.index.settings",
    "govern.index.pipconfig",
    "govern.application",
    "govern.store.polling",
    "govern.service.poll",
    "govern.index.client",
    "govern.index.candidates",
    "httpx",
)
_IMPORTTIME_RE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S.*)$")


@dataclass(frozen=True, slots=True)
class Floor:
    label: str
    walls: list[float]
    peak_mb: float


def floor_section(
    server: Nginx, tree: IndexTree | None, work: Path, rounds: int, timeout: float
) -> list[Floor]:
    """The fixed cost of a fresh process, and where a warm poll's imports go."""
    print("\nstart-up floor (informational):")
    cases = (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("python -m govern --version", [sys.executable, "-m", "govern", "--version"]),
        (
            "python -c 'import <what poll imports>'",
            [sys.executable, "-c", "import " + ", ".join(POLL_IMPORTS)],
        ),
    )
    floors: list[Floor] = []
    for label, argv in cases:
        run_measured(argv, work, base_env(work), timeout)  # warm the OS cache
        runs = [run_measured(argv, work, base_env(work), timeout) for _ in range(rounds)]
        if any(run.exit_code != 0 for run in runs):
            print(f"  {label}: failed: {_gist(runs[-1].stderr)}")
            continue
        floor = Floor(label, [run.wall for run in runs], max(run.peak_mb for run in runs))
        floors.append(floor)
        print(
            f"  {statistics.median(floor.walls):7.3f} s  peak {floor.peak_mb:6.1f} MB  {label}"
            f"  (rounds: {', '.join(f'{w:.3f}' for w in floor.walls)})"
        )
    print(f"  ({', '.join(POLL_IMPORTS)})")
    db = work / "db" / f"govern-{tree.size}.db" if tree is not None else None
    if tree is None or db is None or not db.exists():
        return floors
    argv = [sys.executable, "-X", "importtime", *poll_argv(server, tree, db)[1:]]
    traced = run_measured(argv, tree.repo, base_env(work), timeout)
    rows: list[tuple[int, int, int, str]] = []
    for line in traced.stderr.splitlines():
        match = _IMPORTTIME_RE.match(line)
        if match is not None:
            self_us, cumulative_us, indent, name = match.groups()
            rows.append((int(cumulative_us), int(self_us), len(indent) // 2, name.strip()))
    total_us = sum(cumulative for cumulative, _, depth, _ in rows if depth == 0)
    names = Counter(name for _, _, _, name in rows)
    print(
        f"\npython -X importtime, a warm poll of {tree.size:,} projects ({traced.wall:.2f} s "
        f"wall): {len(names)} modules in {len(rows)} import lines, {total_us / 1000:.0f} ms "
        "of imports"
    )
    repeated = [(count, name) for name, count in names.items() if count > 1]
    for count, name in sorted(repeated, reverse=True)[:3]:
        spent = sum(c for c, _, _, n in rows if n == name) / 1000
        print(f"  imported {count:,} times: {name} ({spent:.0f} ms; a failing import retried)")
    print("top 12 by cumulative time:")
    print(f"  {'cumulative':>12} {'self':>10}  module")
    for cumulative, self_us, depth, name in sorted(rows, reverse=True)[:12]:
        print(f"  {cumulative / 1000:9.1f} ms {self_us / 1000:7.1f} ms  {'  ' * depth}{name}")
    return floors


# --------------------------------------------------------------------------
# Profile
# --------------------------------------------------------------------------


def print_profile(profile: cProfile.Profile, label: str, wall: float) -> None:
    stats = pstats.Stats(profile).get_stats_profile()
    functions = list(stats.func_profiles.items())
    # Shares are of the wall under the profiler: with asyncio, a coroutine's cumulative
    # time covers only its own steps, so no single function holds the whole run.
    total = wall or 1.0
    print(f"\n{label}: {wall:.2f} s in-process under cProfile (shares are of this)")
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


def _in_process(argv: Sequence[str]) -> dict[str, Any]:
    """``govern poll`` through ``govern.cli.main`` in this process; its JSON document."""
    from govern.cli import main as govern_main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            govern_main(list(argv))
        except SystemExit as exc:
            if exc.code not in (0, None):
                print(f"govern poll exited {exc.code} in-process", file=sys.stderr)
    text = out.getvalue()
    document: dict[str, Any] = json.loads(text) if text.strip() else {}
    return document


def _phases(argv: Sequence[str]) -> tuple[float, float, float, dict[str, Any]]:
    """One in-process poll with its phases timed: (whole, service poll, fetch_many, counts).

    The service's ``poll`` and the client's ``fetch_many`` are wrapped for the run (and put
    back): the fetch is every request and parse; the rest of the service's poll is the
    store (reading what is watched, then the write transaction); the rest of the whole is
    the CLI (configuration, opening the store, the imports of the first call).
    """
    from govern.index.client import IndexClient
    from govern.service import poll as service

    timings = {"fetch": 0.0, "service": 0.0}
    fetch_many = IndexClient.fetch_many
    service_poll = service.poll

    async def timed_fetch(self: IndexClient, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await fetch_many(self, *args, **kwargs)
        finally:
            timings["fetch"] += time.perf_counter() - start

    async def timed_service(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await service_poll(*args, **kwargs)
        finally:
            timings["service"] += time.perf_counter() - start

    IndexClient.fetch_many = timed_fetch  # type: ignore[method-assign]  # timing, put back below
    service.poll = timed_service
    try:
        start = time.perf_counter()
        counts = _in_process(argv)
        whole = time.perf_counter() - start
    finally:
        IndexClient.fetch_many = fetch_many  # type: ignore[method-assign]  # put back
        service.poll = service_poll
    return whole, timings["service"], timings["fetch"], counts


def profile_section(server: Nginx, tree: IndexTree, work: Path) -> None:
    """Cold and warm ``govern poll`` in-process: phases timed, then under cProfile."""
    db = work / "db" / f"govern-{tree.size}.db"
    snapshot = work / "db" / f"tracked-{tree.size}.db"
    if not snapshot.exists():
        print(f"no tracked database for {tree.size} projects: profile skipped")
        return
    argv = poll_argv(server, tree, db)[3:]  # after "python -m govern"
    with _as_a_child(tree, work):
        print(f"\nphases, in-process without the profiler ({tree.size:,} projects):")
        for label in ("cold", "warm"):
            if label == "cold":
                restore(snapshot, db)
            whole, in_service, fetching, counts = _phases(argv)
            print(
                f"  {label}: {whole:.2f} s = fetch {fetching:.2f} s ({fetching / whole:.0%}, "
                f"{fetching / tree.size * 1000:.2f} ms/project) + store and judging "
                f"{in_service - fetching:.2f} s ({(in_service - fetching) / whole:.0%}) + CLI "
                f"{whole - in_service:.2f} s; fetched {counts.get('fetched')}, "
                f"not_modified {counts.get('not_modified')}"
            )
        for label in ("cold poll", "warm poll"):
            if label == "cold poll":
                restore(snapshot, db)
            profile = cProfile.Profile()
            start = time.perf_counter()
            counts = profile.runcall(_in_process, argv)
            wall = time.perf_counter() - start
            print(
                f"\n--- {label}, {tree.size:,} projects: "
                + ", ".join(f"{key} {counts.get(key)}" for key in POLL_KEYS)
            )
            print_profile(profile, label, wall)


@contextlib.contextmanager
def _as_a_child(tree: IndexTree, work: Path) -> Iterator[None]:
    """This process's environment and working directory as a poll child's, then put back."""
    saved_env = dict(os.environ)
    saved_cwd = Path.cwd()
    os.environ.clear()
    os.environ.update(base_env(work))
    os.chdir(tree.repo)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def in_process_section(server: Nginx, trees: Sequence[IndexTree], work: Path, rounds: int) -> None:
    """Cold and warm polls inside this process, its modules loaded (as in a daemon).

    Information beside the targets: what a poll costs without the interpreter's start-up
    and imports, which a fresh process pays on every run. One untimed poll first loads
    what the first call imports; then ``rounds`` rounds of a cold poll (the tracked
    database restored) and a warm one.
    """
    print("\nin-process polls, govern's modules already loaded (as in a daemon; information):")
    for tree in trees:
        db = work / "db" / f"govern-{tree.size}.db"
        snapshot = work / "db" / f"tracked-{tree.size}.db"
        if not snapshot.exists():
            continue
        argv = poll_argv(server, tree, db)[3:]
        with _as_a_child(tree, work):
            restore(snapshot, db)
            _in_process(argv)
            colds, warms = [], []
            for _ in range(rounds):
                restore(snapshot, db)
                colds.append(_phases(argv)[0])
                warms.append(_phases(argv)[0])
        cold, warm = statistics.median(colds), statistics.median(warms)
        print(
            f"  {tree.size:,} projects: cold {cold:.3f} s, warm {warm:.3f} s, "
            f"warm / cold = {warm / cold:.2f} (rounds: "
            + ", ".join(f"{c:.3f}/{w:.3f}" for c, w in zip(colds, warms, strict=True))
            + ")"
        )


def _daemon_polls(
    argv: list[str], env: dict[str, str], cwd: Path, polls: int, timeout: float
) -> list[float]:
    """``govern daemon`` in a child: the ``duration_seconds`` of its first ``polls`` polls."""
    import queue

    child = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert child.stdout is not None
        for line in child.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    durations: list[float] = []
    deadline = time.monotonic() + timeout
    try:
        while len(durations) < polls and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            event = json.loads(line)
            if event.get("event") == "job" and event.get("job") == "poll":
                if not event["ok"]:
                    raise RuntimeError(f"a daemon poll failed: {event['summary']}")
                durations.append(float(event["duration_seconds"]))
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    if len(durations) < polls:
        err = child.stderr.read() if child.stderr is not None else ""
        raise RuntimeError(f"the daemon polled {len(durations)} times of {polls}: {err[-500:]}")
    return durations


def daemon_section(
    server: Nginx, trees: Sequence[IndexTree], work: Path, rounds: int, timeout: float
) -> dict[int, tuple[float, float]]:
    """Polls that repeat, where they repeat: ``govern daemon`` children, each on the tracked
    database before any poll. Each child's first poll is cold (an empty ``index_page``,
    and the process's first poll: it pays its own imports of the index client); the
    next three are warm (all 304). ``rounds`` children per size; the medians are judged
    against the warm target (the poll's own ``duration_seconds``, as the daemon reports
    each run; the interpreter's start-up is paid once per daemon, not per poll).
    """
    print(
        "\ngovern daemon (one child per round, --poll-every 1s; its first poll cold, the next"
        " three warm):"
    )
    medians: dict[int, tuple[float, float]] = {}
    for tree in trees:
        db = work / "db" / f"govern-{tree.size}.db"
        snapshot = work / "db" / f"tracked-{tree.size}.db"
        if not snapshot.exists():
            continue
        argv = [
            *poll_argv(server, tree, db)[:3],
            "daemon",
            *poll_argv(server, tree, db)[4:],
            "--poll-every",
            "1s" if tree.size <= 100 else "2s",
            "--sync-every",
            "off",
            "--verify-every",
            "off",
        ]
        colds: list[float] = []
        warms: list[float] = []
        try:
            for _ in range(rounds):
                restore(snapshot, db)
                first, *rest = _daemon_polls(argv, base_env(work), tree.repo, 4, timeout)
                colds.append(first)
                warms.extend(rest)
        except RuntimeError as exc:
            print(f"  {tree.size:,} projects: FAIL ({exc})")
            continue
        cold, warm = statistics.median(colds), statistics.median(warms)
        medians[tree.size] = (cold, warm)
        ratio = warm / cold
        print(
            f"  {tree.size:,} projects: daemon warm / cold = {warm:.3f} / {cold:.3f} = "
            f"{ratio:.2f}  target <= {WARM_RATIO_TARGET:.1f}  {verdict(ratio <= WARM_RATIO_TARGET)}"
            f"  (cold: {', '.join(f'{c:.3f}' for c in colds)}; warm: "
            f"{', '.join(f'{w:.3f}' for w in warms)})"
        )
    return medians


HTTPX_FLOOR_SCRIPT = """\
import asyncio, json, sys, time
import httpx

base, names, accept, rounds = sys.argv[1], sys.argv[2].split(","), sys.argv[3], int(sys.argv[4])


async def sweep(slots, validators):
    # Every page once, 16 in flight, on fresh clients (as each poll of the daemon opens its
    # own): slots=16 is govern's set-up (16 clients of one connection), 1 one client of 16.
    limits = httpx.Limits(max_connections=16 // slots, max_keepalive_connections=16 // slots)
    clients = [httpx.AsyncClient(limits=limits, follow_redirects=False) for _ in range(slots)]
    free = [clients[i % slots] for i in range(16)]
    in_flight = asyncio.Semaphore(16)
    answers = {}

    async def one(name):
        async with in_flight:
            client = free.pop()
            try:
                headers = {"Accept": accept}
                if name in validators:
                    headers["If-None-Match"] = validators[name]
                response = await client.get(f"{base}/{name}/", headers=headers)
                answers[name] = (response.status_code, response.headers.get("ETag"))
            finally:
                free.append(client)

    start = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for name in names:
            group.create_task(one(name))
    wall = time.perf_counter() - start
    for client in clients:
        await client.aclose()
    return wall, answers


async def main():
    result = {}
    for slots in (16, 1):
        colds, warms = [], []
        for _ in range(rounds):
            wall, answers = await sweep(slots, {})
            assert all(status == 200 for status, _ in answers.values()), "a page was not 200"
            colds.append(wall)
            etags = {name: etag for name, (_, etag) in answers.items()}
            wall, answers = await sweep(slots, etags)
            assert all(status == 304 for status, _ in answers.values()), "a page was not 304"
            warms.append(wall)
        result[slots] = {"cold": colds, "warm": warms}
    print(json.dumps(result))


asyncio.run(main())
"""


def httpx_floor_section(
    server: Nginx,
    trees: Sequence[IndexTree],
    work: Path,
    rounds: int,
    timeout: float,
    daemon: dict[int, tuple[float, float]],
    results: Sequence[SizeResult],
) -> None:
    """The HTTP alone, on the stack the poll runs on: httpx's AsyncClient fetching every page
    (cold: 200 with the body read, nothing parsed or stored; warm: 304 to If-None-Match),
    in a child with httpx already imported, timed inside it. No poll can be faster than
    this with these clients; it is set beside the daemon's polls and uv's cold run."""
    print(
        "\nhttpx alone: every page fetched, nothing parsed or stored, 16 in flight, timed in"
        " a child (the floor of the poll's HTTP stack; information):"
    )
    for tree in trees:
        names = ",".join(project.name for project in tree.projects)
        argv = [
            sys.executable,
            "-c",
            HTTPX_FLOOR_SCRIPT,
            server.url(f"{tree.prefix}/simple"),
            names,
            ACCEPT_JSON,
            str(rounds),
        ]
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, cwd=work
        )
        if done.returncode != 0:
            print(f"  {tree.size:,} projects: FAIL ({_gist(done.stderr)})")
            continue
        floors = json.loads(done.stdout)
        for slots, label in (
            ("16", "16 clients of one connection (govern's)"),
            ("1", "one client of 16 connections"),
        ):
            cold = statistics.median(floors[slots]["cold"])
            warm = statistics.median(floors[slots]["warm"])
            print(f"  {tree.size:,} projects, {label}: cold {cold:.3f} s, warm {warm:.3f} s")
        cold = statistics.median(floors["16"]["cold"])
        warm = statistics.median(floors["16"]["warm"])
        if tree.size in daemon:
            daemon_cold, daemon_warm = daemon[tree.size]
            print(
                f"    daemon warm {daemon_warm:.3f} s = httpx alone {warm:.3f} s + "
                f"{daemon_warm - warm:.3f} s of govern's own (target <= 0.5 s)"
            )
            print(
                f"    daemon cold {daemon_cold:.3f} s = httpx alone {cold:.3f} s + "
                f"{daemon_cold - cold:.3f} s of govern's own"
            )
        uv_cold = next((r.get("uv cold") for r in results if r.size == tree.size), None)
        if uv_cold is not None:
            print(
                f"    httpx alone cold / uv cold = {cold:.3f} / {uv_cold.median:.3f} = "
                f"{cold / uv_cold.median:.2f} (the poll's target is <= {UV_RATIO_TARGET:.1f})"
            )


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def print_table(results: Sequence[SizeResult], memory: MemoryResult | None) -> None:
    print(
        f"\n{'size':>7}  {'tool':<7} {'run':<17} {'median s':>9} {'min s':>7} {'max s':>7} "
        f"{'rounds':>6} {'peak MB':>8}  {'requests (server log, round 1)':<48} notes"
    )
    for result in results:
        for series in result.series.values():
            if not series.measured:
                continue
            walls = series.walls
            first = series.measured[0]
            peak = max(m.run.peak_mb for m in series.measured)
            print(
                f"{series.size:>7,}  {series.tool:<7} {series.run:<17} {series.median:>9.3f} "
                f"{min(walls):>7.3f} {max(walls):>7.3f} {len(walls):>6} {peak:>8.1f}  "
                f"{first.requests.describe():<48} {series.note}"
            )
    if memory is not None:
        for label, measured in (("cold (RSS)", memory.cold), ("warm (info)", memory.warm)):
            if measured is None:
                continue
            print(
                f"{memory.size:>7,}  {'govern':<7} {label:<17} {measured.run.wall:>9.3f} "
                f"{'':>7} {'':>7} {1:>6} {measured.run.peak_mb:>8.1f}  "
                f"{measured.requests.describe():<48} one run"
            )
    print(
        "(wall: a fresh process, start-up included; peak MB: the child's ru_maxrss from "
        "os.wait4, in MiB, the highest of the rounds; requests: status:count and what was "
        "fetched, from nginx's access log)"
    )
    print(
        f"(reference machine, 50 projects: uv {REFERENCE_UV_50:.2f} s; Renovate about "
        f"{REFERENCE_RENOVATE_50:.1f} s, not run here: see the module docstring)"
    )


def _gist(error: str) -> str:
    """The first two non-empty lines of an error, on one line."""
    return " / ".join([line.strip() for line in error.splitlines() if line.strip()][:2])


def print_targets(results: Sequence[SizeResult], memory: MemoryResult | None) -> None:
    print("\ntargets:")
    by_size = {r.size: r for r in results}
    for size in UV_TARGET_SIZES:
        result = by_size.get(size)
        cold = result.get("govern cold") if result else None
        uv_cold = result.get("uv cold") if result else None
        if result is None:
            print(f"  {size:,} projects: govern cold <= {UV_RATIO_TARGET:.0f}x uv: not measured")
        elif cold is None:
            print(
                f"  {size:,} projects: govern cold <= {UV_RATIO_TARGET:.0f}x uv: FAIL "
                "(govern poll did not complete)"
            )
        elif uv_cold is None:
            print(
                f"  {size:,} projects: govern cold <= {UV_RATIO_TARGET:.0f}x uv: not judged "
                f"(uv did not run; govern cold {cold.median:.3f} s)"
            )
        else:
            ratio = cold.median / uv_cold.median
            print(
                f"  {size:,} projects: govern cold / uv cold = {cold.median:.3f} / "
                f"{uv_cold.median:.3f} = {ratio:.2f}  target <= {UV_RATIO_TARGET:.1f}  "
                f"{verdict(ratio <= UV_RATIO_TARGET)}"
            )
    for result in results:
        cold = result.get("govern cold")
        warm = result.get("govern warm")
        if cold is None or warm is None:
            print(f"  {result.size:,} projects: warm <= {WARM_RATIO_TARGET}x cold: FAIL (not run)")
            continue
        ratio = warm.median / cold.median
        print(
            f"  {result.size:,} projects: govern warm / cold = {warm.median:.3f} / "
            f"{cold.median:.3f} = {ratio:.2f}  target <= {WARM_RATIO_TARGET:.1f}  "
            f"{verdict(ratio <= WARM_RATIO_TARGET)}"
        )
    for result in results:
        cold, uv_cold = result.get("govern cold"), result.get("uv cold")
        if result.size not in UV_TARGET_SIZES and cold and uv_cold:
            print(
                f"  {result.size:,} projects (informational): govern cold / uv cold = "
                f"{cold.median / uv_cold.median:.2f}"
            )
    if memory is None:
        print(f"  {MEMORY_TARGET_SIZE:,} projects peak memory: not measured (--no-memory)")
    elif memory.cold is None:
        print(f"  {memory.size:,} projects peak memory: FAIL (the run did not complete)")
    else:
        peak = memory.cold.run.peak_mb
        note = "" if memory.size == MEMORY_TARGET_SIZE else "  (not the target's size)"
        print(
            f"  {memory.size:,} projects: govern poll cold peak {peak:.1f} MB  target <= "
            f"{MEMORY_TARGET_MB:.0f} MB  {verdict(peak <= MEMORY_TARGET_MB)}{note}"
        )
    print("\nchecks:")
    for result in results:
        for tool, why in result.errors.items():
            print(f"  {result.size:,}: FAIL  {tool} did not complete: {_gist(why)}")
        for what, ok in result.checks:
            print(f"  {result.size:,}: {verdict(ok)}  {what}")
    if memory is not None:
        if memory.error:
            print(
                f"  {memory.size:,}: FAIL  the memory run did not complete: {_gist(memory.error)}"
            )
        for what, ok in memory.checks:
            print(f"  {memory.size:,}: {verdict(ok)}  {what}")


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not sizes or any(size < 1 or size > 99_999 for size in sizes):
        raise argparse.ArgumentTypeError("sizes must be integers from 1 to 99,999")
    return sorted(set(sizes))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=list(UV_TARGET_SIZES),
        help="comma-separated project counts (default 50,1000)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per size (default 3)")
    parser.add_argument(
        "--memory-size",
        type=int,
        default=MEMORY_TARGET_SIZE,
        help=f"projects of the peak-memory run (default {MEMORY_TARGET_SIZE:,})",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory run")
    parser.add_argument("--uv", type=Path, default=None, help="a uv binary (else pip install uv)")
    parser.add_argument("--no-uv", action="store_true", help="govern only")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile a cold and a warm poll of the largest size"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds before one child is killed"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not 1 <= args.memory_size <= 99_999:
        parser.error("--memory-size must be from 1 to 99,999")

    print(f"govern poll benchmark: python {sys.version.split()[0]} ({sys.executable})")
    print(
        f"sizes {', '.join(f'{s:,}' for s in args.sizes)}, rounds {args.rounds}, memory "
        f"{'skipped' if args.no_memory else f'{args.memory_size:,}'}"
    )
    print(f"cpus: {os.cpu_count()}, load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    nginx, how = find_nginx()
    if nginx is None:
        print(f"SKIP: {how}")
        print("install it with: apt-get update && apt-get install -y nginx-light (as root)")
        return 0
    version = subprocess.run([nginx, "-v"], capture_output=True, text=True, check=False)
    print(f"nginx: {nginx} ({version.stderr.strip()}; {how})")
    import govern

    # As bench/audit.py: an installed wheel has its bytecode compiled; so has the checkout.
    compileall.compile_dir(Path(govern.__file__).parent, quiet=1)
    with work_directory(args.keep, "poll") as work:
        print(
            f"work dir: {work}{' (kept)' if args.keep else ' (removed at the end; --keep keeps)'}"
        )
        return _run(args, nginx, work)


def _run(args: argparse.Namespace, nginx: str, work: Path) -> int:
    uv: Path | None = None
    if args.no_uv:
        print("uv: skipped (--no-uv)")
    elif args.uv is not None:
        uv = args.uv.resolve()
        print(f"uv: {uv} (--uv)")
    else:
        uv, how = install_uv(work)
        if uv is None:
            print(f"uv: SKIP ({how}); the targets against uv cannot be judged")
    if uv is not None:
        uv_version = subprocess.run(
            [str(uv), "--version"], capture_output=True, text=True, check=False
        )
        print(f"uv version: {uv_version.stdout.strip()}")

    www = work / "www"
    trees: list[IndexTree] = []
    for size in args.sizes:
        tree = generate(work, www, size, files=True)
        trees.append(tree)
        print(
            f"tree {tree.prefix}: {size:,} projects, {tree.page_files:,} pages, "
            f"{tree.other_files:,} wheels and .metadata files, "
            f"{tree.bytes_written / 2**20:.1f} MiB in {tree.seconds:.1f} s"
        )
    memory_tree: IndexTree | None = None
    if not args.no_memory:
        memory_tree = next((t for t in trees if t.size == args.memory_size), None)
        if memory_tree is None:
            memory_tree = generate(work, www, args.memory_size, files=False)
            print(
                f"tree {memory_tree.prefix}: {args.memory_size:,} projects, "
                f"{memory_tree.page_files:,} pages (no files: govern never fetches them), "
                f"{memory_tree.bytes_written / 2**20:.1f} MiB in {memory_tree.seconds:.1f} s"
            )

    server = Nginx(nginx, work / "nginx", www)
    try:
        server.start()
        print(f"nginx: pid {server.process.pid if server.process else '?'}, {server.url('/')}")
        checks = check_server(server, trees[0])
        print("server checks:")
        for what, ok in checks:
            print(f"  {verdict(ok)}  {what}")
        if not all(ok for _, ok in checks):
            print("FAIL: the index does not behave as it must; nothing timed")
            return 0
        # Warm the OS cache: the interpreter and govern's modules.
        subprocess.run(
            [sys.executable, "-c", "import govern.cli.poll, govern.service.poll, govern.index"],
            check=False,
            capture_output=True,
        )
        results = [
            size_section(server, tree, uv, work, args.rounds, args.timeout) for tree in trees
        ]
        memory = (
            memory_section(server, memory_tree, work, args.timeout)
            if memory_tree is not None
            else None
        )
        print_table(results, memory)
        print_targets(results, memory)
        in_process_section(server, trees, work, args.rounds)
        daemon = daemon_section(server, trees, work, args.rounds, args.timeout)
        httpx_floor_section(server, trees, work, args.rounds, args.timeout, daemon, results)
        floors = floor_section(server, trees[-1], work, args.rounds, args.timeout)
        imports = next((f for f in floors if f.label.startswith("python -c 'import")), None)
        if imports is not None:
            floor = statistics.median(imports.walls)
            print("\ngovern cold against the import floor (medians):")
            for result in results:
                cold, uv_cold = result.get("govern cold"), result.get("uv cold")
                if cold is None:
                    continue
                line = (
                    f"  {result.size:,} projects: govern cold {cold.median:.3f} s = import floor "
                    f"{floor:.3f} s + {cold.median - floor:.3f} s of work"
                )
                if uv_cold is not None:
                    line += (
                        f"; the floor alone is {floor / uv_cold.median:.2f}x uv cold "
                        f"({uv_cold.median:.3f} s)"
                    )
                print(line)
        if args.profile:
            print("\n" + "=" * 78)
            print(f"cProfile (in-process, {trees[-1].size:,} projects)")
            print("=" * 78)
            profile_section(server, trees[-1], work)
    finally:
        server.stop()
        print(f"\nnginx stopped; access log: {server.log_offset():,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
