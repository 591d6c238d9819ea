"""The dashboard's limits on what a client may send: body size, and failed token attempts.

Notes: docs/internals.md#web.
"""

from __future__ import annotations

import json
import math
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response
from fastapi.routing import APIRoute

MAX_BODY = 1024 * 1024
"""The default limit of a request body, in bytes (webhook deliveries are a few kB)."""
FAILURES = 10
WINDOW_SECONDS = 60.0


def _too_large(limit: int) -> HTTPException:
    return HTTPException(413, f"the request body is over {limit} bytes")


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is a 413, never read whole."""

    def __init__(self, app: Callable[..., Awaitable[None]], limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Before any route reads it: a webhook's signature is checked over the whole body,
        # so an unsigned 300 MB body used to be read whole before its 401.
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await _answer(send, 413, f"the request body is over {self.limit} bytes")
            return
        seen = 0

        async def counted() -> dict[str, Any]:
            nonlocal seen
            message: dict[str, Any] = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    # Raised inside the route's body read: FastAPI and Starlette pass an
                    # HTTPException through to their handler, which answers 413.
                    raise _too_large(self.limit)
            return message

        await self.app(scope, counted, send)


class RefuseNul:
    """ASGI middleware: a NUL byte in the path or the query string is a 400."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        # No name, id or filter of govern's holds a NUL, and the stores misread one:
        # PostgreSQL refuses it in text (a 500), SQLite ends a LIKE pattern at it (all rows).
        if scope["type"] == "http" and _has_nul(scope):
            await _answer(send, 400, "a NUL byte is not allowed in a path or a query")
            return
        await self.app(scope, receive, send)


def _has_nul(scope: dict[str, Any]) -> bool:
    query = bytes(scope.get("query_string", b""))
    # The path arrives decoded; the query string as sent (%00, or a raw byte).
    return "\x00" in scope.get("path", "") or b"\x00" in query or b"%00" in query


def _content_length(scope: dict[str, Any]) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def _answer(send: Any, status: int, detail: str) -> None:
    """A JSON answer sent before the application saw the request (and the connection
    closed: what the client still sends is not read)."""
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


LONE_SURROGATE = "the body holds a lone surrogate escape (\\ud800-\\udfff): not text"


class NotJson(ValueError):
    """A body that is not JSON govern can read: malformed, nested too deep, or holding a
    lone surrogate escape (:class:`LoneSurrogate`)."""


class LoneSurrogate(NotJson):
    """Valid JSON that is no text: a lone surrogate escape in a string or a key."""

    def __init__(self) -> None:
        super().__init__(LONE_SURROGATE)


def has_lone_surrogate(value: Any) -> bool:
    """Whether a parsed JSON value holds a lone surrogate (``"\\ud800"`` is valid JSON and
    parses to a str that UTF-8 cannot encode), in a key or a string at any depth."""
    try:
        # Encoded once in C: cheaper than walking every string, and exactly the test that
        # an answer, a log line or a database would fail later.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_value(body: bytes) -> Any:
    """A JSON body, parsed; :class:`NotJson` for anything else.

    Nesting deep enough to exhaust the parser's recursion (``[[[[...]]]]`` in 1 MiB) is
    RecursionError, not ValueError: a bad request all the same.
    """
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise NotJson("not JSON") from None
    try:
        lone = has_lone_surrogate(value)
    except (ValueError, RecursionError):
        raise NotJson("not JSON") from None
    if lone:
        raise LoneSurrogate
    return value


class StrictJsonRequest(Request):
    """A request whose JSON body may not hold a lone surrogate (a 400, not a 500 later)."""

    async def json(self) -> Any:
        """The body as FastAPI parses it (malformed JSON: its own 422), surrogates refused."""
        if not hasattr(self, "_json"):
            value = await super().json()
            try:
                lone = has_lone_surrogate(value)
            except (ValueError, RecursionError):
                lone = False  # not text anyway: FastAPI's validation answers it
            if lone:
                raise HTTPException(400, LONE_SURROGATE)
        return await super().json()


class StrictJsonRoute(APIRoute):
    """The API's routes: their request bodies are read by :class:`StrictJsonRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """FastAPI's handler, given the strict request."""
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return strict


class Throttle:
    """Failed token attempts per client (sign-ins, bearer tokens, webhook signatures), in a
    sliding window (kept in this process).

    At most ``clients`` addresses are remembered (the least recently failing are
    forgotten first), so a flood of addresses cannot grow it without bound.
    """

    def __init__(
        self,
        failures: int = FAILURES,
        window: float = WINDOW_SECONDS,
        *,
        clock: Callable[[], float] = time.monotonic,
        clients: int = 10_000,
    ) -> None:
        self.failures = failures
        self.window = window
        self.clock = clock
        self.clients = clients
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._seen.get(client)
        if times is None:
            return deque()
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._seen[client]
        return times

    def retry_after(self, client: str) -> int | None:
        """Seconds until ``client`` may try again; None when it may try now."""
        now = self.clock()
        times = self._recent(client, now)
        if len(times) < self.failures:
            return None
        return max(1, math.ceil(times[-self.failures] + self.window - now))

    def failed(self, client: str) -> int:
        """Record a failed attempt; how many ``client`` has in the window now."""
        now = self.clock()
        times = self._recent(client, now)
        self._seen[client] = times
        self._seen.move_to_end(client)
        times.append(now)
        while len(self._seen) > self.clients:
            self._seen.popitem(last=False)
        return len(times)

    def remembered(self) -> int:
        """How many failure times are kept, over every client: at most ``failures`` per
        client when failures are recorded only while :meth:`retry_after` is None."""
        return sum(len(times) for times in self._seen.values())
