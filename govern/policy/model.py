"""Severities, rules, findings and policies (frozen values)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


class Severity(enum.StrEnum):
    """How serious a finding is; ``off`` switches a rule off."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    OFF = "off"

    @property
    def rank(self) -> int:
        """Higher is more serious (off is 0)."""
        return _RANK[self]


_RANK = {Severity.OFF: 0, Severity.INFO: 1, Severity.WARNING: 2, Severity.ERROR: 3}


@dataclass(frozen=True, slots=True)
class Rule:
    """A check with an id, a default severity and the advice that fixes it."""

    id: str
    severity: Severity
    summary: str
    fix: str


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem found by a rule, located in a source."""

    rule: str
    severity: Severity
    source: str
    line: int
    message: str
    package: str | None = None
    exclusion: str | None = None  # the exclusion id, when the finding is about one
    column: int | None = None
    excerpt: str | None = None
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class RuleSettings:
    """A policy's settings for one rule."""

    severity: Severity
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class Policy:
    """A named set of rule settings (``policies/*.toml``)."""

    name: str
    description: str
    rules: Mapping[str, RuleSettings]
    fail_on: Severity = Severity.ERROR

    def severity(self, rule: str) -> Severity:
        """The severity this policy gives ``rule`` (off when it is not listed)."""
        settings = self.rules.get(rule)
        return settings.severity if settings else Severity.OFF

    def option(self, rule: str, name: str, default: Any) -> Any:
        """A rule option, e.g. the kinds ``missing-reason`` applies to."""
        settings = self.rules.get(rule)
        if settings is None:
            return default
        return settings.options.get(name, default)
