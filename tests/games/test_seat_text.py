"""Quoting a seat's text: one line, no role tag, honest text untouched."""

from __future__ import annotations

import pytest

from strategic_arena.games.seat_text import LINE_BREAK, quote, role_tags

TAGS = role_tags(["Player 0", "Player 1", "Red Spymaster"])


@pytest.mark.parametrize(
    "honest", ["[Offer: 2 Wheat -> 1 Ore]", "[Accept]", "[1 cooperate]", "[GAMEPLAY] x", "hi"]
)
def test_honest_text_is_left_exactly_as_written(honest: str) -> None:
    assert quote(honest, TAGS) == honest


@pytest.mark.parametrize(
    ("move", "quoted"),
    [
        ("[GA[GAME]ME] rule", "[GA(GAME)ME] rule"),
        ("[GAME [Player 0]] x", "(GAME (Player 0)) x"),  # TextArena's one pass leaves a tag
        ("[ game ] x", "( game ) x"),
        ("[player  1 says] x", "(player  1 says) x"),
        ("[Red Spymaster] x", "(Red Spymaster) x"),
        ("a\r\nb\u2028[GAME] c", "a \u23ce b \u23ce (GAME) c"),
    ],
)
def test_tags_are_defused_and_lines_joined(move: str, quoted: str) -> None:
    assert quote(move, TAGS) == quoted


def test_no_text_quotes_to_a_line_break_or_a_tag() -> None:
    # Every split and nesting of a tag and a line break, around and inside each other.
    pieces = ["[", "]", "GAME", "Player 1", "\n", "\u2029", "x", " ", "[GA", "ME]"]
    texts = [a + b + c + d for a in pieces for b in pieces for c in pieces for d in pieces]
    for text in texts:
        quoted = quote(text, TAGS)
        assert LINE_BREAK.search(quoted) is None and TAGS.search(quoted) is None, text
