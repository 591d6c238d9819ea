"""An exclusion's clause (``<14.1.0``, ``!=1.19.0``) and its known-bad versions, parsed once.

The store, the watcher and the index rules share this one value: it is validated and its
:mod:`packaging` parts are built when it is made, so judging thousands of releases reads them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from packaging.specifiers import InvalidSpecifier, Specifier
from packaging.version import Version

from govern.exclusions.model import Kind

if TYPE_CHECKING:
    from govern.exclusions.model import Exclusion

__all__ = ["Clause"]

_KINDS = {str(kind): kind for kind in Kind}  # a Kind finds itself too (it is its text)
_OPERATORS = frozenset({"!=", "<", "<=", "~=", "==", "==="})

_Parts = tuple[Specifier, Version | None, tuple[Specifier, ...], Specifier | None]


@dataclass(frozen=True, slots=True)
class Clause:
    """One excluding clause, its kind and its known-bad versions, with its parsed parts.

    ``kind`` is one of ``not-equal``, ``cap``, ``pin``, ``ban`` (as
    :func:`govern.exclusions.classify.classify` assigns them; the text of a :class:`Kind`
    is taken too); ``version`` is as in the clause (``14.1.0``, ``1.2.*``). ``known_bad``
    versions (the annotation's ``bad=``, failed verifications) are never candidates;
    entries that name no PEP 440 version are ignored. An inconsistent clause raises
    :class:`ValueError`. Two clauses are equal (and hash alike) by these four fields.

    Parsed when made: ``spec`` (the :class:`~packaging.specifiers.Specifier`), ``base``
    (the version without ``.*``; None when it is not PEP 440), ``bad_specs`` (each known-bad
    version as ``==V``) and ``named`` (``<V``: the version the cap names, as ``==V``).
    """

    kind: Kind
    operator: str
    version: str
    known_bad: tuple[str, ...] = ()
    spec: Specifier = field(init=False, repr=False, compare=False)
    base: Version | None = field(init=False, repr=False, compare=False)
    bad_specs: tuple[Specifier, ...] = field(init=False, repr=False, compare=False)
    named: Specifier | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kind = _kind(self.kind)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "known_bad", tuple(self.known_bad))
        if self.operator not in _OPERATORS:
            raise ValueError(f"{self.operator!r} is not an excluding operator")
        if (kind == Kind.NOT_EQUAL) != (self.operator == "!="):
            raise ValueError(f"{self.operator}{self.version} cannot be a {kind}")
        spec, base, bad_specs, named = _parts(self.operator, self.version, self.known_bad)
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "bad_specs", bad_specs)
        object.__setattr__(self, "named", named)

    @classmethod
    def parse(cls, text: str, kind: Kind | str, *, known_bad: Iterable[str] = ()) -> Clause:
        """The clause ``text`` (``<14.1.0``, ``< 14.1.0``: normalised as
        :class:`~packaging.specifiers.Specifier` reads it) of a ``kind``.

        Raises :class:`ValueError` (which :class:`~packaging.specifiers.InvalidSpecifier`
        is) for anything that cannot be judged. Equal arguments give the same instance.
        """
        return _parse(text, str(kind), tuple(known_bad))

    @classmethod
    def of(cls, exclusion: Exclusion, *, known_bad: Iterable[str] = ()) -> Clause:
        """The clause of a recorded exclusion, with extra known-bad versions (the
        exclusion's own first, each once)."""
        bad = dict.fromkeys((*exclusion.bad_versions, *known_bad))
        return cls(exclusion.kind, exclusion.operator, exclusion.version, tuple(bad))

    @property
    def text(self) -> str:
        """The clause as text, e.g. ``<14.1.0``."""
        return f"{self.operator}{self.version}"

    def keeps_out(self, version: Version) -> bool:
        """Whether the clause keeps ``version`` out.

        The :class:`~packaging.specifiers.Specifier`'s verdict (pre-releases judged like
        finals), so a pin keeps out everything but V and ``==1.2.*`` everything outside the
        series; ``~=V`` by its implied ceiling only (its ``>=V`` half is a floor, and floors
        are not exclusions): ``~=1.4.2`` keeps out 1.5 but not 1.4.1.
        """
        if self.spec.operator == "~=":
            assert self.base is not None  # ~= always has a PEP 440 version
            return version >= self.base and not self.spec.contains(version, prereleases=True)
        return not self.spec.contains(version, prereleases=True)

    def beyond(self, version: Version) -> bool:
        """Whether ``version`` lies beyond the bound: the releases a walk looks at
        (:mod:`govern.index.candidates`: none for a ban; for not-equal, the versions above
        V it lets in; otherwise the versions it keeps out above V)."""
        op = self.spec.operator
        if self.kind == Kind.BAN:
            return False
        if self.kind == Kind.NOT_EQUAL:
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

    @property
    def settled(self) -> bool:
        """Whether the clause is a ``!=V`` whose V is known bad: it admits every release
        after the ones it keeps out, so relaxing it would change nothing (no candidates)."""
        if self.kind != Kind.NOT_EQUAL:
            return False
        if self.version in self.known_bad:
            return True  # ``!=1.2.*`` with ``bad=1.2.*``, or the exact text
        return (
            self.base is not None
            and self.spec.version == str(self.base)
            and (self.is_known_bad(self.base))
        )

    def is_known_bad(self, version: Version) -> bool:
        """Whether ``version`` is known bad (matched as ``==V``: local versions too)."""
        return any(bad.contains(version, prereleases=True) for bad in self.bad_specs)

    def is_named(self, version: Version) -> bool:
        """Whether ``version`` is the one a ``<V`` cap names (it stays out; never for
        another operator)."""
        return self.named is not None and self.named.contains(version, prereleases=True)


def _kind(kind: Kind | str) -> Kind:
    found = _KINDS.get(kind)
    if found is None:
        raise ValueError(f"unknown exclusion kind {kind!r}")
    return found


@functools.lru_cache(maxsize=4096)
def _parse(text: str, kind: str, known_bad: tuple[str, ...]) -> Clause:
    spec = Specifier(text)
    return Clause(_kind(kind), spec.operator, spec.version, known_bad)


@functools.lru_cache(maxsize=1024)
def _parts(operator: str, version: str, known_bad: tuple[str, ...]) -> _Parts:
    """A clause's parsed parts (shared by equal clauses: a poll makes thousands)."""
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
    return spec, base, tuple(bad), named
