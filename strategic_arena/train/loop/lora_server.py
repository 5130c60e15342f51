"""The shared LoRA server of co-trained policies: started once, one adapter engine per policy.

Co-trained policies on one base model with LoRA adapters (:mod:`strategic_arena.train.loop.cotrain`)
share one vLLM server. Starting it needs the policy side (the tiny base is written out first,
built as every policy's trainer builds it; the server's dtype follows the learner's compute
dtype) and the engine side (:mod:`strategic_arena.train.engines.vllm_lora`), so it lives with
the loop that composes the two rather than in either.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from strategic_arena._extras import require
from strategic_arena.train.config import TrainConfig
from strategic_arena.train.engines.vllm_engine import VLLMServerEngine
from strategic_arena.train.engines.vllm_lora import (
    LORA_SERVER_ENV,
    AdapterEngine,
    lora_server_args,
)

log = logging.getLogger("strategic_arena.train")


def adapter_engines(
    cfg: TrainConfig, output_dir: Path
) -> tuple[VLLMServerEngine, dict[str, AdapterEngine]]:
    """Start the shared server of ``cfg.policies`` (the base model, LoRA on) and their engines.

    The server serves the run's base model (a tiny one is written out first, built as every
    policy's trainer builds it: same seed, so the same weights); each policy's adapter is
    loaded by its trainer's first sync.
    """
    from strategic_arena.train.engines.engine import stop_token_ids
    from strategic_arena.train.engines.vllm_server import VLLMServer
    from strategic_arena.train.policy.models import (
        load_base_model,
        load_tokenizer,
        resolve_compute_dtype,
        resolve_device,
        resolve_server_dtype,
    )

    tokenizer = load_tokenizer(cfg.model, cfg.games, cfg.answer)
    path = cfg.model.name
    if cfg.model.name == "tiny":  # the server loads from disk: write the tiny base once
        base: Any = load_base_model(cfg.model, cfg.run.seed, tokenizer, "cpu", _float32())
        path = str(output_dir / "engine-init")
        base.save_pretrained(path)
        tokenizer.save_pretrained(path)
    else:  # only its generation config (its EOS ids), not the weights
        transformers = require("transformers", "training")
        base = SimpleNamespace(generation_config=_generation_config(transformers, path))
    compute = resolve_compute_dtype(cfg.precision.compute_dtype, resolve_device(cfg.model))
    dtype = str(resolve_server_dtype(cfg.precision, compute)).removeprefix("torch.")
    ranks = [cfg.lora.rank if p.lora_rank is None else p.lora_rank for p in cfg.policies]
    server = VLLMServer(
        path,
        python=cfg.vllm.python,
        served_name=cfg.vllm.served_model,
        dtype=dtype,
        max_model_len=cfg.vllm.max_model_len or cfg.rollout.max_sequence_tokens,
        gpu_memory_utilization=cfg.vllm.gpu_memory_utilization,
        tensor_parallel_size=cfg.vllm.tensor_parallel_size,
        enable_prefix_caching=cfg.vllm.enable_prefix_caching,
        enforce_eager=cfg.vllm.enforce_eager,
        extra_args=[
            *cfg.vllm.server_args,
            *lora_server_args(ranks, len(cfg.policies)),
            *(["--trust-remote-code"] if cfg.model.trust_remote_code else []),
        ],
        env={**cfg.vllm.server_env, **LORA_SERVER_ENV},
        log_path=output_dir / "vllm-server.log",
        startup_timeout_s=cfg.vllm.startup_timeout_s,
    )
    output_dir.mkdir(parents=True, exist_ok=True)
    log.info("starting the shared LoRA vLLM server (log: %s)", server.log_path)
    server.start()
    shared = VLLMServerEngine(
        [server.base_url],
        cfg.vllm.served_model,
        stop_token_ids(tokenizer, base),
        servers=[server],
        timeout_s=cfg.vllm.request_timeout_s,
        max_in_flight=cfg.rollout.max_batch_size,
    )
    del base
    adapters = {
        policy.name: AdapterEngine(shared, policy.name, output_dir / "adapters")
        for policy in cfg.policies
    }
    return shared, adapters


def _generation_config(transformers: Any, path: str) -> Any:
    """The model's generation config, or ``None`` when it ships none."""
    try:
        return transformers.GenerationConfig.from_pretrained(path)
    except OSError:
        return None


def _float32() -> Any:
    """``torch.float32`` (the tiny model's dtype), imported on use."""
    import torch

    return torch.float32
