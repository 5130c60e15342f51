"""UCT Monte Carlo tree search with random rollouts, in numba, for Tic-Tac-Toe and Connect Four.

The algorithm is OpenSpiel's ``MCTSBot`` with a ``RandomRolloutEvaluator`` (Kocsis &
Szepesvari 2006, "Bandit based Monte-Carlo Planning"), step for step, over the bitboard
kernels of :mod:`opponents.kernels`. One simulation:

1. Selection, from the root: while the state is not terminal and the node has been visited
   before, expand it if it has no children (one child per legal action, in a random order,
   as OpenSpiel shuffles them) and descend to the child with the largest UCT value
   ``mean + uct_c * sqrt(ln(parent visits) / visits)``: an unvisited child is worth
   infinity, a child with a proven outcome is worth that outcome for its mover (no bonus).
2. Evaluation: a terminal state is worth its returns (and its node is marked proven); any
   other leaf is worth the mean returns of ``rollouts`` uniformly random playouts.
3. Backup: every node on the path adds the value for the player who chose it and one visit.
   With ``solve=True`` a terminal result is also backed up as a proof, as OpenSpiel does: a
   node is proven when one child is a proven win for the player to move there, or when all
   its children are proven (it takes the best of them); the backup stops at the first node
   that is not proven.

The search stops after ``simulations`` simulations, or earlier when the root is proven or
has a single legal action. The move played is OpenSpiel's ``BestChild``: the largest proven
outcome for the mover (unproven counts as 0, so a proven win is always taken and a proven
loss avoided), then the most visits, then the largest total value; remaining ties go to the
lowest action id. A search with one simulation never expands the root and plays a uniformly
random legal action.

The tree lives in two arrays indexed by node (the root is node 0; children are contiguous),
one row a node, 44 bytes in all (:mod:`~opponents.mcts.tree` names the columns)::

    float64 row: SCORE, EXPLORE   n's UCT value is SCORE + uct_c * sqrt(ln(parent visits)) *
                                  EXPLORE: (mean, 1 / sqrt(visits)) once visited, (inf, 0)
                                  before, (proven outcome for the chooser, 0) once proven; kept
                                  up to date by the backup so that selection needs no division
                 TOTAL            sum of the values backed up, for the player who chose n
    int32 row:   VISITS           simulations through n
                 FIRST, COUNT     n's first child and number of children (0 until expanded)
                 ACTION           the action that leads to n (-1 for the root)
                 PROOF            the proven return of player 0, or UNPROVEN

The player who chose a node (the player to move at its parent; at the root, the player to move
there) follows from its depth: both games alternate. A simulation adds at most one expansion;
each thread keeps its arrays from one search to the next
(:func:`~opponents.mcts.tree.reserved_tree`, sized for the search, up to 2^20 nodes; a larger
search grows copies of its own), so a search allocates nothing: allocating them for every
search cost more than a small search, and past a few thousand simulations a page fault for
every page touched. Visits are int32: at most 2^31 - 1 simulations. ``sqrt(ln n)`` and
``1 / sqrt(n)`` come from tables for small ``n``.

Randomness and reproducibility: each search seeds numba's generator (``np.random.seed``
inside the compiled code, one generator per thread) with a 32-bit seed, so a search is a
pure function of (position, parameters, seed). :class:`MCTSPlayer` draws one such seed per
move from its own :class:`numpy.random.Generator`, so a player built with ``seed=s`` plays
the same moves in the same games.

Batched play (solver-vs-solver tournaments): :func:`batch_search` runs the searches of many
positions in one compiled call (same results as one-by-one :func:`search` calls with the
same seeds), and :func:`play_batch` plays many MCTS-vs-MCTS games to the end, one batched
call per ply, each game reproducing exactly what :func:`strategic_arena.arena.play_match`
would record for two :class:`MCTSPlayer` with the given seeds::

    from opponents.mcts import MCTSConfig, play_batch

    seeds = [(2 * game, 2 * game + 1) for game in range(200)]  # (seat 0, seat 1) per game
    result = play_batch("connect_four-v0", MCTSConfig(1000), MCTSConfig(100), seeds)
    result.returns.mean(axis=0)  # mean return of each seat; result.histories per game

Modules: :mod:`~opponents.mcts.games` dispatches to the game kernels,
:mod:`~opponents.mcts.tree` is the compiled search over the node arrays,
:mod:`~opponents.mcts.player` the Python API (:func:`search`, :class:`MCTSPlayer`) and
:mod:`~opponents.mcts.batch` the batched search and play.

Numba caching: every kernel is compiled with ``cache=True`` (files under ``__pycache__``).
Numba does not invalidate a cached function when a function it calls changes in *another*
file: after editing a module of :mod:`opponents.kernels` or :mod:`~opponents.mcts.games`,
delete the cache files of this package (``opponents/mcts/__pycache__/*.nbi`` and ``*.nbc``).
The search's helpers, the game dispatch of :mod:`~opponents.mcts.games` and
:func:`opponents.kernels.rng.below` are compiled inline into their callers
(:func:`opponents.kernels.jit.jit_inline`): a call between separately compiled functions
passed every node array as a dozen scalars and cost more than the helper's work.
"""

from __future__ import annotations

from opponents.mcts.batch import BatchResult, batch_search, play_batch
from opponents.mcts.games import GAMES, STATE_SIZE, game_code, state_from_history
from opponents.mcts.player import MCTSConfig, MCTSPlayer, SearchResult, search

__all__ = [
    "GAMES",
    "STATE_SIZE",
    "BatchResult",
    "MCTSConfig",
    "MCTSPlayer",
    "SearchResult",
    "batch_search",
    "game_code",
    "play_batch",
    "search",
    "state_from_history",
]
