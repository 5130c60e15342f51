"""The adapters' game session sends only what the model's seat may know."""

from __future__ import annotations

import json

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
