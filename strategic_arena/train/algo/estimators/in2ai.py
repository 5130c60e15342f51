"""In2AI's RLOO: each step's reward against the other steps of its environment (§5.3.4).

The MindGames winner (In2AI, NeurIPS 2025) trains with REINFORCE leave-one-out (Ahmadian et
al., 2024) in a setting where no two steps share a prompt, so it pools *all steps of one
environment* (every Codenames step of the batch is one group, every Colonel Blotto step another)
and gives each step its own **step reward** minus the mean reward of the other steps of that
group:

    A_i = r_i - (sum_g r - r_i) / (n_g - 1)

There is no return-to-go and no split by role: the paper groups "by environment type". (The
older :mod:`.rloo` estimator differs on both counts: it baselines returns-to-go, by (game,
role) under role grouping; it stays for runs that want that signal.) A group with one step
or with equal rewards gets 0, as every estimator here does.

Example (two Colonel Blotto episodes, step rewards [0.25, -1, 0.25] and [1, 1, -1]): the six
steps sum to 0.5, so A = r - (0.5 - r) / 5, i.e. [0.2, -1.3, 0.2] and [1.1, 1.1, -1.3].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from strategic_arena.train.algo.estimators.base import (
    Estimator,
    EstimatorConfig,
    FloatArray,
    Trajectory,
    register,
    split_like,
)
from strategic_arena.train.algo.estimators.rloo import rloo


@dataclass
class In2AIConfig(EstimatorConfig):
    """``advantage: {type: in2ai}``."""

    type: Literal["in2ai"] = "in2ai"
    """In2AI's RLOO: each step's reward against the other steps of its environment."""
    role_grouping: bool = False
    """Group by (game, role) instead of by game (In2AI: by game, so off by default)."""


@register
class In2AI(Estimator):
    """:func:`~.rloo.rloo` on the step rewards of every eligible turn, pooled per group."""

    config_class = In2AIConfig
    config: In2AIConfig

    def advantages(self, batch: Sequence[Trajectory]) -> list[FloatArray]:
        """Each turn's reward minus the mean reward of the other turns of its group."""
        rewards = [np.asarray(t.rewards, dtype=np.float64) for t in batch]
        keys = [t.key for t in batch for _ in t.turns]
        return split_like(rloo(np.concatenate(rewards).tolist(), keys), rewards)
