"""What the edits of requirements files and ``pyproject.toml`` share: the result and the clause.

The result (:class:`Edit`) and its refusals (:class:`EditRefused`, :class:`Superseded`),
the requirement's relaxation (:func:`relax_clause`) or the line already relaxed or
superseded (:func:`unchanged_or_superseded`), and the unified diff. The comments around a
requirement (``bad=``, evidence, a block shared with other lines) are
:mod:`govern.edit.blocks`'s. Pure functions on text; nothing here reads a file.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from govern.edit.relax import RelaxationRefused, rewrite_requirement
from govern.errors import GovernError
from govern.text import quoted


class EditRefused(GovernError):
    """The file cannot be edited as proposed; the message is one line, why."""


class Superseded(EditRefused):
    """The line changed since it was tracked: a person decided; never forced."""


@dataclass(frozen=True, slots=True)
class Edit:
    """The file after the edit, the requirement before and after, and the file's diff.

    ``old`` and ``new`` are the requirement as the audit reads it (a requirements file's
    requirement without its options and comment, continuations joined; a pyproject array
    element's string value). ``line`` is where the requirement starts in ``text``.
    ``changed`` is False when nothing had to change (``text`` is the input, ``diff`` empty).
    ``elsewhere`` names the other exclusions whose reading the edit changes, for reviewers.
    """

    text: str
    old: str
    new: str
    line: int
    diff: str
    changed: bool
    # Other exclusions the audit reads differently after the edit: a comment block above
    # the line that also covered them, whose reach the changed clause moved.
    elsewhere: tuple[str, ...] = ()


def unified_diff(path: str, before: str, after: str) -> str:
    """The unified diff of one file (``a/path`` and ``b/path``)."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


def candidate_version(candidate: str, path: str) -> Version:
    """The candidate as a version, or a refusal."""
    try:
        return Version(candidate)
    except InvalidVersion:
        raise EditRefused(f"{path}: the candidate {candidate!r} is not a PEP 440 version") from None


def specifier_set(specifier: str, path: str) -> SpecifierSet:
    """The relaxed specifiers as a set, or a refusal."""
    try:
        return SpecifierSet(specifier)
    except InvalidSpecifier:
        raise EditRefused(f"{path}: the relaxation {specifier!r} is not a specifier set") from None


def requirement_or_none(text: str) -> Requirement | None:
    """``text`` parsed as PEP 508, or None."""
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def same_line(parsed: Requirement | None, package: str, tracked: Requirement | None) -> bool:
    """Whether ``parsed`` is the tracked requirement's line, whatever its clauses now are:
    the same package and the same marker (a package split by markers has several lines)."""
    if parsed is None or canonicalize_name(parsed.name) != canonicalize_name(package):
        return False
    if tracked is None:
        return True
    return str(parsed.marker) == str(tracked.marker)


def admits(specifier: SpecifierSet, version: Version) -> bool:
    """Membership as :mod:`govern.edit.relax` judges it (pre-releases included)."""
    return specifier.contains(version, prereleases=True)


def relax_clause(
    value: str, wanted: str, specifier: str, version: Version, path: str, where: str
) -> tuple[Requirement, SpecifierSet, str] | None:
    """The tracked requirement ``wanted``, the relaxed ``specifier`` and ``value`` rewritten
    with it; None when ``wanted`` already admits ``version``, a refusal when it cannot be."""
    tracked = requirement_or_none(wanted)
    if tracked is None:
        raise EditRefused(f"{where}: {quoted(wanted)} is not a requirement govern can rewrite")
    if admits(tracked.specifier, version):
        return None
    after = specifier_set(specifier, path)
    if not admits(after, version):
        raise EditRefused(f"{where}: {quoted(after)} does not admit {version}")
    try:
        return tracked, after, rewrite_requirement(value, after)
    except RelaxationRefused as exc:
        raise EditRefused(f"{where}: {exc}") from None


def unchanged_or_superseded(
    found: Iterable[tuple[str, int]],
    noun: str,
    package: str,
    version: Version,
    wanted: str,
    text: str,
) -> Edit:
    """The tracked ``noun`` ("line", "element") is gone from ``found`` (each requirement with
    its 1-based line): already relaxed (one of its lines admits the candidate), or superseded."""
    tracked = requirement_or_none(wanted)
    same = []
    for value, number in found:
        parsed = requirement_or_none(value)
        if parsed is not None and same_line(parsed, package, tracked):
            if admits(parsed.specifier, version):
                return Edit(text, value, value, number, "", False)
            same.append(value)
    if same:
        raise Superseded(
            f"the {noun} now reads {quoted(same[0])} (tracked as {quoted(wanted)}):"
            " a person changed it"
        )
    raise Superseded(f"{quoted(wanted)} is no longer in the file")


def shared_ends(old: str, new: str) -> tuple[int, int]:
    """How many characters ``old`` and ``new`` share at the start, then at the end."""
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old), len(new)) - prefix
        and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]
    ):
        suffix += 1
    return prefix, suffix
