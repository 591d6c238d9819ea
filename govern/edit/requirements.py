"""The edit that relaxes one clause of a requirements or constraints file, keeping its form.

Notes: docs/internals.md#edit.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

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
    candidate_version,
    relax_clause,
    requirement_or_none,
    shared_ends,
    unchanged_or_superseded,
    unified_diff,
)
from govern.edit.pip import (
    Edits,
    Req,
    edit_hashes,
    hash_spans,
    position,
    requirement_of,
    split_end,
)
from govern.sources.pipline import Logical, Segment, logical_lines
from govern.sources.requirements_txt import parse_requirements
from govern.text import quoted

__all__ = ["relax_requirements"]


# -- the edit -----------------------------------------------------------------------


def relax_requirements(
    text: str,
    *,
    path: str,
    line: int,
    requirement: str,
    package: str,
    specifier: str,
    candidate: str,
    evidence: Sequence[str] = (),
    bad_versions: Sequence[str] = (),
    hashes: Sequence[str] | None = None,
) -> Edit:
    """Replace the specifiers of ``requirement`` (tracked at ``line``) with ``specifier``
    in a requirements or constraints file, keeping its form (docs/commands/propose.md)."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    physical = [split_end(held) for held in text[len(bom) :].splitlines(keepends=True)]
    bodies = [body for body, _ in physical]
    logicals = logical_lines(bodies)
    requirements = [r for r in map(requirement_of, logicals) if r is not None]
    version = candidate_version(candidate, path)
    wanted = requirement.strip()
    found = [r for r in requirements if r.text == wanted]
    if not found:
        lines = [(r.text, r.logical.first + 1) for r in requirements]
        return unchanged_or_superseded(lines, "line", package, version, wanted, text)
    held = min(found, key=lambda r: (abs(r.logical.first + 1 - line), r.logical.first))
    where = f"{path}:{held.logical.first + 1}"
    relaxed = relax_clause(held.text, wanted, specifier, version, path, where)
    if relaxed is None:
        return Edit(text, held.text, held.text, held.logical.first + 1, "", False)
    tracked, after, new_requirement = relaxed
    comments = _comments(logicals, bodies, held)
    refuse_bad_admitted(tracked.specifier, after, version, comments, bad_versions, where)
    block = _block(logicals, held)
    excluded = newly_excluded(tracked.specifier, after, bad_versions)
    nl = next((end for _, end in physical if end), "\n")
    first = bodies[held.logical.first]
    indent = first[: len(first) - len(first.lstrip())]
    first_end = physical[held.logical.first][1] or nl
    blocks = {lg.first for lg in block}

    def build(own_block: bool) -> tuple[str, list[str], tuple[str, ...] | None]:
        """The edited text, its evidence lines and hashes; ``own_block``: the block above
        may take the evidence and its ``bad=`` be extended."""
        edits: Edits = {}
        dropped: set[int] = set()
        added: dict[int, list[str]] = {}
        _edit_requirement(held, new_requirement, edits)
        new_hashes = edit_hashes(held, bodies, after, version, hashes, where, edits, dropped, added)
        mine = comments if own_block else [c for c in comments if c.line not in blocks]
        recorded = record_bad(mine, excluded)
        if recorded is not None:
            comment, new_comment = recorded
            edits.setdefault(comment.line, []).append(
                (comment.column + 1, len(bodies[comment.line]), new_comment)
            )
        notes = (
            missing_evidence(evidence_text(evidence), [bodies[n].strip()[1:] for n in blocks])
            if own_block
            else []
        )
        out: list[str] = []
        for index, (body, end) in enumerate(physical):
            if index == held.logical.first:
                out.extend(f"{indent}# {note}{first_end}" for note in notes)
                out.extend(_assemble(held.logical, physical, edits, dropped, added, nl))
            elif not held.logical.first < index <= held.logical.last:
                out.append(_apply(body, edits.get(index, ())) + end)
        return bom + "".join(out), notes, new_hashes

    with_block, without_block = build(True), build(False)
    own, elsewhere = settle_block(
        text,
        with_block[0],
        without_block[0],
        len(with_block[1]),
        lambda edited: parse_requirements(edited[len(bom) :], display_path=path, environ={}),
        line=held.logical.first + 1,
        old=held.text,
        new=new_requirement,
    )
    new_text, notes, new_hashes = with_block if own else without_block
    number = held.logical.first + len(notes)
    read = _check(new_text[len(bom) :], number, len(logicals), tracked, after, new_hashes, where)
    return Edit(
        new_text,
        held.text,
        read,
        number + 1,
        unified_diff(path, text[len(bom) :], new_text[len(bom) :]),
        True,
        elsewhere,
    )


def _edit_requirement(held: Req, new: str, edits: Edits) -> None:
    """Replace only the characters of the requirement that differ, where they are.

    A continued line keeps its indentation when the characters removed run into it, unless
    the whitespace would change how the requirement reads.
    """
    old = held.text
    prefix, suffix = shared_ends(old, new)
    start, stop = held.at + prefix, held.at + len(old) - suffix
    replacement = new[prefix : len(new) - suffix]
    if start == stop:
        line, column = position(held.logical, start, end=True)
        edits.setdefault(line, []).append((column, column, replacement))
        return
    pieces = _pieces(held.logical, start, stop, replacement, indent=True)
    if pieces != _pieces(held.logical, start, stop, replacement, indent=False):
        text = held.logical.text
        for _, low, high, piece in reversed(pieces):
            text = text[:low] + piece + text[high:]
        end = held.at + len(old) + len(text) - len(held.logical.text)
        kept = requirement_or_none(text[held.at : end])
        if kept is None or str(kept) != str(requirement_or_none(new)):
            pieces = _pieces(held.logical, start, stop, replacement, indent=False)
    for seg, low, high, piece in pieces:
        columns = (seg.start + low - seg.at, seg.start + high - seg.at)
        edits.setdefault(seg.line, []).append((*columns, piece))


def _pieces(
    logical: Logical, start: int, stop: int, replacement: str, *, indent: bool
) -> list[tuple[Segment, int, int, str]]:
    """The runs of ``start``..``stop`` (logical offsets) on each physical line, with their
    replacement (on the first); ``indent``: a continued line's indentation is kept."""
    pieces: list[tuple[Segment, int, int, str]] = []
    for number, seg in enumerate(logical.segments):
        low, high = max(start, seg.at), min(stop, seg.at + seg.end - seg.start)
        if low >= high:
            continue
        if seg.line < 0:  # pragma: no cover - the requirement comes before any comment
            raise EditRefused("the line's layout is not followed (a joined comment line)")
        if indent and number and low == seg.at and start < seg.at:
            text = logical.text[seg.at : seg.at + seg.end - seg.start]
            low = min(high, seg.at + len(text) - len(text.lstrip(" \t")))
            if low == high and not replacement:
                continue
        pieces.append((seg, low, high, replacement))
        replacement = ""
    return pieces


def _comments(logicals: Sequence[Logical], bodies: Sequence[str], held: Req) -> list[GovernComment]:
    """The requirement's ``# govern:`` comments: inline, in the block above, right below."""
    found: list[GovernComment] = []
    if held.comment_at is not None:
        line, column = position(held.logical, held.comment_at)
        if line == held.logical.last:
            body = bodies[line]
            if structured(body[column + 1 :]):
                found.append(GovernComment(line, column, body[column + 1 :]))
    for logical in _block(logicals, held):
        body = bodies[logical.first]
        column = body.index("#")
        if structured(body[column + 1 :]):
            found.append(GovernComment(logical.first, column, body[column + 1 :]))
    following = [lg for lg in logicals if lg.first == held.logical.last + 1]
    if following and _comment_only(following[0]):
        body = bodies[following[0].first]
        column = body.index("#")
        if structured(body[column + 1 :], below=True):
            found.append(GovernComment(following[0].first, column, body[column + 1 :]))
    return found


def _comment_only(logical: Logical) -> bool:
    return logical.first == logical.last and logical.text.lstrip().startswith("#")


def _block(logicals: Sequence[Logical], held: Req) -> list[Logical]:
    """The comment-only lines right above the requirement (in order)."""
    position = next(i for i, lg in enumerate(logicals) if lg is held.logical)
    block: list[Logical] = []
    for logical in reversed(logicals[:position]):
        if not _comment_only(logical):
            break
        block.insert(0, logical)
    return block


def _apply(body: str, edits: Sequence[tuple[int, int, str]]) -> str:
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        body = body[:start] + text + body[end:]
    return body


def _assemble(
    logical: Logical,
    physical: Sequence[tuple[str, str]],
    edits: Edits,
    dropped: set[int],
    added: dict[int, list[str]],
    nl: str,
) -> list[str]:
    """The requirement's physical lines after the edit, continuations kept consistent."""
    rows: list[tuple[str, str]] = []
    changed = bool(dropped or added)
    for index in range(logical.first, logical.last + 1):
        body, end = physical[index]
        new = _apply(body, edits.get(index, ()))
        emptied = _holds(body) and not _holds(new)
        if index in dropped or (index != logical.first and emptied):
            changed = True
        else:
            rows.append((new, end))
        rows.extend((extra, end or nl) for extra in added.get(index, ()))
    if not changed:
        return [body + end for body, end in rows]
    gap = " "
    for body, _ in physical[logical.first : logical.last + 1]:
        if body.endswith("\\"):
            gap = body[len(body.rstrip("\\").rstrip()) : len(body.rstrip("\\"))] or " "
            break
    last_end = physical[logical.last][1]
    out: list[str] = []
    for number, (body, end) in enumerate(rows):
        if number < len(rows) - 1:
            if not body.endswith("\\"):
                body = f"{body.rstrip()}{gap}\\"
            out.append(body + (end or nl))
        else:
            if body.endswith("\\") and not body.lstrip().startswith("#"):
                body = body.rstrip("\\").rstrip()
            out.append(body + last_end)
    return out


def _holds(body: str) -> bool:
    """Whether a physical line holds something besides whitespace and a ``\\``."""
    return bool(body.rstrip("\\").strip())


def _check(
    text: str,
    number: int,
    count: int,
    tracked: Requirement,
    after: SpecifierSet,
    hashes: tuple[str, ...] | None,
    where: str,
) -> str:
    """The edited file read again: the requirement reads as the relaxation says (returned
    as the audit reads it)."""
    bodies = [split_end(held)[0] for held in text.splitlines(keepends=True)]
    logicals = logical_lines(bodies)
    found = next((lg for lg in logicals if lg.first == number), None)
    req = requirement_of(found) if found is not None else None
    parsed = requirement_or_none(req.text) if req is not None else None
    problems = []
    if req is None or parsed is None:
        problems.append("the requirement does not parse")
    else:
        if (parsed.name, parsed.extras, str(parsed.marker)) != (
            tracked.name,
            tracked.extras,
            str(tracked.marker),
        ) or parsed.specifier != after:
            problems.append(f"it reads {quoted(req.text)}")
        if hashes is not None:
            spans = hash_spans(req, where)
            if tuple(bodies[line][start:end] for line, _, start, end in spans) != hashes:
                problems.append("the hashes differ")
    if len(logicals) < count:
        problems.append("lines were joined")
    if problems or req is None:  # pragma: no cover - the edit above keeps all of this
        raise EditRefused(f"{where}: internal check of the edit failed: {'; '.join(problems)}")
    return req.text
