"""The ``govern`` command line: the only code that prints or exits.

Notes: docs/internals.md#cli.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from govern.errors import GovernError


@dataclass
class _State:
    """Process-wide CLI flags (reset by tests)."""

    debug: bool = False
    # Set by a command that has written and closed everything but may leave threads it
    # abandoned (``govern daemon``): :func:`run` then skips the interpreter's teardown.
    fast_exit: bool = False


STATE = _State()


def _dispatch(argv: list[str] | None) -> None:
    args = sys.argv[1:] if argv is None else argv
    from govern.cli.app import COMMANDS, build

    # The global options take no value, so the first other word names the command (unless
    # --help comes first: that is the whole application's help).
    named = next((arg for arg in args if not arg.startswith("-") or arg in _HELP), None)
    build(named if named in COMMANDS else None)(args=args, prog_name="govern")


_HELP = ("--help", "-h")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point with the single error boundary."""
    try:
        _dispatch(argv)
    except GovernError as exc:
        if STATE.debug:
            _traceback(exc)
        print(f"govern: error: {exc.message}", file=sys.stderr)
        if exc.tip:
            print(f"Tip: {exc.tip}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("govern: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # the boundary: a bug must not look like exit 1 (findings)
        if STATE.debug:
            _traceback(exc)
        print(f"govern: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(
            "Tip: this is a bug in govern; report it with the traceback above."
            if STATE.debug
            else "Tip: this is a bug in govern; rerun as `govern --debug ...` for the traceback"
            " and report it.",
            file=sys.stderr,
        )
        sys.exit(2)


def _traceback(exc: BaseException) -> None:
    """Print ``exc``'s traceback (``--debug``), credentials hidden, for the exit 2 to follow."""
    import traceback

    from govern.redact import redact

    print(redact("".join(traceback.format_exception(exc))).rstrip("\n"), file=sys.stderr)


def run() -> None:
    """The process entry point (console script, ``python -m govern``): :func:`main`, then exit.

    When the command asks for it (``STATE.fast_exit``), the streams are flushed and the
    process ends with :func:`os._exit`: ``govern audit``, whose report is written and whose
    teardown would only free objects, and ``govern daemon``, since a job it cut off may
    leave a DNS lookup in asyncio's thread pool that the interpreter's exit would join. If
    flushing fails (a closed pipe), the normal exit handles it.
    """
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        if not STATE.fast_exit or not isinstance(exc.code, int | None):
            raise
        code = exc.code
    if not STATE.fast_exit:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        raise SystemExit(code) from None
    os._exit(code if isinstance(code, int) else 0)
