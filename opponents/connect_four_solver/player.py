"""The Connect Four solver as a player, with UCT MCTS when a position takes too long."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from opponents import base
from opponents.base import make_rng
from opponents.connect_four_solver.negamax import C4_ENV
from opponents.connect_four_solver.search import BudgetExceeded, c4_optimal_moves
from opponents.mcts import MCTSPlayer
from strategic_arena.turn import GameState


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
        self._fallback: MCTSPlayer | None = None

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
            return self._fallback_move(state, seat)
        if not moves:
            raise ValueError("the game is over: there is no move to choose")
        self.solved += 1
        return moves[int(self.rng.integers(len(moves)))]

    def _fallback_move(self, state: GameState, seat: int) -> int:
        """The fallback's move: an MCTS player's, built on first use."""
        if self._fallback is None:
            self._fallback = MCTSPlayer(
                self.env_id,
                simulations=self.fallback_simulations,
                seed=int(self.rng.integers(2**63)),
                name=f"{self.name}-fallback",
            )
        return int(self._fallback.choose(state, seat))
