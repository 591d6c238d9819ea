"""PEP 508 parsing shared by the readers: packaging's error, its caret, and a hint."""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement

EQUALS_HINT = "did you mean ==? A version pin is written name==1.0"
TWO_REQUIREMENTS_HINT = "two requirements on one line? pip reads one requirement per line"


def parse_requirement(text: str) -> tuple[Requirement | None, tuple[int, str] | None]:
    """Parse with packaging; on failure return (0-based caret offset, message).

    The offset is where packaging draws its own caret (the end of the error span).
    """
    try:
        return Requirement(text), None
    except InvalidRequirement as exc:
        cause = exc.__cause__
        span = getattr(cause, "span", None)
        message = getattr(cause, "message", None) or (str(exc).splitlines() or [""])[0]
        offset = span[1] if isinstance(span, tuple) and len(span) == 2 else 0
        return None, (max(0, min(int(offset), len(text))), str(message) or "invalid requirement")


def requirement_hint(text: str, offset: int) -> str | None:
    """Advice for the requirement mistakes people make most (``pkg=1.0``, two on a line)."""
    head = text.split(";", 1)[0].split("@", 1)[0]
    if "://" not in head and "=" in re.sub(r"(===|==|!=|<=|>=|~=)", "", head):
        return EQUALS_HINT
    rest = text[offset:].strip()
    if rest and " " in text.strip():
        try:
            Requirement(rest)
        except InvalidRequirement:
            return None
        return TWO_REQUIREMENTS_HINT
    return None
