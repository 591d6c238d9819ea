"""PEP 508 parsing shared by the readers: packaging's error, its caret, and a hint."""

from __future__ import annotations

import functools
import re
import sys

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

EQUALS_HINT = "did you mean ==? A version pin is written name==1.0"
TWO_REQUIREMENTS_HINT = "two requirements on one line? pip reads one requirement per line"


_IDENTIFIER = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_CLAUSE = r"(?:~=|==|!=|<=|>=|<|>)[ \t]*[A-Za-z0-9.*+!_-]+"
# The common shape of a requirement line, a strict subset of PEP 508: a name, extras,
# comma-separated clauses without parentheses, and an optional marker. No URLs, no ``===``.
_SIMPLE = re.compile(
    rf"""
    [ \t]*(?P<name>{_IDENTIFIER})[ \t]*
    (?:\[[ \t]*(?P<extras>{_IDENTIFIER}(?:[ \t]*,[ \t]*{_IDENTIFIER})*)?[ \t]*\])?[ \t]*
    (?P<specifier>{_CLAUSE}(?:[ \t]*,[ \t]*{_CLAUSE})*)?[ \t]*
    (?:;(?P<marker>.*))?
    """,
    re.VERBOSE | re.DOTALL,
)
_EXTRAS_SPLIT = re.compile(r"[ \t]*,[ \t]*")


@functools.lru_cache(maxsize=1024)
def _marker(text: str) -> Marker:
    """``Marker(text)``, parsed once per distinct text: a file repeats a few markers
    (``python_version < "3.12"``) thousands of times, and a marker is never changed."""
    return Marker(text)


@functools.lru_cache(maxsize=4096)
def _specifier_set(text: str) -> SpecifierSet:
    """``SpecifierSet(text)``, built once per distinct text: files repeat clauses (``<2``,
    a generated file's pins) on many lines, and no caller changes a requirement's set."""
    return SpecifierSet(text)


def _parse_simple(text: str) -> Requirement | None:
    """Build the :class:`Requirement` packaging would for a line of the common shape.

    packaging's tokenizer is most of the time of an audit of a large tree;
    here one regular expression checks the shape and packaging itself still validates
    every version clause (:class:`SpecifierSet`) and the marker (:class:`Marker`).
    Anything else (``None``) goes through :class:`Requirement`, which also gives the
    error and its caret. ``tests/test_pep508.py`` checks, by property and on the corpus,
    that both paths build equal requirements.
    """
    match = _SIMPLE.fullmatch(text)
    if match is None:
        return None
    extras, specifier, marker = match.group("extras", "specifier", "marker")
    try:
        specifiers = _specifier_set(specifier or "")
        markers = _marker(marker) if marker is not None else None
    except (InvalidSpecifier, InvalidMarker):
        return None
    requirement = Requirement.__new__(Requirement)  # the public attributes, set as __init__ does
    requirement.name = match.group("name")
    requirement.url = None
    requirement.extras = set(_EXTRAS_SPLIT.split(extras)) if extras else set()
    requirement.specifier = specifiers
    requirement.marker = markers
    return requirement


def parse_requirement(text: str) -> tuple[Requirement | None, tuple[int, str] | None]:
    """Parse as packaging does; on failure return (0-based caret offset, message).

    The offset is where packaging draws its own caret (the end of the error span).
    """
    simple = _parse_simple(text)
    if simple is not None:
        return _checked(simple, text)
    try:
        return _checked(Requirement(text), text)
    except InvalidRequirement as exc:
        cause = exc.__cause__
        span = getattr(cause, "span", None)
        message = getattr(cause, "message", None) or (str(exc).splitlines() or [""])[0]
        offset = span[1] if isinstance(span, tuple) and len(span) == 2 else 0
        return None, (max(0, min(int(offset), len(text))), str(message) or "invalid requirement")


_DIGITS = re.compile(r"\d+")


def _checked(
    requirement: Requirement, text: str
) -> tuple[Requirement | None, tuple[int, str] | None]:
    """``requirement``, unless a version in it has a number too long to compare.

    Python refuses to read an integer of more digits than its int-string limit (4,300
    by default): such a version would fail every comparison later, so it is a parse
    error here, with its caret.
    """
    limit = sys.get_int_max_str_digits() or 4300
    if len(text) < limit:
        return requirement, None  # no number that long fits in the line
    versions = [s.version for s in requirement.specifier if s.operator != "==="]
    if requirement.marker is not None:
        versions.append(str(requirement.marker))
    for version in versions:
        for run in _DIGITS.finditer(version):
            if len(run.group()) >= limit:
                offset = text.find(run.group())
                return None, (
                    max(offset, 0),
                    f"a version number of {len(run.group()):,} digits is longer than govern "
                    f"compares ({limit - 1:,})",
                )
    return requirement, None


def requirement_hint(text: str, offset: int) -> str | None:
    """Advice for the requirement mistakes people make most (``pkg=1.0``, two on a line)."""
    head = text.split(";", 1)[0].split("@", 1)[0]
    if "://" not in head and "=" in re.sub(r"(===|==|!=|<=|>=|~=)", "", head):
        return EQUALS_HINT
    rest = text[offset:].strip()
    if rest and " " in text.strip():
        try:
            Requirement(rest)
        except InvalidRequirement:
            return None
        return TWO_REQUIREMENTS_HINT
    return None
