"""The numba UCT MCTS: strength, determinism, solving, batching, agreement with OpenSpiel."""

from __future__ import annotations

import threading

import numpy as np
import pyspiel
import pytest

import opponents
from opponents.mcts import (
    MCTSConfig,
    MCTSPlayer,
    batch_search,
    play_batch,
    search,
    state_from_history,
)
from strategic_arena.arena import play_match_sync
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import GameState

TTT = "tic_tac_toe-v0"
C4 = "connect_four-v0"


@pytest.mark.parametrize("seat", [0, 1])
def test_mcts_never_loses_to_random_at_tic_tac_toe(seat: int) -> None:
    results = []
    for game in range(100):
        mcts = MCTSPlayer(TTT, simulations=1000, seed=game)
        players = [RandomPlayer(seed=10_000 + game)]
        players.insert(seat, mcts)
        record = play_match_sync(TTT, players, seed=game)
        assert record.status == "complete"
        results.append(record.returns[seat])
    assert min(results) >= 0.0
    assert results.count(1.0) > 60  # and it mostly wins


def test_same_seed_same_moves() -> None:
    def game(seed: int) -> tuple[int, ...]:
        players = [MCTSPlayer(C4, simulations=200, seed=seed), RandomPlayer(seed=4)]
        return play_match_sync(C4, players, seed=0).history

    assert game(1) == game(1)
    assert game(1) != game(2)
    first = search(C4, [3, 3], MCTSConfig(300), seed=9)
    assert search(C4, [3, 3], MCTSConfig(300), seed=9) == first
    assert search(C4, [3, 3], MCTSConfig(300), seed=10).visits != first.visits


def test_search_statistics() -> None:
    result = search(C4, [], MCTSConfig(2000), seed=0)
    # the first simulation evaluates the root itself, every later one goes through a child
    assert result.simulations == 2000
    assert sum(result.visits.values()) == 1999
    assert set(result.visits) == set(range(7))
    assert result.visits[result.action] == max(result.visits.values())
    assert all(-1.0 <= value <= 1.0 for value in result.values.values())
    assert result.proven == {}
    # more than the initial tree arrays hold: they grow
    big = search(C4, [], MCTSConfig(20_000, rollouts=2), seed=1)
    assert sum(big.visits.values()) == 19_999
    assert big.action == 3  # the centre column


def test_one_simulation_plays_a_legal_move() -> None:
    actions = {search(TTT, [4], MCTSConfig(1), seed=seed).action for seed in range(40)}
    assert actions == {0, 1, 2, 3, 5, 6, 7, 8}


def test_single_legal_move_stops_at_once() -> None:
    history = [0, 4, 8, 1, 7, 6, 2, 5]  # one empty cell left
    result = search(TTT, history, MCTSConfig(1000), seed=0)
    assert result.action == 3
    assert result.simulations == 2


@pytest.mark.parametrize(
    ("env_id", "history", "winning"),
    [
        (TTT, [0, 3, 1, 4], 2),  # X: 0, 1; O: 3, 4; X to move completes the top row
        (TTT, [4, 0, 6, 1], 2),  # X: 4, 6; O: 0, 1; X wins on the diagonal (O threatens 2)
        (C4, [0, 0, 1, 1, 2, 2], 3),  # x completes the bottom row
    ],
)
def test_solve_takes_a_forced_win(env_id: str, history: list[int], winning: int) -> None:
    for seed in range(5):
        result = search(env_id, history, MCTSConfig(1000, solve=True), seed=seed)
        assert result.action == winning
        assert result.proven[winning] == 1.0
        assert result.simulations < 1000  # a proven root stops the search


@pytest.mark.parametrize(
    ("env_id", "history", "block"),
    [
        (TTT, [0, 4, 1], 2),  # O must take 2 or X completes the top row
        (TTT, [4, 0, 8, 2], 1),  # X must take 1 (O: 0, 2)
        (C4, [0, 6, 1, 6, 2], 3),  # o must block the bottom row at 3
        (C4, [3, 0, 3, 0, 3], 3),  # o must cap the column
    ],
)
def test_solve_blocks_an_immediate_loss(env_id: str, history: list[int], block: int) -> None:
    for seed in range(5):
        result = search(env_id, history, MCTSConfig(1000, solve=True), seed=seed)
        assert result.action == block
        other = [a for a in result.proven if a != block]
        assert other and all(result.proven[a] == -1.0 for a in other)
        player = MCTSPlayer(env_id, simulations=1000, seed=seed, solve=True)
        state = pyspiel.load_game(env_id.removesuffix("-v0")).new_initial_state()
        for action in history:
            state.apply_action(action)
        assert player.choose(GameState(env_id, state), len(history) % 2) == block


def test_solve_proves_a_double_threat() -> None:
    # X: 0, 8; O: 4, 2. X must stop the diagonal 2-4-6, and taking 6 threatens both 3 and 7
    result = search(TTT, [0, 4, 8, 2], MCTSConfig(20_000, solve=True), seed=0)
    assert result.action == 6
    assert result.proven[6] == 1.0
    assert result.simulations < 20_000


def test_batch_search_equals_one_by_one() -> None:
    rng = np.random.default_rng(0)
    for env_id, config in [(TTT, MCTSConfig(300, solve=True)), (C4, MCTSConfig(400, 1.4, 2))]:
        game = pyspiel.load_game(env_id.removesuffix("-v0"))
        histories = []
        while len(histories) < 12:
            state = game.new_initial_state()
            for _ in range(int(rng.integers(0, 8))):
                if state.is_terminal():
                    break
                legal = state.legal_actions()
                state.apply_action(legal[int(rng.integers(len(legal)))])
            if not state.is_terminal():
                histories.append(state.history())
        seeds = rng.integers(0, 2**32, size=len(histories))
        expected = [
            search(env_id, history, config, int(seed)).action
            for history, seed in zip(histories, seeds, strict=True)
        ]
        assert batch_search(env_id, histories, seeds, config).tolist() == expected
        states = np.stack([state_from_history(env_id, h) for h in histories])
        assert batch_search(env_id, states, seeds, config).tolist() == expected


def test_play_batch_equals_arena_matches() -> None:
    first, second = MCTSConfig(60), MCTSConfig(20, uct_c=1.0, solve=True)
    seeds = [(1, 2), (3, 4), (5, 6)]
    for env_id in (TTT, C4):
        result = play_batch(env_id, first, second, seeds)
        assert result.returns.shape == (3, 2)
        for game, (seed0, seed1) in enumerate(seeds):
            players = [
                MCTSPlayer(env_id, simulations=60, seed=seed0),
                MCTSPlayer(env_id, simulations=20, uct_c=1.0, solve=True, seed=seed1),
            ]
            record = play_match_sync(env_id, players, seed=0)
            assert result.histories[game] == record.history
            assert tuple(result.returns[game]) == record.returns
        assert result.simulations > 0


def test_visit_counts_agree_with_openspiel() -> None:
    # same algorithm: average root visit counts over seeds match OpenSpiel's C++ MCTSBot
    game = pyspiel.load_game("tic_tac_toe")
    history = [0, 4, 1]
    state = game.new_initial_state()
    for action in history:
        state.apply_action(action)
    ours = np.zeros(9)
    theirs = np.zeros(9)
    for seed in range(20):
        bot = pyspiel.MCTSBot(
            game, pyspiel.RandomRolloutEvaluator(1, seed), 2.0, 1000, 100, False, seed, False
        )
        for child in bot.mcts_search(state).children:
            theirs[child.action] += child.explore_count
        for action, visits in search(TTT, history, MCTSConfig(1000), seed).visits.items():
            ours[action] += visits
    assert np.abs(ours / 20 - theirs / 20).max() < 40  # about 600 visits to the block at 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"simulations": 0}, "simulations must be an integer >= 1, got 0"),
        ({"simulations": 2.5}, "simulations must be an integer >= 1"),
        ({"uct_c": 0.0}, "uct_c must be a finite number > 0, got 0.0"),
        ({"uct_c": -1}, "uct_c must be a finite number > 0"),
        ({"uct_c": float("nan")}, "uct_c must be a finite number > 0"),
        ({"rollouts": 0}, "rollouts must be an integer >= 1, got 0"),
    ],
)
def test_bad_parameters(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MCTSPlayer(TTT, **kwargs)  # type: ignore[arg-type]


def test_errors_and_names() -> None:
    with pytest.raises(ValueError, match="plays tic_tac_toe-v0, connect_four-v0, not kuhn"):
        MCTSPlayer("kuhn_poker-v0")
    with pytest.raises(ValueError, match="the game is over"):
        search(TTT, [0, 3, 1, 4, 2])
    with pytest.raises(ValueError, match="seeds are integers in"):
        search(TTT, [], seed=2**32)
    with pytest.raises(ValueError, match="2 positions but 1 seeds"):
        batch_search(TTT, [[], [4]], [0])
    player = MCTSPlayer(TTT, simulations=10, seed=0)
    assert player.name == "mcts-10"
    state = pyspiel.load_game("tic_tac_toe").new_initial_state()
    with pytest.raises(ValueError, match="seat 1 is not to move"):
        player.choose(GameState(TTT, state), 1)
    built = opponents.make("mcts:simulations=50,seed=3,solve=true", C4)
    assert isinstance(built, MCTSPlayer)
    assert built.name == "mcts:simulations=50,seed=3,solve=true"
    assert built.config == MCTSConfig(50, solve=True)


def test_reused_tree_keeps_searches_independent() -> None:
    # each thread reuses its node arrays: a search must not depend on the searches before it
    # (a bigger one, which grew them, or a solving one, which left proofs), nor on the thread
    first = search(C4, [3, 3], MCTSConfig(300), seed=9)
    search(TTT, [0, 4, 8, 2], MCTSConfig(20_000, solve=True), seed=0)
    search(C4, [], MCTSConfig(5_000, rollouts=2), seed=3)
    assert search(C4, [3, 3], MCTSConfig(300), seed=9) == first
    in_thread: list[object] = []
    worker = threading.Thread(
        target=lambda: in_thread.append(search(C4, [3, 3], MCTSConfig(300), seed=9))
    )
    worker.start()
    worker.join()
    assert in_thread == [first]


def test_simulations_fit_the_int32_visit_counts() -> None:
    assert MCTSConfig(2**31 - 1).simulations == 2**31 - 1
    with pytest.raises(ValueError, match="at most 2147483647"):
        MCTSConfig(2**31)
