"""An httpcore network backend on asyncio's own streams, for the index clients.

httpcore reaches asyncio through anyio (``httpcore._backends.anyio``): loading anyio's
sockets, streams and task groups at the first request costs a ``govern poll`` about 20 ms
of start-up, and every read and write passes through ``anyio.fail_after`` and anyio's
stream layers (bench/poll.py). httpcore documents the network backend as a public seam
(``network_backend=`` of its connection pools), so the index clients plug this one in:
:func:`asyncio.open_connection` for TCP, :meth:`asyncio.StreamWriter.start_tls` for TLS
(the same :class:`ssl.SSLContext`), :func:`asyncio.timeout` for the per-operation
timeouts httpcore asks for. Errors become httpcore's own (``ConnectError``,
``ReadTimeout``, ...), exactly as its anyio backend maps them, so httpx turns them into
the same ``httpx`` exceptions the client already handles. Closing is anyio's: close the
transport, let the loop run once, then abort it, so a peer that never answers a TLS
``close_notify`` cannot hold a poll open.
"""

from __future__ import annotations

import asyncio
import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

# httpcore's SOCKET_OPTION: the arguments of socket.setsockopt.
SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


def _readable(sock: socket.socket | None) -> bool:
    """Whether a read would return at once: data, or the end of the stream (httpcore's test)."""
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection: an asyncio reader and writer pair."""

    __slots__ = ("_reader", "_writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Up to ``max_bytes`` bytes; ``b""`` at the end of the stream."""
        try:
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc) or "timed out reading") from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Send all of ``buffer``, waiting while the kernel's send buffer is full."""
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                self._writer.write(buffer)
                await self._writer.drain()
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc) or "timed out writing") from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        """Close now: no wait for the peer (a TLS ``close_notify`` may go unanswered)."""
        transport = self._writer.transport
        if transport.is_closing():
            return
        transport.close()
        await asyncio.sleep(0)
        transport.abort()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """The same connection, upgraded to TLS (the handshake within ``timeout``)."""
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except BaseException as exc:
            self._writer.transport.abort()  # a failed handshake leaves nothing to say
            if isinstance(exc, TimeoutError):
                raise httpcore.ConnectTimeout(str(exc) or "timed out in the TLS handshake") from exc
            if isinstance(exc, OSError):  # ssl.SSLError included
                raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
            raise
        return self

    def get_extra_info(self, info: str) -> Any:
        """What httpcore asks of a stream: TLS object, addresses, socket, readability."""
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "is_readable":
            # asyncio reads eagerly: an end of stream it has already seen closes the
            # transport (or sits in the reader); else ask the socket, as httpcore does.
            if self._writer.transport.is_closing() or self._reader.at_eof():
                return True
            return _readable(self._writer.get_extra_info("socket"))
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Connects with asyncio alone; see the module docstring."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """A TCP connection (asyncio sets ``TCP_NODELAY``), then ``socket_options``."""
        local = None if local_address is None else (local_address, 0)
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc) or f"timed out connecting to {host}") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self._opened(reader, writer, socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """A connection to a Unix socket (httpx's ``uds=``)."""
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_unix_connection(path)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc) or f"timed out connecting to {path}") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self._opened(reader, writer, socket_options)

    @staticmethod
    def _opened(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        socket_options: Iterable[SocketOption] | None,
    ) -> AsyncioStream:
        stream = AsyncioStream(reader, writer)
        if socket_options:
            sock = writer.get_extra_info("socket")
            try:
                for option in socket_options:
                    sock.setsockopt(*option)
            except OSError:
                writer.transport.abort()
                raise
        return stream

    async def sleep(self, seconds: float) -> None:
        """Pause (httpcore's retries of a failed connect)."""
        await asyncio.sleep(seconds)


class AsyncioTransport(httpx.AsyncHTTPTransport):
    """httpx's HTTP/1.1 transport with its connection pool on :class:`AsyncioBackend`.

    httpx builds its pool without a ``network_backend`` argument; the pool is rebuilt
    here with the same settings (the TLS context, the limits) and this backend.
    """

    def __init__(self, *, verify: ssl.SSLContext, limits: httpx.Limits) -> None:
        super().__init__(verify=verify, limits=limits)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=verify,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=AsyncioBackend(),
        )
