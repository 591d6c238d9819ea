"""Text from files, servers and queries, shown so that it cannot hide or reorder itself.

Notes: docs/security.md#text-from-outside-is-data.
"""

from __future__ import annotations

import re

__all__ = ["fenced", "is_link", "line", "link", "quoted", "visible"]

_LINE_BREAKS = "\n\r"
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0 but tab and line breaks, DEL, C1
_INVISIBLE = (
    "\u00ad"  # soft hyphen
    "\u061c"  # Arabic letter mark
    "\u180e"  # Mongolian vowel separator
    # Not the joiners U+200C and U+200D: scripts and emoji need them, and they reorder nothing.
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


_BACKTICKS = re.compile(r"`+")
_BREAKS = re.compile(r"\r\n|\r|\n")
_URL = re.compile(r"https?://[^\s<>\"'`()\[\]]+")


def _inert(text: str) -> str:
    """``text`` :func:`visible` but its line breaks, and no ``<!--`` left whole: quoted text
    never holds the start of an HTML comment, where govern's markers live."""
    return visible(_BREAKS.sub("\n", text), lines=True).replace("<!--", "<U+003C>!--")


def _fence(text: str, least: int) -> str:
    """A run of backticks longer than any in ``text`` (and at least ``least`` long)."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(least, longest + 1)


def fenced(text: str, info: str = "") -> str:
    """``text`` as a fenced code block (``info``: its language), on lines of its own; the
    fence is longer than any run of backticks inside, so no line of ``text`` closes it."""
    body = _inert(text).rstrip("\n")
    fence = _fence(body, 3)
    return f"{fence}{info}\n{body}\n{fence}"


def quoted(value: object) -> str:
    """Outside text (a reason, a path, an owner, an answer) as Markdown that a forge or a
    chat renders as the text itself: a code span, or for several lines a fenced block on
    lines of its own.

    Inside code, ``@mentions``, ``#123`` and ``closes org/app#7`` are inert on GitHub and
    GitLab, HTML and Markdown are shown, not rendered. Bidi and control characters are
    written ``<U+XXXX>`` (:func:`visible`), and ``<!--`` as ``<U+003C>!--``. A span whose
    text starts or ends with a backtick is padded with a space on each side (CommonMark
    strips them), so that backtick cannot join the fence.
    """
    text = str(value)
    if "\n" in _BREAKS.sub("\n", text.strip()):
        return f"\n{fenced(text.strip())}\n"
    return code_span(_inert(text.strip()))


def code_span(flat: str) -> str:
    """One line of text already made inert as a Markdown code span: its fence longer than
    any run of backticks inside, padded when the text starts or ends with one."""
    if not flat:
        return "` `"  # an empty span would be two backticks, read as text
    fence = _fence(flat, 1)
    pad = " " if flat[0] == "`" or flat[-1] == "`" else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def is_link(text: str) -> bool:
    """Whether ``text`` is a link govern recognises: an ``http(s)`` URL with nothing in it
    that Markdown reads (no space, quote, bracket or parenthesis) or that hides text."""
    return _URL.fullmatch(text) is not None and visible(text) == text


def link(value: object) -> str:
    """A link govern recognised (:func:`is_link`) as itself, so the forge links it;
    anything else :func:`quoted`."""
    text = str(value).strip()
    return text if is_link(text) else quoted(text)
