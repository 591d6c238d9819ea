"""Tests for :mod:`govern.http.retry`: the header readings, the backoff, and both of its users
(the index client and the CI REST client) retrying through an ``httpx.MockTransport``."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from fakes.sleeps import Sleeps
from govern.errors import CI_ERRORS, CIRateLimited
from govern.http.client import ApiClient
from govern.http.retry import MAX_WAIT, Backoff, rate_limit_until, retry_after, seconds_until
from govern.index.client import IndexClient
from govern.index.model import Fetched, FetchFailed
from govern.index.pipconfig import IndexSettings

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
JSON_TYPE = "application/vnd.pypi.simple.v1+json"


@pytest.fixture(autouse=True)
def _seeded() -> Iterator[None]:
    """The jitter drawn from a known seed; the global generator's state put back after."""
    state = random.getstate()
    random.seed(15)
    try:
        yield
    finally:
        random.setstate(state)


# -- Retry-After and the reset headers -------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120.0),
        (" 0 ", 0.0),
        ("soon", None),
        ("", None),
        (None, None),
        ("-5", None),
        ("\u00b2", None),  # a digit to str.isdigit, not to int
        ("9" * 30, MAX_WAIT),  # a number no one means: the longest wait, not an overflow
        ("Mon, 01 Jun 2026 12:05:00 GMT", 300.0),
        ("Mon, 01 Jan 2001 00:00:00 GMT", 0.0),  # a date in the past means now
    ],
)
def test_retry_after(value: str | None, seconds: float | None) -> None:
    assert retry_after(value, NOW) == seconds


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        pytest.param({"Retry-After": "120"}, 120, id="retry-after-seconds"),
        pytest.param({"Retry-After": "Mon, 01 Jun 2026 12:05:00 GMT"}, 300, id="retry-after-date"),
        pytest.param({"X-RateLimit-Reset": str(int(NOW.timestamp()) + 60)}, 60, id="github"),
        pytest.param({"RateLimit-Reset": "42"}, 42, id="buildkite-organization"),
        pytest.param({"RateLimit-User-Reset": "30"}, 30, id="buildkite-user"),
        pytest.param({"RateLimit-Reset": "10", "RateLimit-User-Reset": "50"}, 50, id="user-later"),
        pytest.param({"RateLimit-Reset": "50", "RateLimit-User-Reset": "10"}, 50, id="org-later"),
        pytest.param(
            {"X-RateLimit-Reset": str(int(NOW.timestamp()) + 60), "RateLimit-Reset": "120"},
            120,
            id="unix-time-and-seconds",
        ),
        pytest.param({"Retry-After": "5", "RateLimit-Reset": "600"}, 5, id="retry-after-wins"),
        pytest.param({"Retry-After": "soon", "RateLimit-Reset": "7"}, 7, id="bad-retry-after"),
        pytest.param({"X-RateLimit-Reset": str(int(NOW.timestamp()) - 60)}, 0, id="reset-passed"),
        # These raised (a year past 9999, a timedelta too large) before the cap.
        pytest.param({"X-RateLimit-Reset": "9" * 15}, MAX_WAIT, id="far-unix-time"),
        pytest.param({"Retry-After": "9" * 20}, MAX_WAIT, id="huge-retry-after"),
    ],
)
def test_rate_limit_until(headers: dict[str, str], seconds: float) -> None:
    assert rate_limit_until(httpx.Headers(headers), NOW) == NOW + timedelta(seconds=seconds)
    assert seconds_until(httpx.Headers(headers), NOW) == seconds


@pytest.mark.parametrize(
    "headers", [{}, {"RateLimit-Reset": "soon"}, {"RateLimit-Reset": "9" * 20}, {"Retry-After": ""}]
)
def test_rate_limit_until_without_a_moment(headers: dict[str, str]) -> None:
    assert rate_limit_until(httpx.Headers(headers), NOW) is None
    assert seconds_until(httpx.Headers(headers), NOW) is None


# -- the backoff ---------------------------------------------------------------------------


def test_the_backoff_is_full_jitter_under_a_doubling_capped_ceiling() -> None:
    backoff = Backoff(0.5, cap=3.0)
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (10, 3.0)]:
        delays = [backoff.delay(attempt) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8  # spread over the range, not a fixed pause
        assert min(delays) < ceiling * 0.2


def test_a_wait_the_server_names_wins_over_the_backoff() -> None:
    backoff = Backoff(0.5, cap=3.0)
    assert backoff.delay(1, 30.0) == 30.0  # the cap is the backoff's, not the server's
    assert backoff.delay(3, -2.0) == 0.0


def test_pause_sleeps_the_delay() -> None:
    sleeps = Sleeps()
    asyncio.run(Backoff(0.5, sleep=sleeps).pause(1, 4.0))
    assert sleeps.delays == [4.0]


# -- the index client, through a MockTransport ---------------------------------------------


def _script(*answers: httpx.Response | Exception) -> Callable[[httpx.Request], httpx.Response]:
    """A MockTransport handler giving each answer in turn (an exception is raised)."""
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handler


def _page() -> httpx.Response:
    body = {"meta": {"api-version": "1.1"}, "name": "demo", "files": []}
    return httpx.Response(200, headers={"Content-Type": JSON_TYPE}, content=json.dumps(body))


def _index_fetch(handler: Callable[[httpx.Request], httpx.Response], sleeps: Sleeps) -> object:
    async def go() -> object:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            settings = IndexSettings("https://index.test/simple/", source="test")
            client = IndexClient(http, settings, sleep=sleeps, netrc=False)
            return await client.fetch("demo")

    return asyncio.run(go())


def test_the_index_waits_as_a_rate_limit_reset_header_says() -> None:
    sleeps = Sleeps()
    handler = _script(httpx.Response(429, headers={"RateLimit-Reset": "7"}), _page())
    result = _index_fetch(handler, sleeps)
    assert isinstance(result, Fetched), result
    assert (result.requests, sleeps.delays) == (2, [7.0])


def test_the_index_retries_a_connection_error_after_a_jittered_pause() -> None:
    sleeps = Sleeps()
    handler = _script(httpx.ConnectError("refused"), httpx.Response(503), _page())
    result = _index_fetch(handler, sleeps)
    assert isinstance(result, Fetched), result
    assert result.requests == 3
    assert len(sleeps.delays) == 2
    assert 0.0 <= sleeps.delays[0] <= 0.5
    assert 0.0 <= sleeps.delays[1] <= 1.0


def test_the_index_gives_up_on_a_wait_over_its_cap() -> None:
    sleeps = Sleeps()
    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(hours=2), usegmt=True)
    result = _index_fetch(_script(httpx.Response(503, headers={"Retry-After": when})), sleeps)
    assert isinstance(result, FetchFailed), result
    assert result.reason.startswith("HTTP 503, Retry-After ")
    assert result.reason.endswith(" s is over the 300 s cap")
    assert (result.requests, sleeps.delays) == (1, [])


# -- the CI REST client, through a MockTransport --------------------------------------------


def _api_call(handler: Callable[[httpx.Request], httpx.Response], sleeps: Sleeps) -> object:
    async def go() -> object:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            client = ApiClient(
                http,
                vendor="acme",
                base_url="https://api.test",
                headers={},
                secrets=(),
                token_source="$API_TOKEN",
                sleep=sleeps,
                clock=lambda: NOW,
                errors=CI_ERRORS,
            )
            return await client.json("GET", "/things")

    return asyncio.run(go())


def test_the_ci_client_retries_a_server_error_after_a_jittered_pause() -> None:
    sleeps = Sleeps()
    handler = _script(httpx.Response(502), httpx.ReadTimeout("slow"), httpx.Response(200, json=[1]))
    assert _api_call(handler, sleeps) == [1]
    assert len(sleeps.delays) == 2
    assert 0.0 <= sleeps.delays[0] <= 0.5
    assert 0.0 <= sleeps.delays[1] <= 1.0


def test_the_ci_client_sleeps_through_a_short_rate_limit_and_raises_a_long_one() -> None:
    sleeps = Sleeps()
    short = httpx.Response(429, headers={"X-RateLimit-Reset": str(int(NOW.timestamp()) + 3)})
    assert _api_call(_script(short, httpx.Response(200, json={})), sleeps) == {}
    assert sleeps.delays == [3.0]
    with pytest.raises(CIRateLimited) as raised:
        _api_call(_script(httpx.Response(429, headers={"Retry-After": "600"})), Sleeps())
    assert raised.value.until == NOW + timedelta(seconds=600)
