"""Retrying HTTP requests: full-jitter backoff, ``Retry-After`` and rate-limit reset headers.

One reading of a server's "wait" for the index client (:mod:`govern.index.client`) and the
CI providers' REST calls (:mod:`govern.http.client`). Backoff is "full jitter" (a uniform pause
up to an exponentially growing ceiling), so clients that failed together do not retry
together. ``Retry-After`` (RFC 9110 10.2.3) is an instruction and wins over reset headers.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

__all__ = [
    "EPOCH_FLOOR",
    "MAX_BACKOFF",
    "MAX_WAIT",
    "RESET_HEADERS",
    "Backoff",
    "http_date",
    "is_digits",
    "rate_limit_until",
    "retry_after",
    "seconds_until",
]

MAX_BACKOFF = 60.0  # seconds: the ceiling of one jittered pause
# The longest wait read from a header (a larger one is taken as this): a datetime that far
# ahead still exists, and no caller sleeps through it (each has its own cap).
MAX_WAIT = 366 * 24 * 3600.0
EPOCH_FLOOR = 1_000_000_000  # a reset value from here up is a Unix time, below it seconds
# GitHub's X-RateLimit-Reset (a Unix time), GitLab's RateLimit-Reset (a Unix time),
# Buildkite's RateLimit-Reset and RateLimit-User-Reset (seconds: the organization's and
# the user's windows, https://buildkite.com/docs/apis/rest-api/limits).
RESET_HEADERS = ("X-RateLimit-Reset", "RateLimit-Reset", "RateLimit-User-Reset")
_MAX_DIGITS = 15  # a longer number is no time anyone means


def is_digits(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` also accepts "²", which ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def http_date(value: str | None) -> datetime | None:
    """An HTTP date (RFC 9110 5.6.7) as aware UTC, or None when missing or unreadable."""
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay-seconds or an HTTP date), or None.

    A date in the past means now (0); a delay too long to mean anything is :data:`MAX_WAIT`.
    """
    text = (value or "").strip()
    if is_digits(text):
        return float(text) if len(text) <= _MAX_DIGITS else MAX_WAIT
    when = http_date(text)
    if when is None:
        return None
    seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return min(max(0.0, seconds), MAX_WAIT)


def rate_limit_until(headers: Mapping[str, str], now: datetime) -> datetime | None:
    """When a rate-limited request may be sent again, from the server's headers, or None.

    ``Retry-After`` wins. Otherwise each of :data:`RESET_HEADERS` is read: a Unix time from
    :data:`EPOCH_FLOOR` up, else seconds from ``now``; when several are present the latest
    moment wins, since every exhausted limit must have reset. Waits are capped at
    :data:`MAX_WAIT`.
    """
    seconds = retry_after(headers.get("Retry-After"), now)
    if seconds is not None:
        return now + timedelta(seconds=seconds)
    resets: list[float] = []
    for name in RESET_HEADERS:
        value = (headers.get(name) or "").strip()
        if is_digits(value) and len(value) <= _MAX_DIGITS:
            number = int(value)
            resets.append(number - now.timestamp() if number >= EPOCH_FLOOR else float(number))
    if not resets:
        return None
    return now + timedelta(seconds=min(max(0.0, max(resets)), MAX_WAIT))


def seconds_until(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds the server asks to wait (:func:`rate_limit_until`), or None if it says nothing."""
    now = now or datetime.now(UTC)
    until = rate_limit_until(headers, now)
    return None if until is None else (until - now).total_seconds()


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to pause between attempts, and the (injectable) sleep that pauses.

    ``base`` is the first ceiling in seconds, doubled after each failed attempt up to
    ``cap``; ``sleep`` is replaced in tests to see the delays without waiting.
    """

    base: float = 0.5
    cap: float = MAX_BACKOFF
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep)

    def delay(self, attempt: int, wait: float | None = None) -> float:
        """The pause after failed attempt ``attempt`` (from 1): ``wait`` when the server
        named one, else uniform in [0, min(cap, base * 2 ** (attempt - 1))]."""
        if wait is not None:
            return max(0.0, wait)
        ceiling = min(self.cap, self.base * 2 ** (attempt - 1))
        return random.uniform(0.0, ceiling)  # noqa: S311 -- jitter, not cryptography

    async def pause(self, attempt: int, wait: float | None = None) -> None:
        """Sleep for :meth:`delay`."""
        await self.sleep(self.delay(attempt, wait))
