"""SPIRAL's subsampling: train on a fixed number of the step's turns, drawn at random.

SPIRAL trains on 128 samples per step (its Table 6 batch size), a sample being one turn -- a
prompt and the response to it -- of its turn-level MDP: its games produce more turns than
that, and the learner trains on a uniform random draw of them. (Its Tinker release, spiral-rl
0.2.0, keeps every turn instead and scales the advantages by ``batch_size / turns``; the
paper's runs subsample.) Here the draw comes after the advantages, so every game of the step
reaches the estimator (RAE's baselines see them all), and after ``ppo.drop_zero_advantage``
(SPIRAL's filter), so the learner gets ``ppo.turns_per_step`` turns whenever the step has
that many. Randomness: a generator seeded by ``derive_seed(seed, step, "subsample")``, so a
resumed run draws the same turns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.seeding import derive_seed


def subsample_turns(turns: Sequence[Turn], limit: int | None, seed: int, step: int) -> list[Turn]:
    """At most ``limit`` of ``turns``, drawn uniformly without replacement, in their order.

    ``limit`` ``None``, or no more turns than ``limit``: every turn.
    """
    if limit is None or len(turns) <= limit:
        return list(turns)
    rng = np.random.default_rng(derive_seed(seed, step, "subsample"))
    kept = np.sort(rng.choice(len(turns), size=limit, replace=False))
    return [turns[int(i)] for i in kept]


def trainable_turns(
    episodes: Sequence[Episode], limit: int | None, seed: int, step: int, *, drop_zero: bool
) -> list[Turn]:
    """The turns an update trains on: eligible, with a response, at most ``limit`` of them.

    ``drop_zero`` (``ppo.drop_zero_advantage``): turns whose advantage is 0 go first (they
    carry no gradient); the draw of :func:`subsample_turns` is step ``step``'s.
    """
    turns = [t for e in episodes for t in e.turns if t.eligible and t.response_ids]
    if drop_zero:
        turns = [t for t in turns if t.advantage != 0.0]
    return subsample_turns(turns, limit, seed, step)
