"""Which published releases could lift an exclusion, per profile (docs/design.md "candidate").

Notes: docs/internals.md#index.
"""

from __future__ import annotations

import bisect
import enum
import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import Version

from govern.exclusions.clause import Clause
from govern.exclusions.model import Kind
from govern.index.model import DistributionFile, FileKind, Release
from govern.index.profiles import Profile


class Role(enum.StrEnum):
    """Which walk a Decision belongs to (a ``str``: ``Role.NEWEST == "newest"``)."""

    NEWEST = "newest"  # cap/pin: the newest release beyond the bound; not-equal: the newest after
    FIRST = "first"  # not-equal: the first release after the excluded one


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


def keeps_out(clause: Clause, version: Version) -> bool:
    """Whether the clause keeps ``version`` out (:meth:`Clause.keeps_out`)."""
    return clause.keeps_out(version)


# ----------------------------------------------------------------------------- candidates


def candidates(
    clause: Clause,
    releases: Sequence[Release],
    profile: Profile,
    *,
    now: datetime,
    first_seen: Mapping[Version, datetime] | None = None,
    others: SpecifierSet | None = None,
) -> list[Decision]:
    """The Decisions of the walks for one exclusion on one profile (docs/internals.md#index).

    ``releases`` may come in any order; ``first_seen`` gives, per version, when govern
    first saw it, standing in for an upload time the index did not give; ``others`` are
    the line's other clauses: a release one of them keeps out is no candidate ("2.0.0 is
    kept out by <2.0": relaxing this clause would not let it in). The result holds
    the ``first`` walk (not-equal only), then the ``newest`` walk, each in walking order;
    at most one Decision per walk is eligible, and it ends its walk.
    """
    if clause.kind == Kind.BAN:
        return []
    pool: dict[Version, Release] = {}
    for release in releases:
        if clause.beyond(release.version):
            pool.setdefault(release.version, release)
    ordered = [pool[version] for version in sorted(pool)]
    check = _Check(clause, profile, _utc(now), first_seen or {}, others)
    if clause.kind != Kind.NOT_EQUAL:
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
    horizons: Mapping[Clause, Mapping[Role, Horizon]] = field(default_factory=dict)
    releases: list[Release] = field(default_factory=list)
    window: int = RELEASE_WINDOW  # the bound it was kept with

    def of(self, files: Mapping[Version, Sequence[DistributionFile]]) -> Needed:
        """This selection with its releases, from the page's files by version."""
        kept = [Release(v, tuple(files[v])) for v in self.versions]
        return replace(self, releases=kept)


def needed(
    clauses: Iterable[Clause], versions: Sequence[Version], *, window: int = RELEASE_WINDOW
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
    horizons: dict[Clause, dict[Role, Horizon]] = {}
    for clause in clauses:
        floor = _floor(clause)
        if floor is None:
            continue
        start = bisect.bisect_left(ordered, floor)
        walks = {Role.NEWEST: range(count - 1, start - 1, -1)}
        if clause.kind == Kind.NOT_EQUAL:
            walks[Role.FIRST] = range(start, count)
        cut: dict[Role, Horizon] = {}
        for role, positions in walks.items():
            horizon = _window(ordered, positions, clause, window, keep)
            if horizon != Horizon():
                cut[role] = horizon
        if cut:
            horizons[clause] = cut
        for spec in (*clause.bad_specs, *([clause.named] if clause.named else [])):
            _matching(ordered, spec, window, keep)
        if clause.base is not None and clause.kind in (Kind.NOT_EQUAL, Kind.PIN):
            _matching(ordered, Specifier(f"=={clause.base}"), window, keep)
    kept = [ordered[i] for i in sorted(keep)]
    return Needed(kept, count - len(kept), horizons, window=window)


def cut_short(
    needed: Needed, clause: Clause, decisions: Sequence[Decision], profile: Profile
) -> list[Role]:
    """The walks of ``decisions`` that might have decided otherwise on the whole page: the
    window of :func:`needed` left a release out before the walk found an eligible one."""
    out: list[Role] = []
    for role, horizon in needed.horizons.get(clause, {}).items():
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


def _floor(clause: Clause) -> Version | None:
    """A version at or below every version beyond the clause's bound (None: there is none)."""
    if clause.base is None or clause.kind == Kind.BAN:
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
    clause: Clause,
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

    clause: Clause
    profile: Profile
    now: datetime
    first_seen: Mapping[Version, datetime]
    others: SpecifierSet | None = None

    def __call__(self, release: Release) -> tuple[str | None, str | None]:
        """(reason, note): reason None when the release is eligible."""
        version = release.version
        if self.clause.is_known_bad(version):
            return f"{version} is known bad", None
        if self.clause.is_named(version):
            return f"{version} is the excluded version ({self.clause.spec})", None
        if self.others is not None:
            for spec in self.others:
                if not spec.contains(version, prereleases=True):
                    return f"{version} is kept out by {spec} on the same line", None
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
        # Neither an upload time nor a first sighting: the cooldown cannot be shown to have
        # passed, so the release waits.
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
        # An invalid requires-python makes the file unusable: pip ignores such a value, and
        # govern does not guess what it meant.
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
    platforms = profile.supported_platforms()
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
    clause: Clause,
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
    if clause.kind not in (Kind.CAP, Kind.PIN):
        return None
    seen = first_seen or {}
    times = [
        _utc(moment)
        for release in releases
        if clause.beyond(release.version)
        and not release.version.is_prerelease
        and not release.yanked
        and not clause.is_known_bad(release.version)
        and not clause.is_named(release.version)
        and (moment := release.upload_time or seen.get(release.version)) is not None
    ]
    return min(times, default=None)
