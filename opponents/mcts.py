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

The tree lives in preallocated parallel arrays indexed by node (the root is node 0):

    visits[n]        simulations through n                          int64
    total[n]         sum of the values backed up, for player[n]      float64
    first_child[n]   index of n's first child (children are contiguous)   int64
    num_children[n]  0 until n is expanded                           int64
    action[n]        the action that leads to n (-1 for the root)    int64
    player[n]        the player who chose ``action`` (the player to move at n's parent;
                     at the root, the player to move there)          int64
    solved[n]        whether n's outcome is proven                   bool
    outcome[n]       the proven return of player 0                   int64
    score[n, 0:2]    n's UCT value is score[n, 0] + uct_c * sqrt(ln(parent visits)) *
                     score[n, 1]: (mean, 1 / sqrt(visits)) once visited, (inf, 0) before,
                     (proven outcome for player[n], 0) once proven; kept up to date by the
                     backup so that selection needs no division or square root   float64

A simulation adds at most one expansion, so the arrays start with room for a few thousand
expansions and double when full. ``sqrt(ln n)`` and ``1 / sqrt(n)`` come from tables for
small ``n``.

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

Numba caching: every kernel is compiled with ``cache=True`` (files under ``__pycache__``).
Numba does not invalidate a cached function when a function it calls changes in *another*
file: after editing a module of :mod:`opponents.kernels`, delete this module's cache files
(``opponents/__pycache__/mcts.*.nbi`` and ``*.nbc``) too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from opponents.base import SolverPlayer, make_rng
from opponents.kernels import board, connect_four, rng, tic_tac_toe
from opponents.kernels.jit import jit as _jit
from strategic_arena.players import GameState

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Env ids and the game code the compiled search takes.
GAMES: dict[str, int] = {"tic_tac_toe-v0": 0, "connect_four-v0": 1}
_TIC_TAC_TOE, _CONNECT_FOUR = 0, 1
#: Both kernels use the same state layout.
STATE_SIZE = board.STATE_SIZE
_MAX_ACTIONS = max(tic_tac_toe.NUM_ACTIONS, connect_four.NUM_ACTIONS)
_MAX_DEPTH = max(tic_tac_toe.MAX_MOVES, connect_four.MAX_MOVES) + 1
_INITIAL_EXPANSIONS = 4096  # the tree arrays start with room for this many expansions
#: sqrt(ln n) and 1 / sqrt(n) for visit counts n < _TABLE_SIZE (compiled in as constants).
_TABLE_SIZE = 4096
_COUNTS = np.maximum(np.arange(_TABLE_SIZE, dtype=np.float64), 1.0)  # entry 0 is unused
_SQRT_LOG = np.sqrt(np.log(_COUNTS))
_INV_SQRT = 1.0 / np.sqrt(_COUNTS)
_SEED_BOUND = 2**32  # numba's np.random.seed takes a 32-bit seed
# root statistics columns (see _search)
_STAT_VISITS, _STAT_TOTAL, _STAT_SOLVED, _STAT_OUTCOME = 0, 1, 2, 3


# --- game dispatch: the two kernels share one state layout -------------------------------


@_jit
def _num_actions(game: int) -> int:
    """How many action ids the game has (they run from 0)."""
    return tic_tac_toe.NUM_ACTIONS if game == _TIC_TAC_TOE else connect_four.NUM_ACTIONS


@_jit
def _legal(game: int, state: IntArray, out: IntArray) -> int:
    """The game's ``legal_moves``."""
    if game == _TIC_TAC_TOE:
        return tic_tac_toe.legal_moves(state, out)
    return connect_four.legal_moves(state, out)


@_jit
def _apply(game: int, state: IntArray, action: int) -> None:
    """The game's ``apply_move``."""
    if game == _TIC_TAC_TOE:
        tic_tac_toe.apply_move(state, action)
    else:
        connect_four.apply_move(state, action)


@_jit
def _terminal(game: int, state: IntArray) -> bool:
    """The game's ``is_terminal``."""
    if game == _TIC_TAC_TOE:
        return tic_tac_toe.is_terminal(state)
    return connect_four.is_terminal(state)


@_jit
def _return0(game: int, state: IntArray) -> float:
    """Player 0's return (0 before the end)."""
    if game == _TIC_TAC_TOE:
        return tic_tac_toe.returns(state)[0]
    return connect_four.returns(state)[0]


@_jit
def _to_move(game: int, state: IntArray) -> int:
    """The player to move (both games alternate, player 0 first)."""
    if game == _TIC_TAC_TOE:
        return tic_tac_toe.current_player(state)
    return connect_four.current_player(state)


# --- the search ------------------------------------------------------------------------------


@_jit
def _rollout(game: int, state: IntArray) -> float:
    """Player 0's return at the end of one uniformly random playout from ``state``."""
    if game == _TIC_TAC_TOE:
        return tic_tac_toe.random_playout(state)
    return connect_four.random_playout(state)


@_jit
def _grow(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``array`` with twice the room (the new half uninitialized)."""
    return np.concatenate((array, array))


@_jit
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
    num_actions = _num_actions(game)
    path = np.empty(_MAX_DEPTH, dtype=np.int64)
    work = np.empty(STATE_SIZE, dtype=np.int64)
    moves = np.empty(_MAX_ACTIONS, dtype=np.int64)
    for run in range(simulations):
        if used + num_actions > capacity:
            return run, used
        work[:] = root_state
        node = 0
        depth = 0
        path[0] = 0
        # 1. selection (and expansion)
        while visits[node] > 0 and not _terminal(game, work):
            if num_children[node] == 0:
                count = _legal(game, work, moves)
                for index in range(count - 1, 0, -1):  # shuffle, as OpenSpiel does
                    other = rng.below(index + 1)
                    moves[index], moves[other] = moves[other], moves[index]
                mover = _to_move(game, work)
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
            _apply(game, work, action[best])
            node = best
            depth += 1
            path[depth] = node
        # 2. evaluation
        if _terminal(game, work):
            value0 = _return0(game, work)
            solved[node] = True
            outcome[node] = np.int64(value0)
            proving = solve
        else:
            value0 = 0.0
            for _ in range(rollouts):
                value0 += _rollout(game, work)
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


@_jit
def _search(
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
    num_actions = _num_actions(game)
    capacity = 1 + min(simulations, _INITIAL_EXPANSIONS) * num_actions
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
    player[0] = _to_move(game, root_state)
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

    moves = np.empty(_MAX_ACTIONS, dtype=np.int64)
    stats = np.zeros((num_actions, 4), dtype=np.float64)
    if num_children[0] == 0:  # one simulation: the root was never expanded
        count = _legal(game, root_state, moves)
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
        stats[row, _STAT_VISITS] = visits[child]
        stats[row, _STAT_TOTAL] = total[child]
        stats[row, _STAT_SOLVED] = 1.0 if solved[child] else 0.0
        stats[row, _STAT_OUTCOME] = proven
    return chosen, run, stats


@_jit
def _search_batch(
    game: int,
    states: IntArray,
    seeds: IntArray,
    simulations: int,
    uct_c: float,
    rollouts: int,
    solve: bool,
) -> tuple[IntArray, IntArray]:
    """:func:`_search` for every row of ``states`` with the matching seed: actions, sims run."""
    count = states.shape[0]
    actions = np.empty(count, dtype=np.int64)
    runs = np.empty(count, dtype=np.int64)
    for index in range(count):
        actions[index], runs[index], _ = _search(
            game, states[index], simulations, uct_c, rollouts, solve, seeds[index]
        )
    return actions, runs


# --- Python API ----------------------------------------------------------------------------


@dataclass(frozen=True)
class MCTSConfig:
    """Search parameters (validated).

    Attributes:
        simulations: simulations per move (at least 1).
        uct_c: the UCT exploration constant (positive; OpenSpiel's examples use 2).
        rollouts: random playouts averaged at each new leaf (at least 1).
        solve: back up proven wins and losses (OpenSpiel's ``solve=True``).
    """

    simulations: int = 1000
    uct_c: float = 2.0
    rollouts: int = 1
    solve: bool = False

    def __post_init__(self) -> None:
        if not _is_int(self.simulations) or self.simulations < 1:
            raise ValueError(f"simulations must be an integer >= 1, got {self.simulations!r}")
        if (
            isinstance(self.uct_c, bool)
            or not isinstance(self.uct_c, (int, float, np.integer, np.floating))
            or not math.isfinite(self.uct_c)
            or self.uct_c <= 0
        ):
            raise ValueError(f"uct_c must be a finite number > 0, got {self.uct_c!r}")
        if not _is_int(self.rollouts) or self.rollouts < 1:
            raise ValueError(f"rollouts must be an integer >= 1, got {self.rollouts!r}")


def _is_int(value: object) -> bool:
    """An int (numpy's included), not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class SearchResult:
    """One search: the move and the root's statistics.

    Attributes:
        action: the action chosen.
        simulations: simulations run (fewer than asked when the root was proven or has a
            single legal action).
        visits: visits of each root child, by action id.
        values: mean value of each visited root child for the player to move.
        proven: the proven outcome (+1, 0, -1 for the player to move) of each solved child.
    """

    action: int
    simulations: int
    visits: dict[int, int]
    values: dict[int, float]
    proven: dict[int, float]


def game_code(env_id: str) -> int:
    """The compiled search's code for ``env_id``.

    Raises:
        ValueError: not a game this search plays.
    """
    try:
        return GAMES[env_id]
    except KeyError:
        raise ValueError(f"MCTS plays {', '.join(GAMES)}, not {env_id}") from None


def state_from_history(env_id: str, history: Sequence[int]) -> IntArray:
    """The kernel state of ``env_id`` after OpenSpiel's action ``history``."""
    if game_code(env_id) == _TIC_TAC_TOE:
        return tic_tac_toe.state_from_history(history)
    return connect_four.state_from_history(history)


def search(
    env_id: str, history: Sequence[int], config: MCTSConfig | None = None, seed: int = 0
) -> SearchResult:
    """Search the position after ``history`` (OpenSpiel action ids) with a 32-bit ``seed``.

    Raises:
        ValueError: the game is over after ``history``, or ``history`` is not a legal game.
    """
    config = config if config is not None else MCTSConfig()
    return _search_state(env_id, state_from_history(env_id, history), config, seed)


def _search_state(env_id: str, state: IntArray, config: MCTSConfig, seed: int) -> SearchResult:
    """:func:`search` from a kernel state."""
    game = game_code(env_id)
    if _terminal(game, state):
        raise ValueError(f"{env_id}: the game is over")
    action, run, stats = _search(
        game,
        state,
        config.simulations,
        float(config.uct_c),
        config.rollouts,
        config.solve,
        _check_seed(seed),
    )
    rows = list(enumerate(stats.tolist()))
    return SearchResult(
        action=int(action),
        simulations=int(run),
        visits={a: int(row[_STAT_VISITS]) for a, row in rows if row[_STAT_VISITS]},
        values={a: row[_STAT_TOTAL] / row[_STAT_VISITS] for a, row in rows if row[_STAT_VISITS]},
        proven={a: row[_STAT_OUTCOME] for a, row in rows if row[_STAT_SOLVED]},
    )


def _check_seed(seed: int) -> int:
    """``seed`` if it fits numba's 32-bit seeding, else a :class:`ValueError`."""
    if not _is_int(seed) or not 0 <= seed < _SEED_BOUND:
        raise ValueError(f"search seeds are integers in [0, 2**32), got {seed!r}")
    return int(seed)


def batch_search(
    env_id: str,
    positions: Sequence[Sequence[int]] | IntArray,
    seeds: Sequence[int] | IntArray,
    config: MCTSConfig | None = None,
) -> IntArray:
    """The actions of one search per position, all in one compiled call.

    Args:
        env_id: the game.
        positions: OpenSpiel action histories, or kernel states stacked as an int64 array of
            shape ``(N, STATE_SIZE)`` (rows of :func:`state_from_history`); none terminal.
        seeds: one 32-bit seed per position.
        config: search parameters (defaults: :class:`MCTSConfig`).

    Returns:
        ``int64[N]``: the same actions as ``search(env_id, history, config, seed).action``
        position by position.
    """
    config = config if config is not None else MCTSConfig()
    game = game_code(env_id)
    if isinstance(positions, np.ndarray):
        states = np.ascontiguousarray(positions, dtype=np.int64).reshape(-1, STATE_SIZE)
    else:
        states = np.zeros((len(positions), STATE_SIZE), dtype=np.int64)
        for row, history in enumerate(positions):
            states[row] = state_from_history(env_id, history)
    seed_array = np.array([_check_seed(int(seed)) for seed in seeds], dtype=np.int64)
    if seed_array.shape[0] != states.shape[0]:
        raise ValueError(f"{states.shape[0]} positions but {seed_array.shape[0]} seeds")
    for row in range(states.shape[0]):
        if _terminal(game, states[row]):
            raise ValueError(f"position {row} is terminal")
    actions, _ = _search_batch(
        game,
        states,
        seed_array,
        config.simulations,
        float(config.uct_c),
        config.rollouts,
        config.solve,
    )
    return actions


@dataclass(frozen=True)
class BatchResult:
    """Games played by :func:`play_batch`.

    Attributes:
        returns: ``float64[N, 2]``, the returns of seat 0 and seat 1 in each game.
        histories: each game's action history (OpenSpiel ids).
        simulations: simulations run over all searches.
    """

    returns: FloatArray
    histories: list[tuple[int, ...]]
    simulations: int


def play_batch(
    env_id: str,
    config0: MCTSConfig,
    config1: MCTSConfig,
    seeds: Sequence[tuple[int, int]] | IntArray,
) -> BatchResult:
    """Play one game per seed pair, MCTS(``config0``) in seat 0 against MCTS(``config1``).

    All games move in lockstep (both games alternate, so every game has the same player to
    move at a given ply): one compiled :func:`batch_search` call per ply over the games still
    running. Game ``g`` is the game that ``play_match`` records for
    ``[MCTSPlayer(env_id, seed=seeds[g][0], ...config0), MCTSPlayer(env_id,
    seed=seeds[g][1], ...config1)]``: each seat draws its per-move search seeds from its own
    generator, exactly as :class:`MCTSPlayer` does.
    """
    game = game_code(env_id)
    configs = (config0, config1)
    pairs = [(int(pair[0]), int(pair[1])) for pair in seeds]
    rngs = [(make_rng(first), make_rng(second)) for first, second in pairs]
    count = len(pairs)
    kernel = tic_tac_toe if game == _TIC_TAC_TOE else connect_four
    states = np.zeros((count, STATE_SIZE), dtype=np.int64)
    for row in range(count):
        states[row] = kernel.new_state()
    histories: list[list[int]] = [[] for _ in range(count)]
    active = np.arange(count)
    simulations = 0
    ply = 0
    while active.size:
        seat = ply % 2
        config = configs[seat]
        ply_seeds = np.array([_draw_seed(rngs[g][seat]) for g in active], dtype=np.int64)
        actions, runs = _search_batch(
            game,
            states[active],
            ply_seeds,
            config.simulations,
            float(config.uct_c),
            config.rollouts,
            config.solve,
        )
        simulations += int(runs.sum())
        still = []
        for g, move in zip(active, actions, strict=True):
            _apply(game, states[g], int(move))
            histories[g].append(int(move))
            if not _terminal(game, states[g]):
                still.append(g)
        active = np.array(still, dtype=np.int64)
        ply += 1
    returns = np.array([kernel.returns(states[g]) for g in range(count)], dtype=np.float64)
    return BatchResult(
        returns=returns.reshape(count, 2),
        histories=[tuple(h) for h in histories],
        simulations=simulations,
    )


def _draw_seed(rng: np.random.Generator) -> int:
    """The next 32-bit search seed from a player's generator."""
    return int(rng.integers(0, _SEED_BOUND))


class MCTSPlayer(SolverPlayer):
    """UCT MCTS with random rollouts as a player of Tic-Tac-Toe or Connect Four.

    Each move rebuilds the kernel state from the OpenSpiel history and runs one search,
    seeded from the player's own generator (see the module docstring).
    """

    supported_envs: ClassVar[tuple[str, ...]] = tuple(GAMES)

    def __init__(
        self,
        env_id: str,
        simulations: int = 1000,
        uct_c: float = 2.0,
        rollouts: int = 1,
        seed: int | np.random.Generator | None = None,
        solve: bool = False,
        name: str | None = None,
    ) -> None:
        """Build the player.

        Args:
            env_id: ``tic_tac_toe-v0`` or ``connect_four-v0``.
            simulations: simulations per move (>= 1).
            uct_c: UCT exploration constant (> 0).
            rollouts: random playouts per new leaf (>= 1).
            seed: seeds the player's generator (a generator is used as is; ``None``: fresh
                entropy).
            solve: back up proven wins and losses.
            name: defaults to ``mcts-<simulations>``.
        """
        self.config = MCTSConfig(simulations, uct_c, rollouts, solve)
        super().__init__(env_id, name if name is not None else f"mcts-{simulations}")
        self.rng = make_rng(seed)

    def search(self, history: Sequence[int]) -> SearchResult:
        """Search the position after ``history`` with the player's next seed."""
        return search(self.env_id, history, self.config, _draw_seed(self.rng))

    def choose(self, state: GameState, seat: int) -> int:
        """The search's move for ``seat``, which must be the player to move."""
        position = state_from_history(self.env_id, state.history())
        to_move = int(_to_move(game_code(self.env_id), position))
        if to_move != seat:
            raise ValueError(f"{self.name}: seat {seat} is not to move (player {to_move} is)")
        return _search_state(self.env_id, position, self.config, _draw_seed(self.rng)).action
