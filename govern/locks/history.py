"""What a lock held over time: the versions of each package, from the commit that wrote one
to the commit that took it out (``govern track --history``).

A lock's pins are never exclusions, so its history holds no exclusion events; what it does
hold is when each version was installed. "14.1.0 was installed from 2026-05-23 to
2026-08-10" is what a known-bad release found later needs to be told about the past.

Each revision's text is read whole (one ``git cat-file --batch`` for them all) and only its
pins are taken: a requirements-shaped lock line by line (``name==version`` at the start of
a line), a TOML or JSON lock by its reader. Intervals open at the first commit holding a
version and close at the first one that does not (or that deletes the file).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from packaging.utils import canonicalize_name

from govern.git.history import Revision
from govern.sources.model import SourceFormat
from govern.store.views import LockHeld

__all__ = ["held_over_time", "pins_in"]

# A pin of a requirements-shaped lock: at the start of its line, before any marker,
# hash continuation or comment (``name[extra] == 1.0 ; marker \``).
_PIN_RE = re.compile(
    rb"([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)"  # the name
    rb"[ \t]*(?:\[[^\]]*\])?[ \t]*===?[ \t]*"  # [extras] == or ===
    rb"([^\s;\\#]+)"  # the version
)
_MAX_VERSION = 128


@functools.lru_cache(maxsize=4096)
def _name(raw: bytes) -> str:
    """A pinned name, canonical (the same few hundred names, thousands of revisions)."""
    return canonicalize_name(raw.decode("ascii"))


def pins_in(data: bytes, fmt: SourceFormat, path: str) -> set[tuple[str, str]] | None:
    """The ``(package, version)`` pairs a lock's text pins (a package may have several,
    by marker); None when the text cannot be read as its format (a commit with conflict
    markers, say): such a revision says nothing about what was installed."""
    if fmt in _LINE_FORMATS:
        return {pin for raw in data.splitlines() if (pin := _line_pin(raw)) is not None}
    from govern.locks.regenerate import source_pins
    from govern.sources.locks import parse_lock

    source = parse_lock(data, file=Path(path), display_path=path, fmt=fmt, root=None)
    if any(problem.rule == "parse-error" for problem in source.problems):
        return None
    return {
        (name, version) for name, versions in source_pins(source).items() for version in versions
    }


_LINE_FORMATS = (SourceFormat.COMPILED, SourceFormat.REQUIREMENTS, SourceFormat.CONSTRAINTS)


def _line_pin(raw: bytes) -> tuple[str, str] | None:
    found = _PIN_RE.match(raw)
    if found is None or len(found.group(2)) > _MAX_VERSION:
        return None
    return _name(found.group(1)), found.group(2).decode("ascii", "replace")


def held_over_time(
    revisions: Sequence[Revision],
    blobs: Sequence[bytes | None],
    fmt: SourceFormat,
    *,
    open_: Iterable[LockHeld] = (),
) -> list[LockHeld]:
    """The versions held over ``revisions`` (oldest first; ``blobs`` their texts, None for a
    deletion), continuing the intervals still ``open_`` from an earlier replay: every
    interval opened or closed by them (a closed one of ``open_`` comes back closed).

    A requirements-shaped lock is compared line by line with the revision before: only the
    lines a commit changed are parsed (a bot's lock changes a few of its hundreds)."""
    still = tuple(open_)
    current: dict[tuple[str, str], LockHeld] = {(h.package, h.version): h for h in still}
    out: list[LockHeld] = []
    by_line = fmt in _LINE_FORMATS
    lines: set[bytes] = set()
    counts: Counter[tuple[str, str]] = Counter()
    for index, (revision, blob) in enumerate(zip(revisions, blobs, strict=True)):
        commit = revision.commit
        gone = revision.deleted
        if blob is None and not gone:
            continue  # git could not give this revision's text: it says nothing
        if not by_line:
            now = set() if gone else pins_in(blob or b"", fmt, revision.path)
            if now is None:
                continue  # unreadable: nothing changes until a readable revision
            leaving, coming = set(current) - now, now - set(current)
        else:
            fresh = set() if gone else set((blob or b"").splitlines())
            touched: set[tuple[str, str]] = set()
            changed = [(r, -1) for r in lines - fresh] + [(r, 1) for r in fresh - lines]
            for raw, step in changed:
                pin = _line_pin(raw)
                if pin is not None:
                    counts[pin] += step
                    touched.add(pin)
            lines = fresh
            if index == 0:  # against what an earlier replay left open: every pin
                touched = set(current) | {pin for pin, n in counts.items() if n > 0}
            leaving = {pin for pin in touched if counts[pin] <= 0 and pin in current}
            coming = {pin for pin in touched if counts[pin] > 0 and pin not in current}
        for key in sorted(leaving):
            held = current.pop(key)
            out.append(
                LockHeld(
                    held.package,
                    held.version,
                    held.since,
                    held.since_commit,
                    until=commit.date,
                    until_commit=commit.sha,
                )
            )
        for package, version in sorted(coming):
            current[(package, version)] = LockHeld(package, version, commit.date, commit.sha)
    out.extend(held for held in current.values() if held not in still)
    return out
