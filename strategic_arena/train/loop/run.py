"""``strategic-arena train`` as a library function: checks, the run, its summary, clear errors.

:func:`train_and_report` is what the CLI calls once a config is loaded: it refuses a missing
model, says so when the run had already finished, trains, prints the closing summary
(:mod:`strategic_arena.train.loop.console`) and turns what a user can fix into one ``error:`` line
instead of a traceback. torch (through the trainer) is imported only when a run starts.
"""

from __future__ import annotations

import os
import sys

from strategic_arena._extras import MissingExtraError
from strategic_arena.door.printable import printable_line
from strategic_arena.train.config import TrainConfig
from strategic_arena.train.engines.placement import PlacementError
from strategic_arena.train.engines.vllm_server import VLLMServerError
from strategic_arena.train.loop.console import (
    checkpoint_step,
    finished_checkpoint,
    missing_model,
    run_summary,
)
from strategic_arena.train.loop.endpoint_preflight import (
    EndpointPreflightError,
    check_endpoints,
    endpoint_entries,
)
from strategic_arena.train.policy.checkpoint import latest_checkpoint


def train_and_report(cfg: TrainConfig) -> int:
    """Train ``cfg`` as ``strategic-arena train`` does; returns the exit status.

    0: finished (or had already finished); 1: a vLLM server failed; 2: a problem the user can
    fix before anything runs (a missing model, an endpoint opponent that does not answer or
    does not serve its model, unusable CUDA, a layout that cannot work, a missing extra); 130:
    stopped by Ctrl-C. Each error is one ``strategic-arena train: error:`` line on stderr.
    """

    def error(message: str) -> None:
        print(f"strategic-arena train: error: {message}", file=sys.stderr)

    missing = missing_model(cfg)
    if missing is not None:
        error(missing)
        return 2
    done = finished_checkpoint(cfg)
    if done is not None:  # nothing to train: say so instead of "resumed ... at step N"
        if os.environ.get("RANK", "0") == "0":
            print(run_summary(cfg, checkpoint_step(done) or cfg.run.steps, done, already=True))
        return 0
    try:  # endpoint opponents answer and serve their model: before any model is loaded
        check_endpoints(endpoint_entries(cfg.games, cfg.eval))
    except EndpointPreflightError as problem:
        error(str(problem))
        return 2
    try:
        from transformers.utils import logging as transformers_logging

        from strategic_arena.train.loop.trainer import Trainer  # torch: the [train] extra

        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        if cfg.policies:  # several policies trained together (MAPoRL)
            from strategic_arena.train.loop.cotrain import CoTrainer

            trainer: Trainer | CoTrainer = CoTrainer(cfg)
        else:
            trainer = Trainer(cfg)
    except (MissingExtraError, ImportError, PlacementError) as problem:
        error(str(problem))
        return 2
    except OSError as problem:  # a model or tokenizer that cannot be found or read
        lines = str(problem).strip().splitlines()
        error(f"cannot load {cfg.model.name!r}: {printable_line(lines[0] if lines else '')}")
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
        print(run_summary(cfg, steps, latest_checkpoint(cfg.run.output_dir)), flush=True)
    return 130 if steps < cfg.run.steps else 0
