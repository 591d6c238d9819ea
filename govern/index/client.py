"""An async client for the Simple API (PEP 691 JSON, PEP 503 HTML), on an injected httpx client.

Notes: docs/internals.md#index.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import logging
import netrc
import os
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Self
from urllib.parse import quote

import certifi
import httpx
from packaging.utils import InvalidName, canonicalize_name

from govern import __version__
from govern.errors import ConfigError
from govern.http.body import ACCEPT_ENCODING, BodyTooLarge, format_size, read_body
from govern.http.retry import MAX_BACKOFF, Backoff, http_date, is_digits, seconds_until
from govern.index.model import (
    DistributionFile,
    Fetched,
    FetchFailed,
    FetchResult,
    NotModified,
    ProjectPage,
    Validators,
)
from govern.index.parsing import SimpleParseError, strip_credentials
from govern.index.pipconfig import IndexSettings
from govern.index.simple import (
    HTML_CONTENT_TYPE,
    JSON_CONTENT_TYPE,
    LEGACY_HTML_CONTENT_TYPE,
    parse_html,
    parse_json,
)
from govern.redact import redact as redact_url
from govern.redact import scrub

logger = logging.getLogger(__name__)

# Who is asking, for the index's operators (as pip and uv name themselves).
USER_AGENT = f"govern/{__version__} (dependency-pin watcher) python-httpx/{httpx.__version__}"
# PEP 691 negotiation: JSON first, the versioned HTML next, legacy HTML last.
ACCEPT = f"{JSON_CONTENT_TYPE}, {HTML_CONTENT_TYPE};q=0.2, {LEGACY_HTML_CONTENT_TYPE};q=0.01"
MAX_RETRY_AFTER = 300.0  # seconds: a longer Retry-After ends the fetch (the next poll retries)
# A watcher exists to notice a release the day it appears: an index's word that a page
# stays fresh (Cache-Control) is taken for an hour at most.
MAX_FRESH = 3600.0
# h11's words for an answer whose first byte is a control character, as the frames of a
# server that speaks only HTTP/2 (RFC 9113 3.4: a SETTINGS frame first) are.
_NOT_HTTP1 = "illegal request line"
_HTTP2_ANSWER = (
    "the server answered in HTTP/2 (or another binary protocol), which this client does "
    "not speak (HTTP/1.1 only): serve the index over HTTP/1.1 too"
)
_BAD_LOCATION = "Invalid URL in location header"  # httpx's words for a Location it cannot read
_THREAD_PARSE = 1024 * 1024  # bodies larger than this are parsed off the event loop
_SECRET_MIN = 4  # shorter user names / passwords are not scrubbed out of texts (too common)
# A distribution file when its page gives no size (CUDA wheels run to hundreds of MB).
FILE_LIMIT = 4 * 1024 * 1024 * 1024
FILE_TIMEOUT = 900.0  # seconds one download may take, connect to last byte
_SHA256 = re.compile(r"[0-9a-f]{64}")
# A file name that is only a name (PEP 427 / 625 characters): never a path.
_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!-]*")


@dataclass(frozen=True, slots=True)
class _Transient:
    """A failure worth another attempt (connection, timeout, 429, 5xx)."""

    reason: str
    status: int | None = None
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class _Body:
    """A 200 answer read in full, still to be parsed."""

    format: Literal["json", "html"]
    data: bytes
    url: str
    charset: str | None
    etag: str | None
    last_modified: str | None
    header_serial: int | None
    fresh_for: float


def _counted(result: FetchResult, requests: int) -> FetchResult:
    """The result with ``requests`` attempts counted (itself when that is its count)."""
    if result.requests == requests:
        return result
    return dataclasses.replace(result, requests=requests)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def freshness(headers: httpx.Headers, now: datetime | None = None) -> float:
    """Seconds an answer stays fresh for a private cache (RFC 9111 4.2), at most MAX_FRESH.

    The lifetime is the first ``Cache-Control: max-age`` (``no-cache`` and ``no-store``
    mean 0; a value too large to read is taken as the cap), else ``Expires`` less ``Date``;
    less the answer's age: the larger of its ``Age`` (a CDN's) and the time since its
    ``Date`` (a cache that does not send ``Age``). Anything unreadable counts as stale (0:
    ask again next time), as the RFC asks of an invalid ``Expires``; no heuristic freshness.
    ``now`` is when the answer arrived (default: the clock).
    """
    now = now or datetime.now(UTC)
    lifetime: float | None = None
    for directive in headers.get_list("Cache-Control", split_commas=True):
        name, _, value = directive.strip().partition("=")
        name = name.strip().lower()
        if name in ("no-cache", "no-store"):
            return 0.0
        if name == "max-age" and lifetime is None:
            seconds = value.strip().strip('"')
            if not is_digits(seconds):
                lifetime = 0.0
            else:  # RFC 9111 1.2.2: a value too large to hold is taken as very large
                lifetime = MAX_FRESH if len(seconds) > 10 else float(seconds)
    date = http_date(headers.get("Date"))
    if lifetime is None:
        until = http_date(headers.get("Expires"))
        if until is None:
            return 0.0
        lifetime = (until - (date or now)).total_seconds()
    age = float(_header_int(headers.get("Age")) or 0)
    if date is not None:  # whole seconds, as Date has them
        age = max(age, float(int((now - date).total_seconds())))
    return min(max(lifetime - age, 0.0), MAX_FRESH)


def _header_int(value: str | None) -> int | None:
    """A header's non-negative integer (the first of a repeated header), or None."""
    if value is None:
        return None
    text = value.split(",", 1)[0].strip()
    return int(text) if is_digits(text) and len(text) < 20 else None


def tls_context(*, trust_env: bool = True) -> ssl.SSLContext:
    """httpx's verifying TLS context, after checking the CA certificates the user named.

    httpx reads ``SSL_CERT_FILE``, else ``SSL_CERT_DIR``, else certifi's bundle; a named
    file or folder that does not exist, or a file without a certificate, stops the command
    with a :class:`ConfigError` instead of failing every project of a poll.
    """
    cafile = os.environ.get("SSL_CERT_FILE") if trust_env else None
    capath = os.environ.get("SSL_CERT_DIR") if trust_env and not cafile else None
    if cafile and not os.path.isfile(cafile):
        raise _unreadable("SSL_CERT_FILE", cafile)
    if capath and not os.path.isdir(capath):
        raise _unreadable("SSL_CERT_DIR", capath)
    # The bundle read (certifi's when none is named), as it is now: one replaced, even
    # by a copy keeping its size and time, is read again.
    stamp = os.stat(cafile or capath or certifi.where())
    try:
        return _verifying_context(
            trust_env,
            cafile,
            capath,
            (stamp.st_ino, stamp.st_mtime_ns, stamp.st_ctime_ns, stamp.st_size),
        )
    except ssl.SSLError as exc:  # a file that holds no certificate
        why = f"no certificate in it ({exc.reason})"
        raise _unreadable("SSL_CERT_FILE", str(cafile), why) from None


@functools.lru_cache(maxsize=4)
def _verifying_context(
    trust_env: bool, cafile: str | None, capath: str | None, stamp: tuple[int, ...]
) -> ssl.SSLContext:
    """One context per bundle, shared by every poll: reading the CA certificates takes
    longer than a warm poll's own work (the arguments are only the cache's key)."""
    return httpx.create_ssl_context(trust_env=trust_env)


def _unreadable(variable: str, value: str, why: str | None = None) -> ConfigError:
    kind = "file" if variable.endswith("FILE") else "directory"
    return ConfigError(
        f"{variable}={value}: {why or f'no such {kind}'}",
        tip=f"Point {variable} at the PEM certificates of the CAs you trust, or unset it.",
    )


def http_client(*, connections: int = 16, trust_env: bool = True) -> Clients:
    """The httpx clients an :class:`IndexClient` is given by whoever runs a poll.

    ``connections`` clients of one kept-alive connection each (see :class:`Clients`),
    HTTP/1.1 (``http2=False``: only ``http/1.1`` is offered by ALPN), govern's User-Agent,
    redirects not followed (:class:`IndexClient` decides each hop); proxies and CA
    certificates come from the environment unless ``trust_env`` is False. Use it with
    ``async with``.
    """
    verify = tls_context(trust_env=trust_env)
    one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    return Clients(
        [
            httpx.AsyncClient(
                verify=verify,
                http2=False,
                limits=one,
                headers={"User-Agent": USER_AGENT},
                follow_redirects=False,
                trust_env=trust_env,
            )
            for _ in range(connections)
        ]
    )


async def fetch_pages(
    settings: IndexSettings,
    names: Iterable[str],
    *,
    on_done: Callable[[str, FetchResult], None] | None = None,
) -> dict[str, FetchResult]:
    """Each project's page once, concurrently, on clients of its own (``audit --online``)."""
    async with http_client() as http:
        return await IndexClient(http, settings).fetch_many(names, {}, on_done=on_done)


class Clients:
    """httpx clients taken in turn, one request each at a time.

    httpcore's pool looks at every connection it holds (an idle check that asks the
    socket) when each request starts and ends; with one client of 16 connections a warm
    poll spent most of its time there (bench/README.md). Clients of one connection each
    keep that check to the connection in use. More requests than clients share the first.
    """

    def __init__(self, clients: Sequence[httpx.AsyncClient]) -> None:
        """Hold ``clients`` (at least one); :meth:`lease` hands them out."""
        if not clients:
            raise ValueError("Clients needs at least one httpx client")
        self.all = tuple(clients)
        self._free = list(clients)

    async def __aenter__(self) -> Self:
        """Open every client."""
        async with contextlib.AsyncExitStack() as stack:
            for client in self.all:
                await stack.enter_async_context(client)
            self._opened = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close every client (their connections with them)."""
        await self._opened.aclose()

    @contextlib.asynccontextmanager
    async def lease(self) -> AsyncIterator[httpx.AsyncClient]:
        """A client for one request and its redirects, given back afterwards."""
        if not self._free:
            yield self.all[0]
            return
        client = self._free.pop()
        try:
            yield client
        finally:
            self._free.append(client)


class IndexClient:
    """Reads project pages from the configured indexes, politely and within bounds."""

    def __init__(
        self,
        http: httpx.AsyncClient | Clients,
        settings: IndexSettings,
        *,
        concurrency: int = 16,
        attempts: int = 3,
        timeout: float = 30.0,
        max_bytes: int = 20 * 1024 * 1024,
        backoff: float = 0.5,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        max_retry_after: float = MAX_RETRY_AFTER,
        netrc: bool | str | Path = True,
    ) -> None:
        """Bind the client to an httpx client (its pool, proxies, TLS) and the settings.

        ``http`` serves every request (see :func:`http_client`); ``concurrency``
        bounds requests in flight, ``attempts`` counts tries per index (first included),
        ``timeout`` bounds one attempt (connect to last byte), ``max_bytes`` the decoded
        body; ``sleep`` is injectable so tests see the delays. ``netrc``: True reads
        ``$NETRC`` or ``~/.netrc``, a path reads that file, False none.
        """
        if concurrency < 1 or attempts < 1 or timeout <= 0 or max_bytes < 1:
            raise ValueError("concurrency, attempts, timeout and max_bytes must be positive")
        self._clients = http if isinstance(http, Clients) else Clients([http])
        self._settings = settings
        self._in_flight = asyncio.Semaphore(concurrency)  # the bound on requests in flight
        self._attempts = attempts
        self._timeout = timeout
        self._request_timeout = httpx.Timeout(timeout)  # built once, not at every request
        # Origins besides each index's own that a redirect may lead to (trusted-redirects).
        self._trusted = frozenset(_origin(httpx.URL(url)) for url in settings.trusted_redirects)
        self._max_bytes = max_bytes
        self._backoff = Backoff(backoff, cap=MAX_BACKOFF, sleep=sleep)
        self._max_retry_after = max_retry_after
        indexes = {
            settings.index_url,
            *settings.extra_index_urls,
            *settings.per_package.values(),
        }
        entries = _netrc_entries(netrc)
        credentials = {index: _credentials_for(index, entries) for index in indexes}
        self._auth = {
            index: httpx.BasicAuth(*found) if found else None
            for index, found in credentials.items()
        }
        self._secrets = _secrets(found for found in credentials.values() if found)

    # -- public ---------------------------------------------------------------------------

    @property
    def settings(self) -> IndexSettings:
        """The indexes this client reads."""
        return self._settings

    async def fetch(self, name: str, validators: Validators | None = None) -> FetchResult:
        """The project's page from its index (``<index>/<canonical-name>/``), as a value.

        With validators, the request is conditional (304 → :class:`NotModified`), and a
        page whose serial is lower than ``validators.last_serial`` is refused as stale.
        """
        try:
            project = canonicalize_name(name, validate=True)
        except InvalidName:
            return FetchFailed(
                canonicalize_name(name), "not a valid project name", retryable=False, requests=0
            )
        indexes = self._settings.indexes_for(project)
        requests = 0
        result: FetchResult | None = None
        for index in indexes:
            result = await self._fetch_from(index, project, validators)
            requests += result.requests
            # The next index only when this one has no such project: any other failure stops
            # here, so an outage never moves a project to an extra index (dependency confusion).
            if not (isinstance(result, FetchFailed) and result.status in (404, 410)):
                break
        assert result is not None  # indexes_for never answers an empty tuple
        if isinstance(result, FetchFailed) and result.status in (404, 410) and len(indexes) > 1:
            result = dataclasses.replace(result, reason=f"not on any of the {len(indexes)} indexes")
        return _counted(result, requests)

    async def fetch_many(
        self,
        names: Iterable[str],
        validators: Mapping[str, Validators] | None = None,
        *,
        on_done: Callable[[str, FetchResult], None] | None = None,
    ) -> dict[str, FetchResult]:
        """Every project once (canonical names, sorted), concurrently within the bound.

        One project's failure is its own result and never stops the others; ``on_done``
        is called as each project finishes (an exception it raises is the caller's: it
        cancels the poll and propagates in an ExceptionGroup). Validators are looked up by
        canonical name.
        """
        wanted = sorted({canonicalize_name(name) for name in names})
        known: dict[str, Validators] = {
            canonicalize_name(key): value for key, value in (validators or {}).items()
        }
        results: dict[str, FetchResult] = {}

        async def one(project: str) -> None:
            try:
                result = await self.fetch(project, known.get(project))
            except Exception as exc:  # a bug must not cost the other projects their poll
                logger.error("fetching %s failed: %s", project, type(exc).__name__)
                result = FetchFailed(project, f"internal error ({type(exc).__name__})")
            results[project] = result
            if on_done is not None:
                on_done(project, result)

        async with asyncio.TaskGroup() as group:
            for project in wanted:
                group.create_task(one(project))
        return {project: results[project] for project in wanted}

    async def download(
        self,
        file: DistributionFile,
        index: str,
        directory: Path,
        *,
        timeout: float = FILE_TIMEOUT,
        max_bytes: int = FILE_LIMIT,
    ) -> Path | FetchFailed:
        """A distribution file a page of ``index`` listed, written into ``directory`` and
        checked against the sha256 that page gave; else why not (a value, never raised).

        The link is the page's own (an index may keep its files on another host), and the
        page's sha256 pins its bytes; a redirect from it is followed only to the index's
        origin, the link's own or a ``trusted-redirects`` one (:meth:`may_follow`, the rule
        pages follow). Credentials go to the index's own origin only.
        The body is bounded by the size the page gave (else ``max_bytes``); a file without
        a sha256 on the page, or whose sha256 is not the page's, is refused and deleted.
        """
        name = file.filename
        expected = (file.hashes.get("sha256") or "").lower()
        if not _SHA256.fullmatch(expected):
            return FetchFailed(
                name,
                "the index's page gives no sha256 for it: where it came from cannot be checked",
                retryable=False,
                requests=0,
            )
        if not _FILENAME.fullmatch(name):
            return FetchFailed(name, "not a plain file name", retryable=False, requests=0)
        clean_index = strip_credentials(index)
        try:
            url = httpx.URL(strip_credentials(file.url))
            origin = _origin(url)
        except (httpx.InvalidURL, ValueError):
            shown = redact_url(file.url)[:200]
            return FetchFailed(name, f"invalid file URL {shown!r}", retryable=False, requests=0)
        foreign = origin != _origin(httpx.URL(clean_index))
        auth = None if foreign else self._auth.get(index)
        bound = file.size if file.size is not None else max_bytes
        target = directory / name
        # The bytes as stored (pip hashes them so too): no content coding to undo.
        headers = {"Accept": "*/*", "Accept-Encoding": "identity"}

        async def read(response: httpx.Response) -> Path | FetchFailed:
            declared = _header_int(response.headers.get("Content-Length"))
            if declared is not None and declared > bound:
                return FetchFailed(name, f"body over {format_size(bound)}", 200, retryable=False)
            digest = hashlib.sha256()
            total = 0
            with target.open("wb") as out:
                async for chunk in response.aiter_raw():
                    total += len(chunk)
                    if total > bound:
                        return FetchFailed(name, f"body over {format_size(bound)}", 200, False)
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != expected:
                return FetchFailed(
                    name,
                    f"its sha256 is {digest.hexdigest()}, not the {expected} the index's page gave",
                    status=200,
                    retryable=False,
                )
            return target

        outcome: _Body | _Transient | FetchResult | Path = _Transient("no attempt made")
        for attempt in range(1, self._attempts + 1):
            try:
                async with self._in_flight, self._clients.lease() as http, asyncio.timeout(timeout):
                    outcome = await self._attempt(
                        http,
                        str(url),
                        headers,
                        auth,
                        name,
                        False,
                        clean_index,
                        read=read,
                        foreign=foreign,
                        also=origin,
                    )
            except TimeoutError:
                outcome = _Transient(f"timed out after {timeout:g} s")
            if isinstance(outcome, Path):
                return outcome
            target.unlink(missing_ok=True)  # a refused or partial file is never left
            if not isinstance(outcome, _Transient):
                break
            too_long = (
                outcome.retry_after is not None and outcome.retry_after > self._max_retry_after
            )
            if attempt == self._attempts or too_long:
                return FetchFailed(
                    name,
                    f"{outcome.reason} after {_plural(attempt, 'attempt')}",
                    status=outcome.status,
                    requests=attempt,
                )
            await self._backoff.pause(attempt, outcome.retry_after)
        if isinstance(outcome, FetchFailed):
            return dataclasses.replace(outcome, requests=attempt)
        return FetchFailed(name, "an answer that is not a file", retryable=False, requests=attempt)

    # -- one index ------------------------------------------------------------------------

    async def _fetch_from(
        self, index: str, project: str, validators: Validators | None
    ) -> FetchResult:
        """One index, with retries: the result's ``requests`` counts the attempts."""
        clean_index = strip_credentials(index)
        url = f"{clean_index.rstrip('/')}/{project}/"
        auth = self._auth.get(index)
        headers = {"Accept": ACCEPT, "Accept-Encoding": ACCEPT_ENCODING}
        if validators is not None and validators.etag:
            headers["If-None-Match"] = validators.etag
        if validators is not None and validators.last_modified:
            headers["If-Modified-Since"] = validators.last_modified
        conditional = "If-None-Match" in headers or "If-Modified-Since" in headers
        transient = _Transient("no attempt made")
        for attempt in range(1, self._attempts + 1):
            try:
                async with (
                    self._in_flight,
                    self._clients.lease() as http,  # its redirects follow on the same client
                    asyncio.timeout(self._timeout),
                ):
                    outcome = await self._attempt(
                        http, url, headers, auth, project, conditional, clean_index
                    )
            except TimeoutError:
                outcome = _Transient(f"timed out after {self._timeout:g} s")
            if isinstance(outcome, _Body):
                parsed = await self._parse(outcome, project, clean_index, validators)
                return _counted(parsed, attempt)
            if not isinstance(outcome, _Transient):
                assert not isinstance(outcome, Path)  # a page is read by _answer, not a reader
                return _counted(outcome, attempt)
            transient = outcome
            logger.debug("%s: attempt %d: %s", redact_url(url), attempt, outcome.reason)
            if attempt == self._attempts:
                break
            if outcome.retry_after is not None and outcome.retry_after > self._max_retry_after:
                return FetchFailed(
                    project,
                    f"{outcome.reason}, Retry-After {outcome.retry_after:g} s is over the "
                    f"{self._max_retry_after:g} s cap",
                    status=outcome.status,
                    requests=attempt,
                )
            await self._backoff.pause(attempt, outcome.retry_after)
        return FetchFailed(
            project,
            f"{transient.reason} after {_plural(self._attempts, 'attempt')}",
            status=transient.status,
            retryable=True,
            requests=self._attempts,
        )

    async def _attempt(
        self,
        http: httpx.AsyncClient,
        url: str,
        headers: Mapping[str, str],
        auth: httpx.Auth | None,
        project: str,
        conditional: bool,
        index: str,
        *,
        read: Callable[[httpx.Response], Awaitable[Path | FetchFailed]] | None = None,
        foreign: bool = False,
        also: tuple[str, str, int | None] | None = None,
    ) -> _Body | _Transient | FetchResult | Path:
        """One request on ``http``: a body to parse, a transient failure, or a final result.

        ``read`` reads a 200 answer instead of :meth:`_answer` (a distribution file's);
        ``foreign``: ``url`` is on another origin than the index's (no credentials);
        ``also``: one more origin a redirect may lead to (a file link's own).
        """
        try:
            response = await self._send(http, url, headers, auth, foreign=foreign)
            hops = 0
            while response.has_redirect_location:
                followed = await self._redirect(http, response, project, index, hops, also)
                if not isinstance(followed, httpx.URL):
                    return followed
                hops += 1
                # Credentials go to the index's own origin only, never along a redirect
                # (neither the index's nor the injected client's own).
                same = _origin(followed) == _origin(httpx.URL(index))
                response = await self._send(
                    http, str(followed), headers, auth if same else None, foreign=not same
                )
        except httpx.InvalidURL:
            return FetchFailed(project, f"invalid index URL {redact_url(url)!r}", retryable=False)
        except httpx.TimeoutException:
            return _Transient(f"timed out after {self._timeout:g} s")
        except httpx.UnsupportedProtocol as exc:  # not transient
            return FetchFailed(project, self._scrub(_describe(exc)), retryable=False)
        except httpx.TransportError as exc:
            if isinstance(exc, httpx.RemoteProtocolError) and str(exc) == _NOT_HTTP1:
                return _Transient(_HTTP2_ANSWER)
            if isinstance(exc, httpx.RemoteProtocolError) and str(exc).startswith(_BAD_LOCATION):
                # httpx reads the Location of every redirect, followed or not.
                why = str(exc)[len(_BAD_LOCATION) :].strip(" :.")
                return _Transient(self._scrub(f"a redirect to an invalid URL ({why})"))
            return _Transient(self._scrub(f"connection failed ({_describe(exc)})"))
        except httpx.HTTPError as exc:  # a bad URL, ...
            return FetchFailed(project, self._scrub(_describe(exc)), retryable=False)
        try:
            if read is not None:
                refused = await self._refusal(response, project, conditional)
                return refused if refused is not None else await read(response)
            return await self._answer(response, project, conditional)
        except httpx.TimeoutException:
            return _Transient(f"timed out after {self._timeout:g} s")
        except httpx.TransportError as exc:  # e.g. a body cut short of its Content-Length
            return _Transient(self._scrub(f"body cut short ({_describe(exc)})"))
        except httpx.HTTPError as exc:  # e.g. a body that does not decompress
            return FetchFailed(project, self._scrub(_describe(exc)), retryable=False)
        finally:
            await response.aclose()

    async def _send(
        self,
        http: httpx.AsyncClient,
        url: str,
        headers: Mapping[str, str],
        auth: httpx.Auth | None,
        *,
        foreign: bool = False,
    ) -> httpx.Response:
        """The request through the client (credentials, cookies, proxies), redirects not
        followed: :meth:`_redirect` decides each one. A ``foreign`` origin (a trusted
        redirect's) gets no credentials at all."""
        request = http.build_request("GET", url, headers=headers, timeout=self._request_timeout)
        if foreign:  # None given explicitly: httpx sends no auth, not the client's own
            return await http.send(request, stream=True, follow_redirects=False, auth=None)
        if auth is None:  # the injected client's own auth, if any, for the index's requests
            return await http.send(request, stream=True, follow_redirects=False)
        return await http.send(request, stream=True, follow_redirects=False, auth=auth)

    async def _redirect(
        self,
        http: httpx.AsyncClient,
        response: httpx.Response,
        project: str,
        index: str,
        hops: int,
        also: tuple[str, str, int | None] | None = None,
    ) -> httpx.URL | _Transient | FetchFailed:
        """Where a redirect leads, if it may be followed; else why not (the response closed).

        Only to the index's own origin (scheme, host and port) or to an origin configured
        in ``trusted-redirects``: an answer from a host nobody configured is a failure of
        the project, recorded, and never a page (``127.1`` or ``2130706433`` for
        ``127.0.0.1`` are other hosts). A Location's own credentials are dropped.
        """
        status = response.status_code
        location = response.headers.get("Location", "")
        await _drain(response)
        await response.aclose()
        try:
            target = response.url.join(location)
            target = httpx.URL(strip_credentials(str(target)))
            origin = _origin(target)
        except (httpx.InvalidURL, ValueError):
            shown = redact_url(location)[:120]
            return _Transient(f"HTTP {status}: a redirect to an invalid URL {shown!r}", status)
        if hops >= http.max_redirects:
            return FetchFailed(project, "too many redirects", status=status, retryable=False)
        if origin != also and not self.may_follow(origin, index):
            shown = redact_url(str(target))[:200]
            return FetchFailed(
                project,
                f"HTTP {status}: redirected to {shown}, another origin than the index's "
                "(not followed: list it in trusted-redirects to allow it)",
                status=status,
                retryable=False,
            )
        return target

    def may_follow(self, origin: tuple[str, str, int | None], index: str) -> bool:
        """Whether govern may ask ``origin`` for what ``index`` points at: the index's own
        origin, or one configured in ``trusted-redirects`` (the one rule for the redirects
        of pages and of distribution files)."""
        return origin == _origin(httpx.URL(index)) or origin in self._trusted

    async def _refusal(
        self, response: httpx.Response, project: str, conditional: bool
    ) -> _Transient | FetchResult | None:
        """What an answer other than 200 means (its small body drained); None for a 200."""
        status = response.status_code
        if logger.isEnabledFor(logging.DEBUG):  # the URL is not made into text for nothing
            logger.debug("GET %s -> %d", redact_url(str(response.url)), status)
        if status != 200:
            await _drain(response)
        if status == 304:
            if conditional:
                return NotModified(project, fresh_for=freshness(response.headers))
            return FetchFailed(project, "HTTP 304 to a request without validators", 304, False)
        if status in (404, 410):
            return FetchFailed(project, "not on the index", status=status, retryable=False)
        if status in (401, 403):
            host = httpx.URL(strip_credentials(str(response.url))).host
            return FetchFailed(
                project,
                f"HTTP {status}: the credentials for {host} are missing or wrong "
                "(put them in the index URL, or in ~/.netrc for that host)",
                status=status,
                retryable=False,
            )
        if status == 429 or 500 <= status <= 599:
            return _Transient(
                f"HTTP {status}",
                status=status,
                retry_after=seconds_until(response.headers),
            )
        if status != 200:
            return FetchFailed(project, f"HTTP {status}", status=status, retryable=False)
        return None

    async def _answer(
        self, response: httpx.Response, project: str, conditional: bool
    ) -> _Body | _Transient | FetchResult:
        """What one response means; reads the body of a 200 within ``max_bytes``."""
        refused = await self._refusal(response, project, conditional)
        if refused is not None:
            return refused
        content_type = response.headers.get("Content-Type", "")
        media_type = content_type.split(";", 1)[0].strip().lower()
        page_format: Literal["json", "html"]
        if media_type == JSON_CONTENT_TYPE:
            page_format = "json"
        elif media_type in (HTML_CONTENT_TYPE, LEGACY_HTML_CONTENT_TYPE):
            page_format = "html"
        else:
            shown = media_type[:60] or "none"
            return FetchFailed(
                project, f"unexpected content type {shown!r}", status=200, retryable=False
            )
        try:  # counted as it is decoded, every layer of it (govern.http.body)
            data = await read_body(response, self._max_bytes)
        except BodyTooLarge:
            return self._too_big(project)
        return _Body(
            format=page_format,
            data=data,
            url=strip_credentials(str(response.url)),
            charset=response.charset_encoding,
            etag=response.headers.get("ETag"),
            last_modified=response.headers.get("Last-Modified"),
            header_serial=_header_int(response.headers.get("X-PyPI-Last-Serial")),
            fresh_for=freshness(response.headers),
        )

    def _too_big(self, project: str) -> FetchFailed:
        return FetchFailed(
            project, f"body over {format_size(self._max_bytes)}", status=200, retryable=False
        )

    async def _parse(
        self, body: _Body, project: str, index: str, validators: Validators | None
    ) -> FetchResult:
        """The page of a 200 answer, or why it cannot be used (unparseable, stale)."""
        try:
            if len(body.data) > _THREAD_PARSE:
                page = await asyncio.to_thread(_parse_body, body, project)
            else:
                page = _parse_body(body, project)
        except SimpleParseError as exc:
            return FetchFailed(project, f"unparseable page: {exc}", status=200, retryable=False)
        if page.ignored:  # the page is read; what of it was not, and why (quoted, bounded)
            logger.info("%s: left out of the page: %s", project, "; ".join(page.ignored))
        serial = page.last_serial if page.last_serial is not None else body.header_serial
        known = validators.last_serial if validators is not None else None
        if serial is not None and known is not None and serial < known:
            return FetchFailed(project, f"stale page (serial {serial} < {known})", status=200)
        return Fetched(
            dataclasses.replace(
                page,
                last_serial=serial,
                etag=body.etag,
                last_modified=body.last_modified,
                index_url=index,
            ),
            fresh_for=body.fresh_for,
        )

    def _scrub(self, text: str) -> str:
        """Text without any URL userinfo or any secret of the settings."""
        return scrub(redact_url(text), self._secrets)


_DRAIN_LIMIT = 64 * 1024


async def _drain(response: httpx.Response) -> None:
    """Read a small non-200 body to its end, so that the connection goes back to the pool.

    A response whose end was never read cannot be reused: without this every 304 of a
    warm poll opened a new connection. A larger body is left; closing drops the link.
    """
    if response.is_stream_consumed:  # read already (an httpx.MockTransport's answer)
        return
    read = 0
    async for chunk in response.aiter_raw():
        read += len(chunk)
        if read > _DRAIN_LIMIT:
            return


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    """A URL's origin (RFC 6454): scheme, host and port, the default port made explicit."""
    return url.scheme, url.host, url.port or _DEFAULT_PORTS.get(url.scheme)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _parse_body(body: _Body, project: str) -> ProjectPage:
    if body.format == "json":
        return parse_json(body.data, name=project, base_url=body.url)
    return parse_html(body.data, name=project, base_url=body.url, encoding=body.charset)


def _describe(exc: Exception) -> str:
    """An exception as ``Type: message`` (the message may be empty)."""
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _netrc_entries(
    setting: bool | str | Path,
) -> netrc.netrc | None:
    """The netrc file to take credentials from (None: none, unreadable or invalid)."""
    if setting is False:
        return None
    if setting is True:
        path = Path(os.environ.get("NETRC") or Path.home() / ".netrc")
    else:
        path = Path(setting)
    if not path.is_file():
        return None
    try:
        return netrc.netrc(str(path))
    except (OSError, netrc.NetrcParseError) as exc:
        logger.debug("netrc file %s ignored: %s", path, type(exc).__name__)
        return None


def _credentials_for(index: str, entries: netrc.netrc | None) -> tuple[str, str] | None:
    """User and password from the index URL's userinfo, else from netrc, else None."""
    try:
        url = httpx.URL(index)
    except httpx.InvalidURL:
        return None
    if url.username or url.password:
        return url.username, url.password
    found = entries.authenticators(url.host) if entries is not None and url.host else None
    if found is None:
        return None
    login, _account, password = found
    return login or "", password or ""


def credential_values(
    settings: IndexSettings, *, netrc: bool | str | Path = True
) -> tuple[str, ...]:
    """The user names and passwords the indexes of ``settings`` are read with (from their
    URLs or netrc), as :class:`IndexClient` finds them: what a stored log must never show
    (a token alone in a URL is its user name)."""
    entries = _netrc_entries(netrc)
    indexes = {settings.index_url, *settings.extra_index_urls, *settings.per_package.values()}
    found = (_credentials_for(index, entries) for index in indexes)
    return tuple(part for pair in filter(None, found) for part in pair if part)


def _secrets(credentials: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """Every user name and password in use, raw and percent-encoded (for :func:`scrub`)."""
    found: set[str] = set()
    for user, password in credentials:
        for part in (user, password):
            found.update({part, quote(part, safe="")})
    return tuple(sorted(s for s in found if len(s) >= _SECRET_MIN))
