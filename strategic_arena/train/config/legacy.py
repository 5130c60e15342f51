"""The flat config keys of before the sections, and where each one lives now.

Configs written for the flat :class:`TrainConfig` (one class of every field) still load: each
flat key moves to its section's key with a ``FutureWarning`` that names the new key
(``lr`` -> ``ppo.lr``). A key that is both the name of a section and an old flat key
(``model``, ``games``) is the old form when its value is not a mapping (``model: tiny`` is
``model: {name: tiny}``). The advantage estimator's keys from before its registry
(``estimator``, ``rae_alpha``, ...) are translated the same way.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

#: Old flat key -> ``section.key``.
FLAT_KEYS: Mapping[str, str] = {
    # run, logging, checkpoints
    "run_name": "run.name",
    "output_dir": "run.output_dir",
    "seed": "run.seed",
    "steps": "run.steps",
    "resume": "run.resume",
    "log_every": "run.log_every",
    "tensorboard": "run.tensorboard",
    "checkpoint_every": "run.checkpoint_every",
    "keep_checkpoints": "run.keep_checkpoints",
    # model
    "model": "model.name",
    "tokenizer": "model.tokenizer",
    "device": "model.device",
    "torch_threads": "model.torch_threads",
    "gradient_checkpointing": "model.gradient_checkpointing",
    "trust_remote_code": "model.trust_remote_code",
    "attn_implementation": "model.attn_implementation",
    "tiny_hidden_size": "model.tiny_hidden_size",
    "tiny_layers": "model.tiny_layers",
    "tiny_heads": "model.tiny_heads",
    "tiny_vocab": "model.tiny_vocab",
    # precision
    "dtype": "precision.master_dtype",
    "compute_dtype": "precision.compute_dtype",
    "vllm_dtype": "precision.server_dtype",
    # lora
    "lora_rank": "lora.rank",
    "lora_alpha": "lora.alpha",
    "lora_dropout": "lora.dropout",
    "lora_target_modules": "lora.target_modules",
    # games and opponents
    "games": "games.ids",
    "episodes_per_game": "games.episodes_per_game",
    "opponents": "games.opponents",
    "self_play_weight": "games.self_play_weight",
    "snapshot_every": "games.snapshot_every",
    "snapshot_weight": "games.snapshot_weight",
    "max_snapshots": "games.max_snapshots",
    # how the model is asked
    "style": "answer.style",
    "require_reasoning": "answer.require_reasoning",
    "prompts": "answer.prompts",
    "strict": "answer.strict",
    "include_history": "answer.include_history",
    "shuffle_actions": "answer.shuffle_actions",
    "response_prefix": "answer.response_prefix",
    "chat_template_kwargs": "answer.chat_template_kwargs",
    # how it samples
    "temperature": "sampling.temperature",
    "top_p": "sampling.top_p",
    "top_k": "sampling.top_k",
    "max_new_tokens": "sampling.max_tokens",
    "stop": "sampling.stop",
    # rollout engine
    "engine": "rollout.engine",
    "max_sequence_tokens": "rollout.max_sequence_tokens",
    "overlong_tokens_left": "rollout.overlong_tokens_left",
    "max_concurrent_episodes": "rollout.max_concurrent_episodes",
    "max_batch_size": "rollout.max_batch_size",
    "max_staleness": "rollout.max_staleness",
    # vLLM servers
    "vllm_base_urls": "vllm.base_urls",
    "vllm_served_model": "vllm.served_model",
    "vllm_python": "vllm.python",
    "vllm_gpu_memory_utilization": "vllm.gpu_memory_utilization",
    "vllm_tensor_parallel_size": "vllm.tensor_parallel_size",
    "vllm_enable_prefix_caching": "vllm.enable_prefix_caching",
    "vllm_max_model_len": "vllm.max_model_len",
    "vllm_enforce_eager": "vllm.enforce_eager",
    "vllm_server_args": "vllm.server_args",
    "vllm_server_env": "vllm.server_env",
    "vllm_startup_timeout_s": "vllm.startup_timeout_s",
    "vllm_request_timeout_s": "vllm.request_timeout_s",
    "weight_sync": "vllm.weight_sync",
    "weight_sync_dir": "vllm.weight_sync_dir",
    # rewards
    "game_scale": "rewards.game_scale",
    "format_reward": "rewards.format_reward",
    "invalid_penalty": "rewards.invalid_penalty",
    "draw_reward": "rewards.draw_reward",
    "length_alpha": "rewards.length_alpha",
    "length_min": "rewards.length_min",
    "length_max": "rewards.length_max",
    "gate_unobserved": "rewards.gate_unobserved",
    "forfeit_other_reward": "rewards.forfeit_other_reward",
    # the advantage estimator (keys from before its registry)
    "estimator": "advantage.type",
    "role_grouping": "advantage.role_grouping",
    "rae_alpha": "advantage.alpha",
    "whiten_advantages": "advantage.whiten",
    # PPO learner
    "lr": "ppo.lr",
    "lr_schedule": "ppo.lr_schedule",
    "warmup_steps": "ppo.warmup_steps",
    "min_lr_ratio": "ppo.min_lr_ratio",
    "weight_decay": "ppo.weight_decay",
    "adam_beta1": "ppo.adam_beta1",
    "adam_beta2": "ppo.adam_beta2",
    "adam_eps": "ppo.adam_eps",
    "grad_clip": "ppo.grad_clip",
    "ppo_epochs": "ppo.epochs",
    "minibatches": "ppo.minibatches",
    "micro_batch_size": "ppo.micro_batch_size",
    "micro_batch_tokens": "ppo.micro_batch_tokens",
    "clip_eps": "ppo.clip_eps",
    "clip_eps_high": "ppo.clip_eps_high",
    "dual_clip": "ppo.dual_clip",
    "kl_coef": "ppo.kl_coef",
    "entropy_coef": "ppo.entropy_coef",
    "loss_aggregation": "ppo.loss_aggregation",
    "loss_norm_tokens": "ppo.loss_norm_tokens",
    "old_logprobs": "ppo.old_logprobs",
    "drop_zero_advantage": "ppo.drop_zero_advantage",
    # off-policy correction
    "importance_correction": "correction.mode",
    "tis_cap": "correction.tis_cap",
    "is_mask_low": "correction.is_mask_low",
    "is_mask_high": "correction.is_mask_high",
    "is_level": "correction.is_level",
    # evaluation
    "eval_every": "eval.every",
    "eval_games": "eval.games",
    "eval_opponents": "eval.opponents",
    "eval_temperature": "eval.temperature",
    "eval_top_p": "eval.top_p",
    "eval_db": "eval.db",
    # placement, distribution, memory
    "dist_timeout_s": "placement.dist_timeout_s",
    "learner_gpus": "placement.learner_gpus",
    "vllm_gpus": "placement.vllm_gpus",
    "vllm_sleep_level": "placement.vllm_sleep_level",
    "gpu_memory_gib": "placement.gpu_memory_gib",
    "memory_check": "placement.memory_check",
    "colocated_offload_optimizer": "placement.colocated_offload_optimizer",
    "colocated_wake_margin_gib": "placement.colocated_wake_margin_gib",
}

#: The old advantage keys: giving one beside an ``advantage`` section is an error.
ADVANTAGE_FLAT_KEYS = ("estimator", "role_grouping", "rae_alpha", "whiten_advantages")


def is_flat(key: str, value: Any) -> bool:
    """Whether ``key: value`` is an old flat setting (a section's name with a plain value too)."""
    return key in FLAT_KEYS and not (
        FLAT_KEYS[key].startswith(f"{key}.") and isinstance(value, Mapping)
    )


def warn_flat(keys: Sequence[str]) -> None:
    """One ``FutureWarning`` naming each old key's new place."""
    moves = ", ".join(f"{key} -> {FLAT_KEYS[key]}" for key in keys)
    warnings.warn(
        f"flat training config keys are deprecated, use the sections: {moves} "
        '(docs/training.md, "All config fields")',
        FutureWarning,
        stacklevel=4,
    )


def _advantage_moves(data: Mapping[str, Any], flat: Sequence[str]) -> dict[str, Any]:
    """The old advantage keys of ``data`` as an ``advantage`` section.

    ``estimator`` comes first (it picks the settings that apply); ``rae_alpha`` never did
    anything without ``rae`` and is dropped for other estimators.
    """
    keys = [key for key in ADVANTAGE_FLAT_KEYS if key in flat]
    if keys and "advantage" in data:
        raise ValueError(
            f"{', '.join(keys)} and advantage both set: keep only advantage (the flat keys "
            "are deprecated)"
        )
    section: dict[str, Any] = {}
    if "estimator" in keys:
        section["type"] = data["estimator"]
    for key in keys:
        if key == "rae_alpha" and section.get("type") != "rae":
            continue
        section[FLAT_KEYS[key].partition(".")[2]] = data[key]
    return section


def translate(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every old flat key moved into its section (one warning names them all).

    Raises:
        ValueError: an old key and its section's key both given, with different values.
    """
    flat = [key for key, value in data.items() if is_flat(key, value)]
    if not flat:
        return dict(data)
    warn_flat(flat)
    moved: dict[str, Any] = {k: v for k, v in data.items() if k not in flat}
    advantage = _advantage_moves(data, flat)
    if advantage:
        moved["advantage"] = advantage
    for key in flat:
        if key in ADVANTAGE_FLAT_KEYS:
            continue
        section, _, inner = FLAT_KEYS[key].partition(".")
        given = dict(moved.get(section) or {})
        if inner in given and given[inner] != data[key]:
            raise ValueError(f"{key} and {section}.{inner} both set: keep only {section}.{inner}")
        moved[section] = {**given, inner: data[key]}
    return moved
