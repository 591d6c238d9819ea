"""The exclusion reference: which clause, of which line, of which source, of which repository.

One frozen value that every read model holds (``ref``) instead of re-declaring these
fields; :func:`govern.store.refs.from_row` builds it from a stored row.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExclusionRef:
    """Where one exclusion lives and what it says, under its stable key."""

    key: str  # the audit's stable id (govern.exclusions.model.exclusion_key)
    repository: str  # the repository's stable name
    source: str  # the file, relative to the repository root (POSIX)
    line: int  # 1-based, where the requirement starts
    package: str  # canonical (PEP 503); "python" for requires-python
    requirement: str  # the requirement as written
    clause: str  # normalized, e.g. "!=14.1.0"
    marker: str | None = None
    group: str | None = None  # the pyproject table (extras, dependency groups)
