"""httpx, imported without its command-line client: ``from govern.index.lean import httpx``.

httpx's ``__init__`` imports ``httpx._main`` (click and rich, about 60 ms, half of httpx's
import; encode/httpx discussion 3523, PR 3547) whenever they are installed, and
``govern poll`` pays every millisecond of its start-up (``bench/poll.py``). The CLI
module is stood in for while httpx loads, and ``httpx.main`` then loads the real one
when it is called. Nothing else of httpx changes; an httpx imported earlier is left alone.
"""

from __future__ import annotations

import sys
import types
from typing import Any


def _import_httpx_without_its_cli() -> None:
    if "httpx" in sys.modules:
        return
    stand_in = types.ModuleType("httpx._main")

    def main(*args: Any, **kwargs: Any) -> Any:
        """httpx's command-line client, loaded when it is asked for."""
        if sys.modules.get("httpx._main") is stand_in:  # pragma: no cover (removed below)
            del sys.modules["httpx._main"]
        try:
            from httpx._main import main as real
        except ImportError:  # as httpx says when its CLI's dependencies are missing
            print(
                "The httpx command line client could not run because the required "
                "dependencies were not installed.\nMake sure you've installed "
                "everything with: pip install 'httpx[cli]'"
            )
            sys.exit(1)
        return real(*args, **kwargs)

    stand_in.main = main  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = stand_in
    try:
        import httpx  # noqa: F401
    finally:
        if sys.modules.get("httpx._main") is stand_in:
            del sys.modules["httpx._main"]


_import_httpx_without_its_cli()

import httpx as httpx  # noqa: E402 -- after the stand-in; re-exported
