"""Answers read within bounds and requests within a deadline (govern/http/body.py), through
every client that talks to a server: the index client, the CI and forge API client, the
chat webhook and SMTP, each against a hostile server on 127.0.0.1 (tests/fakes/hostile.py).
"""

from __future__ import annotations

import asyncio
import gzip
import re
import time
import tracemalloc
import zlib
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import httpx
import pytest

from fakes.hostile import HostileHTTP, TrickleSMTP, double_gzip
from govern.errors import CI_ERRORS, CIError, CIUnavailable, NotifyUnavailable
from govern.http.body import BodyTooLarge, exchange
from govern.http.client import ApiClient
from govern.index.client import IndexClient, http_client
from govern.index.model import FetchFailed, FetchResult
from govern.index.pipconfig import IndexSettings
from govern.notify.base import Message
from govern.notify.email import EmailNotifier
from govern.notify.webhook import WebhookNotifier

T = TypeVar("T")
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
BOMB = 64 * 1024 * 1024  # what the bomb inflates to
LIMIT = 1024 * 1024  # the bound the clients are given in these tests
MEMORY = 16 * 1024 * 1024  # the most the read may allocate: far below the bomb
TIMEOUT = 1.0
SLACK = 1.0  # seconds past the deadline a request may take (a loaded machine)
TRICKLED = b"x" * 40  # one byte every 0.2 s: 8 s in all, each read well inside the timeout
MESSAGE = Message(
    key="remind:0123456789abcdef:14.1.1:webhook",
    kind="reminder",
    subject="demo 1.1 passed verification",
    text="Candidate: demo 1.1\n",
    markdown="",
)


@pytest.fixture(autouse=True)
def _tracing_stopped() -> Iterator[None]:
    """tracemalloc is process-wide: never left running after a test."""
    try:
        yield
    finally:
        if tracemalloc.is_tracing():
            tracemalloc.stop()


@pytest.fixture
def bomb() -> Iterator[HostileHTTP]:
    """A JSON page gzipped twice: a few hundred bytes that inflate to 64 MB."""
    body = double_gzip(BOMB)
    assert len(body) < 4096
    headers = {"Content-Type": JSON_TYPE, "Content-Encoding": "gzip, gzip"}
    with HostileHTTP(body, headers=headers) as server:
        yield server


@pytest.fixture
def trickle() -> Iterator[HostileHTTP]:
    """A 200 whose 40-byte JSON body comes a byte every 0.2 s."""
    with HostileHTTP(TRICKLED, headers={"Content-Type": JSON_TYPE}, every=0.2) as server:
        yield server


def measured(coroutine: Coroutine[Any, Any, T]) -> tuple[T, int, float]:
    """Run ``coroutine``: its result, the peak of memory it allocated, and its seconds."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = asyncio.run(coroutine)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak, time.monotonic() - started


# -- the index client -----------------------------------------------------------------------


async def _index_fetch(url: str, *, max_bytes: int = LIMIT) -> FetchResult:
    async with http_client(connections=1, trust_env=False) as http:
        settings = IndexSettings(f"{url}/simple/", source="test")
        client = IndexClient(
            http, settings, attempts=1, timeout=TIMEOUT, max_bytes=max_bytes, netrc=False
        )
        return await client.fetch("demo")


def test_a_gzip_gzip_bomb_is_refused_by_the_index_client_within_bounded_memory(
    bomb: HostileHTTP,
) -> None:
    result, peak, _ = measured(_index_fetch(bomb.url))
    assert isinstance(result, FetchFailed), result
    assert result.reason == "body over 1 MB"
    assert peak < MEMORY, f"{peak:,} bytes allocated reading a bomb"


def test_a_trickled_page_ends_the_index_fetch_at_its_deadline(trickle: HostileHTTP) -> None:
    result, _, seconds = measured(_index_fetch(trickle.url))
    assert isinstance(result, FetchFailed), result
    assert result.reason.startswith("timed out after 1 s")
    assert seconds < TIMEOUT + SLACK


# -- the CI and forge API client --------------------------------------------------------------


async def _api_get(url: str) -> object:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        api = ApiClient(
            http,
            vendor="github",
            base_url=url,
            headers={"Authorization": "Bearer tok_SECRET123456"},
            secrets=("tok_SECRET123456",),
            token_source="$GITHUB_TOKEN",
            attempts=1,
            errors=CI_ERRORS,
        )
        try:
            return await api.json("GET", "/repos/o/r")
        except CIError as exc:
            return exc


def test_a_gzip_gzip_bomb_is_refused_by_the_api_client_within_bounded_memory(
    bomb: HostileHTTP,
) -> None:
    result, peak, _ = measured(_api_get(bomb.url))
    assert isinstance(result, CIUnavailable), result
    where = f"github: GET http://127.0.0.1:{bomb.port}/repos/o/r"
    assert result.message == f"{where}: HTTP 200: body over 8 MB"
    assert peak < MEMORY, f"{peak:,} bytes allocated reading a bomb"


def test_a_trickled_answer_ends_the_api_request_at_its_deadline(trickle: HostileHTTP) -> None:
    result, _, seconds = measured(_api_get(trickle.url))
    assert isinstance(result, CIUnavailable), result
    assert "timed out after 1 s after 1 attempt" in result.message
    assert seconds < TIMEOUT + SLACK


def test_an_error_answer_over_its_bound_keeps_its_status() -> None:
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip, gzip"}
    with HostileHTTP(double_gzip(BOMB), headers=headers, status=404) as server:
        result, peak, _ = measured(_api_get(server.url))
    assert isinstance(result, CIError), result
    assert (result.status, result.message) == (404, f"github: GET {server.url}/repos/o/r: HTTP 404")
    assert peak < MEMORY


# -- the chat webhook -------------------------------------------------------------------------


async def _post(url: str) -> object:
    async with httpx.AsyncClient() as http:
        notifier = WebhookNotifier(f"{url}/services/T0/B0/secret123456", http, timeout=TIMEOUT)
        try:
            return await notifier.send(MESSAGE)
        except NotifyUnavailable as exc:
            return exc


def test_a_gzip_gzip_bomb_from_the_webhook_is_not_inflated(bomb: HostileHTTP) -> None:
    result, peak, _ = measured(_post(bomb.url))
    assert result == {"status": 200, "answer": "(an answer body over 64 KB, not read)"}
    assert peak < MEMORY, f"{peak:,} bytes allocated reading a bomb"


def test_a_trickled_answer_ends_the_webhook_post_at_its_deadline(trickle: HostileHTTP) -> None:
    result, _, seconds = measured(_post(trickle.url))
    assert isinstance(result, NotifyUnavailable), result
    assert result.maybe_sent  # the POST went out: never sent twice
    assert "no answer within 1 s" in result.message
    assert "secret123456" not in result.message
    assert seconds < TIMEOUT + SLACK


# -- SMTP ---------------------------------------------------------------------------------


def _mail(server: TrickleSMTP) -> tuple[object, float]:
    notifier = EmailNotifier(
        host="127.0.0.1",
        port=server.port,
        sender="govern@example.org",
        recipients=["team@example.org"],
        starttls=False,
        timeout=TIMEOUT,
    )

    async def go() -> object:
        try:
            return await notifier.send(MESSAGE)
        except NotifyUnavailable as exc:
            return exc

    started = time.monotonic()
    result = asyncio.run(go())
    return result, time.monotonic() - started


def test_a_trickled_greeting_ends_the_smtp_conversation_at_its_deadline() -> None:
    with TrickleSMTP(slow_after="") as server:
        result, seconds = _mail(server)
    assert isinstance(result, NotifyUnavailable), result
    assert result.message == f"smtp 127.0.0.1:{server.port}: no answer within 1 s"
    assert not result.maybe_sent  # nothing was sent: sent again later
    assert seconds < TIMEOUT + SLACK


def test_a_reply_trickled_after_the_mail_is_maybe_sent() -> None:
    with TrickleSMTP(slow_after=".") as server:
        result, seconds = _mail(server)
    assert isinstance(result, NotifyUnavailable), result
    assert result.maybe_sent  # the server may have taken it: never sent twice on its own
    assert seconds < TIMEOUT + SLACK
    assert "." in server.received


def test_a_conversation_at_its_deadline_says_nothing_more() -> None:
    with TrickleSMTP(slow_after="EHLO") as server:
        result, seconds = _mail(server)
        time.sleep(0.3)  # what the thread might still send, had it gone on
    assert isinstance(result, NotifyUnavailable), result
    assert not result.maybe_sent
    sent = [line.upper() for line in server.received]  # smtplib writes its verbs in lower case
    assert sent == ["EHLO [127.0.0.1]"]  # no MAIL, RCPT or DATA after the deadline
    assert seconds < TIMEOUT + SLACK


# -- the reading itself -----------------------------------------------------------------------


async def _read(body: bytes, encoding: str, max_bytes: int, keep: int | None = None) -> bytes:
    headers = {"Content-Encoding": encoding} if encoding else {}
    with HostileHTTP(body, headers=headers) as server:
        async with httpx.AsyncClient() as http:
            request = http.build_request("GET", server.url)
            return (
                await exchange(http, request, timeout=5.0, max_bytes=max_bytes, keep=keep)
            ).content


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("", lambda data: data),
        ("identity", lambda data: data),
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),  # RFC 9110: zlib-wrapped
        ("deflate", lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS)),  # raw, as some send
        ("gzip, gzip", lambda data: gzip.compress(gzip.compress(data))),
        ("deflate, gzip", lambda data: gzip.compress(zlib.compress(data))),
    ],
)
def test_each_coding_read_decodes_to_the_body(
    encoding: str, encode: Callable[[bytes], bytes]
) -> None:
    data = bytes(range(256)) * 4000  # over one 64 KB step
    body = encode(data)
    assert asyncio.run(_read(body, encoding, len(data))) == data
    with pytest.raises(BodyTooLarge, match="body over 1023999 bytes"):
        asyncio.run(_read(body, encoding, len(data) - 1))


@pytest.mark.parametrize(
    ("encoding", "said"),
    [
        ("br", "unsupported Content-Encoding 'br'"),
        ("x-hostile", "unsupported Content-Encoding 'x-hostile'"),
        ("gzip, gzip, gzip", "3 Content-Encoding layers (at most 2 are read)"),
    ],
)
def test_a_coding_not_read_is_refused_not_taken_undecoded(encoding: str, said: str) -> None:
    with pytest.raises(httpx.DecodingError, match=re.escape(said)):
        asyncio.run(_read(b"{}", encoding, 1024))


def test_a_tail_keeps_the_end_and_still_counts_the_whole() -> None:
    data = b"".join(b"line %06d\n" % n for n in range(100_000))
    body = gzip.compress(data)
    assert asyncio.run(_read(body, "gzip", len(data), keep=1000)) == data[-1000:]
    with pytest.raises(BodyTooLarge):
        asyncio.run(_read(body, "gzip", len(data) - 1, keep=1000))
