"""The index clients' HTTP/1.1 transport (h11 on asyncio), against real sockets on 127.0.0.1.

Each test runs an :func:`asyncio.start_server` in its own event loop, beside the client
under test, so what the server saw (connections, bytes) can be asserted exactly.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from govern.index.client import http_clients, tls_context
from govern.index.transport import H11Transport

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


def transport(verify: ssl.SSLContext | None = None, limits: httpx.Limits = LIMITS) -> H11Transport:
    return H11Transport(verify=verify or tls_context(trust_env=False), limits=limits)


def test_requests_share_one_keep_alive_connection() -> None:
    async def go() -> tuple[list[int], int]:
        async with Server(answer) as server, httpx.AsyncClient(transport=transport()) as client:
            codes = [(await client.get(server.url())).status_code for _ in range(3)]
            return codes, server.connections

    codes, connections = asyncio.run(go())
    assert codes == [200, 200, 200]
    assert connections == 1


def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    # asyncio reads the end of the stream as it comes, so the transport must see it before
    # reusing a connection. POSTs: a failed reuse would not be sent again, and fail.
    async def go() -> tuple[list[str], int]:
        async with Server(answer_once) as server, httpx.AsyncClient(transport=transport()) as c:
            texts = []
            for _ in range(3):
                texts.append((await c.post(server.url(), content=b"x")).text)
                await asyncio.sleep(0.05)  # the server's close arrives
            return texts, server.connections

    texts, connections = asyncio.run(go())
    assert texts == ["ok", "ok", "ok"]
    assert connections == 3


def test_bytes_on_an_idle_connection_are_not_taken_for_the_next_answer() -> None:
    # Node and others send "408 Request Timeout" on an idle keep-alive connection, then
    # close: reused, the 408 would be read as the answer to the next request.
    async def times_out(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(OK)
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1)  # not even closed yet

    async def go() -> tuple[list[int], int]:
        async with Server(times_out) as server, httpx.AsyncClient(transport=transport()) as c:
            first = await c.get(server.url())
            await asyncio.sleep(0.2)
            second = await c.get(server.url())
            return [first.status_code, second.status_code], server.connections

    assert asyncio.run(go()) == ([200, 200], 2)


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


async def _exchange(
    server_handler: Handler, *requests: tuple[str, str], limits: httpx.Limits = LIMITS
) -> tuple[list[httpx.Response | BaseException], int]:
    """Send (method, path) requests in turn; the responses (read) or errors, and connections."""
    async with (
        Server(server_handler) as server,
        httpx.AsyncClient(transport=transport(limits=limits)) as client,
    ):
        out: list[httpx.Response | BaseException] = []
        for method, path in requests:
            try:
                out.append(await client.request(method, server.url() + path))
            except httpx.HTTPError as exc:
                out.append(exc)
        return out, server.connections


def test_a_get_on_a_connection_closed_under_it_is_sent_again() -> None:
    # The server answers the first request, then closes the connection as the second
    # arrives (a keep-alive timeout racing the request): a GET goes once more on a new
    # connection; a POST, which may have had an effect, is an error.
    async def closes_after_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(OK)
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")  # then nothing: the connection closes

    responses, connections = asyncio.run(_exchange(closes_after_one, ("GET", "a"), ("GET", "b")))
    assert [r.status_code for r in responses if isinstance(r, httpx.Response)] == [200, 200]
    assert connections == 2
    responses, _ = asyncio.run(_exchange(closes_after_one, ("GET", "a"), ("POST", "b")))
    assert isinstance(responses[1], httpx.RemoteProtocolError)


def test_connection_close_chunked_and_close_delimited_bodies() -> None:
    bodies = [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nfirst",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nchu\r\n4\r\nnked\r\n0\r\n\r\n",
        b"HTTP/1.0 200 OK\r\n\r\nuntil the end",  # no length: the body ends with the stream
    ]
    answers = iter(bodies)

    async def one_each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            body = next(answers)
            writer.write(body)
            await writer.drain()
            if b"chunked" not in body:
                return  # close: after "Connection: close", and to end the last body

    responses, connections = asyncio.run(
        _exchange(one_each, ("GET", "1"), ("GET", "2"), ("GET", "3"))
    )
    texts = [r.text for r in responses if isinstance(r, httpx.Response)]
    assert texts == ["first", "chunked", "until the end"]
    assert connections == 2  # a new one after "Connection: close"; the chunked one reused


def test_a_body_cut_short_is_a_remote_protocol_error() -> None:
    async def short(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
        await writer.drain()

    (error,), _ = asyncio.run(_exchange(short, ("GET", "")))
    assert isinstance(error, httpx.RemoteProtocolError)


def test_an_answer_that_is_not_http_is_a_remote_protocol_error() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"SSH-2.0-OpenSSH_9.2\r\n\r\n")
        await writer.drain()

    (error,), _ = asyncio.run(_exchange(garbage, ("GET", "")))
    assert isinstance(error, httpx.RemoteProtocolError)


def test_informational_answers_are_skipped_and_the_head_is_kept_as_sent() -> None:
    async def continues(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
        writer.write(b"HTTP/1.1 200 Fine\r\nX-PyPI-Last-Serial: 7\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(1)

    (response,), _ = asyncio.run(_exchange(continues, ("GET", "")))
    assert isinstance(response, httpx.Response)
    assert response.status_code == 200
    assert response.reason_phrase == "Fine"
    assert response.http_version == "HTTP/1.1"
    assert response.headers.raw[0] == (b"X-PyPI-Last-Serial", b"7")


def test_an_idle_connection_past_its_expiry_is_not_reused() -> None:
    async def go() -> int:
        limits = httpx.Limits(max_keepalive_connections=1, keepalive_expiry=0.05)
        async with (
            Server(answer) as server,
            httpx.AsyncClient(transport=transport(limits=limits)) as client,
        ):
            await client.get(server.url())
            await asyncio.sleep(0.15)
            await client.get(server.url())
            return server.connections

    assert asyncio.run(go()) == 2


def test_an_unsupported_scheme() -> None:
    async def go() -> None:
        await transport().handle_async_request(httpx.Request("GET", "ftp://127.0.0.1/"))

    with pytest.raises(httpx.UnsupportedProtocol, match="ftp://"):
        asyncio.run(go())


def test_closing_the_transport_closes_a_response_in_flight(
    certificate: tuple[Path, Path],
) -> None:
    # A TLS peer that never answers again: closing must not wait for its close_notify.
    async def stalls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart")
        await writer.drain()
        await asyncio.sleep(30)

    async def go() -> tuple[float, int]:
        async with Server(stalls, tls=_server_tls(certificate)) as server:
            sent = transport(_client_tls(certificate))
            response = await sent.handle_async_request(httpx.Request("GET", server.url("https")))
            sock = response.extensions["network_stream"].get_extra_info("socket")
            started = time.monotonic()
            await sent.aclose()
            return time.monotonic() - started, sock.fileno()

    took, fileno = asyncio.run(go())
    assert took < 1.0
    assert fileno == -1  # the socket itself is closed: aborted, not a TLS shutdown pending


def test_the_index_clients_use_this_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    async def go() -> tuple[bool, bool]:
        async with http_clients(1, trust_env=False) as (client,):
            return isinstance(client._transport, H11Transport), isinstance(
                client.direct, H11Transport
            )

    assert asyncio.run(go()) == (True, True)
    # httpx reads no proxy from the environment for a client given a transport: a
    # proxied client keeps httpx's own, and has no direct path.
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")

    async def proxied() -> tuple[bool, bool]:
        async with http_clients(1, trust_env=True) as (client,):
            return client.direct is None, isinstance(client._transport, H11Transport)

    assert asyncio.run(proxied()) == (True, False)


def test_a_poll_imports_neither_httpcore_nor_anyio(tmp_path: Path) -> None:
    # httpx imports httpcore only when its own transport is made: govern's clients
    # never make one without a proxy, so neither httpcore nor anyio is loaded.
    code = """
import asyncio, sys
import httpx
from govern.index.client import http_clients

async def go():
    async def answer(reader, writer):
        await reader.readuntil(b"\\r\\n\\r\\n")
        writer.write(b"HTTP/1.1 204 No Content\\r\\n\\r\\n")
        await writer.drain()
    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    async with http_clients(2, trust_env=False) as (one, two):
        assert (await one.get(url)).status_code == 204
        response = await two.direct.handle_async_request(httpx.Request("GET", url))
        await response.aclose()
        assert response.status_code == 204
    server.close()

asyncio.run(go())
print(sorted(m for m in sys.modules if m.split(".")[0] in ("httpcore", "anyio", "sniffio")))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_a_write_the_peer_does_not_read_is_a_write_timeout() -> None:
    async def never_reads(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    async def go() -> None:
        async with Server(never_reads) as server, httpx.AsyncClient(transport=transport()) as c:
            await c.post(server.url(), content=b"x" * (64 * 1024 * 1024), timeout=0.3)

    with pytest.raises(httpx.WriteTimeout):
        asyncio.run(go())


def test_an_empty_body_closed_unread_keeps_the_connection() -> None:
    # A 304 that nobody reads: its (empty) body is complete, the connection goes back.
    async def not_modified(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b'HTTP/1.1 304 Not Modified\r\nETag: "a"\r\n\r\n')
            await writer.drain()

    async def go() -> tuple[list[int], int]:
        async with Server(not_modified) as server:
            sent = transport()
            codes = []
            for _ in range(3):
                response = await sent.handle_async_request(httpx.Request("GET", server.url()))
                codes.append(response.status_code)
                await response.aclose()
            await sent.aclose()
            return codes, server.connections

    assert asyncio.run(go()) == ([304, 304, 304], 1)


def test_a_body_cancelled_half_read_closes_its_connection() -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nten bytes.")
            await writer.drain()
            await asyncio.sleep(0.5)
            writer.write(b"." * 90)
            await writer.drain()

    async def go() -> tuple[int, int]:
        async with Server(slow) as server:
            sent = transport()
            response = await sent.handle_async_request(httpx.Request("GET", server.url()))
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await response.aread()
            await response.aclose()
            response = await sent.handle_async_request(httpx.Request("GET", server.url()))
            assert len(await response.aread()) == 100
            await response.aclose()
            await sent.aclose()
            return server.connections, len(sent._open)

    assert asyncio.run(go()) == (2, 0)


def test_a_protocol_switch_is_refused_at_once() -> None:
    async def switches(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n"
        )
        await writer.drain()
        await asyncio.sleep(5)

    async def go() -> None:
        async with Server(switches) as server, httpx.AsyncClient(transport=transport()) as c:
            headers = {"Upgrade": "x", "Connection": "Upgrade"}
            await c.get(server.url(), headers=headers, timeout=3.0)

    started = time.monotonic()
    with pytest.raises(httpx.RemoteProtocolError, match="101"):
        asyncio.run(go())
    assert time.monotonic() - started < 2.0


def test_max_connections_queues_requests_and_the_pool_timeout_ends_a_wait() -> None:
    async def go() -> tuple[list[int], int]:
        async with Server(answer) as server, httpx.AsyncClient(transport=transport()) as c:
            responses = await asyncio.gather(*(c.get(server.url()) for _ in range(4)))
            # Held open (unread): the one slot is taken. Its short body arrived whole, so
            # closing it unread keeps the connection.
            held = await c.send(c.build_request("GET", server.url()), stream=True)
            with pytest.raises(httpx.PoolTimeout):
                await c.get(server.url(), timeout=httpx.Timeout(5.0, pool=0.1))
            await held.aclose()
            assert (await c.get(server.url())).status_code == 200  # the slot came back
            return [r.status_code for r in responses], server.connections

    assert asyncio.run(go()) == ([200] * 4, 1)


def test_idle_connections_are_bounded_across_origins() -> None:
    async def go() -> tuple[int, int]:
        async with (
            Server(answer) as one,
            Server(answer) as two,
            httpx.AsyncClient(transport=transport()) as c,
        ):
            for url in (one.url(), two.url(), one.url()):
                await c.get(url)
            return one.connections, two.connections

    # One idle connection in all: the one to the first server went when the second's came.
    assert asyncio.run(go()) == (2, 1)


def test_connecting_moves_on_from_an_address_that_never_answers() -> None:
    # Happy eyeballs: a host with two addresses, the first silent (its accept queue full,
    # as a dead address drops SYNs), is reached on the second within the connect timeout.
    async def go() -> tuple[int, float]:
        async with Server(answer) as server:
            port = server.port
            silent_listener = socket.socket()
            silent_listener.bind(("127.0.0.2", port))
            silent_listener.listen(0)
            filling = []
            for _ in range(3):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.2", port))
                filling.append(sock)
            loop = asyncio.get_running_loop()
            real = loop.getaddrinfo

            async def two_addresses(host: Any, *args: Any, **kwargs: Any) -> Any:
                if host in ("twoaddr.test", b"twoaddr.test"):
                    return [
                        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.2", port)),
                        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port)),
                    ]
                return await real(host, *args, **kwargs)

            loop.getaddrinfo = two_addresses  # type: ignore[method-assign]  # this loop only
            try:
                async with httpx.AsyncClient(transport=transport()) as c:
                    started = time.monotonic()
                    response = await c.get(f"http://twoaddr.test:{port}/", timeout=3.0)
                    return response.status_code, time.monotonic() - started
            finally:
                silent_listener.close()
                for sock in filling:
                    sock.close()

    status, took = asyncio.run(go())
    assert status == 200
    assert took < 2.0


@settings(max_examples=40, deadline=None)
@given(
    bodies=st.lists(st.binary(min_size=0, max_size=3000), min_size=1, max_size=3),
    chunked=st.booleans(),
    cuts=st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=8),
)
def test_answers_split_anywhere_are_read_whole_on_one_connection(
    bodies: list[bytes], chunked: bool, cuts: list[int]
) -> None:
    # However the server's bytes are cut into reads (a head split mid-line, a chunk size
    # split from its data), every answer is framed exactly and the connection is reused.
    def framed(body: bytes) -> bytes:
        if not chunked:
            return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        chunks = b"".join(
            b"%x\r\n%s\r\n" % (len(body[i : i + 700]), body[i : i + 700])
            for i in range(0, len(body), 700)
        )
        return b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"

    async def dribble(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for body in bodies:
            await reader.readuntil(b"\r\n\r\n")
            data = framed(body)
            at, step = 0, 0
            while at < len(data):
                size = cuts[step % len(cuts)]
                writer.write(data[at : at + size])
                await writer.drain()
                await asyncio.sleep(0)  # a separate read on the other side, most of the time
                at, step = at + size, step + 1

    async def go() -> tuple[list[bytes], int]:
        async with Server(dribble) as server, httpx.AsyncClient(transport=transport()) as c:
            got = [(await c.get(server.url())).content for _ in bodies]
            return got, server.connections

    assert asyncio.run(go()) == (bodies, 1)
