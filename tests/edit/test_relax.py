"""Relaxation: the CuPy case and its relatives, then the invariants by property.

The requirement lines of the CuPy and cuDNN-frontend cases are copied from the corpus
(vllm-project/vllm requirements/kv_connectors.txt at 00bc265e0e90, and the file after PR
#43530, reconstructed from the diff context quoted in PR #45843; PR #42599 for cuDNN).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement
from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

from govern.edit.relax import (
    STRATEGIES,
    Relaxation,
    RelaxationRefused,
    Strategy,
    line_diff,
    relax,
    rewrite_requirement,
)
from govern.exclusions.classify import classify
from govern.exclusions.model import Kind

V = Version


def after(relaxation: Relaxation) -> str:
    return ",".join(relaxation.after_clauses)


# -- the CuPy case ------------------------------------------------------------------

CUPY_CAPPED = "cupy-cuda13x < 14.1.0"  # after vllm #43530
CUPY_RELAXED = "cupy-cuda13x != 14.1.0"  # after vllm #44284


def test_cupy_cap_becomes_not_equal() -> None:
    r = relax(SpecifierSet("<14.1.0"), "<14.1.0", V("14.1.1"), [], published=[V("14.1.0")])
    assert r.after == SpecifierSet("!=14.1.0")
    assert (r.removed, r.added, r.strategy) == (("<14.1.0",), ("!=14.1.0",), "exclude")
    assert r.diff == "-<14.1.0\n+!=14.1.0"
    assert "14.1.0" in r.note
    assert "\n" not in r.note
    assert r.changed


def test_cupy_line_is_rewritten_as_vllm_44284_did() -> None:
    r = relax("< 14.1.0", "<14.1.0", "14.1.1", [], published=["14.1.0", "14.1.1"])
    assert r.rewrite(CUPY_CAPPED) == CUPY_RELAXED
    assert r.line_diff(CUPY_CAPPED) == f"-{CUPY_CAPPED}\n+{CUPY_RELAXED}"


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_cupy_never_becomes_renovates_cap(strategy: Strategy) -> None:
    """Renovate's ``<14.1.2`` lets 14.1.0 back in; no strategy of govern does that."""
    try:
        r = relax("<14.1.0", "<14.1.0", "14.1.1", [], strategy=strategy, published=["14.1.0"])
    except RelaxationRefused:
        assert strategy == "drop"
        return
    assert r.after != SpecifierSet("<14.1.2")
    assert not r.after.contains("14.1.0", prereleases=True)
    assert r.after.contains("14.1.1")


def test_cap_on_an_unpublished_version_is_simply_dropped() -> None:
    r = relax("<14.1.0", "<14.1.0", "14.2.0", [])
    assert r.after_clauses == ()
    assert r.rewrite(CUPY_CAPPED) == "cupy-cuda13x"


def test_known_bad_from_the_annotation_counts_without_the_index() -> None:
    r = relax("<14.1.0", "<14.1.0", "14.1.1", ["14.1.0"])
    assert after(r) == "!=14.1.0"


def test_floor_is_kept() -> None:
    r = relax(">=13.6,<14.1.0", "<14.1.0", "14.1.1", [], published=["14.1.0"])
    assert after(r) == ">=13.6,!=14.1.0"
    assert r.before_clauses == (">=13.6", "<14.1.0")


def test_order_of_other_clauses_is_kept() -> None:
    r = relax("!=13.0,<14.1.0,>=12", "<14.1.0", "14.2", ["14.1.0", "14.1.1"])
    assert after(r) == "!=13.0,!=14.1.0,!=14.1.1,>=12"


def test_bad_versions_still_kept_out_by_other_clauses_get_no_not_equal() -> None:
    r = relax("<14.1.0,!=14.1.0", "<14.1.0", "14.1.1", ["14.1.0"])
    assert after(r) == "!=14.1.0"
    assert r.added == ()


def test_inclusive_cap() -> None:
    r = relax("<=2.0", "<=2.0", "2.2", ["2.1"], published=["2.0", "2.1", "2.2"])
    assert after(r) == "!=2.1"


def test_compatible_release_keeps_its_floor() -> None:
    r = relax("~=1.4.2", "~=1.4.2", "1.5.1", ["1.5.0"])
    assert after(r) == ">=1.4.2,!=1.5.0"
    assert "~=1.4.2" in r.note


def test_compatible_release_floor_not_repeated_when_implied() -> None:
    r = relax(">=1.4.3,~=1.4.2", "~=1.4.2", "1.5.1", ["1.5.0"])
    assert after(r) == ">=1.4.3,!=1.5.0"


def test_compatible_release_cannot_admit_a_candidate_below_its_floor() -> None:
    with pytest.raises(RelaxationRefused, match=r"below what `~=1.4.2` allows"):
        relax("~=1.4.2", "~=1.4.2", "1.4.1", [])


def test_wildcard_cap() -> None:
    r = relax("==1.2.*", "==1.2.*", "1.3.1", ["1.3.0"])
    assert after(r) == ">=1.2,!=1.3.0"


def test_wildcard_cap_without_bad_versions() -> None:
    r = relax("==1.2.*,>=1.2.1", "==1.2.*", "1.3.1", [])
    assert after(r) == ">=1.2.1"


def test_pin_moves_to_the_candidate() -> None:
    r = relax("==1.2.0", "==1.2.0", "1.3.1", ["1.3.0"])
    assert after(r) == "==1.3.1"
    assert "moved" in r.note


def test_arbitrary_equality_pin_moves() -> None:
    assert after(relax("===1.2.0", "===1.2.0", "1.3.1", [])) == "===1.3.1"


def test_pre_release_pin_keeps_its_comment() -> None:
    line = "nixl == 1.5.0rc1.dev72182327 # do-not-merge: NIXL RC validation"
    r = relax("==1.5.0rc1.dev72182327", "==1.5.0rc1.dev72182327", "1.5.0rc2", [])
    assert r.rewrite(line) == "nixl == 1.5.0rc2 # do-not-merge: NIXL RC validation"


def test_not_equal_needs_no_change() -> None:
    r = relax("!=14.1.0", "!=14.1.0", "14.1.1", [], published=["14.1.0"])
    assert r.after == r.before == SpecifierSet("!=14.1.0")
    assert not r.changed
    assert (r.removed, r.added) == ((), ())
    assert "nothing to change" in r.note
    assert r.rewrite(CUPY_RELAXED) == CUPY_RELAXED


def test_not_equal_that_names_the_candidate_is_refused() -> None:
    with pytest.raises(RelaxationRefused, match=r"names 14\.1\.0 as bad"):
        relax("!=14.1.0", "!=14.1.0", "14.1.0", [])


def test_candidate_already_admitted_needs_no_change() -> None:
    r = relax("<14.1.0", "<14.1.0", "14.0.2", [])
    assert not r.changed
    assert "already" in r.note


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_known_bad_candidate_is_refused(strategy: Strategy) -> None:
    with pytest.raises(RelaxationRefused, match="known bad"):
        relax("<14.1.0", "<14.1.0", "14.1.0", [], strategy=strategy, published=["14.1.0"])


def test_bad_version_already_admitted_is_noted_not_touched() -> None:
    r = relax("<14.1.0", "<14.1.0", "14.1.1", ["13.0", "14.1.0"])
    assert after(r) == "!=14.1.0"
    assert "13.0 known bad but already admitted" in r.note


def test_pre_release_candidate_is_noted() -> None:
    r = relax("<14.1.0", "<14.1.0", "15.0rc1", ["14.1.0"])
    assert after(r) == "!=14.1.0"
    assert "--pre" in r.note


def test_local_variant_of_a_bad_release_cannot_be_admitted_by_a_cap_change() -> None:
    """``!=14.1.0`` also keeps 14.1.0+cu13 out; no PEP 440 clause separates them."""
    with pytest.raises(RelaxationRefused, match="local variant"):
        relax("<14.1.0", "<14.1.0", "14.1.0+cu13", [], published=["14.1.0"])


def test_ban_is_lifted_by_exclude_and_has_no_cap_to_raise() -> None:
    r = relax("==1000000000.0.0", "==1000000000.0.0", "3.0", ["2.0"])
    assert after(r) == "!=2.0"
    assert "ban" in r.note
    with pytest.raises(RelaxationRefused, match="ban"):
        relax("==1000000000.0.0", "==1000000000.0.0", "3.0", [], strategy="raise-cap")


# -- the other strategies -----------------------------------------------------------


def test_raise_cap_keeps_the_bad_release_out() -> None:
    r = relax(">=13.6,<14.1.0", "<14.1.0", "14.1.1", [], strategy="raise-cap", published=["14.1.0"])
    assert after(r) == ">=13.6,!=14.1.0,<14.1.2"
    assert not r.after.contains("14.1.0")


@pytest.mark.parametrize(
    ("spec", "candidate", "bad", "expected"),
    [
        ("<=2.0", "2.2", ["2.1"], "!=2.1,<=2.2"),
        ("~=1.4.2", "1.5.1", ["1.5.0"], ">=1.4.2,!=1.5.0,<1.5.2"),
        ("==1.2.*", "1.3.1", [], ">=1.2,<1.3.2"),
        ("==1.2.0", "1.3.1", ["1.3.0"], ">=1.2.0,!=1.3.0,<=1.3.1"),
        ("<2", "2.5", ["2.0", "3.0"], "!=2.0,<2.6"),
        ("<1!2.0", "1!2.0.1", [], "<1!2.0.2"),
    ],
)
def test_raise_cap_shapes(spec: str, candidate: str, bad: list[str], expected: str) -> None:
    assert after(relax(spec, spec, candidate, bad, strategy="raise-cap")) == expected


def test_drop_is_refused_when_a_bad_version_would_come_back() -> None:
    with pytest.raises(RelaxationRefused, match=r"14\.1\.0 back in; use exclude"):
        relax("<14.1.0", "<14.1.0", "14.1.1", [], strategy="drop", published=["14.1.0"])


def test_drop_without_bad_versions() -> None:
    r = relax(">=1.0,<=2.0", "<=2.0", "2.2", [], strategy="drop")
    assert after(r) == ">=1.0"
    r = relax("==1.2.0", "==1.2.0", "1.3.1", [], strategy="drop")
    assert after(r) == ""


def test_raise_floor_as_vllm_42599_did_but_keeps_the_reason() -> None:
    line = "nvidia-cudnn-frontend>=1.13.0,<1.19.0  # CI breaks on 1.19.0 (#36719)"
    r = relax(">=1.13.0,<1.19.0", "<1.19.0", "1.19.1", [], strategy="raise-floor")
    assert after(r) == ">=1.19.1"
    assert "reason" in r.note
    assert r.rewrite(line) == "nvidia-cudnn-frontend>=1.19.1  # CI breaks on 1.19.0 (#36719)"


def test_raise_floor_is_refused_when_a_bad_version_is_above_the_candidate() -> None:
    with pytest.raises(RelaxationRefused, match=r"1\.19\.3 back in"):
        relax("<1.19.0", "<1.19.0", "1.19.1", ["1.19.3"], strategy="raise-floor")


# -- errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("<2", "<2", "2.1", [], "loosen"), "unknown relaxation strategy 'loosen'"),
        (("<2", "<3", "2.1", [], "exclude"), r"clause `<3` is not in `<2`"),
        ((">=1,<2", ">=1", "2.1", [], "exclude"), "is a floor"),
        (("<2", "<2", "two", [], "exclude"), "invalid candidate 'two'"),
        (("<2", "<2", "2.1", ["x"], "exclude"), "invalid known-bad version"),
        (("<2,<2.1", "<2", "2.1", [], "exclude"), r"also kept out by `<2.1`"),
    ],
)
def test_refusals_are_one_line(args: tuple[str, str, str, list[str], str], message: str) -> None:
    spec, clause, candidate, bad, strategy = args
    with pytest.raises(RelaxationRefused, match=message) as info:
        relax(spec, clause, candidate, bad, strategy=strategy)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_clause_written_differently_is_found() -> None:
    r = relax(SpecifierSet("<14.1"), "< 14.1.0", V("14.1.1"), [V("14.1")])
    assert after(r) == "!=14.1"


# -- rewriting lines ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "spec", "expected"),
    [
        (
            'cupy-cuda13x < 14.1.0; platform_machine == "x86_64"',
            "!=14.1.0",
            'cupy-cuda13x != 14.1.0; platform_machine == "x86_64"',
        ),
        (
            'cupy-cuda13x<14.1.0 ; platform_machine == "x86_64"  # see cupy/cupy#9963\n',
            "!=14.1.0",
            'cupy-cuda13x!=14.1.0 ; platform_machine == "x86_64"  # see cupy/cupy#9963\n',
        ),
        ("foo[bar, baz] >= 1.0, < 2.0", ">=1.0,!=2.0", "foo[bar, baz] >= 1.0, != 2.0"),
        ("foo[bar]>=1.0,<2.0", ">=1.0,!=2.0,!=2.1", "foo[bar]>=1.0,!=2.0,!=2.1"),
        ("foo (>=1.0, <2.0)", ">=1.0,!=2.0", "foo (>=1.0, !=2.0)"),
        ("foo < 2.0", "!=2.0,<2.2", "foo != 2.0, < 2.2"),
        ("foo<2.0", "!=2.0,<2.2", "foo!=2.0,<2.2"),
        ("foo >=1.0,<2.0", ">=1.0", "foo >=1.0"),
        ('foo<2; python_version < "3.12"', "", 'foo; python_version < "3.12"'),
        ("foo (<2)  # why", "", "foo  # why"),
        ("  foo<2", "!=2", "  foo!=2"),
        ("foo", ">=1", "foo>=1"),
        ("foo<2#not-a-comment", "", None),
    ],
)
def test_rewrite_requirement(line: str, spec: str, expected: str | None) -> None:
    if expected is None:  # "#" without a space before it is not a comment: not a requirement
        with pytest.raises(RelaxationRefused, match="cannot rewrite"):
            rewrite_requirement(line, SpecifierSet(spec))
        return
    assert rewrite_requirement(line, SpecifierSet(spec)) == expected


def test_rewrite_refuses_urls() -> None:
    with pytest.raises(RelaxationRefused, match="URL"):
        rewrite_requirement("foo @ https://example.com/foo.whl", SpecifierSet("!=1"))


def test_line_diff() -> None:
    assert line_diff("foo<2\n", "foo!=2\n") == "-foo<2\n+foo!=2"


# -- properties ---------------------------------------------------------------------

_BASES = [f"{a}.{b}.{c}" for a in range(3) for b in range(3) for c in range(2)]
_VARIANTS = ["rc1", ".post1", ".dev0", "+l1"]
UNIVERSE = sorted({V(b) for b in _BASES} | {V(b + x) for b in _BASES for x in _VARIANTS})
_PUBLIC = [v for v in UNIVERSE if v.local is None]
_TWO = sorted({f"{a}.{b}" for a in range(3) for b in range(3)})
_PREFIXES = [str(a) for a in range(3)] + _TWO + _BASES

# One list per shape of exclusion: a target is drawn shape first, so each shape is tried
_SHAPES = [
    [f"<{v}" for v in _PUBLIC],
    [f"<={v}" for v in _PUBLIC],
    [f"~={v}" for v in [*_TWO, *_BASES, "1.1rc1"]],
    [f"=={p}.*" for p in _PREFIXES],
    [f"=={v}" for v in UNIVERSE],
    [f"==={b}" for b in _BASES],
    [f"!={v}" for v in UNIVERSE],
    [f"!={p}.*" for p in _PREFIXES],
    ["<0", "==1000000000.0.0"],
]
EXCLUSIONS = sorted({c for shape in _SHAPES for c in shape})
FLOORS = sorted({f">={v}" for v in _PUBLIC} | {f">{v}" for v in _PUBLIC})


@functools.cache
def _spec(clause: str) -> Specifier:
    return Specifier(clause)


@functools.cache
def _in(clause: str, version: Version) -> bool:
    return _spec(clause).contains(version, prereleases=True)


def admits(clauses: Sequence[str], version: Version) -> bool:
    return all(_in(c, version) for c in clauses)


@dataclass(frozen=True)
class Case:
    clauses: tuple[str, ...]  # as written
    target: str
    candidate: Version
    bad: tuple[Version, ...]
    published: tuple[Version, ...]

    @property
    def rest(self) -> tuple[str, ...]:
        return tuple(c for c in self.clauses if c != self.target)

    @property
    def kind(self) -> Kind:
        kinds = classify(_spec(self.target))
        assert kinds is not None
        return kinds[0]

    @property
    def bad_all(self) -> set[Version]:
        out = set(self.bad)
        op, version = _spec(self.target).operator, _spec(self.target).version
        if self.kind is Kind.CAP and op == "<" and V(version) in self.published:
            out.add(V(version))
        return out

    @property
    def bad_out(self) -> list[Version]:
        return [b for b in self.bad_all if not admits(self.clauses, b)]

    def low(self, *, pins: bool) -> Version | None:
        """The floor the clause holds besides its ceiling (pins only for raise-cap)."""
        spec = _spec(self.target)
        if spec.operator == "~=" or spec.version.endswith(".*"):
            return V(spec.version.removesuffix(".*"))
        if pins and self.kind is Kind.PIN:
            return V(V(spec.version).public)
        return None

    def floor_ok(self, version: Version, *, pins: bool = False) -> bool:
        low = self.low(pins=pins)
        return low is None or _in(f">={low}", version)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    target = draw(st.sampled_from(draw(st.sampled_from(_SHAPES))))
    others = draw(st.lists(st.sampled_from(EXCLUSIONS + FLOORS * 2), max_size=2))
    position = draw(st.integers(0, len(others)))
    clauses = [*others[:position], target, *others[position:]]
    clauses = list(dict.fromkeys(str(_spec(c)) for c in clauses))  # no duplicates
    bad = draw(st.lists(st.sampled_from(UNIVERSE), max_size=4, unique=True))
    out = [v for v in UNIVERSE if not _in(target, v) and v not in bad]
    if not out:  # a clause that admits the whole universe: relax a version it admits
        out = [v for v in UNIVERSE if v not in bad]
    rest = [c for c in clauses if c != target]
    inside = [v for v in out if admits(rest, v)]  # mostly a candidate only the target keeps out
    candidate = draw(st.sampled_from(draw(st.sampled_from([inside or out, inside or out, out]))))
    published = draw(st.sampled_from([(), tuple(UNIVERSE)]))
    return Case(tuple(clauses), target, candidate, tuple(bad), published)


def _next_release(c: Version) -> Version:
    release = (*c.release[:-1], c.release[-1] + 1)
    return V(f"{c.epoch}!" + ".".join(map(str, release)))


def _next_series(c: Version) -> Version:
    """The model's own: the series after c's (1.19.1 gives 1.20; 3 gives 4)."""
    if len(c.release) >= 2:
        return V(f"{c.epoch}!{c.release[0]}.{c.release[1] + 1}")
    return V(f"{c.epoch}!{c.release[0] + 1}")


def expected_refusal(case: Case, strategy: Strategy) -> bool:
    """Whether the strategy has no valid answer: an oracle built from the definitions."""
    c = case.candidate
    if c in case.bad_all:
        return True
    if admits(case.clauses, c):
        return False  # no change needed
    if not admits(case.rest, c) or case.kind is Kind.NOT_EQUAL:
        return True
    pin = case.kind is Kind.PIN
    ban_pin = case.kind is Kind.BAN and _spec(case.target).operator == "=="
    # a bad local-free release whose local variant is the candidate: no clause separates them
    clash = c.local is not None and V(c.public) in case.bad_out
    if strategy == "raise-floor":
        return any(admits(case.rest, b) and _in(f">={c.public}", b) for b in case.bad_out)
    if strategy == "exclude" and pin:
        return False
    if strategy == "drop":
        back = [b for b in case.bad_out if admits(case.rest, b)]
        if not pin:
            back = [b for b in back if case.floor_ok(b)]
        return bool(back) or not (pin or case.floor_ok(c))
    if strategy in ("raise-cap", "keep-ceiling"):
        if ban_pin or not case.floor_ok(c, pins=True):
            return True
        pinned = V(_spec(case.target).version) if pin else None
        if pinned is not None and pinned.local is not None and admits(case.clauses, pinned):
            public = V(pinned.public)  # !=public would drop the pinned local build too
            if public in case.bad_out and admits(case.rest, public):
                return True
        return clash and admits(case.rest, V(c.public)) and case.floor_ok(V(c.public), pins=True)
    # exclude
    return not case.floor_ok(c) or (clash and admits(case.rest, V(c.public)))


def check(case: Case, strategy: Strategy, r: Relaxation) -> None:
    """The invariants of DESIGN.md over the whole universe."""
    c = case.candidate
    before, now = case.clauses, r.after_clauses
    universe = sorted({*UNIVERSE, *case.bad, c})
    assert r.before == SpecifierSet(",".join(before))
    assert r.after == SpecifierSet(",".join(now))
    assert r.strategy == strategy
    assert set(now) == (set(before) - set(r.removed)) | set(r.added)
    assert "\n" not in r.note
    # 1. the candidate is in; 2. no bad version S kept out comes back
    assert admits(now, c)
    assert not [b for b in case.bad_out if admits(now, b)]
    if not r.changed:
        assert admits(before, c)
        return
    assert case.target in r.removed
    pin = case.kind is Kind.PIN
    # 4. the other clauses are untouched, in order (raise-floor replaces the floors)
    rest = [x for x in case.rest if not (strategy == "raise-floor" and x[0] == ">")]
    assert [x for x in now if x in rest] == rest
    # 3. what S admitted stays admitted, with the stated exceptions
    low = case.low(pins=False)
    for v in universe:
        if not admits(before, v) or admits(now, v):
            continue
        wildcard = _spec(case.target).version.endswith(".*")
        assert (
            (strategy == "exclude" and pin)
            or (strategy == "raise-floor" and v < c)
            or (wildcard and low is not None and v.is_prerelease and v < low)
        ), f"{v} lost"
    added_bad = {V(x[2:]) for x in r.added if x.startswith("!=")}
    assert added_bad <= set(case.bad_out)
    if strategy == "raise-floor":  # exactly the other clauses above the candidate
        for v in universe:
            assert admits(now, v) == (admits(case.rest, v) and _in(f">={c.public}", v))
    elif strategy == "exclude" and pin:  # the pin moved, nothing else
        for v in universe:
            moved = _in(f"{_spec(case.target).operator}{c}", v)
            excluded = any(_in(f"=={b}", v) for b in added_bad)
            assert admits(now, v) == (admits(case.rest, v) and moved and not excluded)
    elif strategy in ("raise-cap", "keep-ceiling"):  # nothing newer than the new cap comes in
        top = _next_release(c) if strategy == "raise-cap" else _next_series(c)
        assert all(v < top for v in universe if admits(now, v) and not admits(before, v))
    else:  # exclude, drop: the ceiling goes, the floor and the bad releases stay out
        if strategy == "drop":
            assert not added_bad
        for v in universe:
            floor = pin or case.floor_ok(v)
            excluded = any(_in(f"=={b}", v) for b in added_bad)
            assert admits(now, v) == (admits(case.rest, v) and floor and not excluded), v


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_relaxations_keep_the_invariants(case: Case) -> None:
    for strategy in STRATEGIES:
        r = attempt(case, strategy)
        if isinstance(r, str):
            assert expected_refusal(case, strategy), f"{strategy} refused: {r}"
            assert "\n" not in r
        else:
            assert not expected_refusal(case, strategy), f"{strategy} gave {r.after_clauses}"
            check(case, strategy, r)


def attempt(case: Case, strategy: Strategy, written: str | None = None) -> Relaxation | str:
    """The relaxation, or the refusal's message."""
    try:
        return relax(
            ",".join(case.clauses) if written is None else written,
            case.target,
            case.candidate,
            case.bad,
            strategy=strategy,
            published=case.published,
        )
    except RelaxationRefused as exc:
        return str(exc)


_SPACES = st.sampled_from(["", " "])


@settings(max_examples=100, deadline=None)
@given(
    cases(),
    st.sampled_from(["", "[cuda]", "[a, b]"]),
    _SPACES,
    _SPACES,
    st.sampled_from(["", ', ", "']),
    st.sampled_from(["", '; python_version >= "3.11"', ' ; sys_platform == "linux"']),
    st.sampled_from(["", "  # reason, see #123", " # x"]),
)
def test_rewrite_keeps_name_extras_marker_and_comment(
    case: Case, extras: str, gap: str, op_space: str, comma: str, marker: str, comment: str
) -> None:
    joiner = comma or ","
    written = joiner.join(f"{s.operator}{op_space}{s.version}" for s in map(_spec, case.clauses))
    line = f"pkg{extras}{gap}{written}{marker}{comment}"
    r = attempt(case, "exclude", written)
    if isinstance(r, str):
        return
    new = r.rewrite(line)
    assert new.endswith(comment)
    old_req, new_req = Requirement(line.split(" #")[0]), Requirement(new.split(" #")[0])
    assert (new_req.name, new_req.extras, new_req.marker) == (
        old_req.name,
        old_req.extras,
        old_req.marker,
    )
    assert new_req.specifier == r.after
    # the clauses as the line writes them, in the order the relaxation gives them
    assert [str(s) for s in map(_spec, _clauses_of(new, marker, comment))] == list(r.after_clauses)


def _clauses_of(line: str, marker: str, comment: str) -> list[str]:
    body = line.removesuffix(comment).removesuffix(marker)
    body = body.removeprefix("pkg").lstrip()
    if body.startswith("["):
        body = body[body.index("]") + 1 :]
    return [p for p in body.split(",") if p.strip()]


@pytest.mark.parametrize(
    ("specifiers", "clause", "candidate", "after"),
    [
        (">=1.13.0,<1.19.0", "<1.19.0", "1.19.1", ">=1.13.0,!=1.19.0,<1.20"),  # cuDNN's line
        ("<14.1.0", "<14.1.0", "14.1.1", "!=14.1.0,<14.2"),
        ("~=1.4.2", "~=1.4.2", "1.5.1", ">=1.4.2,<1.6"),
        ("<3", "<3", "3.1", "!=3,<3.2"),
    ],
)
def test_keep_ceiling_moves_the_cap_to_the_series_after_the_verified_release(
    specifiers: str, clause: str, candidate: str, after: str
) -> None:
    published = [clause.lstrip("<~=")]
    done = relax(specifiers, clause, candidate, [], strategy="keep-ceiling", published=published)
    assert ",".join(done.after_clauses) == after
    assert SpecifierSet(after).contains(Version(candidate))
