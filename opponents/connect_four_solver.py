"""A Connect Four position solver: negamax with alpha-beta on bitboards, in numba.

Connect Four is a first-player win (James D. Allen, and independently Victor Allis 1988, "A
Knowledge-Based Approach of Connect-Four", M.Sc. thesis, Vrije Universiteit Amsterdam), but
solving the empty board takes minutes; positions a dozen or more stones into a game solve in
milliseconds to seconds. The solver follows Pascal Pons' tutorial "Solving Connect 4: how to
build a perfect AI" (http://blog.gamesolver.org, code at github.com/PascalPons/connect4),
without the opening book.

Score (Pons' convention), for the player to move: 0 for a draw; a win with the player's k-th
stone scores ``22 - k`` (positive, larger = sooner), a loss to the opponent's k-th stone
``k - 22``. With ``n`` stones on the board, a win at the next move scores ``(43 - n) // 2``.

Bitboards (Pons' layout, part 6): bit ``column * 7 + row``, row 0 at the bottom; row 6 of
every column is an always-empty sentinel, so a shift by 1 (vertical), 7 (horizontal), 6 or 8
(diagonals) never carries a line from one column into the next::

    #  .  .  .  .  .  .  .   <- row 6: sentinel bits, never set
    #  5 12 19 26 33 40 47
    #  4 11 18 25 32 39 46
    #  3 10 17 24 31 38 45
    #  2  9 16 23 30 37 44
    #  1  8 15 22 29 36 43
    #  0  7 14 21 28 35 42   <- row 0: the bottom
    #  column (= OpenSpiel action id) 0 .. 6

A position is ``(position, mask, moves)``: the stones of the player to move, all stones, and
their count. A stone dropped in column ``c`` takes the bit ``(mask + bottom(c)) & column(c)``
(the carry runs up the column to its lowest empty cell); the key ``position + mask``
identifies a position uniquely (Pons).
OpenSpiel's ``connect_four`` uses the same moves: action id = column 0..6 (left to right),
stones fall to the lowest empty row, player 0 ('x') moves first, four in a row wins, a full
board draws; histories are replayed here from the action ids alone.

Algorithm:

1. Replay the history into bitboards, checking every move (column not full, game not over).
2. A position where the player to move can win at once scores ``(43 - n) // 2`` without a
   search (the search below assumes the mover has no immediate win).
3. Exact score by null-window search (Pons part 8, "Iterative deepening & null window"):
   keep an interval ``[lo, hi]`` holding the score; repeatedly pick a pivot ``med`` (the
   middle, pulled towards 0 first, where most scores lie), run negamax with the window
   ``(med, med + 1)``, which only tells whether the score is above ``med``, and shrink the
   interval; stop when ``lo == hi``. The win/draw/loss value ("weak" solving) starts from
   ``[-1, 1]`` and needs at most two such searches.
4. Negamax with alpha-beta (fail-soft), at each node:
   a. the moves that do not lose at once (Pons part 9): if the opponent has two immediate
      winning spots the position is lost; if it has one, that spot must be taken; never play
      right below an opponent's winning spot. No such move: lost at the opponent's next
      stone.
   b. bounds: with 40+ stones and no immediate loss it is a draw; the score lies in
      ``[-((40 - n) // 2), (41 - n) // 2]`` (no one wins at once); narrow the window to that and
      to the bound stored in the transposition table, and return when the window is empty.
   c. move ordering: centre columns first (3, 2, 4, 1, 5, 0, 6), then stably sorted by the
      number of winning spots the move creates for the mover (Pons parts 5 and 10).
   d. search each child with the negated window; a score ``>= beta`` is stored as a lower
      bound and returned (cut-off); otherwise the best score is stored as an upper bound.
5. Transposition table (Pons parts 7, 11 and 12): a preallocated table of a prime number
   (8,388,593, about 2**23) of entries, index ``key % size``, storing the key's low 32 bits
   (by the Chinese remainder theorem index and low bits determine a key below 2**49) and a
   tagged bound (upper or lower). Bounds are exact facts about positions, so the table is kept
   between searches (:func:`clear_transposition_table` empties it).
6. Budget: a node limit and a deadline (the clock is read every 4,096 nodes); running out
   unwinds the search at once, storing nothing for the nodes it cut short (the bounds of
   subtrees finished before stay true), and raises :class:`BudgetExceeded`.
7. Optimal moves: the root's exact score ``s``; a move is optimal if it wins at once with
   score ``s``, or if a null-window search of the child shows the opponent's score there is
   at most ``-s`` (it cannot be lower, ``s`` being the best).

:class:`ConnectFourSolverPlayer` plays a uniformly random optimal move when the solver
finishes within its time budget, and falls back to UCT MCTS (:mod:`opponents.mcts`)
otherwise (early in the game).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numba
import numpy as np
import numpy.typing as npt

from opponents import base
from opponents.base import make_rng
from opponents.kernels.jit import jit as _jit
from strategic_arena.players import GameState

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
# stats array of a search: [nodes, node limit, aborted]
_NODES, _LIMIT, _ABORTED = 0, 1, 2
_NO_LIMIT = 1 << 62


class BudgetExceeded(TimeoutError):
    """The solver ran out of its node or time budget before it finished."""


# ------------------------------------------------------------------------------------------
# compiled search


@_jit
def _clock() -> float:
    """``time.perf_counter()`` from compiled code."""
    with numba.objmode(now="float64"):
        now = time.perf_counter()
    return now


@_jit
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


@_jit
def _popcount(bits: int) -> int:
    """Number of set bits."""
    count = 0
    while bits:
        bits &= bits - 1
        count += 1
    return count


@_jit
def _can_win_next(position: int, mask: int) -> bool:
    """Whether the player to move has a winning move."""
    return (_winning_spots(position, mask) & (mask + BOTTOM_MASK) & BOARD_MASK) != 0


@_jit
def _negamax(
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
    exact score in between; 0 with ``stats[_ABORTED]`` set when the budget ran out.
    """
    stats[_NODES] += 1
    out_of_nodes = stats[_NODES] >= stats[_LIMIT]
    if out_of_nodes or ((stats[_NODES] & _CLOCK_EVERY) == 0 and _clock() > deadline):
        stats[_ABORTED] = 1
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
        score = -_negamax(
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
        if stats[_ABORTED]:
            return 0
        if score >= beta:
            tt_keys[index] = key & _LOW32
            tt_values[index] = score + _LOWER
            return score
        alpha = max(alpha, score)
    tt_keys[index] = key & _LOW32
    tt_values[index] = alpha + _UPPER
    return alpha


# ------------------------------------------------------------------------------------------
# positions


@dataclass(frozen=True)
class Position:
    """A Connect Four position as bitboards (see the module docstring).

    Attributes:
        position: stones of the player to move.
        mask: all stones.
        moves: number of stones (the player to move is ``moves % 2``).
        over: whether the game has ended (the last move won, or the board is full).
    """

    position: int
    mask: int
    moves: int
    over: bool = False

    @property
    def last_move_won(self) -> bool:
        """Whether the previous player has four in a row."""
        return _has_four(self.position ^ self.mask)

    def legal_columns(self) -> list[int]:
        """Columns that are not full (none once the game is over)."""
        if self.over:
            return []
        top = 1 << (HEIGHT - 1)
        return [c for c in range(WIDTH) if not self.mask & (top << (c * H1))]

    def column_bit(self, column: int) -> int:
        """The cell a stone dropped in ``column`` would take."""
        return (self.mask + (1 << (column * H1))) & (COLUMN_MASK << (column * H1))

    def wins(self, column: int) -> bool:
        """Whether dropping in ``column`` gives the mover four in a row."""
        return _has_four(self.position | self.column_bit(column))

    def play(self, column: int) -> Position:
        """The position after the mover drops a stone in ``column`` (legal: see callers)."""
        won = self.wins(column)
        mask = self.mask | self.column_bit(column)
        return Position(self.position ^ self.mask, mask, self.moves + 1, won or mask == BOARD_MASK)


def _has_four(stones: int) -> bool:
    """Whether ``stones`` holds four in a row (Pons' ``alignment``)."""
    for shift in (H1, HEIGHT, HEIGHT + 2, 1):
        pairs = stones & (stones >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def position_from_history(history: Sequence[int]) -> Position:
    """Replay OpenSpiel action ids (columns 0..6) from the empty board.

    Raises:
        ValueError: a column outside 0..6, a full column, or a move after the game ended.
    """
    pos = Position(0, 0, 0)
    for index, action in enumerate(history):
        column = int(action)
        if pos.over:
            raise ValueError(f"move {index} ({column}) comes after the end of the game")
        if not 0 <= column < WIDTH:
            raise ValueError(f"move {index}: column {column} is not in 0..6")
        if column not in pos.legal_columns():
            raise ValueError(f"move {index}: column {column} is full")
        pos = pos.play(column)
    return pos


# ------------------------------------------------------------------------------------------
# search driver


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
        self.stats[_LIMIT] = _NO_LIMIT if max_nodes is None else max_nodes
        self.order_moves = np.zeros((SIZE + 1, WIDTH), dtype=np.int64)
        self.order_scores = np.zeros((SIZE + 1, WIDTH), dtype=np.int64)
        self.tt_keys, self.tt_values = _table()

    @property
    def nodes(self) -> int:
        return int(self.stats[_NODES])

    def negamax(self, pos: Position, alpha: int, beta: int) -> int:
        """Null- or full-window negamax of ``pos`` (mover has no immediate win)."""
        if time.perf_counter() > self.deadline:
            raise BudgetExceeded(f"out of time after {self.nodes} nodes")
        score = int(
            _negamax(
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
        if self.stats[_ABORTED]:
            raise BudgetExceeded(f"out of budget after {self.nodes} nodes")
        return score

    def solve(self, pos: Position, weak: bool = False) -> int:
        """Step 3: the score of ``pos`` by null-window searches (its sign when ``weak``)."""
        if pos.over:
            if not pos.last_move_won:
                return 0
            return -1 if weak else -((SIZE + 2 - pos.moves) // 2)
        if _can_win_next(pos.position, pos.mask):
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
        elif _can_win_next(child.position, child.mask):
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


# ------------------------------------------------------------------------------------------
# the player


class ConnectFourSolverPlayer(base.SolverPlayer):
    """Perfect Connect Four within a time (or node) budget per move, UCT MCTS beyond it.

    Each move solves the position (every optimal move, :func:`c4_optimal_moves`) within
    ``budget_s`` seconds and plays one of them uniformly at random; when the budget runs out
    (typically in the first dozen moves) it plays the move of an :class:`opponents.mcts.
    MCTSPlayer` with ``fallback_simulations`` simulations. ``solved`` and ``fallbacks``
    count the moves of each kind. The budget is a soft cap: the solver's clock is read every
    4,096 nodes, and the fallback search comes on top.
    """

    supported_envs: ClassVar[tuple[str, ...]] = (C4_ENV,)

    def __init__(
        self,
        env_id: str = C4_ENV,
        name: str = "solver",
        seed: int | np.random.Generator | None = None,
        budget_s: float = 1.0,
        fallback_simulations: int = 1000,
        max_nodes: int = 0,
    ) -> None:
        """Build the player.

        Args:
            env_id: ``connect_four-v0``.
            name: the player's name.
            seed: seeds the player's generator (a generator is used as is; ``None``: fresh
                entropy); the fallback's seed is drawn from it.
            budget_s: seconds the solver may spend per move (> 0).
            fallback_simulations: MCTS simulations per move when the solver runs out (>= 1).
            max_nodes: when > 0, a budget of negamax nodes per move instead of seconds: the
                same moves on every machine (``budget_s`` is then not used).
        """
        if budget_s <= 0:
            raise ValueError(f"budget_s must be > 0, not {budget_s}")
        if fallback_simulations < 1:
            raise ValueError(f"fallback_simulations must be >= 1, not {fallback_simulations}")
        if max_nodes < 0:
            raise ValueError(f"max_nodes must be >= 0, not {max_nodes}")
        super().__init__(env_id, name)
        self.rng = make_rng(seed)
        self.budget_s = float(budget_s)
        self.fallback_simulations = int(fallback_simulations)
        self.max_nodes = int(max_nodes)
        self.solved = 0
        self.fallbacks = 0
        self._fallback: base.SolverPlayer | None = None

    def choose(self, state: GameState, seat: int) -> int:
        """A random optimal move for ``seat`` (the player to move), or the fallback's move."""
        history = state.history()
        if seat != len(history) % 2:
            raise ValueError(f"seat {seat} is not to move after {len(history)} moves")
        try:
            if self.max_nodes:
                moves = c4_optimal_moves(history, max_nodes=self.max_nodes)
            else:
                moves = c4_optimal_moves(history, budget_s=self.budget_s)
        except BudgetExceeded:
            self.fallbacks += 1
            return self._fallback_move(state, seat, history)
        if not moves:
            raise ValueError("the game is over: there is no move to choose")
        self.solved += 1
        return moves[int(self.rng.integers(len(moves)))]

    def _fallback_move(self, state: GameState, seat: int, history: Sequence[int]) -> int:
        """The fallback's move: MCTS, or a random legal move while MCTS is unavailable."""
        if self._fallback is None:
            try:
                from opponents.mcts import MCTSPlayer
            except ImportError:
                # TODO: drop this branch once opponents.mcts is always importable.
                columns = position_from_history(history).legal_columns()
                return columns[int(self.rng.integers(len(columns)))]
            self._fallback = MCTSPlayer(
                self.env_id,
                simulations=self.fallback_simulations,
                seed=int(self.rng.integers(2**63)),
                name=f"{self.name}-fallback",
            )
        return int(self._fallback.choose(state, seat))
