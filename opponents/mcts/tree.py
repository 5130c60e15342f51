"""The compiled UCT search over node arrays reused between searches (see :mod:`opponents.mcts`).

:func:`reserved_tree` hands out this thread's node arrays; :func:`search_tree` runs one search
from a kernel state and picks OpenSpiel's ``BestChild``; :func:`_simulate` holds the
simulation loop (selection with expansion, evaluation, backup; its helpers are compiled
inline);
:func:`search_batch` runs many searches in one compiled call. Games are dispatched by
:mod:`opponents.mcts.games`.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from opponents.kernels import rng
from opponents.kernels.jit import jit, jit_inline
from opponents.mcts.games import (
    MAX_ACTIONS,
    MAX_DEPTH,
    STATE_SIZE,
    apply,
    is_terminal,
    legal,
    num_actions,
    return0,
    rollout,
    to_move,
)

IntArray = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float64]

#: Columns of the float node array: the two UCT terms (see the module docstring of
#: :mod:`opponents.mcts`) and the total value for the player who chose the node.
SCORE, EXPLORE, TOTAL = 0, 1, 2
#: Columns of the int32 node array: visits, the first child, the number of children (0 until
#: expanded), the action leading to the node, and its proof (the proven return of player 0, or
#: ``UNPROVEN``).
VISITS, FIRST, COUNT, ACTION, PROOF = 0, 1, 2, 3, 4
FLOAT_COLUMNS, INT_COLUMNS = 3, 5
UNPROVEN = 2
#: The most nodes a thread's reusable tree holds; a larger search grows its own copy.
MAX_RESERVED_NODES = 1 << 20
#: sqrt(ln n) and 1 / sqrt(n) for visit counts n < _TABLE_SIZE (compiled in as constants).
_TABLE_SIZE = 4096
_COUNTS = np.maximum(np.arange(_TABLE_SIZE, dtype=np.float64), 1.0)  # entry 0 is unused
_SQRT_LOG = np.sqrt(np.log(_COUNTS))
_INV_SQRT = 1.0 / np.sqrt(_COUNTS)
#: Columns of the root statistics :func:`search_tree` writes, one row per action id.
STAT_VISITS, STAT_TOTAL, STAT_SOLVED, STAT_OUTCOME = 0, 1, 2, 3


class _Reserved(threading.local):
    """A thread's node arrays and root statistics, kept from one search to the next.

    Allocating the arrays anew for every search cost more than a small search itself (and,
    past a few thousand simulations, fresh pages from the kernel on every call); numba code
    holds the GIL, so one set per thread is never used by two searches at once.
    """

    def __init__(self) -> None:
        self.floats = np.empty((0, FLOAT_COLUMNS), dtype=np.float64)
        self.ints = np.empty((0, INT_COLUMNS), dtype=np.int32)
        self.stats = np.empty((MAX_ACTIONS, 4), dtype=np.float64)


_RESERVED = _Reserved()


def reserved_tree(simulations: int) -> tuple[FloatArray, Int32Array, FloatArray]:
    """This thread's node arrays (room for ``simulations``, up to a bound) and stats array.

    A search expands at most one node (at most ``MAX_ACTIONS`` children) a simulation; the
    arrays only grow, and pages the search never touches cost nothing.
    """
    reserved = _RESERVED
    needed = min(1 + simulations * MAX_ACTIONS, MAX_RESERVED_NODES)
    if reserved.ints.shape[0] < needed:
        reserved.floats = np.empty((needed, FLOAT_COLUMNS), dtype=np.float64)
        reserved.ints = np.empty((needed, INT_COLUMNS), dtype=np.int32)
    return reserved.floats, reserved.ints, reserved.stats


@jit
def _grow(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``array`` with twice the rows (the new half uninitialized)."""
    return np.concatenate((array, array))


@jit_inline
def _player(root_mover: int, depth: int) -> int:
    """The player who chose the node at ``depth`` of the path (at the root: its mover).

    Both games alternate, so this is the mover at the node's parent.
    """
    if depth == 0:
        return root_mover
    return (root_mover + depth - 1) & 1


@jit_inline
def _expand(
    game: int, work: IntArray, moves: IntArray, floats: FloatArray, ints: Int32Array, node: int,
    used: int,
) -> int:  # fmt: skip
    """Give ``node`` one child per legal action of ``work`` at ``used``; return how many."""
    count = legal(game, work, moves)
    for index in range(count - 1, 0, -1):  # shuffle, as OpenSpiel does
        other = rng.below(index + 1)
        moves[index], moves[other] = moves[other], moves[index]
    for index in range(count):
        child = used + index
        floats[child, SCORE] = np.inf  # unvisited: selected first
        floats[child, EXPLORE] = 0.0
        floats[child, TOTAL] = 0.0
        ints[child, VISITS] = 0
        ints[child, FIRST] = 0
        ints[child, COUNT] = 0
        ints[child, ACTION] = moves[index]
        ints[child, PROOF] = UNPROVEN
    ints[node, FIRST] = used
    ints[node, COUNT] = count
    return count


@jit_inline
def _select(floats: FloatArray, ints: Int32Array, node: int, uct_c: float) -> int:
    """The child of ``node`` with the largest UCT value (the first of equals)."""
    parent_visits = ints[node, VISITS]
    if parent_visits < _TABLE_SIZE:
        exploration = uct_c * _SQRT_LOG[parent_visits]
    else:
        exploration = uct_c * math.sqrt(math.log(parent_visits))
    first = ints[node, FIRST]
    best = int(first)
    best_value = -np.inf
    for child in range(first, first + ints[node, COUNT]):
        value = floats[child, SCORE] + exploration * floats[child, EXPLORE]
        if value > best_value:
            best_value = value
            best = child
    return best


@jit_inline
def _prove(ints: Int32Array, node: int, mover: int) -> bool:
    """Mark ``node`` proven if its children prove it (``mover`` moves there); whether they do."""
    first = ints[node, FIRST]
    sign = 1 if mover == 0 else -1
    best = -1
    all_solved = True
    for child in range(first, first + ints[node, COUNT]):
        if ints[child, PROOF] == UNPROVEN:
            all_solved = False
        elif best < 0 or sign * ints[child, PROOF] > sign * ints[best, PROOF]:
            best = child
    if best >= 0 and (all_solved or sign * ints[best, PROOF] == 1):
        ints[node, PROOF] = ints[best, PROOF]
        return True
    return False


@jit_inline
def _backup(
    floats: FloatArray, ints: Int32Array, path: IntArray, depth: int, value0: float,
    proving: bool, root_mover: int,
) -> None:  # fmt: skip
    """Add ``value0`` (player 0's) and a visit to every node of the path, and proofs."""
    for step in range(depth, -1, -1):
        node = path[step]
        chooser = _player(root_mover, step)
        floats[node, TOTAL] += value0 if chooser == 0 else -value0
        ints[node, VISITS] += 1
        if proving and ints[node, COUNT] > 0:
            proving = _prove(ints, node, (root_mover + step) & 1)
        proof = ints[node, PROOF]
        if proof != UNPROVEN:
            floats[node, SCORE] = proof if chooser == 0 else -proof
            floats[node, EXPLORE] = 0.0
        else:
            count = ints[node, VISITS]
            floats[node, SCORE] = floats[node, TOTAL] / count
            if count < _TABLE_SIZE:
                floats[node, EXPLORE] = _INV_SQRT[count]
            else:
                floats[node, EXPLORE] = 1.0 / math.sqrt(count)


@jit
def _simulate(
    game: int,
    root_state: IntArray,
    simulations: int,
    uct_c: float,
    rollouts: int,
    solve: bool,
    floats: FloatArray,
    ints: Int32Array,
    used: int,
) -> tuple[int, int]:
    """Run up to ``simulations`` simulations on the tree held in the node arrays.

    Stops early when the root is proven or has a single child, or when the arrays have no
    room for another expansion (the caller grows them and calls again: growing here would
    cost every simulation reference-count traffic on the reassigned arrays).

    Returns:
        The simulations run and the number of nodes now in use.
    """
    capacity = ints.shape[0]
    action_count = num_actions(game)
    root_mover = to_move(game, root_state)
    path = np.empty(MAX_DEPTH, dtype=np.int64)
    work = np.empty(STATE_SIZE, dtype=np.int64)
    moves = np.empty(MAX_ACTIONS, dtype=np.int64)
    for run in range(simulations):
        if used + action_count > capacity:
            return run, used
        work[:] = root_state
        node = 0
        depth = 0
        path[0] = 0
        terminal = False
        # 1. selection (and expansion)
        while ints[node, VISITS] > 0:
            if ints[node, COUNT] == 0:
                used += _expand(game, work, moves, floats, ints, node, used)
            node = _select(floats, ints, node, uct_c)
            apply(game, work, ints[node, ACTION])
            depth += 1
            path[depth] = node
            terminal = is_terminal(game, work)
            if terminal:
                break
        # 2. evaluation
        if terminal:
            value0 = return0(game, work)
            ints[node, PROOF] = np.int32(value0)
            proving = solve
        else:
            value0 = 0.0
            for _ in range(rollouts):
                value0 += rollout(game, work)
            value0 /= rollouts
            proving = False
        # 3. backup
        _backup(floats, ints, path, depth, value0, proving, root_mover)
        if ints[0, PROOF] != UNPROVEN or ints[0, COUNT] == 1:
            return run + 1, used
    return simulations, used


@jit
def _best_child(ints: Int32Array, floats: FloatArray, root_mover: int, stats: FloatArray) -> int:
    """OpenSpiel's ``BestChild`` of the root, as an action id; fills ``stats`` on the way."""
    chosen = -1  # an action id; compared on (proven, visits, total), then the lower id
    chosen_proven = 0.0
    chosen_visits = 0
    chosen_total = 0.0
    first = ints[0, FIRST]
    for child in range(first, first + ints[0, COUNT]):
        proven = 0.0
        proof = ints[child, PROOF]
        if proof != UNPROVEN:
            proven = float(proof if root_mover == 0 else -proof)
        visits = ints[child, VISITS]
        total = floats[child, TOTAL]
        if chosen < 0:
            better = True
        elif proven != chosen_proven:
            better = proven > chosen_proven
        elif visits != chosen_visits:
            better = visits > chosen_visits
        elif total != chosen_total:
            better = total > chosen_total
        else:
            better = ints[child, ACTION] < chosen
        if better:
            chosen = ints[child, ACTION]
            chosen_proven = proven
            chosen_visits = visits
            chosen_total = total
        row = ints[child, ACTION]
        stats[row, STAT_VISITS] = visits
        stats[row, STAT_TOTAL] = total
        stats[row, STAT_SOLVED] = 1.0 if proof != UNPROVEN else 0.0
        stats[row, STAT_OUTCOME] = proven
    return chosen


@jit
def search_tree(
    game: int,
    root_state: IntArray,
    simulations: int,
    uct_c: float,
    rollouts: int,
    solve: bool,
    seed: int,
    floats: FloatArray,
    ints: Int32Array,
    stats: FloatArray,
) -> tuple[int, int]:
    """One search from ``root_state``; see the module docstring of :mod:`opponents.mcts`.

    The tree lives in ``floats`` and ``ints`` (from :func:`reserved_tree`; a search that
    outgrows them continues in grown copies). ``stats`` gets, per action id, a row of root
    statistics: visits, total value for the mover, solved (0/1), proven outcome for the mover.

    Returns:
        The chosen action (-1 when ``root_state`` is terminal) and the simulations run.
    """
    stats[:] = 0.0
    if is_terminal(game, root_state):
        return -1, 0
    np.random.seed(seed)
    root_mover = to_move(game, root_state)
    floats[0, SCORE] = 0.0
    floats[0, EXPLORE] = 0.0
    floats[0, TOTAL] = 0.0
    ints[0, VISITS] = 0
    ints[0, FIRST] = 0
    ints[0, COUNT] = 0
    ints[0, ACTION] = -1
    ints[0, PROOF] = UNPROVEN
    used = 1
    run = 0
    while True:
        done, used = _simulate(
            game, root_state, simulations - run, uct_c, rollouts, solve, floats, ints, used
        )
        run += done
        if run >= simulations or ints[0, PROOF] != UNPROVEN or ints[0, COUNT] == 1:
            break
        floats = _grow(floats)
        ints = _grow(ints)
    if ints[0, COUNT] == 0:  # one simulation: the root was never expanded
        moves = np.empty(MAX_ACTIONS, dtype=np.int64)
        count = legal(game, root_state, moves)
        return moves[np.random.randint(0, count)], run
    return _best_child(ints, floats, root_mover, stats), run


@jit
def search_batch(
    game: int,
    states: IntArray,
    seeds: IntArray,
    simulations: int,
    uct_c: float,
    rollouts: int,
    solve: bool,
    floats: FloatArray,
    ints: Int32Array,
    stats: FloatArray,
) -> tuple[IntArray, IntArray]:
    """:func:`search_tree` for every row of ``states`` with the matching seed: actions, sims run.

    All the searches share the node arrays ``floats`` and ``ints`` and ``stats``.
    """
    count = states.shape[0]
    actions = np.empty(count, dtype=np.int64)
    runs = np.empty(count, dtype=np.int64)
    for index in range(count):
        actions[index], runs[index] = search_tree(
            game, states[index], simulations, uct_c, rollouts, solve, seeds[index], floats, ints,
            stats,
        )  # fmt: skip
    return actions, runs
