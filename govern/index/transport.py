"""An HTTP/1.1 transport for httpx on h11 and asyncio, for the index clients.

httpx's own transport is httpcore, which reaches asyncio through anyio: loading httpcore
and anyio's asyncio backend costs a ``govern poll`` a third of its import time, and each
request passes through httpcore's pool, locks and anyio's stream layers (bench/poll.py).
The index clients need none of what that buys (HTTP/2, proxies, trio): a slot sends one
GET at a time to one index. So this transport, on httpx's documented seam
(:class:`httpx.AsyncBaseTransport`), speaks HTTP/1.1 with the state machine httpcore uses
(h11, which does all the parsing and framing) over an asyncio protocol of its own, TLS by
:meth:`asyncio.loop.start_tls` with the caller's :class:`ssl.SSLContext`.

What it keeps of httpcore's behaviour:

- at most ``max_connections`` requests at a time (a request waits up to the ``pool``
  timeout: :class:`httpx.PoolTimeout`), at most ``max_keepalive_connections`` idle
  connections in all, each dropped after ``keepalive_expiry``;
- an idle connection is reused only if nothing arrived on it while idle: not the end of
  the stream, nor bytes (a server's "408 Request Timeout" before it closes), which would
  otherwise be read as the next answer;
- a GET sent on a reused connection that the server closed meanwhile, with no byte of an
  answer received, is sent once more on a new connection;
- connecting tries every address of a host, the next after 250 ms (happy eyeballs, RFC
  8305, as anyio does for httpcore);
- the per-operation timeouts of the request's ``timeout`` extension (the TCP connection
  and the TLS handshake share ``connect``);
- errors raised as httpx's own (``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``,
  ...), so the client handles them unchanged.

Not supported, as the index clients never need them: proxies (a proxied client keeps
httpx's transport, see :class:`govern.index.client.IndexHTTP`), HTTP/2, protocol
upgrades (a 101 answer is a :class:`httpx.RemoteProtocolError`). Over TLS the client offers
``http/1.1`` by ALPN (:func:`govern.index.client.tls_context`), so a server that speaks both
(as public indexes and their CDNs do) answers in HTTP/1.1; a server that speaks only HTTP/2
(over TLS, or cleartext h2c) answers with HTTP/2 frames, which end the request with a
:class:`httpx.RemoteProtocolError` that says so.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import h11

from govern.index.lean import httpx

_READ_SIZE = 64 * 1024
_HIGH_WATER = 256 * 1024  # bytes buffered before the socket is no longer read
_MAX_HEAD = 100 * 1024  # the largest response head h11 buffers (httpcore's limit)
_PORTS = {"http": 80, "https": 443}
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS"})
_HAPPY_EYEBALLS = 0.25  # seconds before the next address is tried

Origin = tuple[str, str, int]


def _timeout(request: httpx.Request, kind: str) -> float | None:
    timeouts = request.extensions.get("timeout")
    return timeouts.get(kind) if isinstance(timeouts, dict) else None


class _Socket(asyncio.Protocol):
    """The byte side of a connection: what arrived, the end, flow control both ways."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.ended = False  # the end of the stream, or the connection lost
        self.error: Exception | None = None
        self._arrived: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None  # while the peer is not reading
        self._reading = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self._reading and len(self.buffer) > _HIGH_WATER and self.transport is not None:
            self.transport.pause_reading()
            self._reading = False
        self._wake()

    def eof_received(self) -> None:
        self.ended = True
        self._wake()  # None: the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        arrived, self._arrived = self._arrived, None
        if arrived is not None and not arrived.done():
            arrived.set_result(None)

    def idle(self) -> bool:
        """Nothing arrived and nothing ended: safe to send a request on."""
        transport = self.transport
        return (
            not self.buffer
            and not self.ended
            and transport is not None
            and not transport.is_closing()
        )

    async def read(self, limit: int) -> bytes:
        """Up to ``limit`` bytes that arrived; ``b""`` at the end; the error of a lost link."""
        while not self.buffer:
            if self.ended:
                if self.error is not None:
                    raise self.error
                return b""
            self._arrived = asyncio.get_running_loop().create_future()
            await self._arrived
        data = bytes(self.buffer[:limit])
        del self.buffer[:limit]
        if not self._reading and len(self.buffer) <= _HIGH_WATER // 4 and self.transport:
            self.transport.resume_reading()
            self._reading = True
        return data

    async def write(self, data: bytes) -> None:
        """Send ``data``, waiting while the peer does not read."""
        if self.ended or self.transport is None or self.transport.is_closing():
            raise self.error or ConnectionResetError("the connection was closed")
        self.transport.write(data)
        while self._drained is not None:
            await self._drained
        if self.ended:
            raise self.error or ConnectionResetError("the connection was closed")


class _Connection:
    """One HTTP/1.1 connection: the socket side and h11's state machine."""

    __slots__ = ("h11", "origin", "received", "since", "socket")

    def __init__(self, origin: Origin, socket: _Socket) -> None:
        self.origin = origin
        self.socket = socket
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD)
        self.since = 0.0  # when it went idle (the loop's clock)
        self.received = False  # a byte of the current answer arrived

    def reusable(self) -> bool:
        """Idle on both sides, and nothing arrived or ended since the last answer."""
        return (
            self.h11.our_state is h11.IDLE
            and self.h11.their_state is h11.IDLE
            and self.h11.trailing_data == (b"", False)
            and self.socket.idle()
        )

    def abort(self) -> None:
        """Close at once (no TLS close_notify to wait on)."""
        if self.socket.transport is not None:
            self.socket.transport.abort()

    def get_extra_info(self, info: str) -> Any:
        """httpx's ``network_stream`` extension: TLS object, addresses, socket."""
        names = {"client_addr": "sockname", "server_addr": "peername"}
        transport = self.socket.transport
        return None if transport is None else transport.get_extra_info(names.get(info, info))

    async def send(self, request: httpx.Request) -> None:
        """The request head and body, written within the write timeout."""
        try:
            parts = [
                self.h11.send(
                    h11.Request(
                        method=request.method,
                        target=request.url.raw_path,
                        headers=request.headers.raw,
                    )
                )
            ]
            # An async client builds requests with an async (or dual) stream.
            async for chunk in request.stream:  # type: ignore[union-attr]
                if chunk:
                    parts.append(self.h11.send(h11.Data(data=chunk)))
            parts.append(self.h11.send(h11.EndOfMessage()))
        except h11.LocalProtocolError as exc:
            raise httpx.LocalProtocolError(str(exc), request=request) from exc
        try:
            async with asyncio.timeout(_timeout(request, "write")):
                await self.socket.write(b"".join(part for part in parts if part))
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
            if event is h11.PAUSED:  # only after a 101: a protocol switch
                raise httpx.RemoteProtocolError(
                    "the server switched protocols (HTTP 101): not supported", request=request
                )
            if event is not h11.NEED_DATA:
                return event
            try:
                async with asyncio.timeout(_timeout(request, "read")):
                    data = await self.socket.read(_READ_SIZE)
            except TimeoutError as exc:
                raise httpx.ReadTimeout("timed out reading the response", request=request) from exc
            except OSError as exc:
                raise httpx.ReadError(str(exc) or type(exc).__name__, request=request) from exc
            if not self.received and _is_http2(data):
                raise httpx.RemoteProtocolError(
                    "the server answered in HTTP/2, which this client does not speak "
                    "(HTTP/1.1 only): serve the index over HTTP/1.1 too",
                    request=request,
                )
            self.received = self.received or bool(data)
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


def _is_http2(data: bytes) -> bool:
    """Whether an answer starts with an HTTP/2 SETTINGS or GOAWAY frame on stream 0
    (RFC 9113 4.1: 3 bytes of length, the type, the flags, a 4-byte stream id), which a
    server that speaks only HTTP/2 sends first; an HTTP/1.1 answer starts "HTTP/"."""
    return len(data) >= 9 and data[3] in (0x04, 0x07) and data[5:9] == b"\x00\x00\x00\x00"


class _ResponseBody(httpx.AsyncByteStream):
    """The body of one response; closing it gives the connection back to the transport."""

    def __init__(
        self, transport: H11Transport, connection: _Connection, request: httpx.Request
    ) -> None:
        self._transport = transport
        self._connection: _Connection | None = connection
        self._request = request
        self._complete = False
        self._open = True

    def __aiter__(self) -> _ResponseBody:
        return self

    async def __anext__(self) -> bytes:
        connection = self._connection
        if connection is None or self._complete:
            raise StopAsyncIteration
        try:
            event = await connection.event(self._request)
        except BaseException:  # an error, or cancelled half-read: never reused
            self._connection = None
            self._transport.discard(connection)
            raise
        if isinstance(event, h11.Data):
            return bytes(event.data)
        self._complete = True  # EndOfMessage, or ConnectionClosed for a close-delimited body
        raise StopAsyncIteration

    async def aclose(self) -> None:
        if not self._open:
            return
        self._open = False
        connection, self._connection = self._connection, None
        if connection is not None:
            if not self._complete and connection.h11.their_state is h11.SEND_BODY:
                # An empty or small body left unread (a 304, a short page) may have
                # arrived whole: skip it without waiting for more, and keep the connection.
                try:
                    event = connection.h11.next_event()
                    while isinstance(event, h11.Data):
                        event = connection.h11.next_event()
                except h11.RemoteProtocolError:
                    event = None
                self._complete = isinstance(event, h11.EndOfMessage)
            self._transport.release(connection, complete=self._complete)
        self._transport.done()


class H11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 over asyncio for httpx clients; see the module docstring."""

    def __init__(self, *, verify: ssl.SSLContext, limits: httpx.Limits) -> None:
        self._tls = verify
        keep = limits.max_keepalive_connections
        self._keep = keep if keep is not None else 1 << 30  # None: no limit, as in httpcore
        self._expiry = limits.keepalive_expiry
        most = limits.max_connections
        self._slots = asyncio.Semaphore(most) if most is not None else None
        self._idle: list[_Connection] = []  # oldest first
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
        if self._slots is not None:
            try:
                async with asyncio.timeout(_timeout(request, "pool")):
                    await self._slots.acquire()
            except TimeoutError as exc:
                raise httpx.PoolTimeout("no connection free in time", request=request) from exc
        try:
            connection, head = await self._exchange(origin, request)
        except BaseException:
            self.done()
            raise
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

    async def _exchange(
        self, origin: Origin, request: httpx.Request
    ) -> tuple[_Connection, h11.Response]:
        """Send the request and read the head of its answer, on an idle connection or new."""
        while True:
            connection = self._take(origin)
            reused = connection is not None
            if connection is None:
                connection = await self._connect(origin, request)
            try:
                await connection.send(request)
                return connection, await connection.head(request)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
                self.discard(connection)
                if reused and not connection.received and request.method in _IDEMPOTENT:
                    continue  # closed by the server while idle: once more, on a new one
                raise
            except BaseException:
                self.discard(connection)
                raise

    def _take(self, origin: Origin) -> _Connection | None:
        """An idle connection to ``origin`` still fit for a request; the unfit are closed."""
        now = asyncio.get_running_loop().time()
        found: _Connection | None = None
        for connection in list(self._idle):
            expired = self._expiry is not None and now - connection.since > self._expiry
            if expired or not connection.reusable():
                self._idle.remove(connection)
                self.discard(connection)
            elif found is None and connection.origin == origin:
                found = connection
        if found is not None:
            self._idle.remove(found)
            found.received = False
        return found

    async def _connect(self, origin: Origin, request: httpx.Request) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        transport: asyncio.Transport | None = None
        socket = _Socket()
        try:
            async with asyncio.timeout(_timeout(request, "connect")):
                transport, _ = await loop.create_connection(
                    lambda: socket, host, port, happy_eyeballs_delay=_HAPPY_EYEBALLS
                )
                if scheme == "https":
                    secure = await loop.start_tls(
                        transport, socket, self._tls, server_hostname=host
                    )
                    if secure is None:  # pragma: no cover -- asyncio returns None only if closed
                        raise ConnectionResetError("the connection closed during the handshake")
                    socket.transport = secure
        except BaseException as exc:
            if transport is not None:
                transport.abort()
            if isinstance(exc, TimeoutError):
                message = f"timed out connecting to {host}"
                raise httpx.ConnectTimeout(message, request=request) from exc
            # OSError: refused, unreachable, ssl.SSLError, socket.gaierror; UnicodeError: a
            # host name the idna codec refuses (a label over 63 characters).
            if isinstance(exc, OSError | UnicodeError):
                raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
            raise
        connection = _Connection(origin, socket)
        self._open.add(connection)
        return connection

    def release(self, connection: _Connection, *, complete: bool) -> None:
        """A response ended: keep its connection for the next request, or close it."""
        state = connection.h11
        if complete and state.our_state is h11.DONE and state.their_state is h11.DONE:
            state.start_next_cycle()
            if connection.reusable() and self._keep > 0:
                while len(self._idle) >= self._keep:
                    self.discard(self._idle.pop(0))
                connection.since = asyncio.get_running_loop().time()
                self._idle.append(connection)
                return
        self.discard(connection)

    def done(self) -> None:
        """A request ended (its response closed, or it failed): its slot is free."""
        if self._slots is not None:
            self._slots.release()

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
