"""Package indexes on 127.0.0.1 for the index client's tests: real sockets, no mocks.

* :class:`StaticIndex` writes a PEP 691 JSON + PEP 503 HTML tree from a description and
  serves it with content negotiation, ETag / Last-Modified / 304 and ``X-PyPI-Last-Serial``.
* :class:`FaultServer` answers each project path with a script of misbehaviours (429 with
  Retry-After, 5xx, hangs, truncated or huge bodies, bad JSON, hostile HTML, 401, ...).
* :func:`run_pypiserver` starts a real pypiserver (always ``--disable-fallback``).

Every server listens on port 0 of 127.0.0.1, counts requests per path and the requests in
flight, and shuts down cleanly: idle keep-alive connections are closed and every handler
thread is joined before ``__exit__`` returns.

The pages follow the Simple Repository API: PEP 503 (HTML,
https://peps.python.org/pep-0503/), PEP 691 (JSON and content negotiation,
https://peps.python.org/pep-0691/), PEP 592 (yanked files, https://peps.python.org/pep-0592/).
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import html
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename

from govern.demo.index import HTML_TYPE, JSON_TYPE, LEGACY_HTML_TYPE, negotiate

# The media types and the negotiation are govern's demo index's, re-exported for the tests.
__all__ = [
    "HTML_TYPE",
    "JSON_TYPE",
    "LEGACY_HTML_TYPE",
    "FaultServer",
    "Handler",
    "Hang",
    "IndexFile",
    "Redirect",
    "Reply",
    "RequireAuth",
    "Served",
    "StaticIndex",
    "Stream",
    "Truncated",
    "free_port",
    "hostile_html",
    "html_page",
    "http_date",
    "json_page",
    "negotiate",
    "run_pypiserver",
    "wait_for",
]

# -- the server machinery shared by both servers --------------------------------------------


class _Server(ThreadingHTTPServer):
    """A threaded server that knows its open connections, so stop() can close idle ones."""

    daemon_threads = False
    block_on_close = True  # server_close() joins every handler thread

    def __init__(self, handler: type[BaseHTTPRequestHandler], owner: Served) -> None:
        if ":" in owner.host:  # an IPv6 address ("::1")
            self.address_family = socket.AF_INET6
        super().__init__((owner.host, 0), handler)
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    """Routes GET to the owner, counting requests and the requests in flight."""

    protocol_version = "HTTP/1.1"  # keep-alive, like a real index
    timeout = 10  # a client that stops reading cannot hold a thread forever
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections.add(self.connection)
            if isinstance(self.connection, ssl.SSLSocket):  # what ALPN agreed on, if anything
                self.server.owner.alpn.append(self.connection.selected_alpn_protocol())

    def finish(self) -> None:
        with self.server.lock:
            self.server.connections.discard(self.connection)
        with suppress(OSError):  # the client went away mid-answer
            super().finish()

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        owner._enter(path, {k.lower(): v for k, v in self.headers.items()})
        try:
            owner.handle(self, path)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        finally:
            owner._leave()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: tests read the counters, not a log."""

    def reply(
        self,
        status: int,
        body: bytes = b"",
        *,
        content_type: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Send a complete response."""
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)


class Served:
    """Start/stop, the counters and the context-manager protocol of a test server."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()  # path -> requests received
        self.headers: dict[str, list[dict[str, str]]] = {}  # path -> headers of each request
        self.in_flight = 0
        self.max_in_flight = 0
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        # Set before start() to serve HTTPS with this server-side context.
        self.tls: ssl.SSLContext | None = None
        self.alpn: list[str | None] = []  # per TLS connection: the protocol ALPN agreed on
        # The loopback address to listen on; set "::1" before start() for IPv6.
        self.host = "127.0.0.1"

    def handle(self, handler: Handler, path: str) -> None:
        """Answer one GET (subclasses)."""
        raise NotImplementedError

    def _enter(self, path: str, headers: dict[str, str]) -> None:
        with self._lock:
            self.requests[path] += 1
            self.headers.setdefault(path, []).append(headers)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def count(self, path: str) -> int:
        """Requests received for a path (``/simple/<project>/``)."""
        with self._lock:
            return self.requests[path]

    @property
    def port(self) -> int:
        """The port the server listens on (it must be started)."""
        assert self._server is not None, "the server is not started"
        return int(self._server.server_address[1])

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>`` (``https`` when :attr:`tls` is set; ``[::1]`` on IPv6)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The index URL (``.../simple/``)."""
        return f"{self.base}/simple/"

    def start(self) -> None:
        """Listen on a free port of 127.0.0.1 and serve from a thread."""
        self.stopping.clear()
        self._server = _Server(Handler, self)
        if self.tls is not None:  # the handshake happens at accept()
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, end hanging handlers, close connections, join every thread."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self.stopping.set()
        server.shutdown()
        with server.lock:
            connections = list(server.connections)
        for connection in connections:
            with suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        server.server_close()  # joins the handler threads
        thread.join()
        self._server = self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def http_date(moment: float) -> str:
    """A Unix time as an HTTP date."""
    return email.utils.formatdate(moment, usegmt=True)


# -- the static index -----------------------------------------------------------------------


@dataclass(frozen=True)
class IndexFile:
    """One file of a project: its name and bytes, and what the index says about it."""

    filename: str
    content: bytes = b"not a real distribution\n"
    upload_time: str | None = None  # ISO 8601, "2024-01-01T00:00:00Z"
    yanked: bool | str = False  # a string is the reason (PEP 592)
    requires_python: str | None = None

    @classmethod
    def of(cls, path: Path, **details: str | bool | None) -> IndexFile:
        """A file built on disk (tests/wheels.py), with index details."""
        return cls(path.name, path.read_bytes(), **details)  # type: ignore[arg-type]


@dataclass
class _Project:
    files: list[IndexFile] = field(default_factory=list)
    serial: int = 1


class StaticIndex(Served):
    """A static PEP 691 + PEP 503 tree under root, served with negotiation and validators.

    ``root/simple/<project>/index.json`` and ``index.html``, ``root/files/<filename>``.
    ``offer_json=False`` makes an HTML-only index; ``delay`` holds every page request that
    long (to observe the client's concurrency in :attr:`max_in_flight`); ``hashes=False``
    leaves the files' hashes out of the pages (PEP 503 says they SHOULD be there, so an
    index may omit them). :attr:`file_redirects` maps a file name to a ``Location`` its
    URL answers with a 302 instead of the file (a file store on another host).
    """

    def __init__(
        self,
        root: Path,
        projects: Mapping[str, Sequence[IndexFile]] | None = None,
        *,
        serial: int = 1,
        offer_json: bool = True,
        delay: float = 0.0,
        hashes: bool = True,
    ) -> None:
        """Write the tree for projects (each at the given serial); start() serves it."""
        super().__init__()
        self.root = root
        self.offer_json = offer_json
        self.delay = delay
        self.hashes = hashes
        self.file_redirects: dict[str, str] = {}
        self._mtime = 1704067200.0  # 2024-01-01; each publish moves it on by a second
        for name, files in (projects or {}).items():
            self.publish(name, files, serial=serial)

    def project_dir(self, name: str) -> Path:
        """Where the pages of a project are written."""
        return self.root / "simple" / canonicalize_name(name)

    def path(self, name: str) -> str:
        """The URL path of a project page (for :meth:`count`)."""
        return f"/simple/{canonicalize_name(name)}/"

    def publish(self, name: str, files: Sequence[IndexFile], *, serial: int = 1) -> None:
        """Write (or rewrite) a project's pages and files; serial may go backwards on purpose."""
        project = canonicalize_name(name)
        directory = self.project_dir(project)
        directory.mkdir(parents=True, exist_ok=True)
        files_dir = self.root / "files"
        files_dir.mkdir(parents=True, exist_ok=True)
        for file in files:
            (files_dir / file.filename).write_bytes(file.content)
        document = {
            "meta": {"api-version": "1.1", "_last-serial": serial},
            "name": project,
            "files": [self._json_file(file, self.hashes) for file in files],
            "versions": sorted({v for v in (_version_of(f.filename) for f in files) if v}),
        }
        self._mtime += 1
        for page, body in (
            ("index.json", json.dumps(document, indent=1).encode()),
            ("index.html", self._html(project, files, self.hashes).encode()),
        ):
            target = directory / page
            target.write_bytes(body)
            os.utime(target, (self._mtime, self._mtime))

    @staticmethod
    def _json_file(file: IndexFile, hashes: bool = True) -> dict[str, object]:
        digest = hashlib.sha256(file.content).hexdigest()
        entry: dict[str, object] = {
            "filename": file.filename,
            "url": f"../../files/{file.filename}",
            "hashes": {"sha256": digest} if hashes else {},  # PEP 691: may be empty
            "size": len(file.content),
        }
        if file.requires_python is not None:
            entry["requires-python"] = file.requires_python
        if file.upload_time is not None:
            entry["upload-time"] = file.upload_time
        if file.yanked:
            entry["yanked"] = file.yanked
        return entry

    @staticmethod
    def _html(project: str, files: Sequence[IndexFile], hashes: bool = True) -> str:
        lines = [
            "<!DOCTYPE html>",
            '<html><head><meta name="pypi:repository-version" content="1.1">',
            f"<title>Links for {html.escape(project)}</title></head><body>",
            f"<h1>Links for {html.escape(project)}</h1>",
        ]
        for file in files:
            digest = hashlib.sha256(file.content).hexdigest()
            fragment = f"#sha256={digest}" if hashes else ""
            attributes = [f'href="../../files/{html.escape(file.filename)}{fragment}"']
            if file.requires_python is not None:
                attributes.append(f'data-requires-python="{html.escape(file.requires_python)}"')
            if file.yanked:
                reason = file.yanked if isinstance(file.yanked, str) else ""
                attributes.append(f'data-yanked="{html.escape(reason)}"')
            lines.append(f"<a {' '.join(attributes)}>{html.escape(file.filename)}</a><br>")
        lines.append("</body></html>")
        return "\n".join(lines) + "\n"

    def handle(self, handler: Handler, path: str) -> None:
        """Serve a project page (negotiated, conditional) or a file."""
        parts = path.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "files":
            moved = self.file_redirects.get(parts[1])
            if moved is not None:
                handler.reply(302, headers={"Location": moved})
                return
            target = self.root / "files" / parts[1]
            if target.is_file():
                handler.reply(200, target.read_bytes(), content_type="application/octet-stream")
            else:
                handler.reply(404, b"no such file\n", content_type="text/plain")
            return
        if len(parts) != 2 or parts[0] != "simple" or not path.endswith("/"):
            handler.reply(404, b"not found\n", content_type="text/plain")
            return
        if self.delay:
            self.stopping.wait(self.delay)
        directory = self.root / "simple" / parts[1]
        if not directory.is_dir():
            handler.reply(404, b"no such project\n", content_type="text/plain")
            return
        offered = [JSON_TYPE] if self.offer_json else []
        offered += [HTML_TYPE, LEGACY_HTML_TYPE]
        chosen = negotiate(handler.headers.get("Accept"), offered)
        if chosen is None:
            handler.reply(406, b"not acceptable\n", content_type="text/plain")
            return
        page = directory / ("index.json" if chosen == JSON_TYPE else "index.html")
        body = page.read_bytes()
        serial = json.loads((directory / "index.json").read_bytes())["meta"]["_last-serial"]
        mtime = page.stat().st_mtime
        etag = f'"{hashlib.sha256(body).hexdigest()[:20]}"'
        headers = {
            "ETag": etag,
            "Last-Modified": http_date(mtime),
            "X-PyPI-Last-Serial": str(serial),
            "Vary": "Accept",
        }
        if _not_modified(handler, etag, mtime):
            handler.reply(304, headers=headers)
            return
        charset = "" if chosen == JSON_TYPE else "; charset=utf-8"
        handler.reply(200, body, content_type=chosen + charset, headers=headers)


def _not_modified(handler: Handler, etag: str, mtime: float) -> bool:
    """RFC 9110: If-None-Match wins over If-Modified-Since."""
    if_none_match = handler.headers.get("If-None-Match")
    if if_none_match is not None:
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        return "*" in tags or etag in tags
    since = handler.headers.get("If-Modified-Since")
    if since is None:
        return False
    try:
        moment = email.utils.parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError):
        return False
    return int(mtime) <= moment


def _version_of(filename: str) -> str | None:
    try:
        if filename.endswith(".whl"):
            return str(parse_wheel_filename(filename)[1])
        return str(parse_sdist_filename(filename)[1])
    except ValueError:
        return None


# -- the fault server -----------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A complete response."""

    status: int = 200
    body: bytes = b""
    content_type: str | None = JSON_TYPE
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hang:
    """Read the request, answer nothing for that long (or until the server stops), close."""

    seconds: float = 60.0


@dataclass(frozen=True)
class Truncated:
    """Claim a Content-Length larger than the body sent, then close the connection."""

    body: bytes
    claimed: int
    content_type: str = JSON_TYPE


@dataclass(frozen=True)
class Stream:
    """A body of size bytes of JSON whitespace, written in chunks, never held in memory.

    ``declare_length=False`` sends it chunked (no Content-Length), so only the client's
    own count can stop it.
    """

    size: int
    declare_length: bool = True
    content_type: str = JSON_TYPE
    chunk: int = 64 * 1024


@dataclass(frozen=True)
class Redirect:
    """A redirect to location (absolute, or a path on this server)."""

    location: str
    status: int = 302


@dataclass(frozen=True)
class RequireAuth:
    """``then`` for the right Basic credentials, 401 otherwise."""

    user: str
    password: str
    then: Step = field(default_factory=Reply)


Step = Reply | Hang | Truncated | Stream | Redirect | RequireAuth


class FaultServer(Served):
    """An index whose answer per project path follows a script (the last step repeats).

    ``script("proj", Reply(500), Reply(200, page))`` answers 500 then the page forever.
    Unscripted paths get 404. :attr:`sent` records the body bytes written per path.
    """

    def __init__(self) -> None:
        """An idle server; start() or ``with`` serves it."""
        super().__init__()
        self._scripts: dict[str, list[Step]] = {}
        self.sent: Counter[str] = Counter()

    def path(self, name: str) -> str:
        """The URL path of a project page."""
        return f"/simple/{canonicalize_name(name)}/"

    def script(self, name: str, *steps: Step) -> str:
        """Set what the project's page answers, request after request; returns its path."""
        assert steps, "a script needs at least one step"
        path = name if name.startswith("/") else self.path(name)
        with self._lock:
            self._scripts[path] = list(steps)
        return path

    def _next(self, path: str) -> Step | None:
        with self._lock:
            steps = self._scripts.get(path)
            if not steps:
                return None
            return steps.pop(0) if len(steps) > 1 else steps[0]

    def handle(self, handler: Handler, path: str) -> None:
        """Play the next step of the path's script."""
        step = self._next(path)
        if step is None:
            handler.reply(404, b"not scripted\n", content_type="text/plain")
            return
        self._play(handler, path, step)

    def _play(self, handler: Handler, path: str, step: Step) -> None:
        if isinstance(step, Reply):
            handler.reply(
                step.status, step.body, content_type=step.content_type, headers=step.headers
            )
            self._count_sent(path, len(step.body))
        elif isinstance(step, Hang):
            self.stopping.wait(step.seconds)
            handler.close_connection = True
        elif isinstance(step, Truncated):
            handler.send_response(200)
            handler.send_header("Content-Type", step.content_type)
            handler.send_header("Content-Length", str(step.claimed))
            handler.end_headers()
            handler.wfile.write(step.body)
            handler.wfile.flush()
            handler.close_connection = True
            self._count_sent(path, len(step.body))
        elif isinstance(step, Stream):
            self._stream(handler, path, step)
        elif isinstance(step, Redirect):
            location = step.location
            if location.startswith("/"):
                location = self.base + location
            handler.reply(step.status, headers={"Location": location})
        else:
            expected = _basic(step.user, step.password)
            if handler.headers.get("Authorization") == expected:
                self._play(handler, path, step.then)
            else:
                handler.reply(
                    401,
                    b"unauthorized\n",
                    content_type="text/plain",
                    headers={"WWW-Authenticate": 'Basic realm="index"'},
                )

    def _stream(self, handler: Handler, path: str, step: Stream) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", step.content_type)
        if step.declare_length:
            handler.send_header("Content-Length", str(step.size))
        else:
            handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        chunk = b" " * step.chunk
        left = step.size
        handler.close_connection = True
        while left > 0 and not self.stopping.is_set():
            piece = chunk[: min(left, step.chunk)]
            if step.declare_length:
                handler.wfile.write(piece)
            else:
                handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self._count_sent(path, len(piece))
            left -= len(piece)
        if not step.declare_length and left == 0:
            handler.wfile.write(b"0\r\n\r\n")

    def _count_sent(self, path: str, count: int) -> None:
        with self._lock:
            self.sent[path] += count


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def json_page(
    name: str,
    filenames: Sequence[str] = (),
    *,
    serial: int | None = None,
    versions: Sequence[str] | None = None,
) -> bytes:
    """A minimal PEP 691 page listing filenames (relative URLs under ../../files/)."""
    meta: dict[str, object] = {"api-version": "1.1"}
    if serial is not None:
        meta["_last-serial"] = serial
    document: dict[str, object] = {
        "meta": meta,
        "name": canonicalize_name(name),
        "files": [
            {"filename": f, "url": f"../../files/{f}", "hashes": {"sha256": "00" * 32}}
            for f in filenames
        ],
    }
    if versions is not None:
        document["versions"] = list(versions)
    return json.dumps(document).encode()


def html_page(name: str, filenames: Sequence[str] = ()) -> bytes:
    """A minimal PEP 503 page listing filenames."""
    links = "".join(f'<a href="../../files/{f}">{f}</a><br>\n' for f in filenames)
    return f"<!DOCTYPE html><html><body><h1>{name}</h1>\n{links}</body></html>\n".encode()


def hostile_html(name: str, filename: str) -> bytes:
    """HTML built to trip a parser, with one real anchor (to filename) among the traps."""
    traps = [
        "<script>var a = '<a href=\"../../files/evil-6.6.6.tar.gz\">';</script>",
        "<style>a[href]::after { content: '<a href=x>' }</style>",
        '<!-- <a href="../../files/commented-1.0.tar.gz"> -->',
        "<div>" * 10_000,
        "&#0; &#x110000; &#99999999999; &bogus; &amp &lt;&#x3c;a href=nope&gt;",
        '<a href="http://[::1">broken ipv6</a>',
        '<a data-yanked title="' + "x" * 100_000 + '">no href</a>',
        f'<a href="../../files/{filename}" data-requires-python="&gt;=3.8">{filename}</a>',
        "</div>" * 10_000,
        "<![CDATA[ <a href=x-1.0.tar.gz> ]]>",
        "<? processing <a href=y> ?>",
        "<a href='unterminated",
    ]
    return "\n".join(traps).encode()


# -- pypiserver -----------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def run_pypiserver(packages: Path, *, timeout: float = 20.0) -> Iterator[str]:
    """Serve packages with a real pypiserver on 127.0.0.1; yields the ``/simple/`` URL.

    Always ``--disable-fallback``: a name it does not hold is a 404, never a redirect to a
    public index. The process is terminated (then killed) when the block ends.
    """
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "pypiserver",
        "run",
        "--disable-fallback",
        "-i",
        "127.0.0.1",
        "-p",
        str(port),
        "--log-stream",
        "none",
        str(packages),
    ]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/simple/"
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                error = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"pypiserver exited with {process.returncode}: {error}")
            try:
                with urllib.request.urlopen(url, timeout=1):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"pypiserver did not answer within {timeout} s") from None
                time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll condition until it holds or timeout passes; its last value."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return condition()
        time.sleep(0.01)
    return True
