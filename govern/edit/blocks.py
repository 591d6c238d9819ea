"""The comments around a requirement the edit keeps true: ``bad=``, evidence, shared blocks.

Notes: docs/internals.md#edit.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from govern.edit.common import EditRefused, admits
from govern.exclusions.annotations import read_annotations
from govern.exclusions.classify import classify
from govern.exclusions.model import Annotation
from govern.sources.model import Entry, Source
from govern.text import quoted


@dataclass(frozen=True, slots=True)
class GovernComment:
    """A ``# govern:`` comment that belongs to the requirement: its line and its ``#``."""

    line: int  # 0-based physical line
    column: int  # where "#" is in the line (without its line end)
    text: str  # the comment, "#" excluded, to the end of the line


_READ = {
    "reason": "reason",
    "bad_versions": "bad=",
    "owner": "owner",
    "review_by": "review-by",
    "verify": "verify=",
    "evidence": "verified=",
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
    """The evidence comments: ``govern: verified='...'``, one per item, its text one line
    of printable text (control characters become spaces), quoted so that the annotation
    reads it back whole as its own field, never as part of the reason."""
    out: list[str] = []
    for item in items:
        note = evidence_comment(item)
        if note and note not in out:
            out.append(note)
    return out


def evidence_comment(item: str) -> str:
    """One evidence line as the comment body govern writes (``""`` for an empty one):
    ``14.1.1 verified on cuda13: URL`` becomes ``govern: verified='14.1.1 on cuda13: URL'``."""
    cleaned = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in item)
    cleaned = " ".join(cleaned.split()).replace(" verified on ", " on ", 1)
    return f"govern: verified={shlex.quote(cleaned)}" if cleaned else ""


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


def bad_listed(comments: Iterable[GovernComment]) -> list[str]:
    """The versions the comments' ``bad=`` fields name."""
    out: list[str] = []
    for comment in comments:
        for start, end in _bad_values(comment.text):
            out.extend(_items(comment.text[start:end]))
    return out


def record_bad(
    comments: Sequence[GovernComment], versions: Sequence[str]
) -> tuple[GovernComment, str] | None:
    """The comment to change and its new text, so that ``bad=`` names ``versions`` too.

    The first ``bad=`` field gets the versions it lacks (in its own quoting and separator);
    without one, ``bad=...`` is appended to the first comment. None: nothing to change.
    """
    listed = bad_listed(comments)
    needed = [v for v in versions if not any(same_version(v, known) for known in listed)]
    # govern's own evidence lines hold the evidence alone: bad= goes with the person's.
    comments = [c for c in comments if not c.text.strip().startswith("govern: verified=")]
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
    comments: Sequence[GovernComment],
    bad_versions: Sequence[str],
    where: str,
) -> None:
    """Refuse (:class:`EditRefused`) a relaxation that lets in a known-bad version.

    Known bad: what the ``bad=`` fields of the line's ``comments`` list (the file as it is
    now: the remote can be newer than the last sync) and ``bad_versions``. A version is let
    in when ``before`` keeps it out and ``after`` admits it; a bad version the line already
    admits is not the relaxation's doing (as in :func:`govern.edit.relax.relax`).
    A listed version is that version (the candidate when it is equal to it, as
    :func:`govern.edit.relax.relax` judges a known-bad candidate); a listed ``P.*``
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
