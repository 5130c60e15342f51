"""What a training run tells its user: evaluation tables, the closing summary, the next commands.

A run logs its steps to stderr (``logging``) and its metrics to ``metrics.jsonl``; what a person
reads at the terminal comes from here, on stdout:

* :func:`eval_table` -- after every evaluation, one row per game and opponent (both seats):
  games, mean return, win rate, invalid-answer rate;
* :func:`run_summary` -- at the end (finished, stopped, or found already finished): where the
  checkpoint, the metrics and the evaluation store are, and the commands to run next
  (``strategic-arena report``, ``publish``, and ``eval`` of the checkpoint through
  ``vllm serve``);
* :func:`finished_checkpoint` -- whether ``resume`` would continue from a checkpoint that
  already holds every step, so a rerun says so instead of pretending to resume;
* :func:`train_and_report` -- ``strategic-arena train`` after its config is loaded: the
  checks above, the run, the summary, and one ``error:`` line (no traceback) for what a user
  can fix.

Names that come from endpoints or the store go through :func:`~strategic_arena.printable.
printable_line` (terminal-safe). torch is imported only when a run starts.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from strategic_arena.printable import printable_line

if TYPE_CHECKING:
    from strategic_arena.train.config import TrainConfig
    from strategic_arena.train.evaluation import Evaluation

_STEP = re.compile(r"^step-(\d+)$")


def eval_table(evaluation: Evaluation) -> str:
    """The evaluation as a table: one row per game and opponent, both seats together."""
    rows = [row for row in evaluation.rows if row.seat is None]
    head = (
        f"evaluation at step {evaluation.step} (store {evaluation.db}, "
        f"run {printable_line(evaluation.run)})"
    )
    if not rows:
        return head + "\n  no games scored"
    table: list[Sequence[str]] = [("game", "opponent", "games", "return", "win rate", "invalid")]
    for row in rows:
        win = "-" if row.wins is None or not row.games else f"{row.wins / row.games:.1%}"
        table.append(
            (
                row.env_id,
                printable_line(row.opponent, limit=60),
                str(row.games),
                f"{row.mean_return:+.3f}",
                win,
                f"{row.invalid_rate:.1%}",
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = [head]
    for line in table:
        cells = [
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return "\n".join(lines)


def missing_model(cfg: TrainConfig) -> str | None:
    """Why the model or tokenizer cannot load, when a local path names no directory.

    A value starting with ``/``, ``.`` or ``~`` is a path (a hub id never does); anything else
    is left to transformers. Not part of :meth:`TrainConfig.validate`: a shipped config may
    name a model a machine has not downloaded yet.
    """
    for name, value in (("model", cfg.model), ("tokenizer", cfg.tokenizer)):
        local = value is not None and value.startswith(("/", ".", "~"))
        if local and value is not None and not Path(value).expanduser().is_dir():
            return f"{name}: no model directory at {value} (download it, or fix the path)"
    return None


def checkpoint_step(path: Path) -> int | None:
    """The step of a checkpoint directory named ``step-NNNNNN`` (``None``: another name)."""
    match = _STEP.match(path.name)
    return int(match.group(1)) if match else None


def finished_checkpoint(cfg: TrainConfig) -> Path | None:
    """The checkpoint ``resume`` would continue from, when it already holds ``steps`` steps."""
    from strategic_arena.train.checkpoint import latest_checkpoint

    if cfg.resume == "never":
        return None
    path = latest_checkpoint(cfg.output_dir) if cfg.resume == "auto" else Path(cfg.resume)
    if path is None:
        return None
    step = checkpoint_step(path)
    return path if step is not None and step >= cfg.steps else None


def run_summary(
    cfg: TrainConfig,
    steps: int,
    checkpoint: Path | None,
    *,
    already: bool = False,
) -> str:
    """Where the run's outputs are and what to run next (see the module docstring).

    Args:
        cfg: the run's config.
        steps: the completed steps.
        checkpoint: the newest checkpoint (``None``: none written).
        already: the run had finished before this invocation (nothing was trained now).
    """
    from strategic_arena.train.evaluation import eval_db

    output = Path(cfg.output_dir)
    if already:
        head = (
            f"run {cfg.run_name!r} had already finished: step {steps} of {cfg.steps}; nothing "
            f"to do (raise steps, or set resume=never or another output_dir to start again)"
        )
    elif steps >= cfg.steps:
        head = f"run {cfg.run_name!r} finished: step {steps} of {cfg.steps}"
    else:
        head = (
            f"run {cfg.run_name!r} stopped at step {steps} of {cfg.steps}; "
            "rerun the same command to resume"
        )
    lines = [head]
    if checkpoint is not None:
        lines.append(f"  checkpoint   {checkpoint}  (model: {checkpoint / 'policy'})")
    metrics = output / "metrics.jsonl"
    if metrics.exists():
        lines.append(f"  metrics      {metrics}")
    db = eval_db(cfg)
    evaluated = bool(cfg.eval_opponents) and db.exists()
    if evaluated:
        lines.append(f"  evaluations  {db}  (runs {cfg.run_name}/eval/step-NNNNNN)")
    commands = _next_commands(cfg, checkpoint, db if evaluated else None, steps)
    if commands:
        lines.append("next:")
        lines += [f"  {command}" for command in commands]
    return "\n".join(lines)


def _next_commands(
    cfg: TrainConfig, checkpoint: Path | None, db: Path | None, steps: int
) -> list[str]:
    """Commands that read the evaluations and evaluate the checkpoint through a vLLM server."""
    quote = shlex.quote
    commands = []
    if db is not None:
        commands += [
            f"strategic-arena report --db {quote(str(db))}",
            f"strategic-arena publish --db {quote(str(db))} "
            f"--out {quote(str(Path(cfg.output_dir) / 'leaderboard'))}",
        ]
    if checkpoint is not None:
        served = f"{cfg.run_name}-step-{steps}"
        commands.append(
            f"vllm serve {quote(str(checkpoint / 'policy'))} --served-model-name "
            f"{quote(served)} --port 8000   # in the vLLM venv (make vllm), another terminal"
        )
        evaluate = [
            "strategic-arena eval --base-url http://127.0.0.1:8000/v1",
            f"--model {quote(served)}",
            f"--envs {' '.join(quote(game) for game in cfg.games)}",
            f"--style {cfg.style}",
        ]
        specs = sorted(
            {
                entry
                for entries in cfg.eval_opponents.values()
                for entry in entries
                if isinstance(entry, str) and not entry.startswith("checkpoint:")
            }
        )
        if specs:
            evaluate.append(f"--opponents {' '.join(quote(spec) for spec in specs)}")
        if not cfg.strict:
            evaluate.append("--lenient")
        if cfg.include_history:
            evaluate.append("--history")
        if cfg.shuffle_actions:
            evaluate.append("--shuffle-actions")
        commands.append(" ".join(evaluate))
    return commands


def train_and_report(cfg: TrainConfig) -> int:
    """Train ``cfg`` as ``strategic-arena train`` does; returns the exit status.

    0: finished (or had already finished); 1: a vLLM server failed; 2: a problem the user can
    fix before anything runs (a missing model, unusable CUDA, a layout that cannot work, a
    missing extra); 130: stopped by Ctrl-C. Each error is one ``strategic-arena train: error:``
    line on stderr.
    """
    from strategic_arena._extras import MissingExtraError
    from strategic_arena.train.checkpoint import latest_checkpoint
    from strategic_arena.train.placement import PlacementError
    from strategic_arena.train.vllm_server import VLLMServerError

    def error(message: str) -> None:
        print(f"strategic-arena train: error: {message}", file=sys.stderr)

    missing = missing_model(cfg)
    if missing is not None:
        error(missing)
        return 2
    done = finished_checkpoint(cfg)
    if done is not None:  # nothing to train: say so instead of "resumed ... at step N"
        if os.environ.get("RANK", "0") == "0":
            print(run_summary(cfg, checkpoint_step(done) or cfg.steps, done, already=True))
        return 0
    try:
        from transformers.utils import logging as transformers_logging

        from strategic_arena.train.trainer import Trainer  # torch: the [train] extra

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        trainer = Trainer(cfg)
    except (MissingExtraError, ImportError, PlacementError) as problem:
        error(str(problem))
        return 2
    except OSError as problem:  # a model or tokenizer that cannot be found or read
        lines = str(problem).strip().splitlines()
        error(f"cannot load {cfg.model!r}: {printable_line(lines[0] if lines else '')}")
        return 2
    except VLLMServerError as problem:
        error(str(problem))
        return 1
    finished = False
    try:
        steps = trainer.train()
        finished = True
    except VLLMServerError as problem:  # the server died or failed mid-run: no traceback
        error(str(problem))
        return 1
    finally:  # stops a vLLM server the trainer started; leaves the process group
        trainer.close(wait=finished)
    if trainer.info.main:
        print(run_summary(cfg, steps, latest_checkpoint(cfg.output_dir)), flush=True)
    return 130 if steps < cfg.steps else 0
