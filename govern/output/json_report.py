"""``govern audit --format json``: the ``govern.audit/1`` contract of docs/contracts.md.

Fields of the contract are never renamed or removed; fields beyond it (``sub_kind``,
``column``, ``group``, ``verify``, ``profiles`` on exclusions, ``column`` and ``hint`` on
findings, ``policy`` and ``govern_version`` at the top) are additions. Output is
deterministic: the report's order, one top-level key and one record per line, no ASCII
escaping, a final newline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from govern import __version__
from govern.exclusions.model import Exclusion
from govern.output import shown_requirement
from govern.policy.model import Finding
from govern.report import AuditReport
from govern.sources.model import Source

SCHEMA = "govern.audit/1"
"""The value of the top-level ``schema`` field."""


def _source(source: Source) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "path": source.path,
        "format": str(source.format),
        "requirements": len(source.entries),
    }
    if source.lock is not None:  # a lock: what made it, and the intent it resolves
        shown["lock"] = {
            "tool": source.lock.tool,
            "tool_version": source.lock.tool_version,
            "command": source.lock.command,
            "inputs": list(source.lock.inputs),
        }
    return shown


def _exclusion(exclusion: Exclusion) -> dict[str, Any]:
    annotation = exclusion.annotation
    return {
        "id": exclusion.id,
        "package": exclusion.package,
        "source": exclusion.source,
        "line": exclusion.line,
        "requirement": shown_requirement(exclusion.requirement),
        "marker": exclusion.marker,
        "clause": exclusion.clause,
        "kind": str(exclusion.kind),
        "reason": annotation.reason,
        "links": [str(link) for link in annotation.links],
        "bad_versions": list(exclusion.bad_versions),
        "owner": annotation.owner,
        "review_by": annotation.review_by.isoformat() if annotation.review_by else None,
        # Additions beyond the contract.
        "sub_kind": str(exclusion.sub_kind),
        "column": exclusion.column,
        "group": exclusion.group,
        "verify": annotation.verify,
        "profiles": list(annotation.profiles),
    }


def _finding(finding: Finding) -> dict[str, Any]:
    return {
        "rule": finding.rule,
        "severity": str(finding.severity),
        "source": finding.source,
        "line": finding.line,
        "package": finding.package,
        "exclusion": finding.exclusion,
        "message": finding.message,
        # Additions beyond the contract.
        "column": finding.column,
        "hint": finding.hint,
    }


def _sections(report: AuditReport) -> list[tuple[str, Any]]:
    """The document's top-level keys in order; record lists are lazy iterators."""
    return [
        ("schema", SCHEMA),
        ("govern_version", __version__),
        ("policy", report.policy.name),
        ("sources", (_source(source) for source in report.sources)),
        ("exclusions", (_exclusion(exclusion) for exclusion in report.exclusions)),
        ("findings", (_finding(finding) for finding in report.findings)),
        ("summary", _summary(report)),
    ]


def to_document(report: AuditReport) -> dict[str, Any]:
    """The audit as a JSON-ready ``dict`` (what :func:`render` serializes)."""
    return {
        key: list(value) if isinstance(value, Iterator) else value
        for key, value in _sections(report)
    }


def _summary(report: AuditReport) -> dict[str, Any]:
    return {
        "sources": len(report.sources),
        "requirements": report.requirement_count,
        "exclusions": len(report.exclusions),
        "findings": report.severity_counts(),
    }


def render(report: AuditReport, *, color: bool = False) -> str:
    """Render ``report`` as ``govern.audit/1`` JSON (``color`` is ignored).

    One top-level key per line and one record per line: readable, diffable and
    greppable, and encoded by the C encoder (``indent=`` would force the slower
    pure-Python one).
    """
    del color
    return "".join(iter_render(report))


def iter_render(report: AuditReport) -> Iterator[str]:
    """The JSON of :func:`render` in chunks, one record at a time."""
    sections = _sections(report)
    yield "{\n"
    for index, (key, value) in enumerate(sections):
        yield f"{_dumps(key)}: "
        if isinstance(value, Iterator):
            first = True
            for item in value:
                yield ("[\n" if first else ",\n") + _dumps(item)
                first = False
            yield "[]" if first else "\n]"
        else:
            yield _dumps(value)
        yield ",\n" if index < len(sections) - 1 else "\n}\n"


# One encoder for every record: json.dumps with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, check_circular=False)  # records are trees


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)  # json.dumps(value, ensure_ascii=False)
