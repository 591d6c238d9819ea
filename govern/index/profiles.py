"""Runtime profiles: the Python, platforms and marker environment a candidate must work on.

A :class:`Profile` answers which wheel tags it installs (through :mod:`packaging.tags`),
which marker environment it has (PEP 508) and how it is named in reasons; the candidate
rules (:mod:`govern.index.candidates`) ask it about each release they look at.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType

from packaging import tags
from packaging.markers import Marker, default_environment
from packaging.tags import Tag
from packaging.version import Version

__all__ = ["Profile"]

# glibc minors below which no manylinux wheel exists, per architecture (PEP 600: x86 wheels
# go back to manylinux1, glibc 2.5; the others start at manylinux2014, glibc 2.17).
_MANYLINUX_FLOOR = {"x86_64": 5, "i686": 5}
_MANYLINUX_DEFAULT_FLOOR = 17
_LEGACY_MANYLINUX = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
_LEGACY_GLIBC = {name: minor for minor, name in _LEGACY_MANYLINUX.items()}

_IMPLEMENTATIONS = {
    "cp": ("cpython", "CPython"),
    "pp": ("pypy", "PyPy"),
    "gp": ("graalpy", "GraalVM"),
    "ip": ("ironpython", "IronPython"),
    "jy": ("jython", "Jython"),
}
_WINDOWS_MACHINES = {"win_amd64": "AMD64", "win32": "x86", "win_arm64": "ARM64"}


@dataclass(frozen=True, slots=True)
class Profile:
    """A runtime target where a candidate must work (docs/design.md "runtime profile").

    ``python`` and ``platforms`` describe the target; left empty they mean the running
    interpreter and this machine. A platform names the target system, and the system runs
    every wheel its platform supports: ``manylinux_2_28_x86_64`` also takes
    ``manylinux2014_x86_64`` (glibc 2.17) wheels and ``linux_x86_64`` ones, as
    :func:`packaging.tags.sys_tags` does on such a machine (unlike ``pip --platform``, which
    takes the name literally); ``musllinux_1_2_*`` takes ``musllinux_1_0``/``1_1``;
    ``macosx_14_0_arm64`` takes older macOS and ``universal2`` wheels.

    ``markers`` override the marker environment (:meth:`environment`). When ``python`` is
    not set, a ``python_full_version`` (or ``python_version``) in ``markers`` names the
    Python; ``python`` wins when both are set.
    """

    name: str = "default"
    python: Version | None = None
    platforms: tuple[str, ...] = ()
    implementation: str = "cp"
    markers: Mapping[str, str] = field(default_factory=dict, hash=False)
    allow_prereleases: bool = False
    allow_sdist: bool = False
    minimum_release_age: timedelta = timedelta(0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "markers", MappingProxyType(dict(self.markers)))
        object.__setattr__(self, "platforms", tuple(self.platforms))
        target = self._target()  # raises InvalidVersion for a bad marker value
        if target is not None and len(target.release) < 2:
            raise ValueError(f"profile {self.name}: Python {target} needs a minor version")
        if self.minimum_release_age < timedelta(0):
            raise ValueError(f"profile {self.name}: negative minimum_release_age")

    def _target(self) -> Version | None:
        """The Python this profile names, if it names one."""
        if self.python is not None:
            return self.python
        text = self.markers.get("python_full_version") or self.markers.get("python_version")
        return _version(text) if text else None

    def python_full(self) -> Version:
        """The Python version that ``requires-python`` is checked against.

        ``3.12`` stands for 3.12.0, as pip pads ``--python-version 3.12`` (PEP 440 pads with
        zeros anyway, so only ``===`` could tell them apart); a profile may name a patch
        release (``3.12.4``) to be exact. Unset, it is the running interpreter's version.
        """
        target = self._target()
        if target is None:
            return _running_python()
        if len(target.release) >= 3:
            return target
        return _padded(target.release)

    def _major_minor(self) -> tuple[int, int]:
        release = self.python_full().release
        return release[0], release[1]

    def _tag_key(self) -> tuple[str, tuple[int, int] | None, tuple[str, ...]]:
        """What the supported tags depend on: (implementation, Python, platforms)."""
        target = self._target()
        python = None if target is None else (target.release[0], target.release[1])
        return self.implementation, python, self.platforms

    def supported_tags(self) -> frozenset[Tag]:
        """The wheel tags this profile installs, computed through :mod:`packaging.tags`.

        CPython: ``cpython_tags`` (ABI ``cpXY``, abi3, none) and ``compatible_tags`` for
        the profile's Python and platforms (expanded as the class describes); other
        implementations: ``generic_tags`` (ABI none) and ``compatible_tags``. With neither
        Python nor platforms set (and the running implementation), ``sys_tags()``. Cached
        per (implementation, Python, platforms).
        """
        return _supported_set(*self._tag_key())

    def supported_platforms(self) -> frozenset[str]:
        """The platform tags among :meth:`supported_tags` (cached like them)."""
        return _supported_platforms(*self._tag_key())

    def interpreter(self) -> str:
        """The interpreter tag of the profile, e.g. ``cp312`` (used in reasons)."""
        major, minor = self._major_minor()
        return f"{self.implementation}{major}{minor}"

    def platform(self) -> str:
        """The platform named in reasons: the profile's first, else this machine's own."""
        if self.platforms:
            return self.platforms[0]
        return _own_platform(*self._tag_key())

    def python_label(self) -> str:
        """The profile's Python in reasons, e.g. ``py3.12``."""
        target = self._target()
        return f"py{target if target is not None else self.python_full()}"

    def environment(self) -> dict[str, str]:
        """The marker environment of the profile (PEP 508), for evaluating markers.

        This interpreter's environment, with the Python, the implementation and the first
        platform's ``sys_platform``/``platform_system``/``platform_machine``/``os_name`` put
        in, and ``markers`` laid over the result.
        """
        env: dict[str, str] = {key: str(value) for key, value in default_environment().items()}
        target = self._target()
        if target is not None:
            major, minor = self._major_minor()
            env["python_version"] = f"{major}.{minor}"
            env["python_full_version"] = str(self.python_full())
            if self.implementation == "cp":
                env["implementation_version"] = str(self.python_full())
        if self.implementation in _IMPLEMENTATIONS:
            env["implementation_name"], env["platform_python_implementation"] = _IMPLEMENTATIONS[
                self.implementation
            ]
        if self.platforms:
            env.update(_platform_environment(self.platforms[0]))
        env.update(self.markers)
        return env

    def applies(self, marker: str | Marker | None) -> bool:
        """Whether a requirement marker holds on this profile (None always holds).

        A string that is not a valid marker raises :class:`packaging.markers.InvalidMarker`:
        markers come from sources that were parsed already.
        """
        if marker is None:
            return True
        parsed = marker if isinstance(marker, Marker) else Marker(marker)
        return parsed.evaluate(dict(self.environment()))


@functools.lru_cache(maxsize=64)
def _supported(
    implementation: str, python: tuple[int, int] | None, platforms: tuple[str, ...]
) -> tuple[Tag, ...]:
    if python is None and not platforms and implementation == tags.interpreter_name():
        return tuple(tags.sys_tags())
    if python is None:
        python = (sys.version_info[0], sys.version_info[1])
    expanded = _expand_platforms(platforms) if platforms else list(tags.platform_tags())
    interpreter = f"{implementation}{python[0]}{python[1]}"
    if implementation == "cp":
        found = list(tags.cpython_tags(python, [interpreter], expanded))
    else:
        found = list(tags.generic_tags(interpreter, [], expanded))
    found.extend(tags.compatible_tags(python, interpreter, expanded))
    return tuple(dict.fromkeys(found))


@functools.lru_cache(maxsize=64)
def _supported_set(
    implementation: str, python: tuple[int, int] | None, platforms: tuple[str, ...]
) -> frozenset[Tag]:
    return frozenset(_supported(implementation, python, platforms))


@functools.lru_cache(maxsize=64)
def _supported_platforms(
    implementation: str, python: tuple[int, int] | None, platforms: tuple[str, ...]
) -> frozenset[str]:
    return frozenset(tag.platform for tag in _supported(implementation, python, platforms))


@functools.lru_cache(maxsize=64)
def _own_platform(
    implementation: str, python: tuple[int, int] | None, platforms: tuple[str, ...]
) -> str:
    """The platform named in reasons for a profile without platforms: this machine's own."""
    supported = _supported(implementation, python, platforms)
    names = [t.platform for t in supported if t.platform != "any"]
    real = [name for name in names if not name.startswith("linux_")]
    return (real or names or ["any"])[0]


@functools.lru_cache(maxsize=64)
def _version(text: str) -> Version:
    """A version parsed once (a profile's marker Python, asked for at every release)."""
    return Version(text)


@functools.cache
def _running_python() -> Version:
    return Version(".".join(str(part) for part in sys.version_info[:3]))


@functools.lru_cache(maxsize=64)
def _padded(release: tuple[int, ...]) -> Version:
    """A ``major.minor`` release as ``major.minor.0``."""
    return Version(".".join(str(part) for part in (*release, 0, 0)[:3]))


def _expand_platforms(platforms: Iterable[str]) -> list[str]:
    """Each platform with the older ones its system also runs, in preference order."""
    out: list[str] = []
    for platform in platforms:
        out.extend(_expand(platform))
    return list(dict.fromkeys(out))


def _expand(platform: str) -> list[str]:
    legacy, _, legacy_arch = platform.partition("_")
    if legacy in _LEGACY_GLIBC and legacy_arch:
        return _manylinux(2, _LEGACY_GLIBC[legacy], legacy_arch)
    parts = platform.split("_", 3)
    if len(parts) == 4 and parts[1].isdigit() and parts[2].isdigit():
        family, major, minor, arch = parts[0], int(parts[1]), int(parts[2]), parts[3]
        if family == "manylinux" and major == 2:
            return _manylinux(major, minor, arch)
        if family == "musllinux" and major == 1:
            return [f"musllinux_1_{m}_{arch}" for m in range(minor, -1, -1)] + [f"linux_{arch}"]
        if family == "macosx":
            return list(tags.mac_platforms((major, minor), arch))
    return [platform]


def _manylinux(major: int, minor: int, arch: str) -> list[str]:
    out: list[str] = []
    for glibc in range(minor, _MANYLINUX_FLOOR.get(arch, _MANYLINUX_DEFAULT_FLOOR) - 1, -1):
        out.append(f"manylinux_{major}_{glibc}_{arch}")
        if glibc in _LEGACY_MANYLINUX:
            out.append(f"{_LEGACY_MANYLINUX[glibc]}_{arch}")
    return [*out, f"linux_{arch}"]


def _platform_environment(platform: str) -> dict[str, str]:
    """Marker values a platform tag implies (empty when it implies none)."""
    if platform in _WINDOWS_MACHINES:
        return {
            "sys_platform": "win32",
            "platform_system": "Windows",
            "os_name": "nt",
            "platform_machine": _WINDOWS_MACHINES[platform],
        }
    family = platform.split("_", 1)[0]
    if family.startswith(("manylinux", "musllinux", "linux")):
        arch = _linux_arch(platform)
        env = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
        return {**env, "platform_machine": arch} if arch else env
    if family == "macosx":
        arch = platform.split("_", 3)[-1]
        env = {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix"}
        return {**env, "platform_machine": arch} if arch in ("arm64", "x86_64") else env
    return {}


def _linux_arch(platform: str) -> str | None:
    legacy, _, arch = platform.partition("_")
    if legacy in _LEGACY_GLIBC or legacy == "linux":
        return arch or None
    parts = platform.split("_", 3)
    return parts[3] if len(parts) == 4 else None
