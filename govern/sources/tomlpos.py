"""Where each value of a TOML document sits in its text, which :mod:`tomllib` does not say.

:class:`Scanner` walks text that tomllib accepted and records, for every key path, where
the value (and its key) starts; on text it does not follow it stops and keeps what it
found. :func:`error_position` reads the line and column out of a tomllib error.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field

__all__ = [
    "KeyPath",
    "Loc",
    "Scan",
    "ScanError",
    "Scanner",
    "decode_string",
    "dotted",
    "error_message",
    "error_position",
]

# A key path into the TOML document: table keys and array indices.
KeyPath = tuple[str | int, ...]

_TOML_POSITION = re.compile(r"\(at line (\d+), column (\d+)\)\s*$")
_TOML_END = re.compile(r"\(at end of document\)\s*$")
_BARE_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_SCALAR_STOP = frozenset(",]}#\n\r")


class ScanError(Exception):
    """The scanner met text it does not follow; it keeps what it found so far."""


@dataclass(slots=True)
class Loc:
    """Where one value sits in the raw text (all offsets are string indices).

    For strings ``start``/``end`` delimit the content between the quotes; for
    other values ``start`` is the first character of the value. ``key_start``
    is where the key of a key/value pair starts (for array items and table
    headers it equals ``start``).
    """

    kind: str  # "string", "array", "table", "header" or "scalar"
    start: int
    end: int
    key_start: int
    raw: str = ""
    multiline: bool = False
    literal: bool = False


@dataclass(slots=True)
class Scan:
    """What the scanner learnt about the raw text."""

    locs: dict[KeyPath, Loc] = field(default_factory=dict)
    comments: list[int] = field(default_factory=list)  # offsets of comment '#'
    multiline: list[tuple[int, int]] = field(default_factory=list)  # string spans


class Scanner:
    """A forgiving TOML walker that records value positions by key path.

    It is run only on text that :mod:`tomllib` accepted, so it does not validate
    anything; on text it cannot follow it raises :class:`ScanError` and the
    caller keeps the positions recorded up to that point.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.pos = 0
        self.result = Scan()
        self.aot_counts: dict[KeyPath, int] = {}

    # -- low level ---------------------------------------------------------

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < self.n else ""

    def _skip_spaces(self) -> None:
        while self.pos < self.n and self.text[self.pos] in " \t":
            self.pos += 1

    def _skip_comment(self) -> None:
        if self._peek() == "#":
            self.result.comments.append(self.pos)
            end = self.text.find("\n", self.pos)
            self.pos = self.n if end < 0 else end

    def _skip_blank(self) -> None:
        """Skip whitespace, newlines and comments."""
        while self.pos < self.n:
            ch = self.text[self.pos]
            if ch in " \t\r\n":
                self.pos += 1
            elif ch == "#":
                self._skip_comment()
            else:
                return

    def _string(self) -> tuple[int, int, bool, bool]:
        """Consume a string; return content start, content end, multiline, literal."""
        quote = self.text[self.pos]
        literal = quote == "'"
        multi = self.text.startswith(quote * 3, self.pos)
        delim = quote * 3 if multi else quote
        opening = self.pos
        start = self.pos + len(delim)
        i = start
        while i < self.n:
            ch = self.text[i]
            if ch == "\\" and not literal:
                i += 2
                continue
            if self.text.startswith(delim, i):
                end = i
                if multi:
                    # Up to two quotes right before the closing delimiter are content.
                    while end - i < 2 and self.text.startswith(delim, end + 1):
                        end += 1
                self.pos = end + len(delim)
                if multi:
                    self.result.multiline.append((opening, self.pos))
                return start, end, multi, literal
            if ch == "\n" and not multi:
                break
            i += 1
        raise ScanError("unterminated string")

    def _key(self) -> list[str]:
        keys: list[str] = []
        while True:
            self._skip_spaces()
            ch = self._peek()
            if ch in ("'", '"'):
                start, end, multi, literal = self._string()
                keys.append(decode_string(self.text[start:end], multi=multi, literal=literal))
            else:
                begin = self.pos
                while self.pos < self.n and self.text[self.pos] in _BARE_KEY_CHARS:
                    self.pos += 1
                if self.pos == begin:
                    raise ScanError("expected a key")
                keys.append(self.text[begin : self.pos])
            self._skip_spaces()
            if self._peek() != ".":
                return keys
            self.pos += 1

    # -- structure ---------------------------------------------------------

    def scan(self) -> Scan:
        """Walk the whole text; stop quietly at the first thing not understood."""
        table: KeyPath = ()
        try:
            while True:
                self._skip_blank()
                if self.pos >= self.n:
                    break
                if self._peek() == "[":
                    table = self._header()
                else:
                    self._key_value(table)
        except (ScanError, IndexError, ValueError, RecursionError, tomllib.TOMLDecodeError):
            pass
        return self.result

    def _header(self) -> KeyPath:
        start = self.pos
        array = self.text.startswith("[[", self.pos)
        self.pos += 2 if array else 1
        keys = self._key()
        closing = "]]" if array else "]"
        if not self.text.startswith(closing, self.pos):
            raise ScanError("unterminated table header")
        self.pos += len(closing)
        path: KeyPath = ()
        for index, key in enumerate(keys):
            path = (*path, key)
            if array and index == len(keys) - 1:
                count = self.aot_counts.get(path, 0)
                self.aot_counts[path] = count + 1
                path = (*path, count)
            elif path in self.aot_counts:
                path = (*path, self.aot_counts[path] - 1)
        loc = Loc("header", start, self.pos, start)
        self.result.locs[path] = loc
        if array:  # so that "project is not a table" can point at [[project]]
            self.result.locs.setdefault(path[:-1], loc)
        return path

    def _key_value(self, table: KeyPath) -> None:
        key_start = self.pos
        keys = self._key()
        if self._peek() != "=":
            raise ScanError("expected '='")
        self.pos += 1
        self._skip_spaces()
        self._value((*table, *keys), key_start)

    def _value(self, path: KeyPath, key_start: int) -> None:
        ch = self._peek()
        start = self.pos
        if ch in ("'", '"'):
            begin, end, multi, literal = self._string()
            raw = self.text[begin:end]
            self.result.locs[path] = Loc("string", begin, end, key_start, raw, multi, literal)
        elif ch == "[":
            self.result.locs[path] = Loc("array", start, start, key_start)
            self.pos += 1
            index = 0
            while True:
                self._skip_blank()
                if self._peek() == "]":
                    self.pos += 1
                    break
                self._value((*path, index), self.pos)
                index += 1
                self._skip_blank()
                if self._peek() == ",":
                    self.pos += 1
                elif self._peek() != "]":
                    raise ScanError("expected ',' or ']'")
        elif ch == "{":
            self.result.locs[path] = Loc("table", start, start, key_start)
            self.pos += 1
            while True:
                self._skip_blank()
                if self._peek() == "}":
                    self.pos += 1
                    break
                self._key_value(path)
                self._skip_blank()
                if self._peek() == ",":
                    self.pos += 1
                elif self._peek() != "}":
                    raise ScanError("expected ',' or '}'")
        else:
            while self.pos < self.n and self.text[self.pos] not in _SCALAR_STOP:
                self.pos += 1
            if self.pos == start:
                raise ScanError("expected a value")
            self.result.locs[path] = Loc("scalar", start, self.pos, key_start)


def decode_string(raw: str, *, multi: bool, literal: bool) -> str:
    """The value of a TOML string given its raw content (between the quotes)."""
    if literal and not multi:
        return raw
    if not literal and not multi and "\\" not in raw:
        return raw
    quote = ("'" if literal else '"') * (3 if multi else 1)
    value = tomllib.loads(f"v = {quote}{raw}{quote}")["v"]
    if not isinstance(value, str):  # pragma: no cover - tomllib returned a string
        raise ScanError("not a string")
    return value


def dotted(path: KeyPath) -> str:
    """A key path as written in messages: ``project.dependencies[1]``."""
    shown = ""
    for part in path:
        shown += f"[{part}]" if isinstance(part, int) else (f".{part}" if shown else part)
    return shown


def error_position(exc: Exception, lines: list[str]) -> tuple[int, int]:
    """The (line, column) a tomllib error names; the end of the text, else 1:1."""
    message = str(exc)
    match = _TOML_POSITION.search(message)
    if match:
        return int(match.group(1)), int(match.group(2))
    if _TOML_END.search(message) and lines:
        return len(lines), len(lines[-1]) + 1
    return 1, 1


def error_message(exc: Exception) -> str:
    """A tomllib error's message without its position (the problem carries that)."""
    message = str(exc)
    message = _TOML_POSITION.sub("", _TOML_END.sub("", message)).strip()
    return f"invalid TOML: {message}" if message else "invalid TOML"
