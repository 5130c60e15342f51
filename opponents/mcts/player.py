"""The search from Python: parameters, one search from a history, and the player.

:func:`search` replays an OpenSpiel history into a kernel state and runs the compiled search
(:func:`opponents.mcts.tree.search_tree`) with a 32-bit seed; :class:`MCTSPlayer` draws one
such seed per move from its own generator (:func:`draw_seed`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from opponents.base import SolverPlayer, make_rng
from opponents.mcts.games import GAMES, game_code, state_from_history, to_move
from opponents.mcts.tree import reserved_tree, search_tree
from strategic_arena.turn import GameState

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

SEED_BOUND = 2**32  # numba's np.random.seed takes a 32-bit seed
MAX_SIMULATIONS = 2**31 - 1  # the tree counts visits in int32


@dataclass(frozen=True)
class MCTSConfig:
    """Search parameters (validated).

    Attributes:
        simulations: simulations per move (at least 1, below 2**31: visits are int32).
        uct_c: the UCT exploration constant (positive; OpenSpiel's examples use 2).
        rollouts: random playouts averaged at each new leaf (at least 1).
        solve: back up proven wins and losses (OpenSpiel's ``solve=True``).
    """

    simulations: int = 1000
    uct_c: float = 2.0
    rollouts: int = 1
    solve: bool = False

    def __post_init__(self) -> None:
        if not _is_int(self.simulations) or not 1 <= self.simulations <= MAX_SIMULATIONS:
            raise ValueError(
                f"simulations must be an integer >= 1, got {self.simulations!r} "
                f"(at most {MAX_SIMULATIONS}: visits are counted in int32)"
            )
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


def search(
    env_id: str, history: Sequence[int], config: MCTSConfig | None = None, seed: int = 0
) -> SearchResult:
    """Search the position after ``history`` (OpenSpiel action ids) with a 32-bit ``seed``.

    Raises:
        ValueError: the game is over after ``history``, or ``history`` is not a legal game.
    """
    config = config if config is not None else MCTSConfig()
    return search_state(env_id, state_from_history(env_id, history), config, seed)


def search_state(env_id: str, state: IntArray, config: MCTSConfig, seed: int) -> SearchResult:
    """:func:`search` from a kernel state.

    Raises:
        ValueError: the game is over in ``state``.
    """
    action, run, stats = _run(env_id, state, config, seed)
    return _result(action, run, stats.tolist())


def _run(
    env_id: str, state: IntArray, config: MCTSConfig, seed: int
) -> tuple[int, int, FloatArray]:
    """The compiled search from ``state`` in this thread's reserved tree.

    Returns:
        The action, the simulations run, and the root statistics (overwritten by the next
        search in this thread).

    Raises:
        ValueError: the game is over in ``state``.
    """
    floats, ints, stats = reserved_tree(config.simulations)
    action, run = search_tree(
        game_code(env_id),
        state,
        config.simulations,
        float(config.uct_c),
        config.rollouts,
        config.solve,
        check_seed(seed),
        floats,
        ints,
        stats,
    )
    if action < 0:
        raise ValueError(f"{env_id}: the game is over")
    return int(action), int(run), stats


def _result(action: int, run: int, stats: list[list[float]]) -> SearchResult:
    """The :class:`SearchResult` of a search from its root statistics.

    ``stats`` has a row per action id in the columns of :mod:`opponents.mcts.tree`
    (``STAT_VISITS``, ``STAT_TOTAL``, ``STAT_SOLVED``, ``STAT_OUTCOME``, in that order).
    """
    visits: dict[int, int] = {}
    values: dict[int, float] = {}
    proven: dict[int, float] = {}
    for index, (count, total, solved, outcome) in enumerate(stats):
        if count:
            visits[index] = int(count)
            values[index] = total / count
        if solved:
            proven[index] = outcome
    return SearchResult(action=action, simulations=run, visits=visits, values=values, proven=proven)


def check_seed(seed: int) -> int:
    """``seed`` if it fits numba's 32-bit seeding, else a :class:`ValueError`."""
    if not _is_int(seed) or not 0 <= seed < SEED_BOUND:
        raise ValueError(f"search seeds are integers in [0, 2**32), got {seed!r}")
    return int(seed)


def draw_seed(rng: np.random.Generator) -> int:
    """The next 32-bit search seed from a player's generator."""
    return int(rng.integers(0, SEED_BOUND))


class MCTSPlayer(SolverPlayer):
    """UCT MCTS with random rollouts as a player of Tic-Tac-Toe or Connect Four.

    Each move rebuilds the kernel state from the OpenSpiel history and runs one search,
    seeded from the player's own generator (see :mod:`opponents.mcts`).
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
        return search(self.env_id, history, self.config, draw_seed(self.rng))

    def choose(self, state: GameState, seat: int) -> int:
        """The search's move for ``seat``, which must be the player to move."""
        position = state_from_history(self.env_id, state.history())
        mover = int(to_move(game_code(self.env_id), position))
        if mover != seat:
            raise ValueError(f"{self.name}: seat {seat} is not to move (player {mover} is)")
        # only the action: the root statistics of a SearchResult would cost more than a
        # small search
        return _run(self.env_id, position, self.config, draw_seed(self.rng))[0]
