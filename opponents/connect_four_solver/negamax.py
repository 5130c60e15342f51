"""The compiled negamax of the Connect Four solver, on bitboards (steps 4 and 5).

See :mod:`opponents.connect_four_solver` for the bitboard layout, the score convention and the
algorithm. The search reads its budget from a ``stats`` array (``stats[NODES]`` counts nodes,
``stats[LIMIT]`` bounds them, ``stats[ABORTED]`` is set when the budget ran out) and keeps
bounds in a transposition table of ``TT_SIZE`` entries owned by the caller.
"""

from __future__ import annotations

import time

import numba
import numpy as np
import numpy.typing as npt

from opponents.kernels.jit import jit

IntArray = npt.NDArray[np.int64]

C4_ENV = "connect_four-v0"
WIDTH = 7
HEIGHT = 6
H1 = HEIGHT + 1  # bits per column, sentinel row included
SIZE = WIDTH * HEIGHT
BOTTOM_MASK = sum(1 << (column * H1) for column in range(WIDTH))
BOARD_MASK = BOTTOM_MASK * ((1 << HEIGHT) - 1)
COLUMN_MASK = (1 << HEIGHT) - 1  # column 0; column c is COLUMN_MASK << (c * H1)
#: Columns in search order: the centre first.
COLUMN_ORDER = np.array([3, 2, 4, 1, 5, 0, 6], dtype=np.int64)
#: Transposition-table entries: a prime just below 2**23.
TT_SIZE = 8_388_593
_LOW32 = 0xFFFFFFFF
# Table values: 0 empty; an upper bound u is stored as u + _UPPER, a lower bound l as
# l + _LOWER (scores lie in [-21, 21], so the two ranges [1, 43] and [65, 107] never meet).
_UPPER = 22
_LOWER = 86
_IS_LOWER = 64  # stored values >= this are lower bounds
_CLOCK_EVERY = 4095  # read the clock when (nodes & _CLOCK_EVERY) == 0
#: Slots of the stats array of a search: nodes visited, node limit, aborted (0/1).
NODES, LIMIT, ABORTED = 0, 1, 2
NO_LIMIT = 1 << 62


@jit
def _clock() -> float:
    """``time.perf_counter()`` from compiled code."""
    with numba.objmode(now="float64"):
        now = time.perf_counter()
    return now


@jit
def _winning_spots(position: int, mask: int) -> int:
    """Empty cells (not necessarily playable) that would complete four for ``position``."""
    # vertical: three stones below
    r = (position << 1) & (position << 2) & (position << 3)
    # horizontal (shift H1), then the two diagonals (shifts HEIGHT and HEIGHT + 2)
    for shift in (H1, HEIGHT, HEIGHT + 2):
        p = (position << shift) & (position << (2 * shift))
        r |= p & (position << (3 * shift))
        r |= p & (position >> shift)
        p = (position >> shift) & (position >> (2 * shift))
        r |= p & (position << shift)
        r |= p & (position >> (3 * shift))
    return r & (BOARD_MASK ^ mask)


@jit
def _popcount(bits: int) -> int:
    """Number of set bits."""
    count = 0
    while bits:
        bits &= bits - 1
        count += 1
    return count


@jit
def can_win_next(position: int, mask: int) -> bool:
    """Whether the player to move has a winning move."""
    return (_winning_spots(position, mask) & (mask + BOTTOM_MASK) & BOARD_MASK) != 0


@jit
def negamax(
    position: int,
    mask: int,
    moves: int,
    alpha: int,
    beta: int,
    tt_keys: npt.NDArray[np.uint32],
    tt_values: npt.NDArray[np.uint8],
    order_moves: IntArray,
    order_scores: IntArray,
    stats: IntArray,
    deadline: float,
) -> int:
    """Fail-soft negamax score of a position whose mover cannot win at once (step 4).

    Returns ``r <= alpha`` when the score is ``<= r``, ``r >= beta`` when it is ``>= r``, the
    exact score in between; 0 with ``stats[ABORTED]`` set when the budget ran out.
    """
    stats[NODES] += 1
    out_of_nodes = stats[NODES] >= stats[LIMIT]
    if out_of_nodes or ((stats[NODES] & _CLOCK_EVERY) == 0 and _clock() > deadline):
        stats[ABORTED] = 1
        return 0
    # 4a. moves that do not lose at once
    possible = (mask + BOTTOM_MASK) & BOARD_MASK
    opponent_wins = _winning_spots(position ^ mask, mask)
    forced = possible & opponent_wins
    if forced:
        if forced & (forced - 1):
            return -((SIZE - moves) // 2)  # two threats: lost at the opponent's next stone
        possible = forced
    possible &= ~(opponent_wins >> 1)
    if possible == 0:
        return -((SIZE - moves) // 2)
    # 4b. bounds
    if moves >= SIZE - 2:
        return 0
    lowest = -((SIZE - 2 - moves) // 2)
    if alpha < lowest:
        alpha = lowest
        if alpha >= beta:
            return alpha
    highest = (SIZE - 1 - moves) // 2
    if beta > highest:
        beta = highest
        if alpha >= beta:
            return beta
    key = position + mask
    index = key % TT_SIZE
    stored = np.int64(tt_values[index])
    if stored != 0 and np.int64(tt_keys[index]) == (key & _LOW32):
        if stored >= _IS_LOWER:  # a lower bound
            if alpha < stored - _LOWER:
                alpha = stored - _LOWER
                if alpha >= beta:
                    return alpha
        elif beta > stored - _UPPER:  # an upper bound
            beta = stored - _UPPER
            if alpha >= beta:
                return beta
    # 4c. move ordering: centre first, then stably by the winning spots created
    count = 0
    for i in range(WIDTH):
        column = COLUMN_ORDER[i]
        move = possible & (COLUMN_MASK << (column * H1))
        if move:
            score = _popcount(_winning_spots(position | move, mask))
            slot = count
            while slot > 0 and order_scores[moves, slot - 1] < score:
                order_moves[moves, slot] = order_moves[moves, slot - 1]
                order_scores[moves, slot] = order_scores[moves, slot - 1]
                slot -= 1
            order_moves[moves, slot] = move
            order_scores[moves, slot] = score
            count += 1
    # 4d. children
    for i in range(count):
        move = order_moves[moves, i]
        score = -negamax(
            position ^ mask,
            mask | move,
            moves + 1,
            -beta,
            -alpha,
            tt_keys,
            tt_values,
            order_moves,
            order_scores,
            stats,
            deadline,
        )
        if stats[ABORTED]:
            return 0
        if score >= beta:
            tt_keys[index] = key & _LOW32
            tt_values[index] = score + _LOWER
            return score
        alpha = max(alpha, score)
    tt_keys[index] = key & _LOW32
    tt_values[index] = alpha + _UPPER
    return alpha
