"""The index client against servers that answer as real (and hostile) servers do.

Redirects to another origin, bodies whose content type lies, servers with no validators
and no freshness headers: each on 127.0.0.1, through the client ``govern poll`` uses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator

import pytest

from fakes.index import (
    HTML_TYPE,
    JSON_TYPE,
    LEGACY_HTML_TYPE,
    FaultServer,
    Redirect,
    Reply,
    RequireAuth,
    html_page,
    json_page,
)
from govern.index.client import IndexClient, http_client
from govern.index.model import Fetched, FetchFailed, FetchResult
from govern.index.pipconfig import IndexSettings

SECRET = "s3cret-token-xyz"


@pytest.fixture
def index() -> Iterator[FaultServer]:
    with FaultServer() as server:
        yield server


@pytest.fixture
def other() -> Iterator[FaultServer]:
    """A second server: another origin (another port of 127.0.0.1)."""
    with FaultServer() as server:
        yield server


def _fetch(url: str, name: str = "demo", *, trusted: tuple[str, ...] = ()) -> FetchResult:
    async def go() -> FetchResult:
        async with http_client(trust_env=False) as http:
            settings = IndexSettings(url, source="test", trusted_redirects=trusted)
            return await IndexClient(http, settings, attempts=1, netrc=False).fetch(name)

    return asyncio.run(go())


def _failed(result: FetchResult) -> FetchFailed:
    assert isinstance(result, FetchFailed), result
    return result


# -- redirects to another origin --------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "127.1",  # 127.0.0.1 written short
        "2130706433",  # 127.0.0.1 as one number
        "localhost",
        "[::ffff:127.0.0.1]",
        "127.0.0.2",
    ],
)
def test_a_redirect_to_another_host_is_a_recorded_failure(
    index: FaultServer, other: FaultServer, host: str
) -> None:
    index.script("demo", Redirect(f"http://{host}:{other.port}/simple/demo/"))
    other.script("demo", Reply(body=json_page("demo", ["demo-9.9.tar.gz"])))
    result = _failed(_fetch(index.url))
    assert result.reason.startswith(f"HTTP 302: redirected to http://{host}:{other.port}/")
    assert "another origin than the index's" in result.reason
    assert (result.status, result.retryable) == (302, False)
    assert other.count(other.path("demo")) == 0  # never asked


@pytest.mark.parametrize(
    "scheme_and_port", ["https://127.0.0.1:{port}", "http://127.0.0.1:{other}"]
)
def test_a_redirect_to_another_scheme_or_port_is_a_recorded_failure(
    index: FaultServer, other: FaultServer, scheme_and_port: str
) -> None:
    origin = scheme_and_port.format(port=index.port, other=other.port)
    index.script("demo", Redirect(f"{origin}/simple/demo/", status=301))
    other.script("demo", Reply(body=json_page("demo", ["demo-9.9.tar.gz"])))
    result = _failed(_fetch(index.url))
    assert result.reason.startswith(f"HTTP 301: redirected to {origin}/simple/demo/")
    assert other.count(other.path("demo")) == 0


def test_a_redirect_hop_after_a_same_origin_one_is_checked_too(
    index: FaultServer, other: FaultServer
) -> None:
    index.script("demo", Redirect("/moved/demo/"))
    index.script("/moved/demo/", Redirect(f"{other.base}/simple/demo/", status=307))
    other.script("demo", Reply(body=json_page("demo")))
    result = _failed(_fetch(index.url))
    assert result.reason.startswith(f"HTTP 307: redirected to {other.base}/simple/demo/")
    assert other.count(other.path("demo")) == 0


def test_the_credentials_of_a_location_never_show(index: FaultServer, other: FaultServer) -> None:
    index.script("demo", Redirect(f"http://ci:{SECRET}@127.1:{other.port}/simple/demo/"))
    result = _failed(_fetch(index.url))
    assert SECRET not in result.reason
    assert "127.1" in result.reason


def test_a_same_origin_redirect_is_followed(index: FaultServer) -> None:
    index.script("demo", Redirect(f"{index.base}/elsewhere/demo/"))
    index.script("/elsewhere/demo/", Reply(body=json_page("demo", ["demo-1.0.tar.gz"])))
    result = _fetch(index.url)
    assert isinstance(result, Fetched), result
    assert [f.filename for f in result.page.files] == ["demo-1.0.tar.gz"]


def test_a_trusted_origin_is_followed_without_the_index_credentials(
    index: FaultServer, other: FaultServer
) -> None:
    index.script("demo", RequireAuth("ci", SECRET, Redirect(f"{other.base}/simple/demo/")))
    path = other.script("demo", Reply(body=json_page("demo", ["demo-1.0.tar.gz"])))
    url = index.url.replace("http://", f"http://ci:{SECRET}@")
    result = _fetch(url, trusted=(other.base,))
    assert isinstance(result, Fetched), result
    assert [f.filename for f in result.page.files] == ["demo-1.0.tar.gz"]
    assert index.headers[index.path("demo")][0].get("authorization")  # the index had them
    assert "authorization" not in other.headers[path][0]  # the other origin never does


def test_a_trusted_origin_is_an_origin_not_a_host(index: FaultServer, other: FaultServer) -> None:
    # Trusting http://127.0.0.1:<other> trusts neither 127.1 nor another port.
    index.script("demo", Redirect(f"http://127.1:{other.port}/simple/demo/"))
    result = _failed(_fetch(index.url, trusted=(other.base,)))
    assert "another origin" in result.reason


# -- bodies whose content type does not match them -----------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type", "reason"),
    [
        (json_page("demo", ["demo-1.0.tar.gz"]), LEGACY_HTML_TYPE, "the body is JSON"),
        (json_page("demo", ["demo-1.0.tar.gz"]), HTML_TYPE, "the body is JSON"),
        (html_page("demo", ["demo-1.0.tar.gz"]), JSON_TYPE, "the body looks like HTML"),
        (b"\x00\x9f garbage", LEGACY_HTML_TYPE, "no HTML markup"),
        (b"\x00\x9f garbage", JSON_TYPE, "not JSON"),
        (b"", LEGACY_HTML_TYPE, "no HTML markup"),
        (b"", JSON_TYPE, "not JSON"),
    ],
)
def test_a_body_that_is_not_what_its_content_type_says_is_a_recorded_failure(
    index: FaultServer, body: bytes, content_type: str, reason: str
) -> None:
    index.script("demo", Reply(body=body, content_type=content_type))
    result = _failed(_fetch(index.url))
    assert result.reason.startswith("unparseable page: ")
    assert reason in result.reason
    assert (result.status, result.retryable) == (200, False)


# -- servers with no validators and no freshness headers --------------------------------------


def test_a_page_without_validators_or_freshness_is_read_every_time(index: FaultServer) -> None:
    # As the index pip uses answers: no ETag, Last-Modified, Cache-Control or Expires, and
    # "_last-serial" as a string.
    body = json_page("demo", ["demo-1.0.tar.gz"]).replace(
        b'"api-version": "1.1"', b'"api-version": "1.1", "_last-serial": "40603035"'
    )
    path = index.script("demo", Reply(body=body))
    first = _fetch(index.url)
    assert isinstance(first, Fetched), first
    assert (first.page.etag, first.page.last_modified, first.fresh_for) == (None, None, 0.0)
    assert first.page.last_serial == 40603035
    assert isinstance(_fetch(index.url), Fetched)
    sent = index.headers[path]
    assert all("if-none-match" not in h and "if-modified-since" not in h for h in sent)


def test_what_a_page_left_out_is_logged_with_its_reason(
    index: FaultServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="govern.index.client")
    body = json_page("demo", ["demo-1.0.tar.gz"], versions=["1.0", "not a version"])
    index.script("demo", Reply(body=body))
    result = _fetch(index.url)
    assert isinstance(result, Fetched), result
    assert result.page.versions == ("1.0",)
    logged = [r.getMessage() for r in caplog.records]
    assert logged == [
        "demo: left out of the page: versions[1] 'not a version': not a PEP 440 version: ignored"
    ]
