"""Micro-benchmark of govern's index layer: parsing, grouping, judging and the client.

This is a benchmark, not a test: it prints a table of figures and exits 0. Everything runs
in this process on generated data, except the optional HTTP part, whose server runs in a
child process (so that it does not share this interpreter's lock with the client).

The data: ``--projects`` (default 1,000) projects, the pages ``bench/poll.py`` generates for
its nginx (written to a scratch directory under ``bench/.work/`` and read back): ``pkg-00001``
... with 8 versions (1.0.0 ... 1.3.0, 2.0.0 ... 2.3.0), one ``py3-none-any`` wheel per version
with a sha256 hash, ``requires-python``, ``size``, ``upload-time`` and ``core-metadata``
(JSON), some yanked (1.1.0 of every third project, 2.3.0 of every fifth). Each page exists as
PEP 691 JSON and as PEP 503 HTML, with the relative file URLs ``bench/poll.py`` serves
(``../../files/<name>/<file>``) and, rewritten, with absolute ones (as PyPI serves them).

What is timed (the best of ``--repeat`` runs, default 5; per project in microseconds too):

- ``parse_json`` / ``parse_html`` of every page, relative and absolute URLs;
- ``releases()`` over every parsed page;
- ``candidates()`` for the two exclusions of each project (``!=<bad>`` and ``<2.0``) on the
  default profile (this machine, as :func:`govern.index.settings.profiles_from` builds it
  without configured profiles), as ``govern.service.poll`` calls it (``now`` and
  ``first_seen`` given); once with no cooldown, once with a 7-day one;
- ``file_from`` over the stored rows of every file (what a warm poll that judges again
  rebuilds from the store, through ``govern.service.poll``'s own row functions);
- unless ``--no-http``: ``IndexClient.fetch_many`` of every project against a
  ``ThreadingHTTPServer`` (HTTP/1.1, keep-alive) on 127.0.0.1 in a child process, through
  :func:`govern.index.client.http_client`: cold (every page a 200, parsed) and warm (every
  page a 304 to its ``If-None-Match``). Wall time and this process's CPU time are shown;
  the CPU time is the client's own cost (the server runs elsewhere).

Usage::

    python bench/index_micro.py                       # 1,000 projects, best of 5
    python bench/index_micro.py --projects 200 --repeat 3 --no-http
    python bench/index_micro.py --save before.json    # then, after a change:
    python bench/index_micro.py --before before.json  # the figures side by side
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import multiprocessing
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from govern.exclusions.clause import Clause
from govern.exclusions.model import Kind
from govern.index.candidates import candidates
from govern.index.model import ProjectPage, Release, Validators, releases
from govern.index.profiles import Profile
from govern.index.simple import parse_html, parse_json

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/: benchkit, poll

import poll  # bench/poll.py: the pages its nginx serves
from benchkit import work_directory

NOW = datetime(2026, 1, 1, tzinfo=UTC)
FIRST_SEEN = datetime(2023, 1, 2, tzinfo=UTC)
RELATIVE_BASE = "http://127.0.0.1:8080/simple/{name}/"
RELATIVE_FILES = "../../files/"
ABSOLUTE_FILES = "https://files.example.test/files/"

Row = tuple[str, float, float | None]  # what, best wall seconds, best CPU seconds (HTTP only)


@dataclass(frozen=True, slots=True)
class Pages:
    """The generated projects: names, the excluded version of each, and their pages."""

    names: list[str]
    bad: list[str]
    json_relative: list[bytes]
    json_absolute: list[bytes]
    html_relative: list[bytes]
    html_absolute: list[bytes]


def _absolute(document: bytes) -> bytes:
    """A JSON page with its file URLs made absolute."""
    page = json.loads(document)
    for entry in page["files"]:
        entry["url"] = entry["url"].replace(RELATIVE_FILES, ABSOLUTE_FILES, 1)
    return json.dumps(page).encode()


def generate(count: int) -> Pages:
    """``count`` projects as ``bench/poll.py`` writes them, read back, and absolute twins."""
    with work_directory(keep=False, prefix="index-micro") as work:
        tree = poll.generate(work, work / "www", count, files=False)
        simple = tree.www / tree.prefix.lstrip("/") / "simple"
        names = [item.name for item in tree.projects]
        json_pages = [(simple / name / "index.json").read_bytes() for name in names]
        html_pages = [(simple / name / "index.html").read_bytes() for name in names]
    href = b'href="' + RELATIVE_FILES.encode()
    return Pages(
        names=names,
        bad=[item.bad for item in tree.projects],
        json_relative=json_pages,
        json_absolute=[_absolute(page) for page in json_pages],
        html_relative=html_pages,
        html_absolute=[
            page.replace(href, b'href="' + ABSOLUTE_FILES.encode()) for page in html_pages
        ],
    )


def best(run: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` runs, in seconds (each after a full collection)."""
    times: list[float] = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def parse_all(pages: Pages, bodies: list[bytes], kind: str) -> list[ProjectPage]:
    parse = parse_json if kind == "json" else parse_html
    return [
        parse(body, name=name, base_url=RELATIVE_BASE.format(name=name))
        for name, body in zip(pages.names, bodies, strict=True)
    ]


def judge_all(pages: Pages, grouped: list[list[Release]], profile: Profile) -> tuple[int, int]:
    """Every project's two exclusions judged; (decisions, eligible ones)."""
    decisions = eligible = 0
    for bad, found in zip(pages.bad, grouped, strict=True):
        first_seen = {release.version: FIRST_SEEN for release in found}
        for clause in (Clause(Kind.NOT_EQUAL, "!=", bad), Clause(Kind.CAP, "<", "2.0")):
            made = candidates(clause, found, profile, now=NOW, first_seen=first_seen)
            decisions += len(made)
            eligible += sum(1 for d in made if d.eligible)
    return decisions, eligible


def stored_rows(parsed: list[ProjectPage]) -> list[list[dict[str, Any]]]:
    """The files of each page as ``govern.service.poll`` stores them (release.files)."""
    from govern.service.poll import _file_json

    return [[_file_json(file) for file in page.files] for page in parsed]


def from_rows(rows: list[list[dict[str, Any]]]) -> int:
    """The files rebuilt from stored rows, as a warm poll does before judging again."""
    from govern.service.poll import file_from_json

    return sum(len([file_from_json(item) for item in items]) for items in rows)


# --------------------------------------------------------------------------- HTTP


def _serve(names: list[str], bodies: list[bytes], port_out: Any) -> None:
    """A keep-alive HTTP/1.1 Simple API: 200 with an ETag, 304 to a matching If-None-Match."""
    by_path = {
        f"/simple/{name}/": (body, f'"{hashlib.sha256(body).hexdigest()[:16]}"')
        for name, body in zip(names, bodies, strict=True)
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms stall

        def do_GET(self) -> None:
            found = by_path.get(self.path)
            if found is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body, etag = found
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", etag)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128  # 16 clients connect at once; the default 5 drops SYNs (1 s)

    server = Server(("127.0.0.1", 0), Handler)
    port_out.send(server.server_address[1])
    server.serve_forever()


async def _fetch(
    port: int, names: Sequence[str], validators: dict[str, Validators]
) -> dict[str, Any]:
    from govern.index.client import IndexClient, http_client
    from govern.index.pipconfig import IndexSettings

    settings = IndexSettings(f"http://127.0.0.1:{port}/simple/")
    async with http_client(trust_env=False) as http:
        client = IndexClient(http, settings, netrc=False)
        return await client.fetch_many(names, validators)


def http_figures(pages: Pages, repeat: int) -> list[Row]:
    """(label, best wall, best CPU) of a cold and a warm fetch_many of every project."""
    from govern.index.model import Fetched, NotModified

    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    server = context.Process(
        target=_serve, args=(pages.names, pages.json_relative, sender), daemon=True
    )
    server.start()
    try:
        port = receiver.recv()
        rows: list[Row] = []
        validators: dict[str, Validators] = {}
        for label in ("fetch_many cold (200 + parse)", "fetch_many warm (304)"):
            walls: list[float] = []
            cpus: list[float] = []
            for _ in range(repeat):
                gc.collect()
                wall, cpu = time.perf_counter(), time.process_time()
                results = asyncio.run(_fetch(port, pages.names, validators))
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
                kind = NotModified if validators else Fetched
                if not all(isinstance(r, kind) for r in results.values()):
                    raise SystemExit(f"{label}: not every project answered {kind.__name__}")
            rows.append((label, min(walls), min(cpus)))
            validators = {
                name: Validators(etag=result.page.etag)
                for name, result in results.items()
                if isinstance(result, Fetched)
            }
        return rows
    finally:
        server.terminate()
        server.join()


# --------------------------------------------------------------------------- main


def _parse_each(pages: Pages, kind: str, absolute: bool) -> Callable[[], object]:
    bodies = getattr(pages, f"{kind}_{'absolute' if absolute else 'relative'}")
    return lambda: parse_all(pages, bodies, kind)


def print_table(rows: list[Row], count: int, before: dict[str, Row] | None) -> None:
    """The figures, and with ``before`` those of an earlier run beside them."""
    head = f"{'what':36} {'wall ms':>9} {'us/project':>10} {'CPU ms':>8}"
    if before is not None:
        head += f" {'before ms':>10} {'change':>7}"
    print(head)
    for label, wall, cpu in rows:
        cpu_text = f"{cpu * 1000:8.1f}" if cpu is not None else f"{'':8}"
        line = f"{label:36} {wall * 1000:9.1f} {wall / count * 1e6:10.1f} {cpu_text}"
        earlier = before.get(label) if before is not None else None
        if earlier is not None:
            line += f" {earlier[1] * 1000:10.1f} {(wall / earlier[1] - 1) * 100:+6.0f}%"
        print(line)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--projects", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-http", action="store_true", help="skip the loopback fetch")
    parser.add_argument("--save", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--before", type=Path, help="show the figures of a --save file beside")
    args = parser.parse_args(argv)
    count, repeat = args.projects, args.repeat

    pages = generate(count)
    rows: list[Row] = []

    def timed(label: str, run: Callable[[], object]) -> None:
        rows.append((label, best(run, repeat), None))

    for kind in ("json", "html"):
        for absolute in (False, True):
            urls = "absolute" if absolute else "relative"
            timed(f"parse_{kind} ({urls} URLs)", _parse_each(pages, kind, absolute))
    parsed = parse_all(pages, pages.json_relative, "json")
    timed("releases()", lambda: [releases(page.files) for page in parsed])
    grouped = [releases(page.files) for page in parsed]
    default = Profile(name="default")
    cooldown = Profile(name="cooldown", minimum_release_age=timedelta(days=7))
    decisions, eligible = judge_all(pages, grouped, default)
    timed("candidates(), 2 exclusions/project", lambda: judge_all(pages, grouped, default))
    timed("candidates(), 7-day cooldown", lambda: judge_all(pages, grouped, cooldown))
    stored = stored_rows(parsed)
    timed("file_from (stored rows)", lambda: from_rows(stored))
    if not args.no_http:
        rows.extend(http_figures(pages, repeat))

    print(
        f"index micro-benchmark: {count:,} projects, {sum(len(p.files) for p in parsed):,} files, "
        f"best of {repeat}, Python {sys.version.split()[0]}"
    )
    print(f"judging: {decisions:,} decisions, {eligible:,} eligible (default profile)\n")
    before = None
    if args.before is not None:
        before = {row[0]: (row[0], row[1], row[2]) for row in json.loads(args.before.read_text())}
    print_table(rows, count, before)
    if args.save is not None:
        args.save.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
