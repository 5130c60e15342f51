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

Modules: :mod:`~opponents.connect_four_solver.negamax` (the compiled search and the bitboard
constants), :mod:`~opponents.connect_four_solver.position` (positions from histories),
:mod:`~opponents.connect_four_solver.search` (the budgeted queries) and
:mod:`~opponents.connect_four_solver.player`.
"""

from __future__ import annotations

from opponents.connect_four_solver.player import ConnectFourSolverPlayer
from opponents.connect_four_solver.position import Position, position_from_history
from opponents.connect_four_solver.search import (
    BudgetExceeded,
    SolveResult,
    c4_optimal_moves,
    c4_value,
    clear_transposition_table,
    solve,
    solve_with_stats,
)

__all__ = [
    "BudgetExceeded",
    "ConnectFourSolverPlayer",
    "Position",
    "SolveResult",
    "c4_optimal_moves",
    "c4_value",
    "clear_transposition_table",
    "position_from_history",
    "solve",
    "solve_with_stats",
]
