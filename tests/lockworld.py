"""What the lock tests share: a project capping a CuPy-like package, and the environment its
owner ran the real lock tools with (only the local index, no user configuration)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

UV = shutil.which("uv") or str(Path(sys.executable).parent / "uv")

PYPROJECT = """\
[project]
name = "app"
version = "0.1"
requires-python = ">=3.11"
dependencies = [
    # 14.1.0 imports a module nobody ships (cupy/cupy#9963)
    "cupy-demo<14.1.0",
    "helper-demo<2",
]
"""


def tool_env(index_url: str, home: Path) -> dict[str, str]:
    """What the repository's owner ran the tools with: only the index, no user config."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": index_url,
        "UV_DEFAULT_INDEX": index_url,
        "UV_NO_CONFIG": "1",
        "UV_PYTHON_DOWNLOADS": "never",
        "UV_PYTHON": sys.executable,
        "UV_CACHE_DIR": str(home / "uv-cache"),
    }
