"""MT-GRPO as compared in MARSHAL: normalize turn by turn, then sum to go.

Within a group, the rewards at turn index t (0-based, counted per trajectory) of every trajectory
that has a turn t are centred together, r'_t = (r_t - mean_t) / (std_t + eps) (``centering:
mean``: r_t - mean_t); then A_t = sum_{t' >= t} r'_{t'}. A turn index that only one trajectory
of the group reaches (its tail, when lengths differ) centres to 0, so it adds nothing to the
sums -- the variance MARSHAL points out with variable lengths.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from strategic_arena.train.algo.estimators.base import (
    CenteredConfig,
    Centering,
    Estimator,
    FloatArray,
    Trajectory,
    check_groups,
    members,
    normalize,
    register,
    returns_to_go,
)


def mt_grpo(
    rewards: Sequence[Sequence[float]],
    groups: Sequence[Hashable],
    eps: float = 1e-6,
    centering: Centering = "mean_std",
) -> list[FloatArray]:
    """Per trajectory, one advantage per turn (see the module docstring).

    Args:
        rewards: per trajectory, the reward of each turn (lengths may differ).
        groups: each trajectory's group key.
        eps: added to each turn index's std.
        centering: ``mean_std`` or ``mean``.
    """
    check_groups(len(rewards), groups)
    values = [np.asarray(trajectory, dtype=np.float64) for trajectory in rewards]
    normalized = [np.zeros_like(trajectory) for trajectory in values]
    for indices in members(groups).values():
        longest = max(len(values[i]) for i in indices)
        for t in range(longest):
            reaching = [i for i in indices if len(values[i]) > t]
            column = normalize([values[i][t] for i in reaching], eps, centering)
            for i, value in zip(reaching, column, strict=True):
                normalized[i][t] = value
    return [returns_to_go(trajectory.tolist()) for trajectory in normalized]


@dataclass
class MTGRPOConfig(CenteredConfig):
    """``advantage: {type: mt_grpo, ...}``."""

    type: Literal["mt_grpo"] = "mt_grpo"
    """MT-GRPO: normalize then sum."""


@register
class MTGRPO(Estimator):
    """:func:`mt_grpo` on trajectories' turn rewards."""

    config_class = MTGRPOConfig
    config: MTGRPOConfig

    def advantages(self, batch: Sequence[Trajectory]) -> list[FloatArray]:
        """Each turn its own advantage."""
        rewards = [t.rewards for t in batch]
        return mt_grpo(rewards, [t.key for t in batch], self.config.eps, self.config.centering)
