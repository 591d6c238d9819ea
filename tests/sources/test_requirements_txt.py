"""Tests for :mod:`govern.sources.requirements_txt`, one per pip rule.

Every expectation is pip's documented behaviour, from the requirements file
format reference (https://pip.pypa.io/en/stable/reference/requirements-file-format/)
and from pip's parser itself (``pypa/pip`` ``src/pip/_internal/req/req_file.py``:
``join_lines``, ``ignore_comments``, ``expand_env_variables``,
``break_args_options``; options from ``src/pip/_internal/cli/cmdoptions.py``):

* a line ending in ``\\`` continues on the next one; the logical line takes the
  number of its first physical line; a comment line ends a continuation;
* ``#`` starts a comment at the start of a line or after whitespace only;
* ``${NAME}`` is expanded for ``NAME`` in ``[A-Z0-9_]+`` only, and only when set
  and non-empty;
* the requirement ends at the first space-separated token starting with ``-``;
  after a requirement only ``--hash``, ``--config-settings`` and
  ``--global-option`` apply; the options are parsed by ``optparse`` (attached
  short values, ``--long=value``, unambiguous long prefixes);
* ``-r``/``-c`` paths are relative to the including file.

One deliberate difference: ``--use-feature`` values are recorded, not checked,
since pip's list of features changes with every pip release.
"""

from __future__ import annotations

import codecs
import string
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

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
from govern.sources.requirements_txt import decode, read_requirements

SHA_A = "sha256:" + "a" * 64
SHA_B = "sha256:" + "b" * 64
SHA_C = "sha512:" + "c" * 128
SECRET = "s3cr3t-t0ken"


def read(
    tmp_path: Path,
    text: str,
    *,
    environ: Mapping[str, str] | None = None,
    name: str = "requirements.txt",
) -> Source:
    """Write ``text`` byte for byte (UTF-8, newlines kept) and read it as pip would."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")
    return read_requirements(path, display_path="requirements.txt", environ=dict(environ or {}))


def read_bytes(tmp_path: Path, data: bytes, *, environ: Mapping[str, str] | None = None) -> Source:
    """Write ``data`` as ``requirements.txt`` and read it."""
    path = tmp_path / "requirements.txt"
    path.write_bytes(data)
    return read_requirements(path, display_path="requirements.txt", environ=dict(environ or {}))


def kinds(source: Source) -> list[LineKind]:
    """The kind of every physical line."""
    return [line.kind for line in source.lines]


def only_entry(source: Source) -> Entry:
    """The single entry of a one-requirement file."""
    assert len(source.entries) == 1, source.entries
    return source.entries[0]


def only_problem(source: Source) -> Problem:
    """The single problem of a file with one mistake."""
    assert len(source.problems) == 1, source.problems
    return source.problems[0]


def texts_of(source: Source) -> list[str]:
    """Every text a report can show: problem fields, entry texts and include targets."""
    out: list[str] = []
    for problem in source.problems:
        out += [problem.message, problem.excerpt or "", problem.hint or ""]
    out += [entry.text for entry in source.entries]
    out += [include.target for include in source.includes]
    return out


# --------------------------------------------------------------------------
# 1. Backslash continuations (join_lines)
# --------------------------------------------------------------------------


def test_continuation_joins_three_lines_numbered_by_the_first(tmp_path: Path) -> None:
    source = read(tmp_path, "foo\\\n  >=1.0\\\n  ,<2\nbar\n")
    assert source.path == "requirements.txt"
    assert source.format is SourceFormat.REQUIREMENTS
    assert source.problems == ()
    foo, bar = source.entries
    assert (foo.line, foo.column, foo.end_line) == (1, 1, 3)
    assert foo.name == "foo"
    assert foo.text == "foo  >=1.0  ,<2"  # pip strips the backslashes, not the indentation
    assert foo.requirement is not None
    assert str(foo.requirement.specifier) == "<2,>=1.0"
    assert (bar.line, bar.end_line) == (4, 4)
    assert source.lines == (
        Line(1, LineKind.ENTRY, None, 0),
        Line(2, LineKind.CONTINUATION, None, 0),
        Line(3, LineKind.CONTINUATION, None, 0),
        Line(4, LineKind.ENTRY, None, 1),
    )


def test_comment_line_ends_a_continuation(tmp_path: Path) -> None:
    # join_lines: a comment line is appended (as " #...") and closes the logical line,
    # so "bar" on line 3 is a requirement of its own.
    source = read(tmp_path, "foo>=1 \\\n# pinned for CI\nbar\n")
    assert source.problems == ()
    foo, bar = source.entries
    assert (foo.line, foo.end_line, foo.text, foo.name) == (1, 2, "foo>=1", "foo")
    assert (bar.line, bar.end_line, bar.name) == (3, 3, "bar")
    assert kinds(source) == [LineKind.ENTRY, LineKind.CONTINUATION, LineKind.ENTRY]
    # The joined comment belongs to the logical line, recorded on its first line.
    assert source.lines[0].comment == "pinned for CI"
    assert source.lines[1].comment is None


def test_trailing_backslash_on_the_last_line(tmp_path: Path) -> None:
    source = read(tmp_path, "foo \\\n>=1\\")
    assert source.problems == ()
    entry = only_entry(source)
    assert (entry.line, entry.end_line, entry.text, entry.name) == (1, 2, "foo >=1", "foo")
    assert kinds(source) == [LineKind.ENTRY, LineKind.CONTINUATION]


def test_comment_ending_in_backslash_swallows_the_next_line(tmp_path: Path) -> None:
    # "foo # x \" is not a comment line (it does not start with #), so pip joins
    # "bar" into it, then strips the comment: bar is never installed.
    source = read(tmp_path, "foo>=1 # note \\\nbar\nbaz\n")
    assert source.problems == ()
    assert [(e.line, e.name) for e in source.entries] == [(1, "foo"), (3, "baz")]
    assert source.lines[0].comment == "note bar"
    assert kinds(source) == [LineKind.ENTRY, LineKind.CONTINUATION, LineKind.ENTRY]


def test_comment_line_ending_in_backslash_does_not_continue(tmp_path: Path) -> None:
    source = read(tmp_path, "# note \\\nbar\n")
    assert [(e.line, e.name) for e in source.entries] == [(2, "bar")]
    assert source.lines[0] == Line(1, LineKind.COMMENT, "note \\")


def test_continued_option_line(tmp_path: Path) -> None:
    source = read(tmp_path, "--index-url \\\n  https://a/simple\nfoo\n")
    assert source.options == (OptionLine(1, "--index-url", "https://a/simple"),)
    assert kinds(source) == [LineKind.OPTION, LineKind.OPTION, LineKind.ENTRY]
    assert only_entry(source).line == 3


# --------------------------------------------------------------------------
# 2. "#" starts a comment only at line start or after whitespace
# --------------------------------------------------------------------------


def test_hash_inside_a_url_is_not_a_comment(tmp_path: Path) -> None:
    source = read(
        tmp_path,
        "pkg @ https://host/p.whl#sha256=abc\n-e git+https://host/r.git#egg=pkg2\n",
    )
    assert source.problems == ()
    direct, editable = source.entries
    assert direct.text == "pkg @ https://host/p.whl#sha256=abc"
    assert direct.requirement is not None
    assert direct.requirement.url == "https://host/p.whl#sha256=abc"
    assert editable.text == "git+https://host/r.git#egg=pkg2"
    assert editable.name == "pkg2"
    assert [line.comment for line in source.lines] == [None, None]


def test_comment_after_whitespace(tmp_path: Path) -> None:
    source = read(tmp_path, "foo>=1 # reason\nbar>=2\t#\ttabbed reason\n")
    assert source.problems == ()
    foo, bar = source.entries
    assert (foo.text, bar.text) == ("foo>=1", "bar>=2")
    assert source.lines[0] == Line(1, LineKind.ENTRY, "reason", 0)
    assert source.lines[1] == Line(2, LineKind.ENTRY, "tabbed reason", 1)


def test_hash_without_whitespace_is_part_of_the_requirement(tmp_path: Path) -> None:
    # pip hands "foo>=1#nospace" to packaging, which rejects it.
    source = read(tmp_path, "ok==1\nfoo>=1#nospace\n")
    assert [e.name for e in source.entries] == ["ok"]
    problem = only_problem(source)
    assert (problem.rule, problem.line) == ("parse-error", 2)
    assert problem.message.startswith("Expected comma (within version specifier)")
    assert problem.excerpt == "foo>=1#nospace"
    assert problem.hint is None
    assert source.lines[1] == Line(2, LineKind.OTHER, None)


def test_hash_without_whitespace_caret_points_at_the_hash(tmp_path: Path) -> None:
    problem = only_problem(read(tmp_path, "foo>=1#nospace\n"))
    assert problem.column == 7
    assert "foo>=1#nospace"[problem.column - 1] == "#"


# --------------------------------------------------------------------------
# 3. -r / -c includes, relative to the including file
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "kind", "target"),
    [
        ("-r x.txt", "requirements", "x.txt"),
        ("-rx.txt", "requirements", "x.txt"),
        ("--requirement=x.txt", "requirements", "x.txt"),
        ("--requirement x.txt", "requirements", "x.txt"),
        ("--requirem x.txt", "requirements", "x.txt"),  # unambiguous prefix (optparse)
        ("-r ../up.txt", "requirements", "../up.txt"),
        ("-c c.txt", "constraints", "c.txt"),
        ("-cc.txt", "constraints", "c.txt"),
        ("--constraint=c.txt", "constraints", "c.txt"),
        ("--constraint c.txt", "constraints", "c.txt"),
        ("--constr c.txt", "constraints", "c.txt"),
    ],
)
def test_include_spellings(tmp_path: Path, line: str, kind: str, target: str) -> None:
    source = read(tmp_path, f"# includes\n{line}\n", name="sub/requirements.txt")
    assert source.problems == ()
    assert source.includes == (Include(2, kind, target, tmp_path / "sub" / target),)
    assert source.entries == ()
    assert source.options == ()
    assert kinds(source) == [LineKind.COMMENT, LineKind.OPTION]


def test_ambiguous_long_prefix_is_rejected(tmp_path: Path) -> None:
    # "--requir" matches both --requirement and --require-hashes: optparse refuses it.
    source = read(tmp_path, "--requir x.txt\n")
    assert source.includes == ()
    problem = only_problem(source)
    assert (problem.rule, problem.line, problem.column) == ("parse-error", 1, 1)
    assert "ambiguous option: --requir" in problem.message
    assert "--require-hashes" in problem.message
    assert "--requirement" in problem.message
    assert problem.excerpt == "--requir x.txt"


@pytest.mark.parametrize(
    ("line", "kind", "url"),
    [
        ("-r https://example.com/r.txt", "requirements", "https://example.com/r.txt"),
        ("--constraint=http://example.com/c.txt", "constraints", "http://example.com/c.txt"),
    ],
)
def test_remote_include_is_recorded_with_a_problem(
    tmp_path: Path, line: str, kind: str, url: str
) -> None:
    source = read(tmp_path, f"foo\n{line}\n", name="sub/requirements.txt")
    assert source.includes == (Include(2, kind, url, None),)
    problem = only_problem(source)
    assert (problem.rule, problem.line) == ("include-remote", 2)
    assert url in problem.message
    assert kinds(source) == [LineKind.ENTRY, LineKind.OPTION]


# --------------------------------------------------------------------------
# 4. Option lines
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "name", "value"),
    [
        ("--index-url https://a/simple", "--index-url", "https://a/simple"),
        ("--index-url=https://a/simple", "--index-url", "https://a/simple"),
        ("-i https://a/simple", "--index-url", "https://a/simple"),
        ("-ihttps://a/simple", "--index-url", "https://a/simple"),
        ("--extra-index-url https://b/simple", "--extra-index-url", "https://b/simple"),
        ("-f https://d/links", "--find-links", "https://d/links"),
        ("--find-links=./wheels", "--find-links", "./wheels"),
        ("--pre", "--pre", None),
        ("--no-binary :all:", "--no-binary", ":all:"),
        ("--no-binary=foo,bar", "--no-binary", "foo,bar"),
        ("--only-binary :all:", "--only-binary", ":all:"),
        ("--prefer-binary", "--prefer-binary", None),
        ("--trusted-host host.example", "--trusted-host", "host.example"),
        ("--require-hashes", "--require-hashes", None),
        ("--no-index", "--no-index", None),
        ("--use-feature fast-deps", "--use-feature", "fast-deps"),
        pytest.param(
            "--pypi-url https://a/simple",
            "--index-url",
            "https://a/simple",
        ),
    ],
)
def test_option_line_is_recorded(tmp_path: Path, line: str, name: str, value: str | None) -> None:
    source = read(tmp_path, f"{line}  # why\n")
    assert source.problems == ()
    assert source.options == (OptionLine(1, name, value),)
    assert source.lines == (Line(1, LineKind.OPTION, "why"),)
    assert source.entries == ()


def test_options_in_the_middle_of_the_file(tmp_path: Path) -> None:
    source = read(
        tmp_path,
        "-i https://a/simple\nfoo==1\n--extra-index-url https://b/simple\nbar==2\n"
        "--pre --prefer-binary\n",
    )
    assert source.problems == ()
    assert source.options == (
        OptionLine(1, "--index-url", "https://a/simple"),
        OptionLine(3, "--extra-index-url", "https://b/simple"),
        OptionLine(5, "--pre", None),
        OptionLine(5, "--prefer-binary", None),
    )
    assert [(e.line, e.name) for e in source.entries] == [(2, "foo"), (4, "bar")]
    assert kinds(source) == [
        LineKind.OPTION,
        LineKind.ENTRY,
        LineKind.OPTION,
        LineKind.ENTRY,
        LineKind.OPTION,
    ]


# --------------------------------------------------------------------------
# 5. --hash on a requirement
# --------------------------------------------------------------------------


def test_hashes_are_collected_per_requirement(tmp_path: Path) -> None:
    source = read(
        tmp_path,
        f"foo==1.0 --hash={SHA_A} --hash={SHA_B}\n"
        f"bar==2.0 \\\n    --hash={SHA_A} \\\n    --hash {SHA_C}\n"
        "baz==3.0\n",
    )
    assert source.problems == ()
    foo, bar, baz = source.entries
    assert (foo.line, foo.text, foo.hashes) == (1, "foo==1.0", (SHA_A, SHA_B))
    assert (bar.line, bar.end_line, bar.name) == (2, 4, "bar")
    assert bar.hashes == (SHA_A, SHA_C)
    assert baz.hashes == ()
    assert kinds(source) == [
        LineKind.ENTRY,
        LineKind.ENTRY,
        LineKind.CONTINUATION,
        LineKind.CONTINUATION,
        LineKind.ENTRY,
    ]


def test_entry_text_has_no_trailing_space_before_options(tmp_path: Path) -> None:
    source = read(tmp_path, f"foo==1  --hash={SHA_A}\nbar==2.0 \\\n    --hash={SHA_A}\n")
    assert [e.text for e in source.entries] == ["foo==1", "bar==2.0"]


@pytest.mark.parametrize(
    ("text", "message", "hint"),
    [
        ("baz==1 --hash=md5:abc", "unsupported hash algorithm 'md5'", "sha256, sha384, sha512"),
        ("qux==1 --hash=abc", "--hash must be a hash name and a value", None),
    ],
)
def test_bad_hash_is_a_parse_error(
    tmp_path: Path, text: str, message: str, hint: str | None
) -> None:
    source = read(tmp_path, f"ok==1\n{text}\n")
    problem = only_problem(source)
    assert (problem.rule, problem.line, problem.column) == ("parse-error", 2, 1)
    assert message in problem.message
    assert problem.excerpt == text
    if hint is None:
        assert problem.hint is None
    else:
        assert problem.hint is not None
        assert hint in problem.hint
    # The requirement is still recorded (without the rejected hash).
    assert [(e.name, e.hashes) for e in source.entries] == [("ok", ()), (text[:3], ())]


def test_hash_on_a_line_of_its_own(tmp_path: Path) -> None:
    # pip: "has --hash but no requirement, and will be ignored".
    source = read(tmp_path, f"foo==1\n--hash={SHA_A}\n")
    problem = only_problem(source)
    assert (problem.rule, problem.line, problem.column) == ("parse-error", 2, 1)
    assert problem.message == "--hash must follow a requirement on the same line"
    assert problem.excerpt == f"--hash={SHA_A}"
    assert only_entry(source).hashes == ()
    assert source.options == ()
    assert kinds(source) == [LineKind.ENTRY, LineKind.OPTION]


@pytest.mark.parametrize(
    "options",
    [
        "--config-settings key=value",
        "--global-option=--quiet",
        pytest.param(
            "-C key=value",
        ),
    ],
)
def test_per_requirement_options_are_accepted(tmp_path: Path, options: str) -> None:
    source = read(tmp_path, f"foo==1 {options}\n")
    assert source.problems == ()
    assert only_entry(source).text == "foo==1"


# --------------------------------------------------------------------------
# 6. Entries that versions cannot constrain
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "text", "name", "editable", "parsed"),
    [
        ("-e ./local", "./local", None, True, False),
        ("--editable=./local", "./local", None, True, False),
        (
            "-e git+https://host/r.git#egg=name",
            "git+https://host/r.git#egg=name",
            "name",
            True,
            False,
        ),
        (
            "-e git+https://host/r.git@v1#egg=Some_Name&subdirectory=x",
            "git+https://host/r.git@v1#egg=Some_Name&subdirectory=x",
            "some-name",
            True,
            False,
        ),
        ("./pkg", "./pkg", None, False, False),
        ("{abs}", "{abs}", None, False, False),
        ("pkg-1.0-py3-none-any.whl", "pkg-1.0-py3-none-any.whl", "pkg", False, False),
        (
            "https://host/name-1.0-py3-none-any.whl",
            "https://host/name-1.0-py3-none-any.whl",
            "name",
            False,
            False,
        ),
        ("name @ https://host/x.zip", "name @ https://host/x.zip", "name", False, True),
        pytest.param(
            "git+https://host/r.git@v1.0#egg=pkg",
            "git+https://host/r.git@v1.0#egg=pkg",
            "pkg",
            False,
            False,
        ),
        pytest.param(
            "https://user@host/pkg-1.0-py3-none-any.whl",
            "https://user@host/pkg-1.0-py3-none-any.whl",
            "pkg",
            False,
            False,
        ),
    ],
)
def test_unconstrainable_entry(
    tmp_path: Path, line: str, text: str, name: str | None, editable: bool, parsed: bool
) -> None:
    for directory in ("local", "pkg", "abs/path"):
        (tmp_path / directory).mkdir(parents=True)
    absolute = (tmp_path / "abs" / "path").as_posix()
    line, text = line.replace("{abs}", absolute), text.replace("{abs}", absolute)
    source = read(tmp_path, f"{line}\n")
    assert source.problems == ()
    entry = only_entry(source)
    assert (entry.line, entry.column, entry.end_line) == (1, 1, 1)
    assert entry.text == text
    assert entry.name == name
    assert entry.constrainable is False
    assert entry.editable is editable
    assert entry.hashes == ()
    assert (entry.requirement is not None) is parsed
    assert source.lines == (Line(1, LineKind.ENTRY, None, 0),)


@pytest.mark.parametrize("line", ["-e ./a -e ./b", "-e ./a -r x.txt --pre"])
def test_editable_line_is_one_requirement(tmp_path: Path, line: str) -> None:
    source = read(tmp_path, f"{line}\n")
    entry = only_entry(source)
    assert (entry.text, entry.editable) == ("./a", True)
    assert source.includes == ()
    assert source.options == ()
    assert source.lines == (Line(1, LineKind.ENTRY, None, 0),)


# --------------------------------------------------------------------------
# 7. ${VAR} expansion
# --------------------------------------------------------------------------


def test_env_var_expanded_for_parsing_but_text_is_raw(tmp_path: Path) -> None:
    source = read(tmp_path, "foo==${MY_VERSION}\n", environ={"MY_VERSION": "1.2.3"})
    assert source.problems == ()
    entry = only_entry(source)
    assert entry.text == "foo==${MY_VERSION}"
    assert entry.requirement is not None
    assert str(entry.requirement.specifier) == "==1.2.3"
    assert entry.constrainable is True


def test_only_set_upper_case_vars_are_expanded(tmp_path: Path) -> None:
    environ = {"lower": "low", "EMPTY": "", "HOST": "mirror"}
    source = read(
        tmp_path,
        "--extra-index-url https://host/${lower}/simple\n"
        "--extra-index-url https://${HOST}/${UNSET}/simple\n"
        "a @ https://host/${lower}/a-1.0.zip\n"
        "b @ https://host/${EMPTY}/b-1.0.zip\n",
        environ=environ,
    )
    assert source.problems == ()
    assert source.options == (
        OptionLine(1, "--extra-index-url", "https://host/${lower}/simple"),
        # Values are recorded as written (a ${TOKEN} never lands in the store or
        # the output); whoever uses an index URL expands it.
        OptionLine(2, "--extra-index-url", "https://${HOST}/${UNSET}/simple"),
    )
    a, b = source.entries
    assert a.requirement is not None
    assert a.requirement.url == "https://host/${lower}/a-1.0.zip"
    assert b.requirement is not None
    assert b.requirement.url == "https://host/${EMPTY}/b-1.0.zip"


def test_unexpanded_var_in_a_version_is_a_parse_error(tmp_path: Path) -> None:
    source = read(tmp_path, "foo==${lower}\n", environ={"lower": "1.0"})
    problem = only_problem(source)
    assert (problem.rule, problem.line) == ("parse-error", 1)
    assert problem.excerpt == "foo==${lower}"
    assert source.entries == ()


@pytest.mark.parametrize(
    "line",
    [
        "--extra-index-url https://user:${TOKEN}@host/simple",
        "--extra-index-url https://user:${TOKEN}@host/simple --bogus",
        '--extra-index-url "https://user:${TOKEN}@host/simple',
        "foo==1 --extra-index-url https://user:${TOKEN}@host/simple",
        "foo==1 --hash=md5:${TOKEN}",
        "pkg @ https://user:${TOKEN}@host/pkg-1.0.zip",
        "pkg=1 @ https://user:${TOKEN}@host/pkg-1.0.zip",
        pytest.param(
            "-e git+https://user:${TOKEN}@host/r.git#egg=pkg",
        ),
        pytest.param(
            "-r https://user:${TOKEN}@host/r.txt",
        ),
        pytest.param(
            "--pre https://user:${TOKEN}@host/simple",
        ),
    ],
)
def test_secrets_never_appear_in_reports(tmp_path: Path, line: str) -> None:
    source = read(tmp_path, f"{line}\n", environ={"TOKEN": SECRET})
    for text in texts_of(source):
        assert SECRET not in text, text


# --------------------------------------------------------------------------
# 8. Encodings
# --------------------------------------------------------------------------


def test_utf8_bom_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    source = read_bytes(tmp_path, codecs.BOM_UTF8 + b"foo==1\nbar\n")
    assert source.problems == ()
    foo, bar = source.entries
    assert (foo.line, foo.column, foo.text, foo.name) == (1, 1, "foo==1", "foo")
    assert bar.line == 2


@pytest.mark.parametrize(
    ("bom", "encoding"),
    [
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
    ],
)
def test_utf16_and_utf32_with_bom(tmp_path: Path, bom: bytes, encoding: str) -> None:
    source = read_bytes(tmp_path, bom + "foo==1  # café\nbar\n".encode(encoding))
    assert source.problems == ()
    assert [(e.line, e.column, e.text) for e in source.entries] == [(1, 1, "foo==1"), (2, 1, "bar")]
    assert source.lines[0].comment == "café"


def test_invalid_utf8_is_reported_and_the_rest_still_parses(tmp_path: Path) -> None:
    source = read_bytes(tmp_path, b"foo==1\n# caf\xe9\nbar==2\n")
    problem = only_problem(source)
    assert (problem.rule, problem.line, problem.column) == ("parse-error", 1, None)
    assert "not valid UTF-8" in problem.message
    assert [(e.line, e.name) for e in source.entries] == [(1, "foo"), (3, "bar")]
    assert kinds(source) == [LineKind.ENTRY, LineKind.COMMENT, LineKind.ENTRY]


def test_pep263_coding_comment_is_honoured(tmp_path: Path) -> None:
    source = read_bytes(tmp_path, "# -*- coding: latin-1 -*-\nfoo==1  # café\n".encode("latin-1"))
    assert source.problems == ()
    assert source.lines[1].comment == "café"


# --------------------------------------------------------------------------
# 9. Lines pip rejects
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "column", "message", "hint"),
    [
        ("pkg=1.0", 4, "Expected semicolon", "did you mean ==?"),
        ("  pkg=1.0", 6, "Expected semicolon", "did you mean ==?"),
        ("foo bar", 5, "Expected semicolon", "two requirements"),
        ("--unknown-option", 1, "no such option: --unknown-option", "requirements files accept"),
        ("foo>=1 --bogus", 8, "no such option: --bogus", "requirements files accept"),
        ("-r", 1, "--requirement option requires an argument", None),
        ("-e", 1, "--editable option requires an argument", None),
        ("--pre=yes", 1, "--pre option does not take a value", None),
        ('--index-url "https://x/simple', 1, "No closing quotation", None),
        ('foo==1 --hash="sha256:abc', 8, "No closing quotation", None),
    ],
)
def test_rejected_line(
    tmp_path: Path, line: str, column: int, message: str, hint: str | None
) -> None:
    source = read(tmp_path, f"ok==1\n{line}\nlast==2\n")
    problem = only_problem(source)
    assert (problem.rule, problem.line, problem.column) == ("parse-error", 2, column)
    assert message in problem.message
    assert problem.excerpt == line
    if hint is None:
        assert problem.hint is None
    else:
        assert problem.hint is not None
        assert hint in problem.hint
    # The line is neither an entry nor an option; the rest of the file still parses.
    assert source.lines[1] == Line(2, LineKind.OTHER, None)
    assert [(e.line, e.name) for e in source.entries] == [(1, "ok"), (3, "last")]
    assert source.options == ()
    assert source.includes == ()


def test_single_equals_column_points_at_the_equals(tmp_path: Path) -> None:
    problem = only_problem(read(tmp_path, "pkg=1.0\n"))
    assert problem.column == 4
    assert problem.excerpt is not None
    assert problem.excerpt[problem.column - 1] == "="
    assert problem.hint == "did you mean ==? A version pin is written name==1.0"


def test_two_pinned_requirements_on_one_line(tmp_path: Path) -> None:
    problem = only_problem(read(tmp_path, "foo>=1 bar\n"))
    assert problem.column == 8
    assert problem.hint is not None
    assert "two requirements" in problem.hint


def test_global_option_after_a_requirement_is_ignored_by_pip(tmp_path: Path) -> None:
    # pip keeps the requirement and silently drops --index-url: govern says so.
    source = read(tmp_path, "foo>=1 --index-url https://x/simple\n")
    problem = only_problem(source)
    assert (problem.rule, problem.line, problem.column) == ("ignored-option", 1, 8)
    assert problem.message == (
        "pip ignores --index-url after a requirement; put it on a line of its own"
    )
    assert problem.excerpt == "foo>=1 --index-url https://x/simple"
    assert problem.hint is None
    entry = only_entry(source)
    assert (entry.text, entry.name) == ("foo>=1", "foo")
    assert source.options == ()


# --------------------------------------------------------------------------
# 10. Layout and requirement forms
# --------------------------------------------------------------------------


def test_layout_blank_comment_indent_crlf(tmp_path: Path) -> None:
    source = read(
        tmp_path,
        "\r\n# top comment\r\n\r\n   indented>=1   # why\r\n\t\ttabbed==2\r\n   \r\n#\r\n",
    )
    assert source.problems == ()
    assert source.lines == (
        Line(1, LineKind.BLANK),
        Line(2, LineKind.COMMENT, "top comment"),
        Line(3, LineKind.BLANK),
        Line(4, LineKind.ENTRY, "why", 0),
        Line(5, LineKind.ENTRY, None, 1),
        Line(6, LineKind.BLANK),
        Line(7, LineKind.COMMENT, ""),
    )
    indented, tabbed = source.entries
    assert (indented.line, indented.column, indented.text) == (4, 4, "indented>=1")
    assert (tabbed.line, tabbed.column, tabbed.text) == (5, 3, "tabbed==2")
    assert not any(e.text.endswith("\r") for e in source.entries)


@pytest.mark.parametrize(
    ("line", "name", "specifier", "extras", "marker"),
    [
        ("cupy-cuda13x != 14.1.0", "cupy-cuda13x", "!=14.1.0", set(), None),
        ("docopt == 0.6.1", "docopt", "==0.6.1", set(), None),
        (
            'foo[bar,baz]>=1; python_version < "3.12"',
            "foo",
            ">=1",
            {"bar", "baz"},
            'python_version < "3.12"',
        ),
        (
            'requests [security] >= 2.8.1, == 2.8.* ; python_version < "2.7"',
            "requests",
            "==2.8.*,>=2.8.1",
            {"security"},
            'python_version < "2.7"',
        ),
        ("legacy===1.0-weird", "legacy", "===1.0-weird", set(), None),
        ("nixl == 1.5.0rc1.dev72182327", "nixl", "==1.5.0rc1.dev72182327", set(), None),
        ("Foo_Bar.baz>=1", "foo-bar-baz", ">=1", set(), None),
    ],
)
def test_requirement_forms(
    tmp_path: Path, line: str, name: str, specifier: str, extras: set[str], marker: str | None
) -> None:
    source = read(tmp_path, f"{line}\n")
    assert source.problems == ()
    entry = only_entry(source)
    assert (entry.line, entry.column, entry.text) == (1, 1, line)
    assert entry.name == name
    assert entry.constrainable is True
    assert entry.editable is False
    assert entry.requirement is not None
    assert str(entry.requirement.specifier) == specifier
    assert entry.requirement.extras == extras
    assert (str(entry.requirement.marker) if entry.requirement.marker else None) == marker


def test_prerelease_pin_keeps_its_version(tmp_path: Path) -> None:
    entry = only_entry(read(tmp_path, "nixl == 1.5.0rc1.dev72182327\n"))
    assert entry.requirement is not None
    (spec,) = entry.requirement.specifier
    assert Version(spec.version) == Version("1.5.0rc1.dev72182327")
    assert Version(spec.version).is_prerelease


# --------------------------------------------------------------------------
# 11. Properties: nothing raises, every position is inside the file
# --------------------------------------------------------------------------

_SPECIAL = st.sampled_from(
    [
        "\\",
        "#",
        "-",
        "=",
        "\r",
        "\n",
        "\r\n",
        "\x00",
        "\ufeff",
        " ",
        "\t",
        "${",
        "}",
        "@",
        ";",
        "--hash=",
        "-r ",
        "-e ",
        "==",
        "\u2028",
        "\x85",
    ]
)
_TEXT = st.lists(
    st.one_of(
        _SPECIAL, st.text(alphabet=string.ascii_letters + string.digits + ".[],<>~!'\""), st.text()
    ),
    max_size=30,
).map("".join)


def check_positions(source: Source, physical: int) -> None:
    """Every recorded position lies within the file's ``physical`` lines."""
    assert len(source.lines) == physical
    assert [line.number for line in source.lines] == list(range(1, physical + 1))
    for problem in source.problems:
        assert 1 <= problem.line <= physical, problem
        assert problem.column is None or problem.column >= 1, problem
    for entry in source.entries:
        assert 1 <= entry.line <= physical, entry
        assert entry.end_line is not None
        assert entry.line <= entry.end_line <= physical, entry
        assert entry.column >= 1
        assert source.lines[entry.line - 1].kind is LineKind.ENTRY
    for option in source.options:
        assert 1 <= option.line <= physical, option
    for include in source.includes:
        assert 1 <= include.line <= physical, include


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT)
def test_arbitrary_text_never_raises(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "requirements.txt"
        path.write_text(text, encoding="utf-8", newline="")
        source = read_requirements(path, display_path="requirements.txt", environ={"TOKEN": SECRET})
    # A leading BOM is an encoding mark, not text.
    check_positions(source, len(text.removeprefix("\ufeff").splitlines()))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.one_of(
        st.binary(),
        st.builds(
            lambda b, t: b + t,
            st.sampled_from(
                [
                    b"",
                    codecs.BOM_UTF8,
                    codecs.BOM_UTF16_LE,
                    codecs.BOM_UTF16_BE,
                    codecs.BOM_UTF32_LE,
                ]
            ),
            st.binary(),
        ),
    )
)
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "requirements.txt"
        path.write_bytes(data)
        source = read_requirements(path, display_path="requirements.txt", environ={})
    check_positions(source, len(decode(data)[0].splitlines()))
