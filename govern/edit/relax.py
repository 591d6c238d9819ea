"""The narrow relaxation govern proposes for a verified candidate (docs/design.md "Relaxation").

Notes: docs/design.md#relaxation, docs/internals.md#edit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from govern.exclusions.classify import classify
from govern.exclusions.model import Kind, SubKind
from govern.sources.pipline import comment_index

Strategy = Literal["exclude", "raise-cap", "drop", "raise-floor", "keep-ceiling"]
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)

_FLOORS = (">=", ">")


class RelaxationRefused(ValueError):
    """The requested relaxation cannot be proposed; the message is one line, why."""


@dataclass(frozen=True, slots=True)
class Relaxation:
    """A proposed change of one requirement's specifiers.

    ``before_clauses`` and ``after_clauses`` hold the clauses in order (as written when
    :func:`relax` was given the specifiers as text, else in :class:`SpecifierSet` order);
    ``removed`` and ``added`` are normalized clause texts.
    """

    before: SpecifierSet
    after: SpecifierSet
    strategy: Strategy
    removed: tuple[str, ...]
    added: tuple[str, ...]
    note: str
    before_clauses: tuple[str, ...] = ()
    after_clauses: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether the specifiers change at all (a not-equal clause needs no change)."""
        return bool(self.removed or self.added)

    @property
    def diff(self) -> str:
        """The two-line ``-``/``+`` diff of the specifier text."""
        return line_diff(",".join(self.before_clauses), ",".join(self.after_clauses))

    def rewrite(self, requirement: str) -> str:
        """``requirement`` (a line as written) with its specifiers replaced by ``after``."""
        return rewrite_requirement(requirement, self.after)

    def line_diff(self, requirement: str) -> str:
        """The two-line ``-``/``+`` diff of ``requirement`` as written and as rewritten."""
        return line_diff(requirement, self.rewrite(requirement))


# -- relax --------------------------------------------------------------------------


def relax(
    specifiers: SpecifierSet | str,
    clause: str,
    candidate: Version | str,
    known_bad: Iterable[Version | str],
    *,
    strategy: Strategy = "exclude",
    published: Iterable[Version | str] = (),
) -> Relaxation:
    """Compute the relaxation of ``clause`` in ``specifiers`` that admits ``candidate``.

    See docs/design.md (Relaxation) for the strategies and the invariants (and their three
    stated exceptions: a pin moved by ``exclude``, ``raise-floor``, and the pre-releases of
    P itself under ``==P.*``). Raises :class:`RelaxationRefused` for an unknown strategy,
    a clause that is not in ``specifiers``, a floor, a known-bad candidate, a candidate
    another clause keeps out, and a candidate the strategy cannot admit without letting a
    known-bad version back in.
    """
    if strategy not in STRATEGIES:
        raise RelaxationRefused(
            f"unknown relaxation strategy {strategy!r} (choose one of {', '.join(STRATEGIES)})"
        )
    written = _clauses(specifiers)
    before_text = ",".join(str(s) for s in written)
    target = _specifier(clause, "clause")
    index = next((i for i, s in enumerate(written) if str(s) == str(target)), None)
    if index is None:  # the same clause written differently (<14.1 for <14.1.0)
        index = next((i for i, s in enumerate(written) if _same(s, target)), None)
    if index is None:
        raise RelaxationRefused(f"clause `{target}` is not in `{before_text or '(none)'}`")
    target = written[index]
    kinds = classify(target)
    if kinds is None:
        raise RelaxationRefused(f"`{target}` is a floor, not an exclusion: nothing to relax")
    kind, sub_kind = kinds
    c = _version(candidate, "candidate")
    rest = [s for i, s in enumerate(written) if i != index]
    bad = {_version(b, "known-bad version") for b in known_bad}
    on_index = {_version(p, "published version") for p in published}
    named = _named_bad(target, kind, on_index)
    # <14.1.0 with 14.1.0 published: 14.1.0 is why the cap exists, so it counts as bad
    if named is not None:
        bad.add(named)

    def result(after: Sequence[Specifier], note: str) -> Relaxation:
        return _result(written, after, strategy, note)

    if c in bad:
        why = " (the capped release is published)" if c == named else ""
        raise RelaxationRefused(f"candidate {c} is known bad{why}: it cannot be proposed")
    # a second run, or a not-equal clause that never kept c out: nothing to relax
    if _admits(written, c):
        what = "the bad release stays out" if kind is Kind.NOT_EQUAL else "it is already in"
        return result(written, f"nothing to change: `{before_text}` admits {c}; {what}")
    blockers = [str(s) for s in rest if not _admits((s,), c)]
    if blockers:
        raise RelaxationRefused(
            f"{c} is also kept out by `{','.join(blockers)}`: relaxing `{target}` alone "
            "cannot admit it"
        )
    # !=c names c as bad: only a person can decide it is good after all
    if kind is Kind.NOT_EQUAL:
        raise RelaxationRefused(
            f"`{target}` names {c} as bad; if {c} is good after all, remove the clause by hand"
        )

    bad_out = sorted(b for b in bad if not _admits(written, b))
    # a bad version S already admits is not this relaxation's business: named, left as it is
    ignored = sorted(b for b in bad if b not in bad_out)
    plan = _plan(strategy, target, kind, sub_kind, c, rest)
    kept = [s for s in rest if str(s) not in plan.also_removed]
    base = [*plan.replacement, *kept]
    if not _admits(plan.replacement, c):
        raise RelaxationRefused(plan.refusal)
    coming_back = [b for b in bad_out if _admits(base, b)]
    # drop and raise-floor write no !=: a bad version coming back refuses them
    if coming_back and not plan.may_exclude:
        listed = ", ".join(str(b) for b in coming_back)
        raise RelaxationRefused(
            f"{strategy} of `{target}` would let known-bad {listed} back in; use exclude instead"
        )
    excluders = [Specifier(f"!={b}") for b in coming_back]
    clash = [str(b) for b, s in zip(coming_back, excluders, strict=True) if not _admits((s,), c)]
    if clash:
        raise RelaxationRefused(
            f"admitting {c} would let known-bad {', '.join(clash)} back in: no specifier "
            f"keeps {clash[0]} out and lets its local variant {c} in"
        )
    if plan.keeps_all:
        # S can admit a local build of a bad release only through a pin on it (==14.1.0+cu12)
        pinned = [v for v in _local_pins(written) if _admits(written, v)]
        lost = [
            (b, v) for b in coming_back for v in pinned if not _admits((Specifier(f"!={b}"),), v)
        ]
        if lost:
            b, v = lost[0]
            raise RelaxationRefused(
                f"keeping known-bad {b} out would also drop {v}, which `{before_text}` admits; "
                "no specifier separates them (use exclude to move the pin)"
            )
    new = [*plan.replacement, *excluders]
    after = _splice(written, index, plan.also_removed, new)
    if plan.keeps_all:
        _check_kept(written, after, {*on_index, *_local_pins(written)}, plan.loses_below)
    _check(after, c, bad_out)

    note = plan.note
    if coming_back:
        note += f"; known-bad {', '.join(str(b) for b in coming_back)} stays out by `!=`"
    if ignored:
        note += f"; {', '.join(str(b) for b in ignored)} known bad but already admitted"
    if c.is_prerelease and not any(s.prereleases for s in after):
        note += f"; {c} is a pre-release: pip takes it only with --pre"
    return result(after, note)


@dataclass(frozen=True, slots=True)
class _Plan:
    """How a strategy replaces the clause, before ``!=`` clauses are added."""

    replacement: tuple[Specifier, ...]
    note: str
    may_exclude: bool  # whether ``!=b`` may keep a returning bad version out
    keeps_all: bool  # whether every version S admitted must stay admitted
    also_removed: frozenset[str] = frozenset()  # floors made redundant (raise-floor)
    refusal: str = ""  # the message when c is below what the replacement allows
    loses_below: Version | None = None  # ``==P.*`` replaced by ``>=P``: P's pre-releases go


def _plan(
    strategy: Strategy,
    target: Specifier,
    kind: Kind,
    sub_kind: SubKind,
    c: Version,
    rest: Sequence[Specifier],
) -> _Plan:
    op = target.operator
    pin = kind is Kind.PIN
    ban = kind is Kind.BAN
    low = _low(target, pin=pin and strategy in ("raise-cap", "keep-ceiling"))
    floor = _floor(low, rest)
    wildcard = sub_kind is SubKind.WILDCARD and bool(floor)
    # ==P.* admits P's own pre-releases and >=P does not; >=P.dev0 would make installers take
    # pre-releases of every later version, which is worse: the loss is stated instead
    loses = low if wildcard else None
    below = f"{c} is below what `{target}` allows, so {strategy} cannot admit it"
    # vllm #42599 moved a floor past a bad release and deleted the why: the note keeps it
    if strategy == "raise-floor":
        new_floor = Specifier(f">={c.public}")
        redundant = frozenset(str(s) for s in rest if s.operator in _FLOORS)
        note = (
            f"`{target}` replaced by the floor `{new_floor}` ({c} verified); keep the "
            "reason comment: it says why older releases stay out"
        )
        return _Plan((new_floor,), note, False, False, redundant, refusal=below)
    if strategy in ("raise-cap", "keep-ceiling"):
        if ban and op == "==":
            raise RelaxationRefused(f"`{target}` is a ban: it has no cap to raise; use exclude")
        if pin and low is None:
            raise RelaxationRefused(f"`{target}` is not a PEP 440 version: {strategy} needs one")
        inclusive = pin or op == "<="  # a pin's ceiling is inclusive too
        if strategy == "keep-ceiling":  # the next release series stays out until verified
            cap = Specifier(f"<{_next_series(c)}")
        else:
            cap = Specifier(f"<={c.public}" if inclusive else f"<{_next_release(c)}")
        replacement = (*floor, cap)
        shown = ",".join(str(s) for s in replacement)
        note = f"`{target}` raised to `{shown}` ({c} verified)"
        return _Plan(replacement, note, True, True, refusal=below, loses_below=loses)
    # a pin admits one release, so V leaves by definition: the pin moves to c
    if pin and strategy == "exclude":
        moved = Specifier(f"{op}{c}")
        note = f"pin `{target}` moved to `{moved}` ({c} verified)"
        return _Plan((moved,), note, True, False, refusal=below)
    # exclude, or drop: the ceiling goes; a compatible or wildcard cap keeps its floor
    replacement = () if pin else floor
    if ban:
        note = f"ban `{target}` lifted ({c} verified)"
    elif low is not None:
        kept = f", keeping `{floor[0]}`" if floor else ""
        note = f"ceiling of `{target}` dropped{kept} ({c} verified)"
    else:
        note = f"`{target}` dropped ({c} verified)"
    return _Plan(replacement, note, strategy == "exclude", True, refusal=below, loses_below=loses)


def _low(target: Specifier, *, pin: bool) -> Version | None:
    """The floor a clause holds besides its ceiling: ``~=V`` and a pin have V, ``==P.*`` P."""
    version = target.version.removesuffix(".*")
    if target.operator == "~=" or (target.operator == "==" and target.version.endswith(".*")):
        return Version(version)
    if pin:
        try:
            return Version(Version(version).public)
        except InvalidVersion:
            return None
    return None


def _floor(low: Version | None, rest: Sequence[Specifier]) -> tuple[Specifier, ...]:
    """``>=low``, unless another clause already keeps everything below ``low`` out."""
    if low is None:
        return ()
    # another floor at low or above already bounds the set: writing >=low would add nothing
    for spec in rest:
        if spec.operator in (*_FLOORS, "~=", "==") and not spec.version.endswith(".*"):
            try:
                if Version(spec.version) >= low:
                    return ()
            except InvalidVersion:  # pragma: no cover - only === holds non-versions
                continue
    return (Specifier(f">={low}"),)


def _next_series(c: Version) -> Version:
    """The release series after ``c``'s: 1.19.1 gives 1.20, 2 gives 3, 2026.5.1 gives 2026.6."""
    epoch = f"{c.epoch}!" if c.epoch else ""
    if len(c.release) >= 2:
        return Version(f"{epoch}{c.release[0]}.{c.release[1] + 1}")
    return Version(f"{epoch}{c.release[0] + 1}")


def _next_release(c: Version) -> Version:
    """The release after ``c`` at c's own precision: 14.1.1 (or 14.1.1rc1) gives 14.1.2."""
    release = (*c.release[:-1], c.release[-1] + 1)
    epoch = f"{c.epoch}!" if c.epoch else ""
    return Version(epoch + ".".join(str(p) for p in release))


def _named_bad(target: Specifier, kind: Kind, published: set[Version]) -> Version | None:
    """The version an exclusive cap names, when it is published (it is why the cap exists)."""
    if kind is not Kind.CAP or target.operator != "<":
        return None
    try:
        version = Version(target.version)
    except InvalidVersion:  # pragma: no cover - packaging validates < clauses
        return None
    return version if version in published else None


def _splice(
    written: Sequence[Specifier], index: int, also_removed: frozenset[str], new: Sequence[Specifier]
) -> list[Specifier]:
    """``written`` without the clause at ``index`` (and ``also_removed``), ``new`` in its place."""
    gone = {i for i, s in enumerate(written) if i == index or str(s) in also_removed}
    first = min(gone)
    out: list[Specifier] = []
    for i, spec in enumerate(written):
        if i == first:
            out.extend(sorted(_unique(new, written, gone), key=_order))
        if i not in gone:
            out.append(spec)
    return out


def _unique(
    new: Sequence[Specifier], written: Sequence[Specifier], gone: set[int]
) -> list[Specifier]:
    """``new`` without the clauses S keeps anyway (a ``!=b`` that is already written)."""
    kept = {str(s) for i, s in enumerate(written) if i not in gone}
    out: list[Specifier] = []
    for spec in new:
        if str(spec) not in kept:
            kept.add(str(spec))
            out.append(spec)
    return out


def _check(after: Sequence[Specifier], c: Version, bad_out: Sequence[Version]) -> None:
    """Invariants 1 and 2 on the versions at hand; a failure is a bug, refused as one."""
    problems = [] if _admits(after, c) else [f"{c} not admitted"]
    problems += [f"known-bad {b} readmitted" for b in bad_out if _admits(after, b)]
    if problems:  # pragma: no cover - the rules above make this unreachable
        raise RelaxationRefused(f"internal check failed: {'; '.join(problems)}")


def _check_kept(
    written: Sequence[Specifier],
    after: Sequence[Specifier],
    published: Iterable[Version],
    loses_below: Version | None,
) -> None:
    """Invariant 3 on the published versions (``loses_below``: the ``==P.*`` exception)."""
    lost = [
        str(v)
        for v in sorted(published)
        if _admits(written, v)
        and not _admits(after, v)
        and not (loses_below is not None and v < loses_below)
    ]
    if lost:  # pragma: no cover - the rules above make this unreachable
        raise RelaxationRefused(f"internal check failed: {', '.join(lost)} no longer admitted")


def _result(
    written: Sequence[Specifier], after: Sequence[Specifier], strategy: Strategy, note: str
) -> Relaxation:
    before_clauses = tuple(str(s) for s in written)
    after_clauses = tuple(str(s) for s in after)
    removed = tuple(s for s in before_clauses if s not in after_clauses)
    added = tuple(s for s in after_clauses if s not in before_clauses)
    return Relaxation(
        before=SpecifierSet(",".join(before_clauses)),
        after=SpecifierSet(",".join(after_clauses)),
        strategy=strategy,
        removed=removed,
        added=added,
        note=note,
        before_clauses=before_clauses,
        after_clauses=after_clauses,
    )


# -- small helpers ------------------------------------------------------------------


def _admits(specs: Iterable[Specifier], version: Version) -> bool:
    return all(s.contains(version, prereleases=True) for s in specs)


def _clauses(specifiers: SpecifierSet | str) -> list[Specifier]:
    """The clauses in order: as written for text, in SpecifierSet order otherwise."""
    if isinstance(specifiers, SpecifierSet):
        return list(specifiers)
    text = specifiers.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    out: list[Specifier] = []
    for piece in text.split(","):
        if piece.strip():
            spec = _specifier(piece, "specifier")
            if str(spec) not in {str(s) for s in out}:
                out.append(spec)
    return out


def _local_pins(written: Sequence[Specifier]) -> list[Version]:
    """The local versions pinned by ``==V+local`` clauses."""
    out: list[Version] = []
    for spec in written:
        if spec.operator == "==" and "+" in spec.version:
            out.append(Version(spec.version))
    return out


def _same(a: Specifier, b: Specifier) -> bool:
    """The same clause written differently (``<14.1`` and ``<14.1.0``; not wildcards)."""
    wildcard = a.version.endswith(".*") or b.version.endswith(".*")
    return not wildcard and a.operator == b.operator and a == b


def _specifier(text: str, what: str) -> Specifier:
    try:
        return Specifier(text.strip())
    except InvalidSpecifier:
        raise RelaxationRefused(f"invalid {what} {text.strip()!r}") from None


def _version(value: Version | str, what: str) -> Version:
    if isinstance(value, Version):
        return value
    try:
        return Version(value)
    except InvalidVersion:
        raise RelaxationRefused(f"invalid {what} {value!r}") from None


_RANK = {">=": 0, ">": 0, "~=": 1, "==": 1, "===": 1, "!=": 2, "<=": 3, "<": 3}


def _order(spec: Specifier) -> tuple[int, Version, int]:
    """New clauses read in ascending version order: ``>=1.4.2,!=1.5.0``, ``!=14.1.0,<14.1.2``."""
    try:
        version = Version(spec.version.removesuffix(".*"))
    except InvalidVersion:
        return (1, Version("0"), _RANK.get(spec.operator, 4))
    return (0, version, _RANK.get(spec.operator, 4))


# -- rewriting a requirement line ---------------------------------------------------

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_LINE = re.compile(
    rf"""
    (?P<head>[ \t]*{_NAME}(?:[ \t]*\[[^\]]*\])?)
    (?P<gap>[ \t]*)
    (?P<spec>\([^)]*\)|[^;]*?)
    (?P<tail>[ \t]*)
    (?P<marker>;.*)?
    """,
    re.VERBOSE | re.DOTALL,
)
_OPERATOR = re.compile(r"(===|~=|==|!=|<=|>=|<|>)([ \t]*)")
_COMMA = re.compile(r"[ \t]*,[ \t]*")


def _split_comment(line: str) -> tuple[str, str]:
    """The content and the rest (whitespace, ``#`` and the comment), as pip splits them."""
    index = comment_index(line)
    if index is None:
        return line, ""
    content = line[:index].rstrip()
    return content, line[len(content) :]


def rewrite_requirement(requirement: str, after: SpecifierSet) -> str:
    """``requirement`` as written with its specifiers replaced by ``after``.

    The name, extras, marker and any ``# comment`` stay exactly as written; clauses that
    ``after`` keeps keep their text and order; new clauses take the place of the first
    removed one (ascending version order) in the line's own style: ``name != 14.1.0``
    when the line had spaces around its operators, ``name!=14.1.0`` when it did not.
    A URL requirement (``name @ url``) has no specifiers to rewrite: refused.
    """
    body = requirement.rstrip("\r\n")
    newline = requirement[len(body) :]
    content, comment = _split_comment(body)
    try:
        parsed = Requirement(content)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid requirement"
        raise RelaxationRefused(f"cannot rewrite {content.strip()!r}: {first}") from None
    if parsed.url:
        raise RelaxationRefused(
            f"cannot rewrite {content.strip()!r}: a URL requirement has no version specifiers"
        )
    match = _LINE.fullmatch(content)
    if match is None:  # pragma: no cover - any valid non-URL requirement matches
        raise RelaxationRefused(f"cannot rewrite {content.strip()!r}: unexpected shape")
    head, gap, spec, tail, marker = match.group("head", "gap", "spec", "tail", "marker")
    parens = spec.startswith("(")
    inner = spec[1:-1] if parens else spec
    pieces = [p for p in _COMMA.split(inner.strip()) if p]
    op_match = _OPERATOR.match(pieces[0]) if pieces else None
    op_space = op_match.group(2) if op_match else (" " if gap else "")
    comma_match = _COMMA.search(inner.strip())
    comma = comma_match.group(0) if comma_match else ("," + op_space[:1])
    if not spec:
        gap = " " if op_space else ""

    written = [_specifier(p, "specifier") for p in pieces]
    ordered = _merge(written, after)
    texts = [
        pieces[i] if i is not None else f"{s.operator}{op_space}{s.version}" for s, i in ordered
    ]
    if texts:
        new_spec = comma.join(texts)
        if parens:
            inside = spec[1:-1]
            before = inside[: len(inside) - len(inside.lstrip())]
            after_ws = inside[len(inside.rstrip()) :]
            new_spec = f"({before}{new_spec}{after_ws})"
        rewritten = f"{head}{gap}{new_spec}{tail}{marker or ''}"
    else:
        rewritten = f"{head}{tail if marker else ''}{marker or ''}"
    check = Requirement(rewritten)
    if (
        {str(s) for s in check.specifier} != {str(s) for s in after}
        or check.name != parsed.name
        or check.extras != parsed.extras
        or str(check.marker) != str(parsed.marker)
    ):  # pragma: no cover - the pieces above are put back as they were
        raise RelaxationRefused(f"cannot rewrite {content.strip()!r}: the result did not parse")
    return rewritten + comment + newline


def _merge(written: Sequence[Specifier], after: SpecifierSet) -> list[tuple[Specifier, int | None]]:
    """The clauses of ``after``: those written (with their index) in order, new ones spliced."""
    wanted = {str(s): s for s in after}
    new = sorted(
        (s for key, s in wanted.items() if key not in {str(w) for w in written}), key=_order
    )
    out: list[tuple[Specifier, int | None]] = []
    placed = False
    for i, spec in enumerate(written):
        key = str(spec)
        if key in wanted:
            out.append((spec, i))
            del wanted[key]
        elif not placed:
            out.extend((s, None) for s in new)
            placed = True
    if not placed:
        out.extend((s, None) for s in new)
    return out


def line_diff(before_line: str, after_line: str) -> str:
    """A two-line diff: ``-before`` and ``+after`` (line ends dropped)."""
    return f"-{before_line.rstrip(chr(13) + chr(10))}\n+{after_line.rstrip(chr(13) + chr(10))}"
