"""Connect Four rules as numba bitboard kernels over a small int64 state array.

The rules and ids are OpenSpiel's ``connect_four``: 6 rows by 7 columns, player 0 plays ``x``
and moves first, action id = column 0-6 (left to right); the disc falls to the lowest empty
row. Four in a row (vertical, horizontal or diagonal) wins (+1 / -1); a full board without one
is a draw (0 / 0).

State encoding (``int64[STATE_SIZE]``, built by :func:`new_state`)::

    [0] player 0's discs, a bitboard (layout below)
    [1] player 1's discs
    [2] number of moves made (0..42); the player to move is moves % 2
    [3] the winner: 0, 1, or -1 (nobody yet, or a draw)

Bitboard layout::

    # 6x7 board, bit i = column * 7 + row (row 0 at the bottom; row 6 is a sentinel)
    #
    #  row 6   6 13 20 27 34 41 48   <- sentinel, always empty
    #  row 5   5 12 19 26 33 40 47   <- top row
    #  row 4   4 11 18 25 32 39 46
    #  row 3   3 10 17 24 31 38 45
    #  row 2   2  9 16 23 30 37 44
    #  row 1   1  8 15 22 29 36 43
    #  row 0   0  7 14 21 28 35 42   <- bottom row
    #  column  0  1  2  3  4  5  6

The empty sentinel row keeps shifted lines from wrapping into the next column, so one
``b & (b >> s)`` test per direction (s = 1 vertical, 7 horizontal, 6 and 8 diagonal) finds
four in a row. Dropping a disc in column ``c`` adds ``1 << (7 * c)`` to the occupancy: the
carry runs up the column's filled cells to its lowest empty one. The layout is the one
:mod:`opponents.kernels.tic_tac_toe` uses, so a search runs either game through the same
calls; :func:`state_from_history` replays an OpenSpiel history.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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

# 6x7 board, bit i = column * 7 + row (row 0 at the bottom; row 6 is a sentinel)
ROWS = 6
COLUMNS = 7
HEIGHT = ROWS + 1  # bits per column, the sentinel included
NUM_ACTIONS = COLUMNS
NUM_PLAYERS = 2
MAX_MOVES = ROWS * COLUMNS
TERMINAL = -4  # OpenSpiel's kTerminalPlayerId

_STONES0, _STONES1, _MOVES, _WINNER = STONES0, STONES1, MOVES, WINNER


@_jit
def new_state() -> IntArray:
    """The empty board, player 0 (``x``) to move."""
    state = np.zeros(STATE_SIZE, dtype=np.int64)
    state[_WINNER] = NO_WINNER
    return state


@_jit
def is_terminal(state: IntArray) -> bool:
    """Whether the game is over: four in a row or a full board."""
    return bool(state[_WINNER] != NO_WINNER or state[_MOVES] == MAX_MOVES)


@_jit
def current_player(state: IntArray) -> int:
    """0 or 1 to move, :data:`TERMINAL` when the game is over."""
    if is_terminal(state):
        return TERMINAL
    return int(state[_MOVES] & 1)


@_jit
def is_legal(state: IntArray, action: int) -> bool:
    """Whether dropping a disc in column ``action`` is legal: the game is on, the column open."""
    if is_terminal(state) or action < 0 or action >= COLUMNS:
        return False
    top = np.int64(1) << (action * HEIGHT + ROWS - 1)
    return bool((state[_STONES0] | state[_STONES1]) & top == 0)


@_jit
def legal_moves(state: IntArray, out: IntArray) -> int:
    """Write the open columns (ascending) into ``out``; return how many (0 when terminal).

    ``out`` needs room for :data:`NUM_ACTIONS`.
    """
    if is_terminal(state):
        return 0
    occupied = state[_STONES0] | state[_STONES1]
    count = 0
    for column in range(COLUMNS):
        if (occupied >> (column * HEIGHT + ROWS - 1)) & 1 == 0:
            out[count] = column
            count += 1
    return count


@_jit
def has_four(stones: int) -> bool:
    """Whether the bitboard ``stones`` holds four in a row in any direction."""
    for shift in (1, HEIGHT, HEIGHT - 1, HEIGHT + 1):  # vertical, horizontal, both diagonals
        pairs = stones & (stones >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


@_jit
def apply_move(state: IntArray, action: int) -> None:
    """Drop the mover's disc in column ``action`` (assumed legal) and record a win."""
    player = state[_MOVES] & 1
    occupied = state[_STONES0] | state[_STONES1]
    disc = (occupied + (np.int64(1) << (action * HEIGHT))) & ~occupied
    stones = state[player] | disc
    state[player] = stones
    state[_MOVES] += 1
    if has_four(stones):
        state[_WINNER] = player


@_jit
def random_playout(state: IntArray) -> float:
    """Player 0's return after uniformly random legal moves from ``state`` to the end.

    ``state`` is not changed. The rollout of an MCTS leaf: a column drawn uniformly from all
    seven is redrawn while full, which is a uniform draw among the open ones.
    """
    if state[_WINNER] != NO_WINNER:
        return 1.0 if state[_WINNER] == 0 else -1.0
    stones0 = state[_STONES0]
    stones1 = state[_STONES1]
    occupied = stones0 | stones1
    for moves in range(state[_MOVES], MAX_MOVES):
        column = np.random.randint(0, COLUMNS)
        while (occupied >> (column * HEIGHT + ROWS - 1)) & 1:
            column = np.random.randint(0, COLUMNS)
        disc = (occupied + (np.int64(1) << (column * HEIGHT))) & ~occupied
        occupied |= disc
        if moves & 1 == 0:
            stones0 |= disc
            if has_four(stones0):
                return 1.0
        else:
            stones1 |= disc
            if has_four(stones1):
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
    """The kernel state after OpenSpiel's ``history()`` (a list of columns from the start).

    Raises:
        ValueError: an action is not legal where it is played.
    """
    return checked_replay("connect_four", replay, history)


def to_text(state: IntArray) -> str:
    """The board as OpenSpiel prints it: six rows of ``x``, ``o`` and ``.``, the top row first."""
    lines = []
    for row in reversed(range(ROWS)):
        cells = ""
        for column in range(COLUMNS):
            bit = 1 << (column * HEIGHT + row)
            cells += "x" if state[_STONES0] & bit else "o" if state[_STONES1] & bit else "."
        lines.append(cells + "\n")
    return "".join(lines)
