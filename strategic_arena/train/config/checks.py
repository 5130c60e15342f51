"""Rules that span config sections, one small named check each.

A section checks its own values (``problems()``); what only two sections together can say is
here. Each check takes the whole config, returns its problems (empty when the rule holds) and
is listed in :data:`CHECKS`, which :func:`validate` runs in order after every section's own
``problems()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from strategic_arena.train.config.policy_checks import policies_fit
from strategic_arena.train.config.schema import TrainConfig


def training_samples(cfg: TrainConfig) -> list[str]:
    """Training samples at a temperature above 0 with a response budget (sampling x trainer)."""
    problems = []
    temperature = cfg.sampling.temperature
    if temperature is None or temperature <= 0:
        problems.append("sampling.temperature must be > 0 in training (0 is greedy: eval only)")
    if cfg.sampling.max_tokens is None:
        problems.append("sampling.max_tokens must be set in training (the response budget)")
    return problems


def prompt_set_loads(cfg: TrainConfig) -> list[str]:
    """The answer section's prompt set is a folder the package can read (answer x files)."""
    try:
        cfg.answer.prompt_set()
    except ValueError as error:
        return [f"answer.prompts: {error}"]
    return []


def trainer_answers_forfeit(cfg: TrainConfig) -> list[str]:
    """The trainer's games end at an invalid answer (MARSHAL's protocol; answer x trainer)."""
    if cfg.answer.policy == "forfeit":
        return []
    return [
        f"answer.policy: {cfg.answer.policy!r} is for the arena; training games forfeit at an "
        "invalid answer (MARSHAL's protocol): leave it forfeit"
    ]


def vllm_settings_need_vllm(cfg: TrainConfig) -> list[str]:
    """Server URLs, NCCL sync, server GPUs and sleep mode mean nothing without the vllm engine."""
    if cfg.rollout.engine == "vllm":
        return []
    problems = []
    if cfg.vllm.base_urls or cfg.vllm.weight_sync != "disk":
        problems.append("vllm.base_urls and vllm.weight_sync need rollout.engine: vllm")
    if cfg.placement.vllm_sleep_level or cfg.placement.vllm_gpus:
        problems.append(
            "placement.vllm_sleep_level and placement.vllm_gpus need rollout.engine: vllm"
        )
    return problems


def nccl_sync_has_its_own_gpus(cfg: TrainConfig) -> list[str]:
    """NCCL refuses two ranks on one GPU: a started server must not share the learners' GPUs."""
    vllm, placement = cfg.vllm, cfg.placement
    separate = placement.vllm_gpus and not set(placement.vllm_gpus) & set(placement.learner_gpus)
    if (
        cfg.rollout.engine != "vllm"
        or vllm.weight_sync != "nccl"
        or vllm.base_urls
        or "CUDA_VISIBLE_DEVICES" in vllm.server_env
        or separate
    ):
        return []
    return [
        "vllm.weight_sync: nccl with a server the trainer starts needs placement.vllm_gpus "
        "(with placement.learner_gpus) or vllm.server_env.CUDA_VISIBLE_DEVICES naming GPUs the "
        "learners do not use (NCCL refuses two ranks on one GPU)"
    ]


def server_gpus_fit_servers(cfg: TrainConfig) -> list[str]:
    """Server GPUs are for servers the trainer starts, in whole tensor-parallel groups."""
    gpus, tp = cfg.placement.vllm_gpus, cfg.vllm.tensor_parallel_size
    problems = []
    if gpus and cfg.vllm.base_urls:
        problems.append(
            "placement.vllm_gpus places servers the trainer starts: not with vllm.base_urls"
        )
    if tp >= 1 and len(gpus) % tp:
        problems.append(
            f"placement.vllm_gpus ({len(gpus)} GPUs) must split into servers of "
            f"vllm.tensor_parallel_size ({tp}) GPUs"
        )
    return problems


def server_starts_before_ranks_time_out(cfg: TrainConfig) -> list[str]:
    """Under torchrun the other ranks wait for rank 0's server: it must start in time."""
    startup, timeout = cfg.vllm.startup_timeout_s, cfg.placement.dist_timeout_s
    if cfg.rollout.engine != "vllm" or cfg.vllm.base_urls or startup < timeout or timeout <= 0:
        return []
    return [
        f"vllm.startup_timeout_s ({startup:g}) must be below placement.dist_timeout_s "
        f"({timeout:g}): under torchrun the other ranks wait for rank 0's server"
    ]


def correction_has_learner_logprobs(cfg: TrainConfig) -> list[str]:
    """The importance ratio needs the learner's own old log-probs, not the engine's."""
    if cfg.correction.mode == "always" and cfg.ppo.old_logprobs == "engine":
        return [
            "correction.mode: always needs the learner's old log-probs "
            "(ppo.old_logprobs: auto or learner), not the engine's"
        ]
    return []


def sequence_ratio_without_truncation(cfg: TrainConfig) -> list[str]:
    """A per-response ratio needs untruncated sampling (correction x sampling).

    Under top-k / top-p each token's ratio is the kept mass (below 1), and a response's
    weight, their product, vanishes over a long answer.
    """
    top_k, top_p = cfg.sampling.top_k, cfg.sampling.top_p
    truncated = (top_k is not None and top_k > 0) or (top_p is not None and top_p < 1)
    if cfg.correction.is_level != "sequence" or not truncated:
        return []
    return [
        f"correction.is_level: sequence with sampling.top_k {top_k} / sampling.top_p {top_p}: "
        "under truncated sampling each token's ratio is the kept mass (< 1), and a response's "
        "weight, their product, vanishes (0.99^2000 ~ 2e-9); use correction.is_level: token, "
        "or sample without truncation (sampling.top_k: 0, sampling.top_p: 1)"
    ]


def staleness_fits_the_loop(cfg: TrainConfig) -> list[str]:
    """Asynchronous rollouts need a server that stays awake and no bank (not supported yet)."""
    if cfg.rollout.max_staleness <= 0:
        return []
    problems = []
    if cfg.bank is not None:
        problems.append(
            "rollout.max_staleness >= 1 with an episode bank is not supported yet (the bank "
            "plays its extra rounds in the learner's step); use one or the other"
        )
    if cfg.placement.vllm_sleep_level > 0:
        problems.append(
            "rollout.max_staleness >= 1 generates while the learner trains: a server put to "
            "sleep around updates (placement.vllm_sleep_level) cannot; use one or the other"
        )
    return problems


def reward_definitions_exist(cfg: TrainConfig) -> list[str]:
    """``rewards.definitions`` names registered reward definitions.

    A game the run does not train on may keep its entry (``--set games.ids=[...]`` narrows a
    recipe).
    """
    from strategic_arena.rl.definitions import check_definitions  # the games: OpenSpiel

    return check_definitions(cfg.rewards)


def past_checkpoints_are_kept(cfg: TrainConfig) -> list[str]:
    """The checkpoints ``eval.past_checkpoints`` plays exist when it plays them (eval x run).

    At an evaluation of step s (a multiple of eval.every, before step s's own checkpoint is
    written) the checkpoint of step s - k must have been written (s - k a multiple of
    run.checkpoint_every) and still be kept (k <= keep_checkpoints * checkpoint_every).
    """
    lags, every, kept = (
        cfg.eval.past_checkpoints,
        cfg.run.checkpoint_every,
        cfg.run.keep_checkpoints,
    )
    if not lags:
        return []
    if not every or not cfg.eval.every:
        return ["eval.past_checkpoints needs run.checkpoint_every and eval.every"]
    problems = []
    if cfg.eval.every % every or any(lag % every for lag in lags):
        problems.append(
            "eval.past_checkpoints and eval.every must be multiples of run.checkpoint_every "
            f"({every}): the checkpoint of step s - k must have been written"
        )
    if max(lags) > kept * every:
        problems.append(
            f"eval.past_checkpoints: a lag of {max(lags)} steps needs run.keep_checkpoints >= "
            f"{-(-max(lags) // every)} (checkpoints every {every} steps)"
        )
    return problems


#: Every cross-section rule, in the order their problems are reported.
CHECKS: tuple[Callable[[TrainConfig], list[str]], ...] = (
    training_samples,
    prompt_set_loads,
    trainer_answers_forfeit,
    vllm_settings_need_vllm,
    nccl_sync_has_its_own_gpus,
    server_gpus_fit_servers,
    server_starts_before_ranks_time_out,
    correction_has_learner_logprobs,
    sequence_ratio_without_truncation,
    staleness_fits_the_loop,
    past_checkpoints_are_kept,
    policies_fit,
    reward_definitions_exist,
)


def problems(cfg: TrainConfig) -> list[str]:
    """Every section's own problems, then those of the cross-section rules."""
    found: list[str] = []
    for item in dataclasses.fields(cfg):
        own = getattr(getattr(cfg, item.name), "problems", None)
        if callable(own):
            found += own()
    for check in CHECKS:
        found += check(cfg)
    return found


def validate(cfg: TrainConfig) -> None:
    """Check values that the types alone do not constrain.

    Raises:
        ValueError: a value out of range, or settings that contradict each other (one line).
    """
    found = problems(cfg)
    if found:
        raise ValueError("invalid training config: " + "; ".join(found))
