"""TOML tables read with their types checked, and values shown one way in every message.

The configuration (:mod:`govern.config`), the CI provider tables (:mod:`govern.ci.options`),
the policy loader and the pyproject reader share these rules, so a mistake reads the same
wherever it is made: the file or table (``where``), the key path, and the value's TOML type.
"""

from __future__ import annotations

import difflib
import json
import tomllib
from collections.abc import Collection, Iterable, Mapping
from datetime import date, datetime, time
from typing import Any, overload

from govern.errors import ConfigError

__all__ = [
    "InvalidToml",
    "boolean",
    "choice",
    "days",
    "did_you_mean",
    "flag",
    "kind",
    "known_keys",
    "names",
    "parse_toml",
    "show",
    "string",
    "strings",
    "tables",
]


class InvalidToml(ValueError):
    """Text that is not TOML; the message is tomllib's, with its line and column."""


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (JSON's escapes are TOML's for every character)."""
    return json.dumps(text, ensure_ascii=False)


def parse_toml(raw: bytes) -> dict[str, Any]:
    """The document in ``raw`` (UTF-8 TOML), or :class:`InvalidToml` saying why not."""
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except RecursionError:
        raise InvalidToml("tables or arrays nested too deeply") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidToml(str(exc)) from None


def kind(value: object) -> str:
    """The TOML name of a parsed value's type, for messages (``a number``, ``a table``)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, datetime):
        return "a date-time"
    if isinstance(value, date):
        return "a date"
    if isinstance(value, time):
        return "a time"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"


def show(value: Any) -> str:
    """A value for a one-line message: strings quoted, dates as written, else the type."""
    if isinstance(value, str):
        return repr(value) if len(value) <= 80 else repr(value[:77] + "...")
    if isinstance(value, date):  # also datetime
        return value.isoformat()
    if isinstance(value, list) and value:
        bad = next((v for v in value if not isinstance(v, str)), value[0])
        return f"an array holding {kind(bad)}"
    return kind(value)


def names(keys: Iterable[str]) -> str:
    """Key names for a one-line message (odd ones quoted, so no newline gets through)."""
    return ", ".join(
        k if k.isprintable() and k.strip() == k and k else repr(k) for k in sorted(keys)
    )


def known_keys(
    table: Mapping[str, Any],
    known: Collection[str],
    where: str,
    *,
    what: str = "key(s)",
    after: str = "",
    tip: str | None = None,
) -> None:
    """Refuse any key not in ``known``: "{where}: unknown {what} a, b{after}", with the
    known keys as the tip unless ``tip`` is given; when an unknown key is probably a
    misspelling of a known one, the tip says which ("Did you mean base?") instead of
    listing them."""
    unknown = {str(k) for k in table if k not in known}
    if unknown:
        guess = did_you_mean(unknown, known)
        if guess is None:
            tip = tip or f"Known keys: {', '.join(sorted(known))}."
        raise ConfigError(
            f"{where}: unknown {what} {names(unknown)}{after}",
            tip=f"{guess} {tip}" if guess and tip else guess or tip,
        )


def did_you_mean(unknown: Collection[str], known: Collection[str]) -> str | None:
    """ "Did you mean base?" for the known keys closest to the unknown ones, if any is close
    (:func:`difflib.get_close_matches`); several: "Did you mean base (for bse), via (for vai)?"."""
    pairs = [
        (key, close[0])
        for key in sorted(unknown)
        if (close := difflib.get_close_matches(key, [str(k) for k in known], n=1))
    ]
    if not pairs:
        return None
    if len(unknown) == 1:
        return f"Did you mean {pairs[0][1]}?"
    return "Did you mean " + ", ".join(f"{g} (for {names({k})})" for k, g in pairs) + "?"


def string(table: Mapping[str, Any], key: str, where: str, prefix: str = "") -> str | None:
    """``table[key]`` if it is a string, ``None`` if absent; anything else is an error."""
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, str):
        raise ConfigError(
            f"{where}: {prefix}{key} must be a string, not {show(value)}",
            tip=f'Quote the value: {key} = "...".',
        )
    return value


def strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    """A string or a list of strings, as a tuple."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(
        f"{where}: {key} must be a string or a list of strings, not {show(value)}",
        tip=f'Write it as {key} = ["..."].',
    )


@overload
def choice(
    table: Mapping[str, Any], key: str, where: str, choices: tuple[str, ...], default: str
) -> str: ...
@overload
def choice(
    table: Mapping[str, Any], key: str, where: str, choices: tuple[str, ...], default: None = None
) -> str | None: ...
def choice(
    table: Mapping[str, Any],
    key: str,
    where: str,
    choices: tuple[str, ...],
    default: str | None = None,
) -> str | None:
    """One of ``choices``; ``default`` when absent."""
    if key not in table:
        return default
    value = table[key]
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(
            f"{where}: {key} must be one of {', '.join(choices)}, not {show(value)}",
            tip=f'Write it as a string, e.g. {key} = "{choices[0]}".',
        )
    return value


def flag(table: Mapping[str, Any], key: str, where: str, prefix: str = "") -> bool | None:
    """An optional boolean: None when absent (a wider setting applies)."""
    if key not in table:
        return None
    if not isinstance(table[key], bool):
        raise ConfigError(
            f"{where}: {prefix}{key} must be true or false, not {show(table[key])}",
            tip=f"Write a TOML boolean without quotes: {key} = true.",
        )
    return bool(table[key])


def boolean(table: Mapping[str, Any], key: str, where: str) -> bool:
    """A boolean, false when absent."""
    return bool(flag(table, key, where))


def tables(value: Any, key: str, where: str, *, each: str, tip: str) -> dict[str, Any]:
    """A table of tables (``[tool.govern.ci.NAME]``), ``each`` naming what one table is."""
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ConfigError(
            f"{where}: {key} must be tables, one per {each}, not {show(value)}", tip=tip
        )
    return value


def days(table: Mapping[str, Any], key: str, where: str) -> int | None:
    """A number of days (0 or more), None when absent."""
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(
            f"{where}: {key} must be a number of days (0 or more), not {show(value)}",
            tip=f"Write it without quotes: {key} = 7.",
        )
    return value
