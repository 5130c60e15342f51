"""The policy of a run, built from its sections: device, precision, model, learner.

:func:`build_policy` resolves where the learner computes and in which dtypes (float32 masters,
the compute dtype, the server's dtype; :mod:`.models` says why), loads the policy (and the KL
reference), shards both under ``torchrun`` and wraps the policy in its
:class:`~strategic_arena.train.policy.learner.Learner`. The :class:`Policy` it returns is also
what the engines are built from (it meets their ``ModelSource`` protocol).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strategic_arena.train.config.sections import (
    CorrectionConfig,
    LoraConfig,
    ModelConfig,
    PPOConfig,
    PrecisionConfig,
    RunConfig,
)
from strategic_arena.train.dist import DistInfo, shard
from strategic_arena.train.policy.learner import Learner
from strategic_arena.train.policy.models import (
    load_policy,
    load_reference,
    resolve_compute_dtype,
    resolve_device,
    resolve_dtype,
    resolve_policy_dtype,
    resolve_server_dtype,
    save_full_model,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    import torch

    from strategic_arena.asking import Sampling as SamplingSettings


@dataclass
class Policy:
    """The policy being trained, where it computes and in which dtypes.

    Attributes:
        section: the ``model`` section it was loaded by.
        lora: the ``lora`` section.
        seed: the run's seed (a tiny model's weights).
        device: where the learner computes.
        master_dtype: the dtype of the master weights and the optimizer state.
        compute_dtype: the dtype of the learner's arithmetic (and of in-process copies).
        server_dtype: the dtype a rollout server computes in.
        tokenizer: the policy's tokenizer.
        learner: the policy's learner (its model, optimizer and update).
        weights_dir: the checkpoint's weights it was loaded from (``None``: the initial model).
    """

    section: ModelConfig
    lora: LoraConfig
    seed: int
    device: Any
    master_dtype: Any
    compute_dtype: Any
    server_dtype: Any
    tokenizer: Any
    learner: Learner
    weights_dir: Path | None

    @property
    def name(self) -> str:
        """The model's hub id or directory, or ``tiny``."""
        return self.section.name

    @property
    def trust_remote_code(self) -> bool:
        """Whether the model's own code may run."""
        return self.section.trust_remote_code

    @property
    def model(self) -> Any:
        """The learner's trainable module."""
        return self.learner.model

    def full_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """The full model's weights (LoRA merged; a collective under FSDP)."""
        return self.learner.full_weights()

    def inference_copy(self) -> Any:
        """A frozen copy of the policy as loaded, in the compute dtype (an in-process engine's)."""
        copy = load_policy(
            self.section,
            self.lora,
            self.seed,
            self.tokenizer,
            self.device,
            self.compute_dtype,
            self.weights_dir,
        )
        copy.eval()
        copy.requires_grad_(False)
        return copy

    def save_full(self, weights: dict[str, Any], path: str | Path) -> None:
        """``weights`` as a plain transformers directory (no adapters) with the tokenizer."""
        save_full_model(self.learner.model, self.tokenizer, weights, path)

    def context_length(self, budget: int) -> int:
        """``budget`` tokens, capped by the model's position limit."""
        limit = getattr(self.learner.model.config, "max_position_embeddings", None)
        return min(budget, int(limit)) if limit else budget


def build_policy(
    model: ModelConfig,
    precision: PrecisionConfig,
    lora: LoraConfig,
    ppo: PPOConfig,
    correction: CorrectionConfig,
    sampling: SamplingSettings,
    run: RunConfig,
    tokenizer: Any,
    *,
    world: DistInfo,
    gpu: int,
    weights_dir: Path | None,
) -> Policy:
    """Load the policy of a run and its learner (see the module docstring).

    Args:
        model: the ``model`` section.
        precision: the ``precision`` section.
        lora: the ``lora`` section.
        ppo: the ``ppo`` section (the learner's; its KL coefficient decides the reference).
        correction: the ``correction`` section (the learner's).
        sampling: the training sampling (the log-probs' temperature, the response budget).
        run: the ``run`` section (its seed and steps).
        tokenizer: the policy's tokenizer.
        world: this process's place among the ranks (FSDP under ``torchrun``).
        gpu: this rank's CUDA device index.
        weights_dir: a checkpoint's ``policy/`` to load instead of the initial model.
    """
    device = resolve_device(model, gpu)
    master = resolve_dtype(precision, ppo.lr)
    compute = resolve_compute_dtype(precision.compute_dtype, device)
    dtype = resolve_policy_dtype(precision, lora, master, compute)
    module = load_policy(model, lora, run.seed, tokenizer, device, dtype, weights_dir)
    reference = load_reference(model, lora, ppo.kl_coef, run.seed, tokenizer, device, compute)
    if world.distributed:
        if lora.rank > 0:
            raise ValueError("LoRA under FSDP is not supported; use one process for LoRA")
        module = shard(module, world, param_dtype=compute)
        if reference is not None:
            reference = shard(reference, world, param_dtype=compute)
    learner = Learner.for_run(
        ppo,
        correction,
        module,
        sampling=sampling,
        steps=run.steps,
        pad_id=int(tokenizer.pad_token_id),
        reference=reference,
        rank=world.rank,
        world_size=world.world_size,
        compute_dtype=compute,
    )
    return Policy(
        section=model,
        lora=lora,
        seed=run.seed,
        device=device,
        master_dtype=master,
        compute_dtype=compute,
        server_dtype=resolve_server_dtype(precision, compute),
        tokenizer=tokenizer,
        learner=learner,
        weights_dir=weights_dir,
    )
