"""The Kuhn and Leduc numba kernels against OpenSpiel on many random games."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pyspiel
import pytest

from opponents.kernels import kuhn_poker, leduc_poker

KERNELS = [("kuhn_poker", kuhn_poker), ("leduc_poker", leduc_poker)]


def _legal(kernel: ModuleType, state: np.ndarray, buffer: np.ndarray) -> list[int]:
    count = kernel.legal_actions(state, buffer)
    return [int(action) for action in buffer[:count]]


@pytest.mark.parametrize(("name", "kernel"), KERNELS)
def test_kernel_matches_openspiel_on_random_games(name: str, kernel: ModuleType) -> None:
    game = pyspiel.load_game(name)
    rng = np.random.default_rng(1234)
    buffer = np.zeros(max(kernel.NUM_CARDS, kernel.NUM_ACTIONS), dtype=np.int64)
    history_buffer = np.zeros(kernel.MAX_HISTORY, dtype=np.int64)
    lengths = set()
    outcomes = set()
    for _ in range(10_000):
        reference = game.new_initial_state()
        state = kernel.new_state()
        while True:
            assert kernel.is_terminal(state) == reference.is_terminal()
            if reference.is_terminal():
                break
            assert kernel.current_player(state) == reference.current_player()
            legal = _legal(kernel, state, buffer)
            if reference.is_chance_node():
                assert legal == [action for action, _ in reference.chance_outcomes()]
            else:
                assert legal == reference.legal_actions()
            action = legal[int(rng.integers(len(legal)))]
            reference.apply_action(action)
            kernel.apply_action(state, action)
        assert kernel.current_player(state) == kernel.TERMINAL
        assert _legal(kernel, state, buffer) == []
        assert kernel.returns(state) == tuple(reference.returns())
        length = kernel.history(state, history_buffer)
        assert history_buffer[:length].tolist() == reference.history()
        assert np.array_equal(kernel.state_from_history(reference.history()), state)
        lengths.add(length)
        outcomes.add(kernel.returns(state))
    # the random games cover every hand length and many payoffs
    assert len(lengths) == (2 if name == "kuhn_poker" else 8)
    assert len(outcomes) >= (4 if name == "kuhn_poker" else 10)


@pytest.mark.parametrize(("name", "kernel"), KERNELS)
def test_deal_is_uniform_over_remaining_cards(name: str, kernel: ModuleType) -> None:
    game = pyspiel.load_game(name)
    reference = game.new_initial_state()
    state = kernel.new_state()
    # Kuhn: player 0 holds the Queen, player 1's card is next; Leduc: two private cards and
    # check, check, the public card is next.
    actions = [1] if name == "kuhn_poker" else [1, 0, 1, 1]
    for action in actions:
        reference.apply_action(action)
        kernel.apply_action(state, action)
    remaining = [action for action, _ in reference.chance_outcomes()]
    picks = [kernel.chance_outcome(state, (index + 0.5) / 120) for index in range(120)]
    assert sorted(set(picks)) == remaining
    assert all(picks.count(card) == 120 // len(remaining) for card in remaining)
    before = kernel.current_player(state)
    card = kernel.deal(state, 0.99)
    assert before == kernel.CHANCE and card == remaining[-1]


def test_leduc_betting_sizes_and_pot() -> None:
    # deal J(0) Q(2); raise, re-raise, call; public K(4); raise, raise, call: 1+2+2, then +4+4
    state = leduc_poker.state_from_history([0, 2, 2, 2, 1, 4, 2, 2, 1])
    assert leduc_poker.is_terminal(state)
    assert leduc_poker.returns(state) == (-13.0, 13.0)
    # a pair wins: J(0) with public J(1) against K(4)
    state = leduc_poker.state_from_history([0, 4, 1, 1, 1, 1, 1])
    assert leduc_poker.returns(state) == (1.0, -1.0)
