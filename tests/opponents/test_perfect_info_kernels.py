"""The Tic-Tac-Toe and Connect Four numba kernels against OpenSpiel on many random games."""

from __future__ import annotations

from types import ModuleType

import numba
import numpy as np
import pyspiel
import pytest

from opponents.kernels import connect_four, tic_tac_toe

KERNELS = [("tic_tac_toe", tic_tac_toe), ("connect_four", connect_four)]


@numba.njit
def _seed_numba(seed: int) -> None:
    np.random.seed(seed)


def _legal(kernel: ModuleType, state: np.ndarray, buffer: np.ndarray) -> list[int]:
    count = kernel.legal_moves(state, buffer)
    return [int(action) for action in buffer[:count]]


@pytest.mark.parametrize(("name", "kernel"), KERNELS)
def test_kernel_matches_openspiel_on_random_games(name: str, kernel: ModuleType) -> None:
    game = pyspiel.load_game(name)
    assert game.num_distinct_actions() == kernel.NUM_ACTIONS
    rng = np.random.default_rng(20240611)
    buffer = np.zeros(kernel.NUM_ACTIONS, dtype=np.int64)
    lengths = set()
    outcomes = {(1.0, -1.0): 0, (-1.0, 1.0): 0, (0.0, 0.0): 0}
    for _ in range(10_000):
        reference = game.new_initial_state()
        state = kernel.new_state()
        while True:
            assert kernel.is_terminal(state) == reference.is_terminal()
            assert kernel.current_player(state) == reference.current_player()
            if reference.is_terminal():
                break
            legal = _legal(kernel, state, buffer)
            assert legal == reference.legal_actions()
            action = legal[int(rng.integers(len(legal)))]
            reference.apply_action(action)
            kernel.apply_move(state, action)
        assert _legal(kernel, state, buffer) == []
        assert kernel.returns(state) == tuple(reference.returns())
        assert kernel.to_text(state) == str(reference)
        lengths.add(len(reference.history()))
        outcomes[kernel.returns(state)] += 1
    # random games cover wins of both sides, draws and many game lengths
    assert min(outcomes.values()) >= 10  # random Connect Four is drawn ~0.3% of the time
    assert len(lengths) >= (5 if name == "tic_tac_toe" else 30)


@pytest.mark.parametrize(("name", "kernel"), KERNELS)
def test_state_from_history_round_trip(name: str, kernel: ModuleType) -> None:
    game = pyspiel.load_game(name)
    rng = np.random.default_rng(7)
    for _ in range(200):
        reference = game.new_initial_state()
        state = kernel.new_state()
        assert np.array_equal(kernel.state_from_history([]), state)
        while not reference.is_terminal():
            legal = reference.legal_actions()
            action = legal[int(rng.integers(len(legal)))]
            reference.apply_action(action)
            kernel.apply_move(state, action)
            rebuilt = kernel.state_from_history(reference.history())
            assert np.array_equal(rebuilt, state)
            assert kernel.to_text(rebuilt) == str(reference)


@pytest.mark.parametrize(
    ("kernel", "history", "message"),
    [
        (tic_tac_toe, [4, 4], "action 4 at ply 1 is not legal"),
        (tic_tac_toe, [0, 3, 1, 4, 2, 5], "action 5 at ply 5"),  # X has won at ply 4
        (tic_tac_toe, [9], "action 9 at ply 0"),
        (connect_four, [0] * 7, "action 0 at ply 6"),  # the column is full
        (connect_four, [7], "action 7 at ply 0"),
        (connect_four, [0, 1, 0, 1, 0, 1, 0, 1], "action 1 at ply 7"),  # x won at ply 6
    ],
)
def test_state_from_history_rejects_illegal_moves(
    kernel: ModuleType, history: list[int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        kernel.state_from_history(history)


def test_connect_four_lines_in_every_direction() -> None:
    cases = {
        "vertical": [0, 1, 0, 1, 0, 1, 0],
        "horizontal": [0, 0, 1, 1, 2, 2, 3],
        "diagonal up-right": [0, 1, 1, 2, 2, 3, 2, 3, 3, 6, 3],
        "diagonal down-right": [6, 5, 5, 4, 4, 3, 4, 3, 3, 0, 3],
    }
    game = pyspiel.load_game("connect_four")
    for label, history in cases.items():
        reference = game.new_initial_state()
        for action in history:
            reference.apply_action(action)
        state = connect_four.state_from_history(history)
        assert connect_four.is_terminal(state), label
        assert connect_four.returns(state) == tuple(reference.returns()), label
        assert connect_four.winner(state) == (len(history) - 1) % 2, label

    def bits(*cells: tuple[int, int]) -> int:
        return sum(1 << (column * 7 + row) for column, row in cells)

    assert connect_four.has_four(bits((0, 5), (1, 5), (2, 5), (3, 5)))  # the top row
    assert connect_four.has_four(bits((6, 2), (5, 3), (4, 4), (3, 5)))
    # no wrap-around through the sentinel row: the top of column 0, the bottom of column 1
    assert not connect_four.has_four(bits((0, 3), (0, 4), (0, 5), (1, 0)))
    assert not connect_four.has_four(bits((0, 4), (0, 5), (1, 0), (1, 1)))


def test_tic_tac_toe_draw_is_terminal_with_zero_returns() -> None:
    state = tic_tac_toe.state_from_history([0, 4, 8, 1, 7, 6, 2, 5, 3])
    assert tic_tac_toe.is_terminal(state)
    assert tic_tac_toe.winner(state) == tic_tac_toe.NO_WINNER
    assert tic_tac_toe.returns(state) == (0.0, 0.0)
    assert tic_tac_toe.current_player(state) == tic_tac_toe.TERMINAL


def test_random_playout_tic_tac_toe_matches_exact_probabilities() -> None:
    # uniformly random Tic-Tac-Toe: X wins 737/1260, O wins 121/420, draws 8/63
    _seed_numba(3)
    state = tic_tac_toe.new_state()
    results = np.array([tic_tac_toe.random_playout(state) for _ in range(100_000)])
    assert np.array_equal(state, tic_tac_toe.new_state())  # not mutated
    assert abs(np.mean(results == 1.0) - 737 / 1260) < 0.006
    assert abs(np.mean(results == -1.0) - 121 / 420) < 0.006
    assert abs(np.mean(results == 0.0) - 8 / 63) < 0.004
    # forced results: one empty cell left (X completes the bottom row / a draw)
    x_wins = tic_tac_toe.state_from_history([0, 3, 1, 4, 5, 7, 6, 8])  # X completes the top row
    assert tic_tac_toe.random_playout(x_wins) == 1.0
    draw = tic_tac_toe.state_from_history([0, 4, 8, 1, 7, 6, 2, 5])
    assert tic_tac_toe.random_playout(draw) == 0.0


def test_random_playout_connect_four_matches_openspiel_random_games() -> None:
    history = [3, 3, 2, 4]
    game = pyspiel.load_game("connect_four")
    rng = np.random.default_rng(11)
    reference_wins = 0
    games = 4_000
    for _ in range(games):
        reference = game.new_initial_state()
        for action in history:
            reference.apply_action(action)
        while not reference.is_terminal():
            legal = reference.legal_actions()
            reference.apply_action(legal[int(rng.integers(len(legal)))])
        reference_wins += reference.returns()[0] > 0
    _seed_numba(5)
    state = connect_four.state_from_history(history)
    results = np.array([connect_four.random_playout(state) for _ in range(40_000)])
    # the two estimates of player 0's winning chance agree within ~4 standard errors
    assert abs(np.mean(results == 1.0) - reference_wins / games) < 0.035
