"""Run the rules of a policy over sources and exclusions, producing findings."""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import date

from packaging.specifiers import Specifier
from packaging.version import Version

from govern.exclusions.annotations import parse_structured
from govern.exclusions.links import LinkContext
from govern.exclusions.model import Exclusion, Kind, SubKind
from govern.policy.model import Finding, Policy, Severity
from govern.policy.rules import RULES
from govern.redact import redact
from govern.sources.model import Problem, Source


def _comment_suppressions(source: Source, line: int) -> frozenset[str]:
    """Rules suppressed by a ``# govern: ignore=...`` comment on ``line`` itself."""
    physical = source.line(line)
    comment = (physical.comment or "").strip() if physical else ""
    if not comment.startswith("govern:"):
        return frozenset()
    values, _ = parse_structured(comment[len("govern:") :], line, LinkContext())
    return frozenset(values.get("ignore", ()))


def _suppressed(rule: str, suppress: frozenset[str]) -> bool:
    return rule in suppress or "all" in suppress


class Emitter:
    """Collects findings, applying the policy's severity and suppressions."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.findings: list[Finding] = []

    def problem(self, source: str, problem: Problem, suppress: frozenset[str]) -> None:
        self.emit(
            problem.rule,
            source,
            problem.line,
            redact(problem.message),  # whichever reader made it, no credentials leave
            suppress,
            column=problem.column,
            excerpt=problem.excerpt and redact(problem.excerpt),
            hint=problem.hint,
            package=problem.package,
        )

    def exclusion(self, rule: str, exc: Exclusion, message: str, hint: str | None = None) -> None:
        self.emit(
            rule,
            exc.source,
            exc.line,
            message,
            exc.annotation.suppress,
            package=exc.package,
            exclusion=exc.id,
            column=exc.column,
            hint=hint or RULES[rule].fix,
        )

    def emit(
        self,
        rule: str,
        source: str,
        line: int,
        message: str,
        suppress: frozenset[str],
        *,
        package: str | None = None,
        exclusion: str | None = None,
        column: int | None = None,
        excerpt: str | None = None,
        hint: str | None = None,
    ) -> None:
        severity = self.policy.severity(rule)
        if severity is Severity.OFF or _suppressed(rule, suppress):
            return
        self.findings.append(
            Finding(
                rule, severity, source, line, message, package, exclusion, column, excerpt, hint
            )
        )


def _kinds(policy: Policy, rule: str, default: Sequence[str]) -> set[str]:
    return set(policy.option(rule, "kinds", list(default)))


@functools.lru_cache(maxsize=4096)
def _probes_around(version: str) -> tuple[Version, ...]:
    """Versions at and around one bound: enough to compare clause sets."""
    try:
        v = Version(version.removesuffix(".*"))
        release = v.release
        return (
            v,
            Version(f"{v.base_version}.dev0"),
            Version(f"{v.base_version}.post1"),
            Version(".".join(map(str, (*release, 1)))),
            Version(".".join(map(str, (*release[:-1], release[-1] + 1)))),
            Version(f"{release[0] + 1}"),
        )
    except ValueError:  # InvalidVersion, or a number past the int-string limit
        return ()


_EDGES = (Version("0.dev0"), Version("999999"))
# Clauses that bound versions from above: only these can make a cap redundant.
_UPPER = frozenset({"<", "<=", "==", "===", "~="})


def _admits(specs: Iterable[Specifier], version: Version | str) -> bool:
    return all(spec.contains(version, prereleases=True) for spec in specs)


@functools.lru_cache(maxsize=4096)
def _parsed(version: str) -> Version | str:
    """``version`` parsed once (left as written when packaging cannot parse it)."""
    try:
        return Version(version)
    except ValueError:  # InvalidVersion, or a number past the int-string limit
        return version  # contains() judges the raw string itself


def _exact_not_equal(spec: Specifier) -> Version | None:
    """The version of a ``!=V`` clause without a wildcard, parsed; else None."""
    if spec.operator != "!=" or spec.version.endswith(".*"):
        return None
    parsed = _parsed(spec.version)
    return parsed if isinstance(parsed, Version) else None


def _public_key(version: Version) -> tuple[object, ...]:
    """Equal for versions whose public parts are equal (trailing zeros do not count)."""
    release = version.release
    end = len(release)
    while end > 1 and release[end - 1] == 0:
        end -= 1
    return (version.epoch, release[:end], version.pre, version.post, version.dev)


class _Clauses:
    """The clauses of one requirement, indexed so that "do the others admit v?" is fast.

    A line of thousands of ``!=V`` clauses is compared clause by clause with every
    other one otherwise (8,000 of them took half a minute). A ``!=W`` can keep out
    only versions whose public part equals W's, so those clauses are looked up by it
    and only the few that share it are asked; the rest are asked one by one.
    """

    def __init__(self, specs: Sequence[Specifier]) -> None:
        self.specs = specs
        self.by_public: dict[tuple[object, ...], list[Specifier]] = defaultdict(list)
        self.rest: list[Specifier] = []
        for spec in specs:
            version = _exact_not_equal(spec)
            if version is None:
                self.rest.append(spec)
            else:
                self.by_public[_public_key(version)].append(spec)
        self.upper = sum(1 for s in specs if s.operator in _UPPER)
        self._probes: list[Version] | None = None

    def probes(self) -> list[Version]:
        """Versions at and around every bound of the line (computed once per line).

        Distinct by spelling, not by equality: 0.0 and 0 are equal Versions, but ``===0``
        admits only the one spelled "0".
        """
        if self._probes is None:
            spelled = {str(v): v for v in _EDGES}
            for spec in self.specs:
                spelled.update((str(v), v) for v in _probes_around(spec.version))
            self._probes = list(spelled.values())
        return self._probes

    def others_admit(self, clause: Specifier, version: Version | str) -> bool:
        """Whether every clause but ``clause`` admits ``version``."""
        if isinstance(version, Version):
            excluders = self.by_public.get(_public_key(version), ())
        else:  # a raw string (=== is among the others): ask every != as before
            excluders = [s for specs in self.by_public.values() for s in specs]
        return _admits((s for s in excluders if s is not clause), version) and _admits(
            (s for s in self.rest if s is not clause), version
        )

    def redundant(self, clause: Specifier) -> bool:
        """True when the other clauses already keep out every version ``clause`` keeps out."""
        if len(self.specs) < 2:
            return False
        if clause.operator == "!=" and not clause.version.endswith(".*"):
            # One parse for all the others, unless one compares raw strings (===).
            raw = clause.version
            arbitrary = any(o.operator == "===" for o in self.rest if o is not clause)
            return not self.others_admit(clause, raw if arbitrary else _parsed(raw))
        if clause.operator in _UPPER and self.upper - 1 < 1:
            return False  # floors and != never keep out everything above a ceiling
        # Redundant unless some probe is kept out by the clause alone. Asking the one
        # clause first leaves the (several) others for the few probes it keeps out.
        return not any(
            not clause.contains(v, prereleases=True) and self.others_admit(clause, v)
            for v in self.probes()
        )


def _exclusion_rules(
    emit: Emitter,
    policy: Policy,
    exclusions: Sequence[Exclusion],
    sources: dict[str, Source],
    today: date,
) -> None:
    missing_reason = _kinds(policy, "missing-reason", (Kind.NOT_EQUAL, Kind.CAP))
    missing_link = _kinds(policy, "missing-link", (Kind.CAP,))
    missing_review = _kinds(policy, "missing-review-by", (Kind.CAP,))
    library_groups = tuple(
        policy.option(
            "cap-in-library",
            "groups",
            [
                "project.dependencies",
                "project.optional-dependencies",
                "project.requires-python",
            ],
        )
    )
    for exc in exclusions:
        ann = exc.annotation
        debt = exc.sub_kind is not SubKind.SENTINEL
        label = f"{exc.package} {exc.clause}"
        if exc.kind is Kind.BAN:
            emit.exclusion(
                "ban", exc, f"{exc.package} is banned ({exc.clause}): no release can satisfy it"
            )
        if exc.sub_kind is SubKind.SENTINEL:
            emit.exclusion("sentinel", exc, f"{label} is a sentinel bound, not a real cap")
        if debt and ann.reason is None and str(exc.kind) in missing_reason:
            emit.exclusion("missing-reason", exc, f"{label} ({exc.kind}) has no reason")
        if debt and not ann.links and str(exc.kind) in missing_link:
            emit.exclusion("missing-link", exc, f"{label} ({exc.kind}) links no issue or advisory")
        if debt and ann.review_by is None and str(exc.kind) in missing_review:
            emit.exclusion("missing-review-by", exc, f"{label} ({exc.kind}) has no review date")
        if ann.review_by is not None and ann.review_by < today:
            days = (today - ann.review_by).days
            emit.exclusion(
                "review-overdue",
                exc,
                f"{label}: review was due {ann.review_by.isoformat()} ({days} days ago)",
            )
        if exc.kind is Kind.NOT_EQUAL and exc.sub_kind is SubKind.EXACT:
            _partial(emit, exc)
        if (
            debt
            and exc.kind in (Kind.CAP, Kind.PIN)
            and exc.group
            and exc.group.startswith(library_groups)
        ):
            emit.exclusion(
                "cap-in-library",
                exc,
                f"{label} caps a runtime dependency of a library ({exc.group})",
            )
    _redundancy(emit, exclusions, sources)
    _consistency(emit, exclusions)


def _partial(emit: Emitter, exc: Exclusion) -> None:
    version = _parsed(exc.version)
    if not isinstance(version, Version):
        return
    if len(version.release) >= 3 or version.pre or version.post or version.dev or version.local:
        return
    full = ".".join(map(str, (*version.release, *([0] * (3 - len(version.release))))))
    nxt = ".".join(map(str, (*version.release, *([0] * (2 - len(version.release))), 1)))
    emit.exclusion(
        "partial-version-exclusion",
        exc,
        f"{exc.package} {exc.clause} keeps out only {full}; {nxt} still passes",
        hint=f"write !={exc.version}.* to exclude the whole {exc.version} series, "
        f"or !={full} if only that release is bad",
    )


def _redundancy(emit: Emitter, exclusions: Sequence[Exclusion], sources: dict[str, Source]) -> None:
    # An entry is (source, line, column): a pyproject line can hold several.
    by_line: dict[tuple[str, int, int], list[Exclusion]] = defaultdict(list)
    for exc in exclusions:
        by_line[(exc.source, exc.line, exc.column)].append(exc)
    entries = {
        (source.path, entry.line, entry.column): entry
        for source in sources.values()
        for entry in source.entries
    }
    for place, group in by_line.items():
        entry = entries.get(place)
        if entry is None or entry.requirement is None:
            continue
        specs = list(entry.requirement.specifier)
        if len(specs) < 2:
            continue  # a lone clause cannot be made redundant by others
        clauses = _Clauses(specs)
        by_text: dict[str, Specifier] = {}
        for spec in specs:
            by_text.setdefault(str(spec), spec)
        for exc in group:
            clause = by_text.get(exc.clause)
            if clause is not None and clauses.redundant(clause):
                emit.exclusion(
                    "redundant-exclusion",
                    exc,
                    f"{exc.package} {exc.clause} is already excluded by {_others(specs, clause)}",
                )


_OTHERS_SHOWN = 10


def _others(specs: Sequence[Specifier], clause: Specifier) -> str:
    """The clauses beside ``clause``, for a message (a long line is cut short)."""
    shown: list[str] = []
    for spec in specs:
        if spec is not clause:
            if len(shown) == _OTHERS_SHOWN:
                return ",".join(shown) + f" and {len(specs) - 1 - _OTHERS_SHOWN:,} more"
            shown.append(str(spec))
    return ",".join(shown)


def _consistency(emit: Emitter, exclusions: Sequence[Exclusion]) -> None:
    # Places are entries, (source, line, column): a pyproject line can hold several.
    groups: dict[tuple[str, str | None], dict[tuple[str, int, int], list[Exclusion]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for exc in exclusions:
        if exc.sub_kind is not SubKind.SENTINEL:
            groups[(exc.package, exc.marker)][(exc.source, exc.line, exc.column)].append(exc)
    for (package, _marker), places in groups.items():
        _drop_agreeing_lock(places)
        clauses = {place: [exc.clause for exc in found] for place, found in places.items()}
        shapes = {tuple(sorted(c)) for c in clauses.values()}
        if len(places) < 2 or len(shapes) < 2:
            continue
        described = "; ".join(
            f"{','.join(c)} in {src}:{ln}" for (src, ln, _), c in sorted(clauses.items())
        )
        for place in sorted(places):
            emit.exclusion(
                "inconsistent-exclusions",
                places[place][0],
                f"{package} is excluded differently across sources: {described}",
            )


def _drop_agreeing_lock(places: dict[tuple[str, int, int], list[Exclusion]]) -> None:
    """Leave out the places that only pin a version the other places admit.

    A constraints file of pins (OpenStack's ``upper-constraints.txt``: ``eventlet===0.36.1``
    beside ``eventlet!=0.36.0`` in ``global-requirements.txt``) is a lock inside the ranges,
    not a disagreement; pins that differ from each other, or a pin a range keeps out, are.
    """
    pinned = {place for place, found in places.items() if all(e.kind is Kind.PIN for e in found)}
    versions = {tuple(sorted(e.clause for e in places[place])) for place in pinned}
    if not pinned or len(pinned) == len(places) or len(versions) != 1:
        return
    (clauses,) = versions
    try:
        locked = [Specifier(clause).version for clause in clauses]
        ranges = [
            Specifier(e.clause) for p, found in places.items() if p not in pinned for e in found
        ]
        admitted = all(spec.contains(v, prereleases=True) for spec in ranges for v in locked)
    except ValueError:  # an arbitrary (===) string or a version past the int-string limit
        return
    if admitted:
        for place in pinned:
            del places[place]


def evaluate(
    policy: Policy,
    sources: Sequence[Source],
    exclusions: Sequence[Exclusion],
    extra_problems: Iterable[tuple[str, Problem]] = (),
    *,
    today: date,
    suppressed: Mapping[tuple[str, int], frozenset[str]] | None = None,
) -> list[Finding]:
    """All findings of ``policy`` over an audit, sorted by source, line and rule.

    ``suppressed`` maps (source, line) to the rules an entry's annotation ignores
    (``# govern: ignore=...`` on the line or in the block above it); a line that is
    no entry (a parse error) can still ignore a rule in its own comment.
    """
    emit = Emitter(policy)
    by_path = {source.path: source for source in sources}
    by_entry = suppressed or {}

    def _line_suppressions(source: Source, line: int) -> frozenset[str]:
        return _comment_suppressions(source, line) | by_entry.get((source.path, line), frozenset())

    for source in sources:
        for problem in source.problems:
            emit.problem(source.path, problem, _line_suppressions(source, problem.line))
        for entry in source.entries:
            if not entry.constrainable:
                emit.emit(
                    "unconstrainable",
                    source.path,
                    entry.line,
                    f"{redact(entry.text)} cannot be bounded by a version",
                    _line_suppressions(source, entry.line),
                    package=entry.name,
                    column=entry.column,
                )
    for path, problem in extra_problems:
        owner = by_path.get(path)
        emit.problem(
            path, problem, _line_suppressions(owner, problem.line) if owner else frozenset()
        )
    _exclusion_rules(emit, policy, exclusions, by_path, today)
    return sorted(emit.findings, key=lambda f: (f.source, f.line, f.column or 0, f.rule, f.message))
