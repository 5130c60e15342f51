r"""PPO's advantage: GAE over a learned value function (a value head), as MAPoRL trains.

MAPoRL (independent multi-agent PPO) gives every agent a value head and estimates advantages
with generalized advantage estimation. Here a *turn* is one action (a whole answer), so the
value is taken per turn: ``V_t`` is the value head's output at the last prompt token of turn t
(:class:`strategic_arena.train.policy.value_head.ValueHead`, filled into ``Turn.value`` by the
learner before this stage), and with ``V_T = 0`` after the trajectory's last turn:

1. delta_t = r_t + gamma * V_{t+1} - V_t;
2. A_t = sum_{l >= 0} (gamma * lambda)^l * delta_{t+l};
3. the value target (return) is R_t = A_t + V_t, stored in ``Turn.value_target`` for the value
   loss of the update (:func:`strategic_arena.train.policy.value_head.value_loss`);
4. with ``whiten`` (on by default, as TRL's PPO does) the batch's advantages are then
   normalized to mean 0 and std 1; the returns are not.

Unlike the critic-free estimators, no group or baseline is involved: the value head is the
baseline. A turn whose value is unknown (``None``) counts as ``V = 0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from strategic_arena.train.algo.estimators.base import (
    CriticSettings,
    Estimator,
    EstimatorConfig,
    FloatArray,
    Trajectory,
    register,
)


def gae_returns(
    rewards: Sequence[float], values: Sequence[float], gamma: float, lam: float
) -> tuple[FloatArray, FloatArray]:
    """``(advantages, returns)`` of one trajectory (the module docstring's steps 1-3)."""
    if len(rewards) != len(values):
        raise ValueError(f"{len(rewards)} rewards but {len(values)} values")
    r = np.asarray(rewards, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    advantages = np.zeros_like(r)
    running = 0.0
    for t in range(len(r) - 1, -1, -1):
        next_value = float(v[t + 1]) if t + 1 < len(r) else 0.0
        delta = float(r[t]) + gamma * next_value - float(v[t])
        running = delta + gamma * lam * running
        advantages[t] = running
    returns: FloatArray = advantages + v
    return advantages, returns


@dataclass
class PPOEstimatorConfig(EstimatorConfig):
    """``advantage: {type: ppo, ...}``: GAE over the value head, plus the value loss's settings."""

    type: Literal["ppo"] = "ppo"
    """PPO with a value head and GAE (MAPoRL's)."""
    whiten: bool = True
    """Normalize the batch's advantages to mean 0, std 1 after GAE (TRL's PPO default)."""
    gamma: float = 1.0
    """Discount between turns (TRL's PPO default: 1)."""
    lam: float = 0.95
    """GAE lambda (TRL's PPO default: 0.95)."""
    value_coef: float = 0.1
    """Weight of the value loss next to the policy loss (TRL's ``vf_coef``: 0.1)."""
    value_clip: float | None = 0.2
    """Clip range of the value prediction around its value before the update (TRL's
    ``cliprange_value``: 0.2; ``null``: no clipping)."""
    value_lr: float | None = None
    """Learning rate of the value head (``null``: ppo.lr); the trunk it reads is the policy's."""

    def problems(self) -> list[str]:
        """Gamma and lambda in [0, 1], a non-negative value weight, a positive clip."""
        problems = super().problems()
        for name, value in (("gamma", self.gamma), ("lam", self.lam)):
            if not 0.0 <= value <= 1.0:
                problems.append(f"advantage.{name} must lie in [0, 1], got {value}")
        if self.value_coef < 0:
            problems.append("advantage.value_coef must be >= 0")
        if self.value_clip is not None and self.value_clip <= 0:
            problems.append("advantage.value_clip must be > 0 (or null)")
        if self.value_lr is not None and self.value_lr <= 0:
            problems.append("advantage.value_lr must be > 0 (or null)")
        return problems


@register
class PPO(Estimator):
    """:func:`gae_returns` per trajectory; also sets each turn's ``value_target``."""

    config_class = PPOEstimatorConfig
    config: PPOEstimatorConfig
    needs_critic: ClassVar[bool] = True

    def critic(self) -> CriticSettings:
        """The value head's coefficient, clip and learning rate from the ``advantage`` section."""
        config = self.config
        assert isinstance(config, PPOEstimatorConfig)
        return CriticSettings(config.value_coef, config.value_clip, config.value_lr)

    def advantages(self, batch: Sequence[Trajectory]) -> list[FloatArray]:
        """GAE advantages; the returns go to ``Turn.value_target`` (the value loss's target)."""
        result = []
        for trajectory in batch:
            values = [0.0 if t.value is None else t.value for t in trajectory.turns]
            advantages, returns = gae_returns(
                trajectory.rewards, values, self.config.gamma, self.config.lam
            )
            for turn, target in zip(trajectory.turns, returns, strict=True):
                turn.value_target = float(target)
            result.append(advantages)
        return result
