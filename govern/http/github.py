"""GitHub's REST API (version 2022-11-28), built once for the forge, the CI provider and
a GitHub App's token requests: the root URL, the headers, the API version, the token.

Notes: docs/internals.md#http.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol

import httpx

from govern import __version__
from govern.errors import ErrorFamily
from govern.http.client import ApiClient

__all__ = [
    "API_URL",
    "API_VERSION",
    "DEFAULT_ENV",
    "SECONDARY_WAIT",
    "GitHubApi",
    "TokenSource",
    "github_api_url",
    "github_client",
    "github_headers",
]

API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
DEFAULT_ENV = "GITHUB_TOKEN"
SECONDARY_WAIT = 60.0  # seconds, GitHub's advice when a secondary limit gives no header


def _now() -> datetime:
    return datetime.now(UTC)


def github_api_url(host: str) -> str:
    """The REST API root on a host: github.com's, or a GitHub Enterprise Server's."""
    return API_URL if host in ("github.com", "www.github.com") else f"https://{host}/api/v3"


def github_headers(token: str | None) -> dict[str, str]:
    """The headers of every request to GitHub's API, with ``token`` as a bearer token."""
    headers = {
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": API_VERSION,
        "User-Agent": f"govern/{__version__}",
    }
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def github_client(
    http: httpx.AsyncClient,
    *,
    token: str | None,
    token_source: str,
    errors: ErrorFamily,
    api_url: str = API_URL,
    vendor: str = "github",
    attempts: int = 3,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], datetime] = _now,
) -> ApiClient:
    """A client of GitHub's API with one token (scrubbed from every message), raising
    ``errors``; GitHub's secondary rate limit is waited for."""
    return ApiClient(
        http,
        vendor=vendor,
        base_url=api_url,
        headers=github_headers(token),
        secrets=(token,) if token else (),
        token_source=token_source,
        attempts=attempts,
        sleep=sleep,
        clock=clock,
        errors=errors,
        secondary_wait=SECONDARY_WAIT,
    )


class TokenSource(Protocol):
    """Where tokens come from when they expire (a GitHub App's installation tokens,
    :class:`govern.http.github_app.AppTokens`)."""

    async def token(self) -> str:
        """A token valid now."""
        ...


class GitHubApi:
    """GitHub's API with a token, or with a GitHub App's tokens renewed as they expire."""

    def __init__(
        self,
        http: httpx.AsyncClient,
        *,
        errors: ErrorFamily,
        token: str | None = None,
        token_source: str = f"${DEFAULT_ENV}",
        app: TokenSource | None = None,
        api_url: str = API_URL,
        vendor: str = "github",
        attempts: int = 3,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        """``token`` is used until ``app`` (if given) hands out its first token; ``vendor``
        names GitHub in messages."""
        self._http = http
        self._options = (errors, token_source, api_url, vendor, attempts, sleep, clock)
        self._app = app
        self._token = token
        self._api = self._build(token)

    def _build(self, token: str | None) -> ApiClient:
        errors, token_source, api_url, vendor, attempts, sleep, clock = self._options
        return github_client(
            self._http,
            token=token,
            token_source=token_source,
            errors=errors,
            api_url=api_url,
            vendor=vendor,
            attempts=attempts,
            sleep=sleep,
            clock=clock,
        )

    async def client(self) -> ApiClient:
        """The REST client, with the App's current installation token when there is one."""
        if self._app is not None:
            token = await self._app.token()
            if token != self._token:
                self._token = token
                self._api = self._build(token)
        return self._api
