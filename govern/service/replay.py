"""Replaying a requirements file's history by its diffs, with the events of a full re-read.

Notes: docs/internals.md#service.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.utils import canonicalize_name

from govern.audit import source_exclusions
from govern.config import Config
from govern.exclusions.model import Exclusion
from govern.sources.model import LineKind, Problem, Source, SourceFormat

if TYPE_CHECKING:
    from govern.git.history import Hunk

Keep = Callable[[str], bool] | None  # package name -> its vanished exclusions are kept

_BLANK, _COMMENT, _TEXT = 0, 1, 2  # what a physical line is, without parsing it
# How the comment reader sees the line above a block: an entry, an option, a comment
# (the same block, then), or neither.
_KIND = {
    LineKind.ENTRY: "e",
    LineKind.CONTINUATION: "e",
    LineKind.OPTION: "o",
    LineKind.COMMENT: "c",
}
# str.splitlines() breaks at these too (the reader's physical lines); a trailing
# backslash joins lines. Either makes git's lines and the reader's differ.
_NOT_PLAIN = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]|\\\\$")
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def split_lines(data: bytes) -> list[bytes]:
    """A file's lines as git counts them: split after each newline."""
    parts = data.split(b"\n")
    out = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def kept_packages(source: Source) -> Keep:
    """Which vanished exclusions a source that does not parse whole keeps.

    A requirements line that does not parse may still hold the clauses it held: those
    of the package it names (``pytz>=2010h`` names pytz) are kept; a line that names
    none, or a pyproject.toml that does not parse, keeps every clause of the source.
    None when every line parses.
    """
    names: set[str] = set()
    for problem in source.problems:
        if problem.rule != "parse-error":
            continue
        name = "" if source.format is SourceFormat.PYPROJECT else _bad_name(problem)
        if not name:
            return _everything
        names.add(name)
    return names.__contains__ if names else None


def _everything(_package: str) -> bool:
    return True


def _bad_name(problem: Problem) -> str:
    match = _NAME.match(problem.excerpt or "")
    return canonicalize_name(match[1]) if match else ""


def _keep(bad: Counter[str]) -> Keep:
    if not bad:
        return None
    if "" in bad:
        return _everything
    return set(bad).__contains__


class SourceReader:
    """Reads one source's text the way a full audit does (through a scratch file)."""

    def __init__(
        self, scratch: Path, *, path: str, fmt: SourceFormat, config: Config, repository: str
    ) -> None:
        """Read texts as ``path`` (format ``fmt``), writing them to a file in ``scratch``."""
        self.file = scratch / Path(path).name
        self.path, self.format, self.config, self.repository = path, fmt, config, repository

    def read(self, data: bytes) -> tuple[Source, list[Exclusion]]:
        """The source and its exclusions, for the file's bytes."""
        # A new file each time: rewriting one in place makes ext4 flush it on close
        # (auto_da_alloc), which is much slower.
        self.file.unlink(missing_ok=True)
        self.file.write_bytes(data)
        return source_exclusions(
            self.file,
            display_path=self.path,
            fmt=self.format,
            config=self.config,
            repository=self.repository,
        )


@dataclass(frozen=True, slots=True)
class Whole:
    """Every exclusion of the file, read whole."""

    seen: list[Exclusion]
    keep: Keep
    before: dict[str, int] | None = None  # key -> its line in the version before


@dataclass(frozen=True, slots=True)
class Changes:
    """The exclusions of the lines re-read, and what those lines held before."""

    seen: list[Exclusion]
    gone: dict[str, int | None]  # key -> the line it was on
    outside: int  # exclusions on the other lines (unchanged)
    keep: Keep


def _body(raw: bytes) -> str | None:
    """The line as the reader sees it (no line break), or None if not plain."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removesuffix("\n")
    text = text.removesuffix("\r")
    return None if _NOT_PLAIN.search(text) else text


def _class(body: str) -> int:
    stripped = body.strip()
    if not stripped:
        return _BLANK
    return _COMMENT if stripped.startswith("#") else _TEXT


def _plain_head(lines: Sequence[bytes]) -> bool:
    """No BOM and no coding line: the reader decodes the file as UTF-8."""
    if lines and lines[0].startswith(_BOMS):
        return False
    return not any(b"coding" in line for line in lines[:2])


class LineReplay:
    """One requirements file, commit after commit: what each line holds."""

    def __init__(self, reader: SourceReader) -> None:
        """Start with nothing known: the first version is read whole."""
        self.reader = reader
        self.valid = False
        self.body: list[str] = []
        self.cls = bytearray()  # _BLANK, _COMMENT or _TEXT per line (searched in C)
        self.kind: list[str] = []
        self.seen: list[tuple[Exclusion, ...]] = []
        self.bad: list[tuple[str, ...]] = []
        self.keys: Counter[str] = Counter()  # key -> lines holding it
        # Regions read (ahead): text -> kinds, exclusions, unparsable names per line.
        self.regions: dict[
            tuple[str, ...], tuple[list[str], list[tuple[Exclusion, ...]], list[tuple[str, ...]]]
        ] = {}
        self.broken: Counter[str] = Counter()  # names of lines that do not parse

    def whole(self, lines: list[bytes]) -> Whole:
        """Read the whole file, and learn its lines when it is plain text."""
        before: dict[str, int] | None = None
        if self.valid:  # the lines the last version's exclusions were on (not kept on rows)
            before = {}
            for number, held in enumerate(self.seen, start=1):
                for item in held:
                    before.setdefault(item.id, number)
        read, seen = self.reader.read(b"".join(lines))
        self._learn(lines, read, seen)
        return Whole(seen, kept_packages(read), before)

    def step(self, lines: list[bytes], hunks: Sequence[Hunk]) -> Whole | Changes:
        """The file after a commit (``lines``, which ``hunks`` made from the last ones)."""
        if self.valid and self.reader.config.comments.style == "above" and _plain_head(lines):
            changes = self._changes(hunks)
            if changes is not None:
                return changes
        return self.whole(lines)

    def _learn(self, lines: list[bytes], read: Source, seen: list[Exclusion]) -> None:
        self.valid = False
        bodies = [_body(line) for line in lines]
        if not _plain_head(lines) or len(read.lines) != len(lines):
            return
        plain: list[str] = []
        for body in bodies:
            if body is None:
                return
            plain.append(body)
        self.body = plain
        self.cls = bytearray(_class(body) for body in plain)
        self.kind = [_KIND.get(line.kind, "-") for line in read.lines]
        self.seen, self.bad = _by_line(len(plain), 0, seen, read.problems)
        self.keys = Counter(item.id for items in self.seen for item in items)
        self.broken = Counter(name for names in self.bad for name in names)
        self.valid = True

    def _changes(self, hunks: Sequence[Hunk]) -> Changes | None:
        """The re-read lines after ``hunks``; None when the whole file must be read."""
        old_body, old_kind, old_seen, old_bad = self.body, self.kind, self.seen, self.bad
        spliced = _splice(old_body, self.cls, hunks)
        if spliced is None:
            return None
        body, cls, spans = spliced
        kind: list[str] = []
        seen: list[tuple[Exclusion, ...]] = []
        bad: list[tuple[str, ...]] = []
        position = 0
        for start, end, first, last in spans:
            kind += old_kind[position:start]
            seen += old_seen[position:start]
            bad += old_bad[position:start]
            kind += ["?"] * (last - first)
            seen += [()] * (last - first)
            bad += [()] * (last - first)
            position = end
        kind += old_kind[position:]
        seen += old_seen[position:]
        bad += old_bad[position:]
        cores = _cores(spans, self.cls, cls)

        fresh = [True] * len(cores)  # cores to read (again)
        while any(fresh):
            if not self._read(cores, fresh, spans, body, old_body, cls, kind, seen, bad):
                return None
            fresh = [False] * len(cores)
            index = 0
            while index < len(cores):
                low, high, _, last_span = cores[index]
                old_high = high - (spans[last_span][3] - spans[last_span][1])
                if high < len(cls) and cls[high] == _COMMENT:
                    # The block below reads the line above it: if that changed kind, or
                    # the block was part of a longer one, the lines it covers change too.
                    before = old_kind[old_high - 1] if old_high > 0 else "-"
                    after = kind[high - 1] if high > 0 else "-"
                    if before != after or before == "c":
                        cores[index][1] = _walk_down(cls, high, through_comments=True)
                        fresh[index] = True
                        while index + 1 < len(cores) and cores[index + 1][0] <= cores[index][1]:
                            _, later_high, _, later_span = cores.pop(index + 1)
                            fresh.pop(index + 1)
                            cores[index][1] = max(cores[index][1], later_high)
                            cores[index][3] = later_span
                index += 1

        keys: Counter[str] = Counter()  # what the re-read lines change, checked first
        broken: Counter[str] = Counter()
        found: list[Exclusion] = []
        gone: dict[str, int | None] = {}
        for low, high, first_span, last_span in cores:
            old_low = low - (spans[first_span][2] - spans[first_span][0])
            old_high = high - (spans[last_span][3] - spans[last_span][1])
            before_keys = Counter(item.id for held in old_seen[old_low:old_high] for item in held)
            after_keys = Counter(item.id for held in seen[low:high] for item in held)
            for key in before_keys.keys() | after_keys.keys():
                if self.keys[key] + keys[key] - before_keys[key] > 0:
                    return None  # the same clause on an unchanged line: the first one counts
            keys.subtract(before_keys)
            keys.update(after_keys)
            broken.subtract(name for names in old_bad[old_low:old_high] for name in names)
            broken.update(name for names in bad[low:high] for name in names)
            for offset, held in enumerate(old_seen[old_low:old_high]):
                for item in held:
                    gone.setdefault(item.id, old_low + offset + 1)
            found.extend(item for held in seen[low:high] for item in held)
        self.body, self.cls, self.kind, self.seen, self.bad = body, cls, kind, seen, bad
        for total, change in ((self.keys, keys), (self.broken, broken)):
            for name, count in change.items():
                total[name] += count
                if total[name] <= 0:
                    del total[name]  # no line holds it any more
        core_keys = {item.id for item in found}
        return Changes(found, gone, len(self.keys) - len(core_keys), _keep(self.broken))

    def _read(
        self,
        cores: list[list[int]],
        fresh: list[bool],
        spans: list[tuple[int, int, int, int]],
        body: list[str],
        old_body: list[str],
        cls: bytearray,
        kind: list[str],
        seen: list[tuple[Exclusion, ...]],
        bad: list[tuple[str, ...]],
    ) -> bool:
        """Read the fresh cores, in one file (a blank line between two: nothing reads
        across it), each with the line above and the block below it; False when the
        whole file must be read instead."""
        wanted_regions: list[tuple[int, int, int, tuple[str, ...]]] = []
        for (low, high, first_span, last_span), wanted in zip(cores, fresh, strict=True):
            if not wanted:
                continue
            old_low = low - (spans[first_span][2] - spans[first_span][0])
            old_high = high - (spans[last_span][3] - spans[last_span][1])
            top, bottom = _region(cls, low, high)
            if any("^govern" in text for text in (*body[low:bottom], *old_body[old_low:old_high])):
                return False  # it annotates the line above it
            wanted_regions.append((low - top, low, high, tuple(body[top:bottom])))
        if not self._read_regions([region for *_, region in wanted_regions]):
            return False
        for at, low, high, region in wanted_regions:
            kinds, held, names = self.regions[region]
            for n in range(high - low):
                kind[low + n] = kinds[at + n]
                seen[low + n] = tuple(
                    item if item.line == low + n + 1 else replace(item, line=low + n + 1)
                    for item in held[at + n]
                )
                bad[low + n] = names[at + n]
        return True

    def _read_regions(self, regions: Iterable[tuple[str, ...]]) -> bool:
        """Read the regions not read yet, all in one file (a blank line between two:
        nothing reads across it, so each reads as it would alone)."""
        missing = list(dict.fromkeys(r for r in regions if r not in self.regions))
        if not missing:
            return True
        parts: list[str] = []
        starts: list[int] = []
        for region in missing:
            if parts:
                parts.append("")
            starts.append(len(parts))
            parts += region
        read, items = self.reader.read("".join(line + "\n" for line in parts).encode("utf-8"))
        if len(read.lines) != len(parts):
            return False
        held, names = _by_line(len(parts), 0, items, read.problems)  # once: not per region
        kinds = [_KIND.get(line.kind, "-") for line in read.lines]
        for region, start in zip(missing, starts, strict=True):
            end = start + len(region)
            self.regions[region] = (kinds[start:end], held[start:end], names[start:end])
        return True

    def prefetch(self, upcoming: Iterable[Sequence[Hunk]]) -> None:
        """Read ahead, in one file, the regions the next commits' hunks will re-read.

        Only what is syntactic is simulated (which lines are blank, comments, text);
        a region read here is the same text a later step asks for, or is not used.
        """
        self.regions.clear()
        if not self.valid:
            return
        body, cls = self.body, self.cls
        wanted: list[tuple[str, ...]] = []
        for hunks in upcoming:
            spliced = _splice(body, cls, hunks)
            if spliced is None:
                break
            body, new_cls, spans = spliced
            for low, high, _, _ in _cores(spans, cls, new_cls):
                top, bottom = _region(new_cls, low, high)
                wanted.append(tuple(body[top:bottom]))
            cls = new_cls
        self._read_regions(wanted)


def _region(cls: bytearray, low: int, high: int) -> tuple[int, int]:
    """What is read for the core ``[low, high)``: with the block below it, and the line
    above when a comment block in it must know whether it sits inside a list."""
    bottom = high
    while bottom < len(cls) and cls[bottom] == _COMMENT:
        bottom += 1
    top = low
    if low > 0 and cls[low - 1] == _TEXT and _COMMENT in cls[low:bottom]:
        top = low - 1
    return top, bottom


def _splice(
    old_body: list[str], old_cls: bytearray, hunks: Sequence[Hunk]
) -> tuple[list[str], bytearray, list[tuple[int, int, int, int]]] | None:
    """The lines and their classes after ``hunks``, and where each hunk went
    (old start, old end, new start, new end); None if a line is not plain."""
    body: list[str] = []
    cls = bytearray()
    spans: list[tuple[int, int, int, int]] = []
    position = 0
    for hunk in hunks:
        added: list[str] = []
        for raw in hunk.lines:
            text = _body(raw)
            if text is None:
                return None
            added.append(text)
        start, end = hunk.start, hunk.start + hunk.count
        if start < position or end > len(old_body):
            return None
        body += old_body[position:start]
        cls += old_cls[position:start]
        first = len(body)
        body += added
        cls += bytes(_class(text) for text in added)
        spans.append((start, end, first, len(body)))
        position = end
    body += old_body[position:]
    cls += old_cls[position:]
    return body, cls, spans


def _by_line(
    count: int, offset: int, items: Iterable[Exclusion], problems: Iterable[Problem], base: int = 0
) -> tuple[list[tuple[Exclusion, ...]], list[tuple[str, ...]]]:
    """Exclusions and unparsable names per line, for lines ``offset+1 ..`` of a read.

    The exclusions are renumbered as lines ``base+1 ..`` of the whole file.
    """
    seen: list[list[Exclusion]] = [[] for _ in range(count)]
    bad: list[list[str]] = [[] for _ in range(count)]
    for item in items:
        index = item.line - 1 - offset
        if 0 <= index < count:
            line = base + index + 1
            seen[index].append(item if item.line == line else replace(item, line=line))
    for problem in problems:
        index = problem.line - 1 - offset
        if problem.rule == "parse-error" and 0 <= index < count:
            bad[index].append(_bad_name(problem))
    return [tuple(found) for found in seen], [tuple(names) for names in bad]


def _mark_below(cls: bytearray, start: int) -> int:
    """The first blank or comment line at or after ``start`` (the end if none)."""
    found = [at for at in (cls.find(_BLANK, start), cls.find(_COMMENT, start)) if at >= 0]
    return min(found) if found else len(cls)


def _walk_down(cls: bytearray, start: int, *, through_comments: bool) -> int:
    """The end of the comment block at ``start`` (if asked) and the text lines below it."""
    j = start
    if through_comments:
        while j < len(cls) and cls[j] == _COMMENT:
            j += 1
    return _mark_below(cls, j)


def _cores(
    spans: list[tuple[int, int, int, int]], old_cls: bytearray, cls: bytearray
) -> list[list[int]]:
    """The lines to re-read for each change, merged: ``[low, high, first span, last span]``.

    A change inside the run of text lines below a comment block re-reads the block and
    the whole run (the block's reach depends on them all); so does a change that adds or
    removes a blank or comment line. A change in a run no block covers re-reads itself.
    """
    cores: list[list[int]] = []
    for number, (old_start, old_end, start, end) in enumerate(spans):
        structural = any(c != _TEXT for c in cls[start:end]) or any(
            c != _TEXT for c in old_cls[old_start:old_end]
        )
        low, high = start, end
        # The nearest blank or comment line above the change.
        i = max(cls.rfind(_BLANK, 0, start), cls.rfind(_COMMENT, 0, start))
        covered = i >= 0 and cls[i] == _COMMENT
        if covered:
            while i >= 0 and cls[i] == _COMMENT:
                i -= 1
            low = min(low, i + 1)
        if covered or structural:
            through = high > 0 and cls[high - 1] == _COMMENT
            high = max(high, _walk_down(cls, high, through_comments=through))
        if cores and low <= cores[-1][1]:
            cores[-1][1] = max(cores[-1][1], high)
            cores[-1][3] = number
        else:
            cores.append([low, high, number, number])
    return cores
