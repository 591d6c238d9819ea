"""How a command's human output looks on a terminal: bold, dim, and the colours of
severities and states, only on a terminal and never with ``NO_COLOR`` set. Light: the
reading commands (status, dashboard) import it and nothing of the audit's renderers."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from govern.output import use_color

__all__ = ["Style", "terminal"]

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_SEVERITY_COLOR = {
    "error": "\x1b[31m",  # red
    "warning": "\x1b[33m",  # yellow
    "info": "\x1b[34m",  # blue
    "off": "",
}
# States, statuses and verdicts as a terminal shows them: green is done and good, red needs
# a person, yellow waits, cyan and blue move on their own.
_STATE_COLOR = {
    "held": "\x1b[33m",
    "candidate": "\x1b[36m",
    "found": "\x1b[36m",
    "verifying": "\x1b[34m",
    "verified": "\x1b[32m",
    "passed": "\x1b[32m",
    "proposed": "\x1b[35m",
    "relaxed": "\x1b[32m",
    "merged": "\x1b[32m",
    "failed": "\x1b[31m",
    "bad": "\x1b[31m",
    "errored": "\x1b[31m",
    "timed-out": "\x1b[31m",
    "overdue": "\x1b[31m",
    "removed": _DIM,
    "cancelled": _DIM,
    "settled": _DIM,
}


class Style:
    """Applies ANSI styles, or nothing when colour is off."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def _wrap(self, code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if self.color and code else text

    def bold(self, text: str) -> str:
        return self._wrap(_BOLD, text)

    def dim(self, text: str) -> str:
        return self._wrap(_DIM, text)

    def severity(self, severity: object, text: str) -> str:
        """``text`` in the colour of a severity (a :class:`govern.policy.model.Severity`)."""
        return self._wrap(_SEVERITY_COLOR.get(str(severity), ""), text)

    def state(self, text: str, state: object | None = None) -> str:
        """``text`` in the colour of ``state`` (default: the text is the state)."""
        return self._wrap(_STATE_COLOR.get(str(state if state is not None else text), ""), text)


def terminal(stream: TextIO | None = None) -> Style:
    """The style for a command's human output on ``stream`` (stdout): colour only on a
    terminal, never with ``NO_COLOR`` set (:func:`govern.output.use_color`)."""
    return Style(use_color(stream or sys.stdout, os.environ))
