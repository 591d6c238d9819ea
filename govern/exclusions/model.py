"""Exclusion records and their annotations (frozen values)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date

from govern.exclusions.states import Kind as Kind  # closed sets live in states.py
from govern.exclusions.states import SubKind as SubKind
from govern.sources.model import Problem


@dataclass(frozen=True, slots=True)
class Link:
    """A reference found in a reason: a URL, an issue, an advisory."""

    kind: str  # url, github, launchpad, bug, ghsa, cve, issue
    ref: str  # as written, e.g. "#123", "bug 1593641", "GHSA-93xj-8mrv-444m"
    url: str | None = None

    def __str__(self) -> str:
        return self.url or self.ref


@dataclass(frozen=True, slots=True)
class Annotation:
    """What is known about an exclusion, from comments and configuration."""

    reason: str | None = None
    links: tuple[Link, ...] = ()
    bad_versions: tuple[str, ...] = ()
    owner: str | None = None
    review_by: date | None = None
    verify: str | None = None
    profiles: tuple[str, ...] = ()
    suppress: frozenset[str] = frozenset()
    # ``verified=``: the evidence govern wrote when it relaxed the line (its own field, never
    # part of the reason).
    evidence: tuple[str, ...] = ()
    strategy: str | None = None  # how its relaxation is written (``strategy=``; None: default)
    problems: tuple[Problem, ...] = field(default=())


def exclusion_key(
    repository: str,
    source: str,
    package: str,
    marker: str | None,
    clause: str,
    *,
    group: str | None = None,
) -> str:
    """The stable id of an exclusion: line numbers move, keys do not.

    ``group`` (a pyproject table: two extras may cap the same package) takes part
    only when set, so requirements-file keys are exactly docs/design.md's.
    """
    parts = (repository, source, package, marker or "", clause, *([group] if group else []))
    raw = "\x1f".join(parts)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Exclusion:
    """One clause that keeps released versions out, with where it lives and why."""

    id: str
    repository: str
    source: str
    line: int
    column: int
    package: str  # canonical name; "python" for requires-python
    requirement: str  # the requirement as written
    marker: str | None
    clause: str  # normalized, e.g. "!=14.1.0"
    operator: str
    version: str
    kind: Kind
    sub_kind: SubKind
    group: str | None
    annotation: Annotation
    bad_versions: tuple[str, ...] = ()
