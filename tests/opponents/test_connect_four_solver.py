"""The Connect Four solver against an independent search over OpenSpiel states, and the player."""

from __future__ import annotations

import sys

import pyspiel
import pytest

import opponents
from opponents.connect_four_solver import (
    BudgetExceeded,
    ConnectFourSolverPlayer,
    c4_optimal_moves,
    c4_value,
    position_from_history,
    solve,
    solve_with_stats,
)
from opponents.minimax import optimal_moves
from strategic_arena.arena import play_match_sync
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import GameState

C4 = "connect_four-v0"
GAME = pyspiel.load_game("connect_four")
_MEMO: dict[str, int] = {}


def state_after(history: list[int]) -> pyspiel.State:
    state = GAME.new_initial_state()
    for action in history:
        state.apply_action(action)
    return state


def reference_score(state: pyspiel.State) -> int:
    """Exact score for the player to move by plain negamax over OpenSpiel states.

    No pruning, only memoization on the board: the score of a finished game is 0 for a draw
    and ``-(44 - n) // 2`` for the player to move after a win with ``n`` stones on the board
    (Pons' convention: the winner scores 22 minus the number of its stones).
    """
    key = str(state)
    if key not in _MEMO:
        if state.is_terminal():
            n = len(state.history())
            score = 0 if state.returns()[0] == 0 else -((44 - n) // 2)
        else:
            score = -min(reference_score(child) for child in children(state).values())
        _MEMO[key] = score
    return _MEMO[key]


def children(state: pyspiel.State) -> dict[int, pyspiel.State]:
    out = {}
    for action in state.legal_actions():
        child = state.clone()
        child.apply_action(action)
        out[action] = child
    return out


def digits(text: str) -> list[int]:
    """'3304' -> [3, 3, 0, 4] (OpenSpiel column ids)."""
    return [int(c) for c in text]


# Positions from careful random play (immediate wins taken, immediate losses avoided) with
# their exact scores for the player to move, as the reference search finds them.
POSITIONS = [
    ("4201040000243365456425555412", 6),  # wins at once (28 stones: 22 - 16)
    ("6264426655531224101133411454", 7),
    ("4046252031651312343411551334", 4),
    ("5513003610630422232561225335", 2),
    ("1131611654502434444063613600", 0),
    ("1201144351551023215443322462", 0),
    ("2012232221454601131333443146", -2),
    ("1464251524405561544230121620", -3),
    ("4026264661222444532401000113", -6),
    ("004642561060610122065565524444", -2),  # 30 stones
    ("10640165666233201000365421", 8),  # 26 stones
    ("30023065335506055506664233", -3),
]


@pytest.mark.parametrize(("moves", "score"), POSITIONS)
def test_scores_agree_with_an_independent_search(moves: str, score: int) -> None:
    history = digits(moves)
    assert reference_score(state_after(history)) == score
    assert solve(history) == score
    assert c4_value(history) == (score > 0) - (score < 0)


@pytest.mark.parametrize("moves", [m for m, _ in POSITIONS[:9]])
def test_optimal_moves_are_exactly_the_best_scoring_moves(moves: str) -> None:
    history = digits(moves)
    # the score of each move for the mover: minus the opponent's score after it
    scores = {a: -reference_score(c) for a, c in children(state_after(history)).items()}
    best = max(scores.values())
    assert c4_optimal_moves(history) == sorted(a for a, s in scores.items() if s == best)
    sign = (best > 0) - (best < 0)
    keeping = [a for a, s in scores.items() if (s > 0) - (s < 0) == sign]
    assert c4_optimal_moves(history, weak=True) == sorted(keeping)
    assert optimal_moves(C4, history) == c4_optimal_moves(history)


# Scores published with Pascal Pons' test sets (his notation: columns 1..7), as quoted by the
# tests of public solvers: end-game, mid-game and early positions.
PUBLISHED = [
    ("2252576253462244111563365343671351441677", 1),
    ("225257625346224411156336534367135144167", -1),
    ("2252576253462244111563365343671351441", -1),
    ("253733227554", -9),
    ("13555111322723", -1),
    ("533772466715155", -1),
]


@pytest.mark.parametrize(("moves", "score"), PUBLISHED)
def test_published_scores(moves: str, score: int) -> None:
    assert solve([int(c) - 1 for c in moves]) == score


def test_column_ids_and_rows_match_openspiel() -> None:
    # x fills the bottom row from column 0: four in a row ends the game, as in OpenSpiel
    history = [0, 0, 1, 1, 2, 2]
    assert c4_optimal_moves(history) == [3]
    assert solve(history) == (43 - 6) // 2
    state = state_after([*history, 3])
    assert state.is_terminal() and state.returns()[0] == 1.0
    assert position_from_history([*history, 3]).over
    assert solve([*history, 3]) == -18 and c4_value([*history, 3]) == -1
    assert c4_optimal_moves([*history, 3]) == []
    # a full column is illegal, in OpenSpiel as here
    full = [3] * 6
    assert 3 not in state_after(full).legal_actions()
    with pytest.raises(ValueError, match="full"):
        solve([*full, 3])
    with pytest.raises(ValueError, match="after the end"):
        solve([*history, 3, 4])
    with pytest.raises(ValueError, match=r"not in 0\.\.6"):
        solve([7])


def test_full_board_draw() -> None:
    history = digits("555054466351352123041430222100021613443666")  # a random game, drawn
    state = state_after(history)
    assert state.is_terminal() and state.returns()[0] == 0.0
    assert position_from_history(history).over
    assert solve(history) == 0 and c4_value(history) == 0
    assert c4_optimal_moves(history) == []
    # one move earlier: the last empty cell, a forced draw
    assert solve(history[:-1]) == 0 and c4_optimal_moves(history[:-1]) == [history[-1]]


def test_budgets() -> None:
    history = digits("6553660123")  # 10 stones, millions of nodes
    with pytest.raises(BudgetExceeded):
        solve(history, max_nodes=1000)
    with pytest.raises(BudgetExceeded):
        c4_optimal_moves(history, budget_s=1e-4)
    with pytest.raises(BudgetExceeded):
        optimal_moves(C4, history, max_nodes=1000)
    # an aborted search stores nothing wrong: the exact score is still found afterwards
    late = digits(POSITIONS[7][0])
    with pytest.raises(BudgetExceeded):
        solve(late, max_nodes=5)
    result = solve_with_stats(late)
    assert result.score == POSITIONS[7][1]
    assert result.nodes > 0


@pytest.mark.parametrize("seat", [0, 1])
def test_player_never_loses_to_random(seat: int) -> None:
    for game in range(30):
        solver = ConnectFourSolverPlayer(C4, seed=game, budget_s=0.05, fallback_simulations=200)
        players: list[ConnectFourSolverPlayer | RandomPlayer] = [RandomPlayer(seed=500 + game)]
        players.insert(seat, solver)
        record = play_match_sync(C4, players, seed=game)
        assert record.status == "complete"
        assert record.returns[seat] == 1.0, record.history
        assert solver.solved > 0


def test_player_plays_an_optimal_move_when_it_solves() -> None:
    history = digits(POSITIONS[1][0])
    state = state_after(history)
    player = opponents.make("solver:seed=0,budget_s=5.0", C4)
    assert isinstance(player, ConnectFourSolverPlayer)
    picks = {player.choose(GameState(C4, state.clone()), len(history) % 2) for _ in range(20)}
    assert picks <= set(c4_optimal_moves(history))
    assert player.solved == 20 and player.fallbacks == 0
    with pytest.raises(ValueError, match="not to move"):
        player.choose(GameState(C4, state.clone()), 1 - len(history) % 2)


def test_player_falls_back_when_the_budget_is_tiny() -> None:
    state = GAME.new_initial_state()
    player = ConnectFourSolverPlayer(C4, seed=1, budget_s=1e-6, fallback_simulations=50)
    for _ in range(3):
        assert player.choose(GameState(C4, state.clone()), 0) in range(7)
    assert player.fallbacks == 3 and player.solved == 0


def test_a_node_budget_makes_the_player_machine_independent() -> None:
    state = state_after([3, 3])
    moves = []
    for _ in range(2):
        player = opponents.make("solver:seed=4,max_nodes=20000,fallback_simulations=30", C4)
        assert isinstance(player, ConnectFourSolverPlayer)
        moves.append([player.choose(GameState(C4, state.clone()), 0) for _ in range(3)])
        assert player.fallbacks == 3  # 20,000 nodes cannot solve the opening
    assert moves[0] == moves[1]
    solving = opponents.make("solver:seed=0,max_nodes=50000000", C4)
    assert isinstance(solving, ConnectFourSolverPlayer)
    history = digits(POSITIONS[1][0])
    pick = solving.choose(GameState(C4, state_after(history)), len(history) % 2)
    assert pick in c4_optimal_moves(history)


def test_player_falls_back_to_random_without_mcts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opponents.mcts", None)  # import raises ImportError
    state = state_after([3, 3])
    player = ConnectFourSolverPlayer(C4, seed=2, budget_s=1e-6)
    assert player.choose(GameState(C4, state), 0) in range(7)
    assert player.fallbacks == 1


def test_player_checks_its_arguments() -> None:
    with pytest.raises(ValueError):
        ConnectFourSolverPlayer("tic_tac_toe-v0")
    with pytest.raises(ValueError):
        ConnectFourSolverPlayer(C4, budget_s=0)
    with pytest.raises(ValueError):
        ConnectFourSolverPlayer(C4, fallback_simulations=0)
    with pytest.raises(ValueError):
        ConnectFourSolverPlayer(C4, max_nodes=-1)


def test_eight_stone_opening_is_solved_consistently() -> None:
    """An early position (a couple of seconds): its score is the best of its children's."""
    history = digits("40113225")
    score = solve(history)
    assert score == 4
    columns = position_from_history(history).legal_columns()
    child_scores = {a: -solve([*history, a]) for a in columns}
    assert max(child_scores.values()) == score
    assert c4_optimal_moves(history) == sorted(a for a, s in child_scores.items() if s == score)


@pytest.mark.slow
def test_four_stone_opening() -> None:
    """x, o, x in the centre column, o beside it: x wins with its 19th stone (~20 s)."""
    history = digits("3332")
    assert solve(history) == 3
    assert c4_value(history) == 1
    assert c4_optimal_moves(history) == [2, 3]
