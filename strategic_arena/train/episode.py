"""Deprecated: the old address of :mod:`strategic_arena.rl.episode`.

The module moved below the trainer so that the integrations need not import the trainer.
Importing this one warns and re-exports the module's public names; import from
:mod:`strategic_arena.rl.episode` instead. It will be removed in a later release.
"""

from __future__ import annotations

import warnings

from strategic_arena.rl.episode import EPISODE_STATUSES, Episode, Turn

__all__ = ["EPISODE_STATUSES", "Episode", "Turn"]

warnings.warn(
    "strategic_arena.train.episode moved to strategic_arena.rl.episode; import it from there",
    DeprecationWarning,
    stacklevel=2,
)
