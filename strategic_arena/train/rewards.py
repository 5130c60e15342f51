"""Deprecated: the old address of :mod:`strategic_arena.rl.rewards`.

The module moved below the trainer so that the integrations need not import the trainer.
Importing this one warns and re-exports the module's public names; import from
:mod:`strategic_arena.rl.rewards` instead. It will be removed in a later release.
"""

from __future__ import annotations

import warnings

from strategic_arena.rl.rewards import (
    RewardConfig,
    game_reward,
    length_penalty,
    score,
    score_episode,
    unobserved_turns,
)

__all__ = [
    "RewardConfig",
    "game_reward",
    "length_penalty",
    "score",
    "score_episode",
    "unobserved_turns",
]

warnings.warn(
    "strategic_arena.train.rewards moved to strategic_arena.rl.rewards; import it from there",
    DeprecationWarning,
    stacklevel=2,
)
