"""What the commands' output shares: the formats, one JSON document, the index asked."""

from __future__ import annotations

import enum
import json
import sys
from typing import TYPE_CHECKING, Any

from govern.redact import redact

if TYPE_CHECKING:
    from govern.index.pipconfig import IndexSettings


class ViewFormat(enum.StrEnum):
    """Output of ``govern track``, ``status``, ``history``, ``poll`` and ``verify``."""

    HUMAN = "human"
    JSON = "json"


def print_json(document: dict[str, Any]) -> None:
    """One JSON document on standard output."""
    sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")


def announce_index(settings: IndexSettings) -> None:
    """Say on stderr which index is asked, when nothing configured one (pip's default)."""
    if settings.pip_default:
        print(f"index: {redact(settings.index_url)} ({settings.source})", file=sys.stderr)
