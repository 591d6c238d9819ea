"""Hostile servers on 127.0.0.1: an HTTP server whose answer is a compression bomb or a
body trickled a byte at a time, and an SMTP server that trickles a reply.

They are not vendors' fakes: each answers any request the same way, as an attacker (or a
broken proxy) would, so that one server serves the index client, the CI and forge API
client and the chat webhook alike.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import socket
import threading
import time
import zlib
from collections.abc import Mapping
from types import TracebackType
from typing import Self

__all__ = ["HostileHTTP", "TrickleSMTP", "double_gzip"]


@functools.cache
def double_gzip(size: int) -> bytes:
    """``size`` zero bytes gzipped twice: a few hundred bytes that inflate to ``size``
    (sent as ``Content-Encoding: gzip, gzip``)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(1024 * 1024)
    parts = [packer.compress(block) for _ in range(size // len(block))]
    parts.append(packer.compress(bytes(size % len(block))))
    parts.append(packer.flush())
    return gzip.compress(b"".join(parts), compresslevel=9, mtime=0)


class _Server:
    """A listening socket on 127.0.0.1 and a thread per connection."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)  # a blocked accept() would not see the stop
        self.port: int = self._listener.getsockname()[1]
        self.stopping = threading.Event()
        self.connections = 0
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> Self:
        self._accepting.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stopping.set()
        self._accepting.join(5)
        self._listener.close()
        for thread in self._threads:
            thread.join(5)

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed: the server stops
                return
            conn.settimeout(None)
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # the client went away
            self.converse(conn)

    def converse(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def trickle(self, conn: socket.socket, data: bytes, every: float) -> None:
        """``data`` one byte at a time, ``every`` seconds apart (until stopped)."""
        for byte in data:
            if self.stopping.wait(every):
                return
            conn.sendall(bytes([byte]))


class HostileHTTP(_Server):
    """Answers every request with ``status``, ``headers`` and ``body``; with ``every``
    set, the body goes out one byte each ``every`` seconds (its Content-Length declared)."""

    def __init__(
        self,
        body: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        status: int = 200,
        every: float | None = None,
    ) -> None:
        super().__init__()
        self.body = body
        self.headers = dict(headers or {})
        self.status = status
        self.every = every

    @property
    def url(self) -> str:
        """The server's root URL."""
        return f"http://127.0.0.1:{self.port}"

    def converse(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        length = 0
        while line := reader.readline(65536):  # the request's head
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        reader.read(length)
        head = [f"HTTP/1.1 {self.status} Hostile", f"Content-Length: {len(self.body)}"]
        head += [f"{name}: {value}" for name, value in self.headers.items()]
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        if self.every is None:
            conn.sendall(self.body)
        else:
            self.trickle(conn, self.body, self.every)


class TrickleSMTP(_Server):
    """An SMTP server (RFC 5321) that answers at once until the client sends a line
    starting with ``slow_after`` ("" for the greeting itself), then trickles its reply a
    byte each ``every`` seconds, for ``for_seconds`` at most (then hangs up)."""

    def __init__(self, *, slow_after: str = "", every: float = 0.2, for_seconds: float = 8.0):
        super().__init__()
        self.slow_after = slow_after
        self.every = every
        self.for_seconds = for_seconds
        self.received: list[str] = []  # the client's lines, in order

    def converse(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        if self.slow_after == "":
            self._slowly(conn, b"220 hostile.invalid ESMTP\r\n")
            return
        conn.sendall(b"220 hostile.invalid ESMTP\r\n")
        in_data = False
        while line := reader.readline(65536):
            text = line.decode("latin-1").rstrip("\r\n")
            self.received.append(text)
            if in_data and text != ".":
                continue
            if text.upper().startswith(self.slow_after):
                self._slowly(conn, b"250 taken\r\n")
                return
            in_data = False
            verb = text.split(" ", 1)[0].upper()
            if verb == "EHLO":
                conn.sendall(b"250-hostile.invalid\r\n250 8BITMIME\r\n")
            elif verb == "DATA":
                in_data = True
                conn.sendall(b"354 go ahead\r\n")
            elif verb == "QUIT":
                conn.sendall(b"221 bye\r\n")
                return
            else:
                conn.sendall(b"250 ok\r\n")

    def _slowly(self, conn: socket.socket, reply: bytes) -> None:
        """A multiline reply that never ends, a byte at a time, for ``for_seconds``."""
        end = time.monotonic() + self.for_seconds
        filler = reply[:3] + b"-" + b"x" * 60 + b"\r\n"
        while time.monotonic() < end:
            for byte in filler:
                if time.monotonic() >= end or self.stopping.wait(self.every):
                    return
                conn.sendall(bytes([byte]))
