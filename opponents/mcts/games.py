"""The two games of the search behind one interface: a game code picks the kernel.

Tic-Tac-Toe and Connect Four kernels (:mod:`opponents.kernels`) share one state layout, so the
compiled search takes a game code and these functions dispatch on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from opponents.kernels import board, connect_four, tic_tac_toe
from opponents.kernels.jit import jit_inline

IntArray = npt.NDArray[np.int64]

#: Env ids and the game code the compiled search takes.
GAMES: dict[str, int] = {"tic_tac_toe-v0": 0, "connect_four-v0": 1}
TIC_TAC_TOE, CONNECT_FOUR = 0, 1
#: Both kernels use the same state layout.
STATE_SIZE = board.STATE_SIZE
MAX_ACTIONS = max(tic_tac_toe.NUM_ACTIONS, connect_four.NUM_ACTIONS)
MAX_DEPTH = max(tic_tac_toe.MAX_MOVES, connect_four.MAX_MOVES) + 1


def game_code(env_id: str) -> int:
    """The compiled search's code for ``env_id``.

    Raises:
        ValueError: not a game this search plays.
    """
    try:
        return GAMES[env_id]
    except KeyError:
        raise ValueError(f"MCTS plays {', '.join(GAMES)}, not {env_id}") from None


def state_from_history(env_id: str, history: Sequence[int]) -> IntArray:
    """The kernel state of ``env_id`` after OpenSpiel's action ``history``."""
    if game_code(env_id) == TIC_TAC_TOE:
        return tic_tac_toe.state_from_history(history)
    return connect_four.state_from_history(history)


@jit_inline
def num_actions(game: int) -> int:
    """How many action ids the game has (they run from 0)."""
    return tic_tac_toe.NUM_ACTIONS if game == TIC_TAC_TOE else connect_four.NUM_ACTIONS


@jit_inline
def legal(game: int, state: IntArray, out: IntArray) -> int:
    """The game's ``legal_moves``."""
    if game == TIC_TAC_TOE:
        return tic_tac_toe.legal_moves(state, out)
    return connect_four.legal_moves(state, out)


@jit_inline
def apply(game: int, state: IntArray, action: int) -> None:
    """The game's ``apply_move``."""
    if game == TIC_TAC_TOE:
        tic_tac_toe.apply_move(state, action)
    else:
        connect_four.apply_move(state, action)


@jit_inline
def is_terminal(game: int, state: IntArray) -> bool:
    """The game's ``is_terminal``."""
    if game == TIC_TAC_TOE:
        return tic_tac_toe.is_terminal(state)
    return connect_four.is_terminal(state)


@jit_inline
def return0(game: int, state: IntArray) -> float:
    """Player 0's return (0 before the end)."""
    if game == TIC_TAC_TOE:
        return tic_tac_toe.returns(state)[0]
    return connect_four.returns(state)[0]


@jit_inline
def to_move(game: int, state: IntArray) -> int:
    """The player to move (both games alternate, player 0 first)."""
    if game == TIC_TAC_TOE:
        return tic_tac_toe.current_player(state)
    return connect_four.current_player(state)


@jit_inline
def rollout(game: int, state: IntArray) -> float:
    """Player 0's return at the end of one uniformly random playout from ``state``."""
    if game == TIC_TAC_TOE:
        return tic_tac_toe.random_playout(state)
    return connect_four.random_playout(state)
