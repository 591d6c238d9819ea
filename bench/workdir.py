"""The benchmarks' scratch directory: ``bench/.work/<prefix>-*``, removed at the end."""

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
