"""What every command's output shares, without Typer (``govern poll`` loads no Typer)."""

from __future__ import annotations

import enum
import json
import sys
from typing import Any


class ViewFormat(enum.StrEnum):
    """Output of ``govern track``, ``status``, ``history``, ``poll`` and ``verify``."""

    HUMAN = "human"
    JSON = "json"


def print_json(document: dict[str, Any]) -> None:
    """One JSON document on standard output."""
    sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")
