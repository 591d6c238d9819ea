"""govern.text: one visible form for characters that hide or reorder text."""

from __future__ import annotations

import pytest

from govern.text import fenced, line, link, quoted, visible


@pytest.mark.parametrize(
    ("code", "name"),
    [
        *((c, "embedding or override") for c in range(0x202A, 0x202F)),
        *((c, "isolate") for c in range(0x2066, 0x206A)),
        (0x200E, "left-to-right mark"),
        (0x200F, "right-to-left mark"),
        (0x061C, "Arabic letter mark"),
        (0x200B, "zero-width space"),
        (0xFEFF, "byte order mark"),
        (0x2028, "line separator"),
        *((c, "C0 control") for c in (*range(0x09), *range(0x0B, 0x20))),
        *((c, "DEL or C1 control") for c in range(0x7F, 0xA0)),
    ],
)
def test_each_hiding_character_is_written_as_its_code_point(code: int, name: str) -> None:
    assert visible(f"a{chr(code)}b") == f"a<U+{code:04X}>b", name


def test_tabs_are_kept_and_line_breaks_only_when_asked() -> None:
    assert visible("a\tb\nc\r\nd") == "a\tb<U+000A>c<U+000D><U+000A>d"
    assert visible("a\tb\nc\r\nd", lines=True) == "a\tb\nc\r\nd"
    assert visible("\x1b[2J", lines=True) == "<U+001B>[2J"


def test_ordinary_text_and_joiners_are_left_alone() -> None:
    text = "cupy-cuda13x < 14.1.0 — Ünïcode, 日本語, עברית, emoji 👩\u200d💻, ZWNJ می\u200cخواهم"
    assert visible(text) == text


def test_a_terminal_line_collapses_whitespace_cuts_then_escapes() -> None:
    assert line("a \n\t b\u202e") == "a b<U+202E>"
    assert line("x" * 10 + "\u202e", 5) == "xxxx…"
    assert line(None) == "None"


def test_quoted_text_is_one_code_span_whatever_backticks_it_holds() -> None:
    assert quoted("@octocat closes #5") == "`@octocat closes #5`"
    assert quoted("a `b` c") == "``a `b` c``"
    assert quoted("x ``` y") == "````x ``` y````"
    assert quoted("`edge`") == "`` `edge` ``"  # padded: the backtick cannot join the fence
    assert quoted("") == "` `"


def test_quoted_text_shows_hidden_characters_and_no_html_comment_opens() -> None:
    assert quoted("a\u202eb\x1b") == "`a<U+202E>b<U+001B>`"
    assert quoted("<!-- govern:x=1 -->") == "`<U+003C>!-- govern:x=1 -->`"


def test_several_lines_are_a_fenced_block_no_line_of_which_closes_it() -> None:
    assert quoted("one\r\n```\ntwo") == "\n````\none\n```\ntwo\n````\n"
    assert fenced("-a\n+b", "diff") == "```diff\n-a\n+b\n```"


def test_only_a_plain_url_stays_a_link() -> None:
    assert link("https://github.com/o/r/issues/1") == "https://github.com/o/r/issues/1"
    assert link("https://x.example/a)b") == "`https://x.example/a)b`"
    assert link("see @octocat") == "`see @octocat`"
    assert link("https://x.example/\u202e") == "`https://x.example/<U+202E>`"
