"""Clause: an exclusion's clause validated and parsed once, with its known-bad versions."""

from __future__ import annotations

import re

import pytest
from packaging.specifiers import InvalidSpecifier, Specifier
from packaging.version import Version

from govern.exclusions.clause import Clause
from govern.exclusions.model import Annotation, Exclusion, Kind, SubKind


@pytest.mark.parametrize(
    ("text", "kind", "operator", "version"),
    [
        ("!=14.1.0", Kind.NOT_EQUAL, "!=", "14.1.0"),
        ("!=1.2.*", Kind.NOT_EQUAL, "!=", "1.2.*"),
        ("<14.1.0", Kind.CAP, "<", "14.1.0"),
        ("<=3.6.0", Kind.CAP, "<=", "3.6.0"),
        ("~=1.4.2", Kind.CAP, "~=", "1.4.2"),
        ("==1.2.*", Kind.CAP, "==", "1.2.*"),
        ("==2.13.0", Kind.PIN, "==", "2.13.0"),
        ("===foo", Kind.PIN, "===", "foo"),
        ("==1000000000.0.0", Kind.BAN, "==", "1000000000.0.0"),
        ("<0", Kind.BAN, "<", "0"),
    ],
)
def test_every_kind_and_excluding_operator_is_accepted(
    text: str, kind: Kind, operator: str, version: str
) -> None:
    clause = Clause.parse(text, str(kind))
    assert (clause.kind, clause.operator, clause.version, clause.known_bad) == (
        kind,
        operator,
        version,
        (),
    )
    assert clause.kind is kind
    assert clause.text == text
    assert clause == Clause(kind, operator, version)
    assert str(clause.spec) == text


@pytest.mark.parametrize(
    ("kind", "operator", "version", "message"),
    [
        ("floor", "<", "1.0", "unknown exclusion kind 'floor'"),
        ("cap", ">=", "1.0", "'>=' is not an excluding operator"),
        ("cap", "!=", "1.0", "!=1.0 cannot be a cap"),
        ("not-equal", "<", "1.0", "<1.0 cannot be a not-equal"),
        ("cap", "<", "not a version", "Invalid specifier: '<not a version'"),
    ],
)
def test_an_inconsistent_clause_is_a_value_error(
    kind: str, operator: str, version: str, message: str
) -> None:
    exact = f"^{re.escape(message)}$"
    with pytest.raises(ValueError, match=exact):
        Clause(kind, operator, version)  # type: ignore[arg-type]  # a kind as stored: text
    with pytest.raises(ValueError, match=exact):
        Clause.parse(f"{operator}{version}", kind)


def test_text_that_is_no_specifier_is_an_invalid_specifier() -> None:
    with pytest.raises(InvalidSpecifier) as raised:
        Clause.parse("not a clause", "cap")
    assert str(raised.value) == "Invalid specifier: 'not a clause'"


def test_parse_normalises_spacing() -> None:
    clause = Clause.parse(" < 14.1.0 ", Kind.CAP)
    assert clause.text == "<14.1.0"
    assert (clause.operator, clause.version) == ("<", "14.1.0")
    assert clause == Clause.parse("<14.1.0", "cap")


def test_known_bad_entries_that_are_not_pep_440_are_ignored() -> None:
    clause = Clause.parse("<2.0", "cap", known_bad=["2.0.0", "not a version", " 2.1.* "])
    assert clause.known_bad == ("2.0.0", "not a version", " 2.1.* ")
    assert [str(spec) for spec in clause.bad_specs] == ["==2.0.0", "==2.1.*"]
    assert clause.is_known_bad(Version("2.0.0"))
    assert clause.is_known_bad(Version("2.0.0+cu12"))  # a local version of a bad one
    assert clause.is_known_bad(Version("2.1.3"))
    assert not clause.is_known_bad(Version("2.0.1"))


def test_only_a_less_than_cap_names_its_version() -> None:
    assert Clause.parse("<14.1.0", "cap").is_named(Version("14.1.0"))
    assert Clause.parse("<14.1.0", "cap").is_named(Version("14.1.0+local"))
    assert not Clause.parse("<14.1.0", "cap").is_named(Version("14.1.1"))
    for text, kind in [("<=14.1.0", "cap"), ("!=14.1.0", "not-equal"), ("==14.1.0", "pin")]:
        clause = Clause.parse(text, kind)
        assert clause.named is None
        assert not clause.is_named(Version("14.1.0"))
    assert Clause.parse("===foo", "pin").named is None


@pytest.mark.parametrize(
    ("text", "kind", "version", "out", "beyond"),
    [
        ("<14.1.0", "cap", "14.1.0rc1", True, True),
        ("<14.1.0", "cap", "14.0.9", False, False),
        ("~=1.4.2", "cap", "1.4.1", False, False),  # the floor half of ~= is no exclusion
        ("~=1.4.2", "cap", "1.5", True, True),
        ("==1.2.*", "cap", "1.1", True, False),  # kept out, but below the series
        ("==2.0", "pin", "2.0.1", True, True),
        ("===foo", "pin", "2.0", True, False),  # nothing is above a version that is not PEP 440
        ("!=1.19.0", "not-equal", "1.19.0+cu12", True, False),
        ("!=1.19.0", "not-equal", "1.19.1", False, True),
        ("<0", "ban", "1.0", True, False),  # a ban has no candidate
    ],
)
def test_keeps_out_and_beyond(text: str, kind: str, version: str, out: bool, beyond: bool) -> None:
    clause = Clause.parse(text, kind)
    assert clause.keeps_out(Version(version)) is out
    assert clause.beyond(Version(version)) is beyond


def test_a_clause_is_parsed_once() -> None:
    clause = Clause(Kind.CAP, "<", "3.1.4", ("3.1.4",))
    spec = clause.spec
    assert clause.keeps_out(Version("3.1.4"))
    assert not clause.keeps_out(Version("3.1.3"))
    assert clause.spec is spec
    # Equal clauses share their parts; equal texts give the very same Clause.
    assert Clause(Kind.CAP, "<", "3.1.4", ("3.1.4",)).spec is spec
    assert Clause.parse("<3.1.4", "cap", known_bad=["3.1.4"]) is Clause.parse(
        "<3.1.4", Kind.CAP, known_bad=("3.1.4",)
    )
    assert isinstance(spec, Specifier)


def test_clauses_are_equal_and_hash_by_what_they_say() -> None:
    one = Clause.parse("<14.1.0", "cap", known_bad=("14.1.0",))
    other = Clause(Kind.CAP, "<", "14.1.0", ("14.1.0",))
    assert one == other
    assert {one: "found"}[other] == "found"
    assert one != Clause(Kind.CAP, "<", "14.1.0")
    assert repr(one) == (
        "Clause(kind=<Kind.CAP: 'cap'>, operator='<', version='14.1.0', known_bad=('14.1.0',))"
    )


def test_the_clause_of_an_exclusion_adds_known_bad_versions_once() -> None:
    exclusion = Exclusion(
        id="k",
        repository="r",
        source="requirements.txt",
        line=4,
        column=1,
        package="cupy-cuda13x",
        requirement="cupy-cuda13x<14.1.0",
        marker=None,
        clause="<14.1.0",
        operator="<",
        version="14.1.0",
        kind=Kind.CAP,
        sub_kind=SubKind.EXACT,
        group=None,
        annotation=Annotation(reason="CuPy 14.1.0 imports pytest"),
        bad_versions=("14.1.0",),
    )
    clause = Clause.of(exclusion, known_bad=("14.1.1", "14.1.0"))
    assert clause == Clause(Kind.CAP, "<", "14.1.0", ("14.1.0", "14.1.1"))
    assert clause.text == "<14.1.0"
    assert Clause.of(exclusion).known_bad == ("14.1.0",)
