"""Tests for :mod:`govern.sources.tomlpos`: where TOML values sit in their text."""

from __future__ import annotations

import tomllib

import pytest

from govern.sources.tomlpos import Scanner, decode_string, dotted, error_message, error_position

TEXT = """\
[project]
name = "x"  # a comment
dependencies = [
  "a>=1",
  'b',
]
[[tool.item]]
k = {v = 1}
[[tool.item]]
k = {v = 2}
"""


def test_the_scanner_records_where_each_value_starts() -> None:
    scan = Scanner(TEXT).scan()
    item = scan.locs[("project", "dependencies", 0)]
    assert (item.kind, TEXT[item.start : item.end]) == ("string", "a>=1")
    literal = scan.locs[("project", "dependencies", 1)]
    assert literal.literal
    assert TEXT[literal.start : literal.end] == "b"
    second = scan.locs[("tool", "item", 1, "k", "v")]
    assert TEXT[second.start] == "2"
    assert scan.comments == [TEXT.index("#")]


def test_the_scanner_keeps_what_it_found_before_text_it_does_not_follow() -> None:
    scan = Scanner('a = "x"\nb = "y\nc = 1\n').scan()  # b's string never ends
    assert ("a",) in scan.locs
    assert ("c",) not in scan.locs


def test_strings_are_decoded_as_toml_does() -> None:
    assert decode_string("a\\tb", multi=False, literal=False) == "a\tb"
    assert decode_string("a\\tb", multi=False, literal=True) == "a\\tb"


def test_key_paths_are_shown_as_written() -> None:
    assert dotted(("project", "dependencies", 1)) == "project.dependencies[1]"


@pytest.mark.parametrize(
    ("text", "position"),
    [("a = 1\nb = \n", (2, 5)), ("a = [1,\n", (1, 8)), ("a = 1\na = 2\n", (2, 6))],
)
def test_error_positions_are_read_from_tomllib(text: str, position: tuple[int, int]) -> None:
    with pytest.raises(tomllib.TOMLDecodeError) as raised:
        tomllib.loads(text)
    assert error_position(raised.value, text.splitlines()) == position
    assert error_message(raised.value).startswith("invalid TOML: ")
    assert "(at " not in error_message(raised.value)
