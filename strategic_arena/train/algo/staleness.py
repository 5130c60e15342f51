"""Bounded staleness: which finished games an asynchronous step may still train on.

With ``max_staleness: k >= 1`` rollouts keep going while the learner trains, so a game may have
been played, in whole or in part, by weights older than the ones being trained. Versions count
updates: the weights of version ``v`` hold ``v`` optimizer steps, and training step ``s``
updates the weights of version ``s``. Every turn records the version that generated it
(:attr:`~strategic_arena.rl.episode.Turn.weight_version`); a turn whose request spanned a
weight update (vLLM's ``/pause?mode=keep`` lets it finish with the new weights) records the
version its request was sent with, the older one.

**The rule.** The unit is the game (an :class:`~strategic_arena.rl.episode.Episode`: every
learner trajectory of it, both seats in self-play, because the advantage estimators compare the
seats of a game). Its *lag* at step ``s`` is ``s`` minus the version of its **oldest** turn:

1. lag <= k: the game is kept whole, turns of several versions included; each turn keeps its own
   behaviour log-probs (the engine's, recorded when it was sampled), which the PPO ratio or the
   importance correction (:mod:`strategic_arena.train.policy.importance`) uses turn by turn;
2. lag > k: the game is dropped and counted (``async/dropped_stale``);
3. a game with no turn (the policy never moved) or turns of unknown version has lag 0.

This module is standard library only; :func:`filter_stale` applies the rule and returns the
histogram the metrics report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strategic_arena.rl.episode import Episode


def game_lag(episode: Episode, version: int) -> int:
    """How many versions the oldest turn of ``episode`` is behind ``version`` (0 if unknown)."""
    versions = [turn.weight_version for turn in episode.turns if turn.weight_version is not None]
    return max(0, version - min(versions)) if versions else 0


@dataclass(frozen=True)
class StalenessReport:
    """What :func:`filter_stale` kept and dropped.

    Attributes:
        kept: the games within the bound, in their original order.
        dropped: how many games were too stale.
        histogram: games per lag ``0..max_staleness`` (kept games only).
    """

    kept: list[Episode]
    dropped: int
    histogram: tuple[int, ...]

    def metrics(self) -> dict[str, float]:
        """``async/staleness_lag_<n>`` per lag, ``async/max_lag``, ``async/dropped_stale``."""
        metrics = {f"async/staleness_lag_{lag}": float(n) for lag, n in enumerate(self.histogram)}
        lags = [lag for lag, n in enumerate(self.histogram) if n]
        metrics["async/max_lag"] = float(max(lags, default=0))
        metrics["async/dropped_stale"] = float(self.dropped)
        return metrics


def filter_stale(episodes: Sequence[Episode], version: int, max_staleness: int) -> StalenessReport:
    """The games of ``episodes`` the step training ``version`` may use (see the module rule)."""
    if max_staleness < 0:
        raise ValueError(f"max_staleness must be >= 0; got {max_staleness}")
    histogram = [0] * (max_staleness + 1)
    kept: list[Episode] = []
    for episode in episodes:
        lag = game_lag(episode, version)
        if lag > max_staleness:
            continue
        histogram[lag] += 1
        kept.append(episode)
    return StalenessReport(kept, len(episodes) - len(kept), tuple(histogram))
