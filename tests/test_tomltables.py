"""Tests for :mod:`govern.tomltables`: typed reads of TOML tables and how values are shown."""

from __future__ import annotations

from datetime import date, datetime, time

import pytest

from govern.errors import ConfigError
from govern.tomltables import (
    InvalidToml,
    boolean,
    choice,
    days,
    flag,
    kind,
    known_keys,
    names,
    parse_toml,
    show,
    string,
    strings,
    tables,
)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (True, "a boolean"),
        (3, "a number"),
        (2.5, "a number"),
        ("x", "a string"),
        (datetime(2027, 1, 31, 12, 0), "a date-time"),
        (date(2027, 1, 31), "a date"),
        (time(12, 0), "a time"),
        ([1], "an array"),
        ({"a": 1}, "a table"),
    ],
)
def test_kind_names_each_toml_type(value: object, shown: str) -> None:
    assert kind(value) == shown


def test_show_quotes_strings_and_names_the_odd_item_of_an_array() -> None:
    assert show("main") == "'main'"
    assert show("x" * 100) == repr("x" * 77 + "...")
    assert show(date(2027, 1, 31)) == "2027-01-31"
    assert show(["a", 3]) == "an array holding a number"
    assert show({}) == "a table"


def test_names_quote_keys_that_could_break_a_line() -> None:
    assert names({"b", "a", "x\ny", " c"}) == "' c', a, b, 'x\\ny'"


def test_typed_reads_name_the_file_the_key_and_the_type() -> None:
    table = {"s": "v", "n": 1, "b": True, "l": ["a", "b"], "d": 7}
    assert string(table, "s", "f.toml") == "v"
    assert string(table, "absent", "f.toml") is None
    with pytest.raises(ConfigError, match=r"^f.toml: p.n must be a string, not a number$"):
        string(table, "n", "f.toml", prefix="p.")
    assert strings(table["l"], "l", "f.toml") == ("a", "b")
    assert strings("one", "l", "f.toml") == ("one",)
    with pytest.raises(ConfigError, match="must be a string or a list of strings, not a number"):
        strings(1, "l", "f.toml")
    assert boolean(table, "b", "f.toml") is True
    assert boolean(table, "absent", "f.toml") is False
    assert flag(table, "absent", "f.toml") is None
    with pytest.raises(ConfigError, match="n must be true or false, not a number"):
        flag(table, "n", "f.toml")
    assert days(table, "d", "f.toml") == 7
    with pytest.raises(ConfigError, match=r"b must be a number of days \(0 or more\)"):
        days(table, "b", "f.toml")


def test_choice_takes_the_default_when_absent_and_refuses_anything_else() -> None:
    assert choice({}, "style", "f.toml", ("above", "below"), "above") == "above"
    assert choice({}, "style", "f.toml", ("above", "below")) is None
    assert choice({"style": "below"}, "style", "f.toml", ("above", "below")) == "below"
    with pytest.raises(ConfigError, match="style must be one of above, below, not 'side'") as e:
        choice({"style": "side"}, "style", "f.toml", ("above", "below"))
    assert e.value.tip == 'Write it as a string, e.g. style = "above".'


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"a = [1,", "(at end of document)"),
        (b"a = 1\nb = \n", "(at line 2, column 5)"),
        (b"a = '\xff'", "codec can't decode byte 0xff"),
        (b"a = " + b"[" * 5000 + b"]" * 5000, "tables or arrays nested too deeply"),
    ],
)
def test_parse_toml_says_why_text_is_not_toml(raw: bytes, message: str) -> None:
    with pytest.raises(InvalidToml) as raised:
        parse_toml(raw)
    assert message in str(raised.value)


def test_parse_toml_reads_a_document() -> None:
    assert parse_toml(b'[tool.govern]\npolicy = "strict"\n') == {
        "tool": {"govern": {"policy": "strict"}}
    }


def test_tables_are_a_table_of_tables() -> None:
    assert tables({"a": {"k": 1}}, "ci", "f.toml", each="provider", tip="t") == {"a": {"k": 1}}
    with pytest.raises(
        ConfigError, match=r"^f.toml: ci must be tables, one per provider, not a table$"
    ):
        tables({"a": 1}, "ci", "f.toml", each="provider", tip="t")
    with pytest.raises(ConfigError, match="profiles must be tables, one per profile, not an array"):
        tables([], "profiles", "f.toml", each="profile", tip="t")


def test_known_keys_name_the_unknown_ones_and_tip_the_known_ones() -> None:
    known_keys({"a": 1}, {"a", "b"}, "f.toml")
    with pytest.raises(ConfigError) as raised:
        known_keys({"a": 1, "z": 2, "y\n": 3}, {"a", "b"}, "f.toml", after=" in profile p")
    assert raised.value.message == "f.toml: unknown key(s) 'y\\n', z in profile p"
    assert raised.value.tip == "Known keys: a, b."
    with pytest.raises(ConfigError, match=r"^f.toml: unknown \[tool.govern\] key\(s\) z$"):
        known_keys({"z": 1}, {"a"}, "f.toml", what="[tool.govern] key(s)", tip="t")
