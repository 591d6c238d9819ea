"""A requirements line as the edit sees it: its requirement, options, comment and ``--hash``.

Notes: docs/internals.md#edit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from govern.edit.common import EditRefused
from govern.sources.pipline import Logical, break_args_options, comment_index, lookup_option
from govern.text import quoted

_LINE_ENDS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # str.splitlines' line boundaries
_WORD = re.compile(r"[^ \t\r\n]+")  # shlex's words in an option string (quotes refused)
_HASH = re.compile(r"(sha256:[0-9a-f]{64}|sha384:[0-9a-f]{96}|sha512:[0-9a-f]{128})")

Edits = dict[int, list[tuple[int, int, str]]]  # physical line -> (start, end, replacement)


@dataclass(frozen=True, slots=True)
class Req:
    """A requirement line: its logical line, the requirement as written and where it is."""

    logical: Logical
    at: int  # offset of the requirement in the logical text
    text: str  # the requirement, options and comment removed (the audit's entry text)
    options: str
    options_at: int
    comment_at: int | None


def split_end(line: str) -> tuple[str, str]:
    """A physical line and its line end (``str.splitlines``' boundaries, CRLF as one)."""
    if line.endswith("\r\n"):
        return line[:-2], "\r\n"
    if line and line[-1] in _LINE_ENDS:
        return line[:-1], line[-1]
    return line, ""


def position(logical: Logical, offset: int, *, end: bool = False) -> tuple[int, int]:
    """The physical (line, column) of a logical offset (``end``: of the end of a run), or a
    refusal where pip's joining put a character no line holds."""
    found = logical.where(offset, end=end)
    if found is None:
        raise EditRefused("the line's layout is not followed (a joined comment line)")
    return found


def requirement_of(logical: Logical) -> Req | None:
    """The requirement a logical line holds, as pip splits it (None: a comment, a blank or
    an option line)."""
    comment = comment_index(logical.text)
    content = logical.text if comment is None else logical.text[:comment]
    body = content.strip()
    if not body:
        return None
    lead = len(content) - len(content.lstrip())
    args, options = break_args_options(body)
    text = args.strip()
    if not text:
        return None
    options_at = lead + len(args) + 1 if options else lead + len(body)
    return Req(logical, lead, text, options, options_at, comment)


def edit_hashes(
    held: Req,
    bodies: Sequence[str],
    after: SpecifierSet,
    version: Version,
    hashes: Sequence[str] | None,
    where: str,
    edits: Edits,
    dropped: set[int],
    added: dict[int, list[str]],
) -> tuple[str, ...] | None:
    """Replace the ``--hash`` options' values with ``hashes`` (None: the line has none)."""
    spans = hash_spans(held, where)
    if not spans:
        return None
    if hashes is None:
        raise EditRefused(
            f"{where}: the line pins {held.text} with --hash options: the edit needs "
            f"{version}'s hashes from the index (none were given)"
        )
    given = tuple(h.strip() for h in hashes)
    wrong = [h for h in given if not _HASH.fullmatch(h)]
    if wrong or not given:
        shown = quoted(wrong[0]) if wrong else "no hash"
        raise EditRefused(f"{where}: {shown} is not a sha256/384/512 hash as pip takes it")
    pins = list(after)
    pinned = len(pins) == 1 and (
        (pins[0].operator == "===" and pins[0].version == str(version))
        or (
            pins[0].operator == "=="
            and not pins[0].version.endswith(".*")
            and pins[0].contains(version, prereleases=True)
        )
    )
    if not pinned:
        raise EditRefused(
            f"{where}: a line with --hash options must stay pinned (pip's hash-checking mode "
            f"refuses ranges); {quoted(after)} is not a pin on {version}: use the exclude strategy"
        )
    for (line, _name_at, value_at, value_end), new in zip(spans, given, strict=False):
        edits.setdefault(line, []).append((value_at, value_end, new))
    # Values replaced one for one; an extra hash copies the last option's layout (a line of
    # its own, or the same line), and a surplus option goes, with its line when alone on it.
    line, name_at, value_at, value_end = spans[-1]
    body = bodies[line]
    alone = body[:name_at].strip() == "" and body[value_end:].rstrip().rstrip("\\").strip() == ""
    if len(given) > len(spans):
        extra = [f"{body[:value_at]}{h}" for h in given[len(spans) :]]
        if alone:
            added.setdefault(line, []).extend(extra)
        else:
            gap = " "
            if len(spans) > 1 and spans[-2][0] == line:
                gap = body[spans[-2][3] : name_at] or " "
            joined = "".join(f"{gap}{body[name_at:value_at]}{h}" for h in given[len(spans) :])
            edits[line].append((value_end, value_end, joined))
    for line, name_at, _value_at, value_end in spans[len(given) :]:
        body = bodies[line]
        if body[:name_at].strip() == "" and body[value_end:].rstrip().rstrip("\\").strip() == "":
            dropped.add(line)
        else:
            start = len(body[:name_at].rstrip())
            edits.setdefault(line, []).append((start, value_end, ""))
    return given


def hash_spans(held: Req, where: str) -> list[tuple[int, int, int, int]]:
    """Each ``--hash`` option: (line, option column, value column, value end column)."""
    if "--h" not in held.options:
        return []
    spans: list[tuple[int, int, int, int]] = []
    tokens = list(_WORD.finditer(held.options))
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        word = token.group()
        if not word.startswith("-") or word == "-":
            continue
        try:
            option, name, value = lookup_option(word)
        except ValueError:
            raise EditRefused(f"{where}: pip rejects the line's options") from None
        value_token, value_at = token, token.start() + len(word) - len(value or "")
        if option.takes_value and value is None:
            if index >= len(tokens):
                raise EditRefused(f"{where}: {name} has no value")
            value_token, value_at = tokens[index], tokens[index].start()
            index += 1
        if name != "--hash":
            continue
        if "'" in value_token.group() or '"' in value_token.group():
            raise EditRefused(f"{where}: a quoted --hash value is not rewritten")
        positions = [
            position(held.logical, held.options_at + offset)
            for offset in (token.start(), value_at, value_token.end() - 1)
        ]
        if len({line for line, _ in positions}) != 1:
            raise EditRefused(f"{where}: a --hash option split over lines is not rewritten")
        line = positions[0][0]
        spans.append((line, positions[0][1], positions[1][1], positions[2][1] + 1))
    return spans
