"""Read the requirements declared in a ``pyproject.toml``.

Notes: docs/internals.md#sources.
"""

from __future__ import annotations

import bisect
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from govern.sources.model import (
    Entry,
    Include,
    Line,
    LineKind,
    Problem,
    Source,
    SourceFormat,
)
from govern.sources.pep508 import parse_requirement, requirement_hint
from govern.sources.reading import Unreadable, read_bounded
from govern.sources.tomlpos import (
    KeyPath,
    Scan,
    ScanError,
    Scanner,
    decode_string,
    dotted,
    error_message,
    error_position,
)
from govern.tomltables import kind

__all__ = ["read_pyproject"]

PARSE_ERROR = "parse-error"
INCLUDE_CYCLE = "include-cycle"

# --------------------------------------------------------------------------
# Building the source
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Pos:
    """A resolved position: where a value starts and ends, and whether it is exact."""

    line: int
    column: int
    end_line: int | None
    exact: bool  # the raw text equals the value: offsets inside it map to columns


class _Builder:
    """Collects entries, includes and problems for one parsed pyproject."""

    def __init__(self, text: str, lines: list[str], scan: Scan) -> None:
        self.text = text
        self.lines = lines
        self.scan = scan
        self.line_starts = line_starts(text)
        self.entries: list[Entry] = []
        self.includes: list[Include] = []
        self.problems: list[Problem] = []

    # -- positions ---------------------------------------------------------

    def _line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def _key_pos(self, path: KeyPath) -> _Pos:
        """The position of the key holding ``path`` (or of its nearest ancestor)."""
        for size in range(len(path), 0, -1):
            loc = self.scan.locs.get(path[:size])
            if loc is not None:
                line, column = self._line_col(loc.key_start)
                return _Pos(line, column, None, exact=False)
        return _Pos(1, 1, None, exact=False)

    def _value_pos(self, path: KeyPath) -> _Pos:
        """The position where the value at ``path`` starts, whatever its type."""
        loc = self.scan.locs.get(path)
        if loc is None:
            return self._key_pos(path)
        line, column = self._line_col(loc.start)
        return _Pos(line, column, None, exact=False)

    def _string_pos(self, path: KeyPath, value: str) -> _Pos:
        """The position of the string ``value`` at ``path`` (first character inside quotes)."""
        loc = self.scan.locs.get(path)
        if loc is not None and loc.kind == "string":
            try:
                decoded = decode_string(loc.raw, multi=loc.multiline, literal=loc.literal)
            except (ScanError, tomllib.TOMLDecodeError, ValueError):
                decoded = None
            if decoded == value:
                line, column = self._line_col(loc.start)
                end_line, _ = self._line_col(loc.end)
                exact = loc.raw == value and "\n" not in value
                return _Pos(line, column, end_line, exact)
        # Not found where expected: point at the key that holds the array.
        return self._key_pos(path[:-1] if path and isinstance(path[-1], int) else path)

    def _line_text(self, line: int) -> str | None:
        return self.lines[line - 1] if 1 <= line <= len(self.lines) else None

    # -- problems ----------------------------------------------------------

    def _problem_at(
        self,
        pos: _Pos,
        message: str,
        *,
        rule: str = PARSE_ERROR,
        hint: str | None = None,
        column: int | None = None,
    ) -> None:
        self.problems.append(
            Problem(
                rule=rule,
                line=pos.line,
                message=message,
                column=pos.column if column is None else column,
                excerpt=self._line_text(pos.line),
                hint=hint,
            )
        )

    def _wrong_type(self, path: KeyPath, expected: str, value: object) -> None:
        self._problem_at(
            self._value_pos(path),
            f"{dotted(path)} must be {expected}, not {kind(value)}",
        )

    # -- entries -----------------------------------------------------------

    def _entry(
        self,
        pos: _Pos,
        value: str,
        requirement: Requirement,
        name: str,
        group: str,
        *,
        constrainable: bool = True,
    ) -> None:
        self.entries.append(
            Entry(
                line=pos.line,
                column=pos.column,
                text=value,
                requirement=requirement,
                name=name,
                constrainable=constrainable,
                group=group,
                end_line=pos.end_line,
            )
        )

    def _requirement(self, path: KeyPath, value: str, group: str) -> None:
        pos = self._string_pos(path, value)
        requirement, error = parse_requirement(value)
        if requirement is None:
            offset, message = error or (0, "invalid requirement")
            column = pos.column + offset if pos.exact else pos.column
            # The excerpt is the whole physical line: the caret's column indexes into it.
            self._problem_at(pos, message, column=column, hint=requirement_hint(value, offset))
            return
        name = canonicalize_name(requirement.name)
        self._entry(pos, value, requirement, name, group, constrainable=requirement.url is None)

    def _requirement_array(self, path: KeyPath, value: object, group: str) -> None:
        if not isinstance(value, list):
            self._wrong_type(path, "an array of requirement strings", value)
            return
        for index, item in enumerate(value):
            item_path = (*path, index)
            if isinstance(item, str):
                self._requirement(item_path, item, group)
            else:
                self._wrong_type(item_path, "a requirement string", item)

    def _requires_python(self, value: object) -> None:
        path: KeyPath = ("project", "requires-python")
        if not isinstance(value, str):
            self._wrong_type(path, "a string", value)
            return
        pos = self._string_pos(path, value)
        try:
            SpecifierSet(value)
            requirement: Requirement | None = Requirement("python" + value)
        except (InvalidSpecifier, InvalidRequirement) as exc:
            requirement, message, offset = None, _first_line(exc, "invalid specifier"), 0
        else:  # a version number too long to compare, say
            requirement, error = parse_requirement("python" + value)
            offset, message = error or (0, "")
            offset = max(offset - len("python"), 0)
        if requirement is None:
            self._problem_at(
                pos,
                f"invalid requires-python: {message}",
                column=pos.column + (offset if pos.exact else 0),
                hint=requirement_hint(value, 0),
            )
            return
        self._entry(pos, value, requirement, "python", "project.requires-python")

    def collect(self, data: dict[str, Any]) -> None:
        """Read every requirement-bearing table of the parsed document."""
        project = data.get("project")
        if project is not None:
            if isinstance(project, dict):
                self._project(project)
            else:
                self._wrong_type(("project",), "a table", project)
        build = data.get("build-system")
        if build is not None:
            if isinstance(build, dict):
                if "requires" in build:
                    path: KeyPath = ("build-system", "requires")
                    self._requirement_array(path, build["requires"], "build-system.requires")
            else:
                self._wrong_type(("build-system",), "a table", build)
        groups = data.get("dependency-groups")
        if groups is not None:
            if isinstance(groups, dict):
                self._dependency_groups(groups)
            else:
                self._wrong_type(("dependency-groups",), "a table", groups)

    def _project(self, project: dict[str, Any]) -> None:
        if "requires-python" in project:
            self._requires_python(project["requires-python"])
        if "dependencies" in project:
            path: KeyPath = ("project", "dependencies")
            self._requirement_array(path, project["dependencies"], "project.dependencies")
        optional = project.get("optional-dependencies")
        if optional is None:
            return
        if not isinstance(optional, dict):
            self._wrong_type(("project", "optional-dependencies"), "a table", optional)
            return
        for extra, value in optional.items():
            group = f"project.optional-dependencies.{extra}"
            self._requirement_array(("project", "optional-dependencies", extra), value, group)

    def _dependency_groups(self, groups: dict[str, Any]) -> None:
        known: dict[str, str] = {}  # normalized name -> name as written
        for name in groups:
            normalized = canonicalize_name(name)
            if normalized in known:
                self._problem_at(
                    self._key_pos(("dependency-groups", name)),
                    f"dependency group {name!r} duplicates {known[normalized]!r} "
                    "(group names are compared normalized)",
                )
            else:
                known[normalized] = name
        # normalized group -> [(normalized target, target as written, item path)]
        edges: dict[str, list[tuple[str, str, KeyPath]]] = {k: [] for k in known}
        for name, items in groups.items():
            path: KeyPath = ("dependency-groups", name)
            if not isinstance(items, list):
                self._wrong_type(path, "an array", items)
                continue
            for index, item in enumerate(items):
                item_path = (*path, index)
                if isinstance(item, str):
                    self._requirement(item_path, item, f"dependency-groups.{name}")
                    continue
                target = item.get("include-group") if isinstance(item, dict) else None
                if not isinstance(item, dict) or len(item) != 1 or not isinstance(target, str):
                    self._wrong_type(
                        item_path, 'a requirement string or {include-group = "name"}', item
                    )
                    continue
                pos = self._value_pos(item_path)
                self.includes.append(Include(line=pos.line, kind="group", target=target))
                edges.setdefault(canonicalize_name(name), []).append(
                    (canonicalize_name(target), target, item_path)
                )
        self._check_includes(known, edges)

    def _include_target_pos(self, item_path: KeyPath, target: str) -> _Pos:
        pos = self._string_pos((*item_path, "include-group"), target)
        return pos if pos.end_line is not None else self._value_pos(item_path)

    def _check_includes(
        self, known: dict[str, str], edges: dict[str, list[tuple[str, str, KeyPath]]]
    ) -> None:
        for group, targets in edges.items():
            for normalized, target, item_path in targets:
                if normalized not in known:
                    available = ", ".join(sorted(known.values())) or "none"
                    self._problem_at(
                        self._include_target_pos(item_path, target),
                        f"dependency group {known[group]!r} includes unknown group {target!r}",
                        hint=f"defined groups: {available}",
                    )
        # Depth-first search in file order; every back edge closes one cycle.
        state: dict[str, int] = {}  # 1: on the current path, 2: done
        for root in edges:
            if root in state:
                continue
            state[root] = 1
            trail = [root]
            stack = [iter(edges[root])]
            while stack:
                step = next(stack[-1], None)
                if step is None:
                    state[trail.pop()] = 2
                    stack.pop()
                    continue
                normalized, target, item_path = step
                if normalized not in known:
                    continue
                seen = state.get(normalized)
                if seen is None:
                    state[normalized] = 1
                    trail.append(normalized)
                    stack.append(iter(edges.get(normalized, [])))
                elif seen == 1:
                    cycle = [*trail[trail.index(normalized) :], normalized]
                    shown = " -> ".join(known[g] for g in cycle)
                    self._problem_at(
                        self._include_target_pos(item_path, target),
                        f"dependency group {known[trail[-1]]!r} includes {target!r}, "
                        f"which includes it back: {shown}",
                        rule=INCLUDE_CYCLE,
                    )

    # -- result ------------------------------------------------------------

    def source(self, file: Path, display_path: str) -> Source:
        """The finished :class:`Source`, entries in file order with the line table."""
        entries = tuple(sorted(self.entries, key=lambda e: (e.line, e.column)))
        return Source(
            path=display_path,
            file=file,
            format=SourceFormat.PYPROJECT,
            entries=entries,
            lines=self._line_table(entries),
            includes=tuple(sorted(self.includes, key=lambda i: i.line)),
            problems=tuple(sorted(self.problems, key=lambda p: (p.line, p.column or 0))),
        )

    def _line_table(self, entries: tuple[Entry, ...]) -> tuple[Line, ...]:
        count = len(self.lines)
        comment_at: dict[int, int] = {}  # line -> offset of its comment '#'
        for offset in self.scan.comments:
            line, _ = self._line_col(offset)
            comment_at.setdefault(line, offset)
        in_string: set[int] = set()  # lines inside (after the first line of) a multi-line string
        for opening, closing in self.scan.multiline:
            first, _ = self._line_col(opening)
            last, _ = self._line_col(max(closing - 1, opening))
            in_string.update(range(first + 1, last + 1))
        entry_at: dict[int, int] = {}
        continuation: dict[int, int] = {}
        for index, entry in enumerate(entries):
            entry_at.setdefault(entry.line, index)
            for number in range(entry.line + 1, (entry.end_line or entry.line) + 1):
                continuation.setdefault(number, index)

        table: list[Line] = []
        for number in range(1, count + 1):
            text = self.lines[number - 1]
            comment = None
            if number in comment_at:
                comment = _comment_text(self.text, comment_at[number])
            if number in continuation:
                table.append(Line(number, LineKind.CONTINUATION, entry=continuation[number]))
            elif number in entry_at:
                table.append(Line(number, LineKind.ENTRY, comment=comment, entry=entry_at[number]))
            elif number in in_string:
                table.append(Line(number, LineKind.OTHER))
            else:
                table.append(_plain_line(number, text))
        return tuple(table)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def line_starts(text: str) -> list[int]:
    """The offset where each line of ``text`` starts (for positions from offsets)."""
    starts = [0]
    index = text.find("\n")
    while index >= 0:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def _physical_lines(text: str) -> list[str]:
    """The file's physical lines (``\\n`` or ``\\r\\n`` separated, without the newline)."""
    if not text:
        return []
    parts = text.split("\n")
    if text.endswith("\n"):
        parts.pop()
    return [part.removesuffix("\r") for part in parts]


def _strip_comment(line: str) -> str:
    """The text of a comment-only line: after the first ``#``, one leading space removed."""
    return _comment_body(line[line.index("#") + 1 :])


def _comment_text(text: str, offset: int) -> str:
    end = text.find("\n", offset)
    return _comment_body(text[offset + 1 : len(text) if end < 0 else end])


def _comment_body(body: str) -> str:
    return body.removeprefix(" ").rstrip()


def _plain_line(number: int, text: str) -> Line:
    """A line that holds no entry: blank, a comment, or other."""
    if not text.strip():
        return Line(number, LineKind.BLANK)
    if text.lstrip().startswith("#"):
        return Line(number, LineKind.COMMENT, comment=_strip_comment(text))
    return Line(number, LineKind.OTHER)


def _simple_lines(lines: list[str]) -> tuple[Line, ...]:
    """A line table for a file that could not be parsed: blank, comment or other."""
    return tuple(_plain_line(number, text) for number, text in enumerate(lines, start=1))


def _first_line(exc: Exception, default: str) -> str:
    lines = str(exc).splitlines()
    return lines[0].strip() if lines and lines[0].strip() else default


def read_pyproject(file: Path, *, display_path: str) -> Source:
    """Read ``file`` (a ``pyproject.toml``) into a :class:`Source` with positions.

    ``display_path`` is how the file is shown and keyed (relative, POSIX).
    Never raises on bad content: an unreadable file, invalid UTF-8, invalid
    TOML, wrongly typed tables and unparsable requirements are reported as
    ``parse-error`` problems, cycles between PEP 735 groups as
    ``include-cycle`` problems.
    """

    def failed(problem: Problem, lines: list[str]) -> Source:
        return Source(
            path=display_path,
            file=file,
            format=SourceFormat.PYPROJECT,
            lines=_simple_lines(lines),
            problems=(problem,),
        )

    raw = read_bounded(file, shown=display_path)
    if isinstance(raw, Unreadable):
        return failed(Problem(raw.rule or PARSE_ERROR, 1, raw.message, hint=raw.hint), [])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        lines = _physical_lines(raw.decode("utf-8", errors="replace"))
        line = raw.count(b"\n", 0, exc.start) + 1
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        column = len(raw[line_start : exc.start].decode("utf-8", errors="replace")) + 1
        problem = Problem(
            PARSE_ERROR,
            line,
            f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            column=column,
            excerpt=lines[line - 1] if line <= len(lines) else None,
            hint="save the file as UTF-8",
        )
        return failed(problem, lines)
    return parse_pyproject(text, display_path=display_path, file=file)


def parse_pyproject(text: str, *, display_path: str, file: Path | None = None) -> Source:
    """Read a ``pyproject.toml``'s decoded ``text`` as :func:`read_pyproject` reads a file."""
    text = text.removeprefix("\ufeff")
    lines = _physical_lines(text)
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError, RecursionError) as exc:
        line, column = error_position(exc, lines)
        problem = Problem(
            PARSE_ERROR,
            line,
            error_message(exc),
            column=column,
            excerpt=lines[line - 1] if 1 <= line <= len(lines) else None,
        )
        return Source(
            path=display_path,
            file=file or Path(display_path),
            format=SourceFormat.PYPROJECT,
            lines=_simple_lines(lines),
            problems=(problem,),
        )
    builder = _Builder(text, lines, Scanner(text).scan())
    builder.collect(data)
    return builder.source(file or Path(display_path), display_path)
