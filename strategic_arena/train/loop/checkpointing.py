"""The trainer's checkpoints: what a step's folder holds, and how a run resumes from one.

A checkpoint (:mod:`strategic_arena.train.policy.checkpoint` lays the folder out) holds the
policy's weights, the settings that serve and evaluate it as training asked it
(:func:`~strategic_arena.train.engines.serving.write_eval_settings`), and the trainer's state:
the step, the learner's optimizer and schedule, the estimator's, opponent pool's and episode
bank's state, the random generators and the config. Under ``torchrun`` the full weights and the
optimizer state are gathered onto rank 0's CPU, which alone writes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from strategic_arena.train.algo.bank import EpisodeBank
from strategic_arena.train.algo.estimators import Estimator
from strategic_arena.train.config import TrainConfig
from strategic_arena.train.dist import DistInfo
from strategic_arena.train.engines.serving import write_eval_settings
from strategic_arena.train.loop.rollout import OpponentPool
from strategic_arena.train.policy import checkpoint as ckpt
from strategic_arena.train.policy.build import Policy
from strategic_arena.train.policy.learner import Learner
from strategic_arena.train.policy.models import save_policy

log = logging.getLogger("strategic_arena.train")


def resume_path(cfg: TrainConfig) -> Path | None:
    """The checkpoint ``run.resume`` names (``auto``: the newest one; ``never``: none)."""
    if cfg.run.resume == "auto":
        return ckpt.latest_checkpoint(cfg.run.output_dir)
    if cfg.run.resume != "never":
        return Path(cfg.run.resume)
    return None


def gather_learner(learner: Learner, world: DistInfo) -> tuple[Any, dict[str, Any]]:
    """The full model state (``None`` outside FSDP: the model saves itself) and the learner's.

    Under FSDP both are gathered as full tensors onto rank 0's CPU (a collective).
    """
    if not world.distributed:
        return None, learner.state_dict()
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_model_state_dict,
        get_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    full = get_model_state_dict(learner.model, options=options)
    state = {
        "optimizer": get_optimizer_state_dict(learner.model, learner.optimizer, options=options),
        "scheduler": learner.scheduler.state_dict(),
    }
    return full, state


def restore_learner(learner: Learner, world: DistInfo, state: dict[str, Any]) -> None:
    """Put back what :func:`gather_learner` saved (every rank loads the full state)."""
    if not world.distributed:
        learner.load_state_dict(state)
        return
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        set_optimizer_state_dict,
    )

    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=False)
    set_optimizer_state_dict(learner.model, learner.optimizer, state["optimizer"], options=options)
    learner.scheduler.load_state_dict(state["scheduler"])


def write_checkpoint(
    cfg: TrainConfig,
    step: int,
    policy: Policy,
    world: DistInfo,
    parts: Mapping[str, Any],
) -> Path | None:
    """Write step ``step``'s checkpoint (rank 0 writes; every rank calls); its path on rank 0.

    Args:
        cfg: the run's config (saved with it; its sections say how to serve the checkpoint).
        step: the completed steps.
        policy: the policy (weights, tokenizer, learner, server dtype).
        world: this process's place among the ranks.
        parts: the state of the other stateful parts by name (estimator, opponent pool, bank).
    """
    full, learner_state = gather_learner(policy.learner, world)
    if not world.main:
        return None
    staging = ckpt.begin(Path(cfg.run.output_dir), step)
    save_policy(policy.model, policy.tokenizer, staging / "policy", state_dict=full)
    # How its evaluation asked it, and how to serve it so eval asks it the same way.
    write_eval_settings(
        staging,
        step,
        dtype=str(policy.server_dtype).removeprefix("torch."),
        max_model_len=cfg.vllm.max_model_len
        or policy.context_length(cfg.rollout.max_sequence_tokens),
        tokenizer=policy.tokenizer,
        run=cfg.run,
        model=cfg.model,
        answer=cfg.answer,
        sampling=cfg.sampling,
        evaluation=cfg.eval,
        transfer=cfg.transfer,
    )
    state = {"step": step, "learner": learner_state, **parts, "rng": ckpt.rng_state()}
    ckpt.save_trainer_state(staging, {**state, "config": cfg.to_dict()})
    path = ckpt.commit(staging, keep=cfg.run.keep_checkpoints)
    log.info("checkpoint saved: %s", path)
    return path


def restore(
    path: Path,
    learner: Learner,
    world: DistInfo,
    estimator: Estimator,
    pool: OpponentPool,
    bank: EpisodeBank | None,
    *,
    rae: bool = False,
) -> int:
    """Restore everything of checkpoint ``path`` but the weights; returns its step.

    The weights were loaded from ``path/policy`` with the policy. ``rae``: the estimator is
    RAE's, whose state a checkpoint from before the estimator registry keeps under its own key.
    The random generators are set last.
    """
    state = ckpt.load_trainer_state(path)
    restore_learner(learner, world, state["learner"])
    if "estimator" in state:
        estimator.load_state_dict(state["estimator"])
    elif rae:  # a checkpoint from before the registry
        estimator.load_state_dict(state["rae_baselines"])
    pool.load_state_dict(state["opponent_pool"])
    if bank is not None and "bank" in state:
        bank.load_state_dict(state["bank"])
    elif bank is not None:  # a checkpoint of a run without a bank
        log.warning("%s holds no episode bank: the bank starts empty", path)
    ckpt.set_rng_state(state["rng"])
    return int(state["step"])
