"""The redundancy rule: the same answers as comparing every clause with every other, fast."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path

from auditrun import run_audit
from hypothesis import example, given, settings
from hypothesis import strategies as st
from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from govern.audit import AuditOptions, audit
from govern.config import Config
from govern.policy.engine import _Clauses, _probes_around
from govern.policy.loader import load_policy

_EDGES = (Version("0.dev0"), Version("999999"))
_UPPER = frozenset({"<", "<=", "==", "===", "~="})


def _oracle(clause: Specifier, others: list[Specifier]) -> bool:
    """The rule as it was written first: every clause against every other."""

    def admits(version: Version | str) -> bool:
        return all(o.contains(version, prereleases=True) for o in others)

    if not others:
        return False
    if clause.operator == "!=" and not clause.version.endswith(".*"):
        raw = clause.version
        if any(o.operator == "===" for o in others):
            return not admits(raw)
        try:
            return not admits(Version(raw))
        except InvalidVersion:
            return not admits(raw)
    if clause.operator in _UPPER and not any(o.operator in _UPPER for o in others):
        return False
    # A list, not a set: 0.0 and 0 are equal Versions, but ``===0`` admits only the one
    # spelled "0", so every spelling must be probed.
    probes = [*_EDGES]
    for spec in (clause, *others):
        probes.extend(_probes_around(spec.version))  # unchanged by the rewrite
    return not any(not clause.contains(v, prereleases=True) and admits(v) for v in probes)


_versions = st.builds(
    lambda epoch, release, pre, post, local: (
        (f"{epoch}!" if epoch else "") + ".".join(map(str, release)) + pre + post + local
    ),
    st.sampled_from([0, 0, 0, 1]),
    st.lists(st.integers(0, 3), min_size=1, max_size=3),
    st.sampled_from(["", "", "a1", "rc0", ".dev0"]),
    st.sampled_from(["", "", ".post1"]),
    st.sampled_from(["", "", "", "+local", "+1"]),
)


@st.composite
def _clauses(draw: st.DrawFn) -> str:
    operator = draw(st.sampled_from(["!=", "!=", "!=", "<", "<=", "==", ">=", ">", "~=", "==="]))
    version = draw(_versions)
    if operator in ("<", "<=", ">", ">=", "~=") and "+" in version:
        version = version.split("+")[0]  # packaging refuses a local here
    if operator == "~=" and "." not in version.split("!")[-1].split("a")[0]:
        version += ".0"
    if operator in ("!=", "==") and "+" not in version and draw(st.booleans()):
        version = version.split("a")[0].split("rc")[0].split(".dev")[0].split(".post")[0] + ".*"
    return f"{operator}{version}"


@settings(max_examples=400, deadline=None)
@given(st.lists(_clauses(), min_size=2, max_size=6))
@example(["<0.0", "===0"])  # "0" is admitted by ===0 and kept out by <0.0: not redundant
def test_the_rule_agrees_with_comparing_every_clause_with_every_other(texts: list[str]) -> None:
    try:
        specs = list(SpecifierSet(",".join(texts)))
    except ValueError:
        return  # a combination packaging refuses is no input to the rule
    clauses = _Clauses(specs)
    for clause in specs:
        others = [s for s in specs if s is not clause]
        assert clauses.redundant(clause) is _oracle(clause, others), (clause, others)


def test_eight_thousand_not_equal_clauses_are_judged_in_a_second(tmp_path: Path) -> None:
    clauses = ",".join(f"!=1.{i}" for i in range(8000))
    # Two of them are redundant: 1.7 is excluded twice (1.7 and 1.7.0), and <2 covers 3.0.
    (tmp_path / "requirements.txt").write_text(
        f"# reason\nfoo{clauses},!=1.7.0,!=3.0,<2\n", encoding="utf-8"
    )
    started = time.perf_counter()
    report = audit(
        [tmp_path / "requirements.txt"],
        config=Config(),
        policy=load_policy("default"),
        options=AuditOptions(today=date(2026, 12, 2)),
        cwd=tmp_path,
    )
    elapsed = time.perf_counter() - started
    redundant = sorted(
        f.message.split(" is ")[0] for f in report.findings if f.rule == "redundant-exclusion"
    )
    assert redundant == ["foo !=1.7", "foo !=1.7.0", "foo !=3.0"]
    message = next(
        f.message
        for f in report.findings
        if f.rule == "redundant-exclusion" and f.message.startswith("foo !=3.0 ")
    )
    assert message.endswith(",!=1.9 and 7,992 more")
    assert len(report.exclusions) == 8003
    assert elapsed < 3.0  # 29 s before: every clause against every other


def test_requirements_sharing_a_pyproject_line_are_judged_apart(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\n'
        'dependencies = ["aaa<5", "foo!=1.0", "bar>=2,!=1.0"]  # 1.0 and 5 broke us\n'
        "[project.optional-dependencies]\n"
        'a = ["baz<3"]\nb = ["baz<3", "foo!=1.0"]\n',
        encoding="utf-8",
    )
    report = run_audit([tmp_path], tmp_path)
    redundant = [f for f in report.findings if f.rule == "redundant-exclusion"]
    assert [(f.package, f.message.split(" is ")[0]) for f in redundant] == [("bar", "bar !=1.0")]
    ids = [e.id for e in report.exclusions]
    assert len(ids) == len(set(ids))  # the two extras' baz<3 are two exclusions
    assert all(
        e.annotation.reason == "1.0 and 5 broke us"
        for e in report.exclusions
        if e.group == "project.dependencies"
    )


# Versions from a few releases only, so that clauses share a release (a family: 1.0, 1.0a1,
# 1.0.post1, 1.0+local, 1!1.0 ...), where the rule asks probes one by one.
_crowded_versions = st.builds(
    lambda epoch, release, pre, post, dev, local: (
        (f"{epoch}!" if epoch else "") + ".".join(map(str, release)) + pre + post + dev + local
    ),
    st.sampled_from([0, 0, 0, 0, 1]),
    st.sampled_from([(1,), (1, 0), (1, 0, 0), (1, 1), (1, 0, 1), (2,), (0,), (0, 0)]),
    st.sampled_from(["", "", "", "a1", "b2", "rc1"]),
    st.sampled_from(["", "", "", ".post1", ".post2"]),
    st.sampled_from(["", "", "", ".dev0", ".dev3"]),
    st.sampled_from(["", "", "", "", "+local", "+1.2"]),
)


@st.composite
def _crowded_clauses(draw: st.DrawFn) -> str:
    operator = draw(st.sampled_from(["!=", "!=", "<", "<", "<=", "==", ">=", ">", "~=", "==="]))
    version = draw(_crowded_versions)
    if operator not in ("!=", "==", "===") and "+" in version:
        version = version.split("+")[0]  # packaging refuses a local here
    if operator == "~=" and "." not in version.split("!")[-1]:
        version = version.replace("1", "1.0", 1) if "1" in version else version + ".0"
    if operator in ("!=", "==") and draw(st.booleans()):
        version = version.split("+")[0].split("a")[0].split("b")[0].split("rc")[0]
        version = version.split(".post")[0].split(".dev")[0] + ".*"
    return f"{operator}{version}"


@settings(max_examples=1500, deadline=None)
@given(st.lists(_crowded_clauses(), min_size=2, max_size=14))
@example(["<1.0.post1", ">=1.0a1", "!=1.0"])  # <V.post keeps out V's pre-releases only
@example(["==1.0.0.*", "!=1.0rc1", "<2"])  # a wildcard's own release, probed one by one
@example(["~=1.0.0", "!=1.0+local", "===1.0"])
def test_the_sorted_judgement_agrees_on_clauses_that_share_a_release(texts: list[str]) -> None:
    """The runs found by sorting and by family (the way of long lines, forced here with
    ``small=0``) give the verdicts of asking every probe, as short lines are judged."""
    try:
        specs = list(SpecifierSet(",".join(texts)))
    except ValueError:
        return  # a combination packaging refuses is no input to the rule
    sorted_way, short_way = _Clauses(specs, small=0), _Clauses(specs)
    for clause in specs:
        others = [s for s in specs if s is not clause]
        expected = _oracle(clause, others)
        assert sorted_way.redundant(clause) is expected, (clause, others)
        assert short_way.redundant(clause) is expected, (clause, others)


def test_a_thousand_caps_on_one_line_are_judged_in_a_second(tmp_path: Path) -> None:
    # Each cap asked every probe, and each probe every other clause: 2,000 <V took 46 s.
    caps = ",".join(f"<1.{i}" for i in range(1_000))
    (tmp_path / "requirements.txt").write_text(f"# reason\nfoo{caps}\n", encoding="utf-8")
    started = time.perf_counter()
    report = run_audit([tmp_path / "requirements.txt"], tmp_path)
    elapsed = time.perf_counter() - started
    redundant = {
        f.message.split(" is ")[0] for f in report.findings if f.rule == "redundant-exclusion"
    }
    assert "foo <1.0" not in redundant  # the lowest cap is the one that counts
    assert len(redundant) == 999
    assert elapsed < 1.5
