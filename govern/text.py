"""Text from files, servers and queries, shown so that it cannot hide or reorder itself.

A reason, a path or a query is anybody's text. Bidirectional controls (U+202A-U+202E,
U+2066-U+2069, the marks U+200E, U+200F and U+061C) make a line read differently from
what it holds (CVE-2021-42574, "Trojan Source"); zero-width and other invisible
characters hide text; control characters (ANSI escapes among them) drive a terminal.
:func:`visible` writes each of them as ``<U+XXXX>``, the one form used on the pages, in
the report and in the terminal. Joiners (U+200C, U+200D) are left alone: scripts and
emoji need them, and they reorder nothing.
"""

from __future__ import annotations

import re

__all__ = ["line", "visible"]

_LINE_BREAKS = "\n\r"
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0 but tab and line breaks, DEL, C1
_INVISIBLE = (
    "\u00ad"  # soft hyphen
    "\u061c"  # Arabic letter mark
    "\u180e"  # Mongolian vowel separator
    "\u200b\u200e\u200f"  # zero-width space, left-to-right and right-to-left marks
    "\u2028\u2029"  # line and paragraph separators
    "\u202a-\u202e"  # embeddings and overrides
    "\u2060-\u2064"  # word joiner, invisible operators
    "\u2066-\u2069"  # isolates
    "\ufeff"  # zero-width no-break space (a byte order mark)
    "\ufff9-\ufffb"  # interlinear annotation
)
_ALL = re.compile(f"[{_LINE_BREAKS}{_CONTROLS}{_INVISIBLE}]")
_BUT_LINES = re.compile(f"[{_CONTROLS}{_INVISIBLE}]")


def visible(text: str, *, lines: bool = False) -> str:
    """``text`` with every character that could hide or reorder text written ``<U+XXXX>``.

    Tabs are kept; with ``lines``, line breaks (``\\n``, ``\\r``) are kept too (a log shown
    on a page); without, they are escaped like the rest (collapse whitespace first for one
    line of a terminal).
    """
    pattern = _BUT_LINES if lines else _ALL
    return pattern.sub(lambda found: f"<U+{ord(found.group()):04X}>", text)


def line(value: object, width: int | None = None) -> str:
    """``value`` as one line of a terminal: whitespace collapsed, cut to ``width``
    characters (an ellipsis marks the cut), then made :func:`visible`."""
    text = " ".join(str(value).split())
    if width is not None and len(text) > width:
        text = text[: width - 1].rstrip() + "…"
    return visible(text)
