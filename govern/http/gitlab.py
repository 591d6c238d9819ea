"""GitLab's REST API v4, built once for the forge and the CI provider: the root URL, the
headers and the token (an access token as ``PRIVATE-TOKEN``, or an OAuth token as a
bearer token).

https://docs.gitlab.com/ee/api/rest/authentication.html (``PRIVATE-TOKEN``, ``Authorization:
Bearer``), https://docs.gitlab.com/ee/api/rest/index.html (the ``/api/v4`` root).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime

import httpx

from govern.errors import ErrorFamily
from govern.http.client import ApiClient

__all__ = [
    "API_URL",
    "BEARER",
    "DEFAULT_ENV",
    "PRIVATE",
    "TOKEN_KINDS",
    "gitlab_api_url",
    "gitlab_client",
    "gitlab_headers",
]

API_URL = "https://gitlab.com/api/v4"
DEFAULT_ENV = "GITLAB_TOKEN"
#: ``private``: an access token sent as ``PRIVATE-TOKEN``; ``bearer``: an OAuth (or access)
#: token sent as ``Authorization: Bearer``
PRIVATE, BEARER = TOKEN_KINDS = ("private", "bearer")


def _now() -> datetime:
    return datetime.now(UTC)


def gitlab_api_url(host: str) -> str:
    """GitLab's REST API root on a host (GitLab.com or a self-managed instance)."""
    return f"https://{host}/api/v4"


def gitlab_headers(token: str | None, kind: str = PRIVATE) -> dict[str, str]:
    """The headers of every request to GitLab's API, with ``token`` as ``kind`` says."""
    headers = {"Accept": "application/json"}
    if token:
        if kind == PRIVATE:
            headers["PRIVATE-TOKEN"] = token
        else:
            headers["Authorization"] = f"Bearer {token}"
    return headers


def gitlab_client(
    http: httpx.AsyncClient,
    *,
    token: str | None,
    token_source: str,
    errors: ErrorFamily,
    kind: str = PRIVATE,
    api_url: str = API_URL,
    vendor: str = "gitlab",
    attempts: int = 3,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    clock: Callable[[], datetime] = _now,
    also_secret: Iterable[str | None] = (),
) -> ApiClient:
    """A client of GitLab's API with one token (scrubbed from every message), raising
    ``errors``; ``also_secret``: other tokens to scrub (a CI trigger token)."""
    return ApiClient(
        http,
        vendor=vendor,
        base_url=api_url,
        headers=gitlab_headers(token, kind),
        secrets=tuple(secret for secret in (token, *also_secret) if secret),
        token_source=token_source,
        attempts=attempts,
        sleep=sleep,
        clock=clock,
        errors=errors,
    )
