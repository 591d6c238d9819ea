"""The index rules of ``govern audit --online``: what the package index says of each exclusion.

Notes: docs/commands/audit.md#govern-audit---online.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from packaging.version import Version

from govern.exclusions.clause import Clause
from govern.exclusions.model import Exclusion, Kind, SubKind
from govern.index.candidates import candidates, nearest_published, stale_since
from govern.index.model import Fetched, FetchFailed, FetchResult, Release, releases
from govern.index.parsing import parse_version
from govern.index.profiles import Profile
from govern.policy.engine import Emitter
from govern.policy.model import Finding, Policy

WATCHED = (Kind.NOT_EQUAL, Kind.CAP, Kind.PIN)


def watched(exclusion: Exclusion) -> bool:
    """Whether the index has something to say about ``exclusion``."""
    return (
        exclusion.kind in WATCHED
        and exclusion.sub_kind is not SubKind.SENTINEL
        and exclusion.package != "python"
    )


def evaluate_online(
    policy: Policy,
    exclusions: Sequence[Exclusion],
    pages: Mapping[str, FetchResult],
    profiles: Sequence[Profile],
    *,
    now: datetime,
    stale_days: int = 90,
) -> list[Finding]:
    """The index rules' findings for ``exclusions``, given each package's page."""
    emit = Emitter(policy)
    days = int(policy.option("stale-cap", "days", stale_days))
    unreachable: set[str] = set()
    for exclusion in exclusions:
        if not watched(exclusion):
            continue
        outcome = pages.get(exclusion.package)
        if outcome is None:
            continue
        if isinstance(outcome, FetchFailed):
            if exclusion.package not in unreachable:
                unreachable.add(exclusion.package)
                emit.exclusion(
                    "index-unreachable",
                    exclusion,
                    f"{exclusion.package}: the index could not be asked ({outcome.reason})",
                )
            continue
        if not isinstance(outcome, Fetched):
            continue
        found = releases(outcome.page.files)
        published = {release.version for release in found}
        for raw in outcome.page.versions:  # the parser keeps PEP 440 ones; parsed again here
            version = parse_version(raw)
            if version is not None:
                published.add(version)
        clause = Clause.of(exclusion)
        _unknown(emit, exclusion, published)
        _yanked(emit, exclusion, found)
        if exclusion.kind is Kind.CAP:
            since = stale_since(clause, found)
            if since is not None and (now - since).days > days:
                emit.exclusion(
                    "stale-cap",
                    exclusion,
                    f"{exclusion.package} {exclusion.clause}: releases above the cap since "
                    f"{since.date()} ({(now - since).days} days; the policy allows {days})",
                )
        for profile in profiles:
            eligible = [d for d in candidates(clause, found, profile, now=now) if d.eligible]
            if eligible:
                best = max(eligible, key=lambda d: d.version)
                emit.exclusion(
                    "fix-available",
                    exclusion,
                    f"{exclusion.package} {best.version} is a candidate for "
                    f"{exclusion.clause} on profile {profile.name}",
                )
    return emit.findings


def _exact(exclusion: Exclusion) -> Version | None:
    if exclusion.operator not in ("!=", "==") or exclusion.version.endswith(".*"):
        return None
    return parse_version(exclusion.version)  # None past the integer-string limit too


def _unknown(emit: Emitter, exclusion: Exclusion, published: set[Version]) -> None:
    version = _exact(exclusion)
    if version is None or exclusion.sub_kind is SubKind.IMPOSSIBLE or version in published:
        return
    nearest = nearest_published(exclusion.version, sorted(published))
    emit.exclusion(
        "unknown-version",
        exclusion,
        f"{exclusion.package} {exclusion.version} was never published",
        hint=f"did you mean {nearest}?" if nearest is not None else None,
    )


def _yanked(emit: Emitter, exclusion: Exclusion, found: Sequence[Release]) -> None:
    version = _exact(exclusion)
    if version is None or exclusion.kind is not Kind.NOT_EQUAL:
        return
    for release in found:
        if release.version == version and release.yanked:
            why = release.yanked_reason
            emit.exclusion(
                "yanked-excluded",
                exclusion,
                f"{exclusion.package} {version} was yanked"
                + (f" ({why})" if why else "")
                + "; installers skip it without the exclusion",
            )
