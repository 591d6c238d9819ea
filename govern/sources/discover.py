"""Find the requirement sources under a directory.

By default a source is a file named ``requirements*.txt``, ``constraints*.txt``,
``*.in`` or ``pyproject.toml``, or any ``*.txt`` below a directory named
``requirements`` (at any depth). ``include`` globs add more files, ``exclude``
globs remove files (exclude wins). Globs are relative to the root, use ``/``,
and support ``*`` and ``?`` (within one path segment), ``[...]`` classes and
``**`` (any number of directories).

Virtual environments, VCS metadata, build output and every directory whose name
starts with ``.`` are not entered, and symlinked directories are not followed.
An include glob reaches into such a directory only when it spells the
directory's name literally (``.ci/requirements/*.txt`` does, ``**/*.txt`` does
not).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path

from govern.sources.model import SourceFormat

__all__ = ["SKIPPED_DIRS", "discover", "glob_match", "source_format_for"]

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".tox",
        ".nox",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        "site-packages",
        "build",
        "dist",
    }
)
"""Directory names that are never entered (besides any name starting with ``.``)."""


def _is_skipped(name: str) -> bool:
    return name in SKIPPED_DIRS or name.startswith(".")


def _normalize(pattern: str) -> str:
    """Drop a leading ``/`` or ``./``, repeated slashes; a trailing ``/`` means everything below."""
    parts = [part for part in pattern.split("/") if part not in ("", ".")]
    if pattern.endswith("/") and parts:
        parts.append("**")
    return "/".join(parts)


def _translate_segment(segment: str) -> str:
    """The regex for one path segment: ``*``, ``?`` and ``[...]`` never match ``/``."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            negate = segment[i + 1 : i + 2] in ("!", "^")
            first = i + 2 if negate else i + 1
            # A "]" right after the opening bracket is a member, not the end.
            end = segment.find("]", first + 1)
            if end < 0:
                out.append(re.escape(char))
            else:
                body = "".join(c if c == "-" else re.escape(c) for c in segment[first:end])
                out.append(f"[^/{body}]" if negate else f"[{body}]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    parts = _normalize(pattern).split("/")
    regex: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            regex.append(".*" if last else "(?:[^/]*/)*")
        else:
            regex.append(_translate_segment(part) + ("" if last else "/"))
    try:
        return re.compile("".join(regex), re.DOTALL)
    except re.error:  # e.g. a reversed range "[z-a]": match the pattern literally
        return re.compile(re.escape(pattern), re.DOTALL)


def glob_match(pattern: str, relpath: str) -> bool:
    """Whether the root-relative POSIX path ``relpath`` matches the glob ``pattern``.

    ``*`` matches any run of characters within one segment, ``?`` one character,
    ``[abc]``/``[!abc]`` a character class, and a whole segment ``**`` any number
    (including zero) of directories: ``deps/**/*.pip`` matches ``deps/a.pip``
    and ``deps/x/y/a.pip``. A pattern ending in ``/`` matches everything below
    that directory. Patterns are anchored at the root: ``requirements.txt``
    matches only the top-level file.
    """
    return _compile(pattern).fullmatch(relpath.strip("/")) is not None


def _is_default_source(parts: tuple[str, ...]) -> bool:
    """Whether a root-relative path (as segments) is a source by the default rules."""
    name = parts[-1]
    if name == "pyproject.toml" or name.endswith(".in"):
        return True
    if name.endswith(".txt"):
        if name.startswith(("requirements", "constraints")):
            return True
        return "requirements" in parts[:-1]
    return False


def _reaches(pattern: str, dir_parts: tuple[str, ...]) -> bool:
    """Whether ``pattern`` may match a file below a directory that is skipped by default.

    Every skipped segment of the directory must be spelt literally by the
    pattern (a wildcard or ``**`` never leads into ``.venv`` and the like).
    """
    parts = _normalize(pattern).split("/")
    last_skipped = max((i for i, part in enumerate(dir_parts) if _is_skipped(part)), default=-1)
    for index, part in enumerate(dir_parts):
        if index < len(parts) and parts[index] == "**":
            return index > last_skipped
        if index >= len(parts) - 1:
            return False
        wanted = parts[index]
        if _is_skipped(part):
            if wanted != part:
                return False
        elif not glob_match(wanted, part):
            return False
    return True


def discover(root: Path, *, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> list[Path]:
    """The requirement sources below ``root``, sorted by their root-relative POSIX path.

    Returned paths are ``root / relative``. See the module documentation for
    the default rules and the meaning of ``include`` and ``exclude``.
    """
    found: dict[str, Path] = {}
    for current, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(current)
        rel_dir = base.relative_to(root).parts
        skipped_here = any(_is_skipped(part) for part in rel_dir)
        kept: list[str] = []
        for name in sorted(dirnames):
            parts = (*rel_dir, name)
            if (base / name).is_symlink():
                continue
            if (skipped_here or _is_skipped(name)) and not any(
                _reaches(pattern, parts) for pattern in include
            ):
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in filenames:
            path = base / name
            if not path.is_file():  # a broken symlink or something that is not a file
                continue
            parts = (*rel_dir, name)
            relpath = "/".join(parts)
            wanted = any(glob_match(pattern, relpath) for pattern in include)
            if not skipped_here and _is_default_source(parts):
                wanted = True
            if wanted and not any(glob_match(pattern, relpath) for pattern in exclude):
                found[relpath] = path
    return [found[key] for key in sorted(found)]


def source_format_for(path: Path) -> SourceFormat:
    """The format of a discovered source, judged by its file name."""
    if path.name == "pyproject.toml":
        return SourceFormat.PYPROJECT
    if path.name.startswith("constraints"):
        return SourceFormat.CONSTRAINTS
    return SourceFormat.REQUIREMENTS
