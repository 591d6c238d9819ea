"""The edit that relaxes one clause of a requirements file, keeping the file's form.

Pure: text in, text out. Only the requirement line changes (through
:func:`govern.exclusions.relax.rewrite_requirement`, which keeps the name, extras, marker,
spacing, clause order and inline comment), and one comment line with the evidence is added
below the reason block. Every other byte of the file, line ends included, stays.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from govern.errors import GovernError
from govern.exclusions.relax import RelaxationRefused, rewrite_requirement


class EditRefused(GovernError):
    """The file cannot be edited as proposed; the message is one line, why."""


class Superseded(EditRefused):
    """The line changed since it was tracked: a person decided; never forced."""


@dataclass(frozen=True, slots=True)
class Edit:
    """The file after the edit, the line before and after, and the file's diff."""

    text: str
    old: str
    new: str
    line: int
    diff: str
    changed: bool


def _content(line: str) -> str:
    return line.split(" #", 1)[0].split("\t#", 1)[0].strip()


def _requirement(line: str) -> Requirement | None:
    try:
        return Requirement(_content(line))
    except InvalidRequirement:
        return None


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
) -> Edit:
    """Replace the specifiers of ``requirement`` (tracked at ``line``) with ``specifier``.

    The line is found at ``line`` or, if it moved, by its text. A line that no longer
    reads as tracked raises :class:`Superseded`; one that already admits ``candidate``
    is left as it is (``changed=False``: a second run, or a person relaxed it). A line
    with ``--hash`` options or a ``\\`` continuation is refused with the reason.
    """
    lines = text.splitlines(keepends=True)
    wanted = requirement.strip()
    index = line - 1
    if not (0 <= index < len(lines) and lines[index].strip() == wanted):
        moved = [i for i, held in enumerate(lines) if held.strip() == wanted]
        if len(moved) != 1:
            return _unchanged_or_superseded(lines, package, candidate, wanted, text)
        index = moved[0]
    held = lines[index]
    if "--hash" in held or held.rstrip("\r\n").endswith("\\"):
        raise EditRefused(
            f"{path}:{index + 1}: a line with --hash options or a continuation is not "
            "edited (the new version's hashes are not taken from the index yet)"
        )
    try:
        new_line = rewrite_requirement(held, SpecifierSet(specifier))
    except (RelaxationRefused, ValueError) as exc:
        raise EditRefused(f"{path}:{index + 1}: {exc}") from None
    ending = held[len(held.rstrip("\r\n")) :] or "\n"
    indent = held[: len(held) - len(held.lstrip())]
    added = [f"{indent}# {item}{ending}" for item in evidence]
    already = {lines[i].strip() for i in range(max(0, index - len(added) - 3), index)}
    added = [a for a in added if a.strip() not in already]
    after = [*lines[:index], *added, new_line, *lines[index + 1 :]]
    new_text = "".join(after)
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            new_text.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )
    return Edit(new_text, held.rstrip("\r\n"), new_line.rstrip("\r\n"), index + 1, diff, True)


def _unchanged_or_superseded(
    lines: list[str], package: str, candidate: str, wanted: str, text: str
) -> Edit:
    """The tracked line is gone: already relaxed (it admits the candidate), or superseded."""
    try:
        version = Version(candidate)
    except InvalidVersion:
        raise Superseded(f"`{wanted}` is no longer in the file") from None
    for number, held in enumerate(lines, start=1):
        parsed = _requirement(held)
        if parsed is None or canonicalize_name(parsed.name) != canonicalize_name(package):
            continue
        if parsed.specifier.contains(version, prereleases=True):
            stripped = held.rstrip("\r\n")
            return Edit(text, stripped, stripped, number, "", False)
        raise Superseded(
            f"the line now reads `{held.strip()}` (tracked as `{wanted}`): a person changed it"
        )
    raise Superseded(f"`{wanted}` is no longer in the file")
