"""SPIRAL's role-conditioned advantage estimation (RAE): a moving-average baseline per key.

For each trajectory, in batch order: A = R - b[key], then b[key] <- alpha * b[key] + (1 -
alpha) * R. As coded in SPIRAL (``train_spiral.py``, ``prepare_trajectories``, with the ``EMA``
of ``spiral.core.utils``): the baseline starts at 0 and is read *before* it is updated with the
return it baselines, every turn of the trajectory gets the same A, and zero-advantage turns are
dropped from the loss (the trainer's ``ppo.drop_zero_advantage``). The baselines persist across
steps and are checkpointed (the estimator's :meth:`RAE.state_dict`). There are no groups: a
key's first return gets ``R - 0``. ``alpha = 1`` keeps every baseline at 0: plain REINFORCE,
SPIRAL's "without RAE" ablation.

Two differences from SPIRAL's code, both checked against it in
``tests/train/test_spiral_crosscheck.py``: a seat that made no decision (its partner forfeited
on the first move) has no trajectory here, so it does not update its baseline, where SPIRAL's
code folds its +0.5 in; and SPIRAL's code keeps one baseline per player id across games, where
the paper's b[G, p], and this estimator under ``role_grouping``, keep one per (game, role).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from strategic_arena.door import decode
from strategic_arena.train.algo.estimators.base import (
    Estimator,
    EstimatorConfig,
    FloatArray,
    Trajectory,
    check_groups,
    per_turn,
    register,
)


def _key_to_json(key: Hashable) -> Any:
    """A JSON value for a baseline key: tuples become lists, scalars stay."""
    if isinstance(key, tuple):
        return [_key_to_json(part) for part in key]
    if key is None or isinstance(key, (str, int, float, bool)):
        return key
    raise TypeError(
        f"RAE baseline key {key!r} is a {type(key).__name__}; keys must be str, int, float, "
        "bool, None or tuples of them to be saved"
    )


def _key_from_json(value: Any) -> Hashable:
    """Inverse of :func:`_key_to_json` (lists become tuples again)."""
    if isinstance(value, list):
        return tuple(_key_from_json(part) for part in value)
    key: Hashable = value
    return key


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")


class RAEBaselines:
    """One exponential moving average of returns per key, read before it is updated.

    Attributes:
        alpha: the EMA decay (0.95 in SPIRAL): the weight of the old baseline.
    """

    def __init__(self, alpha: float = 0.95) -> None:
        _check_alpha(alpha)
        self.alpha = alpha
        self._baselines: dict[Hashable, float] = {}
        self._updates: dict[Hashable, int] = {}

    def baseline(self, key: Hashable) -> float:
        """The current baseline b[key] (0.0 before its first update)."""
        return self._baselines.get(key, 0.0)

    def updates(self, key: Hashable) -> int:
        """How many returns have updated b[key]."""
        return self._updates.get(key, 0)

    def keys(self) -> list[Hashable]:
        """The keys with a baseline, in order of first update."""
        return list(self._baselines)

    def advantage_and_update(self, key: Hashable, ret: float) -> float:
        """Return ``ret - b[key]`` with the baseline as it was, then fold ``ret`` into it."""
        baseline = self.baseline(key)
        self._baselines[key] = self.alpha * baseline + (1.0 - self.alpha) * float(ret)
        self._updates[key] = self.updates(key) + 1
        return float(ret) - baseline

    def state_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy of the state.

        Keys are stored as the JSON text of the key with tuples as lists (e.g.
        ``'["kuhn_poker-v0", "player 0"]'``), which :meth:`load_state_dict` turns back into the
        same tuple.

        Raises:
            TypeError: a key is not made of str, int, float, bool, None and tuples.
        """
        return {
            "alpha": self.alpha,
            "baselines": {json.dumps(_key_to_json(k)): v for k, v in self._baselines.items()},
            "updates": {json.dumps(_key_to_json(k)): n for k, n in self._updates.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the state by one from :meth:`state_dict` (``alpha`` included: exact resume)."""
        alpha = float(state["alpha"])
        _check_alpha(alpha)
        self.alpha = alpha
        self._baselines = {
            _key_from_json(decode(k, "a baseline key")): float(v)
            for k, v in state["baselines"].items()
        }
        self._updates = {
            _key_from_json(decode(k, "a baseline key")): int(n)
            for k, n in state.get("updates", {}).items()
        }


def rae(
    returns: Sequence[float], groups: Sequence[Hashable], baselines: RAEBaselines
) -> FloatArray:
    """``A = R - b[key]`` per trajectory, in order, updating ``baselines`` in place.

    A later trajectory of the same key in the same batch sees the earlier ones' returns in its
    baseline (SPIRAL updates per trajectory, not per batch).
    """
    check_groups(len(returns), groups)
    advantages = [
        baselines.advantage_and_update(key, ret) for ret, key in zip(returns, groups, strict=True)
    ]
    return np.array(advantages, dtype=np.float64)


@dataclass
class RAEConfig(EstimatorConfig):
    """``advantage: {type: rae, ...}``."""

    type: Literal["rae"] = "rae"
    """SPIRAL's role-conditioned advantage estimation."""
    alpha: float = 0.95
    """EMA decay of the per-key baselines (SPIRAL: 0.95)."""

    def problems(self) -> list[str]:
        """The EMA decay alpha must lie in [0, 1]."""
        problems = super().problems()
        if not 0.0 <= self.alpha <= 1.0:
            problems.append(f"advantage.alpha must lie in [0, 1], got {self.alpha}")
        return problems


@register
class RAE(Estimator):
    """:func:`rae` with baselines this estimator owns and checkpoints."""

    config_class = RAEConfig
    config: RAEConfig

    def __init__(self, config: EstimatorConfig) -> None:
        super().__init__(config)
        self.baselines = RAEBaselines(self.config.alpha)

    def advantages(self, batch: Sequence[Trajectory]) -> list[FloatArray]:
        """Every turn gets its trajectory's advantage; the baselines move on."""
        totals = [t.total_return for t in batch]
        return per_turn(batch, rae(totals, [t.key for t in batch], self.baselines))

    def state_dict(self) -> dict[str, Any]:
        """The baselines (:meth:`RAEBaselines.state_dict`)."""
        return {"rae_baselines": self.baselines.state_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the baselines; a pre-registry checkpoint's bare baseline state works too.

        An empty state (a checkpoint of a stateless estimator, resumed with ``rae``) leaves the
        baselines fresh.
        """
        saved = state.get("rae_baselines", state)
        if saved:
            self.baselines.load_state_dict(saved)
