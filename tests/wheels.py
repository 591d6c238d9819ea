"""Real, tiny distributions for index tests: govern's own writer (govern.demo.wheels)."""

from pathlib import Path

from fakes.index import IndexFile
from govern.demo.wheels import build_sdist, build_wheel, dist_name, metadata, sha256

__all__ = ["build_sdist", "build_wheel", "cupy_demo", "dist_name", "metadata", "sha256"]


def cupy_demo(tmp: Path, version: str, broken: bool = False) -> IndexFile:
    """A CuPy-like ``cupy-demo`` wheel; a ``broken`` one fails at import, as CuPy 14.1.0
    did (it imports a module nobody ships)."""
    body = f'__version__ = "{version}"\n'
    if broken:
        body = f"import cupy_demo_testing_only_module  # noqa\n{body}"
    path = build_wheel(
        tmp / "dists" / version, "cupy-demo", version, files={"cupy_demo/__init__.py": body}
    )
    return IndexFile.of(path, upload_time="2026-05-01T00:00:00Z")
