"""``python -m govern``: the same entry point as the ``govern`` console script."""

from __future__ import annotations

from govern.cli import run

if __name__ == "__main__":
    run()
