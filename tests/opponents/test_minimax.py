"""Perfect Tic-Tac-Toe: the solved table against an independent search, and the player."""

from __future__ import annotations

import pyspiel
import pytest

from opponents.minimax import (
    MinimaxPlayer,
    optimal_moves,
    solved_positions,
    ttt_optimal_moves,
    ttt_value,
)
from strategic_arena.arena import play_match_sync
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import GameState

TTT = "tic_tac_toe-v0"
GAME = pyspiel.load_game("tic_tac_toe")


def reference_values() -> dict[str, tuple[int, list[int]]]:
    """Plain minimax over OpenSpiel states: board string -> (value for player 0, history)."""
    table: dict[str, tuple[int, list[int]]] = {}

    def visit(state: pyspiel.State) -> int:
        key = str(state)
        if key in table:
            return table[key][0]
        if state.is_terminal():
            value = int(state.returns()[0])
        else:
            children = []
            for action in state.legal_actions():
                child = state.clone()
                child.apply_action(action)
                children.append(visit(child))
            value = max(children) if state.current_player() == 0 else min(children)
        table[key] = (value, [int(a) for a in state.history()])
        return value

    visit(GAME.new_initial_state())
    return table


REFERENCE = reference_values()


def moves(text: str) -> list[int]:
    """'4 1 8' -> [4, 1, 8]."""
    return [int(cell) for cell in text.split()]


def test_every_reachable_position_and_value_matches_openspiel_search() -> None:
    assert len(REFERENCE) == 5478
    assert len(solved_positions()) == 5478
    for value, history in REFERENCE.values():
        assert ttt_value(history) == value, history


def test_empty_board_is_a_draw_and_every_first_move_keeps_it() -> None:
    assert ttt_value([]) == 0
    assert ttt_optimal_moves([]) == list(range(9))


@pytest.mark.parametrize(
    ("history", "value", "best"),
    [
        # X centre, O edge: X wins (O's edge reply loses)
        ("4 1", 1, [0, 2, 3, 5, 6, 8]),
        # X centre, O corner: a draw, and every move keeps it
        ("4 0", 0, [1, 2, 3, 5, 6, 7, 8]),
        # X corner, O centre, X opposite corner: O must take an edge, not a corner
        ("0 4 8", 0, [1, 3, 5, 7]),
        # O must block 3-4-5 at 5
        ("4 0 3", 0, [5]),
        # O to move faces X's fork (0-1-2 and 0-3-6): lost, whatever O plays
        ("0 4 1 5 3", 1, [2, 6, 7, 8]),
        # X to move must block 0-4-8 at 8, then O forks at 2: lost, whatever X plays
        ("3 4 5 0", -1, [1, 2, 6, 7, 8]),
        # O wins at once with 0-4-8; every other move lets X draw
        ("1 0 2 4 3", -1, [8]),
        # a finished game: X has the top row
        ("0 3 1 4 2", 1, []),
    ],
)
def test_named_positions(history: str, value: int, best: list[int]) -> None:
    assert ttt_value(moves(history)) == value
    assert ttt_optimal_moves(moves(history)) == best
    assert optimal_moves(TTT, moves(history)) == best


def test_optimal_moves_are_exactly_the_value_keeping_moves_everywhere() -> None:
    """For every position: a move is optimal iff the value after it is the position's."""
    for value, history in REFERENCE.values():
        best = ttt_optimal_moves(history)
        state = GAME.new_initial_state()
        for action in history:
            state.apply_action(action)
        if state.is_terminal():
            assert best == []
            continue
        keeping = [a for a in state.legal_actions() if ttt_value([*history, a]) == value]
        assert best == keeping, history
        assert keeping  # a non-terminal position always has one


@pytest.mark.parametrize("history", [[9], [4, 4], [0, 3, 1, 4, 2, 5], [-1]])
def test_illegal_histories_are_rejected(history: list[int]) -> None:
    with pytest.raises(ValueError):
        ttt_value(history)


def test_unknown_game_is_rejected() -> None:
    with pytest.raises(ValueError, match="no perfect solver"):
        optimal_moves("kuhn_poker-v0", [])


@pytest.mark.parametrize("seat", [0, 1])
def test_minimax_never_loses_to_random(seat: int) -> None:
    results = []
    for game in range(200):
        players: list[MinimaxPlayer | RandomPlayer] = [RandomPlayer(seed=1000 + game)]
        players.insert(seat, MinimaxPlayer(TTT, seed=game))
        record = play_match_sync(TTT, players, seed=game)
        assert record.status == "complete"
        results.append(record.returns[seat])
    assert min(results) >= 0.0
    assert results.count(1.0) > 150  # and it mostly wins


def test_minimax_self_play_always_draws() -> None:
    histories = set()
    for game in range(200):
        players = [MinimaxPlayer(TTT, seed=game), MinimaxPlayer(TTT, seed=10_000 + game)]
        record = play_match_sync(TTT, players, seed=game)
        assert record.returns == (0.0, 0.0)
        histories.add(record.history)
    assert len(histories) > 50  # random among optimal moves: varied games


def test_player_plays_a_value_keeping_move_from_every_position() -> None:
    """Exhaustive: wherever the player is to move, its move keeps the position's value."""
    player = MinimaxPlayer(TTT, seed=0)
    for value, history in REFERENCE.values():
        state = GAME.new_initial_state()
        for action in history:
            state.apply_action(action)
        if state.is_terminal():
            continue
        seat = state.current_player()
        action = player.choose(GameState(TTT, state.clone()), seat)
        assert action in state.legal_actions()
        assert ttt_value([*history, action]) == value, history


def test_player_is_seeded_and_checks_its_seat() -> None:
    state = GAME.new_initial_state()
    first = [MinimaxPlayer(TTT, seed=3).choose(GameState(TTT, state), 0) for _ in range(5)]
    again = [MinimaxPlayer(TTT, seed=3).choose(GameState(TTT, state), 0) for _ in range(5)]
    assert first == again
    with pytest.raises(ValueError, match="not to move"):
        MinimaxPlayer(TTT, seed=0).choose(GameState(TTT, state), 1)
    with pytest.raises(ValueError):
        MinimaxPlayer("connect_four-v0")
