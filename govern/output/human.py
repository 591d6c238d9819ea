"""``govern audit`` for people: a report grouped by source, with carets under problems.

Notes: docs/internals.md#output.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from govern.exclusions.model import Exclusion
from govern.output import shown_requirement, summary_line
from govern.output.style import Style
from govern.policy.model import Finding
from govern.report import AuditReport
from govern.sources.model import Source
from govern.text import visible

REASON_WIDTH = 100
"""Reasons longer than this many characters are cut, with an ellipsis."""

_SPACE = re.compile(r"\s+")


def _clean(text: str) -> str:
    """Show characters that drive the terminal or hide and reorder text (ANSI escapes,
    bidirectional controls) as ``<U+XXXX>``; tabs and newlines are left to the caller."""
    return visible(text, lines=True)


def one_line(text: str) -> str:
    """Text from a repository on one line: whitespace collapsed, control characters escaped
    (a reason is anybody's text; it must not drive the terminal)."""
    return _clean(_SPACE.sub(" ", text).strip())


def truncate(text: str, width: int = REASON_WIDTH) -> str:
    """``text`` cut to ``width`` characters, with an ellipsis when cut."""
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def caret_line(excerpt: str, column: int) -> str:
    """The line that puts a ``^`` under ``column`` (1-based) of ``excerpt`` as displayed.

    Tabs in the excerpt are copied so that the caret lines up whatever the tab width;
    wide (East Asian) characters take two cells, combining marks none.
    """
    pad: list[str] = []
    for char in _clean(excerpt[: max(column - 1, 0)]):
        if char == "\t":
            pad.append("\t")
        elif unicodedata.combining(char):
            continue
        elif unicodedata.east_asian_width(char) in ("W", "F"):
            pad.append("  ")
        else:
            pad.append(" ")
    if column - 1 > len(excerpt):  # a caret past the end of the excerpt
        pad.append(" " * (column - 1 - len(excerpt)))
    return "".join(pad) + "^"


def _location(finding: Finding) -> str:
    parts = [finding.source or "<config>"]
    if finding.line > 0:
        parts.append(str(finding.line))
        if finding.column is not None:
            parts.append(str(finding.column))
    return ":".join(parts)


def _finding_lines(finding: Finding, style: Style) -> list[str]:
    message = "\n    ".join(_clean(part) for part in finding.message.splitlines() or [""])
    lines = [
        f"{style.bold(_clean(_location(finding)))}: "
        f"{style.severity(finding.severity, str(finding.severity))} {finding.rule}: {message}"
    ]
    if finding.excerpt and finding.column is not None:
        excerpt_lines = finding.excerpt.splitlines()
        excerpt = excerpt_lines[0] if excerpt_lines else ""
        if excerpt.strip():
            lines.append(f"    {_clean(excerpt)}")
            lines.append(
                f"    {style.severity(finding.severity, caret_line(excerpt, finding.column))}"
            )
    if finding.hint:
        lines.append(f"  hint: {one_line(finding.hint)}")
    return lines


def _exclusion_line(exclusion: Exclusion, style: Style) -> str:
    annotation = exclusion.annotation
    reason = (
        truncate(one_line(annotation.reason)) if annotation.reason else style.dim("(no reason)")
    )
    line = (
        f"  {exclusion.line:>4}  {one_line(shown_requirement(exclusion.requirement))}"
        f"  [{exclusion.kind}/{exclusion.sub_kind}]  {reason}"
    )
    if annotation.links:
        line += "  " + " ".join(one_line(str(link)) for link in annotation.links)
    if exclusion.bad_versions:
        line += "  " + style.dim("bad=" + ",".join(one_line(v) for v in exclusion.bad_versions))
    for evidence in annotation.evidence:
        line += "  " + style.dim("verified=" + truncate(one_line(evidence), 80))
    return line


def _group(
    header: str,
    exclusions: Iterable[Exclusion],
    findings: Iterable[Finding],
    style: Style,
) -> list[str]:
    lines = [header]
    lines.extend(_exclusion_line(exclusion, style) for exclusion in exclusions)
    for finding in findings:
        lines.extend(_finding_lines(finding, style))
    return lines


def _header(source: Source, style: Style) -> str:
    count = len(source.entries)
    if source.lock is not None:  # a lock: its pins are no exclusions
        pins = "pin" if count == 1 else "pins"
        made = source.lock.tool + (
            f" {source.lock.tool_version}" if source.lock.tool_version else ""
        )
        of = ", ".join(source.lock.inputs) or "no intent found"
        return (
            f"{style.bold(_clean(source.path))} (lock: {source.format} by {_clean(made)}, "
            f"{count} {pins}, resolves {_clean(of)})"
        )
    noun = "requirement" if count == 1 else "requirements"
    return f"{style.bold(_clean(source.path))} ({source.format}, {count} {noun})"


def render(report: AuditReport, *, color: bool = False) -> str:
    """Render ``report`` for a terminal; ANSI colour only when ``color`` is true."""
    style = Style(color)
    # Grouped once: a scan per source would be quadratic on a large tree.
    exclusions: dict[str, list[Exclusion]] = {s.path: [] for s in report.sources}
    findings: dict[str, list[Finding]] = {s.path: [] for s in report.sources}
    stray_exclusions: list[Exclusion] = []
    stray_findings: list[Finding] = []
    for exclusion in report.exclusions:
        exclusions.get(exclusion.source, stray_exclusions).append(exclusion)
    for finding in report.findings:
        findings.get(finding.source, stray_findings).append(finding)
    blocks: list[list[str]] = [
        _group(_header(s, style), exclusions[s.path], findings[s.path], style)
        for s in report.sources
    ]
    if stray_exclusions or stray_findings:
        blocks.append(
            _group(style.bold("other locations"), stray_exclusions, stray_findings, style)
        )
    blocks.append([summary_line(report)])
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"
