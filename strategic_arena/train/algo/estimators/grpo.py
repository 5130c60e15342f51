"""GRPO at trajectory level: each trajectory's return centred within its group.

A = (R - mean_g R) / (std_g R + eps) over the trajectories of the same group g (``centering:
mean`` drops the division: Dr. GRPO); every turn of a trajectory gets its A. The paper's plain
GRPO baseline (the group being all trajectories of one game) is ``role_grouping: false``.
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
    per_turn,
    register,
)


def grpo(
    returns: Sequence[float],
    groups: Sequence[Hashable],
    eps: float = 1e-6,
    centering: Centering = "mean_std",
) -> FloatArray:
    """One advantage per trajectory: its return centred (and scaled) within its group.

    Args:
        returns: R of each trajectory (the sum of its turn rewards).
        groups: each trajectory's group key.
        eps: added to the std.
        centering: ``mean_std`` or ``mean`` (no division by the std).
    """
    check_groups(len(returns), groups)
    values = np.asarray(returns, dtype=np.float64)
    advantages = np.zeros_like(values)
    for indices in members(groups).values():
        advantages[indices] = normalize(values[indices], eps, centering)
    return advantages


@dataclass
class GRPOConfig(CenteredConfig):
    """``advantage: {type: grpo, ...}``."""

    type: Literal["grpo"] = "grpo"
    """GRPO at trajectory level."""


@register
class GRPO(Estimator):
    """:func:`grpo` on trajectories' total returns."""

    config_class = GRPOConfig
    config: GRPOConfig

    def advantages(self, batch: Sequence[Trajectory]) -> list[FloatArray]:
        """Every turn gets its trajectory's advantage."""
        totals = [t.total_return for t in batch]
        values = grpo(totals, [t.key for t in batch], self.config.eps, self.config.centering)
        return per_turn(batch, values)
