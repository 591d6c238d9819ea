"""HTTP answers read within bounds: a size counted as the body is decoded, and a deadline.

Notes: docs/internals.md#http.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Collection, Iterator

import httpx

__all__ = [
    "ACCEPT_ENCODING",
    "ERROR_BODY",
    "MAX_LAYERS",
    "BodyTooLarge",
    "answered",
    "exchange",
    "format_size",
    "read_body",
]

# The codings govern decodes itself, bounded (sent as Accept-Encoding on every request,
# so that a server is never invited to use another even when httpx could read it).
ACCEPT_ENCODING = "gzip, deflate"
MAX_LAYERS = 2  # Content-Encoding layers read: "gzip, gzip" at most
# An error answer (4xx, 5xx) is read up to this: its status is the verdict, its body only
# the vendor's explanation.
ERROR_BODY = 64 * 1024
_STEP = 64 * 1024  # bytes one layer gives out at a time
_IDENTITY = "identity"
_UNREAD = ("content-encoding", "content-length", "transfer-encoding")


def format_size(count: int) -> str:
    """A byte count as a user sets it: "20 MB", "64 KB" or "1000 bytes"."""
    if count >= 1024 * 1024 and count % (1024 * 1024) == 0:
        return f"{count // (1024 * 1024)} MB"
    if count >= 1024 and count % 1024 == 0:
        return f"{count // 1024} KB"
    return "1 byte" if count == 1 else f"{count} bytes"


class BodyTooLarge(Exception):
    """An answer's body (decoded, or as sent) is over ``limit`` bytes; ``response`` is the
    answer's status and headers, its body left unread."""

    def __init__(self, limit: int, response: httpx.Response) -> None:
        super().__init__(f"body over {format_size(limit)}")
        self.limit = limit
        self.response = response


class _Inflate:
    """One gzip or deflate layer that gives out at most ``n`` bytes per :meth:`read`."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        # deflate is zlib-wrapped by the RFC, raw in some servers' hands: as httpx does,
        # a first block that is not zlib is read again as raw deflate.
        self._raw_retry = coding == "deflate"
        wbits = zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS  # 16: gzip's header
        self._inflater = zlib.decompressobj(wbits)
        self._pending = b""

    def feed(self, data: bytes) -> None:
        """More input (called once the previous input has been read out)."""
        self._pending += data

    def read(self, n: int) -> bytes:
        """At most ``n`` bytes of output (b"" once the input given is used up)."""
        data = self._pending
        try:
            out = self._inflater.decompress(data, n)
        except zlib.error as exc:
            if self._raw_retry:
                self._raw_retry = False
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                return self.read(n)
            raise httpx.DecodingError(f"{self._coding}: {exc}") from None
        if len(data) >= 2:  # the header has been seen: no second reading any more
            self._raw_retry = False
        self._pending = self._inflater.unconsumed_tail
        return out


class _Decoder:
    """The layers of a ``Content-Encoding``, decoded in turn (the last applied first)."""

    def __init__(self, codings: list[str]) -> None:
        named = [c.strip().lower() for c in codings]
        layers = [c for c in named if c and c != _IDENTITY]
        for coding in layers:
            if coding not in ("gzip", "deflate"):
                shown = coding[:40].encode("ascii", "backslashreplace").decode()
                raise httpx.DecodingError(f"unsupported Content-Encoding {shown!r}")
        if len(layers) > MAX_LAYERS:
            raise httpx.DecodingError(
                f"{len(layers)} Content-Encoding layers (at most {MAX_LAYERS} are read)"
            )
        self._layers = [_Inflate(coding) for coding in reversed(layers)]

    def decode(self, data: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``data`` (at most 64 KB each), made as they are taken."""
        return self._through(0, data)

    def _through(self, depth: int, data: bytes) -> Iterator[bytes]:
        if depth == len(self._layers):
            if data:
                yield data
            return
        layer = self._layers[depth]
        layer.feed(data)
        while piece := layer.read(_STEP):
            yield from self._through(depth + 1, piece)


def _header_int(value: str | None) -> int | None:
    text = (value or "").split(",", 1)[0].strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) < 20 else None


async def read_body(response: httpx.Response, max_bytes: int, *, keep: int | None = None) -> bytes:
    """The body of a streamed ``response``, decoded, at most ``max_bytes`` (else
    :class:`BodyTooLarge`, with nothing more read or decoded).

    ``keep`` keeps only the body's last ``keep`` bytes (a log's end), still refusing a
    body over ``max_bytes``. An unknown or undecodable coding is a
    :class:`httpx.DecodingError`. The response is left open: the caller closes it.
    """
    tail = keep if keep is not None else max_bytes
    if response.is_stream_consumed:  # read already (an httpx.MockTransport's answer)
        data = response.content
        if len(data) > max_bytes:
            raise BodyTooLarge(max_bytes, response)
        return data[-tail:] if keep is not None else data
    declared = _header_int(response.headers.get("Content-Length"))
    if declared is not None and declared > max_bytes:  # refused before a byte is read
        raise BodyTooLarge(max_bytes, response)
    decoder = _Decoder(response.headers.get_list("Content-Encoding", split_commas=True))
    kept = bytearray()
    sent = decoded = 0
    async for raw in response.aiter_raw():
        sent += len(raw)
        if sent > max_bytes:  # empty deflate blocks decode to nothing: count them too
            raise BodyTooLarge(max_bytes, response)
        for piece in decoder.decode(raw):
            decoded += len(piece)
            if decoded > max_bytes:
                raise BodyTooLarge(max_bytes, response)
            kept += piece
            if len(kept) > 2 * tail:  # a tail: cut now and then, not at every piece
                del kept[:-tail]
    if len(kept) > tail:
        del kept[:-tail]
    return bytes(kept)


def answered(head: httpx.Response, body: bytes) -> httpx.Response:
    """A read response of ``head``'s request, status and headers with ``body`` (decoded:
    its coding and length headers are dropped, so that nothing decodes it again)."""
    headers = [(k, v) for k, v in head.headers.multi_items() if k.lower() not in _UNREAD]
    return httpx.Response(head.status_code, headers=headers, content=body, request=head.request)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


async def exchange(
    client: httpx.AsyncClient,
    request: httpx.Request,
    *,
    timeout: float,
    max_bytes: int,
    keep: int | None = None,
    follow_redirects: bool = False,
    credentials: Collection[str] = (),
) -> httpx.Response:
    """``request`` sent and its answer read within ``timeout`` seconds in all (else
    :class:`TimeoutError`) and ``max_bytes`` (else :class:`BodyTooLarge`); an error
    answer's body is read up to :data:`ERROR_BODY` and dropped past it (its status stands).

    With ``follow_redirects`` a GET's redirects are followed, httpx building each hop, under
    the same deadline; a hop to another origin drops the ``credentials`` headers (httpx
    itself drops only ``Authorization``). Errors of httpx propagate.
    """
    # The client's default would offer br and zstd whenever their packages are installed.
    request.headers["Accept-Encoding"] = ACCEPT_ENCODING
    origin = _origin(request.url)
    async with asyncio.timeout(timeout):
        response = await client.send(request, stream=True, follow_redirects=False)
        hops = 0
        while follow_redirects and request.method == "GET" and response.next_request:
            hop = response.next_request
            await response.aclose()  # a redirect's body is never read
            hops += 1
            if hops > client.max_redirects:
                raise httpx.TooManyRedirects("too many redirects", request=hop)
            if _origin(hop.url) != origin:
                for name in credentials:
                    hop.headers.pop(name, None)
            response = await client.send(hop, stream=True, follow_redirects=False)
        try:
            if response.status_code >= 400:
                try:
                    body = await read_body(response, min(max_bytes, ERROR_BODY))
                except BodyTooLarge:
                    body = b""
            else:
                body = await read_body(response, max_bytes, keep=keep)
        finally:
            await response.aclose()
    return answered(response, body)
