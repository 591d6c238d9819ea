"""Value types shared by the source readers and everything downstream.

All positions are 1-based. ``Source.lines`` is the file's physical layout (one
:class:`Line` per physical line) so that annotations can be read from comments
without re-reading the file.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # parsed by the readers: this module only names the type
    from packaging.requirements import Requirement


class SourceFormat(enum.StrEnum):
    """What kind of file a source is (the ``format`` field of the audit JSON)."""

    REQUIREMENTS = "requirements"
    CONSTRAINTS = "constraints"
    PYPROJECT = "pyproject"
    # Locks (sources/locks.py): how an intent was resolved, never its exclusions.
    COMPILED = "compiled"  # pip-compile's or uv pip compile's output
    UV_LOCK = "uv.lock"
    POETRY_LOCK = "poetry.lock"
    PDM_LOCK = "pdm.lock"
    PYLOCK = "pylock"  # PEP 751: pylock.toml, pylock.<name>.toml
    PIPFILE_LOCK = "pipfile.lock"

    @property
    def is_lock(self) -> bool:
        """Whether a file of this format is a lock (its pins are no exclusions)."""
        return self not in (
            SourceFormat.REQUIREMENTS,
            SourceFormat.CONSTRAINTS,
            SourceFormat.PYPROJECT,
        )


class LineKind(enum.StrEnum):
    """The role of one physical line, used to attach comments to entries."""

    BLANK = "blank"
    COMMENT = "comment"  # a line that is only a comment
    ENTRY = "entry"  # the first physical line of an entry
    CONTINUATION = "continuation"  # a later physical line of a multi-line entry
    OPTION = "option"  # a pip option line (--extra-index-url, -r, ...): transparent to comments
    OTHER = "other"  # anything else (TOML syntax, an unparsable line): breaks comment blocks


@dataclass(frozen=True, slots=True)
class Line:
    """One physical line: its role, its comment text (without ``#``) and its entry."""

    number: int
    kind: LineKind
    comment: str | None = None
    entry: int | None = None  # index into Source.entries when kind is ENTRY/CONTINUATION


@dataclass(frozen=True, slots=True)
class Entry:
    """One requirement as declared in a source.

    ``text`` is the requirement as written (before ``${VAR}`` expansion, comment
    and options removed); ``requirement`` is its parse. An entry that cannot be
    constrained by a version (an editable install, a URL, a local path) has
    ``constrainable=False`` and may have no parsed requirement.
    """

    line: int
    column: int
    text: str
    requirement: Requirement | None
    name: str | None  # canonical (PEP 503) name
    constrainable: bool = True
    editable: bool = False
    group: str | None = None  # pyproject location, e.g. "project.dependencies"
    hashes: tuple[str, ...] = ()
    end_line: int | None = None


@dataclass(frozen=True, slots=True)
class OptionLine:
    """A pip option line, recorded for later use (``--index-url`` and friends)."""

    line: int
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class Include:
    """A ``-r``/``-c`` include or a PEP 735 ``include-group``."""

    line: int
    kind: str  # "requirements", "constraints" or "group"
    target: str
    resolved: Path | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong in a source, reported as a finding with a caret."""

    rule: str
    line: int
    message: str
    column: int | None = None
    excerpt: str | None = None  # the text the caret points into
    hint: str | None = None
    package: str | None = None


@dataclass(frozen=True, slots=True)
class ConfiguredLock:
    """A file the configuration names as a lock (``[[tool.govern.locks]]``): a glob over
    root-relative paths, the command that makes it, the intent it resolves."""

    path: str
    command: str | None = None
    intent: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LockOrigin:
    """What made a lock and from what: the tool (its version where the lock says), the
    command its header records, and the intent it resolves (root-relative paths)."""

    tool: str  # "pip-compile", "uv pip compile", "uv", "poetry", "pdm", "pip", "pipenv"
    tool_version: str | None
    command: str | None
    inputs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Source:
    """One parsed source file (an intent, or a lock: ``lock`` says how it was made)."""

    path: str  # relative, POSIX separators: how the file is shown and keyed
    file: Path
    format: SourceFormat
    entries: tuple[Entry, ...] = ()
    lines: tuple[Line, ...] = ()
    options: tuple[OptionLine, ...] = ()
    includes: tuple[Include, ...] = ()
    problems: tuple[Problem, ...] = field(default=())
    lock: LockOrigin | None = None

    def line(self, number: int) -> Line | None:
        """The physical line ``number`` (1-based), if the file has it."""
        if 1 <= number <= len(self.lines):
            return self.lines[number - 1]
        return None
