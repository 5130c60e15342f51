"""Training metrics: what a step's episodes say, and where the numbers go.

:func:`rollout_metrics` summarises a step's episodes under ``train/``: mean turn reward and
trajectory return, game returns and win rates per game and per seat (and per opponent), game
length (decisions per game, every seat's: SPIRAL's table 11), the invalid-answer rate by error
kind, response lengths and the gated fraction.

:class:`MetricsLogger` appends one JSON object per logged step to ``metrics.jsonl`` and, when
the ``tensorboard`` package is installed, writes the same scalars as TensorBoard events (the
package is optional: without it a log line says so and only the JSONL is written). On resume
:meth:`MetricsLogger.truncate_after` drops lines of steps past the checkpoint, so a resumed run
never shows a step twice.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from strategic_arena.arena.teams import player_result, seat_teams
from strategic_arena.door import decode, read_json_lines, read_text
from strategic_arena.games import get_spec
from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.loop.curves import write_curves

log = logging.getLogger("strategic_arena.train")


def seat_outcome(episode: Episode, seat: int) -> str:
    """``win``, ``draw`` or ``loss`` of ``seat``: the arena's one W/D/L definition (its sign)."""
    teams = seat_teams(episode.env_id, len(episode.returns))
    return player_result(episode.returns, teams, [seat])


def rollout_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """``train/...`` scalars of a step's scored episodes (see the module docstring)."""
    metrics: dict[str, float] = {}
    turns = [turn for episode in episodes for turn in episode.turns]
    metrics["train/episodes"] = float(len(episodes))
    metrics["train/turns"] = float(len(turns))
    if not turns:
        return metrics
    metrics.update(_turn_metrics(episodes, turns))
    lengths_known = [e.num_moves for e in episodes if e.num_moves is not None]
    if lengths_known:
        metrics["train/game_length"] = float(np.mean(lengths_known))
    by_env: dict[str, list[Episode]] = defaultdict(list)
    for episode in episodes:
        by_env[episode.env_id].append(episode)
    for env_id, group in sorted(by_env.items()):
        metrics.update(_game_metrics(f"train/{env_id}", group))
        if not get_spec(env_id).cooperative:
            metrics.update(_outcome_rates(f"train/{env_id}", group))
    return metrics


def _turn_metrics(episodes: Sequence[Episode], turns: Sequence[Turn]) -> dict[str, float]:
    """Rewards, returns, gating, invalid answers, lengths, weight versions and advantages."""
    metrics: dict[str, float] = {}
    eligible = [turn for turn in turns if turn.eligible]
    metrics["train/reward"] = float(np.mean([t.reward for t in eligible])) if eligible else 0.0
    returns = [
        sum(t.reward for t in episode.trajectory(seat) if t.eligible)
        for episode in episodes
        for seat in episode.learner_seats
    ]
    metrics["train/trajectory_return"] = float(np.mean(returns))
    metrics["train/gated_fraction"] = 1.0 - len(eligible) / len(turns)
    metrics["train/invalid_rate"] = float(np.mean([t.error_kind is not None for t in turns]))
    for kind, count in sorted(Counter(t.error_kind for t in turns if t.error_kind).items()):
        metrics[f"train/invalid/{kind}"] = count / len(turns)
    lengths = [len(t.response_ids) for t in turns]
    metrics["train/response_length"] = float(np.mean(lengths))
    metrics["train/response_length_max"] = float(max(lengths))
    metrics["train/prompt_length"] = float(np.mean([len(t.prompt_ids) for t in turns]))
    versions = [t.weight_version for t in turns if t.weight_version is not None]
    if versions:  # every turn of a step should come from the weights of the step before
        metrics["train/weight_version"] = float(min(versions))
        metrics["train/weight_version_max"] = float(max(versions))
    metrics["train/advantage_abs"] = (
        float(np.mean([abs(t.advantage) for t in eligible])) if eligible else 0.0
    )
    return metrics


def _game_metrics(prefix: str, group: Sequence[Episode]) -> dict[str, float]:
    """One game's mean return over learner seats, game length and forfeit rate."""
    metrics: dict[str, float] = {}
    metrics[f"{prefix}/game_return"] = float(
        np.mean([np.mean([e.returns[s] for s in e.learner_seats]) for e in group])
    )
    env_lengths = [e.num_moves for e in group if e.num_moves is not None]
    if env_lengths:  # SPIRAL's game length: decisions per game, every seat's
        metrics[f"{prefix}/game_length"] = float(np.mean(env_lengths))
    metrics[f"{prefix}/forfeit_rate"] = float(np.mean([e.forfeited_by is not None for e in group]))
    return metrics


def _outcome_rates(prefix: str, group: Sequence[Episode]) -> dict[str, float]:
    """A competitive game's win and draw rates per learner seat, and win rates per opponent."""
    metrics: dict[str, float] = {}
    seats: dict[int, list[str]] = defaultdict(list)
    versus: dict[str, list[str]] = defaultdict(list)
    for episode in group:
        for seat in episode.learner_seats:
            outcome = seat_outcome(episode, seat)
            seats[seat].append(outcome)
            versus[episode.opponent].append(outcome)
    for seat, outcomes in sorted(seats.items()):
        metrics[f"{prefix}/win_rate/seat{seat}"] = outcomes.count("win") / len(outcomes)
        metrics[f"{prefix}/draw_rate/seat{seat}"] = outcomes.count("draw") / len(outcomes)
    for opponent, outcomes in sorted(versus.items()):
        metrics[f"{prefix}/win_rate/vs/{opponent}"] = outcomes.count("win") / len(outcomes)
    return metrics


class MetricsLogger:
    """``metrics.jsonl`` plus optional TensorBoard events under ``run.output_dir``.

    Args:
        output_dir: the run directory.
        tensorboard: also write TensorBoard events if the package is available.
        enabled: ``False`` on non-zero ranks (nothing is written).
    """

    def __init__(
        self, output_dir: str | Path, *, tensorboard: bool = True, enabled: bool = True
    ) -> None:
        self.path = Path(output_dir) / "metrics.jsonl"
        self.enabled = enabled
        self._writer: Any = None
        if not enabled:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if tensorboard:
            if importlib.util.find_spec("tensorboard") is None:
                log.info("tensorboard is not installed: metrics go to %s only", self.path)
            else:
                from torch.utils.tensorboard import SummaryWriter

                self._writer = SummaryWriter(str(Path(output_dir) / "tensorboard"))

    def truncate_after(self, step: int) -> None:
        """Drop logged lines of steps after ``step`` (resuming from a checkpoint at ``step``)."""
        if not self.enabled or not self.path.exists():
            return
        kept = []
        for line in read_text(self.path, "checkpoint").splitlines():
            try:
                if int(decode(line, "a metrics line", finite=False).get("step", 0)) <= step:
                    kept.append(line)
            except (ValueError, AttributeError):
                continue  # a line cut short by a kill
        self.path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        """Append ``metrics`` of ``step``."""
        if not self.enabled:
            return
        record = {"step": step, **{key: float(value) for key, value in metrics.items()}}
        with self.path.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(record, sort_keys=True) + "\n")
        if self._writer is not None:
            for key, value in metrics.items():
                self._writer.add_scalar(key, float(value), step)
            self._writer.flush()

    def draw(self, run_name: str) -> Path | None:
        """Redraw ``curves.html`` from ``metrics.jsonl`` (:mod:`.curves`); its path, if written."""
        if not self.enabled or not self.path.exists():
            return None
        try:
            rows = read_metrics(self.path)
        except ValueError as error:  # a line cut short by a kill: the curves wait for the next
            log.warning("learning curves not drawn: %s", error)
            return None
        return write_curves(rows, self.path.parent, run_name)

    def close(self) -> None:
        """Close the TensorBoard writer."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def read_metrics(path: str | Path) -> list[dict[str, float]]:
    """The records of a ``metrics.jsonl``."""
    return [record for _, record in read_json_lines(path, "checkpoint", finite=False)]
