"""Classify specifier clauses into exclusion kinds (docs/design.md "exclusion").

Floors (``>=``, ``>``) keep nothing out that a project would want back, so they
are not exclusions. Everything else is, and ``keeps_out`` agrees with
:class:`packaging.specifiers.Specifier` on which versions that is.
"""

from __future__ import annotations

import functools

from packaging.specifiers import Specifier
from packaging.version import Version

from govern.exclusions.model import Kind, SubKind

# A pin on a version no release will reach is a ban: Home Assistant writes
# ``pycrypto==1000000000.0.0``. CalVer pins (20250516.0) stay well below this.
_BAN_MAJOR = 1_000_000_000
# A cap made of nines (<999, <9999) is a "no real ceiling" sentinel (Airflow's
# ``opentelemetry-proto<9999``); a year cap like <2026 is a real cap.
_SENTINEL_MIN_DIGITS = 3


def _release(version: str) -> Version | None:
    """The version of a clause without any wildcard, if PEP 440 valid."""
    try:
        return Version(version.removesuffix(".*"))
    except ValueError:  # InvalidVersion, or a number past the int-string limit
        return None


def _is_sentinel(version: Version) -> bool:
    major = str(version.release[0])
    if version.release[0] >= _BAN_MAJOR:
        return True
    return (
        len(major) >= _SENTINEL_MIN_DIGITS and set(major) == {"9"} and not any(version.release[1:])
    )


def classify(spec: Specifier) -> tuple[Kind, SubKind] | None:
    """The kind and sub-kind of one clause, or None for a floor."""
    op = spec.operator
    if op in (">=", ">"):
        return None  # the most common clause: answered before any version is parsed
    return _classify(op, spec.version)


# A pure function of the clause's two strings; the same clauses recur across a
# repository's files (and one audit reads thousands of them).
@functools.lru_cache(maxsize=4096)
def _classify(op: str, raw: str) -> tuple[Kind, SubKind] | None:
    version = _release(raw)
    wildcard = raw.endswith(".*")
    if op == "!=":
        return Kind.NOT_EQUAL, SubKind.WILDCARD if wildcard else SubKind.EXACT
    if op in (">=", ">"):
        return None
    if op == "===":
        return Kind.PIN, SubKind.ARBITRARY
    if op == "~=":
        return Kind.CAP, SubKind.COMPATIBLE
    if op == "==":
        if wildcard:
            return Kind.CAP, SubKind.WILDCARD
        if version is not None and version.release[0] >= _BAN_MAJOR:
            return Kind.BAN, SubKind.IMPOSSIBLE
        return Kind.PIN, SubKind.EXACT
    # "<" or "<="
    if (
        op == "<"
        and version is not None
        and not any(version.release)
        and version.epoch == 0
        and version.pre is None
        and version.dev is None
    ):
        return Kind.BAN, SubKind.IMPOSSIBLE  # <0: forbidden
    if version is not None and _is_sentinel(version):
        return Kind.CAP, SubKind.SENTINEL
    return Kind.CAP, SubKind.INCLUSIVE if op == "<=" else SubKind.EXACT


def keeps_out(spec: Specifier, version: Version) -> bool:
    """Whether the clause keeps ``version`` out (pre-releases judged like finals)."""
    return not spec.contains(version, prereleases=True)


def ceiling(spec: Specifier) -> Version | None:
    """The first version a cap-like clause keeps out from above, if it has one.

    ``<V`` and ``<=V`` have V; ``~=1.4.5`` has 1.5; ``==1.4.*`` has 1.5; a pin ``==V``
    has V itself (everything after it is out).
    """
    version = _release(spec.version)
    if version is None:
        return None
    op = spec.operator
    if op in ("<", "<=", "==", "==="):
        if op == "==" and spec.version.endswith(".*"):
            return _bump(version.release, len(version.release) - 1)
        return version
    if op == "~=":
        return _bump(version.release, len(version.release) - 2)
    return None


def _bump(release: tuple[int, ...], index: int) -> Version:
    index = max(index, 0)
    parts = list(release[: index + 1])
    parts[index] += 1
    return Version(".".join(str(p) for p in parts))
