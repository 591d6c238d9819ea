"""Renderers for ``govern audit`` reports: human, JSON, SARIF, GitHub and Markdown.

Every renderer is a pure function ``render(report, *, color=False) -> str``; only the
CLI writes the result anywhere. :func:`render` picks one by :class:`OutputFormat` and
imports it lazily, so that ``govern audit`` pays only for the format it prints.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from govern.report import AuditReport

__all__ = ["OutputFormat", "render", "shown_requirement", "summary_line", "use_color", "write"]

REQUIREMENT_SHOWN = 500
"""Characters of a requirement that a report shows for each of its exclusions."""


def shown_requirement(text: str) -> str:
    """A requirement as a report shows it: a very long line is cut, with its length.

    Every exclusion of a line repeats the line: 8,000 clauses on one line would
    otherwise print the 80 kB line 8,000 times (640 MB).
    """
    if len(text) <= REQUIREMENT_SHOWN:
        return text
    return f"{text[:REQUIREMENT_SHOWN]}… ({len(text):,} characters)"


class OutputFormat(enum.StrEnum):
    """The formats ``govern audit --format`` can print."""

    HUMAN = "human"
    JSON = "json"
    SARIF = "sarif"
    GITHUB = "github"
    MARKDOWN = "markdown"


def render(report: AuditReport, fmt: OutputFormat | str, *, color: bool = False) -> str:
    """Render ``report`` in ``fmt``; ``color`` only matters for the human format.

    ``fmt`` may also be the format's string value (``"json"``); an unknown value
    raises :class:`ValueError`.
    """
    fmt = OutputFormat(fmt)
    if fmt is OutputFormat.HUMAN:
        from govern.output import human

        return human.render(report, color=color)
    if fmt is OutputFormat.JSON:
        from govern.output import json_report

        return json_report.render(report)
    if fmt is OutputFormat.SARIF:
        from govern.output import sarif

        return sarif.render(report)
    if fmt is OutputFormat.GITHUB:
        from govern.output import github

        return github.render(report)
    from govern.output import markdown

    return markdown.render(report)


def write(report: AuditReport, fmt: OutputFormat, stream: TextIO, *, color: bool = False) -> None:
    """Write ``report`` to ``stream``; JSON is streamed record by record.

    A large audit is megabytes of JSON: streaming keeps neither the whole document nor
    the whole string in memory.
    """
    if fmt is OutputFormat.JSON:
        from govern.output import json_report

        for chunk in json_report.iter_render(report):
            stream.write(chunk)
        return
    stream.write(render(report, fmt, color=color))


def use_color(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Whether to colour output written to ``stream``.

    ``FORCE_COLOR`` (non-empty) forces colour on. Otherwise colour is used only when
    ``NO_COLOR`` is unset or empty (https://no-color.org), ``TERM`` is not ``dumb``,
    and ``stream`` is a terminal.
    """
    if environ.get("FORCE_COLOR"):
        return True
    if environ.get("NO_COLOR"):
        return False
    if environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed or not a real stream
        return False


def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural or word + 's')}"


def summary_line(report: AuditReport) -> str:
    """One line of totals, e.g. ``2 sources, 7 requirements, 3 exclusions; 1 error, ...``."""
    counts = report.severity_counts()
    return (
        f"{_plural(len(report.sources), 'source')}, "
        f"{_plural(report.requirement_count, 'requirement')}, "
        f"{_plural(len(report.exclusions), 'exclusion')}; "
        f"{_plural(counts['error'], 'error')}, "
        f"{_plural(counts['warning'], 'warning')}, "
        f"{counts['info']} info"
    )
