"""Tests for :mod:`govern.sources.pyproject`: entries, positions, lines and problems."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from govern.sources.model import Entry, Include, LineKind, Source, SourceFormat
from govern.sources.pep508 import EQUALS_HINT
from govern.sources.pyproject import read_pyproject

AIRFLOW = (
    Path(__file__).resolve().parent.parent / "data" / "airflow" / "airflow-core__pyproject.toml"
)


def write(tmp_path: Path, text: str, *, dedent: bool = True) -> Source:
    """Write ``text`` as ``pyproject.toml`` in ``tmp_path`` and read it."""
    path = tmp_path / "pyproject.toml"
    path.write_text(textwrap.dedent(text) if dedent else text, encoding="utf-8", newline="")
    return read_pyproject(path, display_path="pyproject.toml")


def physical(path: Path) -> list[str]:
    """The physical lines of a file, as the reader numbers them."""
    return path.read_text(encoding="utf-8").split("\n")


def by_name(source: Source, name: str) -> Entry:
    """The only entry named ``name``."""
    found = [entry for entry in source.entries if entry.name == name]
    assert len(found) == 1, found
    return found[0]


def points_at(source: Source, entry: Entry) -> bool:
    """Whether the entry's line and column point at its text in the file."""
    line = physical(source.file)[entry.line - 1]
    return line[entry.column - 1 :].startswith(entry.text)


# --------------------------------------------------------------------------
# The airflow-core pyproject.toml (a real file, copied byte for byte)
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def airflow() -> Source:
    """The airflow-core pyproject.toml, read once."""
    return read_pyproject(AIRFLOW, display_path="airflow-core/pyproject.toml")


def test_airflow_reads_without_problems(airflow: Source) -> None:
    assert airflow.problems == ()
    assert airflow.format is SourceFormat.PYPROJECT
    assert airflow.path == "airflow-core/pyproject.toml"
    assert len(airflow.lines) == len(AIRFLOW.read_text(encoding="utf-8").splitlines())
    assert [line.number for line in airflow.lines] == list(range(1, len(airflow.lines) + 1))


def test_airflow_every_entry_points_at_its_string(airflow: Source) -> None:
    lines = physical(AIRFLOW)
    for entry in airflow.entries:
        assert entry.text in lines[entry.line - 1], entry
        assert points_at(airflow, entry), entry
        assert entry.end_line == entry.line


def test_airflow_entries_are_in_file_order(airflow: Source) -> None:
    positions = [(entry.line, entry.column) for entry in airflow.entries]
    assert positions == sorted(positions)
    groups = []
    for entry in airflow.entries:
        if entry.group not in groups:
            groups.append(entry.group)
    assert groups == [
        "build-system.requires",
        "project.requires-python",
        "project.dependencies",
        "project.optional-dependencies.async",
        "project.optional-dependencies.graphviz",
        "project.optional-dependencies.kerberos",
        "project.optional-dependencies.memray",
        "project.optional-dependencies.otel",
        "project.optional-dependencies.statsd",
        "project.optional-dependencies.all",
        "dependency-groups.dev",
        "dependency-groups.docs",
    ]


def test_airflow_requires_python(airflow: Source) -> None:
    python = by_name(airflow, "python")
    assert python.group == "project.requires-python"
    assert python.text == ">=3.10,!=3.14"
    assert (python.line, python.column) == (44, 20)
    assert python.requirement is not None
    assert python.requirement.name == "python"
    assert "!=3.14" in {str(spec) for spec in python.requirement.specifier}
    assert not python.requirement.specifier.contains(Version("3.14"))
    assert airflow.lines[43].kind is LineKind.ENTRY
    assert airflow.lines[43].entry == airflow.entries.index(python)


def test_airflow_opentelemetry_proto(airflow: Source) -> None:
    entry = by_name(airflow, "opentelemetry-proto")
    assert entry.text == "opentelemetry-proto<9999,>=1.27.0"
    assert (entry.line, entry.column) == (119, 6)
    assert entry.group == "project.dependencies"
    # The line just above is the end of a nine-line comment block.
    assert airflow.lines[117].kind is LineKind.COMMENT
    assert airflow.lines[118].kind is LineKind.ENTRY


def test_airflow_aiosqlite_below_its_comments(airflow: Source) -> None:
    entry = by_name(airflow, "aiosqlite")
    assert entry.text == "aiosqlite>=0.20.0,!=0.22.0"
    assert entry.line == 72
    first, second, own = airflow.lines[69:72]
    assert first.kind is LineKind.COMMENT
    assert first.comment == (
        "aiosqlite 0.22.0 has a problem with hanging pytest sessions and we excluded it"
    )
    assert second.kind is LineKind.COMMENT
    assert second.comment == "See https://github.com/omnilib/aiosqlite/issues/369"
    assert own.kind is LineKind.ENTRY
    assert own.entry is not None
    assert airflow.entries[own.entry] is entry
    assert own.comment is None


def test_airflow_graphviz_keeps_its_marker(airflow: Source) -> None:
    entry = by_name(airflow, "graphviz")
    assert entry.group == "project.optional-dependencies.graphviz"
    assert entry.requirement is not None
    assert entry.requirement.marker is not None
    assert str(entry.requirement.marker) == 'sys_platform != "darwin"'
    assert entry.line == 179
    assert [line.kind for line in airflow.lines[175:179]] == [
        LineKind.COMMENT,
        LineKind.COMMENT,
        LineKind.COMMENT,
        LineKind.ENTRY,
    ]


def test_airflow_single_quoted_and_spaced_strings(airflow: Source) -> None:
    libcst = by_name(airflow, "libcst")
    assert libcst.text == "libcst >=1.8.2"
    assert (libcst.line, libcst.column) == (103, 6)
    metadata = [e for e in airflow.entries if e.name == "importlib-metadata"]
    assert [e.line for e in metadata] == [97, 98]


def test_airflow_dependency_groups(airflow: Source) -> None:
    dev = [e for e in airflow.entries if e.group == "dependency-groups.dev"]
    docs = [e for e in airflow.entries if e.group == "dependency-groups.docs"]
    assert len(dev) == 11
    assert dev[0].text == "apache-airflow-core[all]"
    assert [e.text for e in docs] == ["apache-airflow-devel-common[docs]"]
    assert docs[0].line == 292
    fab = next(e for e in dev if e.name == "apache-airflow-providers-fab")
    assert fab.requirement is not None
    assert fab.requirement.marker is not None
    assert airflow.includes == ()


def test_airflow_build_system(airflow: Source) -> None:
    build = [e for e in airflow.entries if e.group == "build-system.requires"]
    assert [e.line for e in build] == list(range(20, 29))
    assert build[0].name == "gitpython"
    assert build[0].text == "GitPython==3.1.45"


def test_airflow_line_kinds(airflow: Source) -> None:
    kinds = {line.number: line.kind for line in airflow.lines}
    assert kinds[1] is LineKind.COMMENT
    assert kinds[17] is LineKind.BLANK
    assert kinds[18] is LineKind.OTHER  # [build-system]
    assert kinds[19] is LineKind.OTHER  # requires = [
    assert kinds[29] is LineKind.OTHER  # ]
    assert kinds[68] is LineKind.OTHER  # dependencies = [
    assert kinds[280] is LineKind.COMMENT  # a bare "#"
    assert airflow.lines[279].comment == ""
    assert airflow.lines[8].comment == "  http://www.apache.org/licenses/LICENSE-2.0"
    entry_lines = {line.number for line in airflow.lines if line.kind is LineKind.ENTRY}
    assert entry_lines == {entry.line for entry in airflow.entries}


# --------------------------------------------------------------------------
# Layouts, quoting, comments
# --------------------------------------------------------------------------


def test_hash_inside_string_is_not_a_comment(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        """\
        [project]
        dependencies = [
            "pkg @ https://example.com/pkg.zip#sha256=abc",  # pinned: see issue #12
            "other>=1; python_version >= '3.9'" # trailing
            , "third"
        ]
        """,
    )
    assert source.problems == ()
    url, other, third = source.entries
    assert url.text == "pkg @ https://example.com/pkg.zip#sha256=abc"
    assert url.constrainable is False
    assert (url.line, url.column) == (3, 6)
    assert source.lines[2].kind is LineKind.ENTRY
    assert source.lines[2].comment == "pinned: see issue #12"
    assert source.lines[3].comment == "trailing"
    assert other.constrainable is True
    assert (third.line, third.column) == (5, 8)
    assert source.lines[4].kind is LineKind.ENTRY


def test_single_quoted_and_literal_strings(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        """\
        [project]
        requires-python = '>=3.11'
        dependencies = [
          'alpha>=1.0',
          '''beta==2.0''',
          "gamma<3",
        ]
        """,
    )
    assert source.problems == ()
    assert [(e.name, e.line, e.column) for e in source.entries] == [
        ("python", 2, 20),
        ("alpha", 4, 4),
        ("beta", 5, 6),
        ("gamma", 6, 4),
    ]
    assert all(points_at(source, e) for e in source.entries)


def test_single_line_arrays_and_dotted_keys(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        """\
        project.dependencies = ["a>=1", 'b<2']  # both
        build-system = { requires = ["setuptools>=61"] }

        [project.optional-dependencies]
        "async" = ["trio"]
        'tls' = [
            "certifi",
        ]
        plain = []
        """,
    )
    assert source.problems == ()
    assert [(e.name, e.group, e.line, e.column) for e in source.entries] == [
        ("a", "project.dependencies", 1, 26),
        ("b", "project.dependencies", 1, 34),
        ("setuptools", "build-system.requires", 2, 31),
        ("trio", "project.optional-dependencies.async", 5, 13),
        ("certifi", "project.optional-dependencies.tls", 7, 6),
    ]
    first = source.lines[0]
    assert first.kind is LineKind.ENTRY
    assert first.entry == 0  # the first entry on the line
    assert first.comment == "both"
    assert source.lines[3].kind is LineKind.OTHER


def test_dotted_key_inside_project_table(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        """\
        [project]
        name = "demo"
        optional-dependencies.test = ["pytest>=8"]
        optional-dependencies . "docs" = [ "sphinx" ]
        """,
    )
    assert [(e.name, e.group, e.line) for e in source.entries] == [
        ("pytest", "project.optional-dependencies.test", 3),
        ("sphinx", "project.optional-dependencies.docs", 4),
    ]
    assert all(points_at(source, e) for e in source.entries)


def test_escaped_string_keeps_its_line(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        r"""
        [project]
        dependencies = [
            "foo\u003e=1.0",
            "bar\"baz",
        ]
        """,
    )
    foo = by_name(source, "foo")
    assert foo.text == "foo>=1.0"
    assert (foo.line, foo.column) == (4, 6)
    assert len(source.problems) == 1
    problem = source.problems[0]
    assert problem.line == 5
    assert problem.excerpt == '    "bar\\"baz",'  # the physical line, which the column indexes
    assert problem.column == 6  # escapes: the caret falls back to the string start


def test_multiline_string_entry_has_continuation_lines(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        '''\
        [project]
        description = """
        # not a comment
        """
        dependencies = [
            """foo>=1; \\
            python_version >= '3.9'""",
            "bar",
        ]
        ''',
    )
    assert source.problems == ()
    foo = by_name(source, "foo")
    assert foo.text == "foo>=1; python_version >= '3.9'"
    assert (foo.line, foo.column, foo.end_line) == (6, 8, 7)
    kinds = [line.kind for line in source.lines]
    assert kinds[2] is LineKind.OTHER  # inside the description string
    assert kinds[3] is LineKind.OTHER
    assert kinds[5] is LineKind.ENTRY
    assert kinds[6] is LineKind.CONTINUATION
    assert source.lines[6].entry == source.entries.index(foo)
    assert kinds[7] is LineKind.ENTRY


def test_crlf_and_bom(tmp_path: Path) -> None:
    text = '\ufeff[project]\r\n# why\r\ndependencies = ["a==1"]  # pin \r\n'
    source = write(tmp_path, text, dedent=False)
    assert source.problems == ()
    (entry,) = source.entries
    assert (entry.line, entry.column) == (3, 18)
    assert [line.kind for line in source.lines] == [
        LineKind.OTHER,
        LineKind.COMMENT,
        LineKind.ENTRY,
    ]
    assert source.lines[1].comment == "why"
    assert source.lines[2].comment == "pin"


def test_empty_and_unrelated_files(tmp_path: Path) -> None:
    assert write(tmp_path, "").lines == ()
    source = write(tmp_path, "[tool.x]\ny = 1\n")
    assert source.entries == ()
    assert source.problems == ()
    assert [line.kind for line in source.lines] == [LineKind.OTHER, LineKind.OTHER]


# --------------------------------------------------------------------------
# PEP 735 include-group
# --------------------------------------------------------------------------


def test_include_group_is_an_include_not_an_entry(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        """\
        [dependency-groups]
        test = ["pytest>=8", {include-group = "Typing_Tools"}]
        typing-tools = [
            "mypy",
            { include-group = "lint" },
        ]
        lint = ["ruff"]
        """,
    )
    assert source.problems == ()
    assert source.includes == (
        Include(line=2, kind="group", target="Typing_Tools"),
        Include(line=5, kind="group", target="lint"),
    )
    assert [(e.name, e.group) for e in source.entries] == [
        ("pytest", "dependency-groups.test"),
        ("mypy", "dependency-groups.typing-tools"),
        ("ruff", "dependency-groups.lint"),
    ]
    assert source.lines[4].kind is LineKind.OTHER


def test_include_cycle(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        """\
        [dependency-groups]
        a = ["x", {include-group = "b"}]
        b = [
            {include-group = "a"},
            "y",
        ]
        """,
    )
    (problem,) = source.problems
    assert problem.rule == "include-cycle"
    assert problem.line == 4
    assert problem.column == 23  # the "a" inside {include-group = "a"}
    assert "a -> b -> a" in problem.message
    assert [e.name for e in source.entries] == ["x", "y"]
    assert len(source.includes) == 2


def test_include_self_cycle(tmp_path: Path) -> None:
    source = write(tmp_path, '[dependency-groups]\nsolo = [{include-group = "solo"}]\n')
    (problem,) = source.problems
    assert problem.rule == "include-cycle"
    assert "solo -> solo" in problem.message


def test_unknown_include_group(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        """\
        [dependency-groups]
        dev = [{include-group = "tests"}]
        test = ["pytest"]
        """,
    )
    (problem,) = source.problems
    assert problem.rule == "parse-error"
    assert problem.line == 2
    assert problem.column == 26
    assert "'tests'" in problem.message
    assert problem.hint == "defined groups: dev, test"
    assert source.includes == (Include(line=2, kind="group", target="tests"),)


def test_duplicate_normalized_group_names(tmp_path: Path) -> None:
    source = write(tmp_path, '[dependency-groups]\nTest = ["a"]\ntest = ["b"]\n')
    assert [p.rule for p in source.problems] == ["parse-error"]
    assert source.problems[0].line == 3


# --------------------------------------------------------------------------
# Problems
# --------------------------------------------------------------------------


def test_toml_syntax_error(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        """\
        [project]
        dependencies = [
            "ok>=1",
            not-a-string,
        ]
        """,
    )
    assert source.entries == ()
    (problem,) = source.problems
    assert problem.rule == "parse-error"
    assert (problem.line, problem.column) == (4, 5)
    assert problem.excerpt == "    not-a-string,"
    assert problem.message.startswith("invalid TOML: ")
    assert "(at line" not in problem.message
    assert len(source.lines) == 5
    assert source.lines[2].kind is LineKind.OTHER


def test_toml_error_at_end_of_document(tmp_path: Path) -> None:
    source = write(tmp_path, 'x = [\n  "a",\n')
    (problem,) = source.problems
    assert problem.line == 2


def test_invalid_requirement_column_points_at_bad_character(tmp_path: Path) -> None:
    source = write(
        tmp_path,
        """\
        [project]
        dependencies = [
            "good>=1",
            "pkg>=1.0 ;; x",
        ]
        """,
    )
    assert [e.name for e in source.entries] == ["good"]
    (problem,) = source.problems
    assert problem.rule == "parse-error"
    assert problem.line == 4
    assert problem.column == 16
    assert physical(source.file)[3][problem.column - 1] == ";"
    assert problem.excerpt == '    "pkg>=1.0 ;; x",'
    assert problem.column is not None
    assert problem.excerpt[problem.column - 1] == ";"
    assert problem.message == "Expected a marker variable or quoted string"
    assert problem.hint is None
    assert source.lines[3].kind is LineKind.OTHER  # not an entry


def test_single_equals_gets_a_hint(tmp_path: Path) -> None:
    source = write(tmp_path, '[project]\ndependencies = ["pkg=1.0", "ok==1", "x===2"]\n')
    (problem,) = source.problems
    assert problem.hint == EQUALS_HINT
    assert problem.column == 21  # the "=" of pkg=1.0
    assert problem.excerpt is not None
    assert "pkg=1.0" in problem.excerpt
    assert [e.name for e in source.entries] == ["ok", "x"]


def test_invalid_requires_python(tmp_path: Path) -> None:
    source = write(tmp_path, '[project]\nrequires-python = "=3.10"\n')
    (problem,) = source.problems
    assert problem.rule == "parse-error"
    assert (problem.line, problem.column) == (2, 20)
    assert "requires-python" in problem.message
    assert problem.hint == EQUALS_HINT
    assert source.entries == ()
    source = write(tmp_path, '[project]\nrequires-python = "3.10"\n')
    assert source.entries == ()
    assert len(source.problems) == 1


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ('[project]\ndependencies = "requests"\n', 2, "project.dependencies must be an array"),
        ('[project]\ndependencies = [\n  "a",\n  3,\n]\n', 4, "project.dependencies[1]"),
        ('[project]\noptional-dependencies = ["x"]\n', 2, "must be a table"),
        ("[project.optional-dependencies]\ntest = {a = 1}\n", 2, "an array"),
        ("project = 3\n", 1, "project must be a table"),
        ("[project]\nrequires-python = 3.11\n", 2, "must be a string, not a number"),
        ('[build-system]\nrequires = "setuptools"\n', 2, "build-system.requires"),
        ("build-system = [1]\n", 1, "build-system must be a table"),
        ('dependency-groups = "x"\n', 1, "dependency-groups must be a table"),
        ("[dependency-groups]\ndev = true\n", 2, "not a boolean"),
        ('[dependency-groups]\ndev = [{name = "x"}]\n', 2, "include-group"),
        ("[dependency-groups]\ndev = [{include-group = 1}]\n", 2, "include-group"),
        ("[project]\ndependencies = [1979-05-27]\n", 2, "not a date"),
    ],
)
def test_wrong_types(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    source = write(tmp_path, text, dedent=False)
    assert len(source.problems) == 1, source.problems
    problem = source.problems[0]
    assert problem.rule == "parse-error"
    assert problem.line == line
    assert fragment in problem.message
    assert problem.excerpt == physical(source.file)[line - 1]


def test_wrong_type_item_keeps_valid_neighbours(tmp_path: Path) -> None:
    source = write(tmp_path, '[project]\ndependencies = [\n  "a",\n  3,\n  "b",\n]\n')
    assert [e.name for e in source.entries] == ["a", "b"]
    assert source.problems[0].column == 3


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b'[project]\ndependencies = ["caf\xe9"]\n')
    source = read_pyproject(path, display_path="pyproject.toml")
    assert source.entries == ()
    (problem,) = source.problems
    assert problem.rule == "parse-error"
    assert (problem.line, problem.column) == (2, 21)  # the byte 0xe9 after "caf"
    assert "UTF-8" in problem.message
    assert len(source.lines) == 2


def test_missing_file_is_a_problem(tmp_path: Path) -> None:
    source = read_pyproject(tmp_path / "nope.toml", display_path="nope.toml")
    assert [p.rule for p in source.problems] == ["parse-error"]
    assert source.lines == ()


def test_deeply_nested_arrays_do_not_crash(tmp_path: Path) -> None:
    source = write(tmp_path, "x = " + "[" * 5000 + "]" * 5000 + "\n", dedent=False)
    assert source.entries == ()


# --------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------

_TOML_FRAGMENTS = st.sampled_from(
    [
        "[project]",
        "[project.optional-dependencies]",
        "[dependency-groups]",
        "[build-system]",
        "[[project]]",
        "dependencies",
        "requires",
        "requires-python",
        "optional-dependencies",
        "include-group",
        "project.",
        " = ",
        "=",
        "[",
        "]",
        "{",
        "}",
        ",",
        ".",
        '"',
        "'",
        '"""',
        "'''",
        "\\",
        "#",
        " ",
        "\n",
        "\r\n",
        "\t",
        '"pkg>=1"',
        "'pkg=1'",
        '"x @ https://e.com/#a"',
        '{include-group = "a"}',
        '{include-group = "b"}',
        "a",
        "b",
        "1",
        "true",
    ]
)

_SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _never_raises(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_bytes(data)
    source = read_pyproject(path, display_path="pyproject.toml")
    assert source.format is SourceFormat.PYPROJECT
    for line in source.lines:
        if line.entry is not None:
            assert 0 <= line.entry < len(source.entries)
    for entry in source.entries:
        assert 1 <= entry.line <= max(len(source.lines), 1)


@_SETTINGS
@given(text=st.text(st.characters(exclude_categories=["Cs"])))
def test_arbitrary_text_never_raises(tmp_path: Path, text: str) -> None:
    _never_raises(tmp_path, text.encode("utf-8"))


@_SETTINGS
@given(parts=st.lists(_TOML_FRAGMENTS, max_size=40))
def test_toml_like_text_never_raises(tmp_path: Path, parts: list[str]) -> None:
    _never_raises(tmp_path, "".join(parts).encode("utf-8"))


@_SETTINGS
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(tmp_path: Path, data: bytes) -> None:
    _never_raises(tmp_path, data)


_NAMES = st.sampled_from(["alpha", "beta-two", "Gamma_3", "d.e"])
_SPECS = st.sampled_from(["", ">=1", "==2.0", "!=1.5,<3", " >= 1 , < 2", "[x]>=1"])
_QUOTES = st.sampled_from(['"', "'", '"""', "'''"])
_GAPS = st.sampled_from(["", " ", "\n", "\n    ", '  # note, with ] and " in it\n  '])


@_SETTINGS
@given(
    items=st.lists(st.tuples(_NAMES, _SPECS, _QUOTES, _GAPS), min_size=1, max_size=8),
    table=st.sampled_from(["project", "dotted", "inline", "group"]),
)
def test_entries_point_at_their_strings(
    tmp_path: Path, items: list[tuple[str, str, str, str]], table: str
) -> None:
    array = "["
    for name, spec, quote, gap in items:
        array += f"{gap}{quote}{name}{spec}{quote},"
    array += "\n]"
    text = {
        "project": f'[project]\nname = "x"\ndependencies = {array}\n',
        "dotted": f"# head\nproject.optional-dependencies.extra = {array}\n",
        "inline": f"[build-system]\nrequires = {array}\n",
        "group": f"[dependency-groups]\n'dev' = {array}\n",
    }[table]
    path = tmp_path / "pyproject.toml"
    path.write_text(text, encoding="utf-8", newline="")
    source = read_pyproject(path, display_path="pyproject.toml")
    assert source.problems == ()
    assert [e.text for e in source.entries] == [name + spec for name, spec, _, _ in items]
    lines = text.split("\n")
    for index, entry in enumerate(source.entries):
        assert lines[entry.line - 1][entry.column - 1 :].startswith(entry.text)
        assert source.lines[entry.line - 1].kind is LineKind.ENTRY
        owner = source.lines[entry.line - 1].entry
        assert owner is not None
        assert source.entries[owner].line == entry.line
        assert owner <= index
