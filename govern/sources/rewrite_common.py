"""What the edits of :mod:`govern.sources.rewrite` and :mod:`govern.sources.rewrite_toml` share.

The result (:class:`Edit`) and its refusals, the requirement's relaxation
(:func:`relax_clause`) or the line already relaxed or superseded
(:func:`unchanged_or_superseded`), the unified diff, the evidence comment lines,
the ``# govern: bad=...`` field that must keep naming the versions a relaxation now keeps
out with ``!=``, and the refusal of a relaxation that lets in a version that field (or the
exclusion's known-bad list) names. Pure functions on text; nothing here reads a file.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from govern.errors import GovernError
from govern.exclusions.annotations import read_annotations
from govern.exclusions.classify import classify
from govern.exclusions.model import Annotation
from govern.exclusions.relax import RelaxationRefused, rewrite_requirement
from govern.sources.model import Entry, Source
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


@dataclass(frozen=True, slots=True)
class Comment:
    """A ``# govern:`` comment that belongs to the requirement: its line and its ``#``."""

    line: int  # 0-based physical line
    column: int  # where "#" is in the line (without its line end)
    text: str  # the comment, "#" excluded, to the end of the line


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
    """Membership as :mod:`govern.exclusions.relax` judges it (pre-releases included)."""
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


_READ = {
    "reason": "reason",
    "bad_versions": "bad=",
    "owner": "owner",
    "review_by": "review-by",
    "verify": "verify=",
    "profiles": "profiles=",
    "suppress": "ignore=",
    "links": "links",
}


def read_differently(
    before: Source, after: Source, *, line: int, inserted: int, old: str, new: str
) -> list[str]:
    """The exclusions but the edited one (``old`` at ``line``; ``new`` at ``line +
    inserted`` after the edit) that the audit reads differently after it (reason, known-bad
    versions, owner, ignore=...), one line each. A comment block above the edited line that
    the audit gives to other lines does that."""

    def others(source: Source, at: int, text: str) -> list[tuple[Entry, Annotation]]:
        pairs = list(zip(source.entries, read_annotations(source), strict=True))
        on_line = [i for i, (e, _) in enumerate(pairs) if e.line == at]
        edited = next(
            (i for i in on_line if pairs[i][0].text == text), on_line[0] if on_line else -1
        )
        return [
            (e, a)
            for i, (e, a) in enumerate(pairs)
            if i != edited
            and e.requirement is not None
            and any(classify(spec) is not None for spec in e.requirement.specifier)
        ]

    was, now = others(before, line, old), others(after, line + inserted, new)
    if [e.text for e, _ in was] != [e.text for e, _ in now]:  # pragma: no cover - kept
        return ["the file's other exclusions are not where they were"]
    out: list[str] = []
    for (_, a), (entry, b) in zip(was, now, strict=True):
        changed = [shown for name, shown in _READ.items() if getattr(a, name) != getattr(b, name)]
        if changed:
            what = " and ".join([", ".join(changed[:-1]), changed[-1]] if changed[1:] else changed)
            verb = "change" if changed[1:] else "changes"
            out.append(f"{quoted(entry.text)} (line {entry.line}): its {what} {verb}")
    return out


def settle_block(
    original: str,
    with_block: str,
    without_block: str,
    notes: int,
    read: Callable[[str], Source],
    *,
    line: int,
    old: str,
    new: str,
) -> tuple[bool, tuple[str, ...]]:
    """Whether the edit may touch the comment block above the line (``with_block``, its
    ``notes`` evidence lines inserted) rather than leave it alone (``without_block``); and
    the other exclusions read differently after the one chosen (:func:`read_differently`).

    A block that also explains other exclusions is theirs too: it keeps its ``bad=`` and
    gets no evidence. It is judged against the edit that leaves it alone, so that what the
    changed clause alone does to the block's reach (the audit groups lines under a block by
    their clauses) is not taken for it. ``read`` reads a text as the audit does."""
    read_as: dict[str, Source] = {}  # each text is read once

    def reading(text: str) -> Source:
        if text not in read_as:
            read_as[text] = read(text)
        return read_as[text]

    own = with_block == without_block or not read_differently(
        reading(without_block), reading(with_block), line=line, inserted=notes, old=new, new=new
    )
    final, inserted = (with_block, notes) if own else (without_block, 0)
    elsewhere = read_differently(
        reading(original), reading(final), line=line, inserted=inserted, old=old, new=new
    )
    return own, tuple(elsewhere)


def evidence_text(items: Iterable[str]) -> list[str]:
    """The evidence lines, each one line of printable text (control characters become spaces)."""
    out: list[str] = []
    for item in items:
        cleaned = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in item)
        cleaned = cleaned.strip()
        if cleaned and cleaned not in out:
            out.append(cleaned)
    return out


def missing_evidence(items: Sequence[str], present: Iterable[str]) -> list[str]:
    """The evidence lines not already among the comments ``present`` (the block above)."""
    seen = {" ".join(text.split()) for text in present}
    return [item for item in items if " ".join(item.split()) not in seen]


def same_version(a: str, b: str) -> bool:
    """``1.0`` and ``1.0.0`` are one version; wildcards and non-versions compare as text."""
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a.strip() == b.strip()


def newly_excluded(
    before: SpecifierSet, after: SpecifierSet, bad_versions: Sequence[str]
) -> list[str]:
    """The known-bad versions ``after`` keeps out with ``!=``: every ``!=`` the relaxation adds
    (relax adds one only for a known-bad version), and each of ``bad_versions`` that a ``!=``
    of ``after`` names. In version order."""
    written = {str(s) for s in before}
    found = [s.version for s in after if s.operator == "!=" and str(s) not in written]
    for bad in bad_versions:
        if any(s.operator == "!=" and same_version(s.version, bad) for s in after):
            found.append(bad.strip())
    unique: list[str] = []
    for version in found:
        if not any(same_version(version, u) for u in unique):
            unique.append(version)
    return sorted(unique, key=_version_order)


def _version_order(text: str) -> tuple[int, Version, str]:
    try:
        return (0, Version(text.removesuffix(".*")), text)
    except InvalidVersion:
        return (1, Version("0"), text)


# -- the ``# govern:`` structured comment -------------------------------------------

_WORD = re.compile(r"""(?:[^\s'"]|"[^"]*"|'[^']*')+""")  # a shell word, quotes kept


def _bad_values(text: str) -> list[tuple[int, int]]:
    """Where the values of the ``bad=`` fields of a structured comment are."""
    start = text.find("govern:")
    if start < 0:
        return []
    spans: list[tuple[int, int]] = []
    for match in _WORD.finditer(text, start + len("govern:")):
        if match.group()[:4].lower() == "bad=":
            spans.append((match.start() + 4, match.end()))
    return spans


def _items(raw: str) -> list[str]:
    value = raw.replace('"', "").replace("'", "")
    return [item.strip() for item in value.split(",") if item.strip()]


def structured(text: str, *, below: bool = False) -> bool:
    """Whether a comment (``#`` excluded) is ``govern: ...`` (``^govern: ...`` with ``below``)."""
    return text.strip().startswith("^govern:" if below else "govern:")


def bad_listed(comments: Iterable[Comment]) -> list[str]:
    """The versions the comments' ``bad=`` fields name."""
    out: list[str] = []
    for comment in comments:
        for start, end in _bad_values(comment.text):
            out.extend(_items(comment.text[start:end]))
    return out


def record_bad(comments: Sequence[Comment], versions: Sequence[str]) -> tuple[Comment, str] | None:
    """The comment to change and its new text, so that ``bad=`` names ``versions`` too.

    The first ``bad=`` field gets the versions it lacks (in its own quoting and separator);
    without one, ``bad=...`` is appended to the first comment. None: nothing to change.
    """
    listed = bad_listed(comments)
    needed = [v for v in versions if not any(same_version(v, known) for known in listed)]
    if not needed or not comments:
        return None
    for comment in comments:
        spans = _bad_values(comment.text)
        if not spans:
            continue
        start, end = spans[0]
        raw = comment.text[start:end]
        quote = raw[0] if len(raw) > 1 and raw[0] in "'\"" and raw[-1] == raw[0] else ""
        inner = raw[1:-1] if quote else raw
        separator = ", " if ", " in inner else ","
        kept = inner.rstrip(", ")
        value = separator.join([*([kept] if kept else []), *needed])
        return comment, f"{comment.text[:start]}{quote}{value}{quote}{comment.text[end:]}"
    comment = comments[0]
    body = comment.text.rstrip()
    return comment, f"{body} bad={','.join(needed)}{comment.text[len(body) :]}"


def refuse_bad_admitted(
    before: SpecifierSet,
    after: SpecifierSet,
    candidate: Version,
    comments: Sequence[Comment],
    bad_versions: Sequence[str],
    where: str,
) -> None:
    """Refuse (:class:`EditRefused`) a relaxation that lets in a known-bad version.

    Known bad: what the ``bad=`` fields of the line's ``comments`` list (the file as it is
    now: the remote can be newer than the last sync) and ``bad_versions``. A version is let
    in when ``before`` keeps it out and ``after`` admits it; a bad version the line already
    admits is not the relaxation's doing (as in :func:`govern.exclusions.relax.relax`).
    A listed version is that version (the candidate when it is equal to it, as
    :func:`govern.exclusions.relax.relax` judges a known-bad candidate); a listed ``P.*``
    is P and the candidate when ``==P.*`` matches it.
    """
    listed = [(item, "which the line's bad= lists") for item in bad_listed(comments)]
    listed += [(item.strip(), "which is known bad") for item in bad_versions]
    for item, why in listed:
        try:
            spec = Specifier(f"=={item}")
            base = Version(item.removesuffix(".*"))
        except (InvalidSpecifier, InvalidVersion, ValueError):
            continue  # the audit reports a bad= that is not a version
        wild = item.endswith(".*") and spec.contains(candidate, prereleases=True)
        for version in [candidate, base] if wild else [base]:
            if not admits(before, version) and admits(after, version):
                raise EditRefused(f"{where}: the new clause would let in {version}, {why}")
