"""The adapters' game session sends only what the model's seat may know."""

from __future__ import annotations

import json

import pytest

from strategic_arena.integrations.session import GameSession
from strategic_arena.players import game_header


def test_the_serve_header_of_a_session_is_the_seat_information_alone() -> None:
    """Kuhn deals differ by seed; wherever the model's seat knows the same, the header is equal."""
    headers: dict[str, set[str]] = {}
    histories: dict[str, set[tuple[int, ...]]] = {}
    for seed in range(24):
        session = GameSession("kuhn_poker-v0", "random")
        session.reset(seed, seat=0)
        information = session.information()
        header = session.game_header()
        assert header == game_header(information, "marshal")
        payload = json.loads(header)
        assert payload["history"] is None and payload["seat"] == 0  # Kuhn hides the cards
        known = str(information.information_state)
        headers.setdefault(known, set()).add(header)
        histories.setdefault(known, set()).add(tuple(session.env.spiel_state.history()))
    # the other seat's card changed the full history but never the header
    assert any(len(seen) > 1 for seen in histories.values())
    assert all(len(seen) == 1 for seen in headers.values())


def test_a_session_plays_a_free_text_game_with_the_models_move_texts() -> None:
    pytest.importorskip("textarena", reason="the [textarena] extra is not installed")
    session = GameSession("spiral_kuhn_poker-v0", "random")
    session.reset(3, seat=0)
    answers = 0
    while not session.done and answers < 40:
        outcome = session.step("<think>ok</think><answer>[check]</answer>")
        answers += 1
        assert outcome.error is None  # a text move is the game's to judge, never our error
    assert session.done and session.returns()[0] in (-1.0, 0.0, 1.0)
    assert all(turn.text.endswith("<answer>[check]</answer>") for turn in session.episode().turns)
