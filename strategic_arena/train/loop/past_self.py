"""SPIRAL's self-play evaluation: the policy against its own checkpoint some steps earlier.

SPIRAL reports, beside its win rates against fixed opponents, the policy's win rate against
itself 16 steps earlier (its Table 3: "Self-Play Win Rate vs Self (t-16)", which stays near 50%
under self-play). ``eval.past_checkpoints: [16]`` schedules it: at the evaluation of step ``s``
(after ``s`` updates), for each lag ``k`` with ``s >= k``, the checkpoint written after step
``s - k`` (its ``policy/`` folder; the initial model, ``model.name``, when ``s == k``) plays
every training game, both seats, like any ``checkpoint:PATH`` opponent, at the evaluation's
temperature (the tiny test model, built in-process, has no initial weights on disk: its
evaluation at s = k is skipped). Its rows are stored under the checkpoint's own name and also
reported as ``eval/<env>/self-t<k>/<metric>``, a name that stays the same from one evaluation
to the next.

The checkpoint must exist when the evaluation runs: the named check
:func:`~strategic_arena.train.config.checks.past_checkpoints_are_kept` holds ``k`` and
``eval.every`` to multiples of ``run.checkpoint_every`` and ``run.keep_checkpoints`` to enough
checkpoints (an evaluation comes before that step's own checkpoint is written).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from strategic_arena.train.config import OpponentConfig, TrainConfig
from strategic_arena.train.policy.checkpoint import checkpoint_dir

#: ``model.name`` of the tiny in-process test model (no weights on disk before step 1).
TINY = "tiny"


@dataclass(frozen=True)
class PastSelf:
    """One scheduled past checkpoint: its lag, the step it was written after, the opponent."""

    lag: int
    step: int
    opponent: OpponentConfig

    @property
    def alias(self) -> str:
        """The opponent's name in the ``eval/`` metrics: ``self-t<lag>``."""
        return f"self-t{self.lag}"

    @property
    def path(self) -> str:
        """Where the checkpoint's model is (``checkpoint:PATH``'s path)."""
        return self.opponent.spec.removeprefix("checkpoint:")


def past_selves(cfg: TrainConfig, step: int) -> list[PastSelf]:
    """The past checkpoints the evaluation of ``step`` plays, one per lag with ``step >= lag``."""
    found = []
    for lag in cfg.eval.past_checkpoints:
        earlier = step - lag
        if earlier < 0 or (earlier == 0 and cfg.model.name == TINY):
            continue
        if earlier == 0:
            path = cfg.model.name
        else:
            path = str(checkpoint_dir(cfg.run.output_dir, earlier) / "policy")
        opponent = OpponentConfig(spec=f"checkpoint:{path}", temperature=cfg.eval.temperature)
        found.append(PastSelf(lag, earlier, opponent))
    return found


def with_past_selves(
    cfg: TrainConfig, selves: list[PastSelf]
) -> dict[str, list[str | OpponentConfig]]:
    """``eval.opponents`` with every past checkpoint added to each training game's list."""
    entries: dict[str, list[str | OpponentConfig]] = {
        env_id: list(listed) for env_id, listed in cfg.eval.opponents.items()
    }
    for env_id in cfg.games.ids if selves else ():
        entries.setdefault(env_id, []).extend(past.opponent for past in selves)
    return entries


def alias_metrics(metrics: Mapping[str, float], selves: list[PastSelf]) -> dict[str, float]:
    """``eval/<env>/self-t<k>/...`` copies of the past checkpoints' ``eval/`` metrics."""
    aliases = {}
    for past in selves:
        marker = f"/{past.opponent.spec}/"
        for key, value in metrics.items():
            if marker in key:
                aliases[key.replace(marker, f"/{past.alias}/", 1)] = value
    return aliases
