"""``govern audit --format github``: GitHub Actions workflow commands, one per finding.

Notes: docs/internals.md#output.
"""

from __future__ import annotations

from collections.abc import Mapping

from govern.output import summary_line
from govern.policy.model import Finding, Severity
from govern.report import AuditReport

COMMANDS: Mapping[Severity, str] = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "notice",
    Severity.OFF: "notice",
}
"""The workflow command for each severity."""


def escape_data(text: str) -> str:
    """Escape a command's message: ``%``, CR and LF (``%`` first)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value: the message escapes plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(finding: Finding) -> str:
    """The workflow command of one finding; a hint goes on a second message line."""
    properties: list[tuple[str, str]] = []
    if finding.source:
        properties.append(("file", finding.source))
        if finding.line > 0:
            properties.append(("line", str(finding.line)))
            if finding.column is not None and finding.column > 0:
                properties.append(("col", str(finding.column)))
    properties.append(("title", f"govern {finding.rule}"))
    message = finding.message
    if finding.hint:
        message = f"{message}\nHint: {finding.hint}"
    props = ",".join(f"{name}={escape_property(value)}" for name, value in properties)
    return f"::{COMMANDS[finding.severity]} {props}::{escape_data(message)}"


def render(report: AuditReport, *, color: bool = False) -> str:
    """Render ``report`` as workflow commands plus a summary line (``color`` is ignored)."""
    del color
    lines = [command(finding) for finding in report.findings]
    lines.append(f"govern: {summary_line(report)}")
    return "\n".join(lines) + "\n"
