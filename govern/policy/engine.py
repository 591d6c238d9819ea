"""Run the rules of a policy over sources and exclusions, producing findings."""

from __future__ import annotations

import bisect
import functools
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date

from packaging.specifiers import Specifier
from packaging.version import Version

from govern.exclusions.annotations import parse_structured
from govern.exclusions.model import Exclusion, Kind, SubKind
from govern.exclusions.settings import LinkContext
from govern.policy.model import Finding, Policy, Severity
from govern.policy.rules import RULES
from govern.redact import redact
from govern.sources.model import Problem, Source
from govern.text import line


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
    return tuple(probe for _, probe in _spelled_probes(version))


def _spelled_probes(version: str) -> tuple[tuple[str, Version], ...]:
    """:func:`_probes_around` with the spelling of each (``str(probe)``)."""
    try:
        v = Version(version.removesuffix(".*"))
        release = v.release
        # Written as packaging spells them, so that no spelling is asked of a Version.
        texts = (
            str(v),
            f"{v.base_version}.dev0",
            f"{v.base_version}.post1",
            ".".join(map(str, (*release, 1))),
            ".".join(map(str, (*release[:-1], release[-1] + 1))),
            f"{release[0] + 1}",
        )
        return tuple(zip(texts, (v, *(Version(text) for text in texts[1:])), strict=True))
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
    return (version.epoch, _trimmed(version.release), version.pre, version.post, version.dev)


def _trimmed(release: tuple[int, ...]) -> tuple[int, ...]:
    """``release`` without its trailing zeros (1.2.0 and 1.2 are one release)."""
    end = len(release)
    while end > 1 and release[end - 1] == 0:
        end -= 1
    return release[:end]


def _family(version: Version) -> tuple[int, tuple[int, ...]]:
    """The epoch and release of ``version``: every version sharing them (its pre-, post-,
    dev- and local releases) sorts together, and no other version sorts among them."""
    return version.epoch, _trimmed(version.release)


def _bumped(release: tuple[int, ...]) -> tuple[int, ...]:
    """The release right after every release that starts with ``release`` (1.2 -> 1.3)."""
    return (*release[:-1], release[-1] + 1)


# A run of probe indices [start, end) that a clause keeps out.
_Runs = list[tuple[int, int]]


class _Clauses:
    """The clauses of one requirement and, for each, whether the others already keep out
    every version it keeps out (judged on probes: versions at and around every bound).

    A short line is judged as the rule is written: a ``!=V`` asks the others about V (only
    the ``!=`` that share V's public version, looked up by it, and the rest), any other
    clause asks every probe. On a long line that is quadratic or cubic (2,000 ``<V`` took
    46 s), so the probes are sorted once and each clause's excluded probes are found as a
    few runs of that order (:class:`_ProbeIndex`); counting how many clauses keep each probe
    out then answers for every clause at once: it is needed when it keeps out a probe that
    nothing else does. ``small`` is the length of line still judged the first way.
    """

    def __init__(self, specs: Sequence[Specifier], *, small: int = 16) -> None:
        self.specs = specs
        self.small = small
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
        self._verdicts: dict[int, bool] | None = None  # id(clause) -> redundant

    def probes(self) -> list[Version]:
        """Versions at and around every bound of the line (computed once per line).

        Distinct by spelling, not by equality: 0.0 and 0 are equal Versions, but ``===0``
        admits only the one spelled "0".
        """
        if self._probes is None:
            spelled = {str(v): v for v in _EDGES}
            for spec in self.specs:
                spelled.update(_spelled_probes(spec.version))
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
        exact = clause.operator == "!=" and not clause.version.endswith(".*")
        if not exact and clause.operator in _UPPER and self.upper - 1 < 1:
            return False  # floors and != never keep out everything above a ceiling
        if exact and len(self.rest) <= self.small:
            # One parse for all the others, unless one compares raw strings (===).
            raw = clause.version
            arbitrary = any(o.operator == "===" for o in self.rest if o is not clause)
            return not self.others_admit(clause, raw if arbitrary else _parsed(raw))
        if not exact and len(self.specs) <= self.small:
            # Redundant unless some probe is kept out by the clause alone. Asking the one
            # clause first leaves the (several) others for the few probes it keeps out.
            return not any(
                not clause.contains(v, prereleases=True) and self.others_admit(clause, v)
                for v in self.probes()
            )
        if self._verdicts is None:
            self._verdicts = self._judge()
        return self._verdicts[id(clause)]

    def _judge(self) -> dict[int, bool]:
        order = sorted(self.probes())
        index = _ProbeIndex(order)
        runs = {id(spec): index.excluded(spec) for spec in self.specs}
        counts = index.counts(runs.values())
        # once[i]: how many of the first i probes exactly one clause keeps out.
        once = [0]
        for count in counts:
            once.append(once[-1] + (count == 1))
        arbitrary = [s for s in self.specs if s.operator == "==="]
        verdicts: dict[int, bool] = {}
        for clause in self.specs:
            if clause.operator == "!=" and not clause.version.endswith(".*"):
                verdicts[id(clause)] = self._not_equal(clause, index, counts, arbitrary)
            elif clause.operator in _UPPER and self.upper - 1 < 1:
                verdicts[id(clause)] = False  # floors and != never keep out all above a cap
            else:
                verdicts[id(clause)] = not any(
                    once[end] > once[start] for start, end in runs[id(clause)]
                )
        return verdicts

    def _not_equal(
        self,
        clause: Specifier,
        index: _ProbeIndex,
        counts: list[int],
        arbitrary: list[Specifier],
    ) -> bool:
        """Whether another clause keeps out the one version ``!=V`` names."""
        raw = clause.version
        version = _parsed(raw)
        others_arbitrary = [s for s in arbitrary if s is not clause]
        position = index.spelled.get(str(version)) if isinstance(version, Version) else None
        if position is None:  # V past the int-string limit: ask the others as written
            others = (s for s in self.specs if s is not clause)
            return not _admits(others, raw)
        if not others_arbitrary:
            return counts[position] >= 2  # this clause and at least one other
        # A === compares the text as written (raw), not the parsed version's spelling.
        standard = counts[position] - (len(arbitrary) - index.literal_count(arbitrary, position))
        return standard - 1 > 0 or any(s.version.lower() != raw.lower() for s in others_arbitrary)


class _ProbeIndex:
    """Sorted probes, with what is needed to find the runs a clause keeps out."""

    def __init__(self, order: list[Version]) -> None:
        self.order = order
        # For <=, == and != without a local version, which compare public versions only.
        self.public = [Version(v.public) if v.local is not None else v for v in order]
        self.families = [_family(v) for v in order]
        self.spelled = {str(v): i for i, v in enumerate(order)}
        self._literals: dict[str, int] | None = None

    def literal_count(self, arbitrary: Sequence[Specifier], position: int) -> int:
        """How many of the ``===`` clauses ``arbitrary`` admit the probe at ``position``
        (its spelling is their text; versions spell themselves in lower case)."""
        if self._literals is None:
            self._literals = defaultdict(int)
            for spec in arbitrary:
                self._literals[spec.version.lower()] += 1
        return self._literals.get(str(self.order[position]), 0)

    def counts(self, all_runs: Iterable[_Runs]) -> list[int]:
        """How many clauses keep out each probe."""
        steps = [0] * (len(self.order) + 1)
        for runs in all_runs:
            for start, end in runs:
                steps[start] += 1
                steps[end] -= 1
        counts: list[int] = []
        running = 0
        for step in steps[:-1]:
            running += step
            counts.append(running)
        return counts

    def excluded(self, spec: Specifier) -> _Runs:
        """The runs of probes ``spec`` keeps out, as ``spec.contains`` judges them."""
        size = len(self.order)
        op, raw = spec.operator, spec.version
        if op == "===":
            found = self.spelled.get(raw.lower())
            return _without((0, size), found, found + 1) if found is not None else [(0, size)]
        wildcard = raw.endswith(".*")
        version = _parsed(raw.removesuffix(".*"))
        if not isinstance(version, Version):  # past the int-string limit: ask each probe
            return self._asked(spec, 0, size)
        if not wildcard and op in ("<=", ">=", "==", "!="):
            return self._compared(op, version, size)
        family = _family(version)
        first = bisect.bisect_left(self.families, family)
        last = bisect.bisect_right(self.families, family)
        epoch, release = family[0], version.release
        if op == "<":
            outside = [(last, size)]
        elif op == ">":
            outside = [(0, first)]
        else:  # ==V.*, !=V.*, ~=V: the families whose release starts with a prefix
            prefix = release if wildcard else release[:-1]
            low = bisect.bisect_left(self.families, (epoch, prefix))
            high = bisect.bisect_left(self.families, (epoch, _bumped(prefix)))
            if op == "~=":
                low = max(low, last)  # and at or above V: the families after its own
            admitted = (low, max(low, high))
            outside = [admitted] if op == "!=" else _without((0, size), *admitted)
        runs = [r for start, end in outside for r in _without((start, end), first, last)]
        return sorted(runs + self._asked(spec, first, last))

    def _compared(self, op: str, version: Version, size: int) -> _Runs:
        """Runs for <=, >=, == and != (no wildcard): plain comparisons of versions."""
        keys = self.order if version.local is not None or op == ">=" else self.public
        if op == ">=":
            return [(0, bisect.bisect_left(keys, version))]
        if op == "<=":
            return [(bisect.bisect_right(keys, version), size)]
        equal = (bisect.bisect_left(keys, version), bisect.bisect_right(keys, version))
        return [equal] if op == "!=" else _without((0, size), *equal)

    def _asked(self, spec: Specifier, start: int, end: int) -> _Runs:
        """Runs of the probes in [start, end) that ``spec`` keeps out, asked one by one."""
        runs: _Runs = []
        for position in range(start, end):
            if not spec.contains(self.order[position], prereleases=True):
                if runs and runs[-1][1] == position:
                    runs[-1] = (runs[-1][0], position + 1)
                else:
                    runs.append((position, position + 1))
        return runs


def _without(run: tuple[int, int], start: int, end: int) -> _Runs:
    """``run`` less [start, end), as at most two runs (empty ones dropped)."""
    low, high = run
    parts = [(low, min(high, start)), (max(low, end), high)]
    return [(a, b) for a, b in parts if a < b]


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
    # A verdict depends on the clauses alone: lines written alike (`<2` on many lines, a
    # generated file) are judged once. Keyed by the clauses' texts in order.
    judged: dict[tuple[str, ...], tuple[_Clauses, dict[str, Specifier], dict[str, bool]]] = {}
    for place, group in by_line.items():
        entry = entries.get(place)
        if entry is None or entry.requirement is None:
            continue
        specs = list(entry.requirement.specifier)
        if len(specs) < 2:
            continue  # a lone clause cannot be made redundant by others
        key = tuple(str(spec) for spec in specs)
        if key not in judged:
            by_text: dict[str, Specifier] = {}
            for spec in specs:
                by_text.setdefault(str(spec), spec)
            judged[key] = (_Clauses(specs), by_text, {})
        clauses, by_text, verdicts = judged[key]
        judged_specs = clauses.specs  # the objects judged on (identity counts below)
        # The clauses past the first few share one text (the first ones shown): written once.
        shown_after = (
            _others(judged_specs, judged_specs[_OTHERS_SHOWN])
            if len(judged_specs) > _OTHERS_SHOWN
            else ""
        )
        for exc in group:
            clause = by_text.get(exc.clause)
            if clause is None:
                continue
            if exc.clause not in verdicts:
                verdicts[exc.clause] = clauses.redundant(clause)
            if verdicts[exc.clause]:
                beside = (
                    shown_after
                    if shown_after
                    and all(clause is not s for s in judged_specs[: _OTHERS_SHOWN + 1])
                    else _others(judged_specs, clause)
                )
                emit.exclusion(
                    "redundant-exclusion",
                    exc,
                    f"{exc.package} {exc.clause} is already excluded by {beside}",
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


def _locks(
    emit: Emitter,
    sources: Sequence[Source],
    exclusions: Sequence[Exclusion],
    by_path: Mapping[str, Source],
    suppressions: Callable[[Source, int], frozenset[str]],
    elsewhere: Mapping[str, Mapping[str, str]],
) -> None:
    """``lock-stale`` and ``lock-holds-known-bad`` over every lock's pins.

    A pin is stale when the intent the lock resolves (its inputs) asks for the package with
    specifiers that keep the pinned version out; an intent line with a marker is left out
    (the lock may resolve another environment). A pin is known bad when an exclusion of the
    package anywhere in the audit names the version in its ``bad=``, or ``elsewhere`` (the
    store: every tracked repository's ``bad=`` and failed verifications) says so.
    """
    known_bad: dict[str, dict[Version, str]] = defaultdict(dict)
    for exc in exclusions:
        for text in exc.bad_versions:
            found = _parsed(text)
            if isinstance(found, Version):
                known_bad[exc.package].setdefault(found, f"bad= in {exc.source}:{exc.line}")
    for package, versions in elsewhere.items():
        for text, where in versions.items():
            found = _parsed(text)
            if isinstance(found, Version):
                known_bad[package].setdefault(found, where)
    for lock in sources:
        if lock.lock is None:
            continue
        intents = [by_path[path] for path in lock.lock.inputs if path in by_path]
        asked: dict[str, list[tuple[Source, int, Specifier]]] = defaultdict(list)
        for intent in intents:
            for entry in intent.entries:
                requirement = entry.requirement
                if requirement is None or entry.name is None or requirement.marker is not None:
                    continue
                asked[entry.name].extend(
                    (intent, entry.line, spec) for spec in requirement.specifier
                )
        regenerate = (
            f"Regenerate it with the command its header records: {line(lock.lock.command, 200)}"
            if lock.lock.command
            else RULES["lock-stale"].fix
        )
        for entry in lock.entries:
            requirement = entry.requirement
            if requirement is None or entry.name is None:
                continue
            pins = [spec for spec in requirement.specifier if spec.operator in ("==", "===")]
            if len(pins) != 1:
                continue
            pinned = _parsed(pins[0].version)
            suppress = suppressions(lock, entry.line)
            keeping_out = [
                (intent, at, spec)
                for intent, at, spec in asked.get(entry.name, ())
                if not _admits((spec,), pinned)
            ]
            if keeping_out:
                intent, at, spec = keeping_out[0]
                emit.emit(
                    "lock-stale",
                    lock.path,
                    entry.line,
                    f"{lock.path} pins {entry.name} {pins[0].version}, which its intent keeps "
                    f"out ({entry.name}{spec} in {intent.path}:{at})",
                    suppress,
                    package=entry.name,
                    column=entry.column,
                    hint=regenerate,
                )
            said = (
                known_bad.get(entry.name, {}).get(pinned) if isinstance(pinned, Version) else None
            )
            if said is not None:
                emit.emit(
                    "lock-holds-known-bad",
                    lock.path,
                    entry.line,
                    f"{lock.path} pins {entry.name} {pinned}, which is known bad "
                    f"({line(said, 200)}): `govern history {entry.name}` says why",
                    suppress,
                    package=entry.name,
                    column=entry.column,
                )


def evaluate(
    policy: Policy,
    sources: Sequence[Source],
    exclusions: Sequence[Exclusion],
    extra_problems: Iterable[tuple[str, Problem]] = (),
    *,
    today: date,
    suppressed: Mapping[tuple[str, int], frozenset[str]] | None = None,
    known_bad: Mapping[str, Mapping[str, str]] | None = None,
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
    _locks(emit, sources, exclusions, by_path, _line_suppressions, known_bad or {})
    return sorted(emit.findings, key=lambda f: (f.source, f.line, f.column or 0, f.rule, f.message))
