"""The REST client shared by the hosted CI providers, the forges and the GitHub App tokens.

Notes: docs/internals.md#http.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import httpx

from govern.errors import ErrorFamily
from govern.http.body import BodyTooLarge, exchange
from govern.http.retry import Backoff, rate_limit_until
from govern.redact import scrub

_SHORT_WAIT = 10.0  # seconds of rate limit slept through rather than raised
_MAX_JSON = 8 * 1024 * 1024
# A log is kept by its end (text()'s limit); what streams past on the way is counted too,
# and a log decoding to more than this is refused rather than inflated for ever.
_MAX_LOG = 256 * 1024 * 1024
_TIMEOUT = 30.0  # seconds for one request and its answer, when the client sets none
_MESSAGE_LIMIT = 200


def _now() -> datetime:
    return datetime.now(UTC)


_SECONDARY = "secondary rate limit"


def _is_rate_limited(response: httpx.Response) -> bool:
    if response.status_code == 429:
        return True
    if response.status_code != 403:
        return False
    headers = response.headers
    return (
        headers.get("X-RateLimit-Remaining") == "0"
        or headers.get("RateLimit-Remaining") == "0"
        or headers.get("RateLimit-User-Remaining") == "0"
        or "Retry-After" in headers
    )


def _message(response: httpx.Response) -> str:
    """The vendor's own one-line message from an error body, if it has one."""
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        return ""
    if isinstance(body, dict):
        for key in ("message", "error", "error_description"):
            value = body.get(key)
            if isinstance(value, str) and value.strip():
                line = " ".join(value.split())
                return line[:_MESSAGE_LIMIT]
    return ""


class ClientSource(Protocol):
    """Where a caller gets the client for its next request: an :class:`ApiClient` (one
    token), or :class:`govern.http.github.GitHubApi` (a GitHub App's tokens, renewed)."""

    async def client(self) -> ApiClient:
        """The client to send the next request with."""
        ...


class ApiClient:
    """Requests to one vendor's REST API with one token."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        vendor: str,
        base_url: str,
        headers: Mapping[str, str],
        secrets: tuple[str, ...],
        token_source: str,
        attempts: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], datetime] = _now,
        errors: ErrorFamily,
        secondary_wait: float | None = None,
        timeout: float | None = None,
    ) -> None:
        """``errors`` is the family raised (the caller's: ``CI_ERRORS``, ``FORGE_ERRORS``);
        ``headers`` carry the token; ``secrets`` are scrubbed out of every message;
        ``token_source`` says where the token came from ("$GITHUB_TOKEN") for messages.
        ``timeout`` is each attempt's deadline, from sending to the answer's last byte
        (default: the client's read timeout, which httpx applies to each read only)."""
        self._http = http
        self._timeout = timeout if timeout is not None else (http.timeout.read or _TIMEOUT)
        self.vendor = vendor
        self.base_url = base_url.rstrip("/")
        self._headers = dict(headers)
        self._secrets = secrets
        self._token_source = token_source
        self._attempts = max(1, attempts)
        self._backoff = Backoff(backoff, sleep=sleep)
        self._clock = clock
        self.errors = errors
        self._secondary_wait = secondary_wait
        self._secondary_hits = 0

    async def client(self) -> ApiClient:
        """This client: its token never changes (:class:`ClientSource`)."""
        return self

    def with_credentials(self, headers: Mapping[str, str], *, token_source: str) -> ApiClient:
        """A client for the same API with another credential (GitLab's trigger token):
        the same secrets are scrubbed, retries and clock are shared."""
        return ApiClient(
            self._http,
            vendor=self.vendor,
            base_url=self.base_url,
            headers=headers,
            secrets=self._secrets,
            token_source=token_source,
            attempts=self._attempts,
            backoff=self._backoff.base,
            sleep=self._backoff.sleep,
            clock=self._clock,
            errors=self.errors,
            secondary_wait=self._secondary_wait,
            timeout=self._timeout,
        )

    def url(self, path: str) -> str:
        """An absolute URL: ``path`` under the base URL, or ``path`` itself when absolute."""
        if path.startswith(("http://", "https://")):
            return path
        return f"{self.base_url}/{path.lstrip('/')}"

    def scrub(self, text: str) -> str:
        """``text`` without any secret in use."""
        return scrub(text, self._secrets)

    async def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Mapping[str, str] | None = None,
        follow_redirects: bool = False,
        attempts: int | None = None,
        max_bytes: int = _MAX_JSON,
        keep: int | None = None,
    ) -> httpx.Response:
        """One API call, retried when transient; a 2xx or 3xx response, read in full.

        ``attempts`` overrides the client's number of attempts for this call: 1 sends a
        request that must not be repeated once (no retry after a 5xx or a time-out, which
        may have done it). A rate limit refused the request: a short one is waited out and
        the request sent again, up to the client's number of attempts whatever ``attempts``
        says (GitHub's advice for a secondary limit with ``Retry-After``). Each attempt,
        answer read included, ends within the client's timeout; its body, decoded, within
        ``max_bytes`` (``keep``: only its last bytes are kept,
        :func:`govern.http.body.read_body`).
        """
        errors = self.errors
        url = self.url(path)
        where = f"{self.vendor}: {method} {self._shown(url)}"
        tries = self._attempts if attempts is None else max(1, attempts)
        sends = max(tries, self._attempts)  # in all: a rate limit's refusal is not one of tries
        reason = "no attempt"
        status: int | None = None
        failures = attempt = 0
        while attempt < sends:
            attempt += 1
            status = None
            try:
                request = self._http.build_request(
                    method, url, json=json_body, params=params, headers=self._headers
                )
                response = await exchange(
                    self._http,
                    request,
                    timeout=self._timeout,
                    max_bytes=max_bytes,
                    keep=keep,
                    follow_redirects=follow_redirects,
                    credentials=tuple(self._headers),
                )
            except BodyTooLarge as exc:  # the same answer again would be as large
                raise errors.unavailable(
                    f"{where}: HTTP {exc.response.status_code}: {exc}",
                    tip=None,
                    status=exc.response.status_code,
                ) from None
            except (httpx.TimeoutException, TimeoutError):  # a read's, or the deadline
                reason = f"timed out after {self._timeout:g} s"
            except httpx.TransportError as exc:
                reason = f"connection failed ({type(exc).__name__})"
            except httpx.HTTPError as exc:
                raise errors.error(
                    self.scrub(f"{where}: {type(exc).__name__}: {exc}"), tip=None, status=None
                ) from None
            else:
                status = response.status_code
                if status < 400:
                    return response
                until = self._secondary_until(response)
                if until is not None or _is_rate_limited(response):
                    until = until or rate_limit_until(response.headers, self._clock())
                    wait = (until - self._clock()).total_seconds() if until else None
                    if wait is not None and wait <= _SHORT_WAIT and attempt < sends:
                        await self._backoff.pause(attempt, wait)
                        continue
                    shown = f" until {until:%Y-%m-%d %H:%M:%S} UTC" if until else ""
                    raise errors.rate_limited(
                        f"{where}: rate limited (HTTP {status}){shown}",
                        until=until,
                        tip="govern asks again on its next run",
                        status=status,
                    )
                message = self.scrub(_message(response))
                suffix = f": {message}" if message else ""
                if status == 401:
                    raise errors.auth(
                        f"{self.vendor} refused the token from {self._token_source} "
                        f"(HTTP 401{suffix})",
                        tip=f"check that {self._token_source} holds a valid, unexpired token",
                        status=status,
                    )
                if status == 403:
                    raise errors.auth(
                        f"{where}: HTTP 403{suffix}",
                        tip=f"the token from {self._token_source} lacks a permission this needs",
                        status=status,
                    )
                # Any other 4xx is the caller's to read by its status: GitHub answers 404 for
                # a repository the token cannot see, GitLab for a wrong trigger token.
                if status < 500:
                    raise errors.error(f"{where}: HTTP {status}{suffix}", tip=None, status=status)
                reason = f"HTTP {status}"
            failures += 1  # a time-out, a lost connection or a 5xx: the request may be done
            if failures >= tries:
                break
            if attempt < sends:
                await self._backoff.pause(attempt)
        attempts_made = f"{attempt} attempt{'s' if attempt > 1 else ''}"
        raise errors.unavailable(
            f"{where}: {reason} after {attempts_made}", tip=None, status=status
        )

    def _secondary_until(self, response: httpx.Response) -> datetime | None:
        """When a secondary rate limit without a reset header ends (at least
        ``secondary_wait``, doubled per consecutive hit), or None if it is not one."""
        if self._secondary_wait is None:
            return None
        if response.status_code not in (403, 429) or _SECONDARY not in _message(response).lower():
            if response.status_code < 400:
                self._secondary_hits = 0
            return None
        if rate_limit_until(response.headers, self._clock()) is not None:
            return None
        self._secondary_hits += 1
        wait = self._secondary_wait * 2 ** min(self._secondary_hits - 1, 6)
        return self._clock() + timedelta(seconds=wait)

    async def json(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Mapping[str, str] | None = None,
        attempts: int | None = None,
    ) -> Any:
        """An API call whose answer is JSON (an empty body is None)."""
        response = await self.request(
            method, path, json_body=json_body, params=params, attempts=attempts
        )
        return self.decode(response)

    def decode(self, response: httpx.Response) -> Any:
        """An answer's JSON (an empty body is None); not JSON: the family's unavailable."""
        if not response.content.strip():
            return None
        status = response.status_code
        try:
            return json.loads(response.content)
        except (ValueError, UnicodeDecodeError):
            where = self._shown(str(response.request.url))
            raise self.errors.unavailable(
                f"{self.vendor}: {where} answered with invalid JSON", tip=None, status=status
            ) from None

    async def text(self, path: str, *, limit: int = 4 * 1024 * 1024) -> str:
        """A log or other text resource (redirects followed), its last ``limit`` bytes."""
        response = await self.request(
            "GET", path, follow_redirects=True, max_bytes=max(limit, _MAX_LOG), keep=limit
        )
        return response.content.decode("utf-8", errors="replace")

    def _shown(self, url: str) -> str:
        """A URL for messages: no query string (it may hold a token), no secrets."""
        return self.scrub(url.split("?", 1)[0])
