"""Tic-Tac-Toe rules as numba kernels over a small int64 state array.

The rules and ids are OpenSpiel's ``tic_tac_toe``: player 0 plays X and moves first, action id
= cell = ``row * 3 + column`` (row 0 at the top). Three in a row wins (+1 / -1); a full board
without a line is a draw (0 / 0).

State encoding (``int64[STATE_SIZE]``, built by :func:`new_state`)::

    [0] player 0's stones (X), a bit mask over the cells below
    [1] player 1's stones (O)
    [2] number of moves made (0..9); the player to move is moves % 2
    [3] the winner: 0, 1, or -1 (nobody yet, or a draw)

Cells and bits (bit i = row * 3 + column = OpenSpiel's action id; row 0 at the top)::

    # 3x3 board
    #   0 | 1 | 2
    #   3 | 4 | 5
    #   6 | 7 | 8

The layout (four int64: two bitboards, the move count and the winner) is the one
:mod:`opponents.kernels.connect_four` uses too, so a search can run either game through the
same calls. Every kernel is a small pure function (``apply_move`` mutates the array it is
given); :func:`state_from_history` replays an OpenSpiel history.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from opponents.kernels import rng
from opponents.kernels.board import (
    MOVES,
    NO_WINNER,
    STATE_SIZE,
    STONES0,
    STONES1,
    WINNER,
    IntArray,
    checked_replay,
)
from opponents.kernels.board import returns as returns  # re-exported: the game's own API
from opponents.kernels.board import winner as winner
from opponents.kernels.jit import jit as _jit

# 3x3 board, bit i = row * 3 + column = OpenSpiel's action id (row 0 at the top)
NUM_ACTIONS = 9
NUM_PLAYERS = 2
MAX_MOVES = 9
TERMINAL = -4  # OpenSpiel's kTerminalPlayerId

_STONES0, _STONES1, _MOVES, _WINNER = STONES0, STONES1, MOVES, WINNER
#: The eight lines as cell bit masks: rows, columns, diagonals.
LINES = np.array(
    [
        0b000_000_111, 0b000_111_000, 0b111_000_000,  # rows 0, 1, 2 (bit 0 is the top left)
        0b001_001_001, 0b010_010_010, 0b100_100_100,  # columns 0, 1, 2
        0b100_010_001, 0b001_010_100,  # the diagonals 0-4-8 and 2-4-6
    ],
    dtype=np.int64,
)  # fmt: skip
_ALL_CELLS = (1 << NUM_ACTIONS) - 1
#: Lookup tables over all 512 cell masks (numba compiles them in as constants):
#: whether the mask holds a line, and the index of its r-th set bit (lowest first).
_HAS_LINE = np.array(
    [any(mask & line == line for line in LINES.tolist()) for mask in range(_ALL_CELLS + 1)],
    dtype=np.bool_,
)
_NTH_CELL = np.zeros((_ALL_CELLS + 1, NUM_ACTIONS), dtype=np.int8)  # 4.6 KB: stays in L1
for _mask in range(_ALL_CELLS + 1):
    _cells = [cell for cell in range(NUM_ACTIONS) if _mask >> cell & 1]
    _NTH_CELL[_mask, : len(_cells)] = _cells
del _mask, _cells


@_jit
def new_state() -> IntArray:
    """The empty board, X to move."""
    state = np.zeros(STATE_SIZE, dtype=np.int64)
    state[_WINNER] = NO_WINNER
    return state


@_jit
def is_terminal(state: IntArray) -> bool:
    """Whether the game is over: a line is complete or the board is full."""
    return bool(state[_WINNER] != NO_WINNER or state[_MOVES] == MAX_MOVES)


@_jit
def current_player(state: IntArray) -> int:
    """0 or 1 to move, :data:`TERMINAL` when the game is over."""
    if is_terminal(state):
        return TERMINAL
    return int(state[_MOVES] & 1)


@_jit
def is_legal(state: IntArray, action: int) -> bool:
    """Whether ``action`` (a cell) is a legal move: the game is on and the cell is empty."""
    if is_terminal(state) or action < 0 or action >= NUM_ACTIONS:
        return False
    return bool(((state[_STONES0] | state[_STONES1]) >> action) & 1 == 0)


@_jit
def legal_moves(state: IntArray, out: IntArray) -> int:
    """Write the empty cells (ascending) into ``out``; return how many (0 when terminal).

    ``out`` needs room for :data:`NUM_ACTIONS`.
    """
    if is_terminal(state):
        return 0
    occupied = state[_STONES0] | state[_STONES1]
    count = 0
    for cell in range(NUM_ACTIONS):
        if (occupied >> cell) & 1 == 0:
            out[count] = cell
            count += 1
    return count


@_jit
def has_line(stones: int) -> bool:
    """Whether the bit mask ``stones`` holds three in a row."""
    return bool(_HAS_LINE[stones])


@_jit
def apply_move(state: IntArray, action: int) -> None:
    """Place the mover's mark on cell ``action`` (assumed legal) and record a win."""
    player = state[_MOVES] & 1
    stones = state[player] | (np.int64(1) << action)
    state[player] = stones
    state[_MOVES] += 1
    if has_line(stones):
        state[_WINNER] = player


@_jit
def random_playout(state: IntArray) -> float:
    """Player 0's return after uniformly random legal moves from ``state`` to the end.

    ``state`` is not changed. The rollout of an MCTS leaf: each move takes the ``r``-th empty
    cell for ``r`` uniform in ``0 .. empty cells - 1``.
    """
    if state[_WINNER] != NO_WINNER:
        return 1.0 if state[_WINNER] == 0 else -1.0
    stones0 = state[_STONES0]
    stones1 = state[_STONES1]
    for moves in range(state[_MOVES], MAX_MOVES):
        empty = ~(stones0 | stones1) & _ALL_CELLS
        cell = np.int64(1) << _NTH_CELL[empty, rng.below(MAX_MOVES - moves)]
        if moves & 1 == 0:
            stones0 |= cell
            if _HAS_LINE[stones0]:
                return 1.0
        else:
            stones1 |= cell
            if _HAS_LINE[stones1]:
                return -1.0
    return 0.0


@_jit
def replay(actions: IntArray) -> tuple[IntArray, int]:
    """The state after ``actions`` from the start, and the index of the first illegal one (-1).

    Replay stops at an illegal action; the state is the one before it.
    """
    state = new_state()
    for index in range(actions.shape[0]):
        if not is_legal(state, actions[index]):
            return state, index
        apply_move(state, actions[index])
    return state, -1


def state_from_history(history: Sequence[int]) -> IntArray:
    """The kernel state after OpenSpiel's ``history()`` (a list of cells from the start).

    Raises:
        ValueError: an action is not legal where it is played.
    """
    return checked_replay("tic_tac_toe", replay, history)


def to_text(state: IntArray) -> str:
    """The board as three rows of ``x``, ``o`` and ``.`` (row 0 first), as OpenSpiel prints it."""
    rows = []
    for row in range(3):
        cells = ""
        for col in range(3):
            bit = 1 << (row * 3 + col)
            cells += "x" if state[_STONES0] & bit else "o" if state[_STONES1] & bit else "."
        rows.append(cells)
    return "\n".join(rows)
