"""The edit of a proposal, by property: relax a generated line, edit the file, read it again.

Each case draws a specifier set (1 to 4 clauses over a small version universe, one of them
the exclusion), known-bad versions, a strategy and a candidate it can admit; the relaxation
is :func:`govern.edit.relax.relax`'s, computed as the store computes it (from the
requirement the audit read). The requirement is written into a requirements file among
other lines (comments, other packages, markers, options, a continuation, ``--hash`` pins)
or into a ``pyproject.toml`` array; the file is edited with
:func:`govern.edit.relax_source` and read again by the audit's own readers
(:func:`read_requirements`, :func:`read_pyproject`). Then:

- the requirement read again has the relaxation's specifiers: it admits the candidate and
  no known-bad version the old line kept out;
- every version of the universe the old line admitted stays admitted, for the strategies
  that promise it (``exclude`` except a moved pin, ``raise-cap``, ``drop``; with the
  ``==P.*`` pre-release exception), and every one at or above the candidate for
  ``raise-floor``;
- every other line (every other element and table) is byte-identical; the reason block is
  kept, a ``# govern: bad=`` names the versions the relaxation now keeps out with ``!=``;
- editing the result again changes nothing.

The strategies of tests/exclusions/test_relax.py are not imported: that file is a test
module outside a package, and importing it makes mypy see it under two names.
"""

from __future__ import annotations

import difflib
import functools
import tempfile
import tomllib
from collections.abc import Iterator
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from packaging.specifiers import Specifier, SpecifierSet
from packaging.version import Version

from govern.edit import Edit, EditRefused, relax_source
from govern.edit.blocks import evidence_comment
from govern.edit.relax import STRATEGIES, Relaxation, RelaxationRefused, Strategy, relax
from govern.exclusions.annotations import read_annotations
from govern.exclusions.classify import classify
from govern.exclusions.model import Kind
from govern.exclusions.ref import ExclusionRef
from govern.sources.model import Entry, Source
from govern.sources.pyproject import read_pyproject
from govern.sources.requirements_txt import read_requirements

V = Version
REQUIREMENTS_CASES = 7_000
PYPROJECT_CASES = 3_000  # 10,000 cases a run in all

_BASES = [f"{a}.{b}.{c}" for a in range(3) for b in range(3) for c in range(2)]
_VARIANTS = ["rc1", ".post1", ".dev0", "+l1"]
UNIVERSE = sorted({V(b) for b in _BASES} | {V(b + x) for b in _BASES for x in _VARIANTS})
_PUBLIC = [str(v) for v in UNIVERSE if v.local is None]
_PREFIXES = ["0", "1", "2", "0.1", "1.0", "1.2", "2.1", *_BASES]
_EXCLUSIONS = [
    [f"<{v}" for v in _PUBLIC],
    [f"<={v}" for v in _PUBLIC],
    [f"~={v}" for v in ["0.1", "1.0", "1.2", "2.1", *_BASES]],
    [f"=={p}.*" for p in _PREFIXES],
    [f"=={v}" for v in UNIVERSE],
    [f"==={b}" for b in _BASES],
    [f"!={v}" for v in UNIVERSE],
    [f"!={p}.*" for p in _PREFIXES],
    ["<0", "==1000000000.0.0"],
]
_ALL_EXCLUSIONS = sorted({c for shape in _EXCLUSIONS for c in shape})
_PINS = [f"=={v}" for v in UNIVERSE] + [f"==={b}" for b in _BASES]
_FLOORS = sorted({f">={v}" for v in _PUBLIC} | {f">{v}" for v in _PUBLIC})
_HASH_A = "sha256:" + "a" * 64
_HASH_B = "sha256:" + "b" * 64
_NEW_HASHES = ["sha256:" + "c" * 64, "sha256:" + "d" * 64, "sha256:" + "e" * 64]
EVIDENCE = "{c} verified on cuda13: https://ci.example/runs/7, installed {c}"
REASON = "# The release broke the runtime image (example/pkg#12)."


@functools.cache
def _spec(clause: str) -> Specifier:
    return Specifier(clause)


@functools.cache
def _in(clause: str, version: Version) -> bool:
    return _spec(clause).contains(version, prereleases=True)


def admits(clauses: tuple[str, ...], version: Version) -> bool:
    return all(_in(c, version) for c in clauses)


@dataclass(frozen=True)
class Case:
    """A requirement with one exclusion to relax, and how its line is written."""

    clauses: tuple[str, ...]
    target: str
    candidate: Version
    bad: tuple[Version, ...]
    published: tuple[Version, ...]
    strategy: Strategy
    name: str
    extras: str
    op_space: str
    comma: str
    marker: str
    split: int  # continue the line after this many clauses (0: one line)
    parens: bool  # the PEP 508 form name (>=1.0,<2.0), on one line
    hashes: int  # --hash options on the line (0: none)
    new_hashes: int  # hashes given to the edit
    block: str  # "", "reason", "reason+govern": the comment block right above
    inline: str  # the requirement's own comment
    before: tuple[str, ...]
    after: tuple[str, ...]
    newline: str

    def specifiers(self) -> str:
        joined = self.comma.join(f"{s.operator}{self.op_space}{s.version}" for s in self.written())
        return f"({joined})" if self.parens else joined

    def written(self) -> list[Specifier]:
        return [_spec(c) for c in self.clauses]


_OTHER_LINES = [
    "# other dependencies",
    "other-a >= 1.0",
    'other-b<3; python_version < "3.12"  # needed on old Pythons',
    "--extra-index-url https://example.org/simple",
    "",
    "other-c[x]==2.0",
    "-r base.txt",
]


@functools.cache
def _admitting(version: Version) -> list[str]:
    """The clauses (exclusions and floors) that admit ``version``."""
    return [c for c in _ALL_EXCLUSIONS + _FLOORS if _in(c, version)]


@st.composite
def cases(draw: st.DrawFn, *, hashes: bool = True) -> Case:
    """The candidate first, then an exclusion that keeps it out (a not-equal one mostly
    admits it: nothing to change), then other clauses that mostly admit it."""
    candidate = draw(st.sampled_from(UNIVERSE))
    with_hashes = hashes and draw(st.integers(0, 3)) == 0  # a pin with --hash options
    shape = _PINS if with_hashes else draw(st.sampled_from(_EXCLUSIONS))
    keeps_out = [x for x in shape if not _in(x, candidate)]
    if shape[0].startswith("!=") and draw(st.integers(0, 4)):
        keeps_out = [x for x in shape if _in(x, candidate)]  # nothing to change
    target = draw(st.sampled_from(keeps_out or shape))
    others = [
        draw(st.sampled_from(_admitting(candidate) if draw(st.integers(0, 9)) else _FLOORS))
        for _ in range(0 if with_hashes else draw(st.integers(0, 3)))
    ]
    position = draw(st.integers(0, len(others)))
    clauses = tuple(
        dict.fromkeys(str(_spec(c)) for c in [*others[:position], target, *others[position:]])
    )
    bad = tuple(draw(st.lists(st.sampled_from(UNIVERSE), max_size=3, unique=True)))
    if candidate in bad and draw(st.integers(0, 9)):
        bad = tuple(b for b in bad if b != candidate)
    published = draw(st.sampled_from([(), tuple(UNIVERSE)]))
    strategy = draw(st.sampled_from(["exclude", "exclude", *STRATEGIES]))
    op_space = draw(st.sampled_from(["", " "]))
    split = draw(st.integers(0, len(clauses) - 1)) if len(clauses) > 1 else 0
    return Case(
        clauses=clauses,
        target=target,
        candidate=candidate,
        bad=bad,
        published=published,
        strategy=strategy,
        name=draw(st.sampled_from(["pkg", "Pkg_Name", "cupy-cuda13x"])),
        extras=draw(st.sampled_from(["", "[cuda]", "[a, b]"])),
        op_space=op_space,
        comma=draw(st.sampled_from([",", ", ", " , "])),
        marker=draw(
            st.sampled_from(["", '; python_version >= "3.11"', ' ; sys_platform == "linux"'])
        ),
        split=split,
        parens=not split and draw(st.integers(0, 5)) == 0,
        hashes=draw(st.integers(1, 2)) if with_hashes else 0,
        new_hashes=draw(st.integers(0, 3)),
        block=draw(st.sampled_from(["", "reason", "reason+govern"])),
        inline=draw(st.sampled_from(["", "  # see example/pkg#12", " # govern: owner=@team"])),
        before=tuple(draw(st.lists(st.sampled_from(_OTHER_LINES), max_size=3))),
        after=tuple(draw(st.lists(st.sampled_from(_OTHER_LINES), max_size=3))),
        newline=draw(st.sampled_from(["\n", "\r\n"])),
    )


def bad_out(case: Case) -> set[Version]:
    """The known-bad versions the old line keeps out (the capped release if published)."""
    out = set(case.bad)
    spec = _spec(case.target)
    kinds = classify(spec)
    if (
        kinds
        and kinds[0] is Kind.CAP
        and spec.operator == "<"
        and V(spec.version) in case.published
    ):
        out.add(V(spec.version))
    return {b for b in out if not admits(case.clauses, b)}


def relaxed(case: Case, entry: Entry) -> Relaxation | None:
    """The relaxation as the store computes it (from the requirement the audit read), with
    the case's strategy or, when it refuses, the first of the others that admits the
    candidate. None: every strategy refuses."""
    assert entry.requirement is not None
    for strategy in dict.fromkeys((case.strategy, *STRATEGIES)):
        try:
            return relax(
                entry.requirement.specifier,
                case.target,
                case.candidate,
                case.bad,
                strategy=strategy,
                published=case.published,
            )
        except RelaxationRefused:
            continue
    return None


def check_versions(case: Case, new: SpecifierSet, r: Relaxation) -> None:
    """The candidate in, the bad versions out, and what the old line admitted kept."""
    c = case.candidate
    assert new == r.after
    assert new.contains(c, prereleases=True)
    assert not [b for b in bad_out(case) if new.contains(b, prereleases=True)]
    kinds = classify(_spec(case.target))
    assert kinds is not None
    pin_moved = r.strategy == "exclude" and kinds[0] is Kind.PIN
    low = None  # ==P.* gives way to >=P: P's own pre-releases go (relax's stated exception)
    if _spec(case.target).version.endswith(".*"):
        low = V(_spec(case.target).version.removesuffix(".*"))
    for v in sorted({*UNIVERSE, *case.bad, c}):
        if not admits(case.clauses, v) or new.contains(v, prereleases=True):
            continue
        assert (
            pin_moved
            or (r.strategy == "raise-floor" and v < c)
            or (low is not None and v.is_prerelease and v < low)
        ), f"{v} was admitted and is lost"


def only_changed(old: str, new: str, allowed: set[int], comments: set[str]) -> None:
    """Every line but the ``allowed`` old ones (0-based) is byte-identical; the lines added
    are the edited ones, ``comments`` (the evidence) or ``--hash`` options."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        assert set(range(i1, i2)) <= allowed, (tag, a[i1:i2], b[j1:j2])
        edited = [x for x in b[j1:j2] if x.strip() not in comments]
        edited = [x for x in edited if not x.strip().startswith("--hash")]
        assert len(edited) <= i2 - i1, (a[i1:i2], b[j1:j2])


def others_read(source: Source, entry: Entry) -> list[tuple[str, str | None, tuple[str, ...]]]:
    """What the audit reads of every exclusion but ``entry``: text, reason, bad= versions."""
    notes = read_annotations(source)
    return [
        (e.text, n.reason, n.bad_versions)
        for e, n in zip(source.entries, notes, strict=True)
        if e is not entry and _excludes(e)
    ]


def _excludes(entry: Entry) -> bool:
    """Whether the entry holds an exclusion (only those have a reason anybody reads)."""
    return entry.requirement is not None and any(
        classify(s) is not None for s in entry.requirement.specifier
    )


def explains_another(source: Source, entry: Entry) -> bool:
    """Whether the block above ``entry`` is the reason of another exclusion of the file."""
    notes = read_annotations(source)
    return any(
        e is not entry
        and _excludes(e)
        and "The release broke the runtime image" in (n.reason or "")
        for e, n in zip(source.entries, notes, strict=True)
    )


# -- requirements files -------------------------------------------------------------------


def requirement_lines(case: Case, hashes: tuple[str, ...]) -> list[str]:
    nl = case.newline
    head = f"{case.name}{case.extras}{' ' if case.op_space else ''}"
    written = [f"{s.operator}{case.op_space}{s.version}" for s in case.written()]
    if case.split:
        first = f"{head}{case.comma.join(written[: case.split])}, \\"
        second = f"    {case.comma.join(written[case.split :])}{case.marker}"
        lines = [first, second]
    else:
        lines = [f"{head}{case.specifiers()}{case.marker}"]
    if hashes:
        lines[-1] += " \\"
        lines += [f"    --hash={h} \\" for h in hashes[:-1]] + [f"    --hash={hashes[-1]}"]
    lines[-1] += case.inline
    return [line + nl for line in lines]


def block_lines(case: Case) -> list[str]:
    bad = ",".join(str(b) for b in case.bad)
    block = {
        "": [],
        "reason": [REASON],
        "reason+govern": [
            REASON,
            f"# govern: {f'bad={bad} ' if bad else ''}link=https://example.org/i/12 owner=@rt"
            " review-by=2027-01-31",
        ],
    }[case.block]
    return [line + case.newline for line in block]


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


def read_back(folder: Path, text: str, name: str) -> Source:
    path = folder / name
    path.write_text(text, encoding="utf-8", newline="")
    if name == "pyproject.toml":
        return read_pyproject(path, display_path=name)
    return read_requirements(path, display_path=name, environ={})


def entry_of(source: Source, case: Case) -> Entry:
    found = [e for e in source.entries if e.name == case.name.lower().replace("_", "-")]
    assert len(found) == 1, (source.entries, source.problems)
    return found[0]


@settings(
    max_examples=REQUIREMENTS_CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(cases())
@example(  # the CuPy line, with its reason and CRLF line ends
    Case(
        clauses=("<14.1.0",),
        target="<14.1.0",
        candidate=V("14.1.1"),
        bad=(),
        published=(V("14.1.0"),),
        strategy="exclude",
        name="cupy-cuda13x",
        extras="",
        op_space=" ",
        comma=",",
        marker="",
        split=0,
        parens=False,
        hashes=0,
        new_hashes=0,
        block="reason",
        inline="",
        before=("lmcache >= 0.3.9",),
        after=(),
        newline="\r\n",
    )
)
def test_a_relaxed_requirements_file_reads_back_as_the_relaxation(folder: Path, case: Case) -> None:
    hashes = (_HASH_A, _HASH_B)[: case.hashes]
    nl = case.newline
    before = [line + nl for line in case.before]
    block = block_lines(case)
    lines = requirement_lines(case, hashes)
    after = [line + nl for line in case.after]
    text = "".join([*before, *block, *lines, *after])
    source = read_back(folder, text, "requirements.txt")
    entry = entry_of(source, case)
    r = relaxed(case, entry)
    if r is None:
        return
    given = tuple(_NEW_HASHES[: case.new_hashes]) if case.new_hashes else None
    evidence = EVIDENCE.format(c=case.candidate)

    def edit(on: str) -> Edit:
        return relax_source(
            on,
            ref=ExclusionRef(
                key="0123456789abcdef",
                repository="octo-org/app",
                source="requirements.txt",
                line=entry.line,
                package=entry.name or "",
                requirement=entry.text,
                clause=",".join(r.after_clauses),
                group=None,
            ),
            format="requirements",
            specifier=",".join(r.after_clauses),
            candidate=str(case.candidate),
            evidence=[evidence],
            bad_versions=[str(b) for b in case.bad],
            hashes=given,
        )

    pinned = len(r.after) == 1 and next(iter(r.after)).operator in ("==", "===")
    if hashes and r.changed and (given is None or not pinned):
        with pytest.raises(EditRefused, match="hash"):
            edit(text)
        return
    done = edit(text)
    assert done.changed == r.changed
    if not r.changed:
        assert done.text == text
        return
    again = read_back(folder, done.text, "requirements.txt")
    new = entry_of(again, case)
    assert new.requirement is not None
    check_versions(case, new.requirement.specifier, r)
    assert (new.requirement.marker, new.requirement.extras) == (
        entry.requirement.marker if entry.requirement else None,
        entry.requirement.extras if entry.requirement else set(),
    )
    if hashes:
        assert new.hashes == given
    # A block that the audit gives to another exclusion too (in the file as edited) is
    # theirs: left as it is.
    shared = bool(case.block) and explains_another(again, new)
    # everything else byte-identical: the other entries, and the lines around
    first = len(before) + len(block)
    allowed = set(range(first, first + len(lines)))
    if case.block == "reason+govern" and not shared:
        allowed.add(first - 1)
    if "govern:" in case.inline or (case.block == "reason+govern" and not shared):
        note = read_annotations(again)[again.entries.index(new)]
        added = {
            s.version for s in r.after if s.operator == "!=" and str(s) not in r.before_clauses
        }
        assert {V(v) for v in added} <= {V(b) for b in note.bad_versions}
    comments = set() if shared else {f"# {evidence_comment(evidence)}"}
    only_changed(text, done.text, allowed, comments)
    assert all(x.endswith(nl) for x in done.text.splitlines(keepends=True))
    assert [e.text for e in again.entries if e is not new] == [
        e.text for e in source.entries if e is not entry
    ]
    # Nothing of the edit reaches another line: not the evidence, not a bad= version.
    added_bad = {str(s.version) for s in r.after if str(s) not in r.before_clauses}
    # Line by line (two lines may read the same): the edit moves no line of another.
    for (_, _, was), (_, reason, bad) in zip(
        others_read(source, entry), others_read(again, new), strict=True
    ):
        assert evidence not in (reason or "")
        assert not (set(bad) - set(was)) & added_bad
    if case.block:
        annotation = read_annotations(again)[again.entries.index(new)]
        assert annotation.reason is not None
        assert "The release broke the runtime image" in annotation.reason
        # The evidence is its own field (verified=), never part of the reason.
        as_read = evidence.replace(" verified on ", " on ", 1)
        assert as_read not in annotation.reason
        assert (as_read in annotation.evidence) is not shared
    # a second run changes nothing
    repeat = edit(done.text)
    assert not repeat.changed
    assert repeat.text == done.text


# -- pyproject.toml -----------------------------------------------------------------------

_GROUPS = [
    "project.dependencies",
    "project.optional-dependencies.kv",
    "dependency-groups.dev",
    "build-system.requires",
]


@dataclass(frozen=True)
class Toml:
    group: str
    multiline: bool
    literal: bool
    trailing_comma: bool


def toml_string(value: str, literal: bool) -> str:
    if literal and "'" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def toml_array(
    items: list[str], layout: Toml | None, comments: list[str], inline: str, nl: str
) -> str:
    """An array; with ``layout``, its last item is the target (comments above it)."""
    if layout is None or layout.multiline:
        out = ["["]
        for index, item in enumerate(items):
            last = index == len(items) - 1
            if last and layout is not None:
                out.extend(f"    {c}" for c in comments)
            comma = "," if not last or layout is None or layout.trailing_comma else ""
            out.append(f"    {item}{comma}{inline if last and layout is not None else ''}")
        out.append("]")
        return nl.join(out)
    return "[" + ", ".join(items) + "]"


def pyproject(case: Case, layout: Toml, value: str) -> str:
    nl = case.newline
    inline = f"  {case.inline.strip()}" if case.inline and layout.multiline else ""
    comments = [line.rstrip("\r\n") for line in block_lines(case)] if layout.multiline else []

    def array(group: str, others: list[str]) -> str:
        items = [toml_string(o, layout.literal) for o in others]
        if group != layout.group:
            return toml_array(items, None, [], "", nl)
        target = toml_string(value, layout.literal)
        return toml_array([*items, target], layout, comments, inline, nl)

    dependencies = array("project.dependencies", ["other-a >= 1.0", 'other-b<3; os_name == "nt"'])
    dev = array("dependency-groups.dev", ["ruff"]).replace("[", '[{include-group = "test"}, ', 1)
    return nl.join(
        [
            "[build-system]",
            f"requires = {array('build-system.requires', ['setuptools>=61'])}",
            "",
            "[project]",
            'name = "demo"',
            'version = "1.0"',
            "# the runtime's dependencies",
            f"dependencies = {dependencies}",
            "",
            "[project.optional-dependencies]",
            f"kv = {array('project.optional-dependencies.kv', ['lmcache >= 0.3.9'])}",
            "",
            "[dependency-groups]",
            'test = ["pytest>=8"]',
            f"dev = {dev}",
            "",
        ]
    )


@settings(
    max_examples=PYPROJECT_CASES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    cases(hashes=False),
    st.builds(Toml, st.sampled_from(_GROUPS), st.booleans(), st.booleans(), st.booleans()),
)
def test_a_relaxed_pyproject_reads_back_as_the_relaxation(
    folder: Path, case: Case, layout: Toml
) -> None:
    value = (
        f"{case.name}{case.extras}{' ' if case.op_space else ''}{case.specifiers()}{case.marker}"
    )
    text = pyproject(case, layout, value)
    source = read_back(folder, text, "pyproject.toml")
    assert not source.problems, (text, source.problems)
    entry = entry_of(source, case)
    assert entry.group == layout.group
    r = relaxed(case, entry)
    if r is None:
        return
    evidence = EVIDENCE.format(c=case.candidate)

    def edit(on: str) -> Edit:
        return relax_source(
            on,
            ref=ExclusionRef(
                key="0123456789abcdef",
                repository="octo-org/app",
                source="pyproject.toml",
                line=entry.line,
                package=entry.name or "",
                requirement=entry.text,
                clause=",".join(r.after_clauses),
                group=entry.group,
            ),
            format="pyproject",
            specifier=",".join(r.after_clauses),
            candidate=str(case.candidate),
            evidence=[evidence],
            bad_versions=[str(b) for b in case.bad],
        )

    done = edit(text)
    assert done.changed == r.changed
    if not r.changed:
        assert done.text == text
        return
    again = read_back(folder, done.text, "pyproject.toml")
    new = entry_of(again, case)
    assert new.requirement is not None
    assert new.group == layout.group
    check_versions(case, new.requirement.specifier, r)
    # the document: only that string changed
    old_data, new_data = tomllib.loads(text), tomllib.loads(done.text)
    assert _without(old_data, layout.group, entry.text) == _without(
        new_data, layout.group, new.text
    )
    allowed = {entry.line - 1}
    if case.block == "reason+govern" and layout.multiline:
        allowed.add(entry.line - 2)
    only_changed(text, done.text, allowed, {f"# {evidence_comment(evidence)}"})
    assert all(x.endswith(case.newline) for x in done.text.splitlines(keepends=True))
    lines = done.text.splitlines()
    if layout.multiline:
        assert lines[new.line - 2].strip() == f"# {evidence_comment(evidence)}"
        note = read_annotations(again)[again.entries.index(new)]
        if case.block:
            assert note.reason is not None
            assert "The release broke the runtime image" in note.reason
        if "govern:" in case.inline or case.block == "reason+govern":
            added = {
                s.version for s in r.after if s.operator == "!=" and str(s) not in r.before_clauses
            }
            assert {V(v) for v in added} <= {V(b) for b in note.bad_versions}
    else:
        assert evidence_comment(evidence) not in done.text
    repeat = edit(done.text)
    assert not repeat.changed
    assert repeat.text == done.text


def _without(data: dict[str, object], group: str, value: str) -> dict[str, object]:
    """The document with the element ``value`` of ``group`` removed."""
    copy = deepcopy(data)
    node: object = copy
    for part in group.split(".", 2 if group.startswith("project.optional") else 1):
        assert isinstance(node, dict)
        node = node[part]
    assert isinstance(node, list)
    node.remove(value)
    return copy
