r"""Off-policy correction: weigh each sampled token by how the learner would have sampled it.

The engine that samples (vLLM: other kernels, another precision, maybe top-k / top-p
truncation) is the *behaviour* policy :math:`\mu`; its recorded log-probs are
:math:`\log \mu(y_t)`. The learner recomputes :math:`\log \pi_{old}(y_t)` with the weights that
sampled, and PPO's ratio :math:`\pi_\theta / \pi_{old}` starts at 1 -- so nothing in PPO sees
the gap between :math:`\mu` and :math:`\pi_{old}` (about 0.1-0.2 nats per token in bfloat16 on
GPUs, much more under truncated sampling). The correction (truncated importance sampling, Ionides
2008; applied to RL fine-tuning by Yao et al., "Your efficient RL framework secretly brings you
off-policy RL training", 2025, and offered by TRL, verl, SkyRL and prime-rl), per response
token:

1. ``ratio = exp(log pi_old - log mu)``;
2. masking: a token whose ratio leaves ``[mask_low, mask_high]`` gets weight 0 (its sample is
   too far off-policy to say anything about ``pi_old``);
3. truncation: otherwise the weight is ``min(ratio, cap)``, which bounds the variance a rare
   token could add;
4. the token's policy-gradient term is multiplied by the weight (a constant: no gradient flows
   through it); the KL and entropy terms are not.

At the ``sequence`` level (TRL's ``sequence_truncate`` / ``sequence_mask`` modes) the ratio of a
whole response, the product of its tokens' ratios (``exp`` of their summed log-ratios), goes
through steps 2-3 and every token of the response gets its weight: a response sampled far off
the learner's policy is truncated or dropped as a whole.

This module is numpy only; :func:`correct` returns per-turn weights and the ``train/is_*``
metrics of the step.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Weights:
    """The correction of a flat array of units (tokens, or whole responses).

    Attributes:
        ratio: ``pi_old / mu`` per unit.
        weights: the weight of each unit's policy-gradient term.
        truncated: units whose weight is the cap (ratio above it, not masked).
        masked: units whose weight is 0 (ratio outside the band).
    """

    ratio: np.ndarray
    weights: np.ndarray
    truncated: np.ndarray
    masked: np.ndarray


def importance_weights(
    log_ratio: np.ndarray,
    *,
    cap: float | None,
    mask_low: float | None = None,
    mask_high: float | None = None,
) -> Weights:
    """Steps 1-3 of the module docstring over ``log_ratio = log pi_old - log mu``."""
    ratio = np.exp(np.asarray(log_ratio, dtype=np.float64))
    masked = np.zeros(ratio.shape, dtype=bool)
    if mask_low is not None:
        masked |= ratio < mask_low
    if mask_high is not None:
        masked |= ratio > mask_high
    truncated = ~masked & (ratio > cap) if cap is not None else np.zeros_like(masked)
    kept = ratio if cap is None else np.minimum(ratio, cap)
    return Weights(ratio, np.where(masked, 0.0, kept), truncated, masked)


@dataclass(frozen=True)
class Correction:
    """The correction of a step's turns: per-turn token weights and the ``train/is_*`` metrics."""

    weights: list[list[float]]
    metrics: dict[str, float]


def correct(
    learner_logprobs: Sequence[Sequence[float]],
    behaviour_logprobs: Sequence[Sequence[float]],
    *,
    cap: float | None,
    mask_low: float | None = None,
    mask_high: float | None = None,
    level: str = "token",
) -> Correction:
    """The correction of each turn's tokens (learner and behaviour log-probs, turn by turn).

    ``level``: ``token`` or ``sequence`` (see the module docstring). The metrics are over the
    units the ratio is taken at: tokens, or responses.
    """
    sizes = [len(values) for values in learner_logprobs]
    if sizes != [len(values) for values in behaviour_logprobs]:
        raise ValueError("learner and behaviour log-probs differ in shape")
    if level not in ("token", "sequence"):
        raise ValueError(f"unknown importance-correction level {level!r}")
    pairs = zip(learner_logprobs, behaviour_logprobs, strict=True)
    log_ratios = [np.subtract(mine, theirs) for mine, theirs in pairs]
    bounds = dict(cap=cap, mask_low=mask_low, mask_high=mask_high)
    if level == "sequence":
        units = np.array([float(np.sum(part)) for part in log_ratios])
        result = importance_weights(units, **bounds)
        weights = [[float(w)] * size for w, size in zip(result.weights, sizes, strict=True)]
    else:
        units = np.concatenate(log_ratios or [np.zeros(0)])
        result = importance_weights(units, **bounds)
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        weights = [result.weights[a:b].tolist() for a, b in itertools.pairwise(starts)]
    count = max(1, units.size)
    metrics = {
        "train/is_ratio_mean": float(result.ratio.mean()) if units.size else 1.0,
        "train/is_ratio_max": float(result.ratio.max()) if units.size else 1.0,
        "train/is_truncated_frac": float(result.truncated.sum()) / count,
        "train/is_masked_frac": float(result.masked.sum()) / count,
    }
    return Correction(weights, metrics)
