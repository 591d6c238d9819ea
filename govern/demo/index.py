"""The demo's package index: a static Simple API tree, served on 127.0.0.1 by a thread.

The tree holds, per project, a PEP 691 JSON page and a PEP 503 HTML page
(``simple/NAME/index.json`` and ``index.html``) and the files under ``files/``; the server
answers JSON or HTML as the request's Accept header prefers (PEP 691 content negotiation),
with an ETag and ``Cache-Control: max-age=0`` so that every poll asks again and sees a
release published a moment earlier. Nothing here leaves the machine.
"""

from __future__ import annotations

import hashlib
import html
import json
import shutil
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self

from packaging.utils import canonicalize_name

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
LEGACY_HTML_TYPE = "text/html"
OFFERED = (JSON_TYPE, HTML_TYPE, LEGACY_HTML_TYPE)


class LocalIndex:
    """A Simple API tree under ``root``, served at :attr:`url` while the context is open."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.serial = 0
        self._projects: dict[str, list[tuple[Path, str]]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The Simple API root (``http://127.0.0.1:PORT/simple/``)."""
        if self._server is None:
            raise RuntimeError("the index is not serving")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/simple/"

    def publish(self, project: str, wheel: Path, upload_time: str) -> None:
        """Add ``wheel`` (a file) to ``project``, uploaded at ``upload_time`` (ISO 8601)."""
        name = canonicalize_name(project)
        files = self.root / "files"
        files.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(wheel, files / wheel.name)
        self._projects.setdefault(name, []).append((files / wheel.name, upload_time))
        self.serial += 1
        self._write()

    def _write(self) -> None:
        simple = self.root / "simple"
        simple.mkdir(parents=True, exist_ok=True)
        names = sorted(self._projects)
        root_json = {"meta": {"api-version": "1.1"}, "projects": [{"name": n} for n in names]}
        _write(simple / "index.json", json.dumps(root_json, indent=1))
        anchors = "".join(f'<a href="{n}/">{n}</a>\n' for n in names)
        _write(simple / "index.html", _page("Simple index", anchors))
        for name, files in self._projects.items():
            entries = []
            anchors = ""
            for path, uploaded in files:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                url = f"../../files/{path.name}"
                entries.append(
                    {
                        "filename": path.name,
                        "url": url,
                        "hashes": {"sha256": digest},
                        "size": path.stat().st_size,
                        "upload-time": uploaded,
                    }
                )
                anchors += f'<a href="{html.escape(url)}#sha256={digest}">{path.name}</a>\n'
            page = {
                "meta": {"api-version": "1.1", "_last-serial": self.serial},
                "name": name,
                "files": entries,
                "versions": sorted({_version(p.name) for p, _ in files}),
            }
            folder = simple / name
            folder.mkdir(exist_ok=True)
            _write(folder / "index.json", json.dumps(page, indent=1))
            _write(folder / "index.html", _page(f"Links for {name}", anchors))

    # -- serving ------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self._write()
        root = self.root

        class Handler(_Handler):
            tree = root

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="govern-demo-index", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None


class _Handler(BaseHTTPRequestHandler):
    """GET and HEAD of the tree: a directory's page in the format the client prefers."""

    tree: Path
    protocol_version = "HTTP/1.1"
    timeout = 10

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, *, body: bool) -> None:
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") or "\\" in p for p in parts):
            self._send(404, b"not found\n", "text/plain", body=body)
            return
        target = self.tree.joinpath(*parts)
        if target.is_dir():
            if not path.endswith("/"):
                self.send_response(301)
                self.send_header("Location", path + "/")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            wants_json = negotiate(self.headers.get("Accept"), OFFERED) == JSON_TYPE
            target = target / ("index.json" if wants_json else "index.html")
            kind = JSON_TYPE if wants_json else HTML_TYPE
        else:
            kind = "application/octet-stream"
        if not target.is_file():
            self._send(404, b"not found\n", "text/plain", body=body)
            return
        data = target.read_bytes()
        etag = f'"{hashlib.sha256(data).hexdigest()[:32]}"'
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._send(200, data, kind, body=body, etag=etag)

    def _send(
        self, status: int, data: bytes, kind: str, *, body: bool, etag: str | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "max-age=0")
        self.send_header("Vary", "Accept")
        if etag is not None:
            self.send_header("ETag", etag)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the demo prints what it does itself."""


def negotiate(accept: str | None, offered: Sequence[str]) -> str | None:
    """The offered media type the Accept header prefers (server order breaks ties).

    No Accept header means text/html (PEP 691); None means nothing offered is acceptable.
    """
    if accept is None or not accept.strip():
        return LEGACY_HTML_TYPE if LEGACY_HTML_TYPE in offered else None
    ranges: list[tuple[str, float]] = []
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if media:
            ranges.append((media.lower(), quality))

    def quality_of(offer: str) -> float:
        kind = offer.split("/")[0]
        best: tuple[int, float] = (-1, 0.0)  # (specificity, q)
        for media, quality in ranges:
            specificity = (
                2 if media == offer else 1 if media == f"{kind}/*" else 0 if media == "*/*" else -1
            )
            if specificity > best[0]:
                best = (specificity, quality)
        return best[1]

    scored = [(quality_of(offer), -i, offer) for i, offer in enumerate(offered)]
    quality, _, offer = max(scored)
    return offer if quality > 0 else None


def _version(filename: str) -> str:
    from packaging.utils import parse_wheel_filename

    return str(parse_wheel_filename(filename)[1])


def _page(title: str, anchors: str) -> str:
    return (
        '<!DOCTYPE html>\n<html><head><meta name="pypi:repository-version" content="1.1">'
        f"<title>{html.escape(title)}</title></head><body>\n{anchors}</body></html>\n"
    )


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
