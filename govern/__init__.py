"""govern: dependency-pin governance for Python projects.

Records every exclusion (``!=``, caps, pins, bans) in a repository's requirement
sources with its reason, watches the package index for releases that would fix it,
verifies candidates in CI and proposes narrow relaxations.
"""

from __future__ import annotations

__version__ = "0.1.0"
