"""What the two board kernels share: their state layout and the functions that only read it.

Tic-Tac-Toe and Connect Four states are ``int64[4]``: player 0's stone bits, player 1's stone
bits, moves made, and the winner (0, 1, or ``NO_WINNER`` for none yet or a draw). Only the bit
layout of the board differs, which each game module draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from opponents.kernels.jit import jit

IntArray = npt.NDArray[np.int64]

STATE_SIZE = 4
NO_WINNER = -1
STONES0, STONES1, MOVES, WINNER = 0, 1, 2, 3


@jit
def winner(state: IntArray) -> int:
    """The player with a winning line, or ``NO_WINNER`` (nobody yet, or a draw)."""
    return int(state[WINNER])


@jit
def returns(state: IntArray) -> tuple[float, float]:
    """Returns of player 0 and player 1: +1 / -1 for a win, 0 for a draw or an unfinished game."""
    if state[WINNER] == 0:
        return 1.0, -1.0
    if state[WINNER] == 1:
        return -1.0, 1.0
    return 0.0, 0.0


def checked_replay(
    game: str, replay: Callable[[IntArray], tuple[IntArray, int]], history: Sequence[int]
) -> IntArray:
    """The state after OpenSpiel's ``history`` (action ids from the start), replayed by ``replay``.

    Raises:
        ValueError: an action is not legal where it is played.
    """
    actions = np.asarray(list(history), dtype=np.int64).reshape(-1)
    state, bad = replay(actions)
    if bad >= 0:
        raise ValueError(f"{game}: action {int(actions[bad])} at ply {bad} is not legal")
    return state
