"""The asyncio network backend of the index clients, against real sockets on 127.0.0.1.

Each test runs an :func:`asyncio.start_server` in its own event loop, beside the client
under test, so what the server saw (connections, bytes) can be asserted exactly.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpcore
import httpx
import pytest

from govern.index.client import http_clients, tls_context
from govern.index.streams import AsyncioBackend, AsyncioStream, AsyncioTransport

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
LIMITS = httpx.Limits(max_connections=1, max_keepalive_connections=1)


class Server:
    """A TCP server in the running loop that counts its connections."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.transport.abort()

        self.server = await asyncio.start_server(accept, "127.0.0.1", 0, ssl=self.tls)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def port(self) -> int:
        assert self.server is not None
        port: int = self.server.sockets[0].getsockname()[1]
        return port

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/"


async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer every request of a keep-alive connection with ``OK``."""
    while True:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(OK)
        await writer.drain()


async def answer_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer one request, then close without saying so (no ``Connection: close``)."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(OK)
    await writer.drain()


async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Accept, read, and never answer."""
    await asyncio.sleep(30)


def transport(verify: ssl.SSLContext | None = None) -> AsyncioTransport:
    return AsyncioTransport(verify=verify or tls_context(trust_env=False), limits=LIMITS)


def test_requests_share_one_keep_alive_connection() -> None:
    async def go() -> tuple[list[int], int]:
        async with Server(answer) as server, httpx.AsyncClient(transport=transport()) as client:
            codes = [(await client.get(server.url())).status_code for _ in range(3)]
            return codes, server.connections

    codes, connections = asyncio.run(go())
    assert codes == [200, 200, 200]
    assert connections == 1


def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    # httpcore asks the stream whether an idle connection is readable before reusing it;
    # asyncio has already read the end of the stream, so the stream must say so itself.
    async def go() -> tuple[list[str], int]:
        async with Server(answer_once) as server, httpx.AsyncClient(transport=transport()) as c:
            texts = []
            for _ in range(3):
                texts.append((await c.get(server.url())).text)
                await asyncio.sleep(0.05)  # the server's close arrives
            return texts, server.connections

    texts, connections = asyncio.run(go())
    assert texts == ["ok", "ok", "ok"]
    assert connections == 3


def test_a_silent_server_is_a_read_timeout() -> None:
    async def go() -> float:
        async with Server(silent) as server, httpx.AsyncClient(transport=transport()) as c:
            started = time.monotonic()
            with pytest.raises(httpx.ReadTimeout):
                await c.get(server.url(), timeout=httpx.Timeout(5.0, read=0.2))
            return time.monotonic() - started

    assert asyncio.run(go()) < 2.0


def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: refused

        async def go() -> None:
            async with httpx.AsyncClient(transport=transport()) as client:
                await client.get(f"http://127.0.0.1:{port}/")

        with pytest.raises(httpx.ConnectError, match=r"Connect call failed|refused"):
            asyncio.run(go())


def test_tls_to_a_plain_server_is_a_connect_error() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        writer.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        await writer.drain()

    async def go() -> None:
        async with Server(garbage) as server, httpx.AsyncClient(transport=transport()) as c:
            await c.get(server.url("https"))

    with pytest.raises(httpx.ConnectError):
        asyncio.run(go())


def test_a_tls_handshake_that_stalls_is_a_connect_timeout() -> None:
    async def go() -> None:
        async with Server(silent) as server, httpx.AsyncClient(transport=transport()) as c:
            await c.get(server.url("https"), timeout=httpx.Timeout(0.3))

    with pytest.raises(httpx.ConnectTimeout):
        asyncio.run(go())


def _server_tls(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    return context


def _client_tls(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(certificate[0]))


def test_tls_with_a_trusted_certificate(certificate: tuple[Path, Path]) -> None:
    async def go() -> tuple[str, int]:
        async with (
            Server(answer, tls=_server_tls(certificate)) as server,
            httpx.AsyncClient(transport=transport(_client_tls(certificate))) as client,
        ):
            first = await client.get(server.url("https"))
            second = await client.get(server.url("https"))
            stream = first.extensions["network_stream"]
            assert stream.get_extra_info("ssl_object").version().startswith("TLS")
            assert stream.get_extra_info("server_addr") == ("127.0.0.1", server.port)
            assert stream.get_extra_info("client_addr")[0] == "127.0.0.1"
            assert stream.get_extra_info("socket") is not None
            assert stream.get_extra_info("no such thing") is None
            return first.text + second.text, server.connections

    assert asyncio.run(go()) == ("okok", 1)


def test_an_untrusted_certificate_is_refused(certificate: tuple[Path, Path]) -> None:
    async def go() -> None:
        async with (
            Server(answer, tls=_server_tls(certificate)) as server,
            httpx.AsyncClient(transport=transport()) as client,  # certifi's CAs only
        ):
            await client.get(server.url("https"))

    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(go())


def test_closing_a_tls_stream_does_not_wait_for_the_peer(certificate: tuple[Path, Path]) -> None:
    # The server never reads again, so a close_notify goes unanswered.
    async def stalls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(30)

    async def go() -> tuple[float, bool]:
        async with Server(stalls, tls=_server_tls(certificate)) as server:
            backend = AsyncioBackend()
            stream = await backend.connect_tcp("127.0.0.1", server.port, timeout=5.0)
            stream = await stream.start_tls(
                _client_tls(certificate), server_hostname="127.0.0.1", timeout=5.0
            )
            started = time.monotonic()
            await stream.aclose()
            await stream.aclose()  # a second close is harmless
            return time.monotonic() - started, stream.get_extra_info("is_readable")

    took, readable = asyncio.run(go())
    assert took < 1.0
    assert readable  # a closed stream reads as ended: httpcore drops it


def test_socket_options_are_applied() -> None:
    async def go() -> int:
        async with Server(answer) as server:
            stream = await AsyncioBackend().connect_tcp(
                "127.0.0.1",
                server.port,
                socket_options=[(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)],
            )
            try:
                sock = stream.get_extra_info("socket")
                return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE))
            finally:
                await stream.aclose()

    assert asyncio.run(go()) == 1


def test_read_write_and_the_end_of_a_stream() -> None:
    async def echo_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readexactly(5))
        await writer.drain()

    async def go() -> tuple[bytes, bytes, bool]:
        async with Server(echo_once) as server:
            stream = await AsyncioBackend().connect_tcp("127.0.0.1", server.port)
            await stream.write(b"")  # nothing to send: no error
            await stream.write(b"hello", timeout=1.0)
            data = await stream.read(100, timeout=1.0)
            end = await stream.read(100, timeout=1.0)  # the server closed
            readable = stream.get_extra_info("is_readable")
            await stream.aclose()
            return data, end, readable

    assert asyncio.run(go()) == (b"hello", b"", True)


def test_writing_to_a_reset_connection_is_a_write_error() -> None:
    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    async def go() -> None:
        async with Server(reset) as server:
            stream = await AsyncioBackend().connect_tcp("127.0.0.1", server.port)
            await asyncio.sleep(0.1)  # the server aborts: an RST
            for _ in range(50):
                await stream.write(b"x" * 65536, timeout=1.0)
                await asyncio.sleep(0.01)

    with pytest.raises((httpcore.WriteError, httpcore.ReadError)):
        asyncio.run(go())


def test_a_unix_socket(tmp_path: Path) -> None:
    path = str(tmp_path / "s")

    async def go() -> bytes:
        server = await asyncio.start_unix_server(answer, path)
        try:
            stream = await AsyncioBackend().connect_unix_socket(path, timeout=1.0)
            await stream.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            data = await stream.read(1000, timeout=1.0)
            await stream.aclose()
            return data
        finally:
            server.close()

    assert asyncio.run(go()) == OK


def test_the_index_clients_connect_through_this_backend() -> None:
    # Both paths of an index client (through the httpx client, and direct): the
    # connection each answer came on is an AsyncioStream, not httpcore's anyio stream.
    async def go() -> list[type]:
        async with Server(answer) as server, http_clients(1, trust_env=False) as (client,):
            assert client.direct is not None
            through = await client.get(server.url())
            direct = await client.direct.handle_async_request(httpx.Request("GET", server.url()))
            await direct.aread()
            await direct.aclose()
            return [type(r.extensions["network_stream"]) for r in (through, direct)]

    assert asyncio.run(go()) == [AsyncioStream, AsyncioStream]


def test_a_proxied_client_keeps_httpx_transports(monkeypatch: pytest.MonkeyPatch) -> None:
    # httpx reads no proxy from the environment for a client given a transport.
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")

    async def go() -> tuple[bool, bool]:
        async with http_clients(1, trust_env=True) as (client,):
            return client.direct is None, isinstance(client._transport, AsyncioTransport)

    assert asyncio.run(go()) == (True, False)
