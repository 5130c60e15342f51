r"""The learner: token-level PPO-clip on the policy's turns, AdamW, schedules, LoRA, FSDP.

The *update* stage of a training step. Every eligible learner turn is one sequence (prompt +
response); only response tokens carry loss. For token t of a response, with old log-prob
``old_logprob`` (the engine's, or the learner's own recomputed before the update), advantage A
of its turn, and the current log-prob ``logprob``:

1. ``ratio = exp(logprob - old_logprob)``;
2. clipped surrogate: ``pg = max(-A * ratio, -A * clip(ratio, 1 - clip_eps, 1 + clip_eps_high))``;
3. dual clip (Ye et al. 2020, used by MARSHAL): for A < 0, ``pg = min(pg, -A * dual_clip)``,
   so a token whose ratio exploded cannot dominate the loss;
4. optional k3 KL to the frozen initial policy (Schulman's estimator, as in GRPO/MARSHAL):
   ``kl = exp(ref - logprob) - (ref - logprob) - 1``, added as ``kl_coef * kl``;
5. optional entropy bonus (``ppo.entropy_coef``; verl's ``entropy_coeff``): ``-entropy_coef * H``
   with H the entropy of the token's whole next-token distribution, so a policy does not
   collapse onto one answer before the game's signal has had a say; ``train/entropy``
   reports H either way;
6. aggregation over a minibatch (``ppo.loss_aggregation``): ``seq-mean-token-mean`` (mean over a
   response's tokens, then over responses), ``seq-mean-token-sum-norm`` (token sum over a
   constant, then mean over responses: Dr. GRPO and SPIRAL, no length normalization), or
   ``token-mean``.

When the engine's sampler differs from the learner (vLLM), each token's ``pg`` term is
weighted by its importance correction :math:`\min(\pi_{old}/\mu, C)`, or 0 outside a band
(:mod:`strategic_arena.train.policy.importance`).

Per-token weights of the aggregation are computed for the whole minibatch before it is split
into micro-batches, so gradient accumulation gives the same gradient as one big batch; under
FSDP the counts are global and each rank's loss is scaled by the world size to undo the
gradient averaging. Ranks get equal tokens, and micro-batches sequences of similar length
(:mod:`strategic_arena.train.policy.batching`); the recomputation of the old log-probs is split over
the ranks the same way.

Precision: the weights and AdamW state stay in their master dtype (float32); forward passes run
in the compute dtype (:func:`strategic_arena.train.policy.models.compute_context`).

Log-probs are ``log_softmax(logits / temperature)`` (:func:`sequence_logprobs`), the quantity
the engines record. Sequences are left-padded so that every response ends at the last
position, which lets the model compute logits for the response positions only
(``logits_to_keep``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from strategic_arena._extras import require
from strategic_arena.rl.episode import Turn
from strategic_arena.train.config.sections import CorrectionConfig, PPOConfig
from strategic_arena.train.dist import DistInfo, all_gather_objects
from strategic_arena.train.memory import LOGIT_CHUNK_BYTES
from strategic_arena.train.policy.batching import plan_micro_batches
from strategic_arena.train.policy.importance import correct
from strategic_arena.train.policy.models import compute_context, resolve_compute_dtype
from strategic_arena.train.policy.value_head import ValueHead, value_loss
from strategic_arena.train.sampling import BatchSampling

if TYPE_CHECKING:
    import torch
    from torch import Tensor

    from strategic_arena.asking import Sampling as SamplingSettings
    from strategic_arena.train.config.sections import DType


@dataclass
class MicroBatch:
    """Left-padded tensors of a few turns.

    Attributes:
        input_ids / attention_mask / position_ids: (B, L) model inputs.
        targets: (B, R) the last R tokens (R = longest response); responses are right-aligned.
        response_mask: (B, R) 1 on response tokens.
        old_logprobs: (B, R) behaviour log-probs (0 outside responses).
        advantages: (B,) each turn's advantage.
        token_weights: (B, R) each token's weight in the minibatch loss.
        is_weights: (B, R) each token's importance-correction weight (1: none).
        value_index: (B,) position of each row's last prompt token (where a value head reads).
        old_values / value_targets: (B,) each turn's value before the update and its return
            (0 where unset; used only with a value head).
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    targets: torch.Tensor
    response_mask: torch.Tensor
    old_logprobs: torch.Tensor
    advantages: torch.Tensor
    token_weights: torch.Tensor
    is_weights: torch.Tensor
    value_index: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    value_targets: torch.Tensor | None = None


def collate(
    turns: Sequence[Turn],
    *,
    pad_id: int,
    device: torch.device,
    old_logprobs: Sequence[Sequence[float]] | None = None,
    weights: Sequence[float] | None = None,
    is_weights: Sequence[Sequence[float]] | None = None,
) -> MicroBatch:
    """Left-pad ``turns`` into a :class:`MicroBatch`.

    Args:
        turns: the turns (each with at least one response token).
        pad_id: padding token id.
        device: where the tensors go.
        old_logprobs: behaviour log-probs per turn (default: each turn's engine log-probs).
        weights: per turn, the weight of each of its tokens in the loss (default 0).
        is_weights: per turn, each token's importance-correction weight (default 1).
    """
    torch = require("torch", "the learner")
    lengths = [len(t.prompt_ids) + len(t.response_ids) for t in turns]
    width = max(lengths)
    longest = max(len(t.response_ids) for t in turns)
    batch = len(turns)
    input_ids = torch.full((batch, width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((batch, width), dtype=torch.long)
    response_mask = torch.zeros((batch, longest), dtype=torch.float32)
    old = torch.zeros((batch, longest), dtype=torch.float32)
    token_weights = torch.zeros((batch, longest), dtype=torch.float32)
    correction = torch.ones((batch, longest), dtype=torch.float32)
    for row, turn in enumerate(turns):
        sequence = [*turn.prompt_ids, *turn.response_ids]
        input_ids[row, width - len(sequence) :] = torch.tensor(sequence, dtype=torch.long)
        attention_mask[row, width - len(sequence) :] = 1
        size = len(turn.response_ids)
        response_mask[row, longest - size :] = 1.0
        behaviour = turn.logprobs if old_logprobs is None else old_logprobs[row]
        old[row, longest - size :] = torch.tensor(list(behaviour), dtype=torch.float32)
        if weights is not None:
            token_weights[row, longest - size :] = float(weights[row])
        if is_weights is not None:
            correction[row, longest - size :] = torch.tensor(
                list(is_weights[row]), dtype=torch.float32
            )
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    advantages = torch.tensor([t.advantage for t in turns], dtype=torch.float32)
    value_index = torch.tensor([width - len(t.response_ids) - 1 for t in turns], dtype=torch.long)
    old_values = torch.tensor([t.value or 0.0 for t in turns], dtype=torch.float32)
    targets = torch.tensor([t.value_target or 0.0 for t in turns], dtype=torch.float32)
    return MicroBatch(
        input_ids=input_ids.to(device),
        attention_mask=attention_mask.to(device),
        position_ids=position_ids.to(device),
        targets=input_ids[:, width - longest :].to(device),
        response_mask=response_mask.to(device),
        old_logprobs=old.to(device),
        advantages=advantages.to(device),
        token_weights=token_weights.to(device),
        is_weights=correction.to(device),
        value_index=value_index.to(device),
        old_values=old_values.to(device),
        value_targets=targets.to(device),
    )


def sequence_logprobs(model: Any, batch: MicroBatch, temperature: float = 1.0) -> torch.Tensor:
    """Log-probs (B, R) of ``batch.targets`` under ``model`` at ``temperature``."""
    logprobs, _ = sequence_logprobs_and_entropy(model, batch, temperature, entropy=None)
    return logprobs


def sequence_logprobs_and_entropy(
    model: Any, batch: MicroBatch, temperature: float = 1.0, *, entropy: bool | None = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (B, R) of ``batch.targets`` and entropies (B, R) of their distributions.

    The entropy is that of each response position's whole next-token distribution under
    ``model`` at ``temperature``. ``entropy``: ``True`` computes it with gradients (an entropy
    bonus), ``False`` without (a metric), ``None`` not at all. Only the last R + 1 positions get
    logits (``logits_to_keep``, when the model accepts it); the rest is
    :func:`token_logprobs_and_entropy`.
    """
    logprobs, entropies, _ = policy_forward(model, batch, temperature, entropy=entropy)
    return logprobs, entropies


def policy_forward(
    model: Any,
    batch: MicroBatch,
    temperature: float = 1.0,
    *,
    entropy: bool | None = False,
    value_head: ValueHead | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """:func:`sequence_logprobs_and_entropy`, and with ``value_head`` the values (B,).

    The values come from the same forward pass: the last hidden state at each row's last
    prompt token (``batch.value_index``).
    """
    longest = batch.targets.shape[1]
    inputs = {
        "input_ids": batch.input_ids,
        "attention_mask": batch.attention_mask,
        "position_ids": batch.position_ids,
        "use_cache": False,
    }
    if value_head is not None:
        inputs["output_hidden_states"] = True
    try:
        output = model(**inputs, logits_to_keep=longest + 1)
    except TypeError:  # older transformers or a model without logits_to_keep
        output = model(**inputs)
    logits = output.logits[:, -(longest + 1) : -1, :]
    logprobs, entropies = token_logprobs_and_entropy(
        logits, batch.targets, temperature, entropy=entropy
    )
    values = None
    if value_head is not None:
        assert batch.value_index is not None
        last = output.hidden_states[-1]
        rows = require("torch", "the learner").arange(last.shape[0], device=last.device)
        values = value_head(last[rows, batch.value_index])
    return logprobs, entropies, values


def token_logprobs_and_entropy(
    logits: torch.Tensor,
    targets: torch.Tensor,
    temperature: float = 1.0,
    *,
    entropy: bool | None = False,
    chunk_bytes: int = LOGIT_CHUNK_BYTES,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``log_softmax(logits / T)`` at ``targets`` (B, R) and the entropies, a chunk at a time.

    The softmax is taken in float32, over chunks of positions of at most ``chunk_bytes`` of
    float32 values. With gradients each chunk runs under activation checkpointing, so the
    backward pass recomputes it instead of keeping it: no full-vocabulary float32 tensor per
    row (1.2 GB for 2,048 positions of Qwen3's vocabulary) is held from the forward pass to
    the backward, only the model's own logits. ``entropy`` as in
    :func:`sequence_logprobs_and_entropy`.
    """
    torch = require("torch", "the learner")
    checkpoint = require("torch.utils.checkpoint", "the learner").checkpoint
    rows, length, vocab = logits.shape
    flat = logits.reshape(rows * length, vocab)
    picked = targets.reshape(rows * length)
    step = max(1, chunk_bytes // (4 * vocab))
    logprobs, entropies = [], []
    for start in range(0, rows * length, step):
        part, ids = flat[start : start + step], picked[start : start + step]
        tracked = torch.is_grad_enabled() and part.requires_grad
        if entropy and tracked:  # one function: both gradients meet in float32
            logprob, value = checkpoint(_chunk_both, part, ids, temperature, use_reentrant=False)
            entropies.append(value)
        else:
            if tracked:
                logprob = checkpoint(_chunk_logprobs, part, ids, temperature, use_reentrant=False)
            else:
                logprob = _chunk_logprobs(part, ids, temperature)
            if entropy is not None:
                with torch.no_grad():
                    entropies.append(_chunk_both(part, ids, temperature)[1])
        logprobs.append(logprob)
    result: Tensor = torch.cat(logprobs).reshape(rows, length)
    if entropy is None:
        return result, None
    return result, torch.cat(entropies).reshape(rows, length)


def _chunk_logprobs(logits: torch.Tensor, targets: torch.Tensor, temperature: float) -> Tensor:
    """``log_softmax(logits / T)`` at ``targets``, in float32 (one chunk of positions)."""
    torch = require("torch", "the learner")
    scaled = logits.float() / temperature
    picked = scaled.gather(-1, targets[:, None])[:, 0]
    result: Tensor = picked - torch.logsumexp(scaled, dim=-1)
    return result


def _chunk_both(
    logits: torch.Tensor, targets: torch.Tensor, temperature: float
) -> tuple[Tensor, Tensor]:
    """The log-probs at ``targets`` and the entropies ``log Z - sum_v p_v s_v`` (one chunk)."""
    torch = require("torch", "the learner")
    scaled = logits.float() / temperature
    normalizer = torch.logsumexp(scaled, dim=-1)
    picked = scaled.gather(-1, targets[:, None])[:, 0]
    return picked - normalizer, normalizer - (torch.softmax(scaled, dim=-1) * scaled).sum(-1)


def ppo_token_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    *,
    clip_eps: float,
    clip_eps_high: float,
    dual_clip: float | None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token clipped (and dual-clipped) policy-gradient loss; see the module docstring.

    Args:
        logprobs: (B, R) current log-probs.
        old_logprobs: (B, R) behaviour log-probs.
        advantages: (B,) or (B, R) advantages.
        clip_eps: the clip range below 1: ratios under ``1 - clip_eps`` are clipped.
        clip_eps_high: the clip range above 1: ratios over ``1 + clip_eps_high`` are clipped.
        dual_clip: the dual-clip constant c > 1, or ``None``.

    Returns:
        ``(loss, parts)``: the (B, R) loss and boolean masks ``clipped`` (the clipped term is
        the active one) and ``dual_clipped`` plus the ``ratio``.
    """
    torch = require("torch", "the learner")
    if advantages.dim() == 1:
        advantages = advantages[:, None].expand_as(logprobs)
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps_high)
    loss = torch.maximum(unclipped, clipped)
    clipped_active = clipped > unclipped
    dual_active = torch.zeros_like(clipped_active)
    if dual_clip is not None:
        bound = -advantages * dual_clip
        dual_active = (advantages < 0) & (loss > bound)
        loss = torch.where(advantages < 0, torch.minimum(loss, bound), loss)
    return loss, {"clipped": clipped_active, "dual_clipped": dual_active, "ratio": ratio}


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(policy || reference) per token (always >= 0)."""
    torch = require("torch", "the learner")
    log_ratio = ref_logprobs - logprobs
    kl: Tensor = torch.exp(log_ratio) - log_ratio - 1.0
    return kl


def token_weights(
    turns: Sequence[Turn], ppo: PPOConfig, world_size: int = 1, *, response_tokens: int = 256
) -> list[float]:
    """The loss weight of each token of each turn of one minibatch (``ppo.loss_aggregation``).

    ``world_size`` scales the weights up to undo the gradient averaging of data parallelism
    (the counts are over the whole minibatch, every rank's turns together);
    ``response_tokens`` (the response budget) is the norm when ``ppo.loss_norm_tokens`` is
    unset.
    """
    sequences = len(turns)
    if sequences == 0:
        return []
    if ppo.loss_aggregation == "token-mean":
        total = sum(len(t.response_ids) for t in turns)
        return [world_size / total] * sequences
    if ppo.loss_aggregation == "seq-mean-token-sum-norm":
        constant = ppo.loss_norm_tokens or response_tokens
        return [world_size / (sequences * constant)] * sequences
    return [world_size / (sequences * len(t.response_ids)) for t in turns]


def lr_factor(optimizer_step: int, ppo: PPOConfig, steps: int, steps_per_update: int) -> float:
    """Learning-rate multiplier at a 0-based optimizer step: linear warm-up, then the schedule.

    Warm-up and the cosine's length are counted in training steps and converted with
    ``steps_per_update`` optimizer steps per training step, of ``steps`` training steps.
    """
    warmup = ppo.warmup_steps * steps_per_update
    total = steps * steps_per_update
    if warmup and optimizer_step < warmup:
        return (optimizer_step + 1) / warmup
    if ppo.lr_schedule == "constant":
        return 1.0
    progress = min(1.0, (optimizer_step - warmup) / max(1, total - warmup))
    cosine = 0.5 * (1.0 + math.cos(math.pi * progress))
    return ppo.min_lr_ratio + (1.0 - ppo.min_lr_ratio) * cosine


def fused_adamw_available(device: torch.device) -> bool:
    """Whether this torch has a fused AdamW kernel for ``device`` (it refuses at construction)."""
    torch = require("torch", "the learner")
    probe = torch.nn.Parameter(torch.zeros(1, device=device))
    try:
        torch.optim.AdamW([probe], fused=True)
    except (RuntimeError, ValueError):
        return False
    return True


class Learner:
    """The trainable policy, its optimizer and schedule, and the PPO update.

    Args:
        ppo: the learner's settings (optimizer, schedule, loss).
        correction: the importance correction's settings.
        model: the policy (possibly wrapped by peft or sharded by FSDP), in train mode.
        pad_id: padding token id.
        reference: a frozen copy of the initial policy for the KL term (``None``: no KL, or
            LoRA, whose reference is the model with its adapters disabled).
        rank / world_size: this process's place in data parallelism.
        compute_dtype: dtype of the forward passes (``None``: ``auto`` resolved for the
            policy's device); the weights keep theirs (the master dtype).
        temperature: the sampling temperature the log-probs are taken at.
        steps: training steps of the run (the schedule's length).
        response_tokens: the response budget (the norm of ``seq-mean-token-sum-norm`` when
            ``ppo.loss_norm_tokens`` is unset).

    :meth:`for_run` takes these from the run's sections.
    """

    def __init__(
        self,
        ppo: PPOConfig,
        correction: CorrectionConfig,
        model: Any,
        *,
        pad_id: int,
        temperature: float = 1.0,
        steps: int = 1,
        response_tokens: int = 256,
        reference: Any = None,
        rank: int = 0,
        world_size: int = 1,
        compute_dtype: Any = None,
    ) -> None:
        self.torch = require("torch", "the learner")
        self.ppo, self.correction = ppo, correction
        self.temperature, self.steps, self.response_tokens = temperature, steps, response_tokens
        self.model = model
        self.pad_id = pad_id
        self.reference = reference
        self.rank = rank
        self.world_size = world_size
        self.steps_per_update = ppo.epochs * ppo.minibatches
        params = [p for p in model.parameters() if p.requires_grad]
        if not params:
            raise ValueError("the policy has no trainable parameters")
        # The fused kernel wherever torch has one for the parameters' device (CUDA; the CPU
        # since torch 2.4), FSDP2's sharded parameters included: the default multi-tensor
        # kernel allocates temporaries as large as all the weights it steps (16 GB for a 4B
        # model in float32 masters on one GPU).
        self.optimizer = self.torch.optim.AdamW(
            params,
            lr=self.ppo.lr,
            betas=(self.ppo.adam_beta1, self.ppo.adam_beta2),
            eps=self.ppo.adam_eps,
            weight_decay=self.ppo.weight_decay,
            fused=fused_adamw_available(params[0].device) or None,
        )
        self.scheduler = self.torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: lr_factor(step, ppo, steps, self.steps_per_update)
        )
        self.master_dtype = params[0].dtype
        self.compute_dtype = (
            resolve_compute_dtype("auto", self.device) if compute_dtype is None else compute_dtype
        )
        self.value_head: ValueHead | None = None
        self.model.train()

    def attach_value_head(self, *, coef: float, clip: float | None, lr: float | None) -> None:
        """Give the learner a value head (PPO's critic; :mod:`~.value_head`).

        Its loss joins every update (turns need ``value`` and ``value_target``), its optimizer
        steps with the policy's and follows the policy's schedule.
        """
        if self.world_size > 1:
            raise ValueError("a value head is not supported under FSDP; train on one process")
        ppo = self.ppo
        self.value_head = ValueHead(
            self.model,
            lr=ppo.lr if lr is None else lr,
            schedule=lambda step: lr_factor(step, ppo, self.steps, self.steps_per_update),
            coef=coef,
            clip=clip,
            betas=(ppo.adam_beta1, ppo.adam_beta2),
            eps=ppo.adam_eps,
            weight_decay=ppo.weight_decay,
        )

    def values(self, turns: Sequence[Turn]) -> list[float]:
        """The value head's estimate of each turn's prompt (no gradient)."""
        head = self.value_head
        if head is None:
            raise RuntimeError("the learner has no value head (advantage.type: ppo attaches one)")
        result: dict[int, float] = {}
        with self.torch.no_grad(), self.compute():
            for chunk in self._plan(turns) if turns else []:
                batch = collate([turns[i] for i in chunk], pad_id=self.pad_id, device=self.device)
                _, _, values = policy_forward(
                    self.model, batch, self.temperature, entropy=None, value_head=head
                )
                assert values is not None
                result.update(zip(chunk, values.tolist(), strict=True))
        return [result[index] for index in range(len(turns))]

    @classmethod
    def for_run(
        cls,
        ppo: PPOConfig,
        correction: CorrectionConfig,
        model: Any,
        *,
        sampling: SamplingSettings,
        steps: int,
        compute: DType = "auto",
        **kwargs: Any,
    ) -> Learner:
        """A learner of a run, from the sections it reads.

        ``ppo`` and ``correction`` as they are; the training ``sampling`` gives the log-probs'
        temperature and the response budget, ``steps`` the schedule's length, and ``compute``
        (``precision.compute_dtype``) the arithmetic's dtype unless ``kwargs`` name a
        ``compute_dtype``.
        """
        engine_sampling = BatchSampling.of(sampling)
        if kwargs.get("compute_dtype") is None:
            device = next(model.parameters()).device
            kwargs["compute_dtype"] = resolve_compute_dtype(compute, device)
        return cls(
            ppo,
            correction,
            model,
            temperature=engine_sampling.temperature,
            steps=steps,
            response_tokens=engine_sampling.max_new_tokens,
            **kwargs,
        )

    def compute(self) -> Any:
        """The context of a forward pass: autocast to the compute dtype when it differs."""
        return compute_context(self.device, self.compute_dtype, self.master_dtype)

    @property
    def device(self) -> torch.device:
        """Where the policy's parameters live."""
        return next(self.model.parameters()).device  # type: ignore[no-any-return]

    @property
    def uses_lora(self) -> bool:
        """Whether the policy is a peft model (reference = adapters disabled)."""
        return hasattr(self.model, "disable_adapter")

    def state_dict(self) -> dict[str, Any]:
        """Optimizer and scheduler state (the model is saved separately)."""
        from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

        state = {
            "optimizer": get_optimizer_state_dict(self.model, self.optimizer),
            "scheduler": self.scheduler.state_dict(),
        }
        if self.value_head is not None:
            state["value_head"] = self.value_head.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

        set_optimizer_state_dict(self.model, self.optimizer, state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.value_head is not None and "value_head" in state:
            self.value_head.load_state_dict(state["value_head"])

    # -- log-probs ---------------------------------------------------------------------------

    def _reference_logprobs(self, batch: MicroBatch, temperature: float) -> torch.Tensor:
        with self.torch.no_grad(), self.compute():
            if self.reference is not None:
                return sequence_logprobs(self.reference, batch, temperature)
            if self.uses_lora:
                with self.model.disable_adapter():
                    return sequence_logprobs(self.model, batch, temperature)
        raise RuntimeError("the KL term needs a reference model")

    def _plan(self, turns: Sequence[Turn]) -> list[list[int]]:
        """This rank's token-balanced micro-batches of ``turns`` (empty ones: dummy passes)."""
        sizes = [len(t.prompt_ids) + len(t.response_ids) for t in turns]
        plan = plan_micro_batches(
            sizes,
            self.world_size,
            max_rows=self.ppo.micro_batch_size,
            max_tokens=self.ppo.micro_batch_tokens,
        )
        return plan[self.rank]

    def recompute_logprobs(self, turns: Sequence[Turn]) -> list[list[float]]:
        """The current policy's log-probs of each turn's response (no gradient).

        Every rank passes the same turns and gets all of them back; each computes only its
        token-balanced share, and the shares are exchanged.
        """
        if not turns:
            return []
        mine: dict[int, list[float]] = {}
        with self.torch.no_grad(), self.compute():
            for chunk in self._plan(turns):
                rows = chunk or _shortest(turns)  # FSDP: as many passes on every rank
                batch = collate([turns[i] for i in rows], pad_id=self.pad_id, device=self.device)
                values = sequence_logprobs(self.model, batch, self.temperature)
                for row, index in enumerate(chunk):
                    size = len(turns[index].response_ids)
                    mine[index] = values[row, values.shape[1] - size :].tolist()
        shares = all_gather_objects(mine, DistInfo(self.rank, self.world_size))
        merged = {index: values for share in shares for index, values in share.items()}
        return [merged[index] for index in range(len(turns))]

    # -- the update --------------------------------------------------------------------------

    def update(
        self,
        turns: Sequence[Turn],
        rng: np.random.Generator,
        *,
        old_logprobs: Sequence[Sequence[float]] | None = None,
        correct_behaviour: bool = False,
    ) -> dict[str, float]:
        """PPO epochs over ``turns`` (every rank passes the same list); returns metrics.

        Args:
            turns: the step's trainable turns (eligible, non-empty responses), identical on
                every rank; each rank trains on its share of each minibatch.
            rng: shuffles the turns into minibatches (same seed on every rank).
            old_logprobs: the old policy's log-probs per turn (default: the engine's).
            correct_behaviour: weight each token's policy-gradient term by the importance
                correction of ``ppo.old_logprobs`` against the engine's (``correction.tis_cap``,
                ``is_mask_low/high``); needs ``ppo.old_logprobs``. Adds the ``train/is_*``
                metrics.
        """
        stats = _Stats()
        old = list(old_logprobs) if old_logprobs is not None else [t.logprobs for t in turns]
        is_weights: list[list[float]] | None = None
        is_metrics: dict[str, float] = {}
        if correct_behaviour:
            if old_logprobs is None:
                raise ValueError("the importance correction needs the learner's old log-probs")
            correction = correct(
                old,
                [t.logprobs for t in turns],
                cap=self.correction.tis_cap,
                mask_low=self.correction.is_mask_low,
                mask_high=self.correction.is_mask_high,
                level=self.correction.is_level,
            )
            is_weights, is_metrics = correction.weights, correction.metrics
        first_minibatch = True
        for _epoch in range(self.ppo.epochs):
            order = rng.permutation(len(turns)) if turns else np.zeros(0, dtype=np.int64)
            for indices in np.array_split(order, self.ppo.minibatches):
                minibatch = [turns[i] for i in indices]
                if minibatch:
                    weights = token_weights(
                        minibatch, self.ppo, self.world_size, response_tokens=self.response_tokens
                    )
                    self._accumulate(
                        minibatch,
                        [old[i] for i in indices],
                        weights,
                        None if is_weights is None else [is_weights[i] for i in indices],
                        stats,
                        measure_sync=first_minibatch,
                    )
                    first_minibatch = False
                    stats.grad_norms.append(self._optimizer_step())
                stats.lrs.append(self.scheduler.get_last_lr()[0])
                self.scheduler.step()
        if self.world_size > 1:
            stats.all_reduce()
        if self.value_head is not None:
            is_metrics["train/value_loss"] = stats.value_loss / max(1, len(stats.grad_norms))
        return {**stats.metrics(), **is_metrics}

    def _accumulate(
        self,
        minibatch: list[Turn],
        old: list[Sequence[float]],
        weights: list[float],
        is_weights: list[list[float]] | None,
        stats: _Stats,
        *,
        measure_sync: bool,
    ) -> None:
        """Forward and backward this rank's share of one minibatch, micro-batch by micro-batch."""
        torch = self.torch
        for chunk in self._plan(minibatch):
            dummy = not chunk  # FSDP needs the same number of passes on every rank
            if dummy:
                chunk = _shortest(minibatch)
            batch = collate(
                [minibatch[i] for i in chunk],
                pad_id=self.pad_id,
                device=self.device,
                old_logprobs=[old[i] for i in chunk],
                weights=[0.0 if dummy else weights[i] for i in chunk],
                is_weights=None if is_weights is None else [is_weights[i] for i in chunk],
            )
            with self.compute():
                logprobs, entropy, values = policy_forward(
                    self.model,
                    batch,
                    self.temperature,
                    entropy=self.ppo.entropy_coef > 0,
                    value_head=self.value_head,
                )
            per_token, parts = ppo_token_loss(
                logprobs,
                batch.old_logprobs,
                batch.advantages,
                clip_eps=self.ppo.clip_eps,
                clip_eps_high=self.ppo.clip_eps
                if self.ppo.clip_eps_high is None
                else self.ppo.clip_eps_high,
                dual_clip=self.ppo.dual_clip,
            )
            per_token = per_token * batch.is_weights
            kl = None
            if self.ppo.kl_coef > 0:
                ref = self._reference_logprobs(batch, self.temperature)
                # Outside the response the KL is weighted by 0, but 0 * inf is NaN: keep it
                # exactly 0 there (a prompt token can be far less likely under the reference).
                ref = torch.where(batch.response_mask > 0, ref, logprobs.detach())
                kl = k3_kl(logprobs, ref)
                per_token = per_token + self.ppo.kl_coef * kl
            assert entropy is not None  # asked for above
            if self.ppo.entropy_coef > 0:
                per_token = per_token - self.ppo.entropy_coef * entropy
            loss = (per_token * batch.token_weights).sum()
            critic = None
            if values is not None and self.value_head is not None and not dummy:
                assert batch.old_values is not None and batch.value_targets is not None
                critic = value_loss(
                    values, batch.old_values, batch.value_targets, self.value_head.clip
                ).sum() / len(minibatch)
                loss = loss + self.value_head.coef * critic
            torch.autograd.backward(loss)
            if dummy:
                continue
            mask = batch.response_mask
            with torch.no_grad():
                diff = (logprobs - batch.old_logprobs) * mask
                stats.tokens += float(mask.sum())
                stats.loss += float(loss)
                stats.clipped += float((parts["clipped"].float() * mask).sum())
                stats.dual_clipped += float((parts["dual_clipped"].float() * mask).sum())
                stats.approx_kl += float(((torch.exp(-diff) - 1 + diff) * mask).sum())
                if kl is not None:
                    stats.kl_ref += float((kl * mask).sum())
                stats.entropy += float((entropy.detach() * mask).sum())
                if critic is not None:
                    stats.value_loss += float(critic)
                if measure_sync:
                    stats.sync_tokens += float(mask.sum())
                    stats.sync_ratio += float((parts["ratio"] * mask).sum())
                    stats.sync_max_diff = max(stats.sync_max_diff, float(diff.abs().max()))

    def _optimizer_step(self) -> float:
        """Clip, step, zero; returns the gradient norm before clipping."""
        torch = self.torch
        params = [p for p in self.model.parameters() if p.requires_grad]
        max_norm = self.ppo.grad_clip if self.ppo.grad_clip > 0 else float("inf")
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        if hasattr(norm, "full_tensor"):  # a DTensor under FSDP
            norm = norm.full_tensor()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.value_head is not None:
            self.value_head.step(self.ppo.grad_clip)
        return float(norm)

    # -- weights for the engine ----------------------------------------------------------------

    def full_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """The policy's full weights as ``(Hugging Face name, tensor)``, one at a time.

        FSDP shards are gathered parameter by parameter. A LoRA model yields its base weights
        plus each adapter's delta, under the base model's names; the adapters are not merged
        in place, since merging and unmerging would perturb the base weights by round-off.
        """
        deltas = self._lora_deltas() if self.uses_lora else {}
        with self.torch.no_grad():
            for name, tensor in self.model.state_dict().items():
                if self.uses_lora:
                    if "lora_" in name or "modules_to_save" in name:
                        continue
                    name = name.removeprefix("base_model.model.").replace(".base_layer", "")
                if hasattr(tensor, "full_tensor"):
                    tensor = tensor.full_tensor()
                if name in deltas:
                    tensor = tensor + deltas[name].to(tensor.dtype)
                yield name, tensor

    def _lora_deltas(self) -> dict[str, torch.Tensor]:
        """``scale * B @ A`` of every active adapter, keyed by the base weight's name."""
        deltas: dict[str, torch.Tensor] = {}
        with self.torch.no_grad():
            for name, module in self.model.named_modules():
                if not (hasattr(module, "get_delta_weight") and hasattr(module, "lora_A")):
                    continue
                key = name.removeprefix("base_model.model.") + ".weight"
                for adapter in module.active_adapters:
                    if adapter in module.lora_A:
                        delta = module.get_delta_weight(adapter)
                        deltas[key] = deltas[key] + delta if key in deltas else delta
        return deltas


def _shortest(turns: Sequence[Turn]) -> list[int]:
    """The index of the shortest turn: the cheapest dummy pass (its loss weight is zero)."""
    return [
        min(range(len(turns)), key=lambda i: len(turns[i].prompt_ids) + len(turns[i].response_ids))
    ]


class _Stats:
    """Sums over an update, turned into ``train/...`` metrics."""

    def __init__(self) -> None:
        self.tokens = 0.0
        self.loss = 0.0
        self.clipped = 0.0
        self.dual_clipped = 0.0
        self.approx_kl = 0.0
        self.kl_ref = 0.0
        self.entropy = 0.0
        self.value_loss = 0.0
        self.sync_tokens = 0.0
        self.sync_ratio = 0.0
        self.sync_max_diff = 0.0
        self.grad_norms: list[float] = []
        self.lrs: list[float] = []

    _SUMS = (
        "tokens",
        "loss",
        "clipped",
        "dual_clipped",
        "approx_kl",
        "kl_ref",
        "entropy",
        "value_loss",
        "sync_tokens",
        "sync_ratio",
    )

    def all_reduce(self) -> None:
        """Sum the counters over every rank."""
        torch = require("torch", "the learner")
        dist = torch.distributed
        sums = torch.tensor([getattr(self, name) for name in self._SUMS], dtype=torch.float64)
        dist.all_reduce(sums)
        for name, value in zip(self._SUMS, sums.tolist(), strict=True):
            setattr(self, name, value)
        self.loss /= dist.get_world_size()  # each rank's token weights carry the world size
        peak = torch.tensor([self.sync_max_diff], dtype=torch.float64)
        dist.all_reduce(peak, op=dist.ReduceOp.MAX)
        self.sync_max_diff = float(peak[0])

    def metrics(self) -> dict[str, float]:
        """The ``train/`` metrics of the update."""
        tokens = max(self.tokens, 1.0)
        metrics = {
            "train/loss": self.loss / max(1, len(self.grad_norms)),
            "train/clip_fraction": self.clipped / tokens,
            "train/dual_clip_fraction": self.dual_clipped / tokens,
            "train/approx_kl": self.approx_kl / tokens,
            "train/kl_ref": self.kl_ref / tokens,
            "train/entropy": self.entropy / tokens,
            "train/grad_norm": float(np.mean(self.grad_norms)) if self.grad_norms else 0.0,
            "train/lr": self.lrs[-1] if self.lrs else 0.0,
            "train/optimizer_steps": float(len(self.grad_norms)),
            "train/trained_tokens": self.tokens,
        }
        if self.sync_tokens:
            metrics["train/logprob_ratio"] = self.sync_ratio / self.sync_tokens
            metrics["train/logprob_max_abs_diff"] = self.sync_max_diff
        return metrics
