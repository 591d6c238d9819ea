"""What the benchmarks share: their scratch directory and how a profile names a function."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


@contextlib.contextmanager
def work_directory(keep: bool, prefix: str) -> Iterator[Path]:
    """A fresh directory for one run; kept (and named) with ``keep``, else removed."""
    parent = BENCH_DIR / ".work"
    parent.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{prefix}-", dir=parent))
    try:
        yield work
    finally:
        if keep:
            print(f"\nwork dir kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
            with contextlib.suppress(OSError):
                parent.rmdir()  # only when nothing else (a kept run) is in it


def where(file_name: str, line: int, function: str) -> str:
    """``module/path.py:line(function)`` of a profile entry, shortened to the repository."""
    if file_name == "~":
        return function  # a builtin
    for marker in ("site-packages/", f"{BENCH_DIR.parent}/"):
        if marker in file_name:
            file_name = file_name.split(marker, 1)[1]
            break
    else:
        file_name = file_name.rsplit("/", 2)[-1] if "/" in file_name else file_name
    return f"{file_name}:{line}({function})"
