"""Listings read page by page: GitLab's ``X-Next-Page``, or a ``Link: rel="next"``.

Notes: docs/internals.md#http.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping

import httpx

from govern.http.client import ApiClient
from govern.http.retry import is_digits

__all__ = ["MAX_PAGES", "next_page", "pages"]

MAX_PAGES = 50
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


def next_page(
    response: httpx.Response, base_url: str, path: str, params: Mapping[str, str]
) -> tuple[str, Mapping[str, str] | None] | None:
    """Where the page after ``response`` is (a path or URL, and its query), or None."""
    number = response.headers.get("X-Next-Page", "").strip()
    if is_digits(number):
        return path, {**params, "page": number}
    found = _LINK_NEXT.search(response.headers.get("Link", ""))
    # Only a URL under the API's own root: the token goes with the request.
    if found and found.group(1).startswith(f"{base_url.rstrip('/')}/"):
        return found.group(1), None
    return None


async def pages(
    api: ApiClient,
    path: str,
    params: Mapping[str, str],
    *,
    per_page: int,
    max_pages: int = MAX_PAGES,
) -> AsyncIterator[httpx.Response]:
    """Each page of the listing at ``path`` (``per_page`` items asked for), read in full."""
    query: Mapping[str, str] = {**params, "per_page": str(per_page)}
    url: str = path
    sent: Mapping[str, str] | None = query
    for _ in range(max_pages):
        response = await api.request("GET", url, params=sent)
        yield response
        following = next_page(response, api.base_url, path, query)
        if following is None:
            return
        url, sent = following
