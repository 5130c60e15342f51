"""RLOO on returns-to-go with a per-(game, role) leave-one-out baseline.

REINFORCE leave-one-out (Ahmadian et al., 2024) in multi-turn, multi-game training: no two
steps share a prompt, so the values are grouped (here by ``(env_id, role)`` under role
grouping, by ``env_id`` without), and each value's baseline is the mean of the *other* values
of its group:

    A_i = x_i - (sum_g x - x_i) / (n_g - 1) = n_g / (n_g - 1) * (x_i - mean_g x)

``level: turn`` takes each eligible turn's return-to-go R_t as x; ``level: trajectory`` takes
each trajectory's return R and gives it to all of its turns. A group with one member (nothing
to leave out) or equal values gets 0.

This is **not** In2AI's estimator: the MindGames winner baselines each step's *reward* (not its
return-to-go) against the other steps of its game (not of its game and role); that is
:mod:`.in2ai` (``type: in2ai``). This one stays as a variant that credits a turn with what
follows it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from strategic_arena.train.algo.estimators.base import (
    Estimator,
    EstimatorConfig,
    FloatArray,
    Trajectory,
    check_groups,
    members,
    per_turn,
    register,
    returns_to_go,
    split_like,
)


def rloo(values: Sequence[float], groups: Sequence[Hashable]) -> FloatArray:
    """``x_i`` minus the mean of the other members of its group (0 for a lone member).

    Args:
        values: one value per member.
        groups: each member's group key.
    """
    check_groups(len(values), groups)
    array = np.asarray(values, dtype=np.float64)
    advantages = np.zeros_like(array)
    for indices in members(groups).values():
        group = array[indices]
        if len(group) < 2 or group.max() == group.min():
            continue
        others = (group.sum() - group) / (len(group) - 1)
        advantages[indices] = group - others
    return advantages


@dataclass
class RLOOConfig(EstimatorConfig):
    """``advantage: {type: rloo, ...}``."""

    type: Literal["rloo"] = "rloo"
    """RLOO on returns-to-go, with a leave-one-out baseline per environment (and role)."""
    level: Literal["turn", "trajectory"] = "turn"
    """``turn``: each turn's return-to-go against the other turns of its group;
    ``trajectory``: each trajectory's return against the others'."""


@register
class RLOO(Estimator):
    """:func:`rloo` on returns-to-go (``level: turn``) or returns (``level: trajectory``)."""

    config_class = RLOOConfig
    config: RLOOConfig

    def advantages(self, batch: Sequence[Trajectory]) -> list[FloatArray]:
        """Per turn (``turn``) or per trajectory, spread over its turns (``trajectory``)."""
        if self.config.level == "trajectory":
            totals = [t.total_return for t in batch]
            return per_turn(batch, rloo(totals, [t.key for t in batch]))
        to_go = [returns_to_go(t.rewards) for t in batch]
        keys = [t.key for t, values in zip(batch, to_go, strict=True) for _ in values]
        return split_like(rloo(np.concatenate(to_go).tolist(), keys), to_go)
