"""A spy on each co-trained policy's update: which seats its turns came from, who sampled them.

Each policy's ``learner.update`` is wrapped: before the real update it records the seats of the
turns it was given, and the largest difference between the engine's recorded log-probs of
those turns and the log-probs that this policy's learner, and the other policy's, give them.
Turns sampled by the policy itself match its own learner (before its update) and not the
other's, once the two differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from strategic_arena.rl.episode import Turn


@dataclass
class UpdateRecord:
    """Per update of one policy: its turns' seats, |engine - own|, |engine - other|."""

    seats: list[list[int]] = field(default_factory=list)
    own_diff: list[float] = field(default_factory=list)
    other_diff: list[float] = field(default_factory=list)


def _max_diff(learner: Any, turns: list[Turn]) -> float:
    mine = np.concatenate(learner.recompute_logprobs(turns))
    engine = np.concatenate([t.logprobs for t in turns])
    return float(np.max(np.abs(mine - engine)))


def spy_on_updates(cotrainer: Any) -> dict[str, UpdateRecord]:
    """Wrap every policy's update (two policies); returns the records, filled as it trains."""
    records = {name: UpdateRecord() for name in cotrainer.trainers}
    names = list(cotrainer.trainers)
    for name, trainer in cotrainer.trainers.items():
        other = cotrainer.trainers[next(n for n in names if n != name)]
        real = trainer.learner.update

        def update(
            turns: list[Turn],
            rng: np.random.Generator,
            *,
            _record: UpdateRecord = records[name],
            _real: Any = real,
            _own: Any = trainer.learner,
            _other: Any = other.learner,
            **kwargs: Any,
        ) -> dict[str, float]:
            _record.seats.append(sorted({t.seat for t in turns}))
            _record.own_diff.append(_max_diff(_own, turns))
            _record.other_diff.append(_max_diff(_other, turns))
            return dict(_real(turns, rng, **kwargs))

        trainer.learner.update = update
    return records


def trainable(trainer: Any) -> dict[str, Any]:
    """A copy of the policy's trainable parameters (its adapter under LoRA)."""
    return {
        name: parameter.detach().clone()
        for name, parameter in trainer.learner.model.named_parameters()
        if parameter.requires_grad
    }


def changed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether any parameter differs."""
    return any(not bool((before[k] == after[k]).all()) for k in before)
