"""Indexes that speak HTTP/2: the client speaks HTTP/1.1, and says so.

The client is httpx with ``http2=False`` (govern.index.client). It offers ``http/1.1`` by ALPN,
so a server that speaks both answers in HTTP/1.1, as the public index does; a server that
speaks only HTTP/2 (over TLS, or cleartext h2c) is a failure that names HTTP/2.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import threading
from pathlib import Path

import pytest

from fakes.index import IndexFile, StaticIndex
from govern.index.client import IndexClient, http_client
from govern.index.model import Fetched, FetchFailed, FetchResult
from govern.index.pipconfig import IndexSettings

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")

# What a server that speaks only HTTP/2 sends first (RFC 9113 3.4): its SETTINGS frame,
# then, to a request that is not HTTP/2, a GOAWAY with PROTOCOL_ERROR.
_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_GOAWAY = b"\x00\x00\x08\x07\x00\x00\x00\x00\x00" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x01"


class _Http2Only:
    """A server on 127.0.0.1 that answers every connection with HTTP/2 frames, then closes."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)  # accept() wakes up to see the stop
        self._stop = threading.Event()
        self._tls = tls
        self.connections = 0
        self.alpn: list[str | None] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        scheme = "https" if self._tls else "http"
        return f"{scheme}://127.0.0.1:{self._listener.getsockname()[1]}/simple/"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                raw, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            raw.settimeout(5)
            try:
                conn: socket.socket = raw
                if self._tls is not None:
                    conn = self._tls.wrap_socket(raw, server_side=True)
                    self.alpn.append(conn.selected_alpn_protocol())
                conn.settimeout(5)
                conn.recv(65536)  # the request (HTTP/1.1, not the HTTP/2 preface)
                conn.sendall(_SETTINGS + _GOAWAY)
                conn.close()
            except OSError:
                raw.close()

    def __enter__(self) -> _Http2Only:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()


def _fetch(url: str) -> FetchResult:
    async def go() -> FetchResult:
        async with http_client() as http:
            client = IndexClient(http, IndexSettings(url, source="test"), attempts=1)
            return await client.fetch("demo")

    return asyncio.run(go())


def _server_tls(certificate: tuple[Path, Path], protocols: list[str]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    context.set_alpn_protocols(protocols)
    return context


@pytest.fixture
def trusted(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))


@needs_openssl
@pytest.mark.usefixtures("trusted")
def test_a_server_offering_http2_and_http11_answers_in_http11(
    tmp_path: Path, certificate: tuple[Path, Path]
) -> None:
    served = StaticIndex(tmp_path / "index", {"demo": [IndexFile("demo-1.0-py3-none-any.whl")]})
    served.tls = _server_tls(certificate, ["h2", "http/1.1"])  # h2 preferred, as CDNs do
    with served:
        result = _fetch(served.url)
    assert isinstance(result, Fetched), result
    assert [f.filename for f in result.page.files] == ["demo-1.0-py3-none-any.whl"]
    assert served.alpn == ["http/1.1"]  # the client asked for HTTP/1.1 by ALPN


@needs_openssl
@pytest.mark.usefixtures("trusted")
def test_a_tls_server_that_speaks_only_http2_is_a_failure_naming_http2(
    certificate: tuple[Path, Path],
) -> None:
    with _Http2Only(_server_tls(certificate, ["h2"])) as server:
        result = _fetch(server.url)
    assert isinstance(result, FetchFailed), result
    assert "the server answered in HTTP/2" in result.reason
    assert server.alpn == [None]  # no protocol in common: the server speaks h2 all the same


def test_a_cleartext_http2_server_is_a_failure_naming_http2() -> None:
    with _Http2Only() as server:  # h2c with prior knowledge
        result = _fetch(server.url)
    assert isinstance(result, FetchFailed), result
    assert "the server answered in HTTP/2" in result.reason
    assert "(HTTP/1.1 only)" in result.reason
    assert server.connections == 1
