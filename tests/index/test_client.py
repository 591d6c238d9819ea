"""The index client against real servers on 127.0.0.1: the wire, the pool, pypiserver, real wheels.

Its status, retry, redirect and index-choice logic is test_client_logic.py's (MockTransport).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from packaging.version import Version
from wheels import build_sdist, build_wheel, sha256

from fakes.index import (
    HTML_TYPE,
    JSON_TYPE,
    LEGACY_HTML_TYPE,
    FaultServer,
    Hang,
    IndexFile,
    Redirect,
    Reply,
    RequireAuth,
    StaticIndex,
    Stream,
    Truncated,
    free_port,
    hostile_html,
    json_page,
    negotiate,
    run_pypiserver,
)
from fakes.sleeps import Sleeps, run
from govern import __version__
from govern.index import client as client_module
from govern.index.client import (
    ACCEPT,
    MAX_FRESH,
    USER_AGENT,
    IndexClient,
    freshness,
    http_client,
)
from govern.index.model import (
    Fetched,
    FetchFailed,
    FetchResult,
    FileKind,
    NotModified,
    Validators,
    releases,
)
from govern.index.pipconfig import IndexSettings

SECRET = "s3cret-t0ken"


def settings_for(url: str, *extra: str, **per_package: str) -> IndexSettings:
    """Settings for one index (plus extra indexes and a per-package mapping)."""
    return IndexSettings(url, tuple(extra), dict(per_package), source="test")


async def fetch(
    settings: IndexSettings | str,
    name: str,
    validators: Validators | None = None,
    *,
    http: httpx.AsyncClient | None = None,
    **options: Any,
) -> FetchResult:
    """One fetch with a fresh httpx client (no proxies from the environment).

    Without ``http``, the client is what ``govern poll`` uses (:func:`http_client`).
    """
    if isinstance(settings, str):
        settings = settings_for(settings)
    if http is not None:
        async with http as session:
            return await IndexClient(session, settings, **options).fetch(name, validators)
    async with http_client(trust_env=False) as session:
        return await IndexClient(session, settings, **options).fetch(name, validators)


def fetched(result: FetchResult) -> Fetched:
    """The result, asserted to be a page."""
    assert isinstance(result, Fetched), result
    return result


def failed(result: FetchResult) -> FetchFailed:
    """The result, asserted to be a failure."""
    assert isinstance(result, FetchFailed), result
    return result


@pytest.fixture
def faults() -> Iterator[FaultServer]:
    """A started FaultServer; teardown checks that no server thread is left behind."""
    before = set(threading.enumerate())
    with FaultServer() as server:
        yield server
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not leaked, leaked


@pytest.fixture
def dists(tmp_path: Path) -> dict[str, Path]:
    """Real distributions of "demo": a wheel and an sdist."""
    return {
        "wheel": build_wheel(tmp_path / "dists", "Demo", "1.0", requires_python=">=3.8"),
        "sdist": build_sdist(tmp_path / "dists", "Demo", "1.1"),
    }


@pytest.fixture
def static(tmp_path: Path, dists: dict[str, Path]) -> Iterator[StaticIndex]:
    """A started static index holding "demo" 1.0 (wheel) and 1.1 (sdist, yanked)."""
    before = set(threading.enumerate())
    index = StaticIndex(tmp_path / "index", serial=7)
    index.publish(
        "demo",
        [
            IndexFile.of(
                dists["wheel"], upload_time="2024-02-01T10:00:00Z", requires_python=">=3.8"
            ),
            IndexFile.of(dists["sdist"], upload_time="2024-03-01T10:00:00Z", yanked="broken"),
        ],
        serial=7,
    )
    with index:
        yield index
    assert not [t for t in threading.enumerate() if t not in before and t.is_alive()]


# -- pages from a static index ------------------------------------------------------------------


def test_fetch_reads_the_json_page(static: StaticIndex, dists: dict[str, Path]) -> None:
    page = fetched(run(fetch(static.url, "DEMO"))).page
    assert (page.name, page.format, page.api_version, page.last_serial) == (
        "demo",
        "json",
        "1.1",
        7,
    )
    assert page.index_url == static.url
    assert page.etag is not None
    assert page.last_modified is not None
    assert page.versions == ("1.0", "1.1")
    wheel, sdist = page.files
    assert wheel.url == f"{static.base}/files/{dists['wheel'].name}"
    assert wheel.hashes == {"sha256": sha256(dists["wheel"])}
    assert (wheel.kind, wheel.requires_python, wheel.size) == (
        FileKind.WHEEL,
        ">=3.8",
        dists["wheel"].stat().st_size,
    )
    assert wheel.upload_time is not None
    assert wheel.upload_time.isoformat() == "2024-02-01T10:00:00+00:00"
    assert (sdist.yanked, sdist.yanked_reason) == (True, "broken")
    assert [r.version for r in releases(page.files)] == [Version("1.0"), Version("1.1")]
    assert static.headers[static.path("demo")][0]["accept"] == ACCEPT


def test_html_when_the_index_does_not_offer_json(tmp_path: Path, dists: dict[str, Path]) -> None:
    files = [IndexFile.of(dists["wheel"], requires_python=">=3.8,<4", yanked="bad build")]
    with StaticIndex(tmp_path / "index", {"demo": files}, offer_json=False) as index:
        page = fetched(run(fetch(index.url, "demo"))).page
        # Same page, HTML this time: the index's X-PyPI-Last-Serial still gives the serial.
        assert (page.format, page.api_version, page.last_serial) == ("html", "1.1", 1)
        (wheel,) = page.files
        assert wheel.hashes == {"sha256": sha256(dists["wheel"])}
        assert (wheel.requires_python, wheel.yanked_reason) == (">=3.8,<4", "bad build")
        assert wheel.url == f"{index.base}/files/{dists['wheel'].name}"


@pytest.mark.parametrize(
    ("accept", "offered", "chosen"),
    [
        (ACCEPT, [JSON_TYPE, HTML_TYPE, LEGACY_HTML_TYPE], JSON_TYPE),
        (ACCEPT, [HTML_TYPE, LEGACY_HTML_TYPE], HTML_TYPE),  # q=0.2 beats q=0.01
        (ACCEPT, [LEGACY_HTML_TYPE], LEGACY_HTML_TYPE),
        (f"{JSON_TYPE};q=0, text/*;q=0.5", [JSON_TYPE, LEGACY_HTML_TYPE], LEGACY_HTML_TYPE),
        ("*/*", [JSON_TYPE, LEGACY_HTML_TYPE], JSON_TYPE),  # a tie: the server's order
        (None, [JSON_TYPE, LEGACY_HTML_TYPE], LEGACY_HTML_TYPE),  # PEP 691: no Accept → HTML
        ("application/json", [JSON_TYPE, LEGACY_HTML_TYPE], None),  # 406
    ],
)
def test_negotiation(accept: str | None, offered: list[str], chosen: str | None) -> None:
    assert negotiate(accept, offered) == chosen


# -- validators -----------------------------------------------------------------------------


def test_etag_gives_not_modified_and_parses_nothing(
    static: StaticIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = fetched(run(fetch(static.url, "demo"))).page
    parsed: list[str] = []
    real = client_module._parse_body

    def counting(body: Any, project: str) -> Any:
        parsed.append(project)
        return real(body, project)

    monkeypatch.setattr(client_module, "_parse_body", counting)
    validators = Validators(page.etag, page.last_modified, page.last_serial)
    result = run(fetch(static.url, "demo", validators))
    assert result == NotModified("demo", requests=1)
    assert parsed == []
    sent = static.headers[static.path("demo")][-1]
    assert sent["if-none-match"] == page.etag
    assert sent["if-modified-since"] == page.last_modified
    # Last-Modified alone works too; a changed page is fetched again.
    assert isinstance(
        run(fetch(static.url, "demo", Validators(None, page.last_modified))), NotModified
    )
    assert isinstance(run(fetch(static.url, "demo", Validators('"other"'))), Fetched)
    assert parsed == ["demo"]


# -- freshness; faults on the wire; netrc ---------------------------------------------------


DATE = "Thu, 03 Dec 2026 04:00:00 GMT"


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Cache-Control": "max-age=600, public"}, 600.0),  # the public index's pages
        ({"Cache-Control": "public, max-age=600", "Age": "250"}, 350.0),  # from a CDN's cache
        ({"Cache-Control": 'MAX-AGE="60"'}, 60.0),  # names are case-insensitive; quoted value
        ({"Cache-Control": "max-age=600", "Age": "900"}, 0.0),  # older than its lifetime
        ({"Cache-Control": "max-age=0, must-revalidate"}, 0.0),
        ({"Cache-Control": "max-age=600, no-cache"}, 0.0),
        ({"Cache-Control": "no-store, max-age=600"}, 0.0),
        ({"Cache-Control": "max-age=-1"}, 0.0),  # not a delta-seconds: stale
        ({"Cache-Control": "max-age=soon"}, 0.0),
        ({"Cache-Control": "max-age=31536000"}, MAX_FRESH),  # a year is taken as an hour
        ({"Cache-Control": "s-maxage=600"}, 0.0),  # for shared caches only
        ({"Expires": "Thu, 03 Dec 2026 04:05:00 GMT", "Date": DATE}, 300.0),
        ({"Expires": "Thu, 03 Dec 2026 04:05:00 GMT", "Date": DATE, "Age": "60"}, 240.0),
        ({"Expires": "0", "Date": DATE}, 0.0),  # invalid: already expired (RFC 9111 5.3)
        ({"Expires": "Thu, 03 Dec 2026 03:00:00 GMT", "Date": DATE}, 0.0),
        ({"Cache-Control": "max-age=60", "Expires": "Thu, 03 Dec 2026 05:00:00 GMT"}, 60.0),
        ({}, 0.0),  # no heuristic freshness: a page without a word is asked again
        ({"Last-Modified": "Thu, 03 Dec 2025 04:00:00 GMT"}, 0.0),
    ],
)
def test_freshness(headers: dict[str, str], seconds: float) -> None:
    received = datetime(2026, 12, 3, 4, 0, tzinfo=UTC)  # as DATE says
    assert freshness(httpx.Headers(headers), now=received) == seconds


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        # A cache that keeps an answer without saying so in Age: its Date tells.
        ({"Cache-Control": "max-age=600", "Date": "Thu, 03 Dec 2026 03:55:00 GMT"}, 300.0),
        ({"Cache-Control": "max-age=600", "Date": DATE, "Age": "120"}, 480.0),  # Age larger
        (
            {"Expires": "Thu, 03 Dec 2026 04:05:00 GMT", "Date": "Thu, 03 Dec 2026 03:59:00 GMT"},
            300.0,
        ),
        ({"Expires": "Thu, 03 Dec 2026 04:05:00 GMT", "Date": "not a date"}, 300.0),  # from now
        ({"Cache-Control": "max-age=\u00b2"}, 0.0),  # a digit to str.isdigit, not to int
        ({"Cache-Control": "max-age=600", "Age": "\u00b2"}, 600.0),  # an unreadable Age: none
        ({"Cache-Control": "max-age=0, max-age=600"}, 0.0),  # the first one counts
        ({"Cache-Control": "max-age=99999999999999999999"}, MAX_FRESH),  # too large: the cap
        ({"Cache-Control": "max-age=600", "Age": "100, 200"}, 500.0),  # a repeated Age
        ({"Cache-Control": "max-age=600", "Date": "Thu, 03 Dec 2026 04:10:00 GMT"}, 600.0),
    ],
)
def test_freshness_counts_the_age_of_an_answer(headers: dict[str, str], seconds: float) -> None:
    # The last case: a server clock ahead of ours is no reason to trust it longer.
    received = datetime(2026, 12, 3, 4, 0, tzinfo=UTC)
    raw = [(name.encode(), value.encode("latin-1")) for name, value in headers.items()]
    assert freshness(httpx.Headers(raw), now=received) == seconds  # bytes, as h11 hands them


def test_freshness_without_a_date_counts_from_now() -> None:
    now = datetime(2026, 12, 3, 4, 0, tzinfo=UTC)
    headers = httpx.Headers({"Expires": "Thu, 03 Dec 2026 04:10:00 GMT"})
    assert freshness(headers, now=now) == 600.0


def test_a_304_and_a_200_carry_their_freshness(faults: FaultServer) -> None:
    path = faults.script(
        "demo",
        Reply(body=json_page("demo"), headers={"Cache-Control": "max-age=120", "ETag": '"a"'}),
    )
    first = fetched(run(fetch(faults.url, "demo")))
    assert 119.0 <= first.fresh_for <= 120.0  # less the time since the server's Date
    faults.script("demo", Reply(304, b"", headers={"Cache-Control": "max-age=30", "Age": "10"}))
    again = run(fetch(faults.url, "demo", validators=Validators(etag='"a"')))
    assert isinstance(again, NotModified)
    assert (again.name, again.requests) == ("demo", 1)
    assert 19.0 <= again.fresh_for <= 20.0
    assert faults.count(path) == 2


def test_a_hang_times_out_and_is_retried(faults: FaultServer) -> None:
    path = faults.script("demo", Hang(30))
    sleeps = Sleeps()
    started = time.monotonic()
    result = failed(run(fetch(faults.url, "demo", sleep=sleeps, timeout=0.3, attempts=2)))
    assert time.monotonic() - started < 3
    assert result.reason == "timed out after 0.3 s after 2 attempts"
    assert (result.retryable, result.requests) == (True, 2)
    assert faults.count(path) == 2


def test_a_truncated_body_is_retried(faults: FaultServer) -> None:
    body = json_page("demo", ["demo-1.0.tar.gz"])
    faults.script("demo", Truncated(body[:20], claimed=len(body)), Reply(body=body))
    assert fetched(run(fetch(faults.url, "demo", sleep=Sleeps()))).requests == 2
    faults.script("demo", Truncated(body[:20], claimed=len(body)))
    result = failed(run(fetch(faults.url, "demo", sleep=Sleeps())))
    assert result.reason.startswith("body cut short (RemoteProtocolError")
    assert result.reason.endswith("after 3 attempts")


def test_a_refused_connection_is_retried_then_recorded() -> None:
    sleeps = Sleeps()
    url = f"http://127.0.0.1:{free_port()}/simple/"
    result = failed(run(fetch(url, "demo", sleep=sleeps)))
    assert result.reason.startswith("connection failed (ConnectError")
    assert (result.retryable, result.requests, len(sleeps.delays)) == (True, 3, 2)


def test_hostile_html_is_parsed(faults: FaultServer) -> None:
    faults.script(
        "demo", Reply(body=hostile_html("demo", "demo-1.0.tar.gz"), content_type="text/html")
    )
    (file,) = fetched(run(fetch(faults.url, "demo"))).page.files
    assert file.url == f"{faults.base}/files/demo-1.0.tar.gz"


def test_a_streamed_huge_body_stops_at_max_bytes(faults: FaultServer) -> None:
    path = faults.script("demo", Stream(50 * 1024 * 1024, declare_length=False))
    tracemalloc.start()
    try:
        result = failed(run(fetch(faults.url, "demo", max_bytes=2 * 1024 * 1024)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.reason == "body over 2 MB"
    assert peak < 12 * 1024 * 1024  # the 50 MB were never held
    faults.stop()  # let the writer notice the closed connection
    assert faults.sent[path] < 50 * 1024 * 1024


def test_netrc_credentials_are_used_when_the_url_has_none(
    faults: FaultServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="govern")
    path = faults.script("demo", RequireAuth("ci", SECRET, Reply(body=json_page("demo"))))
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login ci password {SECRET}\n")
    assert isinstance(run(fetch(faults.url, "demo", netrc=netrc)), Fetched)
    assert failed(run(fetch(faults.url, "demo", netrc=False))).status == 401
    # Credentials in the URL win over netrc.
    wrong = faults.url.replace("http://", "http://ci:wrong@")
    assert failed(run(fetch(wrong, "demo", netrc=netrc))).status == 401
    # Neither: the injected client's own auth applies.
    http = httpx.AsyncClient(trust_env=False, auth=httpx.BasicAuth("ci", SECRET))
    assert isinstance(run(fetch(faults.url, "demo", http=http, netrc=False)), Fetched)
    # A netrc secret is scrubbed like a URL one.
    faults.script("demo", Truncated(f"{{{SECRET}".encode(), claimed=999))
    result = failed(run(fetch(faults.url, "demo", netrc=netrc, sleep=Sleeps())))
    assert SECRET not in repr(result)
    assert all(SECRET not in record.getMessage() for record in caplog.records)
    assert faults.count(path) == 7


def test_an_unreadable_netrc_is_ignored(faults: FaultServer, tmp_path: Path) -> None:
    faults.script("demo", Reply(body=json_page("demo")))
    broken = tmp_path / "netrc"
    broken.write_text("machine\n")
    assert isinstance(run(fetch(faults.url, "demo", netrc=broken)), Fetched)
    assert isinstance(run(fetch(faults.url, "demo", netrc=tmp_path / "absent")), Fetched)


def test_a_large_page_is_parsed(faults: FaultServer) -> None:
    names = [f"demo-1.{i}.tar.gz" for i in range(12_000)]  # over 1 MB: parsed off the loop
    faults.script("demo", Reply(body=json_page("demo", names, serial=3)))
    page = fetched(run(fetch(faults.url, "demo"))).page
    assert len(page.files) == 12_000
    assert page.files[-1].version == Version("1.11999")


def test_client_options_are_checked() -> None:
    async def build(**options: Any) -> None:
        async with httpx.AsyncClient() as http:
            IndexClient(http, settings_for("https://main.test/simple/"), **options)

    for options in ({"concurrency": 0}, {"attempts": 0}, {"timeout": 0}, {"max_bytes": 0}):
        with pytest.raises(ValueError, match="must be positive"):
            run(build(**options))


# -- many projects ------------------------------------------------------------------------------


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    projects = {f"p{i}": [IndexFile(f"p{i}-1.0.tar.gz")] for i in range(24)}
    with StaticIndex(tmp_path / "index", projects, delay=0.05) as index:

        async def poll() -> dict[str, FetchResult]:
            async with httpx.AsyncClient(trust_env=False) as http:
                client = IndexClient(http, settings_for(index.url), concurrency=4)
                return await client.fetch_many(projects, {})

        results = run(poll())
        assert all(isinstance(r, Fetched) for r in results.values())
        assert 1 < index.max_in_flight <= 4
        assert sum(index.requests.values()) == 24


# -- credentials never leak ---------------------------------------------------------------------


def test_no_credentials_in_any_reason_or_log(
    faults: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="govern")
    faults.script("err", Reply(500))
    faults.script("auth", Reply(401))
    faults.script("hang", Hang(30))
    faults.script("cut", Truncated(b"{", claimed=100))
    faults.script("moved", Redirect(f"ftp://ci:{SECRET}@127.0.0.1/x"))
    faults.script("ok", Reply(body=json_page("ok", ["ok-1.0.tar.gz"])))
    index = faults.url.replace("http://", f"http://ci:{SECRET}@")
    refused = f"http://ci:{SECRET}@127.0.0.1:{free_port()}/simple/"

    async def poll() -> list[FetchResult]:
        async with httpx.AsyncClient(trust_env=False) as http:
            client = IndexClient(
                http, settings_for(index, refused), timeout=0.3, attempts=2, sleep=Sleeps()
            )
            many = await client.fetch_many(["err", "auth", "hang", "cut", "moved", "ok"], {})
            alone = IndexClient(http, settings_for(refused), attempts=1)
            return [*many.values(), await alone.fetch("demo")]

    results = run(poll())
    assert len(results) == 7
    assert all(SECRET not in repr(result) for result in results)
    assert all(SECRET not in record.getMessage() for record in caplog.records)
    assert any(record.levelno == logging.DEBUG for record in caplog.records)
    answers = [r.getMessage() for r in caplog.records if r.name == "govern.index.client"]
    assert f"GET {faults.url}ok/ -> 200" in answers  # each answer is logged at debug level
    assert fetched(results[-2]).page.files[0].url == f"{faults.base}/files/ok-1.0.tar.gz"
    assert all(h["authorization"].startswith("Basic ") for h in faults.headers["/simple/ok/"])


# -- pypiserver ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pypiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real pypiserver (--disable-fallback) holding govern-demo 1.0/1.1 and Other_Name 2.0."""
    packages = tmp_path_factory.mktemp("pypiserver")
    build_wheel(packages, "govern-demo", "1.0", requires_python=">=3.8")
    build_sdist(packages, "govern-demo", "1.1")
    build_wheel(packages, "Other_Name", "2.0", tag="py2.py3-none-any")
    with run_pypiserver(packages) as url:
        yield url


def test_pypiserver_pages_are_read(pypiserver: str) -> None:
    page = fetched(run(fetch(pypiserver, "Govern_Demo"))).page
    assert page.format == "html"  # pypiserver speaks PEP 503 only
    assert [(f.kind, f.version) for f in page.files] == [
        (FileKind.WHEEL, Version("1.0")),
        (FileKind.SDIST, Version("1.1")),
    ]
    assert all(len(f.hashes["sha256"]) == 64 for f in page.files)
    other = fetched(run(fetch(pypiserver, "other.name"))).page
    assert other.files[0].filename == "other_name-2.0-py2.py3-none-any.whl"


def test_pypiserver_answers_html_even_to_a_json_only_accept(pypiserver: str) -> None:
    async def ask() -> httpx.Response:
        async with httpx.AsyncClient(trust_env=False) as http:
            return await http.get(pypiserver + "govern-demo/", headers={"Accept": JSON_TYPE})

    response = run(ask())
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")


def test_pypiserver_without_fallback_says_404(pypiserver: str) -> None:
    result = failed(run(fetch(pypiserver, "not-there")))
    assert (result.status, result.reason) == (404, "not on the index")


@pytest.mark.slow
def test_pip_installs_the_built_wheel_from_pypiserver(pypiserver: str, tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    environ["PIP_CONFIG_FILE"] = os.devnull
    target = tmp_path / "target"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--only-binary=:all:",
            "--target",
            str(target),
            "--index-url",
            pypiserver,
            "govern-demo==1.0",
        ],
        check=True,
        env=environ,
        capture_output=True,
    )
    assert (target / "govern_demo" / "__init__.py").read_text() == '__version__ = "1.0"\n'


@pytest.mark.parametrize("clients", ["a default one", "govern's"])
def test_a_warm_poll_reuses_its_connections(clients: str) -> None:
    """Every 304 read to its end: the connection goes back to the pool (keep-alive).

    Never more connections than requests in flight, and the same ones warm, whether the
    client is httpx's default or govern's (:func:`http_client`, what the CLI uses).
    """
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    peers: set[tuple[str, int]] = set()
    in_flight: dict[int, int] = {}
    overlap: list[int] = []
    lock = threading.Lock()

    class KeepAlive(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            peers.add(self.client_address[:2])
            port = self.client_address[1]
            with lock:  # two requests at once on one connection would be a pipelining bug
                in_flight[port] = in_flight.get(port, 0) + 1
                overlap.append(in_flight[port])
            try:
                self.answer()
            finally:
                with lock:
                    in_flight[port] -= 1

        def answer(self) -> None:
            if self.headers.get("If-None-Match") == '"v1"':
                self.send_response(304)
                self.send_header("ETag", '"v1"')
                self.end_headers()
                return
            name = self.path.strip("/").rsplit("/", 1)[-1]
            body = json.dumps({"meta": {"api-version": "1.1"}, "name": name, "files": []})
            self.send_response(200)
            self.send_header("Content-Type", "application/vnd.pypi.simple.v1+json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("ETag", '"v1"')
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), KeepAlive)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    names = [f"p{i}" for i in range(60)]
    try:

        async def both() -> tuple[int, int]:
            url = f"http://127.0.0.1:{server.server_port}/simple/"
            async with contextlib.AsyncExitStack() as stack:
                http: httpx.AsyncClient | client_module.Clients
                if clients == "a default one":
                    http = await stack.enter_async_context(httpx.AsyncClient(trust_env=False))
                else:
                    http = await stack.enter_async_context(http_client(trust_env=False))
                client = IndexClient(http, settings_for(url), concurrency=4)
                cold = await client.fetch_many(names, {})
                assert all(isinstance(r, Fetched) for r in cold.values())
                opened_cold = len(peers)
                peers.clear()
                warm = await client.fetch_many(names, {n: Validators(etag='"v1"') for n in names})
                assert all(isinstance(r, NotModified) for r in warm.values())
                return opened_cold, len(peers)

        cold_connections, warm_connections = run(both())
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert 1 <= cold_connections <= 4
    assert 1 <= warm_connections <= 4  # was one per 304 before the body was drained
    assert max(overlap) == 1


# -- govern's httpx client: its headers, cookies, redirects and proxies ------------------------


def _fetch_in_turn(url: str, names: Sequence[str]) -> list[FetchResult]:
    """Several fetches, one after the other, through one :func:`http_client`."""

    async def go() -> list[FetchResult]:
        async with http_client(trust_env=False) as http:
            client = IndexClient(http, settings_for(url))
            return [await client.fetch(name) for name in names]

    return run(go())


def test_a_request_sends_the_client_s_default_headers(faults: FaultServer) -> None:
    path = faults.script("demo", Reply(body=json_page("demo")))
    fetched(_fetch_in_turn(faults.url, ["demo"])[0])
    sent = faults.headers[path][0]
    assert sent["user-agent"] == USER_AGENT
    assert USER_AGENT.startswith(f"govern/{__version__} ")
    assert "gzip" in sent["accept-encoding"]
    assert sent["accept"] == ACCEPT


def test_a_cookie_set_on_an_answer_is_kept_and_sent(faults: FaultServer) -> None:
    faults.script(
        "first", Reply(body=json_page("first"), headers={"Set-Cookie": "session=s1; Path=/"})
    )
    later = faults.script("second", Reply(body=json_page("second")))
    results = _fetch_in_turn(faults.url, ["first", "second"])
    assert all(isinstance(r, Fetched) for r in results), results
    assert faults.headers[later][0].get("cookie") == "session=s1"


def test_a_redirect_costs_no_extra_request(faults: FaultServer) -> None:
    first = faults.script("demo", Redirect("/elsewhere/demo/", status=301))
    faults.script("/elsewhere/demo/", Reply(body=json_page("demo", ["demo-1.0.tar.gz"])))
    second = faults.script("other", Redirect("/elsewhere/other/", status=302))
    faults.script("/elsewhere/other/", Reply(body=json_page("other")))
    demo, other = _fetch_in_turn(faults.url, ["demo", "other"])
    assert fetched(demo).page.files[0].url == f"{faults.base}/files/demo-1.0.tar.gz"
    fetched(other)
    assert faults.count(first) == faults.count(second) == 1
    assert faults.count("/elsewhere/demo/") == faults.count("/elsewhere/other/") == 1


def test_a_proxy_in_the_environment_is_honoured(faults: FaultServer) -> None:
    path = faults.script("demo", Reply(body=json_page("demo")))
    os.environ["HTTP_PROXY"] = "http://127.0.0.1:9"  # nothing listens: the proxy is used

    async def go() -> FetchResult:
        async with http_client(trust_env=True) as http:
            return await IndexClient(http, settings_for(faults.url), attempts=1).fetch("demo")

    result = failed(run(go()))
    assert "connection failed" in result.reason
    assert faults.count(path) == 0


def test_a_bad_redirect_location_leaves_the_connection_usable(faults: FaultServer) -> None:
    faults.script("bad", Redirect("http://a:abc/"))  # not a URL: the port is not a number
    good = faults.script("good", Reply(body=json_page("good")))

    async def go() -> list[FetchResult]:
        async with http_client(trust_env=False) as http:
            client = IndexClient(http, settings_for(faults.url), attempts=1, timeout=5.0)
            return [await client.fetch("bad"), await client.fetch("good")]

    bad, fine = run(go())
    assert failed(bad).retryable  # a bad answer of the index: retried by the next poll
    fetched(fine)  # the connection went back to the pool
    assert faults.count(good) == 1


def test_http_client_is_clients_of_one_connection_each_taken_in_turn() -> None:
    # httpcore checks every connection a pool holds at each request: one per client keeps
    # that check to the connection in use (bench/README.md has the figures).
    async def scenario() -> None:
        async with http_client(connections=3, trust_env=False) as clients:
            assert len(clients.all) == 3
            pools = {id(c._transport._pool) for c in clients.all}  # type: ignore[attr-defined]
            assert len(pools) == 3
            async with clients.lease() as a, clients.lease() as b, clients.lease() as c:
                assert len({id(a), id(b), id(c)}) == 3
                async with clients.lease() as d:  # more requests than clients share one
                    assert d is clients.all[0]
            async with clients.lease() as again:
                assert again in clients.all

    asyncio.run(scenario())


def test_requests_in_flight_each_lease_a_client_of_their_own() -> None:
    used: list[str] = []
    release = asyncio.Event()

    def transport(name: str) -> httpx.MockTransport:
        async def handler(request: httpx.Request) -> httpx.Response:
            used.append(name)
            await release.wait()
            return httpx.Response(404, request=request)

        return httpx.MockTransport(handler)

    async def scenario() -> None:
        clients = client_module.Clients(
            [httpx.AsyncClient(transport=transport(n)) for n in ("one", "two")]
        )
        async with clients:
            index = IndexClient(clients, settings_for("http://index.test/simple/"), netrc=False)
            fetches = asyncio.gather(index.fetch("a"), index.fetch("b"))
            while len(used) < 2:
                await asyncio.sleep(0)
            release.set()
            await fetches
        assert sorted(used) == ["one", "two"]

    asyncio.run(scenario())


# -- a distribution file, by the rule pages follow -----------------------------------------------


def test_a_file_is_downloaded_from_the_index_or_a_trusted_origin_only(
    static: StaticIndex, dists: dict[str, Path], tmp_path: Path
) -> None:
    """The file is checked against the page's sha256; credentials go to the index's origin
    only; a redirect to an origin in trusted-redirects is followed (with no credentials),
    anywhere else never; a body past the size the page gave is refused and not kept."""
    wheel = dists["wheel"]
    index = static.url.replace("http://", f"http://ci:{SECRET}@")
    page = fetched(run(fetch(index, "demo"))).page
    file = next(f for f in page.files if f.kind is FileKind.WHEEL)
    path = f"/files/{wheel.name}"

    async def download(settings: IndexSettings, target: Path, **changes: Any) -> Path | FetchFailed:
        target.mkdir()
        async with http_client(trust_env=False) as http:
            one = dataclasses.replace(file, **changes)
            return await IndexClient(http, settings).download(one, index, target)

    got = run(download(settings_for(index), tmp_path / "own"))
    assert isinstance(got, Path)
    assert got.read_bytes() == wheel.read_bytes()
    assert static.headers[path][-1]["authorization"].startswith("Basic ")

    with StaticIndex(tmp_path / "mirror", {"demo": [IndexFile.of(wheel)]}) as mirror:
        static.file_redirects[wheel.name] = f"{mirror.base}{path}"
        refused = run(download(settings_for(index), tmp_path / "untrusted"))
        assert isinstance(refused, FetchFailed)
        assert "another origin than the index's" in refused.reason
        assert mirror.count(path) == 0
        trusted = IndexSettings(index, trusted_redirects=(mirror.base,))
        got = run(download(trusted, tmp_path / "trusted"))
        assert isinstance(got, Path)
        assert "authorization" not in mirror.headers[path][-1]
        # A page may keep its files on another host (its sha256 pins the bytes): the
        # link is followed, without the index's credentials.
        asked = mirror.count(path)
        linked = run(download(settings_for(index), tmp_path / "link", url=f"{mirror.base}{path}"))
        assert isinstance(linked, Path)
        assert mirror.count(path) == asked + 1
        assert "authorization" not in mirror.headers[path][-1]
        # ... but a redirect from that host to a third origin is not.
        with StaticIndex(tmp_path / "third", {"demo": [IndexFile.of(wheel)]}) as third:
            mirror.file_redirects[wheel.name] = f"{third.base}{path}"
            elsewhere = run(
                download(settings_for(index), tmp_path / "hop", url=f"{mirror.base}{path}")
            )
            assert isinstance(elsewhere, FetchFailed)
            assert "another origin than the index's" in elsewhere.reason
            assert third.count(path) == 0
    static.file_redirects.clear()

    small = run(download(settings_for(index), tmp_path / "small", size=10))
    assert isinstance(small, FetchFailed)
    assert small.reason == "body over 10 bytes"
    assert list((tmp_path / "small").iterdir()) == []
    bad = run(download(settings_for(index), tmp_path / "bad", hashes={"sha256": "0" * 64}))
    assert isinstance(bad, FetchFailed)
    assert f"not the {'0' * 64} the index's page gave" in bad.reason
    assert list((tmp_path / "bad").iterdir()) == []
    assert SECRET not in repr([refused, elsewhere, small, bad])
