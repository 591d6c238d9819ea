"""Reading requirement sources into entries with positions.

A *source* is a file that declares requirements: a pip requirements or
constraints file, or a ``pyproject.toml``. Readers never raise on bad content:
every problem becomes a :class:`~govern.sources.model.Problem` on the source.
"""

from __future__ import annotations
