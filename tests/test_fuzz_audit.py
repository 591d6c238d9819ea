"""Fuzzing `govern audit --format json`: mutated real files and generated pyproject tables.

Whatever the bytes, the audit answers with exit 0 or 1 and valid JSON, or a one-line
exit 2 error with a tip; never an internal error, a traceback or a hang (each example
has a time bound). The inputs are the corpus copies under ``tests/data/`` mutated by
byte flips, line duplications and repetitions, truncations and insertions of hostile fragments (huge
versions, NUL bytes, bidirectional controls, coding lines, deep nesting, long lines,
``-r`` to itself, odd operators), and pyproject tables built from the same fragments.
Issue 14: "a Hypothesis fuzz test ... that never sees an internal error or a hang".
"""

from __future__ import annotations

import json
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from clirun import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DATA = Path(__file__).parent / "data"
CORPUS = sorted(p for p in DATA.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")
SECONDS_PER_EXAMPLE = 20

_HOSTILE_TEXT = [
    "foo==" + "1" * 5000,
    "foo!=1." + "9" * 4300 + ",<2",
    "bar<" + "2" * 4299,
    "-r a\x00b.txt",
    "-r " + "a" * 300 + ".txt",
    "-c " + "../d/" * 900 + "r.txt",
    "-r requirements.txt",
    "-c ./requirements.txt",
    "-r /proc/self/environ",
    "-r /dev/zero",
    "-r ${HOME}/x.txt",
    "# -*- coding: undefined -*-",
    "# -*- coding: punycode -*-",
    "# vim: set fileencoding=utf-16 :",
    "# coding: no-such-codec",
    "evil\u202epkg<2  # \u2066reason\u2069 \u202b",
    "foo<2  # govern: reason=\u202egnorw bad=1." + "9" * 5000 + " review-by=99999-01-01",
    "foo" + ",".join(f"!=1.{i}" for i in range(3000)),
    # Issue 22, item 9 (kept small): many caps or wildcards on a line, a long issue list.
    "foo" + ",".join(f"<1.{i}" for i in range(500)),
    "foo" + ",".join(f"!=1.{i}.*" for i in range(2000)),
    "foo" + ",".join(f"{op}1.0{tail}" for op in ("<", ">", "~=") for tail in (".post1", "a1", "")),
    "# govern: issue=" + ",".join(f"o/r#{i}" for i in range(2000)),
    " " * 20000 + "#" + "x" * 20000,
    "foo===1.0",
    "foo~=1",
    "foo<>1",
    "foo=>1",
    "foo!==1",
    "foo<=1.*",
    "foo[\x00]>=1",
    "foo @ file:///etc/passwd",
    "foo ; python_version < '" + "1" * 5000 + "'",
    "-e .",
    "-i https://user:token@host.invalid/simple",
    "foo==1 --hash=sha256:",
    "\\",
    "\r",
    "\x0c\x0b\x1b[31m",
]
_HOSTILE_BYTES = [b"\xff\xfe\x00", b"\xef\xbb\xbf", b"\x00" * 64, b"\xc3(", b"\r\n\r\n"]
_HOSTILE_TOML = [
    "a = " + "[" * 900 + "]" * 900,
    "b = " + "{ c = " * 600 + "1" + " }" * 600,
    "[project]\ndependencies = [" + ",".join('"x<2"' for _ in range(2000)) + "]",
    '[dependency-groups]\na = [{ include-group = "a" }]',
    "[tool.govern]\npolicy = '/dev/zero'",
    "[tool.govern]\ninclude = ['**/*']\nexclude = ['[z-a]']",
]


class Hung(Exception):
    """An example ran past its time bound (not an OSError: code under test catches those)."""


@contextmanager
def _time_bound(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: FrameType | None) -> None:
        raise Hung(f"the audit ran for more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _audit(directory: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``govern audit --format json DIRECTORY``, checked against the contract."""
    with _time_bound(SECONDS_PER_EXAMPLE):
        code, out, err = run_cli(["audit", "--format", "json", str(directory)], capsys)
    assert "internal error" not in err, err
    assert "Traceback" not in out + err
    assert code in (0, 1, 2), (code, err)
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 2, err
        assert lines[0].startswith("govern: error: "), err
        assert lines[1].startswith("Tip: "), err
        return
    document = json.loads(out)
    assert document["schema"] == "govern.audit/1"
    severities = document["summary"]["findings"]
    assert sum(severities.values()) == len(document["findings"])


# -- mutations of the corpus -----------------------------------------------------------


@st.composite
def _mutation(draw: st.DrawFn, data: bytes) -> bytes:
    kind = draw(
        st.sampled_from(["flip", "duplicate", "repeat", "insert", "insert-bytes", "truncate"])
    )
    lines = data.split(b"\n")
    if kind == "flip" and data:
        at = draw(st.integers(0, len(data) - 1))
        return data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
    if kind == "duplicate":
        at = draw(st.integers(0, len(lines) - 1))
        lines.insert(at, lines[at] * draw(st.sampled_from([1, 1, 50])))
        return b"\n".join(lines)
    if kind == "repeat":  # one real line as a run of thousands (issue 22, item 9)
        at = draw(st.integers(0, len(lines) - 1))
        lines[at : at + 1] = [lines[at]] * 2000
        return b"\n".join(lines)
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    fragment = (
        draw(st.sampled_from(_HOSTILE_TEXT)).encode("utf-8", "surrogatepass")
        if kind == "insert"
        else draw(st.sampled_from(_HOSTILE_BYTES))
    )
    lines.insert(draw(st.integers(0, len(lines))), fragment)
    return b"\n".join(lines)


@st.composite
def _mutated_file(draw: st.DrawFn) -> tuple[str, bytes]:
    original = draw(st.sampled_from(CORPUS))
    data = original.read_bytes()
    for _ in range(draw(st.integers(1, 4))):
        data = draw(_mutation(data))
    name = "pyproject.toml" if original.suffix == ".toml" else "requirements.txt"
    return name, data


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    mutated=_mutated_file(),
    sibling=st.sampled_from(["", "-r requirements.txt\n", "-c ../x/../sub.txt\n"]),
)
def test_mutated_corpus_files_never_crash_the_audit(
    mutated: tuple[str, bytes], sibling: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name, data = mutated
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / name).write_bytes(data)
        if sibling:
            (root / "sub.txt").write_text(sibling, encoding="utf-8")
            (root / "requirements" / "x").mkdir(parents=True)
        _audit(root, capsys)


# -- generated pyproject tables ----------------------------------------------------------

_strings = st.one_of(
    st.sampled_from(_HOSTILE_TEXT),
    st.sampled_from(["foo<2", "bar!=1.0", "baz>=1,<3", "qux==1.0.*", "", "x[y]<1 ; os_name=='nt'"]),
    st.text(max_size=30),
)
_values: st.SearchStrategy[Any] = st.recursive(
    st.one_of(_strings, st.integers(), st.booleans(), st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["include-group", "a", "dev", "x y"]), inner, max_size=3),
    ),
    max_leaves=12,
)


def _toml_value(value: Any) -> str:
    """A TOML literal for ``value`` (None is left out by the callers; here an empty string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string, or a TOML error
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, dict):
        items = (f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items() if v is not None)
        return "{ " + ", ".join(items) + " }"
    return '""'


_TABLES = {
    "project": ["dependencies", "requires-python", "optional-dependencies", "name"],
    "dependency-groups": ["dev", "test", "docs"],
    "build-system": ["requires"],
    "tool.govern": ["policy", "include", "exclude", "annotations", "fail-on", "comment-style"],
}


@st.composite
def _pyproject(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for table in draw(st.lists(st.sampled_from(sorted(_TABLES)), min_size=1, max_size=4)):
        parts.append(f"[{table}]")
        for key in draw(st.lists(st.sampled_from(_TABLES[table]), max_size=3, unique=True)):
            parts.append(f"{key} = {_toml_value(draw(_values))}")
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), draw(st.sampled_from(_HOSTILE_TOML)))
    return "\n".join(parts) + "\n"


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=_pyproject(), beside=st.booleans())
def test_generated_pyproject_tables_never_crash_the_audit(
    text: str, beside: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "pyproject.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
        if beside:
            (root / "requirements.txt").write_text("foo<2\n-r pyproject.toml\n", encoding="utf-8")
        _audit(root, capsys)
