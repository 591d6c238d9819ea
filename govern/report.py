"""The result of an audit: sources, exclusions, findings, and their summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from govern.exclusions.model import Exclusion
from govern.policy.model import Finding, Policy, Severity
from govern.sources.model import Source


@dataclass(frozen=True, slots=True)
class AuditReport:
    """Everything one ``govern audit`` run found, in a stable order."""

    root: Path
    sources: tuple[Source, ...]
    exclusions: tuple[Exclusion, ...]
    findings: tuple[Finding, ...]
    policy: Policy

    @property
    def requirement_count(self) -> int:
        """Requirements declared across all sources."""
        return sum(len(source.entries) for source in self.sources)

    def severity_counts(self) -> dict[str, int]:
        """Findings per severity, with every severity present (the JSON contract)."""
        counts = Counter(finding.severity for finding in self.findings)
        return {str(s): counts.get(s, 0) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)}

    def failed(self, fail_on: Severity) -> bool:
        """True when a finding is at or above ``fail_on`` (never, when it is off)."""
        if fail_on is Severity.OFF:
            return False
        return any(f.severity.rank >= fail_on.rank for f in self.findings)
