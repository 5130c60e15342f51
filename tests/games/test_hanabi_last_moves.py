"""The remembered last-round lines of many-player Hanabi are the lines of the whole history."""

from __future__ import annotations

import numpy as np
import pytest

from strategic_arena.games import get_spec
from strategic_arena.games.hanabi_players import REPLAYS_SIZE, HanabiPlayers
from strategic_arena.views import move_history


@pytest.mark.parametrize("env_id", ["hanabi_3p-v0", "hanabi_5p-v0"])
def test_last_moves_are_the_histories_last_round_remembered_or_not(env_id: str) -> None:
    spec = get_spec(env_id)
    assert isinstance(spec, HanabiPlayers)
    hand = spec.hand_size
    for seed in range(3):
        rng = np.random.default_rng(seed)
        state = spec.game.new_initial_state()
        decisions = 0
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(outcomes, p=probs)))
                continue
            if decisions % 7 == 3:
                spec._described.clear()  # forgotten: described again from a replay
            if decisions % 5 == 1:
                spec._replays.clear()  # no kept state: replayed from the start
            expected = list(move_history(spec, state)[-spec.players :])
            assert spec.last_moves(state) == expected
            assert spec.last_moves(state) == expected  # remembered
            legal = state.legal_actions()
            safe = [a for a in legal if not hand <= a < 2 * hand]  # no plays: long games
            state.apply_action(int(rng.choice(safe or legal)))
            decisions += 1
        assert decisions > 20
        assert 0 < len(spec._replays) <= REPLAYS_SIZE
