"""A fake REST API on 127.0.0.1 for the hosted CI providers' tests: real sockets, no mocks.

:class:`FakeServer` is the life cycle of the index servers of :mod:`fakes.index` (port 0
of 127.0.0.1, a serving thread, idle keep-alive connections closed and every handler
thread joined on stop) with what a fake of a vendor's API needs on top:

- every request is recorded (:class:`Recorded`: method, raw path, query, lower-case
  headers, body) and can be read back with :meth:`FakeServer.sent`;
- faults scripted with :meth:`FakeServer.fail` (429 with the vendor's reset headers,
  5xx, a body that is not JSON) are played instead of the API's answer;
- otherwise a subclass's :meth:`FakeServer.route` answers, with the server's lock held,
  so a fake's state needs no other lock.

The vendors' fakes are :mod:`fakes.github` (GitHub) and :mod:`fakes.ci`
(Buildkite, GitLab).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fakes.index import Handler as IndexHandler
from fakes.index import Reply as IndexReply
from fakes.index import Served

JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it (``path`` keeps its percent-encoding)."""

    method: str
    path: str
    query: Mapping[str, Sequence[str]]
    headers: Mapping[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply(IndexReply):
    """A complete answer (status, body, content type, headers), JSON unless said otherwise."""

    content_type: str | None = JSON_TYPE


def json_reply(status: int, document: Any, headers: Mapping[str, str] | None = None) -> Reply:
    """A JSON answer."""
    return Reply(status, json.dumps(document).encode(), JSON_TYPE, dict(headers or {}))


def invalid_json() -> Reply:
    """A 200 that claims JSON and is not (a proxy's error page, a truncated body)."""
    return Reply(200, b'{"state": "passed", <html>oops', JSON_TYPE)


@dataclass
class _Fault:
    reply: Reply
    method: str | None
    path: str | None
    times: int

    def matches(self, request: Recorded) -> bool:
        return (
            self.times > 0
            and (self.method is None or self.method == request.method)
            and (self.path is None or request.path.endswith(self.path))
        )


class _Handler(IndexHandler):
    """The index servers' handler for every method an API takes (theirs answer GET)."""

    disable_nagle_algorithm = True  # headers and body go out at once, no 40 ms ACK delay
    do_POST = do_PUT = do_PATCH = do_DELETE = IndexHandler.do_GET


class FakeServer(Served):
    """A vendor's API: requests recorded, scripted faults, else :meth:`route`."""

    def __init__(self) -> None:
        super().__init__()
        self.recorded: list[Recorded] = []
        self._faults: list[_Fault] = []

    @property
    def url(self) -> str:
        """The API root (``api-url``): ``http://127.0.0.1:<port>``."""
        return self.base

    def start(self) -> None:
        """Serve on a free port of 127.0.0.1, every method going to :meth:`handle`."""
        super().start()
        assert self._server is not None
        # No client knows the port yet: no request was accepted with the GET-only handler.
        self._server.RequestHandlerClass = _Handler

    # -- scripting ------------------------------------------------------------------------

    def fail(
        self, reply: Reply, *, method: str | None = None, path: str | None = None, times: int = 1
    ) -> None:
        """Answer the next ``times`` requests matching ``method`` and ``path`` (the end of
        the request's path) with ``reply``."""
        with self._lock:
            self._faults.append(_Fault(reply, method, path, times))

    def sent(self, method: str | None = None, path: str | None = None) -> list[Recorded]:
        """The requests received, in order; those matching ``method`` and ``path`` (the
        end of the request's path) when given."""
        with self._lock:
            return [
                r
                for r in self.recorded
                if (method is None or r.method == method)
                and (path is None or r.path.endswith(path))
            ]

    # -- serving --------------------------------------------------------------------------

    def handle(self, handler: IndexHandler, path: str) -> None:
        """Read the request in full, record it and answer it."""
        self.answer(handler, self.receive(handler))

    def receive(self, handler: IndexHandler) -> Reply:
        """Read and record the request; its scripted fault's reply, or :meth:`route`'s."""
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        parts = urlsplit(handler.path)
        request = Recorded(
            method=handler.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
        )
        with self._lock:
            self.recorded.append(request)
            fault = next((f for f in self._faults if f.matches(request)), None)
            if fault is not None:
                fault.times -= 1
            return fault.reply if fault is not None else self.route(request)

    def answer(self, handler: IndexHandler, reply: Reply) -> None:
        """Send ``reply`` (subclasses may answer some replies otherwise)."""
        handler.reply(
            reply.status, reply.body, content_type=reply.content_type, headers=reply.headers
        )

    def route(self, request: Recorded) -> Reply:
        """The API's own answer (subclasses; called with the lock held)."""
        raise NotImplementedError
