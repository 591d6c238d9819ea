"""Which published releases could lift an exclusion, per runtime profile (DESIGN.md "candidate").

For one exclusion, one runtime :class:`Profile` and the project's releases,
:func:`candidates` walks the releases the exclusion keeps out and records a
:class:`Decision` for each one it looks at: a candidate, or why not ("14.1.1 has no
manylinux_2_28_x86_64 wheel", "14.1.2 is yanked: broken build").

Which releases are looked at ("beyond the bound"), for a clause with version V:

- cap ``<V``: every version the clause keeps out (all of them are ≥ V, or pre-releases of V);
- cap ``<=V``: versions > V; cap ``~=1.4.2``: versions from its implied ceiling on (1.5.dev0,
  1.5, ...), never those below its floor; cap ``==1.2.*``: versions after the series (1.3.dev0,
  1.3, 2.0, ...), never those before it;
- pin ``==V``: versions > V the pin keeps out (``14.1.0+local`` matches ``==14.1.0``);
  ``===V``: versions > V that are not V as text (none when V is not PEP 440);
- not-equal ``!=V`` / ``!=V.*``: versions > V the clause lets in, i.e. after every excluded one;
- ban: none (a ban has no candidate; :func:`candidates` returns ``[]``);
- a sentinel cap (``<9999``) is a cap like any other: usually nothing lies beyond it.

Walks: caps and pins have one, role ``newest``: from the newest release beyond the bound
downwards until one is eligible. Not-equal has two: ``first`` from the oldest release after
the excluded one upwards, then ``newest`` from the newest downwards. Each release looked at is
recorded once per walk; when the ``first`` walk finds nothing eligible it has looked at every
release already, and the ``newest`` walk records nothing more.

A release is eligible when, checked in this order (the first failure is the reason):

1. it is not a pre-release (``Version.is_prerelease``, dev releases included), unless the
   profile allows them. Pre-releases are not one Decision each: a walk records the first one
   it meets and counts the others in that reason ("15.0rc1 is a pre-release (and 49 more
   pre-releases)"), so walking past a nightly series stays readable;
2. it is not known bad (``Excluded.known_bad``, matched as ``==V``, so local versions of a bad
   version are bad too), nor the version a ``<V`` cap names (DESIGN.md: the capped version
   stays out);
3. it is not yanked (all files yanked, PEP 592); the reason carries the yank reason;
4. it has a file the profile can install: a non-yanked wheel with a tag in
   :meth:`Profile.supported_tags` or, when the profile allows sdists, a non-yanked sdist
   (noted on the Decision as "sdist only"), whose ``requires-python`` admits the profile's
   Python. An invalid ``requires-python`` makes that file unusable (pip ignores such values;
   govern does not guess) and never raises;
5. it is older than the profile's cooldown (``minimum_release_age``). The release's age runs
   from its first upload (:attr:`Release.upload_time`); when the index gives no upload time
   (PEP 503 HTML pages), ``first_seen`` (when govern first saw the version) stands in, and
   without either the release is not eligible under a nonzero cooldown: the cooldown cannot
   be shown to have passed. Naive datetimes are taken as UTC.
"""

from __future__ import annotations

import bisect
import enum
import functools
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING

from packaging import tags
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.tags import Tag
from packaging.version import Version

from govern.index.model import DistributionFile, FileKind, Release

if TYPE_CHECKING:
    from packaging.markers import Marker

    from govern.exclusions.model import Exclusion

_KINDS = frozenset({"not-equal", "cap", "pin", "ban"})
_OPERATORS = frozenset({"!=", "<", "<=", "~=", "==", "==="})

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


class Role(enum.StrEnum):
    """Which walk a Decision belongs to (a ``str``: ``Role.NEWEST == "newest"``)."""

    NEWEST = "newest"  # cap/pin: the newest release beyond the bound; not-equal: the newest after
    FIRST = "first"  # not-equal: the first release after the excluded one


@dataclass(frozen=True, slots=True)
class Profile:
    """A runtime target where a candidate must work (DESIGN.md "runtime profile").

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
        from packaging.markers import default_environment  # only profiles with markers

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
        from packaging.markers import Marker

        parsed = marker if isinstance(marker, Marker) else Marker(marker)
        return parsed.evaluate(dict(self.environment()))


@dataclass(frozen=True, slots=True)
class Excluded:
    """The part of an exclusion the watcher needs: its clause and what is known bad.

    ``kind`` is one of ``not-equal``, ``cap``, ``pin``, ``ban`` (as
    :func:`govern.exclusions.classify.classify` assigns them; a :class:`Kind` works too);
    ``version`` is as in the clause (``14.1.0``, ``1.2.*``). ``known_bad`` versions (the
    annotation's ``bad=``, failed verifications) are never candidates; entries that name no
    PEP 440 version are ignored. An inconsistent clause raises :class:`ValueError`.
    """

    kind: str
    operator: str
    version: str
    known_bad: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "known_bad", tuple(self.known_bad))
        if self.kind not in _KINDS:
            raise ValueError(f"unknown exclusion kind {self.kind!r}")
        if self.operator not in _OPERATORS:
            raise ValueError(f"{self.operator!r} is not an excluding operator")
        if (self.kind == "not-equal") != (self.operator == "!="):
            raise ValueError(f"{self.operator}{self.version} cannot be a {self.kind}")
        _clause(self.kind, self.operator, self.version, self.known_bad)  # raises if invalid

    @property
    def clause(self) -> str:
        """The clause as text, e.g. ``<14.1.0``."""
        return f"{self.operator}{self.version}"

    @classmethod
    def of(cls, exclusion: Exclusion, *, known_bad: Iterable[str] = ()) -> Excluded:
        """The watcher's view of a recorded exclusion, with extra known-bad versions."""
        bad = dict.fromkeys((*exclusion.bad_versions, *known_bad))
        return cls(str(exclusion.kind), exclusion.operator, exclusion.version, tuple(bad))


@dataclass(frozen=True, slots=True)
class Decision:
    """One release looked at for one exclusion and profile: a candidate, or why not.

    ``reason`` is None exactly when ``eligible``; ``note`` says something an eligible
    release still needs noticed (it is installable from its sdist only).
    """

    version: Version
    eligible: bool
    reason: str | None
    role: Role
    release: Release
    note: str | None = None


# ----------------------------------------------------------------------------- clauses


@dataclass(frozen=True, slots=True)
class _Clause:
    """An Excluded, parsed once."""

    kind: str
    spec: Specifier
    base: Version | None  # the clause's version without ``.*``, when it is PEP 440
    bad: tuple[Specifier, ...]  # known-bad versions as ``==V``
    named: Specifier | None  # ``<V``: the version the cap names (``==V``)

    def keeps_out(self, version: Version) -> bool:
        if self.spec.operator == "~=":
            assert self.base is not None  # ~= always has a PEP 440 version
            return version >= self.base and not self.spec.contains(version, prereleases=True)
        return not self.spec.contains(version, prereleases=True)

    def beyond(self, version: Version) -> bool:
        """Whether ``version`` lies beyond the bound: the releases a walk looks at."""
        op = self.spec.operator
        if self.kind == "ban":
            return False
        if self.kind == "not-equal":
            return (
                self.base is not None
                and version > self.base
                and self.spec.contains(version, prereleases=True)
            )
        if not self.keeps_out(version):
            return False
        if op in ("<", "<="):
            return True
        if self.base is None:  # ===V with V not PEP 440: nothing to be above
            return False
        if op == "~=" or self.spec.version.endswith(".*"):
            return version >= self.base
        return version > self.base  # == and ===

    def known_bad(self, version: Version) -> bool:
        return any(bad.contains(version, prereleases=True) for bad in self.bad)

    def is_named(self, version: Version) -> bool:
        return self.named is not None and self.named.contains(version, prereleases=True)


@functools.lru_cache(maxsize=1024)
def _clause(kind: str, operator: str, version: str, known_bad: tuple[str, ...]) -> _Clause:
    spec = Specifier(f"{operator}{version}")
    try:
        base: Version | None = Version(version.removesuffix(".*"))
    except ValueError:  # InvalidVersion, or a number past the int-string limit
        base = None
    bad: list[Specifier] = []
    for text in known_bad:
        try:
            bad.append(Specifier(f"=={text.strip()}"))
        except InvalidSpecifier:
            continue
    named = Specifier(f"=={version}") if operator == "<" and base is not None else None
    return _Clause(kind, spec, base, tuple(bad), named)


def _parsed(excluded: Excluded) -> _Clause:
    return _clause(excluded.kind, excluded.operator, excluded.version, excluded.known_bad)


def keeps_out(excluded: Excluded, version: Version) -> bool:
    """Whether the clause keeps ``version`` out.

    The :class:`~packaging.specifiers.Specifier`'s verdict (pre-releases judged like
    finals), so a pin keeps out everything but V and ``==1.2.*`` everything outside the
    series; ``~=V`` by its implied ceiling only (its ``>=V`` half is a floor, and floors are
    not exclusions): ``~=1.4.2`` keeps out 1.5 but not 1.4.1.
    """
    return _parsed(excluded).keeps_out(version)


def beyond_bound(excluded: Excluded, version: Version) -> bool:
    """Whether ``version`` is one a walk looks at (module docstring: "beyond the bound")."""
    return _parsed(excluded).beyond(version)


# ----------------------------------------------------------------------------- candidates


def candidates(
    excluded: Excluded,
    releases: Sequence[Release],
    profile: Profile,
    *,
    now: datetime,
    first_seen: Mapping[Version, datetime] | None = None,
) -> list[Decision]:
    """The Decisions of the walks for one exclusion on one profile (module docstring).

    ``releases`` may come in any order; ``first_seen`` gives, per version, when govern
    first saw it, standing in for an upload time the index did not give. The result holds
    the ``first`` walk (not-equal only), then the ``newest`` walk, each in walking order;
    at most one Decision per walk is eligible, and it ends its walk.
    """
    clause = _parsed(excluded)
    if clause.kind == "ban":
        return []
    pool: dict[Version, Release] = {}
    for release in releases:
        if clause.beyond(release.version):
            pool.setdefault(release.version, release)
    ordered = [pool[version] for version in sorted(pool)]
    check = _Check(clause, profile, _utc(now), first_seen or {})
    if clause.kind != "not-equal":
        return _walk(reversed(ordered), Role.NEWEST, check)
    first = _walk(ordered, Role.FIRST, check)
    if not any(decision.eligible for decision in first):
        return first  # every release after the excluded one was looked at already
    return first + _walk(reversed(ordered), Role.NEWEST, check)


#: Releases kept per walk, beyond an exclusion's bound (see :func:`needed`): the final
#: releases nearest the end a walk starts from, and as many pre-releases.
RELEASE_WINDOW = 500


@dataclass(frozen=True, slots=True)
class Horizon:
    """Where a walk's window ended: the first release beyond the bound left out, in walking
    order (None: nothing of that kind was left out)."""

    final: Version | None = None
    prerelease: Version | None = None


@dataclass(frozen=True, slots=True)
class Needed:
    """What judging needs of a page (:func:`needed`): the versions kept, oldest first, and
    what was cut; :meth:`of` turns it into the releases to record and judge."""

    versions: list[Version]
    left_out: int = 0  # versions of the page not kept
    horizons: Mapping[Excluded, Mapping[Role, Horizon]] = field(default_factory=dict)
    releases: list[Release] = field(default_factory=list)
    window: int = RELEASE_WINDOW  # the bound it was kept with

    def of(self, files: Mapping[Version, Sequence[DistributionFile]]) -> Needed:
        """This selection with its releases, from the page's files by version."""
        kept = [Release(v, tuple(files[v])) for v in self.versions]
        return replace(self, releases=kept)


def needed(
    exclusions: Iterable[Excluded], versions: Sequence[Version], *, window: int = RELEASE_WINDOW
) -> Needed:
    """The releases judging needs of a project's page, at most about ``window`` per walk.

    A page of 100,000 versions is not recorded and walked whole. Kept: for each exclusion,
    the ``window`` final releases beyond its bound nearest each end a walk starts from (the
    newest; for not-equal also the first after the excluded one) and as many pre-releases
    among them, the version its clause names, its known-bad versions; and the ``window``
    newest releases of the page. A page of at most ``window`` releases is kept whole. A
    walk that finds its candidate inside its window decides as it would on the whole page
    (walks stop at the first eligible release); :func:`cut_short` tells the others.
    ``versions`` are a page's, distinct and oldest first (only what is kept is made a
    :class:`Release`: a page's 100,000 would cost more than the judging).
    """
    ordered = list(versions)
    if len(ordered) <= window:
        return Needed(ordered, window=window)
    count = len(ordered)
    keep: set[int] = set(range(count - window, count))
    horizons: dict[Excluded, dict[Role, Horizon]] = {}
    for excluded in exclusions:
        clause = _parsed(excluded)
        floor = _floor(clause)
        if floor is None:
            continue
        start = bisect.bisect_left(ordered, floor)
        walks = {Role.NEWEST: range(count - 1, start - 1, -1)}
        if clause.kind == "not-equal":
            walks[Role.FIRST] = range(start, count)
        cut: dict[Role, Horizon] = {}
        for role, positions in walks.items():
            horizon = _window(ordered, positions, clause, window, keep)
            if horizon != Horizon():
                cut[role] = horizon
        if cut:
            horizons[excluded] = cut
        for spec in (*clause.bad, *([clause.named] if clause.named else [])):
            _matching(ordered, spec, window, keep)
        if clause.base is not None and clause.kind in ("not-equal", "pin"):
            _matching(ordered, Specifier(f"=={clause.base}"), window, keep)
    kept = [ordered[i] for i in sorted(keep)]
    return Needed(kept, count - len(kept), horizons, window=window)


def cut_short(
    needed: Needed, excluded: Excluded, decisions: Sequence[Decision], profile: Profile
) -> list[Role]:
    """The walks of ``decisions`` that might have decided otherwise on the whole page: the
    window of :func:`needed` left a release out before the walk found an eligible one."""
    out: list[Role] = []
    for role, horizon in needed.horizons.get(excluded, {}).items():
        limits = [horizon.final]
        if profile.allow_prereleases:  # else pre-releases are passed over, never chosen
            limits.append(horizon.prerelease)
        found = chosen(decisions, role)
        for limit in limits:
            if limit is None:
                continue
            newest = role is Role.NEWEST
            if found is None or (found.version < limit if newest else found.version > limit):
                out.append(role)
                break
    return out


def _floor(clause: _Clause) -> Version | None:
    """A version at or below every version beyond the clause's bound (None: there is none)."""
    if clause.base is None or clause.kind == "ban":
        return None
    if clause.spec.operator == "<":  # <V also keeps out V's pre-releases: from V.dev0 on
        return _family_floor(clause.base)
    return clause.base


def _family_floor(version: Version) -> Version:
    """The lowest version of ``version``'s release (its ``.dev0``), in its epoch."""
    release = ".".join(str(part) for part in version.release)
    return Version(f"{version.epoch}!{release}.dev0")


def _window(
    ordered: Sequence[Version],
    positions: Iterable[int],
    clause: _Clause,
    window: int,
    keep: set[int],
) -> Horizon:
    """Keep the first ``window`` final releases (and pre-releases) beyond the bound met at
    ``positions``; the first of each kind left out."""
    finals = prereleases = 0
    final_left: Version | None = None
    prerelease_left: Version | None = None
    for position in positions:
        version = ordered[position]
        if not clause.beyond(version):
            continue
        if version.is_prerelease:
            if prereleases < window:
                prereleases += 1
                keep.add(position)
            elif prerelease_left is None:
                prerelease_left = version
            continue
        if finals == window:
            final_left = version
            break
        finals += 1
        keep.add(position)
    return Horizon(final_left, prerelease_left)


def _matching(ordered: Sequence[Version], spec: Specifier, window: int, keep: set[int]) -> None:
    """Keep the releases ``spec`` (``==V``, ``==V.*``) matches: they follow each other in
    version order, from ``V``'s ``.dev0`` on (at most ``window`` of them)."""
    try:
        base = Version(spec.version.removesuffix(".*"))
    except ValueError:  # InvalidVersion, or a number past the int-string limit
        return
    first = bisect.bisect_left(ordered, _family_floor(base))
    matched = 0
    for position in range(first, min(first + 4 * window, len(ordered))):
        version = ordered[position]
        if spec.contains(version, prereleases=True):
            keep.add(position)
            matched += 1
            if matched == window:
                return
        elif matched or version > base:
            return


def chosen(decisions: Iterable[Decision], role: Role | str) -> Decision | None:
    """The eligible Decision of a walk, if the walk found one."""
    return next((d for d in decisions if d.eligible and d.role == role), None)


def _walk(releases: Iterable[Release], role: Role, check: _Check) -> list[Decision]:
    decisions: list[Decision] = []
    prerelease_at: int | None = None
    more_prereleases = 0
    for release in releases:
        if release.version.is_prerelease and not check.profile.allow_prereleases:
            if prerelease_at is None:
                prerelease_at = len(decisions)
                skipped = f"{release.version} is a pre-release"
                decisions.append(Decision(release.version, False, skipped, role, release))
            else:
                more_prereleases += 1
            continue
        reason, note = check(release)
        decisions.append(Decision(release.version, reason is None, reason, role, release, note))
        if reason is None:
            break
    if prerelease_at is not None and more_prereleases:
        first = decisions[prerelease_at]
        plural = "s" if more_prereleases > 1 else ""
        summary = f"{first.reason} (and {more_prereleases} more pre-release{plural})"
        decisions[prerelease_at] = replace(first, reason=summary)
    return decisions


@dataclass(frozen=True, slots=True)
class _Check:
    """The conditions after the pre-release one, for one exclusion, profile and moment."""

    clause: _Clause
    profile: Profile
    now: datetime
    first_seen: Mapping[Version, datetime]

    def __call__(self, release: Release) -> tuple[str | None, str | None]:
        """(reason, note): reason None when the release is eligible."""
        version = release.version
        if self.clause.known_bad(version):
            return f"{version} is known bad", None
        if self.clause.is_named(version):
            return f"{version} is the excluded version ({self.clause.spec})", None
        if release.yanked:
            why = release.yanked_reason
            return (f"{version} is yanked: {why}" if why else f"{version} is yanked"), None
        reason, note = _installable(release, self.profile)
        if reason is not None:
            return reason, None
        return self._cooldown(release), note

    def _cooldown(self, release: Release) -> str | None:
        cooldown = self.profile.minimum_release_age
        if cooldown <= timedelta(0):
            return None
        uploaded = release.upload_time or self.first_seen.get(release.version)
        if uploaded is None:
            return f"{release.version} has no upload time (cooldown {_duration(cooldown)})"
        age = self.now - _utc(uploaded)
        if age < cooldown:
            return f"{release.version} is {_duration(age)} old (cooldown {_duration(cooldown)})"
        return None


def _installable(release: Release, profile: Profile) -> tuple[str | None, str | None]:
    """(reason, note) for the files of a release on a profile."""
    version = release.version
    if not release.files:
        return f"{version} has no files", None
    supported = profile.supported_tags()
    wheels = [
        f for f in release.files if f.kind is FileKind.WHEEL and not f.tags.isdisjoint(supported)
    ]
    sdists = [f for f in release.files if f.kind is FileKind.SDIST]
    usable = wheels + (sdists if profile.allow_sdist else [])
    if not usable:
        return _no_wheel(release, profile, has_sdist=bool(sdists)), None
    live = [f for f in usable if not f.yanked]
    if not live:
        why = next((f.yanked_reason for f in usable if f.yanked_reason), None)
        what = f"{version}'s {profile.platform()} files are yanked"
        return (f"{what}: {why}" if why else what), None
    python = profile.python_full()
    allowed: list[DistributionFile] = []
    rejected: str | None = None
    invalid: str | None = None
    for file in live:
        text = (file.requires_python or "").strip()
        spec = _requires_python(text)
        if spec is None:
            invalid = invalid or text
        elif spec.contains(python, prereleases=True):
            allowed.append(file)
        else:
            rejected = rejected or text
    if not allowed:
        if rejected is not None:
            return f"{version} requires Python {rejected} (profile {profile.python_label()})", None
        return f"{version} has an invalid requires-python {invalid!r}", None
    if not any(f.kind is FileKind.WHEEL for f in allowed):
        return None, f"sdist only: no {profile.interpreter()} {profile.platform()} wheel"
    return None, None


def _no_wheel(release: Release, profile: Profile, *, has_sdist: bool) -> str:
    """Why no wheel of a release fits: the platform, or only the interpreter."""
    platforms = _supported_platforms(*profile._tag_key())
    wheels = [f for f in release.files if f.kind is FileKind.WHEEL]
    on_platform = any(t.platform in platforms for f in wheels for t in f.tags)
    if on_platform:
        text = f"{release.version} has no wheel for {profile.interpreter()} on {profile.platform()}"
    else:
        text = f"{release.version} has no {profile.platform()} wheel"
    if profile.allow_sdist:
        return f"{text} and no sdist"
    return f"{text} (sdists not allowed)" if has_sdist else text


@functools.lru_cache(maxsize=512)
def _requires_python(text: str) -> SpecifierSet | None:
    """A ``requires-python`` value parsed; None when it is invalid ("" admits all)."""
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _duration(span: timedelta) -> str:
    """A readable duration: "7 days", "36 hours", "5 minutes", "less than a minute"."""
    minutes = max(int(span.total_seconds()) // 60, 0)
    day, hour = 24 * 60, 60
    if minutes >= day and (minutes % day == 0 or minutes >= 2 * day):
        count, unit = minutes // day, "day"
    elif minutes >= hour and (minutes % hour == 0 or minutes >= 2 * hour):
        count, unit = minutes // hour, "hour"
    elif minutes:
        count, unit = minutes, "minute"
    else:
        return "less than a minute"
    return f"{count} {unit}" + ("" if count == 1 else "s")


# ----------------------------------------------------------------------------- other rules


def nearest_published(version: str, published: Sequence[Version]) -> Version | None:
    """The published version nearest to one that was never published (a likely typo).

    A published version (or, for ``V.*``, the first published one of the series) is its
    own nearest. Otherwise, with release tuples padded with zeros: the same epoch first,
    then the longest common prefix, then the smallest distance at the first component that
    differs (``14.10`` → 14.1.0: prefix 14, distance 9), then a pre-release only for a
    pre-release, then the lower version. None when ``version`` is not PEP 440 or nothing
    is published.
    """
    try:
        target = Version(version.strip().removesuffix(".*"))
    except ValueError:  # InvalidVersion, or a number past the int-string limit
        return None
    if not published:
        return None
    if version.strip().endswith(".*"):
        try:
            series = Specifier(f"=={version.strip()}")
        except InvalidSpecifier:
            series = None
        members = [p for p in published if series and series.contains(p, prereleases=True)]
        if members:
            return min(members)
    exact = [p for p in published if p == target]
    if exact:
        return exact[0]

    def distance(candidate: Version) -> tuple[bool, int, int, bool, Version]:
        width = max(len(target.release), len(candidate.release))
        want = (*target.release, *(0,) * (width - len(target.release)))
        have = (*candidate.release, *(0,) * (width - len(candidate.release)))
        common = next((i for i in range(width) if want[i] != have[i]), width)
        gap = abs(want[common] - have[common]) if common < width else 0
        return (
            candidate.epoch != target.epoch,
            -common,
            gap,
            candidate.is_prerelease != target.is_prerelease,
            candidate,
        )

    return min(published, key=distance)


def stale_since(
    excluded: Excluded,
    releases: Sequence[Release],
    *,
    first_seen: Mapping[Version, datetime] | None = None,
) -> datetime | None:
    """Since when a cap or pin has been holding back a release (for a "stale-cap" rule).

    The earliest upload time among the releases beyond its bound that are not yanked, not
    pre-releases, not known bad and not the version a ``<V`` cap names (the bad release the
    cap was written for does not make it stale; its fix does). ``first_seen`` stands in
    for unknown upload times; releases with neither are left out. None for not-equal
    exclusions and bans (they hold nothing newer back) and when nothing qualifies.
    """
    clause = _parsed(excluded)
    if clause.kind not in ("cap", "pin"):
        return None
    seen = first_seen or {}
    times = [
        _utc(moment)
        for release in releases
        if clause.beyond(release.version)
        and not release.version.is_prerelease
        and not release.yanked
        and not clause.known_bad(release.version)
        and not clause.is_named(release.version)
        and (moment := release.upload_time or seen.get(release.version)) is not None
    ]
    return min(times, default=None)


# ----------------------------------------------------------------------------- tags


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
