"""The index client's status, retry, redirect and index-choice logic, on httpx.MockTransport:
a handler answers, every request it saw is asserted; no socket, no wait (the wire: test_client.py).
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import itertools
import logging
import random
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any

import httpx
import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version

from fakes.index import HTML_TYPE, JSON_TYPE, LEGACY_HTML_TYPE, html_page, json_page
from fakes.sleeps import Sleeps, run
from govern.index.client import ACCEPT, IndexClient
from govern.index.model import Fetched, FetchFailed, FetchResult, NotModified, Validators
from govern.index.pipconfig import IndexSettings

INDEX = "https://index.test/simple/"
DEMO = f"{INDEX}demo/"
SECRET = "s3cret-t0ken"
FILES = "https://index.test/files/"  # where json_page's ../../files/ links lead from DEMO

Answer = Callable[[httpx.Request], httpx.Response]
Handler = (
    Callable[[httpx.Request], httpx.Response]
    | Callable[[httpx.Request], Coroutine[None, None, httpx.Response]]
)


# -- answers ------------------------------------------------------------------------------------


def reply(
    status: int = 200,
    body: bytes = b"",
    *,
    content_type: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """A complete response, built afresh for each request."""

    def answer(request: httpx.Request) -> httpx.Response:
        sent = dict(headers or {})
        if content_type is not None:
            sent["Content-Type"] = content_type
        return httpx.Response(status, headers=sent, content=body)

    return answer


def page(
    name: str = "demo",
    files: Sequence[str] = (),
    *,
    serial: int | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """A PEP 691 JSON page listing files (under ../../files/)."""
    return reply(
        body=json_page(name, files, serial=serial), content_type=JSON_TYPE, headers=headers
    )


def html(
    name: str = "demo",
    files: Sequence[str] = (),
    *,
    content_type: str = LEGACY_HTML_TYPE,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """A PEP 503 HTML page listing files (under ../../files/)."""
    return reply(body=html_page(name, files), content_type=content_type, headers=headers)


def redirect(location: str, status: int = 302) -> Answer:
    return reply(status, headers={"Location": location})


def raising(exc: Exception) -> Answer:
    """An answer that is an exception raised by the transport (an httpx one knows its request)."""

    def answer(request: httpx.Request) -> httpx.Response:
        if isinstance(exc, httpx.RequestError):
            exc.request = request
        raise exc

    return answer


class Body:
    """An unsized body streamed in chunks of JSON whitespace; counts the chunks read.

    ``fail_after`` chunks, the transport raises instead (a connection lost mid-body).
    """

    def __init__(self, chunks: int, size: int = 64 * 1024, fail_after: int | None = None) -> None:
        self.chunks, self.size, self.fail_after = chunks, size, fail_after
        self.read = 0  # chunks handed out, over every response that streamed this body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for sent in range(self.chunks):
            if sent == self.fail_after:
                raise httpx.RemoteProtocolError("peer closed connection")
            self.read += 1
            yield b" " * self.size


async def forever(request: httpx.Request) -> httpx.Response:
    """A handler that never answers."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def streamed(body: Body, *, headers: Mapping[str, str] | None = None) -> Answer:
    """A 200 JSON answer whose body is ``body`` (chunked, unless headers set a length)."""

    def answer(request: httpx.Request) -> httpx.Response:
        sent = {"Content-Type": JSON_TYPE, **(headers or {})}
        return httpx.Response(200, headers=sent, content=body)

    return answer


class Index:
    """A MockTransport handler: each URL answers its script in turn (the last answer repeats),
    any other URL a 404; every request is kept in :attr:`seen`."""

    def __init__(self, routes: Mapping[str, Answer | Sequence[Answer]] | None = None) -> None:
        self.routes = {
            url: [script] if callable(script) else list(script)
            for url, script in (routes or {}).items()
        }
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        script = self.routes.get(str(request.url))
        if not script:
            return httpx.Response(404)
        answer = script.pop(0) if len(script) > 1 else script[0]
        return answer(request)

    @property
    def urls(self) -> list[str]:
        return [str(request.url) for request in self.seen]


# -- running the client ----------------------------------------------------------------------


def settings(
    index: str = INDEX,
    *extra: str,
    per_package: Mapping[str, str] | None = None,
    trusted: Sequence[str] = (),
) -> IndexSettings:
    return IndexSettings(
        index, extra, dict(per_package or {}), source="test", trusted_redirects=tuple(trusted)
    )


def client(
    handler: Handler,
    index: IndexSettings | str = INDEX,
    *,
    sleeps: Sleeps,
    max_redirects: int = 20,
    auth: httpx.Auth | None = None,
    **options: Any,
) -> tuple[httpx.AsyncClient, IndexClient]:
    """An IndexClient on a MockTransport (redirects left to it; no netrc file read)."""
    http = httpx.AsyncClient(
        transport=httpx.MockTransport(handler),
        follow_redirects=False,
        max_redirects=max_redirects,
        auth=auth,
    )
    chosen = settings(index) if isinstance(index, str) else index
    return http, IndexClient(http, chosen, sleep=sleeps, **{"netrc": False, **options})


def fetch(
    handler: Handler,
    name: str = "demo",
    validators: Validators | None = None,
    *,
    index: IndexSettings | str = INDEX,
    **options: Any,
) -> tuple[FetchResult, list[float]]:
    """One fetch: its result and the pauses it asked for (none waited)."""
    sleeps = Sleeps()

    async def go() -> FetchResult:
        http, index_client = client(handler, index, sleeps=sleeps, **options)
        async with http:
            return await index_client.fetch(name, validators)

    return run(go()), sleeps.delays


def fetch_many(
    handler: Handler,
    names: Iterable[str],
    validators: Mapping[str, Validators] | None = None,
    *,
    on_done: Callable[[str, FetchResult], None] | None = None,
    **options: Any,
) -> dict[str, FetchResult]:
    async def go() -> dict[str, FetchResult]:
        http, index_client = client(handler, sleeps=Sleeps(), **options)
        async with http:
            return await index_client.fetch_many(names, validators, on_done=on_done)

    return run(go())


def fetched(result: FetchResult) -> Fetched:
    assert isinstance(result, Fetched), result
    return result


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def other_origin(status: int, target: str) -> str:
    """The reason of a redirect that is not followed."""
    return (
        f"HTTP {status}: redirected to {target}, another origin than the index's "
        "(not followed: list it in trusted-redirects to allow it)"
    )


# -- pages --------------------------------------------------------------------------------------


def test_a_json_page_is_parsed_with_its_validators_and_freshness() -> None:
    headers = {
        "ETag": '"v1"',
        "Last-Modified": "Thu, 03 Dec 2026 04:00:00 GMT",
        "Cache-Control": "max-age=600",
    }
    index = Index({DEMO: page("demo", ["demo-1.0.tar.gz"], serial=7, headers=headers)})
    result, delays = fetch(index, "Demo")
    page_ = fetched(result).page
    assert (fetched(result).requests, fetched(result).fresh_for, delays) == (1, 600.0, [])
    assert (page_.name, page_.format, page_.api_version, page_.last_serial) == (
        "demo",
        "json",
        "1.1",
        7,
    )
    assert (page_.etag, page_.last_modified, page_.index_url) == (
        '"v1"',
        "Thu, 03 Dec 2026 04:00:00 GMT",
        INDEX,
    )
    (file,) = page_.files
    assert (file.url, file.version) == (f"{FILES}demo-1.0.tar.gz", Version("1.0"))
    (request,) = index.seen
    assert (request.method, str(request.url)) == ("GET", DEMO)
    assert request.headers["Accept"] == ACCEPT
    assert {"if-none-match", "if-modified-since", "authorization"}.isdisjoint(request.headers)


@pytest.mark.parametrize(
    "content_type", [LEGACY_HTML_TYPE, f"{LEGACY_HTML_TYPE}; charset=utf-8", HTML_TYPE]
)
def test_an_html_page_is_read_by_its_content_type_whatever_was_asked(content_type: str) -> None:
    # An index that ignores Accept (JSON first) and answers HTML is read as HTML.
    index = Index({DEMO: html("demo", ["demo-1.0.tar.gz"], content_type=content_type)})
    result, _ = fetch(index)
    page_ = fetched(result).page
    assert (page_.format, page_.last_serial, result.requests) == ("html", None, 1)
    assert [(f.url, f.version) for f in page_.files] == [
        (f"{FILES}demo-1.0.tar.gz", Version("1.0"))
    ]
    assert index.seen[0].headers["Accept"] == ACCEPT


@pytest.mark.parametrize("index_url", ["https://index.test/simple", "https://index.test/simple/"])
def test_the_page_asked_is_the_canonical_name_under_the_index(index_url: str) -> None:
    index = Index({"https://index.test/simple/zope-interface/": page("zope-interface")})
    result, _ = fetch(index, "Zope.Interface", index=index_url)
    assert fetched(result).page.name == "zope-interface"
    assert index.urls == ["https://index.test/simple/zope-interface/"]


# -- validators and serials ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("validators", "sent"),
    [
        (
            Validators('"v1"', "Thu, 03 Dec 2026 04:00:00 GMT", 7),
            {"If-None-Match": '"v1"', "If-Modified-Since": "Thu, 03 Dec 2026 04:00:00 GMT"},
        ),
        (Validators(etag='"v1"'), {"If-None-Match": '"v1"'}),
        (
            Validators(last_modified="Thu, 03 Dec 2026 04:00:00 GMT"),
            {"If-Modified-Since": "Thu, 03 Dec 2026 04:00:00 GMT"},
        ),
    ],
)
def test_a_304_to_a_conditional_request_is_not_modified(
    validators: Validators, sent: dict[str, str]
) -> None:
    index = Index({DEMO: reply(304, headers={"Cache-Control": "max-age=30", "Age": "10"})})
    result, delays = fetch(index, "demo", validators)
    assert result == NotModified("demo", requests=1, fresh_for=20.0)
    assert delays == []
    (request,) = index.seen
    conditional = {"if-none-match", "if-modified-since"}
    assert {k: v for k, v in request.headers.items() if k in conditional} == {
        k.lower(): v for k, v in sent.items()
    }


@pytest.mark.parametrize("validators", [None, Validators(last_serial=7), Validators()])
def test_a_304_to_an_unconditional_request_is_a_failure(validators: Validators | None) -> None:
    index = Index({DEMO: reply(304)})
    result, delays = fetch(index, "demo", validators)
    assert result == FetchFailed("demo", "HTTP 304 to a request without validators", 304, False, 1)
    assert (len(index.seen), delays) == (1, [])
    assert {"if-none-match", "if-modified-since"}.isdisjoint(index.seen[0].headers)


def test_a_page_whose_serial_went_backwards_is_stale() -> None:
    # A lagging mirror (or CDN node) serves an older state of the project: retried next poll.
    index = Index({DEMO: page(serial=5)})
    result, delays = fetch(index, "demo", Validators('"v1"', last_serial=7))
    assert result == FetchFailed("demo", "stale page (serial 5 < 7)", 200, True, 1)
    assert (len(index.seen), delays) == (1, [])
    # The same serial is not stale, nor a higher one.
    for known in (5, 4):
        again, _ = fetch(index, "demo", Validators(last_serial=known))
        assert fetched(again).page.last_serial == 5


def test_the_serial_header_counts_for_html_pages() -> None:
    index = Index({DEMO: html(headers={"X-PyPI-Last-Serial": "3"})})
    result, _ = fetch(index, "demo", Validators(last_serial=4))
    assert result == FetchFailed("demo", "stale page (serial 3 < 4)", 200, True, 1)
    again, _ = fetch(index, "demo", Validators(last_serial=3))
    assert (fetched(again).page.format, fetched(again).page.last_serial) == ("html", 3)


@pytest.mark.parametrize(
    ("answer", "known", "serial"),
    [
        (page(serial=9, headers={"X-PyPI-Last-Serial": "2"}), 8, 9),  # the page's own wins
        (page(headers={"X-PyPI-Last-Serial": "2"}), 2, 2),  # a JSON page without one: the header
        (html(headers={"X-PyPI-Last-Serial": "3, 4"}), 3, 3),  # a repeated header: the first
        (html(headers={"X-PyPI-Last-Serial": "three"}), 100, None),  # unreadable: none, and
        (html(headers={"X-PyPI-Last-Serial": "-3"}), 100, None),  # a page without is not stale
        (html(), 100, None),
    ],
)
def test_which_serial_a_page_has(answer: Answer, known: int, serial: int | None) -> None:
    result, _ = fetch(Index({DEMO: answer}), "demo", Validators(last_serial=known))
    assert fetched(result).page.last_serial == serial


# -- final answers ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [404, 410])
def test_a_project_not_on_the_index_is_final(status: int) -> None:
    index = Index({DEMO: reply(status, b"gone", content_type="text/plain")})
    result, delays = fetch(index)
    assert result == FetchFailed("demo", "not on the index", status, False, 1)
    assert (index.urls, delays) == ([DEMO], [])


@pytest.mark.parametrize("status", [401, 403])
def test_401_and_403_name_the_host_and_never_the_secret(status: int) -> None:
    index = Index({DEMO: reply(status)})
    result, delays = fetch(index, index=f"https://ci:{SECRET}@index.test/simple/")
    assert result == FetchFailed(
        "demo",
        f"HTTP {status}: the credentials for index.test are missing or wrong "
        "(put them in the index URL, or in ~/.netrc for that host)",
        status,
        False,
        1,
    )
    assert SECRET not in repr(result)
    assert (index.urls, delays) == ([DEMO], [])  # no userinfo in the URL asked


def test_the_index_url_credentials_are_sent_as_basic_auth() -> None:
    def needs_auth(request: httpx.Request) -> httpx.Response:
        if request.headers.get("Authorization") == basic("ci", "p@ss word"):
            return page()(request)
        return httpx.Response(401)

    index = Index({DEMO: needs_auth})
    good, _ = fetch(index, index="https://ci:p%40ss%20word@index.test/simple/")
    assert fetched(good).page.index_url == INDEX  # credentials never shown
    wrong, _ = fetch(index, index=f"https://ci:{SECRET}@index.test/simple/")
    none, _ = fetch(index)
    assert isinstance(wrong, FetchFailed)
    assert isinstance(none, FetchFailed)
    assert (wrong.status, wrong.requests, none.status, none.requests) == (401, 1, 401, 1)
    assert [r.headers.get("Authorization") for r in index.seen] == [
        basic("ci", "p@ss word"),
        basic("ci", SECRET),
        None,
    ]
    assert index.urls == [DEMO] * 3


@pytest.mark.parametrize(
    ("answer", "reason", "status"),
    [
        (reply(400), "HTTP 400", 400),
        (reply(405), "HTTP 405", 405),
        (reply(418, b"teapot", content_type="text/plain"), "HTTP 418", 418),
        (reply(451), "HTTP 451", 451),
        (reply(204), "HTTP 204", 204),
        (reply(302), "HTTP 302", 302),  # a redirect without a Location
        (reply(399), "HTTP 399", 399),
    ],
)
def test_other_statuses_are_final(answer: Answer, reason: str, status: int) -> None:
    index = Index({DEMO: answer})
    result, delays = fetch(index)
    assert result == FetchFailed("demo", reason, status, False, 1)
    assert (index.urls, delays) == ([DEMO], [])


# -- retries ------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 599])
def test_429_and_5xx_are_retried_then_recorded(status: int) -> None:
    index = Index({DEMO: reply(status)})
    result, delays = fetch(index, attempts=4)
    assert result == FetchFailed("demo", f"HTTP {status} after 4 attempts", status, True, 4)
    assert index.urls == [DEMO] * 4
    assert len(delays) == 3  # a pause between attempts, none after the last


def test_one_attempt_means_no_retry() -> None:
    index = Index({DEMO: reply(503, headers={"Retry-After": "3600"})})
    result, delays = fetch(index, attempts=1)
    assert result == FetchFailed("demo", "HTTP 503 after 1 attempt", 503, True, 1)
    assert (len(index.seen), delays) == (1, [])


def test_500_then_200_succeeds_after_a_jittered_backoff() -> None:
    index = Index({DEMO: [reply(500), reply(502), page()]})
    result, delays = fetch(index, backoff=0.5)
    assert fetched(result).requests == 3
    assert index.urls == [DEMO] * 3
    first, second = delays
    assert 0 <= first <= 0.5
    assert 0 <= second <= 1.0


def test_500_then_200_is_two_requests() -> None:
    index = Index({DEMO: [reply(500), page()]})
    result, delays = fetch(index)
    assert (fetched(result).requests, len(index.seen), len(delays)) == (2, 2, 1)


@pytest.mark.parametrize(
    ("backoff", "ceilings"), [(0.5, [0.5, 1.0, 2.0]), (40.0, [40.0, 60.0, 60.0])]
)
def test_the_backoff_is_full_jitter_under_a_doubling_capped_ceiling(
    monkeypatch: pytest.MonkeyPatch, backoff: float, ceilings: list[float]
) -> None:
    drawn: list[tuple[float, float]] = []

    def highest(low: float, high: float) -> float:
        drawn.append((low, high))
        return high

    monkeypatch.setattr(random, "uniform", highest)  # what govern.http.retry draws its jitter from
    result, delays = fetch(Index({DEMO: reply(500)}), attempts=4, backoff=backoff)
    assert result.requests == 4
    assert drawn == [(0.0, ceiling) for ceiling in ceilings]
    assert delays == ceilings


@pytest.mark.parametrize(
    ("headers", "delay"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"Retry-After": "300"}, 300.0),  # the cap itself is honoured
        ({"Retry-After": "0"}, 0.0),
        ({"Retry-After": "Thu, 01 Jan 2015 00:00:00 GMT"}, 0.0),  # a date past: now
        ({"RateLimit-Reset": "5"}, 5.0),  # a rate-limit reset in seconds
    ],
)
@pytest.mark.parametrize("status", [429, 503])
def test_a_server_s_wait_is_honoured(status: int, headers: dict[str, str], delay: float) -> None:
    index = Index({DEMO: [reply(status, headers=headers), page()]})
    result, delays = fetch(index)
    assert fetched(result).requests == 2
    assert (len(index.seen), delays) == (2, [delay])


def test_retry_after_as_an_http_date_is_honoured() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    index = Index({DEMO: [reply(503, headers={"Retry-After": when}), page()]})
    result, delays = fetch(index)
    assert fetched(result).requests == 2
    (delay,) = delays
    assert 27.0 <= delay <= 30.0  # the date has whole seconds


@pytest.mark.parametrize(
    ("retry_after", "cap", "reason"),
    [
        ("3600", None, "HTTP 429, Retry-After 3600 s is over the 300 s cap"),
        ("301", None, "HTTP 429, Retry-After 301 s is over the 300 s cap"),
        ("11", 10.0, "HTTP 429, Retry-After 11 s is over the 10 s cap"),
    ],
)
def test_a_retry_after_over_the_cap_ends_the_fetch(
    retry_after: str, cap: float | None, reason: str
) -> None:
    index = Index({DEMO: reply(429, headers={"Retry-After": retry_after})})
    options: dict[str, Any] = {} if cap is None else {"max_retry_after": cap}
    result, delays = fetch(index, **options)
    assert result == FetchFailed("demo", reason, 429, True, 1)
    assert (len(index.seen), delays) == (1, [])


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (
            httpx.ConnectError("[Errno 111] Connection refused"),
            "connection failed (ConnectError: [Errno 111] Connection refused)",
        ),
        (httpx.ConnectError(""), "connection failed (ConnectError)"),
        (httpx.ReadError("reset by peer"), "connection failed (ReadError: reset by peer)"),
        (httpx.ReadTimeout("read"), "timed out after 30 s"),
        (httpx.ConnectTimeout("connect"), "timed out after 30 s"),
        (httpx.PoolTimeout("pool"), "timed out after 30 s"),
        (
            httpx.RemoteProtocolError("illegal request line"),  # h11 reading HTTP/2 frames
            "the server answered in HTTP/2 (or another binary protocol), which this client "
            "does not speak (HTTP/1.1 only): serve the index over HTTP/1.1 too",
        ),
    ],
)
def test_a_transport_error_is_retried_then_recorded(exc: Exception, reason: str) -> None:
    index = Index({DEMO: raising(exc)})
    result, delays = fetch(index)
    assert result == FetchFailed("demo", f"{reason} after 3 attempts", None, True, 3)
    assert (index.urls, len(delays)) == ([DEMO] * 3, 2)


def test_a_transport_error_then_a_page_succeeds() -> None:
    index = Index({DEMO: [raising(httpx.ConnectError("refused")), page()]})
    result, delays = fetch(index)
    assert (fetched(result).requests, len(index.seen), len(delays)) == (2, 2, 1)


def test_a_handler_that_never_answers_is_cut_by_the_client_s_own_deadline() -> None:
    # A MockTransport applies no httpx timeout: the attempt's own deadline ends it.
    seen: list[httpx.Request] = []

    async def never(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return await forever(request)

    result, delays = fetch(never, timeout=0.01, attempts=2)
    assert result == FetchFailed("demo", "timed out after 0.01 s after 2 attempts", None, True, 2)
    assert (len(seen), len(delays)) == (2, 1)


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (
            httpx.UnsupportedProtocol("Request URL has an unsupported protocol 'ftp://'."),
            "UnsupportedProtocol: Request URL has an unsupported protocol 'ftp://'.",
        ),
        (httpx.TooManyRedirects("loop"), "TooManyRedirects: loop"),
    ],
)
def test_a_request_error_that_is_not_transient_is_final(exc: Exception, reason: str) -> None:
    index = Index({DEMO: raising(exc)})
    result, delays = fetch(index)
    assert result == FetchFailed("demo", reason, None, False, 1)
    assert (len(index.seen), delays) == (1, [])


def test_a_body_cut_short_is_retried() -> None:
    cut = Body(4, size=16, fail_after=2)
    index = Index({DEMO: [streamed(cut), page()]})
    result, delays = fetch(index)
    assert (fetched(result).requests, len(index.seen), len(delays)) == (2, 2, 1)
    always, delays = fetch(Index({DEMO: streamed(cut)}))
    assert always == FetchFailed(
        "demo",
        "body cut short (RemoteProtocolError: peer closed connection) after 3 attempts",
        None,
        True,
        3,
    )
    assert len(delays) == 2


def test_a_body_that_does_not_decode_is_final() -> None:
    def gzip_garbage(request: httpx.Request) -> httpx.Response:
        headers = {"Content-Type": JSON_TYPE, "Content-Encoding": "gzip"}
        return httpx.Response(200, headers=headers, content=Body(1, size=8))

    index = Index({DEMO: gzip_garbage})
    result, delays = fetch(index)
    assert isinstance(result, FetchFailed)
    assert result.reason.startswith("DecodingError: ")
    assert (result.status, result.retryable, result.requests) == (None, False, 1)
    assert (len(index.seen), delays) == (1, [])


# -- what a 200 may hold ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "shown"),
    [
        ("application/json", "application/json"),  # PEP 691 names its own types
        ("text/plain; charset=utf-8", "text/plain"),
        (None, "none"),
        ("application/" + "x" * 100, "application/" + "x" * 48),  # bounded
    ],
)
def test_an_unknown_content_type_is_final(content_type: str | None, shown: str) -> None:
    index = Index({DEMO: reply(body=b"{}", content_type=content_type)})
    result, delays = fetch(index)
    assert result == FetchFailed("demo", f"unexpected content type {shown!r}", 200, False, 1)
    assert (len(index.seen), delays) == (1, [])


def test_a_declared_length_over_max_bytes_is_refused_unread() -> None:
    body = Body(800)  # 50 MB announced
    index = Index({DEMO: streamed(body, headers={"Content-Length": str(50 * 1024 * 1024)})})
    result, delays = fetch(index, max_bytes=1024 * 1024)
    assert result == FetchFailed("demo", "body over 1 MB", 200, False, 1)
    assert (body.read, len(index.seen), delays) == (0, 1, [])


def test_a_streamed_body_over_max_bytes_stops_being_read() -> None:
    body = Body(800)  # 50 MB of 64 KB chunks, no Content-Length
    result, delays = fetch(Index({DEMO: streamed(body)}), max_bytes=2 * 1024 * 1024)
    assert result == FetchFailed("demo", "body over 2 MB", 200, False, 1)
    assert body.read == 33  # the first chunk past 2 MB
    assert delays == []


@pytest.mark.parametrize("declared", [True, False])
def test_a_body_of_exactly_max_bytes_is_read(declared: bool) -> None:
    data = json_page("demo")
    data += b" " * (1000 - len(data))

    def exact(request: httpx.Request) -> httpx.Response:
        headers = {"Content-Type": JSON_TYPE}
        if declared:  # a Content-Length of 1000
            return httpx.Response(200, headers=headers, content=data)

        async def chunks() -> AsyncIterator[bytes]:  # chunked: counted as it is read
            yield data[:500]
            yield data[500:]

        return httpx.Response(200, headers=headers, content=chunks())

    assert isinstance(fetch(Index({DEMO: exact}), max_bytes=1000)[0], Fetched)
    over, _ = fetch(Index({DEMO: exact}), max_bytes=999)
    assert over == FetchFailed("demo", "body over 999 bytes", 200, False, 1)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"meta": {"api-version": "1.0"}, "files": [,]}', "not JSON (JSONDecodeError)"),
        (b"[]", "the page is not a object"),
        (json_page("other"), "the page is for 'other', not 'demo'"),
    ],
)
def test_an_unparseable_page_is_recorded_not_retried(body: bytes, reason: str) -> None:
    index = Index({DEMO: reply(body=body, content_type=JSON_TYPE)})
    result, delays = fetch(index)
    assert result == FetchFailed("demo", f"unparseable page: {reason}", 200, False, 1)
    assert (len(index.seen), delays) == (1, [])


# -- redirects ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize(
    "location",
    [
        "/mirror/a/simple/demo/",
        "https://index.test/mirror/a/simple/demo/",
        "https://INDEX.test:443/mirror/a/simple/demo/",  # the same origin, spelt otherwise
        "../../mirror/a/simple/demo/",
    ],
)
def test_a_same_origin_redirect_is_followed_and_urls_resolved_from_the_target(
    status: int, location: str
) -> None:
    target = "https://index.test/mirror/a/simple/demo/"
    index = Index({DEMO: redirect(location, status), target: page("demo", ["demo-1.0.tar.gz"])})
    result, delays = fetch(index)
    page_ = fetched(result).page
    assert page_.files[0].url == "https://index.test/mirror/a/files/demo-1.0.tar.gz"
    assert (page_.index_url, result.requests, delays) == (INDEX, 1, [])  # one attempt
    assert index.urls == [DEMO, target]
    assert [(r.method, r.headers["Accept"]) for r in index.seen] == [("GET", ACCEPT)] * 2


def test_a_redirect_keeps_the_validators() -> None:
    target = "https://index.test/mirror/demo/"
    index = Index({DEMO: redirect(target, 301), target: reply(304)})
    result, _ = fetch(index, "demo", Validators(etag='"v1"'))
    assert result == NotModified("demo", requests=1)
    assert [r.headers.get("If-None-Match") for r in index.seen] == ['"v1"', '"v1"']


@pytest.mark.parametrize(
    ("index_url", "location", "shown"),
    [
        (INDEX, "https://evil.test/simple/demo/", None),  # another host
        (INDEX, "https://index.test.evil.test/simple/demo/", None),
        (INDEX, "https://index.test:8443/simple/demo/", None),  # another port
        (INDEX, "http://index.test/simple/demo/", None),  # another scheme (a downgrade)
        (INDEX, "ftp://index.test/simple/demo/", None),
        (INDEX, "//evil.test/simple/demo/", "https://evil.test/simple/demo/"),  # scheme-relative
        ("http://127.0.0.1:8080/simple/", "http://127.1:8080/simple/demo/", None),
        ("http://127.0.0.1:8080/simple/", "http://2130706433:8080/simple/demo/", None),
        ("http://127.0.0.1:8080/simple/", "http://localhost:8080/simple/demo/", None),
        ("http://127.0.0.1:8080/simple/", "http://127.0.0.1/simple/demo/", None),  # port 80
        # Credentials in a Location are dropped, even from the reason.
        (INDEX, f"https://ci:{SECRET}@evil.test/x/", "https://evil.test/x/"),
        (INDEX, "https://index.test:443@evil.test/x/", "https://evil.test/x/"),
    ],
)
def test_a_redirect_to_another_origin_is_recorded_and_never_followed(
    index_url: str, location: str, shown: str | None
) -> None:
    start = f"{index_url}demo/"
    index = Index({start: redirect(location)})
    result, delays = fetch(index, index=index_url)
    assert result == FetchFailed("demo", other_origin(302, shown or location), 302, False, 1)
    assert SECRET not in repr(result)
    assert (index.urls, delays) == ([start], [])  # the other origin is never asked


def test_a_trusted_origin_is_followed_without_the_index_credentials() -> None:
    target = "https://files.test/simple/demo/"
    index = Index({DEMO: redirect(target, 307), target: page("demo", ["demo-1.0.tar.gz"])})
    chosen = settings(f"https://ci:{SECRET}@index.test/simple/", trusted=["https://files.test"])
    result, _ = fetch(index, index=chosen)
    page_ = fetched(result).page
    assert page_.files[0].url == "https://files.test/files/demo-1.0.tar.gz"
    assert (page_.index_url, result.requests) == (INDEX, 1)
    assert index.urls == [DEMO, target]
    assert [r.headers.get("Authorization") for r in index.seen] == [basic("ci", SECRET), None]


def test_credentials_go_along_a_redirect_within_the_index_s_origin_and_back_to_it() -> None:
    mirror, back = "https://files.test/demo/", "https://index.test/pages/demo/"
    index = Index({DEMO: redirect(mirror), mirror: redirect(back), back: page()})
    chosen = settings(f"https://ci:{SECRET}@index.test/simple/", trusted=["https://files.test/"])
    result, _ = fetch(index, index=chosen)
    assert fetched(result).requests == 1
    assert index.urls == [DEMO, mirror, back]
    assert [r.headers.get("Authorization") for r in index.seen] == [
        basic("ci", SECRET),
        None,
        basic("ci", SECRET),
    ]


def test_a_trusted_origin_is_only_that_origin() -> None:
    index = Index({DEMO: redirect("http://files.test/demo/")})  # trusted over https only
    result, _ = fetch(index, index=settings(trusted=["https://files.test"]))
    assert result == FetchFailed(
        "demo", other_origin(302, "http://files.test/demo/"), 302, False, 1
    )
    assert index.urls == [DEMO]


def test_the_injected_client_s_auth_does_not_follow_a_redirect_to_another_origin() -> None:
    target = "https://files.test/simple/demo/"
    index = Index({DEMO: redirect(target), target: page()})
    result, _ = fetch(
        index, index=settings(trusted=["https://files.test"]), auth=httpx.BasicAuth("ci", SECRET)
    )
    assert isinstance(result, Fetched)
    assert index.seen[0].headers.get("Authorization") == basic("ci", SECRET)  # the index's
    assert index.seen[1].headers.get("Authorization") is None


def test_a_location_with_credentials_has_them_dropped() -> None:
    target = "https://index.test/mirror/demo/"
    location = f"https://evil:{SECRET}@index.test/mirror/demo/"
    index = Index({DEMO: redirect(location), target: page()})
    result, _ = fetch(index)
    assert isinstance(result, Fetched)
    assert index.urls == [DEMO, target]
    assert "authorization" not in index.seen[1].headers  # not Basic evil:SECRET
    # With credentials of its own, the index's are sent, not the Location's.
    again, _ = fetch(index, index="https://ci:right@index.test/simple/")
    assert isinstance(again, Fetched)
    assert index.seen[-1].headers["Authorization"] == basic("ci", "right")


@pytest.mark.parametrize("max_redirects", [0, 1, 4])
def test_a_redirect_loop_is_bounded(max_redirects: int) -> None:
    index = Index({DEMO: redirect("/simple/demo/")})
    result, delays = fetch(index, max_redirects=max_redirects)
    assert result == FetchFailed("demo", "too many redirects", 302, False, 1)
    assert (index.urls, delays) == ([DEMO] * (max_redirects + 1), [])


def test_a_redirect_chain_within_the_bound_is_followed() -> None:
    hops = [f"https://index.test/hop{i}/demo/" for i in range(4)]
    routes: dict[str, Answer | Sequence[Answer]] = {DEMO: redirect(hops[0])}
    routes |= {hop: redirect(after) for hop, after in itertools.pairwise(hops)}
    routes[hops[-1]] = page()
    index = Index(routes)
    result, _ = fetch(index, max_redirects=4)
    assert fetched(result).requests == 1
    assert index.urls == [DEMO, *hops]


@pytest.mark.parametrize("location", ["http://a:abc/", "https://[::1/"])
def test_an_invalid_location_is_recorded_and_retried(location: str) -> None:
    index = Index({DEMO: redirect(location)})
    result, delays = fetch(index)
    assert isinstance(result, FetchFailed)
    assert (result.retryable, result.requests, len(delays)) == (True, 3, 2)
    assert result.reason.endswith("after 3 attempts")
    assert index.urls == [DEMO] * 3  # nothing else asked


def test_an_invalid_location_is_named_as_such() -> None:
    result, _ = fetch(Index({DEMO: redirect("http://a:abc/")}), attempts=1)
    # httpx reads the Location before govern sees the answer, so its status is not known.
    assert result == FetchFailed(
        "demo",
        "a redirect to an invalid URL (Invalid port: 'abc') after 1 attempt",
        None,
        True,
        1,
    )


# -- which index --------------------------------------------------------------------------------

PUBLIC = "https://pypi.test/simple/"
CORP = "https://corp.test/simple/"
EXTRA = "https://extra.test/simple/"


def test_a_mapped_project_is_read_from_its_index_only() -> None:
    index = Index({f"{CORP}corp-tool/": page("corp-tool", ["corp_tool-1.0.tar.gz"])})
    chosen = settings(PUBLIC, EXTRA, per_package={"corp-tool": CORP})
    result, _ = fetch(index, "Corp_Tool", index=chosen)
    assert (fetched(result).page.index_url, result.requests) == (CORP, 1)
    assert index.urls == [f"{CORP}corp-tool/"]
    # Not there: not looked for anywhere else (the public index could serve anything).
    gone, _ = fetch(index, "gone", index=settings(PUBLIC, EXTRA, per_package={"gone": CORP}))
    assert gone == FetchFailed("gone", "not on the index", 404, False, 1)
    assert index.urls[1:] == [f"{CORP}gone/"]


@pytest.mark.parametrize("status", [404, 410])
def test_extra_indexes_are_asked_after_a_404_or_410(status: int) -> None:
    index = Index({f"{PUBLIC}demo/": reply(status), f"{EXTRA}demo/": page()})
    result, _ = fetch(index, index=settings(PUBLIC, EXTRA))
    assert (fetched(result).page.index_url, result.requests) == (EXTRA, 2)
    assert index.urls == [f"{PUBLIC}demo/", f"{EXTRA}demo/"]


def test_extra_indexes_are_not_asked_when_the_main_one_has_the_project() -> None:
    index = Index({f"{PUBLIC}demo/": page(), f"{EXTRA}demo/": page()})
    result, _ = fetch(index, index=settings(PUBLIC, EXTRA))
    assert (fetched(result).page.index_url, result.requests) == (PUBLIC, 1)
    assert index.urls == [f"{PUBLIC}demo/"]


@pytest.mark.parametrize(
    ("answer", "reason", "status", "requests"),
    [
        (reply(500), "HTTP 500 after 3 attempts", 500, 3),
        (reply(429, headers={"Retry-After": "3600"}), None, 429, 1),
        (reply(401), None, 401, 1),
        (reply(400), "HTTP 400", 400, 1),
        (
            raising(httpx.ConnectError("down")),
            "connection failed (ConnectError: down) after 3 attempts",
            None,
            3,
        ),
        (redirect("https://evil.test/demo/"), None, 302, 1),
        (reply(body=b"[]", content_type=JSON_TYPE), None, 200, 1),
    ],
)
def test_a_failure_other_than_404_never_moves_a_project_to_an_extra_index(
    answer: Answer, reason: str | None, status: int | None, requests: int
) -> None:
    index = Index({f"{PUBLIC}demo/": answer, f"{EXTRA}demo/": page()})
    result, _ = fetch(index, index=settings(PUBLIC, EXTRA))
    assert isinstance(result, FetchFailed)
    assert (result.status, result.requests) == (status, requests)
    if reason is not None:
        assert result.reason == reason
    assert set(index.urls) == {f"{PUBLIC}demo/"}  # the extra index never asked


def test_the_extra_indexes_are_asked_in_order_until_one_fails() -> None:
    third = "https://third.test/simple/"
    index = Index({f"{EXTRA}demo/": reply(503), f"{third}demo/": page()})
    result, _ = fetch(index, index=settings(PUBLIC, EXTRA, third))
    assert result == FetchFailed("demo", "HTTP 503 after 3 attempts", 503, True, 4)
    assert index.urls == [f"{PUBLIC}demo/", *[f"{EXTRA}demo/"] * 3]


@pytest.mark.parametrize("extra", [[EXTRA], [EXTRA, "https://third.test/simple/"]])
def test_a_project_on_no_index_says_so_with_every_request_counted(extra: list[str]) -> None:
    index = Index({f"{PUBLIC}demo/": reply(410)})  # gone from one, never on the others
    result, _ = fetch(index, index=settings(PUBLIC, *extra))
    count = 1 + len(extra)
    assert result == FetchFailed("demo", f"not on any of the {count} indexes", 404, False, count)
    assert index.urls == [f"{url}demo/" for url in (PUBLIC, *extra)]


@pytest.mark.parametrize(
    "name", ["../../etc/passwd", "", "-demo", "demo-", "de mo", "demo/../x", "dé", "demo\n"]
)
def test_an_invalid_name_is_never_requested(name: str) -> None:
    index = Index()
    result, delays = fetch(index, name)
    assert result == FetchFailed(
        canonicalize_name(name), "not a valid project name", None, False, 0
    )
    assert (index.seen, delays) == ([], [])


# -- many projects ------------------------------------------------------------------------------


def test_a_poll_where_some_fail_returns_every_project(caplog: pytest.LogCaptureFixture) -> None:
    index = Index(
        {
            f"{INDEX}ok-one/": page("ok-one", ["ok_one-1.0.tar.gz"]),
            f"{INDEX}ok-two/": [reply(500), page("ok-two")],
            f"{INDEX}boom/": reply(500),
            f"{INDEX}timeout/": raising(httpx.ReadTimeout("read")),
            f"{INDEX}bad/": reply(body=b"[]", content_type=JSON_TYPE),
            f"{INDEX}huge/": streamed(Body(800)),
            f"{INDEX}bug/": raising(RuntimeError("a bug in the transport")),
        }
    )

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/simple/slow/":
            index.seen.append(request)
            return await forever(request)
        return index(request)

    done: list[str] = []
    names = ["OK_One", "ok-two", "boom", "slow", "timeout", "bad", "gone", "huge", "bug"]
    caplog.set_level(logging.ERROR, logger="govern")
    results = fetch_many(
        handler,
        [*names, "ok.one"],
        on_done=lambda name, _: done.append(name),
        timeout=0.1,  # the fast ones answer well within it
        max_bytes=1 << 20,
    )
    assert list(results) == sorted(canonicalize_name(n) for n in names)
    assert sorted(done) == list(results)
    assert isinstance(results["ok-one"], Fetched)
    assert isinstance(results["ok-two"], Fetched)
    assert (results["ok-one"].requests, results["ok-two"].requests) == (1, 2)
    assert results["boom"] == FetchFailed("boom", "HTTP 500 after 3 attempts", 500, True, 3)
    assert results["slow"] == FetchFailed(
        "slow", "timed out after 0.1 s after 3 attempts", None, True, 3
    )
    assert results["timeout"] == FetchFailed(
        "timeout", "timed out after 0.1 s after 3 attempts", None, True, 3
    )
    assert results["bad"] == FetchFailed(
        "bad", "unparseable page: the page is not a object", 200, False, 1
    )
    assert results["gone"] == FetchFailed("gone", "not on the index", 404, False, 1)
    assert results["huge"] == FetchFailed("huge", "body over 1 MB", 200, False, 1)
    # A bug (not an httpx error) costs its own project only, and is logged.
    assert results["bug"] == FetchFailed("bug", "internal error (RuntimeError)")
    assert [r.getMessage() for r in caplog.records] == ["fetching bug failed: RuntimeError"]
    assert index.urls.count(f"{INDEX}ok-one/") == 1


def test_each_project_is_asked_once_whatever_its_spelling() -> None:
    url = f"{INDEX}cupy-cuda13x/"
    index = Index({url: page("cupy-cuda13x", ["cupy_cuda13x-14.0.0.tar.gz"])})
    names = ["CuPy_cuda13x", "cupy-cuda13x", "cupy.CUDA13x"]
    results = fetch_many(index, names, {"CUPY_cuda13x": Validators(last_serial=1)})
    assert list(results) == ["cupy-cuda13x"]
    assert fetched(results["cupy-cuda13x"]).page.files[0].version == Version("14.0.0")
    assert index.urls == [url]


def test_validators_are_looked_up_by_canonical_name() -> None:
    index = Index({f"{INDEX}zope-interface/": reply(304)})
    results = fetch_many(index, ["zope.interface"], {"Zope_Interface": Validators(etag='"e"')})
    assert results == {"zope-interface": NotModified("zope-interface")}
    assert index.seen[0].headers["If-None-Match"] == '"e"'


def test_an_error_raised_by_on_done_is_the_caller_s() -> None:
    def refuse(name: str, result: FetchResult) -> None:
        raise KeyError(name)

    with pytest.raises(ExceptionGroup) as raised:
        fetch_many(Index(), ["demo"], on_done=refuse)
    assert raised.group_contains(KeyError)


# -- secrets --------------------------------------------------------------------------------------


def test_a_password_that_contains_the_user_name_is_scrubbed_whole() -> None:
    # Replacing the user name first would leave "***-s3cret-t0ken" showing.
    user, password = "deploy", f"deploy-{SECRET}"
    error = httpx.ConnectError(f"no route for {user} {password} {user}%40x")
    index = Index({"http://127.0.0.1:9/simple/demo/": raising(error)})
    result, _ = fetch(index, index=f"http://{user}:{password}@127.0.0.1:9/simple/")
    assert result == FetchFailed(
        "demo",
        "connection failed (ConnectError: no route for *** *** ***%40x) after 3 attempts",
        None,
        True,
        3,
    )
    assert SECRET not in repr(result)
