"""Opening the files an audit reads: regular files only, never blocking, never unbounded.

Notes: docs/internals.md#sources.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MAX_SOURCE_BYTES",
    "SYSTEM_DIRS",
    "Unreadable",
    "os_reason",
    "read_bounded",
    "refusal",
]

MAX_SOURCE_BYTES = 16 * 1024 * 1024
"""The largest file an audit reads (16 MiB): a requirements file is rarely 1 MiB."""

SYSTEM_DIRS = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Where the kernel's files live: never sources, whatever their name."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Why a file was not read: ``rule`` is the finding to report (None: the reader's own)."""

    message: str
    rule: str | None = None
    hint: str | None = None


def os_reason(exc: OSError | ValueError) -> str:
    """An operating-system error in a few words, without the path (it may be huge)."""
    if isinstance(exc, ValueError):  # "embedded null byte"
        return "the path holds a NUL byte"
    if exc.errno == errno.ENAMETOOLONG:
        return "the path is too long for the operating system"
    return exc.strerror or type(exc).__name__


def _system_dir(path: Path) -> Path | None:
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError):
        resolved = path.absolute()
    return next((d for d in SYSTEM_DIRS if resolved.is_relative_to(d)), None)


def _kind(mode: int) -> str | None:
    return next((name for test, name in _KINDS if test(mode)), None)


def refusal(path: Path, shown: str | None = None) -> Unreadable | None:
    """Why ``path`` must not be opened as a source (None: it may be).

    ``shown`` is how the file is named in the message (default: its name).
    """
    name = shown or path.name or str(path)
    system = _system_dir(path)
    if system is not None:
        return Unreadable(
            f"{name} is a system file under {system}, not a source; not read",
            rule="source-refused",
            hint="name a requirements file of the repository",
        )
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None  # the reader reports that it cannot be read
    if not stat.S_ISREG(mode):
        return Unreadable(
            f"{name} is {_kind(mode) or 'something else'}, not a regular file; not read",
            rule="source-refused",
            hint="only regular files are read (links to them inside the audited directory too)",
        )
    return None


def read_bounded(
    path: Path, *, limit: int = MAX_SOURCE_BYTES, shown: str | None = None
) -> bytes | Unreadable:
    """The bytes of ``path``, or why they were not read.

    A file over ``limit`` bytes is not read at all (a partial parse would report
    a truncated file as if it were whole): ``rule`` is ``source-too-large``.
    """
    refused = refusal(path, shown)
    if refused is not None:
        return refused
    name = shown or path.name or str(path)
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except (OSError, ValueError) as exc:
        return Unreadable(f"cannot read {name}: {os_reason(exc)}")
    try:
        # Checked again on the open file: the path may have changed since the stat.
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            return Unreadable(
                f"{name} is {_kind(mode) or 'something else'}, not a regular file; not read",
                rule="source-refused",
            )
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        return Unreadable(
            f"{name} is larger than {_mib(limit)}; not read",
            rule="source-too-large",
            hint="a requirements file this large is generated: audit its input instead",
        )
    except OSError as exc:
        return Unreadable(f"cannot read {name}: {os_reason(exc)}")
    finally:
        os.close(fd)


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB" if size >= 1024 * 1024 else f"{size:,} bytes"
