"""The compiled UCT search over preallocated node arrays (see :mod:`opponents.mcts`).

:func:`search_tree` runs one search from a kernel state and picks OpenSpiel's ``BestChild``;
:func:`_simulate` holds the simulation loop (selection with expansion, evaluation, backup);
:func:`search_batch` runs many searches in one compiled call. Games are dispatched by
:mod:`opponents.mcts.games`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from opponents.kernels import rng
from opponents.kernels.jit import jit
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
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

_INITIAL_EXPANSIONS = 4096  # the tree arrays start with room for this many expansions
#: sqrt(ln n) and 1 / sqrt(n) for visit counts n < _TABLE_SIZE (compiled in as constants).
_TABLE_SIZE = 4096
_COUNTS = np.maximum(np.arange(_TABLE_SIZE, dtype=np.float64), 1.0)  # entry 0 is unused
_SQRT_LOG = np.sqrt(np.log(_COUNTS))
_INV_SQRT = 1.0 / np.sqrt(_COUNTS)
#: Columns of the root statistics :func:`search_tree` returns, one row per action id.
STAT_VISITS, STAT_TOTAL, STAT_SOLVED, STAT_OUTCOME = 0, 1, 2, 3


@jit
def _grow(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``array`` with twice the room (the new half uninitialized)."""
    return np.concatenate((array, array))


@jit
def _simulate(
    game: int,
    root_state: IntArray,
    simulations: int,
    uct_c: float,
    rollouts: int,
    solve: bool,
    visits: IntArray,
    total: FloatArray,
    first_child: IntArray,
    num_children: IntArray,
    action: IntArray,
    player: IntArray,
    solved: BoolArray,
    outcome: IntArray,
    score: FloatArray,
    used: int,
) -> tuple[int, int]:
    """Run up to ``simulations`` simulations on the tree held in the node arrays.

    Stops early when the root is proven or has a single child, or when the arrays have no
    room for another expansion (the caller grows them and calls again: growing here would
    cost every simulation reference-count traffic on the reassigned arrays).

    Returns:
        The simulations run and the number of nodes now in use.
    """
    capacity = visits.shape[0]
    action_count = num_actions(game)
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
        # 1. selection (and expansion)
        while visits[node] > 0 and not is_terminal(game, work):
            if num_children[node] == 0:
                count = legal(game, work, moves)
                for index in range(count - 1, 0, -1):  # shuffle, as OpenSpiel does
                    other = rng.below(index + 1)
                    moves[index], moves[other] = moves[other], moves[index]
                mover = to_move(game, work)
                for index in range(count):
                    child = used + index
                    visits[child] = 0
                    total[child] = 0.0
                    first_child[child] = 0
                    num_children[child] = 0
                    action[child] = moves[index]
                    player[child] = mover
                    solved[child] = False
                    outcome[child] = 0
                    score[child, 0] = np.inf  # unvisited: selected first
                    score[child, 1] = 0.0
                first_child[node] = used
                num_children[node] = count
                used += count
            parent_visits = visits[node]
            if parent_visits < _TABLE_SIZE:
                exploration = uct_c * _SQRT_LOG[parent_visits]
            else:
                exploration = uct_c * math.sqrt(math.log(parent_visits))
            best = -1
            best_value = -np.inf
            for child in range(first_child[node], first_child[node] + num_children[node]):
                value = score[child, 0] + exploration * score[child, 1]
                if value > best_value:
                    best_value = value
                    best = child
            apply(game, work, action[best])
            node = best
            depth += 1
            path[depth] = node
        # 2. evaluation
        if is_terminal(game, work):
            value0 = return0(game, work)
            solved[node] = True
            outcome[node] = np.int64(value0)
            proving = solve
        else:
            value0 = 0.0
            for _ in range(rollouts):
                value0 += rollout(game, work)
            value0 /= rollouts
            proving = False
        # 3. backup
        for step in range(depth, -1, -1):
            node = path[step]
            total[node] += value0 if player[node] == 0 else -value0
            visits[node] += 1
            if proving and num_children[node] > 0:
                first = first_child[node]
                sign = 1 if player[first] == 0 else -1  # the player to move at node
                best = -1
                all_solved = True
                for child in range(first, first + num_children[node]):
                    if not solved[child]:
                        all_solved = False
                    elif best < 0 or sign * outcome[child] > sign * outcome[best]:
                        best = child
                if best >= 0 and (all_solved or sign * outcome[best] == 1):
                    solved[node] = True
                    outcome[node] = outcome[best]
                else:
                    proving = False
            if solved[node]:
                score[node, 0] = outcome[node] if player[node] == 0 else -outcome[node]
                score[node, 1] = 0.0
            else:
                count = visits[node]
                score[node, 0] = total[node] / count
                if count < _TABLE_SIZE:
                    score[node, 1] = _INV_SQRT[count]
                else:
                    score[node, 1] = 1.0 / math.sqrt(count)
        if solved[0] or num_children[0] == 1:
            return run + 1, used
    return simulations, used


@jit
def search_tree(
    game: int,
    root_state: IntArray,
    simulations: int,
    uct_c: float,
    rollouts: int,
    solve: bool,
    seed: int,
) -> tuple[int, int, FloatArray]:
    """One search from ``root_state`` (not terminal); see the module docstring.

    Returns:
        The chosen action, the simulations run, and per action id a row of root statistics:
        visits, total value for the mover, solved (0/1), proven outcome for the mover.
    """
    np.random.seed(seed)
    action_count = num_actions(game)
    capacity = 1 + min(simulations, _INITIAL_EXPANSIONS) * action_count
    visits = np.empty(capacity, dtype=np.int64)
    total = np.empty(capacity, dtype=np.float64)
    first_child = np.empty(capacity, dtype=np.int64)
    num_children = np.empty(capacity, dtype=np.int64)
    action = np.empty(capacity, dtype=np.int64)
    player = np.empty(capacity, dtype=np.int64)
    solved = np.empty(capacity, dtype=np.bool_)
    outcome = np.empty(capacity, dtype=np.int64)
    score = np.empty((capacity, 2), dtype=np.float64)
    visits[0] = 0
    total[0] = 0.0
    num_children[0] = 0
    first_child[0] = 0
    action[0] = -1
    player[0] = to_move(game, root_state)
    solved[0] = False
    outcome[0] = 0
    used = 1
    run = 0
    while True:
        done, used = _simulate(
            game,
            root_state,
            simulations - run,
            uct_c,
            rollouts,
            solve,
            visits,
            total,
            first_child,
            num_children,
            action,
            player,
            solved,
            outcome,
            score,
            used,
        )
        run += done
        if run >= simulations or solved[0] or num_children[0] == 1:
            break
        visits = _grow(visits)
        total = _grow(total)
        first_child = _grow(first_child)
        num_children = _grow(num_children)
        action = _grow(action)
        player = _grow(player)
        solved = _grow(solved)
        outcome = _grow(outcome)
        score = _grow(score)

    moves = np.empty(MAX_ACTIONS, dtype=np.int64)
    stats = np.zeros((action_count, 4), dtype=np.float64)
    if num_children[0] == 0:  # one simulation: the root was never expanded
        count = legal(game, root_state, moves)
        return moves[np.random.randint(0, count)], run, stats
    chosen = -1  # an action id; compared on (proven, visits, total), then the lower id
    chosen_proven = 0.0
    chosen_visits = 0
    chosen_total = 0.0
    for child in range(first_child[0], first_child[0] + num_children[0]):
        proven = 0.0
        if solved[child]:
            proven = float(outcome[child] if player[child] == 0 else -outcome[child])
        if chosen < 0:
            better = True
        elif proven != chosen_proven:
            better = proven > chosen_proven
        elif visits[child] != chosen_visits:
            better = visits[child] > chosen_visits
        elif total[child] != chosen_total:
            better = total[child] > chosen_total
        else:
            better = action[child] < chosen
        if better:
            chosen = action[child]
            chosen_proven = proven
            chosen_visits = visits[child]
            chosen_total = total[child]
        row = action[child]
        stats[row, STAT_VISITS] = visits[child]
        stats[row, STAT_TOTAL] = total[child]
        stats[row, STAT_SOLVED] = 1.0 if solved[child] else 0.0
        stats[row, STAT_OUTCOME] = proven
    return chosen, run, stats


@jit
def search_batch(
    game: int,
    states: IntArray,
    seeds: IntArray,
    simulations: int,
    uct_c: float,
    rollouts: int,
    solve: bool,
) -> tuple[IntArray, IntArray]:
    """:func:`search_tree` for every row of ``states`` with the matching seed: actions, sims run."""
    count = states.shape[0]
    actions = np.empty(count, dtype=np.int64)
    runs = np.empty(count, dtype=np.int64)
    for index in range(count):
        actions[index], runs[index], _ = search_tree(
            game, states[index], simulations, uct_c, rollouts, solve, seeds[index]
        )
    return actions, runs
