"""The fast path of ``parse_requirement`` builds exactly what packaging builds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement

from govern.sources.pep508 import _parse_simple, parse_requirement

DATA = Path(__file__).resolve().parent.parent / "data"


def _full(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _same(fast: Requirement, full: Requirement) -> None:
    assert fast.name == full.name
    assert fast.url == full.url
    assert fast.extras == full.extras
    assert str(fast.specifier) == str(full.specifier)
    assert [str(s) for s in fast.specifier] == [str(s) for s in full.specifier]
    assert str(fast.marker) == str(full.marker)
    assert (fast.marker is None) == (full.marker is None)
    assert str(fast) == str(full)
    assert fast == full
    assert hash(fast) == hash(full)


@pytest.mark.parametrize(
    "text",
    [
        "cupy-cuda13x<14.1.0",
        "cupy-cuda13x != 14.1.0",
        "a>=1.0,<2,!=1.5.*",
        "a >= 1.0 , < 2",
        "a[x,y]>=1",
        "a [ x , y ] >= 1 ; python_version < '3.12'",
        "a;python_version<'3'",
        "a ; extra == 'Foo_Bar'",
        "a==1.0+local",
        "A.b_c-D~=1.4.2",
        "numpy",
        "x<9999",
        "foo==1000000000.0.0",
    ],
)
def test_fast_path_matches_packaging(text: str) -> None:
    fast = _parse_simple(text)
    full = _full(text)
    assert fast is not None, "this shape should take the fast path"
    assert full is not None
    _same(fast, full)


@pytest.mark.parametrize(
    "text",
    [
        "a (>=1.0)",  # parentheses
        "a @ https://example.invalid/a.whl",  # a URL
        "a===foo",  # arbitrary equality
        "a_",  # a name packaging allows but the fast shape does not
        "a ;",  # an empty marker: packaging's error, with its caret
        "pkg=1.0",
        "a>=1.0 b>=2",
        "a>=1.0,",
        "a>=x.y.z",
        "a ; python_version <",
    ],
)
def test_other_shapes_go_through_packaging(text: str) -> None:
    assert _parse_simple(text) is None
    requirement, error = parse_requirement(text)
    full = _full(text)
    if full is None:
        assert requirement is None
        assert error is not None
    else:
        assert requirement is not None
        _same(requirement, full)


def _corpus_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(DATA.rglob("*")):
        if path.suffix not in {".txt", ".in"}:
            continue
        for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
            text = raw.split(" #", 1)[0].strip()
            if text and not text.startswith(("#", "-")):
                lines.append(text)
    return lines


def test_fast_path_agrees_on_every_corpus_line() -> None:
    lines = _corpus_lines()
    assert len(lines) > 500
    fast_count = 0
    for text in lines:
        fast = _parse_simple(text)
        full = _full(text)
        if fast is not None:
            fast_count += 1
            assert full is not None, text
            _same(fast, full)
    # The fast path is only worth having if real lines take it.
    assert fast_count > 0.9 * len(lines)


_PIECES = st.sampled_from(
    [
        "a", "B", "z9", "-", "_", ".", "0", "1", "14", "*", "+", "!", "post1", "rc1", "dev",
        "<", ">", "=", "~", ",", " ", "\t", "[", "]", "(", ")", ";", "@", "'", '"',
        "python_version", "extra", "sys_platform", " and ", " or ", "in", "not",
    ]
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_fast_path_never_disagrees_with_packaging(text: str) -> None:
    fast = _parse_simple(text)
    full = _full(text)
    if fast is not None:
        assert full is not None, f"fast path accepted what packaging rejects: {text!r}"
        _same(fast, full)


_VERSION = r"[0-9]{1,3}(\.[0-9]{1,3}){0,3}(\.\*|rc[0-9]|\.post[0-9])?"


@settings(max_examples=500, deadline=None)
@given(
    name=st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,6}[A-Za-z0-9])?", fullmatch=True),
    clauses=st.lists(
        st.tuples(
            st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "~="]),
            st.sampled_from([" ", ""]),
            st.from_regex(_VERSION, fullmatch=True),
        ),
        max_size=4,
    ),
    marker=st.sampled_from(
        [None, "python_version < '3.12'", " sys_platform == 'linux'", "extra == 'A.B'", ""]
    ),
)
def test_well_formed_lines_agree(
    name: str, clauses: list[tuple[str, str, str]], marker: str | None
) -> None:
    text = name + ",".join(op + space + version for op, space, version in clauses)
    if marker is not None:
        text += " ;" + marker
    fast = _parse_simple(text)
    full = _full(text)
    if fast is not None:
        assert full is not None, text
        _same(fast, full)
    elif full is not None:
        # Only clauses that SpecifierSet rejects may leave the fast path; packaging then
        # accepts them only if its own grammar does.
        requirement, _ = parse_requirement(text)
        assert requirement is not None
        _same(requirement, full)
