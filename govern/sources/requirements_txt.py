"""pip requirements and constraints files, read by pip's own rules.

Notes: docs/internals.md#sources.
"""

from __future__ import annotations

import codecs
import dataclasses
import os
import re
from collections.abc import Mapping
from pathlib import Path

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from govern.redact import redact
from govern.sources.model import (
    Entry,
    Include,
    Line,
    LineKind,
    OptionLine,
    Problem,
    Source,
    SourceFormat,
)
from govern.sources.pep508 import parse_requirement, requirement_hint
from govern.sources.pipline import (
    OptionError,
    break_args_options,
    join_lines,
    parse_options,
    split_comment,
)
from govern.sources.reading import Unreadable, read_bounded

# pip's rules (req_file.py): only upper-case ${NAME} is expanded (POSIX names).
_ENV_VAR_RE = re.compile(r"\$\{([A-Z0-9_]+)\}")
_CODING_RE = re.compile(rb"coding[:=]\s*([-\w.]+)")
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^file:")
_ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".tar")
_STRONG_HASHES = ("sha256", "sha384", "sha512")


def decode(data: bytes) -> tuple[str, tuple[Problem, ...]]:
    """Decode a requirements file as pip does: a BOM wins, then a coding line, then UTF-8.

    Returns the text and the problems met: a coding line that cannot decode the file
    (pip would fail on it), or bytes that are not UTF-8 (the text is then decoded as
    Latin-1 so that no byte is lost).
    """
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, errors="replace"), ()
    problems: list[Problem] = []
    # pip's auto_decode honours a PEP 263 coding line in the first two lines.
    for number, line in enumerate(data.split(b"\n", 2)[:2], start=1):
        match = _CODING_RE.search(line)
        if match and line.lstrip().startswith(b"#"):
            name = match.group(1).decode("ascii")
            try:
                if codecs.lookup(name).name in _NOT_FILE_ENCODINGS:
                    raise LookupError(f"{name} is not an encoding for files")
                return data.decode(name), ()
            except (LookupError, UnicodeError) as exc:  # UnicodeError: undefined, punycode
                problems.append(_coding_problem(number, line, match, exc))
                break
    try:
        return data.decode("utf-8"), tuple(problems)
    except UnicodeDecodeError as exc:
        line_number = data.count(b"\n", 0, exc.start) + 1
        problems.append(
            Problem(
                "parse-error",
                1,
                f"not valid UTF-8 (line {line_number}, byte {exc.start}); read as Latin-1",
            )
        )
        return data.decode("latin-1"), tuple(problems)


# Codecs that are no file's encoding; punycode's decoder is also quadratic.
_NOT_FILE_ENCODINGS = frozenset({"punycode", "idna", "undefined"})


def _coding_problem(number: int, line: bytes, match: re.Match[bytes], exc: Exception) -> Problem:
    name = match.group(1).decode("ascii")
    why = "it is unknown" if isinstance(exc, LookupError) else "it cannot decode the file"
    if isinstance(exc, LookupError) and "not an encoding for files" in str(exc):
        why = "it is not an encoding for files"
    return Problem(
        "parse-error",
        number,
        f"the coding line names {name!r}, which pip cannot use ({why}); read as UTF-8",
        column=len(line[: match.start(1)].decode("utf-8", "replace")) + 1,
        excerpt=line.decode("utf-8", "replace").rstrip("\r"),
        hint="remove the coding line, or name the file's real encoding (utf-8)",
    )


def _expand(text: str, environ: Mapping[str, str]) -> tuple[str, bool]:
    """Expand ``${NAME}`` from ``environ`` (unset or empty names stay as written)."""
    if "${" not in text:
        return text, False
    changed = False

    def sub(match: re.Match[str]) -> str:
        nonlocal changed
        value = environ.get(match.group(1))
        if not value:
            return match.group(0)
        changed = True
        return value

    return _ENV_VAR_RE.sub(sub, text), changed


def _looks_like_url(text: str) -> bool:
    return ":" in text and _SCHEME_RE.match(text) is not None


def _looks_like_path(text: str) -> bool:
    # pip's _looks_like_path, plus archive names (pip also checks the disk).
    return (
        os.sep in text
        or (os.altsep is not None and os.altsep in text)
        or text.startswith(".")
        or text.endswith(_ARCHIVE_SUFFIXES)
    )


def _is_location(location: str) -> bool:
    """A URL or a path rather than a PEP 508 requirement (pip's parse_req_from_line)."""
    if _looks_like_url(location):
        return True
    if not _looks_like_path(location):
        return False
    # "name @ url" is a requirement: pip checks the part before "@" the same way.
    before, at, _ = location.partition("@")
    return not at or _looks_like_path(before.strip())


def _name_from_location(location: str) -> str | None:
    """The project name of a URL or path: ``#egg=name`` or a wheel filename."""
    egg = re.search(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)", location)
    if egg:
        return canonicalize_name(egg.group(1))
    basename = location.split("#", 1)[0].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    if basename.endswith(".whl"):
        try:
            return str(parse_wheel_filename(basename)[0])
        except InvalidWheelFilename:
            return None
    return None


class _Reader:
    """State for reading one file; produces a :class:`Source`."""

    def __init__(
        self, file: Path, display_path: str, fmt: SourceFormat, environ: Mapping[str, str]
    ):
        self.file = file
        self.display_path = display_path
        self.format = fmt
        self.environ = environ
        self.entries: list[Entry] = []
        self.options: list[OptionLine] = []
        self.includes: list[Include] = []
        self.problems: list[Problem] = []
        self.lines: list[Line] = []

    def problem(
        self,
        line: int,
        message: str,
        *,
        rule: str = "parse-error",
        column: int | None = None,
        excerpt: str | None = None,
        hint: str | None = None,
    ) -> None:
        # Every message and excerpt passes here: credentials in URLs never leave.
        self.problems.append(
            Problem(rule, line, redact(message), column, excerpt and redact(excerpt), hint)
        )

    def read(self, text: str) -> Source:
        physical = text.splitlines()
        # Every physical line belongs to exactly one logical line, and each logical
        # line is marked once, in order: _mark appends rather than overwrites.
        self.lines = []
        for first, last, logical, _ in join_lines(physical):
            self._logical(first + 1, last + 1, logical)
        return Source(
            path=self.display_path,
            file=self.file,
            format=self.format,
            entries=tuple(self.entries),
            lines=tuple(self.lines),
            options=tuple(self.options),
            includes=tuple(self.includes),
            problems=tuple(self.problems),
        )

    def _mark(
        self, first: int, last: int, kind: LineKind, comment: str | None, entry: int | None = None
    ) -> None:
        self.lines.append(Line(first, kind, comment, entry))
        if last == first:
            return
        cont = LineKind.CONTINUATION if kind is LineKind.ENTRY else kind
        for number in range(first + 1, last + 1):
            self.lines.append(Line(number, cont, None, entry))

    def _logical(self, first: int, last: int, logical: str) -> None:
        content, comment = split_comment(logical)
        body = content.strip()
        if not body:
            kind = LineKind.COMMENT if comment is not None else LineKind.BLANK
            self._mark(first, last, kind, comment)
            return
        column = len(content) - len(content.lstrip()) + 1
        shown = content.rstrip()  # the excerpt a caret points into: columns index it
        # Options are parsed on the text as written so that ${TOKEN} values never
        # reach an entry, a message or an include; they are expanded where used.
        raw_args, opts = break_args_options(body)
        try:
            parsed = parse_options(opts) if opts else []
        except OptionError as exc:
            self._mark(first, last, LineKind.OTHER, comment)
            # The caret goes under the offending option (its first occurrence as a word).
            where = body.find(exc.token or opts.split(" ", 1)[0], len(raw_args))
            self.problem(
                first,
                f"pip rejects this line: {exc}",
                column=column + max(where, 0),
                excerpt=shown,
                hint=_option_hint(str(exc)),
            )
            return
        raw_args = raw_args.strip()
        if not raw_args:
            editables = [value or "" for name, value in parsed if name == "--editable"]
            if editables:
                # pip takes the first -e of a line as its requirement and ignores the rest.
                index = self._unconstrainable(first, last, column, editables[0], editable=True)
                self._mark(first, last, LineKind.ENTRY, comment, index)
                return
            self._option_line(first, last, comment, parsed, column, shown)
            return
        options_column = column + body.find(opts) if opts else column
        self._requirement_line(
            first, last, comment, raw_args, parsed, column, shown, options_column
        )

    def _option_line(
        self,
        first: int,
        last: int,
        comment: str | None,
        parsed: list[tuple[str, str | None]],
        column: int,
        body: str,
    ) -> None:
        for name, value in parsed:
            if name in ("--hash", "--config-settings", "--global-option"):
                self.problem(
                    first,
                    f"{name} must follow a requirement on the same line",
                    column=column,
                    excerpt=body,
                )
            elif name in ("--requirement", "--constraint"):
                self._include(first, name, value or "")
            else:
                self.options.append(OptionLine(first, name, value))
        self._mark(first, last, LineKind.OPTION, comment)

    def _include(self, line: int, name: str, target: str) -> None:
        kind = "requirements" if name == "--requirement" else "constraints"
        expanded, _ = _expand(target, self.environ)
        if _looks_like_url(expanded) and not expanded.startswith("file:"):
            self.includes.append(Include(line, kind, target, None))
            self.problem(line, f"remote include {target} is not followed", rule="include-remote")
            return
        local = expanded.removeprefix("file://").removeprefix("file:")
        self.includes.append(Include(line, kind, target, self.file.parent / local))

    def _unconstrainable(
        self, first: int, last: int, column: int, location: str, *, editable: bool
    ) -> int:
        self.entries.append(
            Entry(
                line=first,
                column=column,
                text=location,
                requirement=None,
                name=_name_from_location(location),
                constrainable=False,
                editable=editable,
                end_line=last,
            )
        )
        return len(self.entries) - 1

    def _requirement_line(
        self,
        first: int,
        last: int,
        comment: str | None,
        raw_args: str,
        parsed: list[tuple[str, str | None]],
        column: int,
        body: str,
        options_column: int,
    ) -> None:
        args, changed = _expand(raw_args, self.environ)
        hashes: list[str] = []
        for name, value in parsed:
            if name == "--hash":
                algo, sep, digest = (value or "").partition(":")
                if not sep or not digest:
                    self.problem(
                        first,
                        "--hash must be a hash name and a value, like --hash=sha256:abcde",
                        column=column,
                        excerpt=body,
                    )
                elif algo not in _STRONG_HASHES:
                    self.problem(
                        first,
                        f"unsupported hash algorithm {algo!r}",
                        column=column,
                        excerpt=body,
                        hint=f"pip allows {', '.join(_STRONG_HASHES)}",
                    )
                else:
                    hashes.append(value or "")
            elif name not in ("--config-settings", "--global-option"):
                self.problem(
                    first,
                    f"pip ignores {name} after a requirement; put it on a line of its own",
                    rule="ignored-option",  # pip accepts the line: not a parse error
                    column=options_column,
                    excerpt=body,
                )
        location = args.split(" ; ", 1)[0].split("; ", 1)[0].strip()
        if _is_location(location):
            index = self._unconstrainable(first, last, column, raw_args, editable=False)
            self._mark(first, last, LineKind.ENTRY, comment, index)
            return
        requirement, error = parse_requirement(args)
        if requirement is None:
            offset, message = error or (0, "invalid requirement")
            self._mark(first, last, LineKind.OTHER, comment)
            self.problem(
                first,
                message,
                column=column + (0 if changed else offset),
                excerpt=body,
                hint=None if changed else requirement_hint(args, offset),
            )
            return
        self.entries.append(
            Entry(
                line=first,
                column=column,
                text=raw_args,
                requirement=requirement,
                name=canonicalize_name(requirement.name),
                constrainable=requirement.url is None,
                hashes=tuple(hashes),
                end_line=last,
            )
        )
        self._mark(first, last, LineKind.ENTRY, comment, len(self.entries) - 1)


def _option_hint(message: str) -> str | None:
    if message.startswith("no such option"):
        return (
            "requirements files accept -r, -c, -e, -i, --extra-index-url, -f, --pre, "
            "--no-binary, --only-binary, --trusted-host and, after a requirement, --hash"
        )
    return None


def parse_requirements(
    text: str,
    *,
    display_path: str,
    fmt: SourceFormat = SourceFormat.REQUIREMENTS,
    environ: Mapping[str, str] | None = None,
) -> Source:
    """Read a requirements file's decoded ``text`` as :func:`read_requirements` reads a file."""
    reader = _Reader(
        Path(display_path), display_path, fmt, os.environ if environ is None else environ
    )
    return reader.read(text)


def read_requirements(
    file: Path,
    *,
    display_path: str,
    fmt: SourceFormat = SourceFormat.REQUIREMENTS,
    environ: Mapping[str, str] | None = None,
) -> Source:
    """Read one pip requirements or constraints file (includes are recorded, not followed)."""
    reader = _Reader(file, display_path, fmt, os.environ if environ is None else environ)
    data = read_bounded(file, shown=display_path)
    if isinstance(data, Unreadable):
        reader.problem(1, data.message, rule=data.rule or "include-not-found", hint=data.hint)
        return reader.read("")
    text, problems = decode(data)
    source = reader.read(text)
    if problems:
        source = dataclasses.replace(source, problems=(*problems, *source.problems))
    return source
