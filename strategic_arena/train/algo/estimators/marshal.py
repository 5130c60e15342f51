"""MARSHAL's turn-level advantage: "sum then normalize" (generalized to GAE's lambda and gamma).

MARSHAL (section 3.3): returns-to-go R_t = sum_{t' >= t} r_{t'}, then
A_t = (R_t - mean(S_g)) / (std(S_g) + eps), S_g being every return-to-go of every trajectory of
the group. The set pools trajectories of different lengths (a long trajectory contributes more
elements), and a group's advantages are centred: their mean over S is 0.

The paper calls this GAE with lambda = gamma = 1 and the group's mean return as the value
baseline; its hyperparameter table lists lambda 0.95 and gamma 1. The general form here:

1. G_t = sum_{t' >= t} gamma^(t' - t) r_{t'} (discounted returns-to-go), S_g = every G_t of
   the group, b = mean(S_g) (a constant value baseline V(s) = b; V = 0 after the last turn);
2. delta_t = r_t + gamma * b - b (t before the last turn), delta_last = r_last - b;
3. A_t = sum_{l >= 0} (gamma * lambda)^l delta_{t+l} (GAE);
4. ``centering: mean_std`` divides by std(S_g) + eps; ``mean`` keeps A_t as it is.

With lambda = 1 step 3 telescopes to A_t = G_t - b, so lambda = gamma = 1 is exactly the
paper's formula (with ``mean_std``, the estimator the paper evaluates; ``mean`` is its
"group mean baseline" wording without the division). A group whose G_t are all equal gets 0.

MARSHAL's repository (``examples/*/agentic_val_*_selfplay.yaml``, ``roll/utils/functionals.py``)
runs ``adv_estimator: reinforce``, whose ``compute_reinforce_return`` computes the gamma = 1
returns-to-go and never reads ``lambd`` (the table's 0.95 is the framework's default for its GAE
path), then centres per player by a mean (``advantage_norm: mean``, over the distinct values)
and whitens over tokens (``whiten_advantages: true``): ``centering: mean`` with ``whiten: true``
is the closest setting here.
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
    register,
    returns_to_go,
)


def gae(rewards: Sequence[float], baseline: float, gamma: float, lam: float) -> FloatArray:
    """GAE advantages of one trajectory with the constant value ``baseline`` (0 after the end)."""
    values = np.asarray(rewards, dtype=np.float64)
    advantages = np.zeros_like(values)
    running = 0.0
    for t in range(len(values) - 1, -1, -1):
        next_value = baseline if t < len(values) - 1 else 0.0
        delta = float(values[t]) + gamma * next_value - baseline
        running = delta + gamma * lam * running
        advantages[t] = running
    return advantages


def marshal(
    rewards: Sequence[Sequence[float]],
    groups: Sequence[Hashable],
    eps: float = 1e-6,
    *,
    centering: Centering = "mean_std",
    gamma: float = 1.0,
    lam: float = 1.0,
) -> list[FloatArray]:
    """Per trajectory, one advantage per turn (the module docstring's steps 1-4).

    Args:
        rewards: per trajectory, the reward of each turn (lengths may differ).
        groups: each trajectory's group key.
        eps: added to the std of S.
        centering: ``mean_std`` or ``mean``.
        gamma: discount of the returns-to-go.
        lam: GAE's lambda.
    """
    check_groups(len(rewards), groups)
    to_go = [returns_to_go(trajectory, gamma) for trajectory in rewards]
    advantages = [np.zeros_like(values) for values in to_go]
    for indices in members(groups).values():
        pooled = np.concatenate([to_go[i] for i in indices])
        if pooled.size == 0 or pooled.max() == pooled.min():
            continue  # nothing in the group is better or worse than its baseline
        baseline = float(pooled.mean())
        scale = float(pooled.std()) + eps if centering == "mean_std" else 1.0
        for i in indices:
            if gamma == 1.0 and lam == 1.0:  # the paper's form, G_t - b, without the loop
                advantages[i] = (to_go[i] - baseline) / scale
            else:
                advantages[i] = gae(rewards[i], baseline, gamma, lam) / scale
    return advantages


@dataclass
class MarshalConfig(CenteredConfig):
    """``advantage: {type: marshal, ...}``."""

    type: Literal["marshal"] = "marshal"
    """MARSHAL's turn-level "sum then normalize"."""
    gamma: float = 1.0
    """Discount of the returns-to-go (MARSHAL: 1)."""
    lam: float = 1.0
    """GAE lambda (MARSHAL's text: 1; its table lists 0.95, which its code's REINFORCE path
    never reads)."""

    def problems(self) -> list[str]:
        """Both gamma and lambda must lie in [0, 1]."""
        problems = super().problems()
        for name, value in (("gamma", self.gamma), ("lam", self.lam)):
            if not 0.0 <= value <= 1.0:
                problems.append(f"advantage.{name} must lie in [0, 1], got {value}")
        return problems


@register
class Marshal(Estimator):
    """:func:`marshal` on trajectories' turn rewards."""

    config_class = MarshalConfig
    config: MarshalConfig

    def advantages(self, batch: Sequence[Trajectory]) -> list[FloatArray]:
        """Each turn its own advantage."""
        cfg = self.config
        return marshal(
            [t.rewards for t in batch],
            [t.key for t in batch],
            cfg.eps,
            centering=cfg.centering,
            gamma=cfg.gamma,
            lam=cfg.lam,
        )
