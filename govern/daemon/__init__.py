"""``govern daemon``: the scheduled service (APScheduler), polling as often as it is told.

Notes: docs/internals.md#daemon.
"""

from __future__ import annotations
