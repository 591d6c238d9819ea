"""``govern daemon``: the scheduled service (APScheduler), polling as often as it is told.

Notes: docs/internals.md, govern/daemon/__init__.py.
"""

from __future__ import annotations
