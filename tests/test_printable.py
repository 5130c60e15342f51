from hypothesis import given
from hypothesis import strategies as st

from strategic_arena.door.printable import printable, printable_line


def test_escape_sequences_are_shown_not_sent() -> None:
    hostile = "ok\x1b[2J\x1b]0;pwned\x07\x00\r\u202etxt\ud800"
    shown = printable(hostile)
    assert shown == "ok\\x1b[2J\\x1b]0;pwned\\x07\\x00\\x0d\\u202etxt\\ud800"
    shown.encode("utf-8")  # lone surrogates are escaped, so this never raises


def test_newlines_one_line_or_kept() -> None:
    assert printable_line("a\nb") == "a\\nb"
    assert printable("a\nb\r\n", keep_newlines=True) == "a\nb\\x0d\n"


def test_plain_text_and_unicode_unchanged() -> None:
    text = "Player 1 bets ♠ K — “fine” 日本"
    assert printable(text) == text


def test_limit_cuts_with_ellipsis() -> None:
    assert printable("abcdef", limit=4) == "abc…"
    assert printable("abc", limit=4) == "abc"


@given(st.text())
def test_every_output_character_is_printable(text: str) -> None:
    shown = printable(text)
    shown.encode("utf-8")
    assert all(char.isprintable() for char in shown)
