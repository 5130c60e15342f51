"""Budgeted solver queries: exact score, value, optimal moves (steps 1-3, 6 and 7)."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from opponents.connect_four_solver.negamax import (
    ABORTED,
    LIMIT,
    NO_LIMIT,
    NODES,
    SIZE,
    TT_SIZE,
    WIDTH,
    can_win_next,
    negamax,
)
from opponents.connect_four_solver.position import Position, position_from_history


class BudgetExceeded(TimeoutError):
    """The solver ran out of its node or time budget before it finished."""


@functools.cache
def _table() -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint8]]:
    """The shared transposition table (keys, values), allocated on first use (about 42 MB)."""
    return np.zeros(TT_SIZE, dtype=np.uint32), np.zeros(TT_SIZE, dtype=np.uint8)


def clear_transposition_table() -> None:
    """Forget every stored bound (searches stay correct either way; this is for timing)."""
    keys, values = _table()
    keys.fill(0)
    values.fill(0)


@dataclass(frozen=True)
class SolveResult:
    """A solved position.

    Attributes:
        score: the score for the player to move (Pons' convention; the value's sign for a
            weak solve).
        nodes: negamax nodes visited.
        seconds: wall-clock time of the search.
    """

    score: int
    nodes: int
    seconds: float


class _Search:
    """One budgeted query: the counters and scratch arrays shared by its negamax calls."""

    def __init__(self, max_nodes: int | None, budget_s: float | None) -> None:
        self.started = time.perf_counter()
        self.deadline = math.inf if budget_s is None else self.started + budget_s
        self.stats = np.zeros(3, dtype=np.int64)
        self.stats[LIMIT] = NO_LIMIT if max_nodes is None else max_nodes
        self.order_moves = np.zeros((SIZE + 1, WIDTH), dtype=np.int64)
        self.order_scores = np.zeros((SIZE + 1, WIDTH), dtype=np.int64)
        self.tt_keys, self.tt_values = _table()

    @property
    def nodes(self) -> int:
        return int(self.stats[NODES])

    def negamax(self, pos: Position, alpha: int, beta: int) -> int:
        """Null- or full-window negamax of ``pos`` (mover has no immediate win)."""
        if time.perf_counter() > self.deadline:
            raise BudgetExceeded(f"out of time after {self.nodes} nodes")
        score = int(
            negamax(
                pos.position,
                pos.mask,
                pos.moves,
                alpha,
                beta,
                self.tt_keys,
                self.tt_values,
                self.order_moves,
                self.order_scores,
                self.stats,
                self.deadline,
            )
        )
        if self.stats[ABORTED]:
            raise BudgetExceeded(f"out of budget after {self.nodes} nodes")
        return score

    def solve(self, pos: Position, weak: bool = False) -> int:
        """Step 3: the score of ``pos`` by null-window searches (its sign when ``weak``)."""
        if pos.over:
            if not pos.last_move_won:
                return 0
            return -1 if weak else -((SIZE + 2 - pos.moves) // 2)
        if can_win_next(pos.position, pos.mask):
            score = (SIZE + 1 - pos.moves) // 2
            return 1 if weak else score
        lo, hi = (-1, 1) if weak else (-((SIZE - pos.moves) // 2), (SIZE + 1 - pos.moves) // 2)
        while lo < hi:
            med = lo + (hi - lo) // 2
            if med <= 0 and _half(lo) < med:
                med = _half(lo)
            elif med >= 0 and _half(hi) > med:
                med = _half(hi)
            result = self.negamax(pos, med, med + 1)
            if result <= med:
                hi = result
            else:
                lo = result
        return max(-1, min(1, lo)) if weak else lo


def _half(score: int) -> int:
    """``score / 2`` rounded towards zero (C's integer division, as in Pons' solver)."""
    return int(score / 2)


def solve_with_stats(
    history: Sequence[int],
    *,
    weak: bool = False,
    max_nodes: int | None = None,
    budget_s: float | None = None,
) -> SolveResult:
    """:func:`solve`, with the node count and time of the search.

    Args:
        history: OpenSpiel action ids (columns) from the start of the game.
        weak: only the value's sign (win/draw/loss), which is much faster.
        max_nodes: the most negamax nodes to visit (``None``: no limit).
        budget_s: the most seconds to spend (``None``: no limit; checked every 4,096 nodes).

    Raises:
        ValueError: an illegal history.
        BudgetExceeded: the budget ran out first.
    """
    search = _Search(max_nodes, budget_s)
    score = search.solve(position_from_history(history), weak)
    return SolveResult(score, search.nodes, time.perf_counter() - search.started)


def solve(
    history: Sequence[int], *, max_nodes: int | None = None, budget_s: float | None = None
) -> int:
    """The exact score of the position after ``history`` for the player to move.

    Positive: the mover wins (``22 - k`` when winning with its k-th stone); 0: draw;
    negative: the mover loses. A finished game scores from the view of the player who would
    move next (a loss, or 0 for a full board).

    Raises:
        ValueError: an illegal history.
        BudgetExceeded: ``max_nodes`` or ``budget_s`` ran out first.
    """
    return solve_with_stats(history, max_nodes=max_nodes, budget_s=budget_s).score


def c4_value(
    history: Sequence[int], *, max_nodes: int | None = None, budget_s: float | None = None
) -> int:
    """+1 / 0 / -1: the mover wins, draws or loses the position after ``history``.

    A weak solve (the search window is [-1, 1]), much faster than :func:`solve`.

    Raises:
        ValueError: an illegal history.
        BudgetExceeded: ``max_nodes`` or ``budget_s`` ran out first.
    """
    return solve_with_stats(history, weak=True, max_nodes=max_nodes, budget_s=budget_s).score


def c4_optimal_moves(
    history: Sequence[int],
    *,
    weak: bool = False,
    max_nodes: int | None = None,
    budget_s: float | None = None,
) -> list[int]:
    """The columns achieving the best score after ``history`` (step 7), ascending.

    Args:
        history: OpenSpiel action ids (columns) from the start of the game.
        weak: keep every move that preserves the win/draw/loss value instead (any winning
            move, not only the fastest win; every move of a lost position).
        max_nodes: the most negamax nodes, over all the searches of this call.
        budget_s: the most seconds, over all the searches of this call.

    Returns:
        Columns 0..6; empty when the game is over.

    Raises:
        ValueError: an illegal history.
        BudgetExceeded: the budget ran out first.
    """
    pos = position_from_history(history)
    columns = pos.legal_columns()
    if not columns:
        return []
    search = _Search(max_nodes, budget_s)
    best = search.solve(pos, weak)
    if weak and best < 0:
        return columns
    win_now = (SIZE + 1 - pos.moves) // 2
    optimal = []
    for column in columns:
        if pos.wins(column):
            if win_now == best or weak:
                optimal.append(column)
            continue
        child = pos.play(column)
        if child.over:  # the board is full: a draw
            score = 0
        elif can_win_next(child.position, child.mask):
            score = -((SIZE + 1 - child.moves) // 2)
        else:
            # the opponent's score is at least -best; optimal when it is at most -best
            opponent = search.negamax(child, -best, -best + 1)
            score = best if opponent <= -best else best - 1
        if weak:
            score = (score > 0) - (score < 0)
        if score == best:
            optimal.append(column)
    return optimal
