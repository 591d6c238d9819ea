"""Read annotations (reason, links, owner, review date, ...) from comments.

Free text: the comment on the requirement's own line and the comment block
directly above it. A block covers the run of requirement lines right below it
(HA's three ``grpcio`` pins share one reason) unless it names some of them, in
which case it covers the run up to the last one it names. Section headers
(``## section:general``) and short labels (``# testing``) are not reasons;
OpenStack's inline licence tags (``# Apache-2.0``) are not reasons either.

Structured form (documented in the README)::

    # govern: reason="CuPy 14.1.0 imports pytest" issue=cupy/cupy#9963 bad=14.1.0
    # govern: review-by=2027-01-31 owner=@runtime-team verify="pytest -k cupy" ignore=missing-link

on the line itself, in the block above, or, written ``# ^govern: ...``, on the
line directly below the requirement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from govern.exclusions.links import LinkContext, find_links
from govern.exclusions.model import Annotation, Link
from govern.sources.model import Entry, LineKind, Problem, Source
from govern.sources.requirements_txt import shell_split

_KEYS = {
    "reason",
    "issue",
    "issues",
    "link",
    "links",
    "bad",
    "review-by",
    "owner",
    "verify",
    "profile",
    "profiles",
    "ignore",
}
_REASON_WORDS = (
    "because",
    "due",
    "until",
    "break",
    "broke",
    "bug",
    "fix",
    "requir",
    "need",
    "ensure",
    "avoid",
    "block",
    "cap",
    "pin",
    "exclud",
    "incompatib",
    "issue",
    "regress",
    "vulnerab",
    "cve",
    "see ",
    "workaround",
    "hang",
    "crash",
    "fail",
    "support",
    "compat",
    "prevent",
    "deprecat",
    "leak",
    "wait",
    "must",
    "only",
    "not ",
    "don't",
    "do not",
    "since",
)
_LICENCE_TOKEN_RE = re.compile(
    r"^(?:apache|bsd|mit|lgpl|gpl|agpl|mpl|epl|cddl|zpl|psf|isc|cc0|unlicense|wtfpl|zlib)"
    r"[\w.+-]*$"
)
_LICENCE_WORDS = {
    "license",
    "licence",
    "licensed",
    "dual",
    "clause",
    "osi-approved",
    "open",
    "source",
    "public",
    "domain",
    "pil",
    "sil",
    "ofl",
    "version",
    "prior",
    "and",
    "or",
    "the",
    "+",
    "python",
    "software",
    "foundation",
    "new",
    "simplified",
    "modified",
    "font",
}
_LICENCE_MARKERS = {"license", "licence", "licensed", "domain", "osi-approved"}
_SENTENCE_WORDS = {"a", "an", "the", "this", "that", "is", "are", "was", "we", "it", "to", "be"}
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
# A requirement has a specifier (an operator) or a URL ("name @ url") only with one of these.
_SPECIFIER_OR_URL_CHARS = "<>=!~@"


@dataclass(frozen=True, slots=True)
class CommentSettings:
    """How a repository writes its comments (``[tool.govern]``)."""

    style: str = "above"  # "above": blocks above a line; "below": blocks below it
    scope: str = "group"  # "group": a block covers the run below it; "line": one line
    inline: str = "auto"  # "auto": licence tags ignored; "reason"; "ignore"
    links: LinkContext = field(default_factory=LinkContext)


@dataclass(frozen=True, slots=True)
class ConfigAnnotation:
    """An annotation given in configuration, for files that cannot carry comments."""

    package: str
    source: str | None = None  # a glob over source paths; None matches every source
    clause: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)


def is_licence_tag(text: str) -> bool:
    """True for OpenStack-style inline licence tags (``Apache-2.0``, ``BSD License``)."""
    lowered = text.strip().lower().removeprefix("license:").removeprefix("licence:").strip()
    if not lowered:
        return False
    if lowered.startswith(("http://", "https://")) and "licen" in lowered:
        return True
    tokens = [t for t in re.split(r"[\s/,()+]+", lowered) if t]
    if not tokens or len(tokens) > 12:
        return False
    has_licence = False
    for token in tokens:
        if _LICENCE_TOKEN_RE.match(token):
            has_licence = True
        elif token in _LICENCE_WORDS:
            has_licence = has_licence or token in _LICENCE_MARKERS
        elif not re.fullmatch(r"v?[\d.]+\+?|\(?\d\)?", token):
            return False
    return has_licence


def _is_label(lines: Sequence[str]) -> bool:
    """A short heading (``# testing utils``) that names a section, not a reason."""
    if len(lines) != 1:
        return False
    text = lines[0].strip()
    lowered = text.lower()
    if any(word in lowered for word in _REASON_WORDS) or find_links(text):
        return False
    words = lowered.split()
    if re.search(r"[.:;,!?=<>/]", text) or len(words) > 6:
        return False
    # Headings are noun phrases; a sentence ("This overrides a built-in package") is not one.
    return len(words) <= 4 or not set(words) & _SENTENCE_WORDS


def _commented_requirement(text: str) -> bool:
    """A requirement that was commented out (``# foo<2``): it keeps its own reason."""
    body = re.split(r"\s#", text, maxsplit=1)[0].strip()
    if not any(char in body for char in _SPECIFIER_OR_URL_CHARS):
        return False  # it would need a specifier or a URL to count: skip parsing prose
    if not body or " " in body.replace(" ;", ";").replace("; ", ";").strip():
        # allow spaces only around operators: "foo >= 1.0"
        # Whitespace runs collapsed first: the expression then stays linear.
        compact = re.sub(r"\s*([<>=!~;,]+)\s*", r"\1", " ".join(body.split()))
        if " " in compact:
            return False
        body = compact
    try:
        req = Requirement(body)
    except InvalidRequirement:
        return False
    return bool(req.specifier) or req.url is not None


def _mentioned_names(text: str) -> set[str]:
    """The canonical forms of every word of ``text`` (to spot package names in it)."""
    return {canonicalize_name(word.strip("._-")) for word in _WORD_RE.findall(text.lower())}


class _Draft:
    """Annotation fields gathered for one entry before they are frozen.

    A plain class, not a dataclass: it is private scratch state, and creating a
    dataclass costs ~1 ms of every start-up.
    """

    __slots__ = ("block", "inline", "structured")

    def __init__(self) -> None:
        self.block: list[str] = []
        self.inline: str | None = None
        self.structured: list[tuple[str, int]] = []  # (text, line)


class _Drafts(dict[int, _Draft]):
    """Drafts by entry index, created on first use."""

    def __missing__(self, index: int) -> _Draft:
        draft = self[index] = _Draft()
        return draft


_EMPTY = Annotation()


def parse_structured(
    text: str, line: int, links: LinkContext
) -> tuple[dict[str, Any], list[Problem]]:
    """Parse ``govern: key=value ...`` (the text after ``govern:``)."""
    values: dict[str, Any] = {}
    problems: list[Problem] = []

    def bad(message: str) -> None:
        problems.append(
            Problem(
                "invalid-annotation",
                line,
                message,
                hint='write it as # govern: key=value key="a value"',
            )
        )

    try:
        tokens = shell_split(text)  # shlex.split(text, comments=False), faster
    except ValueError as exc:
        bad(f"cannot read the govern annotation: {exc}")
        return values, problems
    for token in tokens:
        key, eq, value = token.partition("=")
        key = key.strip().lower()
        if key == "ignore" and not eq:
            values.setdefault("ignore", set()).add("all")
            continue
        if not eq or key not in _KEYS:
            bad(f"unknown annotation field {key!r}; known: {', '.join(sorted(_KEYS))}")
            continue
        items = [v.strip() for v in value.split(",") if v.strip()]
        if key == "reason":
            values["reason"] = value.strip()
        elif key in ("issue", "issues", "link", "links"):
            found: list[Link] = []
            for item in items:
                found.extend(find_links(item, links) or (Link("url", item, None),))
            values.setdefault("links", []).extend(found)
        elif key == "bad":
            for item in items:
                try:
                    Version(item.removesuffix(".*"))
                except InvalidVersion:
                    bad(f"bad={item!r} is not a PEP 440 version")
                    continue
                values.setdefault("bad", []).append(item)
        elif key == "review-by":
            try:
                values["review_by"] = date.fromisoformat(value.strip())
            except ValueError:
                bad(f"review-by={value!r} is not a date (YYYY-MM-DD)")
        elif key == "owner":
            values["owner"] = value.strip()
        elif key == "verify":
            values["verify"] = value
        elif key in ("profile", "profiles"):
            values.setdefault("profiles", []).extend(items)
        else:  # ignore
            values.setdefault("ignore", set()).update(items or ["all"])
    return values, problems


def _structured_text(comment: str) -> tuple[str, str] | None:
    """('above'|'below', rest) when a comment is in the structured form."""
    stripped = comment.strip()
    if stripped.startswith("^govern:"):
        return "below", stripped[len("^govern:") :]
    if stripped.startswith("govern:"):
        return "above", stripped[len("govern:") :]
    return None


def _comment_runs(source: Source) -> list[tuple[int, int]]:
    """(first, last) line numbers of each run of comment-only lines."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for line in source.lines:
        if line.kind is LineKind.COMMENT:
            if start is None:
                start = line.number
        elif start is not None:
            runs.append((start, line.number - 1))
            start = None
    if start is not None:
        runs.append((start, len(source.lines)))
    return runs


def _entries_after(source: Source, last: int) -> list[int]:
    """Entries in the run of requirement lines directly after line ``last``."""
    found: list[int] = []
    lines = source.lines
    for number in range(last, len(lines)):  # no slice: that would copy the rest of the file
        line = lines[number]
        if line.kind in (LineKind.ENTRY, LineKind.CONTINUATION):
            if line.entry is not None and line.entry not in found:
                found.append(line.entry)
        elif line.kind is not LineKind.OPTION:
            break
    return found


def _entry_before(source: Source, first: int) -> int | None:
    line = source.line(first - 1)
    if line is not None and line.kind in (LineKind.ENTRY, LineKind.CONTINUATION):
        return line.entry
    return None


def _embedded(source: Source, first: int) -> bool:
    """True when a comment block sits inside a list (a requirement line right above it).

    Such a block (OpenStack's ``# NOTE(name): ...`` in an alphabetical list)
    explains the line below it; a block that opens a paragraph (HA's
    constraints) explains the whole run of lines below it.
    """
    line = source.line(first - 1)
    return line is not None and line.kind in (
        LineKind.ENTRY,
        LineKind.CONTINUATION,
        LineKind.OPTION,
    )


def _clauses(source: Source, index: int) -> str | None:
    requirement = source.entries[index].requirement
    return str(requirement.specifier) if requirement is not None else None


def read_annotations(
    source: Source,
    settings: CommentSettings | None = None,
    config: Sequence[ConfigAnnotation] = (),
) -> list[Annotation]:
    """One annotation per entry of ``source`` (same order as ``source.entries``)."""
    settings = settings or CommentSettings()
    drafts = _Drafts()
    entries = source.entries
    # The comment on an entry's own (first) line. Walking the lines finds the few
    # that have one without looking up every entry's line.
    for line in source.lines:
        comment, index = line.comment, line.entry
        if comment is None or index is None:
            continue
        if not 0 <= index < len(entries) or entries[index].line != line.number:
            continue
        entry = entries[index]
        structured = _structured_text(comment)
        if structured is not None:
            drafts[index].structured.append((structured[1], entry.line))
        elif settings.inline == "reason" or (
            settings.inline == "auto" and not is_licence_tag(comment)
        ):
            drafts[index].inline = comment.strip() or None
    for first, last in _comment_runs(source):
        _attach_run(source, settings, drafts, first, last)
    # Most lines carry nothing: they share one empty annotation. A block that covers
    # a run of lines gives each the same draft: it is frozen once and shared.
    frozen: dict[tuple[tuple[str, ...], str | None, tuple[tuple[str, int], ...]], Annotation] = {}
    annotations = [_EMPTY] * len(entries)
    for i, draft in drafts.items():
        key = (tuple(draft.block), draft.inline, tuple(draft.structured))
        annotation = frozen.get(key)
        if annotation is None:
            annotation = frozen[key] = _freeze(draft, settings.links)
        annotations[i] = annotation
    if config:
        annotations = [
            _apply_config(a, e, source.path, config, settings.links)
            for a, e in zip(annotations, source.entries, strict=True)
        ]
    return annotations


def _attach_run(
    source: Source, settings: CommentSettings, drafts: _Drafts, first: int, last: int
) -> None:
    above_of = _entry_before(source, first)
    # (line, comment, its structured form): each comment is looked at once.
    texts: list[tuple[int, str, tuple[str, str] | None]] = []
    lines = source.lines
    for number in range(first, last + 1):
        comment = (lines[number - 1].comment or "").strip()
        structured = _structured_text(comment)
        if structured is not None and structured[0] == "below":
            if above_of is not None:
                drafts[above_of].structured.append((structured[1], number))
            continue
        texts.append((number, comment, structured))
    if settings.style == "below":
        if above_of is not None:
            free = [t for _, t, _ in texts if t and not t.startswith("#")]
            if free and not _is_label(free):
                drafts[above_of].block.extend(free)
        return
    members = _entries_after(source, last)
    if not members:
        return  # (checked first: a block with nothing below it needs no more reading)
    # A commented-out requirement keeps the lines above it as its own reason.
    for position, (_, text, _) in enumerate(texts):
        if _commented_requirement(text):
            texts = texts[position + 1 :]
            break
    structured_lines = [(s[1], n) for n, _, s in texts if s is not None]
    free = [t for _, t, s in texts if t and not t.startswith("#") and s is None]
    if free and _is_label(free):
        free = []
    members = _covered(source, settings, members, " ".join(free), _embedded(source, first))
    for member in members:
        drafts[member].block.extend(free)
        drafts[member].structured.extend(structured_lines)


def _covered(
    source: Source, settings: CommentSettings, members: list[int], text: str, embedded: bool
) -> list[int]:
    """Which entries of the run below a comment block the block explains."""
    if settings.scope == "line":
        return members[:1]
    names = _mentioned_names(text) if text else set()
    mentioned = [i for i, m in enumerate(members) if source.entries[m].name in names]
    if not embedded:
        return members[: mentioned[-1] + 1] if mentioned else members
    # Inside a list: the first line, the lines after it with the very same
    # clauses (boto3<1.36, botocore<1.36), and any line the block names.
    count = 1
    first_clauses = _clauses(source, members[0])
    while (
        count < len(members) and first_clauses and _clauses(source, members[count]) == first_clauses
    ):
        count += 1
    if mentioned:
        count = max(count, mentioned[-1] + 1)
    return members[:count]


def _freeze(draft: _Draft, links: LinkContext) -> Annotation:
    parts = [" ".join(" ".join(draft.block).split())] if draft.block else []
    if draft.inline:
        parts.append(draft.inline)
    reason = "; ".join(p for p in parts if p) or None
    values: dict[str, Any] = {}
    problems: list[Problem] = []
    for text, line in draft.structured:
        parsed, found = parse_structured(text, line, links)
        problems.extend(found)
        for key, value in parsed.items():
            if isinstance(value, list):
                values.setdefault(key, []).extend(value)
            elif isinstance(value, set):
                values.setdefault(key, set()).update(value)
            else:
                values[key] = value
    reason = values.get("reason") or reason
    found_links = list(find_links(reason, links)) if reason else []
    for link in values.get("links", []):
        if str(link) not in {str(f) for f in found_links}:
            found_links.append(link)
    return Annotation(
        reason=reason,
        links=tuple(found_links),
        bad_versions=tuple(values.get("bad", [])),
        owner=values.get("owner"),
        review_by=values.get("review_by"),
        verify=values.get("verify"),
        profiles=tuple(values.get("profiles", [])),
        suppress=frozenset(values.get("ignore", set())),
        problems=tuple(problems),
    )


def _apply_config(
    annotation: Annotation,
    entry: Entry,
    path: str,
    config: Sequence[ConfigAnnotation],
    links: LinkContext,
) -> Annotation:
    from govern.sources.discover import glob_match

    for item in config:
        if entry.name is None or canonicalize_name(item.package) != entry.name:
            continue
        if item.source is not None and not glob_match(item.source, path):
            continue
        if item.clause is not None and (
            entry.requirement is None
            or item.clause not in {str(spec) for spec in entry.requirement.specifier}
        ):
            continue
        f = item.fields
        extra_links = tuple(
            link
            for value in f.get("links", ())
            for link in (find_links(str(value), links) or (Link("url", str(value)),))
        )
        merged = {str(x): x for x in (*annotation.links, *extra_links)}
        annotation = replace(
            annotation,
            reason=annotation.reason or f.get("reason"),
            links=tuple(merged.values()),
            bad_versions=tuple(dict.fromkeys((*annotation.bad_versions, *f.get("bad", ())))),
            owner=annotation.owner or f.get("owner"),
            review_by=annotation.review_by or f.get("review_by"),
            verify=annotation.verify or f.get("verify"),
            profiles=tuple(dict.fromkeys((*annotation.profiles, *f.get("profiles", ())))),
            suppress=annotation.suppress | frozenset(f.get("ignore", ())),
        )
    return annotation
