"""Find the requirement sources under a directory.

Notes: docs/internals.md#sources.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from govern.sources.locks import lock_format_for
from govern.sources.model import Problem, SourceFormat

__all__ = [
    "HOOK_FILES",
    "NOT_REQUIREMENTS_RULE",
    "SKIPPED_DIRS",
    "discover",
    "glob_match",
    "sniff",
    "source_format_for",
]

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


# The rule is written once, as regexes over the root-relative POSIX path after any
# directories ("(?:[^/]+/)*"): discovery matches whole paths with them, and
# pre-commit's `files` (HOOK_FILES) searches for them after a "/" or the start.
_TEMPLATE_NAMES = ("MANIFEST", "Makefile", "GNUmakefile", "Doxyfile", "Dockerfile", "configure")
# X.EXT.in is the template of an X.EXT (autoconf, meson, CMake, Tempita, Jinja).
_TEMPLATE_TYPES = (
    "h", "hh", "hpp", "c", "cc", "cpp", "pyx", "pxd", "pxi", "py", "pyi", "cfg", "ini", "toml",
    "json", "yaml", "yml", "xml", "html", "j2", "sh", "bat", "cmake", "spec", "service",
    "conf", "desktop", "pc", "rst", "md", "js", "css", "sql", "nsi", "iss", "rc", "plist",
)  # fmt: skip
_TEMPLATE = rf"(?:{'|'.join(_TEMPLATE_NAMES)}|[^/]*\.(?:{'|'.join(_TEMPLATE_TYPES)}))\.in"
# Renovate's (^|/)[\w-]*requirements([-._]\w+)?\.(txt|pip)$ and more (py3.requirements-a-b.txt),
# pip-compile's requirements*.in, and all below a requirements/ directory.
_NAMED = r"pyproject\.toml|[^/]*requirements[^/]*\.(?:txt|pip|in)"
# Locks, by name (sources/locks.py): read for what they pin, never for exclusions.
_LOCKS = r"uv\.lock|poetry\.lock|pdm\.lock|pylock(?:\.[^/]+)?\.toml|Pipfile\.lock"
_BELOW = r"requirements/(?:[^/]+/)*"  # a directory named requirements, and any below it
# Read when their content is requirements: *.in (dev.in, or a template) and *constraints*.txt
# (a constraints file, or a list in another shape named like one: upper-constraints-xfails.txt).
_SNIFFED = r"[^/]*constraints[^/]*\.txt|[^/]+\.in"
_DIRS = r"(?:[^/]+/)*"
_TEMPLATE_RE = re.compile(rf"{_DIRS}{_TEMPLATE}")
_BY_NAME_RE = re.compile(rf"{_DIRS}(?:{_NAMED}|{_LOCKS}|{_BELOW}[^/]+\.(?:txt|in))")
_SNIFFED_RE = re.compile(rf"{_DIRS}(?:{_SNIFFED})")

# Each lookahead sits where the file name starts, so a search stays linear in the path.
_NOT_TEMPLATE = rf"(?!{_TEMPLATE}$)"
HOOK_FILES = (
    rf"(^|/)(?:{_NOT_TEMPLATE}(?:{_NAMED}|{_LOCKS}|{_SNIFFED})"
    rf"|{_BELOW}{_NOT_TEMPLATE}[^/]+\.(?:txt|in)|\.govern\.toml)$"
)
"""pre-commit's ``files`` for the hooks: every name discovery may read, and the config."""

NOT_REQUIREMENTS_RULE = "not-a-requirements-file"
"""The rule of a discovered file that is not read because its content is not requirements."""

_SNIFF_BYTES = 64 * 1024
_SNIFF_LINES = 200
_OPTION_RE = re.compile(r"--?[A-Za-z]")  # -r, -c, -e, --index-url, ...: pip's own kind of line
_TRAILING_OPTIONS_RE = re.compile(r"\s+--?[A-Za-z]")
_SCHEME_RE = re.compile(r"[A-Za-z][\w+.-]*:")
_LOCATION_RE = re.compile(r"(?:[A-Za-z][\w+.-]*://|\.{0,2}/)\S+")  # a URL or a path pip installs


def _kind(relpath: str) -> bool | None:
    """True: a source by its name; False: a source if its content says so; None: not one."""
    if _TEMPLATE_RE.fullmatch(relpath):
        return None
    if _BY_NAME_RE.fullmatch(relpath):
        return True
    return False if _SNIFFED_RE.fullmatch(relpath) else None


def _reads_as_requirement(line: str) -> bool:
    if _OPTION_RE.match(line) or _LOCATION_RE.fullmatch(line):
        return True
    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return False
    # "Release @VERSION@" parses as a name @ url; pip wants a URL with a scheme there.
    return requirement.url is None or _SCHEME_RE.match(requirement.url) is not None


def sniff(path: Path) -> Problem | None:
    """None if ``path`` reads as requirements, else the one finding that says why it is not read.

    It reads as requirements when more than half of its content lines (not blank,
    not comments; of the first 64 KiB, at most 200 of them) are PEP 508
    requirements, pip options or locations. A file with no content line does.
    """
    try:
        with path.open("rb") as stream:
            data = stream.read(_SNIFF_BYTES + 1)
    except OSError as exc:
        return Problem(NOT_REQUIREMENTS_RULE, 1, f"{path.name} cannot be read: {exc.strerror}")
    if len(data) > _SNIFF_BYTES:  # the last line may be cut: judge whole lines only
        data = data[: data.rfind(b"\n", 0, _SNIFF_BYTES) + 1] or data[:_SNIFF_BYTES]
    if b"\0" in data:
        return Problem(NOT_REQUIREMENTS_RULE, 1, f"{path.name} is binary; not read as requirements")
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    content: list[tuple[int, bool]] = []
    pending, first = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        first = first or number
        line = pending + raw.strip()
        if line.endswith("\\"):  # a continuation: judged with the next line
            pending = line[:-1]
            continue
        pending = ""
        line = re.split(r"(?:^|\s)#", line, maxsplit=1)[0]
        # Options after a requirement (--hash=...) are pip's too.
        line = _TRAILING_OPTIONS_RE.split(line, maxsplit=1)[0].strip()
        if line:
            content.append((first, _reads_as_requirement(line)))
            if len(content) == _SNIFF_LINES:
                break
        first = 0
    bad = [number for number, ok in content if not ok]
    if len(bad) * 2 < len(content) or not content:
        return None
    return Problem(
        NOT_REQUIREMENTS_RULE,
        bad[0],
        f"{path.name} is not read as requirements: {len(bad)} of its "
        f"{'first ' if len(content) == _SNIFF_LINES else ''}{len(content)} lines "
        f"are neither requirements nor pip options (the first is line {bad[0]})",
        hint="if it is one, name it requirements*.in or add it to the include globs"
        if path.suffix == ".in"
        else "if it is one, add it to the include globs",
    )


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


def discover(
    root: Path,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    rejected: list[tuple[Path, Problem]] | None = None,
) -> list[Path]:
    """The requirement sources below ``root``, sorted by their root-relative POSIX path.

    Returned paths are ``root / relative``. The default rules are docs/commands/audit.md's,
    ``include`` and ``exclude`` docs/configuration.md's. Files
    found by their name whose content is not requirements are left out, and
    appended to ``rejected`` (if given) with the finding that says why.
    """
    found: dict[str, Path] = {}
    not_read: dict[str, tuple[Path, Problem]] = {}
    resolved_root = root.resolve()
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
            relpath = "/".join((*rel_dir, name))
            if any(glob_match(pattern, relpath) for pattern in exclude):
                continue
            if any(glob_match(pattern, relpath) for pattern in include):
                found[relpath] = path  # asked for: read whatever its name and content
                continue
            kind = None if skipped_here else _kind(relpath)
            if kind is False and _within(path, resolved_root):
                # A link out of the tree is not opened here: the audit refuses it.
                problem = sniff(path)
                if problem is not None:
                    not_read[relpath] = (path, problem)
                    continue
            if kind is not None:
                found[relpath] = path
    if rejected is not None:
        rejected.extend(not_read[key] for key in sorted(not_read))
    return [found[key] for key in sorted(found)]


def _within(path: Path, resolved_root: Path) -> bool:
    try:
        return path.resolve().is_relative_to(resolved_root)
    except (OSError, RuntimeError):  # a symlink loop
        return False


def source_format_for(path: Path) -> SourceFormat:
    """The format of a discovered source, judged by its file name."""
    locked = lock_format_for(path)
    if locked is not None:
        return locked
    if path.name == "pyproject.toml":
        return SourceFormat.PYPROJECT
    if "constraints" in path.name and path.suffix == ".txt":  # upper-constraints.txt too
        return SourceFormat.CONSTRAINTS
    return SourceFormat.REQUIREMENTS
