"""Perfect Tic-Tac-Toe: minimax over the whole game, solved once and cached.

Tic-Tac-Toe is small enough to solve outright: from the empty board 5,478 distinct positions
are reachable (the empty board and the terminal ones included; the tests recount them through
OpenSpiel), so every position's value and optimal moves fit in one table that is built the
first time it is needed.

Conventions are OpenSpiel's ``tic_tac_toe``: player 0 plays X and moves first, the action id
is the cell ``row * 3 + column`` with row 0 at the top::

    # 0 | 1 | 2
    # 3 | 4 | 5
    # 6 | 7 | 8

Algorithm (minimax, von Neumann 1928; memoized on the board, so transpositions are solved
once):

1. A position is the board alone (a tuple of nine cells: 0 empty, 1 X, 2 O); the player to
   move follows from the stone counts (X when they are equal).
2. A terminal position -- three in a row for X or O, or a full board -- is worth +1, -1 or 0
   to player 0.
3. Any other position is worth the maximum (X to move) or the minimum (O to move) of its
   children's values; its optimal moves are the empty cells whose child attains it.
4. A depth-first search from the empty board fills a table ``board key -> (value, optimal
   moves)`` with every reachable position (step 3 recursing through the children), once per
   process (:func:`functools.cache`).
5. Queries replay an action history into a board (checking every move is legal) and look the
   board up.

The perfect game is a draw (the empty board's value is 0). :class:`MinimaxPlayer` plays a
uniformly random optimal move from its own seeded generator, so it never loses and still
varies its games. :func:`optimal_moves` grades a move of either perfect-information game: it
sends Connect Four positions to :mod:`opponents.connect_four_solver`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np

from opponents.base import SolverPlayer, make_rng
from strategic_arena.turn import GameState

TTT_ENV = "tic_tac_toe-v0"
C4_ENV = "connect_four-v0"

EMPTY, X, NOUGHT = 0, 1, 2
#: The eight winning lines, as cell triples: rows, columns, diagonals.
LINES: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),
    (0, 4, 8),
    (2, 4, 6),
)

Board = tuple[int, ...]


def _winner(board: Board) -> int:
    """``X`` or ``NOUGHT`` when that mark has three in a row, else ``EMPTY``."""
    for a, b, c in LINES:
        if board[a] != EMPTY and board[a] == board[b] == board[c]:
            return board[a]
    return EMPTY


def _to_move(board: Board) -> int:
    """The mark to move (X when both have as many stones)."""
    return X if board.count(X) == board.count(NOUGHT) else NOUGHT


def _is_terminal(board: Board) -> bool:
    """Whether someone has three in a row or the board is full."""
    return _winner(board) != EMPTY or EMPTY not in board


@functools.cache
def solved_positions() -> Mapping[Board, tuple[int, tuple[int, ...]]]:
    """Every reachable board with its value for player 0 and its optimal moves (ascending).

    Terminal boards have no optimal moves. Computed once per process (5,478 boards).
    """
    table: dict[Board, tuple[int, tuple[int, ...]]] = {}

    def visit(board: Board) -> int:
        known = table.get(board)
        if known is not None:
            return known[0]
        winner = _winner(board)
        if winner != EMPTY or EMPTY not in board:
            value = {X: 1, NOUGHT: -1, EMPTY: 0}[winner]
            table[board] = (value, ())
            return value
        mark = _to_move(board)
        children: dict[int, int] = {}
        for cell in range(9):
            if board[cell] == EMPTY:
                children[cell] = visit((*board[:cell], mark, *board[cell + 1 :]))
        best = max(children.values()) if mark == X else min(children.values())
        table[board] = (best, tuple(cell for cell, v in children.items() if v == best))
        return best

    visit((EMPTY,) * 9)
    return table


def board_from_history(history: Sequence[int]) -> Board:
    """Replay OpenSpiel action ids (cells) from the empty board.

    Raises:
        ValueError: a cell outside 0..8, an occupied cell, or a move after the game ended.
    """
    board = [EMPTY] * 9
    for index, action in enumerate(history):
        cell = int(action)
        if _is_terminal(tuple(board)):
            raise ValueError(f"move {index} ({cell}) comes after the end of the game")
        if not 0 <= cell < 9:
            raise ValueError(f"move {index}: cell {cell} is not in 0..8")
        if board[cell] != EMPTY:
            raise ValueError(f"move {index}: cell {cell} is already taken")
        board[cell] = X if index % 2 == 0 else NOUGHT
    return tuple(board)


def ttt_value(history: Sequence[int]) -> int:
    """The value of the position after ``history`` for player 0 (X) under perfect play.

    +1: X wins, 0: draw, -1: O wins (for a finished game, its result).
    """
    return solved_positions()[board_from_history(history)][0]


def ttt_optimal_moves(history: Sequence[int]) -> list[int]:
    """The moves that keep the value of the position after ``history`` (ascending cells).

    Empty when the game is over.
    """
    return list(solved_positions()[board_from_history(history)][1])


def optimal_moves(
    env_id: str,
    history: Sequence[int],
    *,
    max_nodes: int | None = None,
    budget_s: float | None = None,
) -> list[int]:
    """The optimal moves after ``history`` in a perfect-information game, to grade a move.

    Args:
        env_id: ``tic_tac_toe-v0`` (the solved table; budgets are ignored) or
            ``connect_four-v0`` (the negamax solver of :mod:`opponents.connect_four_solver`,
            imported when needed).
        history: OpenSpiel action ids from the start of the game.
        max_nodes: Connect Four only: the most search nodes to spend.
        budget_s: Connect Four only: the most seconds to spend (a soft cap).

    Returns:
        Every move achieving the best value (Tic-Tac-Toe: win/draw/loss; Connect Four: the
        exact score, i.e. the fastest win or the slowest loss), ascending; empty when the game
        is over.

    Raises:
        ValueError: an unsupported game or an illegal history.
        opponents.connect_four_solver.BudgetExceeded: the Connect Four search ran out of
            budget.
    """
    if env_id in (TTT_ENV, "tic_tac_toe"):
        return ttt_optimal_moves(history)
    if env_id in (C4_ENV, "connect_four"):
        from opponents.connect_four_solver import c4_optimal_moves

        return c4_optimal_moves(history, max_nodes=max_nodes, budget_s=budget_s)
    raise ValueError(f"no perfect solver for {env_id} (have {TTT_ENV}, {C4_ENV})")


class MinimaxPlayer(SolverPlayer):
    """Perfect Tic-Tac-Toe: a uniformly random optimal move, from its own seeded generator."""

    supported_envs: ClassVar[tuple[str, ...]] = (TTT_ENV,)

    def __init__(
        self,
        env_id: str = TTT_ENV,
        name: str = "minimax",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        """Build the player.

        Args:
            env_id: ``tic_tac_toe-v0``.
            name: the player's name.
            seed: seeds the player's generator (a generator is used as is; ``None``: fresh
                entropy).
        """
        super().__init__(env_id, name)
        self.rng = make_rng(seed)

    def choose(self, state: GameState, seat: int) -> int:
        """A random optimal move for ``seat``, which must be the player to move."""
        history = state.history()
        if seat != len(history) % 2:
            raise ValueError(f"seat {seat} is not to move after {len(history)} moves")
        moves = ttt_optimal_moves(history)
        if not moves:
            raise ValueError("the game is over: there is no move to choose")
        return moves[int(self.rng.integers(len(moves)))]
