"""Loading and saving the policy: device, dtype, tokenizer, LoRA, the frozen reference.

The policy is a transformers causal LM: a hub id or local directory (``model``), or ``tiny``
(:mod:`strategic_arena.train.policy.tiny`, built locally). Rules:

* **device**: ``auto`` is CUDA when available, else CPU; under ``torchrun`` each rank takes
  ``cuda:LOCAL_RANK``;
* **precision**: master weights and AdamW state in ``dtype`` (``auto``: float32 on every
  device), arithmetic in ``precision.compute_dtype`` (``auto``: bfloat16 on CUDA, float32 on CPU) --
  under ``torch.autocast`` in one process (:func:`compute_context`), through FSDP2's
  mixed-precision policy under ``torchrun``. Why: Adam's first steps move each weight by about
  ``lr``; at lr 1e-6 a bfloat16 weight of size 0.01 (spacing 6e-5 there) keeps almost none of
  that, so pure-bfloat16 training looks alive (loss, gradient norm, KL move) yet does not
  learn. The frozen KL reference only computes, so it is held in the compute dtype;
* **LoRA** (``lora_rank > 0``): adapters from ``peft`` (imported only then) on the modules
  named by ``lora.target_modules``; the reference policy of the KL term is then the same model
  with its adapters disabled, so no second copy is loaded;
* **resume**: the weights come from a checkpoint's ``policy/`` directory (a full
  ``save_pretrained`` directory, or a LoRA adapter over the configured base).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strategic_arena._extras import require
from strategic_arena.train.config.sections import DType

if TYPE_CHECKING:
    from strategic_arena.asking import Asking
    from strategic_arena.train.config.sections import (
        GamesConfig,
        LoraConfig,
        ModelConfig,
        PrecisionConfig,
    )

log = logging.getLogger("strategic_arena.train")


def resolve_device(model: ModelConfig, local_rank: int = 0) -> Any:
    """The ``torch.device`` of the learner and the engine (``model.device``)."""
    torch = require("torch", "training")
    name = model.device
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device: cuda was asked for but no CUDA device is available")
        return torch.device("cuda", local_rank)
    return torch.device(name)


def resolve_dtype(precision: PrecisionConfig, lr: float) -> Any:
    """The master dtype of weights and optimizer state (see the module docstring).

    ``auto`` is float32; a 16-bit master dtype is honoured with a warning, since updates of
    the size of a small learning rate (``lr``, named in the warning) round away in it.
    """
    torch = require("torch", "training")
    if precision.master_dtype == "auto":
        return torch.float32
    dtype = getattr(torch, precision.master_dtype)
    if dtype != torch.float32:
        log.warning(
            "dtype: %s keeps the master weights and AdamW state in %s: updates of lr %g mostly "
            "round away (use dtype: auto, float32 masters, and compute_dtype for speed)",
            precision.master_dtype,
            precision.master_dtype,
            lr,
        )
    return dtype


def resolve_compute_dtype(compute_dtype: DType, device: Any) -> Any:
    """The dtype of the learner's arithmetic (``precision.compute_dtype``).

    ``auto`` is bfloat16 on CUDA, float32 elsewhere.
    """
    torch = require("torch", "training")
    if compute_dtype != "auto":
        return getattr(torch, compute_dtype)
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def resolve_policy_dtype(
    precision: PrecisionConfig, lora: LoraConfig, master_dtype: Any, compute_dtype: Any
) -> Any:
    """The dtype the policy is loaded in: the master dtype, except a LoRA model's frozen base.

    Under LoRA with ``dtype: auto`` the base weights never change, so they are held in the
    compute dtype (half the memory on a GPU); peft keeps the adapters, the only trained
    weights, in float32 (its ``autocast_adapter_dtype``).
    """
    if lora.rank > 0 and precision.master_dtype == "auto":
        return compute_dtype
    return master_dtype


def resolve_server_dtype(precision: PrecisionConfig, compute_dtype: Any) -> Any:
    """The rollout server's dtype (``precision.server_dtype``; ``auto``: the compute dtype)."""
    torch = require("torch", "training")
    return (
        compute_dtype
        if precision.server_dtype == "auto"
        else getattr(torch, precision.server_dtype)
    )


def compute_context(device: Any, compute_dtype: Any, master_dtype: Any) -> Any:
    """Forward passes in the compute dtype over master-dtype weights (autocast, or a no-op).

    Autocast casts each matrix product's inputs (weights included) to the compute dtype and
    keeps reductions such as softmax in float32; gradients flow back to the float32 masters.
    """
    torch = require("torch", "training")
    # autocast only lowers precision: float32 compute over 16-bit weights runs as the weights
    if compute_dtype == master_dtype or compute_dtype == torch.float32:
        return contextlib.nullcontext()
    # No cast cache: it would keep a compute-dtype copy of every weight until the forward pass
    # ends, and saves no work here (each weight is used once a pass, a tied embedding twice).
    return torch.autocast(device_type=device.type, dtype=compute_dtype, cache_enabled=False)


def load_tokenizer(
    model: ModelConfig,
    games: GamesConfig,
    answer: Asking,
    weights_dir: str | Path | None = None,
) -> Any:
    """The policy's tokenizer (from a checkpoint, the tiny builder, or the hub / a directory).

    A tiny model's word-level vocabulary is built from the prompts of ``games`` asked as
    ``answer`` asks. The padding side is set to left (prompts are left-padded for batched
    generation) and a missing pad token becomes the EOS token.
    """
    transformers = require("transformers", "training")
    if weights_dir is not None:
        tokenizer = load_saved_tokenizer(weights_dir, tiny=model.name == "tiny")
    elif model.name == "tiny":
        from strategic_arena.train.policy.tiny import build_tokenizer

        tokenizer = build_tokenizer(games.ids, model.tiny_vocab, style=answer.style)
    else:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            model.tokenizer or model.name, trust_remote_code=model.trust_remote_code
        )
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if getattr(tokenizer, "chat_template", None) is None:
        raise ValueError(
            f"the tokenizer of {model.name!r} has no chat template; prompts need one "
            "(use an instruct model or set tokenizer to one with a template)"
        )
    return tokenizer


def load_saved_tokenizer(path: str | Path, *, tiny: bool = False) -> Any:
    """A tokenizer saved next to a model (checkpoint, snapshot).

    The tiny word-level tokenizer is read back exactly as saved (``tokenizer.json``):
    ``AutoTokenizer`` would pick the tokenizer class of the model type (Qwen2's byte-level BPE)
    and rebuild it around the vocabulary, changing how text is split.
    """
    transformers = require("transformers", "training")
    if tiny:
        return transformers.PreTrainedTokenizerFast.from_pretrained(str(path))
    return transformers.AutoTokenizer.from_pretrained(str(path))


def _from_pretrained(model: ModelConfig, path: str, dtype: Any) -> Any:
    transformers = require("transformers", "training")
    kwargs: dict[str, Any] = {"trust_remote_code": model.trust_remote_code}
    if model.attn_implementation is not None:
        kwargs["attn_implementation"] = model.attn_implementation
    try:
        return transformers.AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **kwargs)
    except TypeError:  # transformers before 4.56 calls it torch_dtype
        return transformers.AutoModelForCausalLM.from_pretrained(path, torch_dtype=dtype, **kwargs)


def load_base_model(
    section: ModelConfig, seed: int, tokenizer: Any, device: Any, dtype: Any
) -> Any:
    """The configured initial policy, without adapters (also the KL reference).

    A tiny model's weights are drawn from ``seed`` (the run's): every build is the same model.
    """
    if section.name == "tiny":
        from strategic_arena.train.policy.tiny import build_model

        model: Any = build_model(
            tokenizer,
            hidden_size=section.tiny_hidden_size,
            layers=section.tiny_layers,
            heads=section.tiny_heads,
            seed=seed,
            stop_at_answers=section.tiny_vocab == "answers",
        )
        model = model.to(dtype=dtype)
    else:
        model = _from_pretrained(section, section.name, dtype)
    return model.to(device)


def load_policy(
    section: ModelConfig,
    lora: LoraConfig,
    seed: int,
    tokenizer: Any,
    device: Any,
    dtype: Any,
    weights_dir: str | Path | None,
) -> Any:
    """The trainable policy: the initial model or a checkpoint's, with LoRA adapters if asked."""
    if lora.rank > 0:
        peft = require("peft", "LoRA (pip install peft)")
        base = load_base_model(section, seed, tokenizer, device, dtype)
        if weights_dir is not None:
            model = peft.PeftModel.from_pretrained(base, str(weights_dir), is_trainable=True)
        else:
            adapters = peft.LoraConfig(
                r=lora.rank,
                lora_alpha=lora.alpha,
                lora_dropout=lora.dropout,
                target_modules=lora.target_modules,
                task_type="CAUSAL_LM",
            )
            model = peft.get_peft_model(base, adapters)
    elif weights_dir is not None:
        model = _from_pretrained(section, str(weights_dir), dtype).to(device)
        _own_storage(model)
    else:
        model = load_base_model(section, seed, tokenizer, device, dtype)
    if section.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if hasattr(model, "enable_input_require_grads"):
            model.enable_input_require_grads()
    model.config.use_cache = False
    model.train()
    return model


def _own_storage(model: Any) -> None:
    """Give every parameter its own, freshly allocated storage.

    Weights loaded from a checkpoint can sit at unaligned offsets of the file's buffer, and CPU
    matrix kernels round differently on unaligned data: a resumed run then drifts by float
    rounding from an unbroken one (seen as a log-prob 2e-7 off on one request). Fresh
    allocations are aligned as the weights of an unbroken run are. Tied weights stay tied.
    """
    for parameter in model.parameters():
        parameter.data = parameter.data.clone()


def load_reference(
    section: ModelConfig,
    lora: LoraConfig,
    kl_coef: float,
    seed: int,
    tokenizer: Any,
    device: Any,
    dtype: Any,
) -> Any:
    """A frozen copy of the initial policy for the KL term (``None`` when not needed).

    Needed when the KL term is on (``kl_coef`` > 0) and the policy has no LoRA adapters (a
    LoRA model's reference is itself with its adapters disabled).
    """
    if kl_coef <= 0 or lora.rank > 0:
        return None
    model = load_base_model(section, seed, tokenizer, device, dtype)
    model.eval()
    model.requires_grad_(False)
    return model


def save_policy(model: Any, tokenizer: Any, path: str | Path, state_dict: Any = None) -> None:
    """``save_pretrained`` of the policy (a LoRA model saves its adapter) and the tokenizer."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if state_dict is None:
        model.save_pretrained(str(path))
    else:
        model.save_pretrained(str(path), state_dict=state_dict)
    tokenizer.save_pretrained(str(path))


def save_full_model(model: Any, tokenizer: Any, weights: dict[str, Any], path: str | Path) -> None:
    """A plain transformers directory (no adapters) with ``weights`` (merged LoRA included)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    cpu = {name: tensor.detach().to("cpu").clone() for name, tensor in weights.items()}
    base.save_pretrained(str(path), state_dict=cpu)
    tokenizer.save_pretrained(str(path))
