"""pip's line rules, once: logical lines, where a comment starts, options and their words.

Notes: docs/internals.md#sources.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "OPTIONS",
    "Joined",
    "Logical",
    "OptionError",
    "PipOption",
    "Segment",
    "break_args_options",
    "comment_index",
    "join_lines",
    "logical_lines",
    "lookup_option",
    "parse_options",
    "shell_split",
    "split_comment",
]

# shlex.split's words when the text has no backslash: runs of plain characters,
# "double-quoted" and 'single-quoted' strings, separated by shlex's whitespace.
_SHELL_WORD_RE = re.compile(r"""(?:[^ \t\r\n'"\\]|"[^"\\]*"|'[^']*')+""")
_SHELL_QUOTED_RE = re.compile(r""""([^"]*)"|'([^']*)'""")
_SHELL_SPACE = " \t\r\n"


# -- logical lines ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of a logical line's text: physical ``line``, ``start``..``end``, at offset ``at``."""

    line: int  # 0-based; -1 for the space pip puts before a comment line it joins
    start: int
    end: int
    at: int


@dataclass(frozen=True, slots=True)
class Logical:
    """One logical line: its physical lines ``first``..``last`` (0-based), its text as pip
    reads it (continuations joined) and where each run of that text came from."""

    first: int
    last: int
    text: str
    joined: tuple[Segment, ...] = ()  # empty: one physical line, read whole (the usual line)

    @property
    def segments(self) -> tuple[Segment, ...]:
        """Where each run of :attr:`text` came from, in order."""
        # Made on demand: the reader, which reads every line, never needs them.
        return self.joined or (Segment(self.first, 0, len(self.text), 0),)

    def where(self, offset: int, *, end: bool = False) -> tuple[int, int] | None:
        """The physical (line, column) of a logical offset (``end``: of the end of a run);
        None for the space pip puts before a comment line it joins."""
        for seg in self.segments:
            size = seg.end - seg.start
            if seg.at <= offset < seg.at + size or (end and offset == seg.at + size):
                if seg.line < 0:
                    return None
                return seg.line, seg.start + offset - seg.at
        return None


Joined = tuple[int, int, str, tuple[Segment, ...]]  # first, last, text, runs (empty: one line)


def join_lines(bodies: Sequence[str]) -> list[Joined]:
    """pip's ``join_lines`` over physical lines without their line ends: each logical
    line's first and last physical line (0-based), its text and, for a line joined from
    several, where each run of the text came from (:class:`Logical` reads the same).

    A line ending in ``\\`` continues on the next (its trailing backslashes dropped); a
    comment line (``#`` at the start or after leading whitespace) ends a continuation and
    is joined with a space before it, exactly as pip does. Plain tuples: the reader reads
    every line of a file through here.
    """
    out: list[Joined] = []
    pending: list[Segment] = []
    first = 0

    def close(last: int) -> None:
        text = "".join(" " if s.line < 0 else bodies[s.line][s.start : s.end] for s in pending)
        out.append((first, last, text, tuple(pending)))
        pending.clear()

    for index, body in enumerate(bodies):
        continued = body.endswith("\\")
        if not pending and not continued:
            # The usual line: nothing to join. (A comment line would get a space
            # prepended below; outside a continuation that changes nothing.)
            out.append((index, index, body, ()))
            continue
        at = sum(s.end - s.start for s in pending)
        comment = body.lstrip().startswith("#")
        if not continued or comment:
            if not pending:
                first = index
            if comment:
                pending.append(Segment(-1, 0, 1, at))
                at += 1
            pending.append(Segment(index, 0, len(body), at))
            close(index)
        else:
            if not pending:
                first = index
            start = len(body) - len(body.lstrip("\\"))
            end = max(start, len(body.rstrip("\\")))
            pending.append(Segment(index, start, end, at))
    if pending:
        close(len(bodies) - 1)
    return out


def logical_lines(bodies: Sequence[str]) -> list[Logical]:
    """:func:`join_lines` as :class:`Logical` values, for the edit."""
    return [Logical(*joined) for joined in join_lines(bodies)]


# -- comments -----------------------------------------------------------------------


def comment_index(text: str) -> int | None:
    """Where pip's comment starts: ``#`` at the start or after whitespace (None: no comment).

    pip's COMMENT_RE, ``(^|\\s+)#.*$``, found without a regex: that expression backtracks
    quadratically over a long run of spaces.
    """
    index = text.find("#")
    while index != -1:
        if index == 0 or text[index - 1].isspace():
            return index
        index = text.find("#", index + 1)
    return None


def split_comment(text: str) -> tuple[str, str | None]:
    """A logical line's content (trailing whitespace dropped) and its comment (without
    ``#``, stripped; None when there is none)."""
    index = comment_index(text)
    if index is None:
        return text, None
    return text[:index].rstrip(), text[index + 1 :].strip()


# -- options ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PipOption:
    """One pip option accepted in a requirements file."""

    names: tuple[str, ...]
    takes_value: bool
    on_requirement: bool = False  # allowed after a requirement (per-requirement option)


OPTIONS = (
    PipOption(("-i", "--pypi-url", "--index-url"), True),
    PipOption(("--extra-index-url",), True),
    PipOption(("--no-index",), False),
    PipOption(("-c", "--constraint"), True),
    PipOption(("-r", "--requirement"), True),
    PipOption(("-e", "--editable"), True),
    PipOption(("-f", "--find-links"), True),
    PipOption(("--no-binary",), True),
    PipOption(("--only-binary",), True),
    PipOption(("--prefer-binary",), False),
    PipOption(("--require-hashes",), False),
    PipOption(("--pre",), False),
    PipOption(("--trusted-host",), True),
    PipOption(("--use-feature",), True),
    PipOption(("--hash",), True, on_requirement=True),
    PipOption(("-C", "--config-settings"), True, on_requirement=True),
    PipOption(("--global-option",), True, on_requirement=True),
)
_BY_NAME = {name: opt for opt in OPTIONS for name in opt.names}
_LONG_NAMES = sorted(name for name in _BY_NAME if name.startswith("--"))


class OptionError(ValueError):
    """An option pip's parser would reject (optparse's ``no such option``)."""

    def __init__(self, message: str, token: str | None = None) -> None:
        super().__init__(message)
        self.token = token  # the offending option, for the caret


def break_args_options(line: str) -> tuple[str, str]:
    """pip's ``break_args_options``: the requirement ends at the first ``-`` token."""
    if " -" not in line and not line.startswith("-"):
        return line, ""  # no token starts with "-" (tokens are split on single spaces)
    tokens = line.split(" ")
    args: list[str] = []
    for index, token in enumerate(tokens):
        if token.startswith("-"):
            return " ".join(args), " ".join(tokens[index:])
        args.append(token)
    return " ".join(args), ""


def shell_split(text: str) -> list[str]:
    """``shlex.split(text)`` (POSIX rules, no comments), without shlex's slow path.

    shlex reads one character at a time in Python; the usual text (no backslash,
    balanced quotes) is split here with two expressions instead. Anything else,
    errors included, is left to shlex itself.
    """
    if "\\" not in text:
        words: list[str] = []
        end = 0
        for match in _SHELL_WORD_RE.finditer(text):
            if text[end : match.start()].strip(_SHELL_SPACE):
                break  # an unmatched quote: shlex raises
            word = match.group()
            if '"' in word or "'" in word:
                word = _SHELL_QUOTED_RE.sub(_unquote, word)
            words.append(word)
            end = match.end()
        else:
            if not text[end:].strip(_SHELL_SPACE):
                return words
    return shlex.split(text)  # the rare text the fast path leaves


def _unquote(match: re.Match[str]) -> str:
    return match.group(match.lastindex or 0)


def lookup_option(token: str) -> tuple[PipOption, str, str | None]:
    """Resolve one option token to (option, canonical name, attached value)."""
    if token.startswith("--"):
        name, eq, value = token.partition("=")
        if name not in _BY_NAME:
            # optparse accepts any unambiguous prefix of a long option.
            matches = [n for n in _LONG_NAMES if n.startswith(name)]
            if len(matches) != 1:
                raise OptionError(
                    f"no such option: {name}"
                    if not matches
                    else f"ambiguous option: {name} ({', '.join(matches)}?)",
                    token,
                )
            name = matches[0]
        opt = _BY_NAME[name]
        return opt, opt.names[-1], (value if eq else None)
    short, rest = token[:2], token[2:]
    if short not in _BY_NAME:
        raise OptionError(f"no such option: {short}", token)
    opt = _BY_NAME[short]
    return opt, opt.names[-1], (rest or None)


def parse_options(options: str) -> list[tuple[str, str | None]]:
    """Parse an option string as pip's optparse parser would: (canonical name, value)."""
    try:
        tokens = shell_split(options)
    except ValueError as exc:
        raise OptionError(str(exc)) from exc
    parsed: list[tuple[str, str | None]] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token.startswith("-") or token == "-":  # noqa: S105 - an option token
            continue  # optparse hands leftover arguments back; pip ignores them
        opt, name, value = lookup_option(token)
        if opt.takes_value and value is None:
            if i >= len(tokens):
                raise OptionError(f"{name} option requires an argument", token)
            value = tokens[i]
            i += 1
        elif not opt.takes_value and value is not None:
            raise OptionError(f"{name} option does not take a value", token)
        parsed.append((name, value))
    return parsed
