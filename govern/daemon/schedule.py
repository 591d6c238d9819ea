"""How often each job of the daemon runs: ``--poll-every 30m``, ``--sync-every off``."""

from __future__ import annotations

import re

from govern.errors import UsageError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_EVERY = re.compile(r"(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[smhd]?)")
OFF = ("off", "never", "0")
LONGEST = 366 * 86400.0  # a year: the scheduler's arithmetic overflows far beyond


def parse_every(text: str, option: str) -> float | None:
    """Seconds between two runs, from ``90s``, ``15m``, ``1h``, ``1d`` or plain seconds;
    None for ``off``. At least one second."""
    cleaned = text.strip().lower()
    if cleaned in OFF:
        return None
    match = _EVERY.fullmatch(cleaned)
    if match is None:
        raise UsageError(
            f"{option} {text!r} is not an interval",
            tip=f"Give a number with s, m, h or d (e.g. {option} 30m), or {option} off.",
        )
    seconds = float(match["number"]) * _UNITS[match["unit"] or "s"]
    if seconds < 1:
        raise UsageError(f"{option} {text!r} is under a second", tip=f"Use {option} 1s or more.")
    if seconds > LONGEST:
        raise UsageError(
            f"{option} {text!r} is longer than a year", tip=f"Use {option} off to turn it off."
        )
    return seconds


def describe(seconds: float | None) -> str:
    """``30m``, ``1h``, ``90s``: how an interval reads back; ``off`` for None."""
    if seconds is None:
        return "off"
    for unit, size in sorted(_UNITS.items(), key=lambda item: -item[1]):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def jitter(seconds: float) -> int:
    """The random delay added to each run of a job every ``seconds``: a tenth of the
    interval, at most 5 minutes, so that daemons started together do not ask the index
    at the same second."""
    return int(min(seconds / 10, 300))
