"""The run around the steps: when to evaluate, log, save and stop.

:func:`run_steps` trains a :class:`Steps` (the :class:`~strategic_arena.train.loop.trainer.Trainer`)
until ``run.steps``: after each step the collapse check, the evaluations that are due (their
metrics join the step's row), the ``metrics.jsonl`` row when it is due, and the checkpoint every
``run.checkpoint_every``. Ctrl-C (:mod:`strategic_arena.train.loop.interrupt`) during the step's
rollouts (in one process) drops the step; otherwise the step is finished first; either way the
last completed step is saved.

The main rank shows a progress line on stderr as ``eval`` does (step of steps, seconds per step,
ETA) and redraws the learning curves (:mod:`.curves`, ``curves.html`` beside
``metrics.jsonl``) at each checkpoint and at the end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from strategic_arena.arena.runner import Progress
from strategic_arena.train.algo.collapse import CollapseDetector
from strategic_arena.train.config import TrainConfig
from strategic_arena.train.dist import DistInfo, all_gather_objects
from strategic_arena.train.loop.interrupt import StopRequest
from strategic_arena.train.loop.metrics import MetricsLogger
from strategic_arena.train.loop.step_metrics import brief

log = logging.getLogger("strategic_arena.train")

#: Called after each step with its number (1-based) and metrics.
OnStep = Callable[[int, dict[str, float]], None]


class Steps(Protocol):
    """What :func:`run_steps` drives: a trainer's step, evaluations and checkpoints."""

    cfg: TrainConfig
    step: int
    saved_step: int
    info: DistInfo
    metrics: MetricsLogger
    collapse: CollapseDetector
    stop: StopRequest

    def train_step(self) -> dict[str, float]:
        """One step; its metrics (``step`` advances by one)."""
        ...

    def evaluate(self) -> dict[str, float]:
        """The evaluation against fixed opponents; its metrics."""
        ...

    def evaluate_transfer(self) -> dict[str, float]:
        """The transfer benchmarks; their metrics."""
        ...

    def save_checkpoint(self) -> Path | None:
        """The checkpoint of the current step (``saved_step`` becomes ``step``)."""
        ...


def run_steps(steps: Steps, on_step: OnStep | None = None) -> int:
    """Train ``steps`` until ``run.steps`` or Ctrl-C; returns the number of completed steps."""
    cfg, stop = steps.cfg, steps.stop
    progress = (
        Progress(
            cfg.run.steps,
            steps.step,
            label=cfg.run.name,
            unit="steps",
            seconds_per="step",
            count_errors=False,
        )
        if steps.info.main
        else None
    )

    def droppable() -> bool:  # the step's games are being played, in one process
        return stop.stage == "generate" and not steps.info.distributed

    with stop.handling_ctrl_c(droppable):
        try:
            if steps.step == 0:
                log_start(steps)
            while steps.step < cfg.run.steps and not _stopping(stop, steps.info):
                metrics = steps.train_step()
                after_step(steps, metrics)
                if progress is not None:
                    progress.update()
                if on_step is not None:
                    on_step(steps.step, metrics)
                if cfg.run.checkpoint_every and steps.step % cfg.run.checkpoint_every == 0:
                    steps.save_checkpoint()
                    steps.metrics.draw(cfg.run.name)
        except KeyboardInterrupt:
            log.warning("interrupted during %s: saving step %d", stop.stage, steps.step)
            stop.requested = True
        if steps.step != steps.saved_step:
            steps.save_checkpoint()
    if progress is not None:
        progress.update(final=True)
    steps.metrics.draw(cfg.run.name)
    steps.metrics.close()
    return steps.step


def log_start(steps: Steps) -> None:
    """The starting model's evaluations, logged as step 0: the "before" rows.

    ``eval.at_start`` plays the arena's opponents, ``transfer.at_start`` asks the benchmarks;
    nothing happens when neither is asked for.
    """
    cfg = steps.cfg
    metrics: dict[str, float] = {}
    if cfg.eval.at_start:
        metrics.update(steps.evaluate())
    if cfg.transfer is not None and cfg.transfer.at_start:
        metrics.update(steps.evaluate_transfer())
    if metrics:
        steps.metrics.log(0, metrics)


def after_step(steps: Steps, metrics: dict[str, float]) -> None:
    """A step's collapse check, due evaluations (their metrics join ``metrics``) and row."""
    cfg, step = steps.cfg, steps.step
    warning = steps.collapse.check(step, metrics)
    if warning is not None and steps.info.main:  # loud: where a person reads
        print(warning, flush=True)
        log.warning("%s", warning)
    last = step == cfg.run.steps
    evaluated = bool(cfg.eval.every) and (step % cfg.eval.every == 0 or last)
    if evaluated:
        metrics.update(steps.evaluate())
    if transfer_due(cfg, step):
        evaluated = True  # logged with this step's metrics
        metrics.update(steps.evaluate_transfer())
    if evaluated or step % cfg.run.log_every == 0 or last:
        steps.metrics.log(step, metrics)
        if steps.info.main:
            log.info("step %d: %s", step, brief(metrics))


def transfer_due(cfg: TrainConfig, step: int) -> bool:
    """Whether the transfer evaluation runs after ``step`` (every ``every``, and the last)."""
    section = cfg.transfer
    if section is None:
        return False
    return step == cfg.run.steps or bool(section.every and step % section.every == 0)


def _stopping(stop: StopRequest, info: DistInfo) -> bool:
    """Whether Ctrl-C was pressed (on any rank: every rank stops after the same step)."""
    if info.distributed:
        stop.requested = any(all_gather_objects(stop.requested, info))
    return stop.requested
