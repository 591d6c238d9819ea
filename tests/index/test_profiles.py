"""Tests for :mod:`govern.index.profiles`: the wheel tags and marker environment of a profile."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest
from packaging.tags import Tag, sys_tags
from packaging.version import Version

from govern.index.profiles import Profile

X86 = Profile(name="x86", python=Version("3.12"), platforms=("manylinux_2_28_x86_64",))
ARM = Profile(name="arm", python=Version("3.12"), platforms=("manylinux_2_28_aarch64",))


def test_supported_tags_of_a_manylinux_profile() -> None:
    supported = X86.supported_tags()
    assert Tag("cp312", "cp312", "manylinux2014_x86_64") in supported
    assert Tag("cp312", "cp312", "manylinux_2_28_x86_64") in supported
    assert Tag("cp39", "abi3", "manylinux1_x86_64") in supported
    assert Tag("py3", "none", "any") in supported
    assert Tag("cp312", "cp312", "manylinux_2_29_x86_64") not in supported
    assert Tag("cp311", "cp311", "manylinux2014_x86_64") not in supported
    assert X86.supported_tags() is supported  # cached
    arm = {t.platform for t in ARM.supported_tags()}
    assert "manylinux2014_aarch64" in arm
    assert "manylinux_2_16_aarch64" not in arm  # aarch64 starts at glibc 2.17
    assert not any("x86_64" in platform for platform in arm)


def test_supported_tags_of_other_platforms() -> None:
    mac = Profile(python=Version("3.12"), platforms=("macosx_14_0_arm64",))
    assert Tag("cp312", "cp312", "macosx_11_0_arm64") in mac.supported_tags()
    assert Tag("cp312", "cp312", "macosx_10_9_universal2") in mac.supported_tags()
    musl = Profile(python=Version("3.12"), platforms=("musllinux_1_2_x86_64",))
    assert Tag("cp312", "cp312", "musllinux_1_1_x86_64") in musl.supported_tags()
    assert Tag("cp312", "cp312", "manylinux2014_x86_64") not in musl.supported_tags()
    pypy = Profile(python=Version("3.10"), platforms=("manylinux2014_x86_64",), implementation="pp")
    assert Tag("pp310", "none", "manylinux_2_17_x86_64") in pypy.supported_tags()
    assert Tag("py3", "none", "any") in pypy.supported_tags()
    assert not any(t.interpreter.startswith("cp") for t in pypy.supported_tags())


def test_the_default_profile_is_this_machine() -> None:
    profile = Profile()
    assert profile.supported_tags() == frozenset(sys_tags())
    assert profile.python_full().release[:2] == tuple(sys.version_info[:2])
    assert profile.platform() != "any"


def test_markers_name_the_python_and_the_environment() -> None:
    profile = Profile(
        platforms=("manylinux_2_28_aarch64",), markers={"python_full_version": "3.13.1"}
    )
    assert profile.python_full() == Version("3.13.1")
    assert profile.interpreter() == "cp313"
    env = profile.environment()
    assert env["platform_machine"] == "aarch64"
    assert env["sys_platform"] == "linux"
    assert profile.applies('platform_machine == "aarch64" and python_version >= "3.13"')
    assert not profile.applies('sys_platform == "win32"')
    assert profile.applies(None)
    assert X86.environment()["python_version"] == "3.12"
    windows = Profile(python=Version("3.11"), platforms=("win_amd64",), markers={"extra": "x"})
    assert windows.environment()["platform_machine"] == "AMD64"
    assert windows.environment()["extra"] == "x"


def test_profiles_are_values() -> None:
    markers = {"platform_release": "6.1"}
    profile = Profile(name="p", markers=markers)
    markers["platform_release"] = "changed"
    assert profile.markers["platform_release"] == "6.1"
    assert hash(profile) == hash(Profile(name="p", markers={"platform_release": "6.1"}))
    with pytest.raises(ValueError, match="minor"):
        Profile(python=Version("3"))
    with pytest.raises(ValueError, match="negative"):
        Profile(minimum_release_age=timedelta(days=-1))


def test_supported_platforms_are_those_of_the_supported_tags() -> None:
    assert X86.supported_platforms() == {t.platform for t in X86.supported_tags()}
    assert "manylinux2014_x86_64" in X86.supported_platforms()
    assert "manylinux2014_aarch64" not in X86.supported_platforms()
