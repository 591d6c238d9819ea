"""``shell_split`` is ``shlex.split`` (POSIX, no comments), with a fast path."""

from __future__ import annotations

import itertools
import shlex

import pytest

from govern.sources.pipline import shell_split


def _shlex(text: str) -> list[str] | str:
    try:
        return shlex.split(text)
    except ValueError as exc:
        return f"error: {exc}"


def _ours(text: str) -> list[str] | str:
    try:
        return shell_split(text)
    except ValueError as exc:
        return f"error: {exc}"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        'reason="CuPy 14.1.0 imports pytest" issue=cupy/cupy#9963 bad=14.1.0',
        "review-by=2027-01-31 owner=@runtime-team verify='pytest -k cupy'",
        'a"b c"d \'e "f\' ""',
        'unterminated "quote',
        "back\\ slash",
        "trailing\\",
        "tab\tsep\r\nlines \x0bvt",
        "--hash=sha256:abc --hash sha256:def",
    ],
)
def test_matches_shlex(text: str) -> None:
    assert _ours(text) == _shlex(text)


def test_matches_shlex_exhaustively_on_short_texts() -> None:
    alphabet = ["a", " ", "\t", '"', "'", "\\", "#", "="]
    for length in range(6):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            assert _ours(text) == _shlex(text), repr(text)
