"""Candidates per exclusion and runtime profile: walks, reasons, and the rules' helpers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.specifiers import Specifier
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from govern.exclusions.classify import classify
from govern.exclusions.clause import Clause
from govern.exclusions.model import Kind
from govern.index.candidates import (
    Decision,
    Horizon,
    Role,
    candidates,
    chosen,
    cut_short,
    keeps_out,
    nearest_published,
    needed,
    stale_since,
)
from govern.index.model import DistributionFile, FileKind, Release, releases
from govern.index.profiles import Profile

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
OLD = NOW - timedelta(days=60)

X86 = Profile(name="x86", python=Version("3.12"), platforms=("manylinux_2_28_x86_64",))
ARM = Profile(name="arm", python=Version("3.12"), platforms=("manylinux_2_28_aarch64",))

CP312_X86 = "cp312-cp312-manylinux2014_x86_64"
CP312_ARM = "cp312-cp312-manylinux2014_aarch64"


def wheel(
    version: str,
    tag: str = CP312_X86,
    *,
    project: str = "cupy-cuda13x",
    uploaded: datetime | None = OLD,
    yanked: str | None = None,
    requires_python: str | None = None,
) -> DistributionFile:
    """A wheel of ``project`` with the tags of its filename; ``yanked`` gives the reason."""
    filename = f"{project.replace('-', '_')}-{version}-{tag}.whl"
    _, parsed, _, wheel_tags = parse_wheel_filename(filename)
    return DistributionFile(
        filename=filename,
        url=f"https://files.example/{filename}",
        kind=FileKind.WHEEL,
        version=parsed,
        tags=frozenset(wheel_tags),
        requires_python=requires_python,
        yanked=yanked is not None,
        yanked_reason=yanked or None,
        upload_time=uploaded,
    )


def sdist(
    version: str, *, project: str = "cupy-cuda13x", uploaded: datetime | None = OLD
) -> DistributionFile:
    filename = f"{project.replace('-', '_')}-{version}.tar.gz"
    return DistributionFile(
        filename=filename,
        url=f"https://files.example/{filename}",
        kind=FileKind.SDIST,
        version=Version(version),
        upload_time=uploaded,
    )


def cupy() -> list[Release]:
    """cupy-cuda13x as the index shows it in the CuPy story."""
    return releases(
        [
            wheel("14.0.1"),
            wheel("14.0.1", CP312_ARM),
            wheel("14.1.0"),  # broken: imports pytest at runtime
            wheel("14.1.0", CP312_ARM),
            wheel("14.1.1"),
            wheel("14.1.1", CP312_ARM),
            wheel("14.1.2", yanked="broken build"),
            wheel("14.1.2", CP312_ARM, yanked="broken build"),
            wheel("14.1.3", CP312_ARM, uploaded=NOW - timedelta(days=2)),
        ]
    )


CAP = Clause.parse("<14.1.0", "cap", known_bad=("14.1.0",))
NOT_EQUAL = Clause.parse("!=14.1.0", "not-equal", known_bad=("14.1.0",))
OPEN = Clause.parse("<1.9", "cap")
"""A cap that every 2.0 release in these tests lies beyond."""


def walk(decisions: list[Decision]) -> list[tuple[str, str, str | None]]:
    return [(d.role, str(d.version), d.reason) for d in decisions]


# ----------------------------------------------------------------------------- the CuPy story


def test_cupy_cap_on_x86_walks_down_to_the_good_release() -> None:
    decisions = candidates(CAP, cupy(), X86, now=NOW)
    assert walk(decisions) == [
        ("newest", "14.1.3", "14.1.3 has no manylinux_2_28_x86_64 wheel"),
        ("newest", "14.1.2", "14.1.2 is yanked: broken build"),
        ("newest", "14.1.1", None),
    ]
    found = chosen(decisions, Role.NEWEST)
    assert found is not None
    assert found.version == Version("14.1.1")
    assert found.eligible
    assert found.release.version == Version("14.1.1")


def test_cupy_cap_on_aarch64_takes_the_newest() -> None:
    decisions = candidates(CAP, cupy(), ARM, now=NOW)
    assert walk(decisions) == [("newest", "14.1.3", None)]


def test_cupy_not_equal_has_a_first_and_a_newest() -> None:
    decisions = candidates(NOT_EQUAL, cupy(), X86, now=NOW)
    assert walk(decisions) == [
        ("first", "14.1.1", None),
        ("newest", "14.1.3", "14.1.3 has no manylinux_2_28_x86_64 wheel"),
        ("newest", "14.1.2", "14.1.2 is yanked: broken build"),
        ("newest", "14.1.1", None),
    ]
    first, newest = chosen(decisions, "first"), chosen(decisions, "newest")
    assert first is not None
    assert newest is not None
    assert first.version == newest.version == Version("14.1.1")


def test_the_capped_version_is_never_a_candidate() -> None:
    windows = Profile(python=Version("3.12"), platforms=("win_amd64",))
    bad = candidates(CAP, cupy(), windows, now=NOW)
    assert [d.eligible for d in bad] == [False] * 4
    assert bad[-1].reason == "14.1.0 is known bad"
    # Without bad=, the version a `<V` cap names stays out all the same (DESIGN.md).
    plain = Clause.parse("<14.1.0", "cap")
    named = candidates(plain, cupy(), windows, now=NOW)
    assert named[-1].reason == "14.1.0 is the excluded version (<14.1.0)"
    assert not any(
        d.version == Version("14.1.0") for d in candidates(NOT_EQUAL, cupy(), X86, now=NOW)
    )


def test_known_bad_versions_are_never_eligible() -> None:
    excluded = Clause.parse("<14.1.0", "cap", known_bad=("14.1.0", "14.1.1"))
    assert walk(candidates(excluded, cupy(), X86, now=NOW))[-2:] == [
        ("newest", "14.1.1", "14.1.1 is known bad"),
        ("newest", "14.1.0", "14.1.0 is known bad"),
    ]
    # A failed verification of 14.1.1 on x86 leaves nothing for the not-equal either.
    excluded = Clause.parse("!=14.1.0", "not-equal", known_bad=("14.1.0", "14.1.1"))
    assert walk(candidates(excluded, cupy(), X86, now=NOW)) == [
        ("first", "14.1.1", "14.1.1 is known bad"),
        ("first", "14.1.2", "14.1.2 is yanked: broken build"),
        ("first", "14.1.3", "14.1.3 has no manylinux_2_28_x86_64 wheel"),
    ]  # nothing eligible: the newest walk has nothing left to look at


def test_known_bad_covers_local_versions_and_wildcards() -> None:
    files = [wheel("2.0.0+cu12", "py3-none-any"), wheel("2.1.0", "py3-none-any")]
    excluded = Clause.parse("<2.0", "cap", known_bad=("2.0.0", "2.1.*", "not a version"))
    reasons = [d.reason for d in candidates(excluded, releases(files), X86, now=NOW)]
    assert reasons == ["2.1.0 is known bad", "2.0.0+cu12 is known bad"]


# ----------------------------------------------------------------------------- cooldown


def test_cooldown_skips_a_release_that_is_too_young() -> None:
    profile = Profile(
        python=Version("3.12"),
        platforms=("manylinux_2_28_aarch64",),
        minimum_release_age=timedelta(days=7),
    )
    assert walk(candidates(CAP, cupy(), profile, now=NOW)) == [
        ("newest", "14.1.3", "14.1.3 is 2 days old (cooldown 7 days)"),
        ("newest", "14.1.2", "14.1.2 is yanked: broken build"),
        ("newest", "14.1.1", None),
    ]
    # Nine days later the cooldown has passed.
    later = candidates(CAP, cupy(), profile, now=NOW + timedelta(days=5))
    assert walk(later) == [("newest", "14.1.3", None)]


@pytest.mark.parametrize(
    ("age", "cooldown", "text"),
    [
        (timedelta(hours=5), timedelta(days=1), "5 hours old (cooldown 1 day)"),
        (timedelta(minutes=30), timedelta(hours=36), "30 minutes old (cooldown 36 hours)"),
        (timedelta(seconds=10), timedelta(hours=1), "less than a minute old (cooldown 1 hour)"),
        (timedelta(days=-1), timedelta(days=3), "less than a minute old (cooldown 3 days)"),
    ],
)
def test_cooldown_reasons_read_well(age: timedelta, cooldown: timedelta, text: str) -> None:
    profile = Profile(python=Version("3.12"), platforms=("any",), minimum_release_age=cooldown)
    files = [wheel("2.0", "py3-none-any", uploaded=NOW - age)]
    [decision] = candidates(OPEN, releases(files), profile, now=NOW)
    assert decision.reason == f"2.0 is {text}"


def test_unknown_upload_time_needs_first_seen_under_a_cooldown() -> None:
    files = releases([wheel("2.0", "py3-none-any", uploaded=None)])
    excluded = Clause.parse("<1.9", "cap")
    cooled = Profile(python=Version("3.12"), minimum_release_age=timedelta(days=3))
    [unknown] = candidates(excluded, files, cooled, now=NOW)
    assert unknown.reason == "2.0 has no upload time (cooldown 3 days)"
    seen = {Version("2.0"): NOW - timedelta(days=4)}
    assert candidates(excluded, files, cooled, now=NOW, first_seen=seen)[0].eligible
    recent = {Version("2.0"): NOW - timedelta(days=1)}
    assert candidates(excluded, files, cooled, now=NOW, first_seen=recent)[0].reason == (
        "2.0 is 1 day old (cooldown 3 days)"
    )
    # Without a cooldown the upload time does not matter.
    assert candidates(excluded, files, Profile(python=Version("3.12")), now=NOW)[0].eligible


def test_naive_datetimes_are_utc() -> None:
    profile = Profile(python=Version("3.12"), minimum_release_age=timedelta(hours=2))
    files = releases([wheel("2.0", "py3-none-any", uploaded=datetime(2026, 3, 1, 11, 0))])
    [decision] = candidates(Clause.parse("<1.9", "cap"), files, profile, now=NOW)
    assert decision.reason == "2.0 is 1 hour old (cooldown 2 hours)"


# ----------------------------------------------------------------------------- requires-python


def test_requires_python_rules_out_a_release_for_the_profile() -> None:
    files = [
        wheel("14.1.1"),
        wheel("15.0", "cp313-cp313-manylinux2014_x86_64", requires_python=">=3.13"),
        wheel("15.0", "py3-none-any", requires_python=">=3.13"),
    ]
    decisions = candidates(CAP, releases(files), X86, now=NOW)
    assert walk(decisions) == [
        ("newest", "15.0", "15.0 requires Python >=3.13 (profile py3.12)"),
        ("newest", "14.1.1", None),
    ]
    py313 = Profile(python=Version("3.13"), platforms=("manylinux_2_28_x86_64",))
    assert walk(candidates(CAP, releases(files), py313, now=NOW)) == [("newest", "15.0", None)]


def test_a_file_without_a_matching_requires_python_does_not_count_but_another_does() -> None:
    files = [
        wheel("3.0", "py3-none-any", requires_python=">=3.13"),
        wheel("3.0", CP312_X86, requires_python=">=3.10"),
    ]
    assert candidates(Clause.parse("<2", "cap"), releases(files), X86, now=NOW)[0].eligible


def test_python_minor_means_its_zero_patch() -> None:
    files = releases([wheel("2.0", "py3-none-any", requires_python=">=3.12.1")])
    excluded = OPEN
    [decision] = candidates(excluded, files, X86, now=NOW)
    assert decision.reason == "2.0 requires Python >=3.12.1 (profile py3.12)"
    patched = Profile(python=Version("3.12.4"), platforms=X86.platforms)
    assert candidates(excluded, files, patched, now=NOW)[0].eligible
    assert X86.python_full() == Version("3.12.0")
    assert str(X86.python_full()) == "3.12.0"


def test_an_invalid_requires_python_makes_the_file_unusable_and_never_raises() -> None:
    files = releases([wheel("2.0", "py3-none-any", requires_python=">=3.6.*"), wheel("1.9")])
    decisions = candidates(Clause.parse("<1.8", "cap"), files, X86, now=NOW)
    assert walk(decisions) == [
        ("newest", "2.0", "2.0 has an invalid requires-python '>=3.6.*'"),
        ("newest", "1.9", None),
    ]


def test_an_empty_requires_python_admits_every_python() -> None:
    files = releases([wheel("2.0", "py3-none-any", requires_python=" ")])
    assert candidates(Clause.parse("<1.9", "cap"), files, X86, now=NOW)[0].eligible


# ----------------------------------------------------------------------------- pre-releases


def test_prereleases_are_skipped_with_one_summarising_decision() -> None:
    nightly = [wheel(f"15.0.dev{n}", "py3-none-any") for n in range(50)]
    files = [*nightly, wheel("14.2.0rc1", "py3-none-any"), wheel("14.1.1", "py3-none-any")]
    decisions = candidates(CAP, releases(files), X86, now=NOW)
    assert walk(decisions) == [
        ("newest", "15.0.dev49", "15.0.dev49 is a pre-release (and 50 more pre-releases)"),
        ("newest", "14.1.1", None),
    ]


def test_one_prerelease_is_recorded_without_a_count() -> None:
    files = releases([wheel("14.2.0rc1", "py3-none-any")])
    assert walk(candidates(CAP, files, X86, now=NOW)) == [
        ("newest", "14.2.0rc1", "14.2.0rc1 is a pre-release")
    ]


def test_prereleases_count_when_the_profile_allows_them() -> None:
    profile = Profile(python=Version("3.12"), platforms=("any",), allow_prereleases=True)
    files = releases([wheel("14.2.0rc1", "py3-none-any"), wheel("14.1.1", "py3-none-any")])
    assert walk(candidates(CAP, files, profile, now=NOW)) == [("newest", "14.2.0rc1", None)]


def test_a_prerelease_of_the_capped_version_is_beyond_the_cap() -> None:
    assert CAP.beyond(Version("14.1.0rc1"))  # `<14.1.0` keeps 14.1.0rc1 out
    assert not CAP.beyond(Version("14.0.9"))


# ----------------------------------------------------------------------------- files and tags


def test_an_sdist_counts_only_when_the_profile_allows_it() -> None:
    files = releases([sdist("2.0"), wheel("2.0", CP312_ARM)])
    excluded = OPEN
    [no] = candidates(excluded, files, X86, now=NOW)
    assert no.reason == "2.0 has no manylinux_2_28_x86_64 wheel (sdists not allowed)"
    allowing = Profile(python=Version("3.12"), platforms=X86.platforms, allow_sdist=True)
    [yes] = candidates(excluded, files, allowing, now=NOW)
    assert yes.eligible
    assert yes.reason is None
    assert yes.note == "sdist only: no cp312 manylinux_2_28_x86_64 wheel"
    wheels_only = releases([wheel("2.0", CP312_ARM)])
    [neither] = candidates(excluded, wheels_only, allowing, now=NOW)
    assert neither.reason == "2.0 has no manylinux_2_28_x86_64 wheel and no sdist"


def test_a_wheel_for_another_python_is_named_as_such() -> None:
    files = releases([wheel("2.0", "cp313-cp313-manylinux2014_x86_64")])
    [decision] = candidates(OPEN, files, X86, now=NOW)
    assert decision.reason == "2.0 has no wheel for cp312 on manylinux_2_28_x86_64"


@pytest.mark.parametrize(
    "tag",
    [
        "py3-none-any",
        "cp38-abi3-manylinux_2_17_x86_64",
        "cp312-cp312-manylinux_2_28_x86_64",
        "cp312-cp312-manylinux1_x86_64",
        "py2.py3-none-manylinux2010_x86_64",
        "cp312-cp312-linux_x86_64",
    ],
)
def test_wheels_an_x86_manylinux_2_28_system_installs(tag: str) -> None:
    files = releases([wheel("2.0", tag)])
    assert candidates(OPEN, files, X86, now=NOW)[0].eligible


@pytest.mark.parametrize(
    "tag",
    [
        "cp312-cp312-manylinux_2_29_x86_64",  # needs a newer glibc
        "cp312-cp312-musllinux_1_2_x86_64",
        "cp312-cp312-win_amd64",
        "cp313-abi3-manylinux2014_x86_64",  # abi3 from a newer Python
        "py2-none-any",
    ],
)
def test_wheels_an_x86_manylinux_2_28_system_does_not_install(tag: str) -> None:
    files = releases([wheel("2.0", tag)])
    assert not candidates(OPEN, files, X86, now=NOW)[0].eligible


def test_a_partly_yanked_release_is_judged_by_the_files_the_profile_uses() -> None:
    files = releases([wheel("2.0", yanked="bad x86 build"), wheel("2.0", CP312_ARM)])
    excluded = OPEN
    [x86] = candidates(excluded, files, X86, now=NOW)
    assert x86.reason == "2.0's manylinux_2_28_x86_64 files are yanked: bad x86 build"
    assert candidates(excluded, files, ARM, now=NOW)[0].eligible


def test_a_yank_without_a_reason_and_a_release_without_files() -> None:
    excluded = OPEN
    yanked = releases([wheel("2.0", "py3-none-any", yanked="")])
    assert candidates(excluded, yanked, X86, now=NOW)[0].reason == "2.0 is yanked"
    empty = [Release(Version("2.0"), ())]
    assert candidates(excluded, empty, X86, now=NOW)[0].reason == "2.0 has no files"


def test_releases_in_any_order_and_equal_versions_once() -> None:
    shuffled = list(reversed(cupy()))
    assert walk(candidates(CAP, shuffled, X86, now=NOW)) == walk(
        candidates(CAP, cupy(), X86, now=NOW)
    )
    twice = [*cupy(), *cupy()]
    assert len(candidates(CAP, twice, X86, now=NOW)) == 3


# ----------------------------------------------------------------------------- clause shapes


def versions(*texts: str) -> list[Release]:
    return releases(wheel(text, "py3-none-any", project="demo") for text in texts)


def looked_at(excluded: Clause, published: list[Release], profile: Profile = X86) -> list[str]:
    return [str(d.version) for d in candidates(excluded, published, profile, now=NOW)]


NOTHING = Profile(python=Version("3.12"), minimum_release_age=timedelta(days=365))
"""A profile no release is old enough for: its walks look at everything beyond the bound."""


@pytest.mark.parametrize(
    ("operator", "version", "beyond"),
    [
        ("<", "2.0", ["2.1.0", "2.0.1", "2.0.0"]),
        ("<=", "2.0", ["2.1.0", "2.0.1"]),
        ("~=", "1.4.2", ["2.1.0", "2.0.1", "2.0.0", "1.5.0"]),
        ("~=", "1.4", ["2.1.0", "2.0.1", "2.0.0"]),
        ("==", "1.4.*", ["2.1.0", "2.0.1", "2.0.0", "1.5.0"]),
        ("==", "1.4.2", ["2.1.0", "2.0.1", "2.0.0", "1.5.0", "1.4.9"]),
        ("===", "1.4.2", ["2.1.0", "2.0.1", "2.0.0", "1.5.0", "1.4.9"]),
        ("===", "1.4.2-custom", []),  # not PEP 440: nothing is above it
        ("<", "9999", []),  # a sentinel: nothing beyond it is published
    ],
)
def test_which_releases_are_beyond_the_bound(
    operator: str, version: str, beyond: list[str]
) -> None:
    published = versions("1.3.0", "1.4.1", "1.4.2", "1.4.9", "1.5.0", "2.0.0", "2.0.1", "2.1.0")
    kind = "pin" if operator == "===" or (operator == "==" and "*" not in version) else "cap"
    excluded = Clause.parse(f"{operator}{version}", kind)
    assert looked_at(excluded, published, NOTHING) == beyond
    newest = candidates(excluded, published, X86, now=NOW)
    assert [str(d.version) for d in newest if d.eligible] == beyond[:1]


def test_pins_walk_from_the_newest_release_after_the_pin() -> None:
    pin = Clause.parse("==2.13.0", "pin")
    published = versions("2.12.0", "2.13.0", "2.13.0.post1", "2.14.0", "2.15.0rc1")
    assert walk(candidates(pin, published, X86, now=NOW)) == [
        ("newest", "2.15.0rc1", "2.15.0rc1 is a pre-release"),
        ("newest", "2.14.0", None),
    ]
    assert looked_at(pin, published, NOTHING) == ["2.15.0rc1", "2.14.0", "2.13.0.post1"]


def test_an_inclusive_cap_lets_its_own_version_in() -> None:
    cap = Clause.parse("<=3.6.0", "cap")
    published = versions("3.5.0", "3.6.0", "3.6.0.post1")
    assert walk(candidates(cap, published, X86, now=NOW)) == [("newest", "3.6.0.post1", None)]


def test_bans_have_no_candidates() -> None:
    published = versions("1.0", "2.0", "1000000000.0.0")
    assert candidates(Clause.parse("==1000000000.0.0", "ban"), published, X86, now=NOW) == []
    assert candidates(Clause.parse("<0", "ban"), published, X86, now=NOW) == []


def test_a_sentinel_cap_usually_has_none() -> None:
    sentinel = Clause.parse("<9999", "cap")
    assert candidates(sentinel, versions("1.0", "2.0"), X86, now=NOW) == []


def test_a_wildcard_not_equal_starts_after_the_series() -> None:
    excluded = Clause.parse("!=1.2.*", "not-equal")
    published = versions("1.1.0", "1.2.0", "1.2.5", "1.3.0", "1.4.0")
    assert walk(candidates(excluded, published, X86, now=NOW)) == [
        ("first", "1.3.0", None),
        ("newest", "1.4.0", None),
    ]


def test_a_not_equal_skips_local_variants_of_the_excluded_version() -> None:
    excluded = Clause.parse("!=1.19.0", "not-equal")
    published = versions("1.18.0", "1.19.0", "1.19.0+cu12", "1.19.1")
    assert looked_at(excluded, published) == ["1.19.1", "1.19.1"]


@pytest.mark.parametrize(
    ("clause", "version", "out"),
    [
        ("<14.1.0", "14.1.0", True),
        ("<14.1.0", "14.1.0rc1", True),
        ("<14.1.0", "14.0.9", False),
        ("<=3.6", "3.6.0", False),
        ("<=3.6", "3.6.0.post1", True),
        ("~=1.4.2", "1.5", True),
        ("~=1.4.2", "1.4.9", False),
        ("~=1.4.2", "1.4.1", False),  # the floor half of ~= is no exclusion
        ("==1.2.*", "1.3", True),
        ("==1.2.*", "1.1", True),
        ("==2.0", "1.0", True),  # a pin keeps out everything but its version
        ("==2.0", "2.0.0", False),
        ("===1.0", "1.0.0", True),
        ("!=1.0", "1.0", True),
        ("!=1.0", "1.1", False),
    ],
)
def test_keeps_out(clause: str, version: str, out: bool) -> None:
    spec = Specifier(clause)
    kinds = classify(spec)
    assert kinds is not None
    excluded = Clause(kinds[0], spec.operator, spec.version)
    assert keeps_out(excluded, Version(version)) is out


# ----------------------------------------------------------------------------- rule helpers


@pytest.mark.parametrize(
    ("version", "published", "nearest"),
    [
        ("14.10", ["14.0.1", "14.1.0", "14.1.1"], "14.1.0"),
        ("2.31.5", ["2.31.4", "2.31.6", "2.30.9"], "2.31.4"),
        ("2.0.0", ["1.9.9", "2.1.0", "3.0"], "2.1.0"),
        ("14.1.0", ["14.1.0rc1", "14.1.0.post1"], "14.1.0.post1"),
        ("1!1.0", ["1.0", "1!2.0"], "1!2.0"),
        ("1.0", ["1.0.0", "1.1"], "1.0.0"),  # published already: itself
        ("1.2.*", ["1.1", "1.2.3", "1.2.1"], "1.2.1"),
        ("1.3.*", ["1.2.0", "1.4.0"], "1.2.0"),
        ("1.19.O", ["1.19.0"], None),
        ("1.0", [], None),
    ],
)
def test_nearest_published(version: str, published: list[str], nearest: str | None) -> None:
    found = nearest_published(version, [Version(v) for v in published])
    assert (str(found) if found else None) == nearest


def test_stale_since_counts_from_the_first_release_that_is_not_the_bad_one() -> None:
    fix = datetime(2026, 2, 10, tzinfo=UTC)
    files = [
        wheel("14.0.1", uploaded=datetime(2025, 12, 1, tzinfo=UTC)),
        wheel("14.1.0", uploaded=datetime(2026, 1, 20, tzinfo=UTC)),
        wheel("14.1.1rc1", uploaded=datetime(2026, 2, 1, tzinfo=UTC)),
        wheel("14.1.2", uploaded=datetime(2026, 2, 5, tzinfo=UTC), yanked="broken build"),
        wheel("14.1.1", uploaded=fix),
        wheel("14.1.3", uploaded=datetime(2026, 2, 20, tzinfo=UTC)),
    ]
    assert stale_since(CAP, releases(files)) == fix
    assert stale_since(Clause.parse("<14.1.0", "cap"), releases(files)) == fix
    assert stale_since(NOT_EQUAL, releases(files)) is None
    assert stale_since(Clause.parse("<99", "cap"), releases(files)) is None
    numpy = releases([wheel("2.0.0", "py3-none-any", uploaded=None)])
    seen = {Version("2.0.0"): datetime(2024, 6, 20)}
    assert stale_since(Clause.parse("<1.27", "cap"), numpy) is None
    assert stale_since(Clause.parse("<1.27", "cap"), numpy, first_seen=seen) == datetime(
        2024, 6, 20, tzinfo=UTC
    )


# ----------------------------------------------------------------------------- properties

PROFILE = Profile(
    name="prop",
    python=Version("3.12"),
    platforms=("manylinux_2_28_x86_64",),
    minimum_release_age=timedelta(days=7),
)
_TAGS = {"x86": CP312_X86, "arm": CP312_ARM, "any": "py3-none-any"}


@dataclass(frozen=True)
class Shape:
    """What a generated release is like, for the oracle."""

    yanked: bool
    platform: str  # x86, arm, any or sdist
    age_days: int
    requires_python: str | None


_versions = st.builds(
    lambda major, minor, patch, suffix: f"{major}.{minor}.{patch}{suffix}",
    st.integers(0, 2),
    st.integers(0, 3),
    st.integers(0, 2),
    st.sampled_from(["", "", "", "rc1", ".dev0", ".post1"]),
)
_shapes = st.builds(
    Shape,
    st.booleans(),
    st.sampled_from(["x86", "x86", "arm", "any", "sdist"]),
    st.integers(0, 14),
    st.sampled_from([None, None, ">=3.13", ">=3.8"]),
)


def _clauses(published: list[str]) -> st.SearchStrategy[str]:
    """Clauses on a published version half the time (so ``<V`` names a real release)."""
    version = st.one_of(st.sampled_from(published), _versions) if published else _versions
    return st.one_of(
        st.builds(
            lambda op, v: f"{op}{v}", st.sampled_from(["<", "<=", "~=", "==", "===", "!="]), version
        ),
        st.builds(
            lambda op, a, b: f"{op}{a}.{b}.*",
            st.sampled_from(["==", "!="]),
            st.integers(0, 2),
            st.integers(0, 3),
        ),
    )


def _build(shapes: dict[str, Shape]) -> list[Release]:
    files = []
    for text, shape in shapes.items():
        uploaded = NOW - timedelta(days=shape.age_days, hours=1)
        reason = "bad" if shape.yanked else None
        if shape.platform == "sdist":
            files.append(sdist(text, project="demo", uploaded=uploaded))
            continue
        files.append(
            wheel(
                text,
                _TAGS[shape.platform],
                project="demo",
                uploaded=uploaded,
                yanked=reason,
                requires_python=shape.requires_python,
            )
        )
    return releases(files)


def _beyond(spec: Specifier, kind: str, v: Version) -> bool:
    """The bound, written out again from the module docstring."""
    base = Version(spec.version.removesuffix(".*"))
    contained = spec.contains(v, prereleases=True)
    if kind == "not-equal":
        return contained and v > base
    if kind == "ban":
        return False
    if spec.operator in ("<", "<="):
        return not contained
    if spec.operator == "~=" or spec.version.endswith(".*"):
        return not contained and v >= base
    return not contained and v > base


def _eligible(
    spec: Specifier, kind: str, bad: set[Version], v: Version, shape: Shape, profile: Profile
) -> bool:
    named = spec.operator == "<" and Specifier(f"=={spec.version}").contains(v, prereleases=True)
    installable = shape.platform in ("x86", "any") or (
        shape.platform == "sdist" and profile.allow_sdist
    )
    return (
        _beyond(spec, kind, v)
        and (profile.allow_prereleases or not v.is_prerelease)
        and not any(Specifier(f"=={b}").contains(v, prereleases=True) for b in bad)
        and not named
        and not (shape.yanked and shape.platform != "sdist")
        and installable
        and (shape.platform == "sdist" or shape.requires_python != ">=3.13")
        and shape.age_days >= 7
    )


@settings(max_examples=200, deadline=None)
@given(
    shapes=st.dictionaries(_versions, _shapes, max_size=12),
    data=st.data(),
    bad_picks=st.lists(st.integers(0, 11), max_size=3),
    allow_prereleases=st.booleans(),
    allow_sdist=st.booleans(),
)
def test_candidates_agree_with_the_oracle(
    shapes: dict[str, Shape],
    data: st.DataObject,
    bad_picks: list[int],
    allow_prereleases: bool,
    allow_sdist: bool,
) -> None:
    texts = sorted(shapes, key=Version)
    spec = Specifier(data.draw(_clauses(texts), label="clause"))
    kinds = classify(spec)
    assert kinds is not None
    kind = str(kinds[0])
    bad = {Version(texts[i]) for i in bad_picks if i < len(texts)}
    excluded = Clause(Kind(kind), spec.operator, spec.version, tuple(str(b) for b in bad))
    profile = Profile(
        name="prop",
        python=Version("3.12"),
        platforms=PROFILE.platforms,
        minimum_release_age=PROFILE.minimum_release_age,
        allow_prereleases=allow_prereleases,
        allow_sdist=allow_sdist,
    )
    published = _build(shapes)
    decisions = candidates(excluded, published, profile, now=NOW)
    by_version = {Version(text): shape for text, shape in shapes.items()}
    oracle = sorted(
        v for v, shape in by_version.items() if _eligible(spec, kind, bad, v, shape, profile)
    )

    if kind == "ban":
        assert decisions == []
        return
    for decision in decisions:
        assert _beyond(spec, kind, decision.version)
        assert decision.eligible == (decision.reason is None)
        if decision.eligible:
            assert decision.version in oracle
            assert decision.version not in bad
            assert not decision.release.yanked
            if kind == "not-equal":
                assert spec.contains(decision.version, prereleases=True)
            else:
                assert keeps_out(excluded, decision.version)
    roles = [Role.NEWEST] if kind != "not-equal" else [Role.FIRST, Role.NEWEST]
    for role in roles:
        walked = [d.version for d in decisions if d.role == role]
        assert len(walked) == len(set(walked))
        assert sum(d.eligible for d in decisions if d.role == role) <= 1
    newest = chosen(decisions, Role.NEWEST)
    if kind == "not-equal":
        first = chosen(decisions, Role.FIRST)
        assert (first.version if first else None) == (oracle[0] if oracle else None)
        # The newest walk is left out only when nothing is eligible.
    assert (newest.version if newest else None) == (oracle[-1] if oracle else None)
    if kind != "not-equal" and newest is not None:
        # Everything newer than the candidate was looked at (pre-releases summarised).
        newer = [
            v
            for v in by_version
            if v > newest.version
            and _beyond(spec, kind, v)
            and (allow_prereleases or not v.is_prerelease)
        ]
        assert set(newer) <= {d.version for d in decisions}


@settings(max_examples=100, deadline=None)
@given(version=_versions, published=st.lists(_versions, max_size=8))
def test_nearest_is_published_and_exact_when_published(version: str, published: list[str]) -> None:
    found = nearest_published(version, [Version(p) for p in published])
    if not published:
        assert found is None
        return
    assert found is not None
    assert found in {Version(p) for p in published}
    if Version(version) in {Version(p) for p in published}:
        assert found == Version(version)


# ----------------------------------------------------------------------------- cached per profile

NO_X86 = "2.0 has no manylinux_2_28_x86_64 wheel"


def test_profiles_judged_in_turn_keep_their_own_verdicts() -> None:
    # Tags, platforms and the padded Python are cached per (implementation, Python,
    # platforms): profiles judged one after the other on the same releases must each get
    # their own verdicts and reasons, whatever was judged before.
    found = releases([wheel("2.0", CP312_ARM), wheel("2.1", CP312_X86, requires_python=">=3.12.1")])
    x86_patch = Profile(name="x86-3.12.4", python=Version("3.12.4"), platforms=X86.platforms)
    x86_313 = Profile(name="x86-3.13", python=Version("3.13"), platforms=X86.platforms)
    expected = {
        X86: [("2.1", "2.1 requires Python >=3.12.1 (profile py3.12)"), ("2.0", NO_X86)],
        ARM: [("2.1", "2.1 has no manylinux_2_28_aarch64 wheel"), ("2.0", None)],
        x86_patch: [("2.1", None)],
        x86_313: [("2.1", "2.1 has no wheel for cp313 on manylinux_2_28_x86_64"), ("2.0", NO_X86)],
    }
    for _ in range(2):
        for profile, decisions in expected.items():
            got = candidates(OPEN, found, profile, now=NOW)
            assert [(str(d.version), d.reason) for d in got] == decisions, profile.name


def test_padded_pythons_of_two_profiles_are_not_mixed_up() -> None:
    found = releases([wheel("2.0", "py3-none-any", requires_python=">=3.13")])
    py312 = Profile(name="3.12", python=Version("3.12"), platforms=X86.platforms)
    py313 = Profile(name="3.13", markers={"python_version": "3.13"}, platforms=X86.platforms)
    for _ in range(2):
        [old] = candidates(OPEN, found, py312, now=NOW)
        assert old.reason == "2.0 requires Python >=3.13 (profile py3.12)"
        assert candidates(OPEN, found, py313, now=NOW)[0].eligible


@pytest.mark.parametrize(
    ("profile", "full"),
    [
        (Profile(python=Version("3.12")), "3.12.0"),
        (Profile(python=Version("3.12.0.0")), "3.12.0.0"),  # equal to 3.12.0, not the same
        (Profile(python=Version("3.12.0")), "3.12.0"),
        (Profile(python=Version("3.9")), "3.9.0"),
        (Profile(markers={"python_version": "3.12"}), "3.12.0"),
        (Profile(markers={"python_full_version": "3.8.10"}), "3.8.10"),
        (Profile(markers={"python_full_version": "3.13.1"}), "3.13.1"),
    ],
)
def test_the_python_of_each_profile_is_its_own(profile: Profile, full: str) -> None:
    for _ in range(2):  # the second answer comes from the caches
        assert str(profile.python_full()) == full


# ----------------------------------------------------------------------------- the bound


def numbered(count: int, tag: str = CP312_X86, *, every: int = 1) -> list[Release]:
    """``count`` versions 1.0 ... 1.<count-1>; every ``every``-th has a ``tag`` wheel (the
    others only an aarch64 one, which no x86 profile installs)."""
    return releases(
        wheel(f"1.{n}", tag if n % every == 0 else CP312_ARM, project="demo") for n in range(count)
    )


def kept(excluded: list[Clause], page: list[Release], window: int) -> list[str]:
    return [str(v) for v in needed(excluded, [r.version for r in page], window=window).versions]


def test_a_page_within_the_window_is_kept_whole() -> None:
    page = numbered(40)
    found = needed([OPEN], [r.version for r in page], window=40)
    assert (len(found.versions), found.left_out, dict(found.horizons)) == (40, 0, {})


def test_a_cap_keeps_the_newest_releases_beyond_it_and_the_version_it_names() -> None:
    cap = Clause.parse("<1.50", "cap", known_bad=("1.7",))
    found = needed([cap], [r.version for r in numbered(10_000)], window=3)
    assert [str(v) for v in found.versions] == ["1.7", "1.50", "1.9997", "1.9998", "1.9999"]
    assert found.left_out == 10_000 - 5
    assert found.horizons[cap] == {Role.NEWEST: Horizon(final=Version("1.9996"))}


def test_a_not_equal_keeps_the_first_releases_after_it_and_the_newest() -> None:
    page = numbered(10_000)
    ne = Clause.parse("!=1.20", "not-equal")
    assert kept([ne], page, 2) == ["1.20", "1.21", "1.22", "1.9998", "1.9999"]
    found = needed([ne], [r.version for r in page], window=2)
    assert found.horizons[ne] == {
        Role.FIRST: Horizon(final=Version("1.23")),
        Role.NEWEST: Horizon(final=Version("1.9997")),
    }


def test_pre_releases_have_a_window_of_their_own() -> None:
    texts = [f"2.0.dev{n}" for n in range(50)] + ["1.0", "1.1", "1.2"]
    page = versions(*texts)
    found = needed([Clause.parse("<0.5", "cap")], [r.version for r in page], window=3)
    assert [str(v) for v in found.versions] == ["1.0", "1.1", "1.2", *texts[47:50]]


def test_every_exclusion_of_the_project_keeps_its_own_windows() -> None:
    page = numbered(5_000)
    first = Clause.parse("!=1.100", "not-equal")
    second = Clause.parse("!=1.3000", "not-equal")
    assert kept([first, second], page, 1) == ["1.100", "1.101", "1.3000", "1.3001", "1.4999"]


def test_a_walk_that_finds_its_candidate_inside_the_window_is_not_cut_short() -> None:
    page = numbered(5_000, every=10)  # every tenth release has an x86 wheel
    cap = Clause.parse("<1.50", "cap")
    found = needed([cap], [r.version for r in page], window=20)
    on_kept = candidates(cap, [r for r in page if r.version in set(found.versions)], X86, now=NOW)
    whole = candidates(cap, page, X86, now=NOW)
    assert walk(on_kept) == walk(whole)
    assert cut_short(found, cap, on_kept, X86) == []


def test_a_walk_that_runs_out_of_its_window_is_cut_short() -> None:
    page = numbered(5_000, every=100)  # 99 uninstallable releases above the newest good one
    cap = Clause.parse("<1.50", "cap")
    found = needed([cap], [r.version for r in page], window=20)
    on_kept = candidates(cap, [r for r in page if r.version in set(found.versions)], X86, now=NOW)
    assert chosen(on_kept, Role.NEWEST) is None  # 1.4900 is out of reach: left out
    assert chosen(candidates(cap, page, X86, now=NOW), Role.NEWEST) is not None
    assert cut_short(found, cap, on_kept, X86) == [Role.NEWEST]


_CLAUSES = ["<1.2", "<=1.2", "!=1.2", "==1.2", "~=1.1", "==1.*", "!=1.2.*", "<2.0rc1", "===1.2"]


_KINDS = {"!=": "not-equal", "==": "pin", "===": "pin"}


def _excluded(clause: str, bad: tuple[str, ...]) -> Clause:
    spec = Specifier(clause)
    kind = "cap" if spec.version.endswith(".*") and spec.operator == "==" else None
    return Clause.parse(clause, kind or _KINDS.get(spec.operator, "cap"), known_bad=bad)


_PART = st.sampled_from(["0", "1", "2", "3"])
_SUFFIX = st.sampled_from(["", "", "", "rc1", ".dev0", "a1", ".post1", "+local"])
_VERSION = st.builds(lambda a, b, c, s: f"{a}.{b}.{c}{s}", _PART, _PART, _PART, _SUFFIX)
_COUNTED = re.compile(r" \(and \d+ more pre-releases?\)")


def _same(decisions: list[Decision]) -> list[tuple[str, str, str | None]]:
    """A walk, but how many pre-releases it passed over (the window bounds those too)."""
    return [(d.role, str(d.version), _COUNTED.sub("", d.reason or "")) for d in decisions]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_VERSION, st.sampled_from(["x86", "arm", "yanked"])), max_size=60),
    st.lists(st.sampled_from(_CLAUSES), min_size=1, max_size=2),
    st.lists(st.sampled_from(["1.2", "1.2.1", "2.0.0", "3.3.3"]), max_size=2),
    st.integers(min_value=1, max_value=6),
    st.booleans(),
)
def test_a_walk_not_cut_short_decides_as_on_the_whole_page(
    files: list[tuple[str, str]], clauses: list[str], bad: list[str], window: int, pre: bool
) -> None:
    """The oracle: judging on what :func:`needed` keeps is judging on the whole page, for
    every walk :func:`cut_short` does not name."""
    page = releases(
        wheel(v, CP312_ARM if how == "arm" else CP312_X86, yanked="x" if how == "yanked" else None)
        for v, how in files
    )
    profile = Profile(python=Version("3.12"), platforms=X86.platforms, allow_prereleases=pre)
    excluded = [_excluded(clause, tuple(bad)) for clause in clauses]
    found = needed(excluded, [r.version for r in page], window=window)
    keep = set(found.versions)
    assert len(found.versions) + found.left_out == len(page)
    for one in excluded:
        on_kept = candidates(one, [r for r in page if r.version in keep], profile, now=NOW)
        whole = candidates(one, page, profile, now=NOW)
        cut = cut_short(found, one, on_kept, profile)
        for role in (Role.FIRST, Role.NEWEST):
            if role not in cut:
                mine = [d for d in on_kept if d.role == role]
                theirs = [d for d in whole if d.role == role]
                if role is Role.NEWEST and Role.FIRST in cut:
                    continue  # the newest walk runs only after the first found its candidate
                assert _same(mine) == _same(theirs), (one.text, role)
        bad_published = {r.version for r in page if any(Version(b) == r.version for b in bad)}
        assert bad_published <= keep


def test_a_version_past_the_int_string_limit_has_no_nearest_release() -> None:
    # Version() of a 5,000-digit number raises a plain ValueError, not InvalidVersion.
    huge = "1" + "0" * 5000
    assert nearest_published(huge, [Version("1.0")]) is None
