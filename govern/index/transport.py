"""An HTTP/1.1 transport for httpx on h11 and asyncio streams, for the index clients.

httpx's own transport is httpcore, which reaches asyncio through anyio: loading httpcore
and anyio's asyncio backend costs a ``govern poll`` a third of its import time, and each
request passes through httpcore's pool, locks and anyio's stream layers (bench/poll.py).
The index clients need none of what that buys (HTTP/2, proxies, trio, a shared pool): a
slot sends one GET at a time to one index. So this transport, on httpx's documented seam
(:class:`httpx.AsyncBaseTransport`), speaks HTTP/1.1 with the same state machine httpcore
uses (h11, which does all the parsing and framing) over :func:`asyncio.open_connection`,
TLS by :meth:`asyncio.StreamWriter.start_tls` with the caller's :class:`ssl.SSLContext`.

What it keeps of httpcore's behaviour: keep-alive connections per origin (at most
``max_keepalive_connections`` idle, dropped after ``keepalive_expiry``); an idle connection
the server has closed is never reused; a GET on a reused connection that the server closed
meanwhile is sent once more on a new one; the per-operation timeouts of the request's
``timeout`` extension; errors raised as httpx's own (``ConnectError``, ``ReadTimeout``,
``RemoteProtocolError``, ...), so the client handles them unchanged. A proxied client
keeps httpx's transport (see :class:`govern.index.client.IndexHTTP`).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import h11
import httpx

_READ_SIZE = 64 * 1024
_MAX_HEAD = 100 * 1024  # the largest response head h11 buffers (httpcore's limit)
_PORTS = {"http": 80, "https": 443}
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS"})

Origin = tuple[str, str, int]


def _timeout(request: httpx.Request, kind: str) -> float | None:
    timeouts = request.extensions.get("timeout")
    return timeouts.get(kind) if isinstance(timeouts, dict) else None


class _Connection:
    """One HTTP/1.1 connection: an asyncio reader and writer, and h11's state machine."""

    __slots__ = ("h11", "origin", "reader", "since", "writer")

    def __init__(
        self, origin: Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.origin = origin
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD)
        self.since = 0.0  # when it went idle (the loop's clock)

    def reusable(self) -> bool:
        """Idle on both sides, and not closed by the server (asyncio read its end)."""
        return (
            self.h11.our_state is h11.IDLE
            and self.h11.their_state is h11.IDLE
            and not self.writer.transport.is_closing()
            and not self.reader.at_eof()
        )

    def abort(self) -> None:
        """Close at once (no TLS close_notify to wait on)."""
        self.writer.transport.abort()

    def get_extra_info(self, info: str) -> Any:
        """httpx's ``network_stream`` extension: TLS object, addresses, socket."""
        names = {"client_addr": "sockname", "server_addr": "peername"}
        return self.writer.get_extra_info(names.get(info, info))

    async def send(self, request: httpx.Request) -> None:
        """The request head and body, written within the write timeout."""
        try:
            data = (
                self.h11.send(
                    h11.Request(
                        method=request.method,
                        target=request.url.raw_path,
                        headers=request.headers.raw,
                    )
                )
                or b""
            )
            # An async client builds requests with an async (or dual) stream.
            async for chunk in request.stream:  # type: ignore[union-attr]
                if chunk:
                    data += self.h11.send(h11.Data(data=chunk)) or b""
            data += self.h11.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from exc
        try:
            async with asyncio.timeout(_timeout(request, "write")):
                self.writer.write(data)
                await self.writer.drain()
        except TimeoutError as exc:
            raise httpx.WriteTimeout("timed out writing the request", request=request) from exc
        except OSError as exc:
            raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc

    async def event(self, request: httpx.Request) -> Any:
        """h11's next event, reading from the socket as it needs (within the read timeout)."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=request) from exc
            if event is not h11.NEED_DATA:
                return event
            try:
                async with asyncio.timeout(_timeout(request, "read")):
                    data = await self.reader.read(_READ_SIZE)
            except TimeoutError as exc:
                raise httpx.ReadTimeout("timed out reading the response", request=request) from exc
            except OSError as exc:
                raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
            try:
                self.h11.receive_data(data)  # b"": the end of the stream
            except h11.RemoteProtocolError as exc:
                raise httpx.RemoteProtocolError(str(exc), request=request) from exc

    async def head(self, request: httpx.Request) -> h11.Response:
        """The response head (1xx answers skipped)."""
        while True:
            event = await self.event(request)
            if isinstance(event, h11.Response):
                return event
            if isinstance(event, h11.ConnectionClosed):
                raise httpx.RemoteProtocolError(
                    "Server disconnected without sending a response.", request=request
                )


class _ResponseBody(httpx.AsyncByteStream):
    """The body of one response; its end gives the connection back to the transport."""

    def __init__(
        self, transport: H11Transport, connection: _Connection, request: httpx.Request
    ) -> None:
        self._transport = transport
        self._connection: _Connection | None = connection
        self._request = request
        self._complete = False

    def __aiter__(self) -> _ResponseBody:
        return self

    async def __anext__(self) -> bytes:
        connection = self._connection
        if connection is None or self._complete:
            raise StopAsyncIteration
        try:
            event = await connection.event(self._request)
        except BaseException:
            self._connection = None
            self._transport.discard(connection)
            raise
        if isinstance(event, h11.Data):
            return bytes(event.data)
        self._complete = True  # EndOfMessage, or ConnectionClosed for a close-delimited body
        raise StopAsyncIteration

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if not self._complete and connection.h11.their_state is h11.SEND_BODY:
            # An empty or fully buffered body (a 304, a small page) may be complete already.
            try:
                event = connection.h11.next_event()
            except h11.RemoteProtocolError:
                event = None
            self._complete = isinstance(event, h11.EndOfMessage)
        self._transport.release(connection, complete=self._complete)


class H11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio for httpx clients; see the module docstring."""

    def __init__(self, *, verify: ssl.SSLContext, limits: httpx.Limits) -> None:
        self._tls = verify
        keep = limits.max_keepalive_connections
        self._keep = keep if keep is not None else 1 << 30  # None: no limit, as in httpcore
        self._expiry = limits.keepalive_expiry
        self._idle: dict[Origin, list[_Connection]] = {}
        self._open: set[_Connection] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return its response, whose body streams from the socket."""
        url = request.url
        scheme = url.scheme
        if scheme not in _PORTS:
            raise httpx.UnsupportedProtocol(
                f"Request URL has an unsupported protocol '{scheme}://'.", request=request
            )
        host = url.raw_host.decode("ascii")
        if not host:
            raise httpx.UnsupportedProtocol("Request URL has no host.", request=request)
        origin = (scheme, host, url.port or _PORTS[scheme])
        while True:
            connection = self._take(origin)
            reused = connection is not None
            if connection is None:
                connection = await self._connect(origin, request)
            try:
                await connection.send(request)
                head = await connection.head(request)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
                self.discard(connection)
                if reused and request.method in _IDEMPOTENT:
                    continue  # the server closed it while idle: once more, on a new one
                raise
            except BaseException:
                self.discard(connection)
                raise
            break
        return httpx.Response(
            status_code=head.status_code,
            headers=head.headers.raw_items(),
            stream=_ResponseBody(self, connection, request),
            extensions={
                "http_version": b"HTTP/" + head.http_version,
                "reason_phrase": head.reason,
                "network_stream": connection,
            },
        )

    def _take(self, origin: Origin) -> _Connection | None:
        """An idle connection to ``origin`` that can still be used, if any."""
        idle = self._idle.get(origin)
        now = asyncio.get_running_loop().time()
        while idle:
            connection = idle.pop()
            if connection.reusable() and (
                self._expiry is None or now - connection.since <= self._expiry
            ):
                return connection
            self.discard(connection)
        return None

    async def _connect(self, origin: Origin, request: httpx.Request) -> _Connection:
        scheme, host, port = origin
        writer: asyncio.StreamWriter | None = None
        try:
            async with asyncio.timeout(_timeout(request, "connect")):
                reader, writer = await asyncio.open_connection(host, port)
                if scheme == "https":
                    await writer.start_tls(self._tls, server_hostname=host)
        except BaseException as exc:
            if writer is not None:
                writer.transport.abort()
            if isinstance(exc, TimeoutError):
                raise httpx.ConnectTimeout(
                    f"timed out connecting to {host}", request=request
                ) from exc
            if isinstance(exc, OSError):  # ssl.SSLError and socket.gaierror included
                raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
            raise
        connection = _Connection(origin, reader, writer)
        self._open.add(connection)
        return connection

    def release(self, connection: _Connection, *, complete: bool) -> None:
        """A response ended: keep its connection for the next request, or close it."""
        state = connection.h11
        if complete and state.our_state is h11.DONE and state.their_state is h11.DONE:
            state.start_next_cycle()
            idle = self._idle.setdefault(connection.origin, [])
            if len(idle) < self._keep and connection.reusable():
                connection.since = asyncio.get_running_loop().time()
                idle.append(connection)
                return
        self.discard(connection)

    def discard(self, connection: _Connection) -> None:
        """Close a connection and forget it."""
        connection.abort()
        self._open.discard(connection)

    async def aclose(self) -> None:
        """Close every connection, idle or not."""
        for connection in list(self._open):
            self.discard(connection)
        self._idle.clear()
        await asyncio.sleep(0)  # the transports' close callbacks run
