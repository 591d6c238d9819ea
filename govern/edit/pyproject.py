"""The relaxation of one element of a ``pyproject.toml`` requirement array.

Notes: docs/internals.md#edit.
"""

from __future__ import annotations

import bisect
import copy
import tomllib
from collections.abc import Sequence
from typing import Any

from govern.edit.blocks import (
    GovernComment,
    evidence_text,
    missing_evidence,
    newly_excluded,
    record_bad,
    refuse_bad_admitted,
    settle_block,
    structured,
)
from govern.edit.common import (
    Edit,
    EditRefused,
    Superseded,
    candidate_version,
    relax_clause,
    shared_ends,
    unchanged_or_superseded,
    unified_diff,
)
from govern.sources.pyproject import line_starts, parse_pyproject
from govern.sources.tomlpos import KeyPath, Loc, Scan, ScanError, Scanner, decode_string
from govern.text import quoted

__all__ = ["relax_pyproject"]


def relax_pyproject(
    text: str,
    *,
    path: str,
    line: int,
    requirement: str,
    group: str | None,
    package: str,
    specifier: str,
    candidate: str,
    evidence: Sequence[str] = (),
    bad_versions: Sequence[str] = (),
) -> Edit:
    """Replace the specifiers of the element ``requirement`` of the array ``group``
    (tracked at ``line``) with ``specifier``, keeping its form (docs/commands/propose.md)."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    body = text[len(bom) :]
    try:
        data = tomllib.loads(body)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
        raise EditRefused(f"{path}: not valid TOML ({exc})") from None
    key = _array_path(group, path)
    version = candidate_version(candidate, path)
    wanted = requirement.strip()
    items = _walk(data, key)
    if items is None:
        raise Superseded(f"{quoted(wanted)} is no longer in the file (no {group} array)")
    scan = Scanner(body).scan()
    starts = line_starts(body)
    elements = _elements(scan, key, items, path)
    found = [(i, loc) for i, loc in elements if items[i].strip() == wanted]
    if not found:
        elements_at = [(items[i], _line(starts, loc.start)) for i, loc in elements]
        return unchanged_or_superseded(elements_at, "element", package, version, wanted, text)
    index, loc = min(found, key=lambda f: (abs(_line(starts, f[1].start) - line), f[0]))
    value = items[index]
    number = _line(starts, loc.start)
    where = f"{path}:{number}"
    relaxed = relax_clause(value, wanted, specifier, version, path, where)
    if relaxed is None:
        return Edit(text, value, value, number, "", False)
    tracked, after, new_value = relaxed

    on_line, above, below = _comments(body, scan, starts, loc)
    refuse_bad_admitted(
        tracked.specifier, after, version, [*on_line, *above, *below], bad_versions, where
    )
    # The comments the audit gives other elements too are left as they are: the block
    # above the array's opening line (or above a line with another element), the
    # comments on and below a line with another element, and a block that explains the
    # elements below it too (found by reading the edited file as the audit does).
    opening = _line(starts, scan.locs[key].start) == number
    crowded = any(_line(starts, other.start) == number for i, other in elements if i != index)
    excluded = newly_excluded(tracked.specifier, after, bad_versions)

    def build(own_block: bool) -> tuple[str, list[str]]:
        """The edited text and its evidence lines; ``own_block``: the block above may take
        the evidence and its ``bad=`` be extended."""
        changes = [_string_edit(loc, value, new_value, where)]
        own = [] if crowded else [*on_line, *(above if own_block else []), *below]
        recorded = record_bad(own, excluded)
        if recorded is not None:
            comment, new_comment = recorded
            at = starts[comment.line] + comment.column + 1
            changes.append((at, at + len(comment.text), new_comment))
        notes: list[str] = []
        if own_block:  # a line of its own in a multi-line array: the evidence above it
            head = starts[number - 1]
            end = _line_end(body, head)
            row = body[head:end]
            indent = row[: len(row) - len(row.lstrip())]
            newline = "\r\n" if body.startswith("\r\n", end) else "\n"
            present = [c.text for c in _block(body, scan, starts, number - 1)]
            notes = missing_evidence(evidence_text(evidence), present)
            if notes:
                changes.append((head, head, "".join(f"{indent}# {n}{newline}" for n in notes)))
        new_body = body
        for start, end, replacement in sorted(changes, key=lambda c: c[0], reverse=True):
            new_body = new_body[:start] + replacement + new_body[end:]
        return new_body, notes

    # As in the requirements edit (blocks.settle_block).
    with_block, without_block = build(not (opening or crowded)), build(False)
    own_block, elsewhere = settle_block(
        body,
        with_block[0],
        without_block[0],
        len(with_block[1]),
        lambda edited: parse_pyproject(edited, display_path=path),
        line=number,
        old=value,
        new=new_value,
    )
    new_body, notes = with_block if own_block else without_block
    _check(data, new_body, key, index, new_value, where)
    return Edit(
        bom + new_body,
        value,
        new_value,
        number + len(notes),
        unified_diff(path, body, new_body),
        True,
        elsewhere,
    )


def _array_path(group: str | None, path: str) -> KeyPath:
    """The key path of the array an exclusion's group names."""
    fixed: dict[str, KeyPath] = {
        "project.dependencies": ("project", "dependencies"),
        "build-system.requires": ("build-system", "requires"),
    }
    if group in fixed:
        return fixed[group]
    for prefix in ("project.optional-dependencies.", "dependency-groups."):
        if group is not None and group.startswith(prefix) and len(group) > len(prefix):
            return (*prefix.rstrip(".").split("."), group[len(prefix) :])
    raise EditRefused(f"{path}: {quoted(group)} is not a requirement array govern edits")


def _walk(data: dict[str, Any], key: KeyPath) -> list[Any] | None:
    node: Any = data
    for part in key:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, list) else None


def _elements(scan: Scan, key: KeyPath, items: list[Any], path: str) -> list[tuple[int, Loc]]:
    """The string elements of the array with their positions (tables are skipped)."""
    out: list[tuple[int, Loc]] = []
    array = scan.locs.get(key)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            continue
        loc = scan.locs.get((*key, index))
        decoded = None
        if array is not None and loc is not None and loc.kind == "string":
            try:
                decoded = decode_string(loc.raw, multi=loc.multiline, literal=loc.literal)
            except (ScanError, tomllib.TOMLDecodeError, ValueError):
                decoded = None
        if decoded != item:
            raise EditRefused(f"{path}: the layout of the array is not followed; edit it by hand")
        assert loc is not None
        out.append((index, loc))
    return out


def _string_edit(loc: Loc, value: str, new: str, where: str) -> tuple[int, int, str]:
    """The characters of the string to replace, inside its quotes: (start, end, text)."""
    prefix, suffix = shared_ends(value, new)
    stop = len(value) - suffix
    raw = loc.raw
    replacement = new[prefix : len(new) - suffix]
    edited = raw[:prefix] + replacement + raw[stop:]
    try:
        same = raw[:stop] == value[:stop] and (
            decode_string(edited, multi=loc.multiline, literal=loc.literal) == new
        )
    except (ScanError, tomllib.TOMLDecodeError, ValueError):
        same = False
    if not same:
        raise EditRefused(f"{where}: the string's escapes are not followed; edit it by hand")
    return loc.start + prefix, loc.start + stop, replacement


def _comments(
    body: str, scan: Scan, starts: Sequence[int], loc: Loc
) -> tuple[list[GovernComment], list[GovernComment], list[GovernComment]]:
    """The element's ``# govern:`` comments: on its line, in the block above, right below."""
    first = _line(starts, loc.start) - 1
    last = _line(starts, max(loc.end, loc.start)) - 1
    on_line: list[GovernComment] = []
    for offset in scan.comments:
        if offset > loc.end and _line(starts, offset) - 1 == first:
            comment = _comment(body, starts, offset)
            if structured(comment.text):
                on_line.append(comment)
    above = [c for c in _block(body, scan, starts, first) if structured(c.text)]
    below: list[GovernComment] = []
    if last + 1 < len(starts):
        head = starts[last + 1]
        row = body[head : _line_end(body, head)]
        offset = head + len(row) - len(row.lstrip())
        if offset in set(scan.comments):
            comment = _comment(body, starts, offset)
            if structured(comment.text, below=True):
                below.append(comment)
    return on_line, above, below


def _block(body: str, scan: Scan, starts: Sequence[int], line: int) -> list[GovernComment]:
    """The comment-only lines right above the 0-based ``line``, in order."""
    comments = set(scan.comments)
    block: list[GovernComment] = []
    for number in range(line - 1, -1, -1):
        head = starts[number]
        row = body[head : _line_end(body, head)]
        offset = head + len(row) - len(row.lstrip())
        if offset not in comments:
            break
        block.insert(0, _comment(body, starts, offset))
    return block


def _comment(body: str, starts: Sequence[int], offset: int) -> GovernComment:
    line = _line(starts, offset) - 1
    end = _line_end(body, offset)
    return GovernComment(line, offset - starts[line], body[offset + 1 : end])


def _line(starts: Sequence[int], offset: int) -> int:
    """The 1-based line of an offset."""
    return bisect.bisect_right(starts, offset)


def _line_end(text: str, offset: int) -> int:
    """Where the line holding ``offset`` ends, its ``\\r\\n`` or ``\\n`` excluded."""
    end = text.find("\n", offset)
    end = len(text) if end < 0 else end
    return end - 1 if end > offset and text[end - 1] == "\r" else end


def _check(
    data: dict[str, Any], new_body: str, key: KeyPath, index: int, new_value: str, where: str
) -> None:
    """The edited file parses to the same document, with only that string changed."""
    try:
        new_data = tomllib.loads(new_body)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError):  # pragma: no cover
        new_data = None
    expected = copy.deepcopy(data)
    items = _walk(expected, key)
    assert items is not None
    items[index] = new_value
    if new_data != expected:  # pragma: no cover - the edit above changes only that string
        raise EditRefused(f"{where}: internal check of the edit failed; edit it by hand")
