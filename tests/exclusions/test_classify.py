"""Kinds agree with packaging.specifiers on which versions a clause keeps out."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.specifiers import Specifier
from packaging.version import Version

from govern.exclusions.classify import ceiling, classify, keeps_out
from govern.exclusions.model import Kind, SubKind


@pytest.mark.parametrize(
    ("clause", "kind", "sub_kind"),
    [
        ("!=14.1.0", Kind.NOT_EQUAL, SubKind.EXACT),
        ("!=2.0.*", Kind.NOT_EQUAL, SubKind.WILDCARD),
        ("<14.1.0", Kind.CAP, SubKind.EXACT),
        ("<=3.6.0", Kind.CAP, SubKind.INCLUSIVE),
        ("~=2.2.3", Kind.CAP, SubKind.COMPATIBLE),
        ("==1.4.*", Kind.CAP, SubKind.WILDCARD),
        ("==2.13.0", Kind.PIN, SubKind.EXACT),
        ("===1.0-foo", Kind.PIN, SubKind.ARBITRARY),
        ("==1000000000.0.0", Kind.BAN, SubKind.IMPOSSIBLE),
        ("<0", Kind.BAN, SubKind.IMPOSSIBLE),
        ("<9999", Kind.CAP, SubKind.SENTINEL),
        ("<=999", Kind.CAP, SubKind.SENTINEL),
        ("<2026", Kind.CAP, SubKind.EXACT),  # a year cap is a real cap
        ("==20250516.0", Kind.PIN, SubKind.EXACT),  # CalVer pins are not bans
    ],
)
def test_classify(clause: str, kind: Kind, sub_kind: SubKind) -> None:
    assert classify(Specifier(clause)) == (kind, sub_kind)


@pytest.mark.parametrize("clause", [">=1.0", ">1.0"])
def test_floors_are_not_exclusions(clause: str) -> None:
    assert classify(Specifier(clause)) is None


@pytest.mark.parametrize(
    ("clause", "top"),
    [
        ("<14.1.0", "14.1.0"),
        ("<=2", "2"),
        ("~=2.2.3", "2.3"),
        ("~=2.2", "3"),
        ("==1.4.*", "1.5"),
        ("==2.13.0", "2.13.0"),
        (">=1", None),
        ("!=1", None),
    ],
)
def test_ceiling(clause: str, top: str | None) -> None:
    result = ceiling(Specifier(clause))
    assert (str(result) if result else None) == top


releases = st.lists(st.integers(min_value=0, max_value=12), min_size=1, max_size=4)
versions = st.builds(
    lambda rel, pre, post, dev: Version(
        ".".join(map(str, rel))
        + (f"{pre[0]}{pre[1]}" if pre else "")
        + (f".post{post}" if post is not None else "")
        + (f".dev{dev}" if dev is not None else "")
    ),
    releases,
    st.none() | st.tuples(st.sampled_from(["a", "b", "rc"]), st.integers(0, 3)),
    st.none() | st.integers(0, 2),
    st.none() | st.integers(0, 2),
)
operators = st.sampled_from(["!=", "<", "<=", "~=", "==", ">=", ">"])


@st.composite
def clauses(draw: st.DrawFn) -> Specifier:
    op = draw(operators)
    version = draw(st.builds(lambda r: ".".join(map(str, r)), releases))
    if op == "~=" and "." not in version:
        version += ".0"
    if op in ("==", "!=") and draw(st.booleans()):
        version += ".*"
    return Specifier(f"{op}{version}")


@settings(max_examples=400, deadline=None)
@given(clauses(), versions, versions)
def test_kinds_agree_with_packaging(spec: Specifier, v: Version, w: Version) -> None:
    """Each kind keeps out exactly the shape of version set its name promises."""
    kinds = classify(spec)
    out_v, out_w = keeps_out(spec, v), keeps_out(spec, w)
    assert out_v == (not spec.contains(v, prereleases=True))
    if kinds is None:
        # A floor keeps out a downward-closed set: nothing above an admitted version is out.
        if not out_v and v < w:
            assert not out_w
        return
    kind, sub_kind = kinds
    if kind is Kind.NOT_EQUAL and sub_kind is SubKind.EXACT:
        # Keeps out one version (PEP 440 equality), nothing else.
        if out_v and out_w:
            assert Specifier(f"=={v}").contains(w, prereleases=True)
    elif kind is Kind.NOT_EQUAL:
        # Keeps out one series: both out means both share the prefix.
        if out_v and out_w:
            prefix = spec.version.removesuffix(".*")
            assert Specifier(f"=={prefix}.*").contains(w, prereleases=True)
    elif kind is Kind.CAP:
        top = ceiling(spec)
        assert top is not None
        # Everything at or above the ceiling is out (a cap keeps the future out).
        if w > top or (w == top and spec.operator != "<="):
            assert out_w
    elif kind is Kind.PIN:
        # At most one version (up to PEP 440 equality) is admitted.
        assert out_v or out_w or Specifier(f"=={v}").contains(w, prereleases=True)
