"""The metrics a training step adds to its rollouts': the weight-sync check, throughput, idle time.

After a sync the engine samples with the learner's weights, so where the engine's log-probs are
the learner's quantity (no top-k / top-p truncation) the learner's own log-probs of the same
tokens must agree: :func:`sync_check` measures the ratio and :func:`warn_out_of_sync` says so
loudly when it is off. :func:`throughput` and :func:`idle_times` turn the step's timings into
rates and waits; :func:`brief` is the one-line summary a logged step prints.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.algo.bank import Batch

log = logging.getLogger("strategic_arena.train")

#: Largest |mean ratio - 1| between the learner's and the engine's log-probs of the same tokens
#: accepted without a warning (bfloat16 engines drift by about 1e-2).
SYNC_TOLERANCE = 0.05

#: The metrics of the one-line summary, in its order.
BRIEF_KEYS = (
    "train/reward",
    "train/invalid_rate",
    "train/response_length",
    "train/logprob_ratio",
    "train/grad_norm",
    "async/max_lag",
    "async/dropped_stale",
    "train/trajectories_per_s",
    "time/step",
)


def sync_check(
    old: Sequence[Sequence[float]] | None, turns: Sequence[Turn], step: int
) -> dict[str, float]:
    """``train/logprob_ratio`` and its largest log gap, over turns sampled by step ``step``.

    ``old``: the learner's log-probs of ``turns`` (``None``: not computed, no check). A turn an
    episode bank kept from an earlier step, or a stale turn of the asynchronous loop, differs
    by the updates since (the importance correction's business) and is left out.
    """
    fresh = [
        (mine, t)
        for mine, t in zip(old or [], turns, strict=False)
        if t.weight_version is None or t.weight_version == step
    ]
    if not fresh:
        return {}
    diffs = np.concatenate([np.subtract(mine, t.logprobs) for mine, t in fresh])
    return {
        "train/logprob_ratio": float(np.mean(np.exp(diffs))),
        "train/logprob_max_abs_diff": float(np.max(np.abs(diffs))),
    }


def warn_out_of_sync(ratio: float, expected_one: bool) -> None:
    """Warn when the log-prob ratio should be ~1 (``expected_one``) and is not.

    Under top-k / top-p the engine's log-probs are of the truncated distribution: a ratio below
    1 is then expected (the importance correction's business), not a bug.
    """
    if expected_one and abs(ratio - 1.0) > SYNC_TOLERANCE:
        log.warning(
            "engine and learner log-probs disagree after the weight sync: mean ratio %.4f "
            "(expected ~1); check the engine's log-prob mode and the weight push",
            ratio,
        )


def throughput(
    episodes: Sequence[Episode], trained: Sequence[Episode], timings: dict[str, float]
) -> dict[str, float]:
    """Trajectories trained per second of the step, tokens generated per second of generating."""
    generated = sum(len(t.response_ids) for e in episodes for t in e.turns)
    trajectories = sum(len(episode.learner_seats) for episode in trained)
    generating = timings["time/generate"] + timings.get("time/bank", 0.0)
    return {
        "train/trajectories_per_s": trajectories / max(timings["time/step"], 1e-9),
        "train/tokens_per_s": generated / max(generating, 1e-9),
    }


def bank_metrics(batch: Batch) -> dict[str, float]:
    """The bank's draw metrics, and ``train/advantage_abs``: the mean |advantage| drawn."""
    drawn = [abs(t.advantage) for t in batch.turns]
    return {**batch.metrics, "train/advantage_abs": float(np.mean(drawn)) if drawn else 0.0}


def idle_times(timings: dict[str, float], rollout_idle: float | None) -> dict[str, float]:
    """``time/learner_idle`` (waiting for games) and ``time/rollout_idle`` (for weights).

    Synchronous loop (``rollout_idle`` ``None``): the learner idles while the step's games are
    played, the engine during the rest of the step. Asynchronous loop: the learner's wait for
    its round, and the worker's waits for new weights since the previous step
    (``rollout_idle``).
    """
    learner_idle = timings["time/generate"] + timings.get("time/bank", 0.0)
    if rollout_idle is None:
        rollout_idle = timings["time/step"] - learner_idle
    return {"time/learner_idle": learner_idle, "time/rollout_idle": rollout_idle}


def brief(metrics: dict[str, float]) -> str:
    """The one-line summary of a logged step (the :data:`BRIEF_KEYS` it has)."""
    keys = (key for key in BRIEF_KEYS if key in metrics)
    return " ".join(f"{key.split('/')[-1]}={metrics[key]:.4g}" for key in keys)
