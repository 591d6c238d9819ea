"""``govern audit --format markdown``: a pull-request comment (GitHub-flavoured Markdown).

Notes: docs/internals.md#output.
"""

from __future__ import annotations

import html
import re

from govern.exclusions.model import Exclusion, Link
from govern.output import summary_line
from govern.policy.model import Finding
from govern.report import AuditReport
from govern.text import code_span, visible

MARKER = "<!-- govern-audit -->"
"""The first line of the comment, for finding it again."""

_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_NEWLINES = re.compile(r"\r\n|\r|\n")


def _controls(text: str) -> str:
    """Show control characters and bidirectional controls (not tab and newlines) as
    ``<U+XXXX>``, the form used in the terminal and on the pages."""
    return visible(text, lines=True)


def cell(text: str | None) -> str:
    """A table cell of plain text: HTML and ``|`` escaped, newlines as ``<br>``."""
    if not text:
        return ""
    escaped = html.escape(_controls(text.strip()), quote=False).replace("|", "\\|")
    # A zero-width space after @ (as Renovate does): a reason naming a person must not
    # ping them on every push.
    escaped = _MENTION.sub("@&#8203;", escaped)
    return _NEWLINES.sub("<br>", escaped)


def code(text: str | None) -> str:
    """A table cell in a code span (``|`` escaped, which GFM tables require there too)."""
    if not text:
        return ""
    # The fence is longer than any backtick run inside: ``a``b`` cannot close it early.
    return code_span(_controls(" ".join(text.split())).replace("|", "\\|"))


def _link(link: Link) -> str:
    label = cell(link.ref or str(link)).replace("[", "\\[").replace("]", "\\]")
    url = link.url
    if url and url.startswith(("https://", "http://")):
        target = "".join(
            {" ": "%20", "(": "%28", ")": "%29", "|": "%7C", "<": "%3C", ">": "%3E"}.get(c, c)
            for c in url
        )
        return f"[{label}]({target})"
    return label


def _location(source: str, line: int) -> str:
    return code(f"{source}:{line}" if line > 0 else source)


def _finding_row(finding: Finding) -> str:
    message = finding.message
    if finding.hint:
        message = f"{message}\nHint: {finding.hint}"
    cells = (
        str(finding.severity),
        code(finding.rule),
        _location(finding.source, finding.line),
        code(finding.package),
        cell(message),
    )
    return "| " + " | ".join(cells) + " |"


def _exclusion_row(exclusion: Exclusion) -> str:
    annotation = exclusion.annotation
    cells = (
        code(exclusion.package),
        code(exclusion.clause),
        f"{exclusion.kind}/{exclusion.sub_kind}",
        _location(exclusion.source, exclusion.line),
        cell(annotation.reason) or "*none*",
        ", ".join(_link(link) for link in annotation.links),
    )
    return "| " + " | ".join(cells) + " |"


def render(report: AuditReport, *, color: bool = False) -> str:
    """Render ``report`` as a Markdown pull-request comment (``color`` is ignored)."""
    del color
    lines = [
        MARKER,
        "## govern audit",
        "",
        f"**{summary_line(report)}** (policy {code(report.policy.name)})",
        "",
    ]
    if report.findings:
        lines += [
            "| Severity | Rule | Location | Package | Message |",
            "| --- | --- | --- | --- | --- |",
        ]
        lines += [_finding_row(finding) for finding in report.findings]
    else:
        lines.append("No findings.")
    if report.exclusions:
        lines += [
            "",
            "<details>",
            f"<summary>Exclusions ({len(report.exclusions)})</summary>",
            "",
            "| Package | Clause | Kind | Source | Reason | Links |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        lines += [_exclusion_row(exclusion) for exclusion in report.exclusions]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
