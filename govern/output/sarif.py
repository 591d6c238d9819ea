"""``govern audit --format sarif``: SARIF 2.1.0 for code-scanning tools.

Notes: docs/internals.md#output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from govern import __version__
from govern.policy.model import Finding, Severity
from govern.policy.rules import RULES
from govern.report import AuditReport

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
"""The ``$schema`` of the log."""

SRCROOT = "%SRCROOT%"
"""The ``uriBaseId`` that artifact locations are relative to."""

FINGERPRINT = "governExclusion/v1"
"""The ``partialFingerprints`` key holding an exclusion's stable id."""

LEVELS: Mapping[Severity, str] = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
    Severity.OFF: "none",
}
"""SARIF ``level`` for each severity (§3.27.10)."""


def _descriptor(rule_id: str, report: AuditReport) -> dict[str, Any]:
    """The reportingDescriptor (§3.49) of ``rule_id``."""
    rule = RULES.get(rule_id)
    if rule is not None:
        descriptor: dict[str, Any] = {
            "id": rule_id,
            "shortDescription": {"text": rule.summary or rule_id},
            "defaultConfiguration": {"level": LEVELS[rule.severity]},
        }
        if rule.fix:
            descriptor["help"] = {"text": rule.fix}
        return descriptor
    # A rule id the catalogue does not know (a finding made by another tool's code):
    # the id describes itself and the policy of this run gives the level.
    severity = report.policy.severity(rule_id)
    if severity is Severity.OFF:
        severity = next(f.severity for f in report.findings if f.rule == rule_id)
    return {
        "id": rule_id,
        "shortDescription": {"text": rule_id},
        "defaultConfiguration": {"level": LEVELS[severity]},
    }


def _result(finding: Finding, rule_index: int) -> dict[str, Any]:
    """The result (§3.27) of one finding."""
    text = finding.message
    if finding.hint:
        text = f"{text} Hint: {finding.hint}"
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": text},
    }
    if finding.source:
        physical: dict[str, Any] = {
            "artifactLocation": {"uri": quote(finding.source, safe="/"), "uriBaseId": SRCROOT}
        }
        if finding.line > 0:
            region: dict[str, Any] = {"startLine": finding.line}
            if finding.column is not None and finding.column > 0:
                region["startColumn"] = finding.column
            physical["region"] = region
        result["locations"] = [{"physicalLocation": physical}]
    if finding.exclusion:
        result["partialFingerprints"] = {FINGERPRINT: finding.exclusion}
    return result


def to_log(report: AuditReport) -> dict[str, Any]:
    """The SARIF log (§3.13) of ``report`` as a JSON-ready ``dict``."""
    rule_ids = sorted({finding.rule for finding in report.findings})
    index = {rule_id: i for i, rule_id in enumerate(rule_ids)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "govern",
                "version": __version__,
                "rules": [_descriptor(rule_id, report) for rule_id in rule_ids],
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": [_result(finding, index[finding.rule]) for finding in report.findings],
    }
    if report.root.is_absolute():
        run["originalUriBaseIds"] = {SRCROOT: {"uri": report.root.as_uri().rstrip("/") + "/"}}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(report: AuditReport, *, color: bool = False) -> str:
    """Render ``report`` as a SARIF 2.1.0 log (``color`` is ignored)."""
    del color
    return json.dumps(to_log(report), indent=2, ensure_ascii=False) + "\n"
