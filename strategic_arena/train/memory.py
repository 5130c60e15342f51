"""How much GPU memory a training layout needs, before anything is loaded: pure arithmetic.

:func:`estimate` takes a model's shape (:class:`ModelShape`, from its ``config.json``) and a
layout (:class:`Layout`: GPU size, learners, what shares a GPU with a vLLM server) and returns
a :class:`MemoryEstimate`: the bytes of each part and, per phase, whether they fit. The
trainer refuses a layout that cannot fit, with these numbers, before starting anything.

The arithmetic (``P`` parameters, ``n`` learner ranks sharing the model by FSDP, ``T`` tokens of
one micro-batch = ``micro_batch_size x`` the longest sequence, ``h`` hidden size, ``I`` MLP
size, ``L`` layers, ``V`` vocabulary, ``c`` bytes of the compute dtype (2 for bf16), ``r``
bytes of the residual stream: 4 in one process under autocast (the embeddings and every
residual add stay in the float32 of the masters; only matrix products run in bf16), ``c``
under FSDP's mixed precision (the weights themselves are cast), ``S`` the server's
``max_num_seqs``, ``K`` = :data:`LOGIT_CHUNK_BYTES`)::

    learner, per GPU
      master weights          4 P / n          fp32 masters
      gradients               4 P / n          fp32, freed between steps
      optimizer (AdamW)       8 P / n          two fp32 moments
      optimizer temporaries   0                fused AdamW (the learner's choice wherever
                              4 P / n          torch has the kernel); the multi-tensor one
      compute weights         2 c max(P_layer, V h)   casts in flight: a layer's (or the
                                                output head's) and the next; autocast keeps no
                                                cache, FSDP gathers one layer ahead
                                                (0 when the compute dtype is the master's)
      reference (kl_coef>0)   c P / n
      activations             L T h r + T (6h + 3I) c    with gradient checkpointing (the
                                                saved layer inputs, one layer recomputed)
                              L T ((6h + 3I) c + h (r - c))   without
      logits                  2 c T V + 4 K    the compute-dtype logits and their gradient,
                                                and one float32 chunk of the log-softmax
                                                (its values, softmax, product, gradient)
      runtime                 2 GiB            CUDA context, allocator slack
      fragmentation           f x the above    f = 5%: blocks the caching allocator holds
                              but the runtime    but cannot reuse (split, rounded)

    vLLM server, per GPU (tensor parallel t)
      reserved                u G              u = vllm_gpu_memory_utilization, G = GPU memory
      weights                 s P / t          s: bytes of the server's dtype
      sampler                 3 x 4 S V        fp32 logits, processed log-probs and
                                                probabilities of a full decode batch
                                                (vLLM profiles them inside u G)
      KV cache                u G - s P / t - sampler - 1 GiB (activations)
      KV per token            2 L k d s / t    k KV heads of dimension d
      CUDA graphs             1 GiB            outside u G, kept asleep (0 with enforce_eager)
      asleep                  2 GiB + graphs   (sleep mode: weights and KV cache released)

    the hand-off (sleep mode: after each update the learner empties its cache, the server wakes)
      held after release      h x 8 P / n      blocks the allocator keeps reserved after
                                               ``empty_cache`` beside AdamW's moments:
                                               h = 0.25 (measured; 0 with the moments offloaded)
      sync buffers            2 s max(P_layer, V h)   the largest tensor in the server's
                                               dtype twice: the learner's cast in flight and
                                               the server's load of it (the weight sync
                                               reloads into the woken server)

    phases on one GPU
      rollout   learner resident (weights, optimizer unless offloaded, reference, runtime)
                + the hand-off's terms (sleep mode) + server reserved + CUDA graphs
      update    learner peak (every learner term) + server reserved + CUDA graphs
                (asleep when vllm_sleep_level > 0)

Each must stay below ``G``, and the KV cache must hold at least one longest sequence. These
are estimates: the fixed terms (runtime, vLLM activations and CUDA graphs, a sleeping server,
the fragmentation share) are deliberately round, and ``benchmarks/gpu_check.py`` compares the
learner's measured peak with this sum on a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GIB = 1024**3

#: Fixed costs (bytes); see the module docstring.
RUNTIME_BYTES = 2 * GIB
SERVER_ACTIVATION_BYTES = 1 * GIB
SERVER_ASLEEP_BYTES = 2 * GIB
SERVER_GRAPH_BYTES = 1 * GIB

#: Float32 bytes of one chunk of the learner's log-softmax
#: (:func:`strategic_arena.train.policy.learner.token_logprobs_and_entropy`): 128 MiB, 220 positions
#: of a 151,936-token vocabulary.
LOGIT_CHUNK_BYTES = 128 * 2**20

#: Share of the learner's memory the caching allocator holds without being able to reuse it.
FRAGMENTATION = 0.05

#: Share of AdamW's moments' bytes the caching allocator still holds reserved, beside them, after
#: ``torch.cuda.empty_cache()``: measured on an NVIDIA H200 after a Qwen3-4B-shaped update
#: (``benchmarks/gpu_check.py``, row ``handoff``): 52.48 GiB reserved after emptying the cache
#: with 44.95 GiB of masters and moments alive (7.53 GiB held, 0.251 of the moments' 29.97);
#: moving the moments to the host freed 37.32 GiB, their own 29.97 and 7.35 more, so the
#: blocks held are the moments' neighbours (the other 0.18 GiB, beside the masters, is
#: negligible and not counted).
RELEASED_OPTIMIZER_HOLD = 0.25

#: The decode batch of a vLLM server whose ``max_num_seqs`` is not set in its arguments.
DEFAULT_SERVER_SEQUENCES = 256


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only transformer (Llama / Qwen / SmolLM family)."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied_embeddings: bool
    attention_bias: bool = False

    @classmethod
    def from_hf_config(cls, config: Mapping[str, Any]) -> ModelShape:
        """The shape of a Hugging Face ``config.json`` (``text_config`` of a multimodal one)."""
        config = config.get("text_config", config)
        heads = int(config["num_attention_heads"])
        hidden = int(config["hidden_size"])
        return cls(
            hidden=hidden,
            intermediate=int(config["intermediate_size"]),
            layers=int(config["num_hidden_layers"]),
            heads=heads,
            kv_heads=int(config.get("num_key_value_heads") or heads),
            head_dim=int(config.get("head_dim") or hidden // heads),
            vocab=int(config["vocab_size"]),
            tied_embeddings=bool(config.get("tie_word_embeddings", False)),
            # Qwen2 has q/k/v biases (no flag in its config); Llama-style configs say so.
            attention_bias=bool(config.get("attention_bias", config.get("model_type") == "qwen2")),
        )

    def hf_config(self) -> dict[str, Any]:
        """The ``config.json`` fields of this shape (the inverse of :meth:`from_hf_config`)."""
        return {
            "hidden_size": self.hidden,
            "intermediate_size": self.intermediate,
            "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab,
            "tie_word_embeddings": self.tied_embeddings,
        }

    @property
    def layer_parameters(self) -> int:
        """Parameters of one decoder layer: attention, gated MLP, two norms."""
        q = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        attention = self.hidden * (q + 2 * kv) + q * self.hidden
        if self.attention_bias:
            attention += q + 2 * kv
        return attention + 3 * self.hidden * self.intermediate + 2 * self.hidden

    @property
    def parameters(self) -> int:
        """All parameters: embeddings, layers, final norm, output head unless tied."""
        embeddings = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return embeddings + self.layers * self.layer_parameters + self.hidden


#: Shapes of hub models the shipped recipes name, from their ``config.json`` (so a recipe can be
#: checked on a machine that has not downloaded the model).
KNOWN_SHAPES: dict[str, ModelShape] = {
    "Qwen/Qwen3-0.6B": ModelShape(1024, 3072, 28, 16, 8, 128, 151936, True),
    "Qwen/Qwen3-1.7B": ModelShape(2048, 6144, 28, 16, 8, 128, 151936, True),
    "Qwen/Qwen3-4B": ModelShape(2560, 9728, 36, 32, 8, 128, 151936, True),
    "Qwen/Qwen3-4B-Base": ModelShape(2560, 9728, 36, 32, 8, 128, 151936, True),
    "Qwen/Qwen3-8B": ModelShape(4096, 12288, 36, 32, 8, 128, 151936, False),
}


@dataclass(frozen=True)
class Layout:
    """Where the parts of a run live and how big the work is (see the module docstring).

    Attributes:
        gpu_bytes: memory of each GPU.
        learners: learner ranks sharing the model (FSDP); 1 without torchrun.
        colocated: a vLLM server shares each learner's GPU.
        server_gpus: GPUs of the vLLM servers (0: no vLLM, e.g. the transformers engine).
        tensor_parallel: GPUs per server.
        server_utilization: ``vllm.gpu_memory_utilization``.
        sleep_level: ``placement.vllm_sleep_level`` (0: the server keeps its memory during updates).
        micro_batch_size: sequences per forward/backward pass.
        sequence_tokens: the longest prompt plus response.
        compute_bytes: bytes per value of the compute dtype (2: bf16).
        server_bytes: bytes per weight of the vLLM server (its dtype).
        master_bytes: bytes per master weight (4: fp32).
        reference: a frozen reference model is loaded (``ppo.kl_coef`` > 0).
        gradient_checkpointing: activations recomputed in the backward pass.
        fused_adamw: AdamW's fused kernel (no temporaries); else the multi-tensor one.
        server_sequences: the server's ``max_num_seqs`` (its sampler's batch).
        enforce_eager: the server runs without CUDA graphs.
        fragmentation: share of the learner's memory lost to the allocator's fragmentation.
        offload_optimizer: AdamW's moments wait in host memory while the server is awake
            (``placement.colocated_offload_optimizer``; sleep mode only).
    """

    gpu_bytes: int
    learners: int = 1
    colocated: bool = False
    server_gpus: int = 0
    tensor_parallel: int = 1
    server_utilization: float = 0.5
    sleep_level: int = 0
    micro_batch_size: int = 1
    sequence_tokens: int = 4096
    compute_bytes: int = 2
    server_bytes: int = 2
    master_bytes: int = 4
    reference: bool = False
    gradient_checkpointing: bool = True
    fused_adamw: bool = True
    server_sequences: int = DEFAULT_SERVER_SEQUENCES
    enforce_eager: bool = False
    fragmentation: float = FRAGMENTATION
    offload_optimizer: bool = False


@dataclass(frozen=True)
class MemoryEstimate:
    """The bytes of each part per GPU, and what does not fit (empty: the layout fits)."""

    learner: dict[str, int] = field(default_factory=dict)
    server: dict[str, int] = field(default_factory=dict)
    phases: dict[str, int] = field(default_factory=dict)
    handoff: dict[str, int] = field(default_factory=dict)
    gpu_bytes: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        """Whether every phase fits and the KV cache holds one longest sequence."""
        return not self.problems

    def table(self) -> str:
        """The estimate as aligned lines of GiB (for logs and error messages)."""
        lines = [f"GPU memory {gib(self.gpu_bytes)}"]
        parts = (
            ("learner", self.learner),
            ("hand-off", self.handoff),
            ("vLLM server", self.server),
        )
        for title, part in parts:
            if part:
                lines.append(f"{title} per GPU:")
                lines += [f"  {name:<24}{_size(name, value):>12}" for name, value in part.items()]
        if self.phases:
            lines.append("per GPU, by phase:")
            lines += [f"  {name:<24}{gib(value):>12}" for name, value in self.phases.items()]
        return "\n".join(lines)


def _size(name: str, value: int) -> str:
    """GiB, but KiB for the per-token KV size."""
    return f"{value / 1024:.0f} KiB" if name == "KV per token" else gib(value)


def gib(value: float) -> str:
    """``value`` bytes as GiB with two decimals."""
    return f"{value / GIB:.2f} GiB"


def estimate(shape: ModelShape, layout: Layout) -> MemoryEstimate:
    """The memory of ``layout`` for a model of ``shape`` (see the module docstring)."""
    learner = learner_terms(shape, layout)
    resident = sum(
        learner[name] for name in ("master weights", "optimizer (AdamW)", "reference", "runtime")
    )
    peak = sum(learner.values())
    server: dict[str, int] = {}
    problems: list[str] = []
    reserved = int(layout.server_utilization * layout.gpu_bytes)
    graphs = 0
    if layout.server_gpus:
        t = max(layout.tensor_parallel, 1)
        weights = layout.server_bytes * shape.parameters // t
        sampler = 3 * 4 * layout.server_sequences * shape.vocab
        kv = reserved - weights - sampler - SERVER_ACTIVATION_BYTES
        per_token = 2 * shape.layers * shape.kv_heads * shape.head_dim * layout.server_bytes // t
        graphs = 0 if layout.enforce_eager else SERVER_GRAPH_BYTES
        server = {
            "reserved": reserved,
            "weights": weights,
            "sampler": sampler,
            "KV cache": kv,
            "KV per token": per_token,
            "CUDA graphs": graphs,
            "asleep": (SERVER_ASLEEP_BYTES if layout.sleep_level else reserved) + graphs,
        }
        needed = per_token * layout.sequence_tokens
        if kv < needed:
            problems.append(
                f"the vLLM server's KV cache ({gib(kv)} of {gib(reserved)} reserved, after "
                f"{gib(weights)} of weights) cannot hold one {layout.sequence_tokens}-token "
                f"sequence ({gib(needed)}): raise vllm_gpu_memory_utilization or "
                "vllm_tensor_parallel_size, or lower max_sequence_tokens"
            )
    phases: dict[str, int] = {}
    handoff: dict[str, int] = {}
    if layout.colocated and server:
        if layout.sleep_level:
            handoff = handoff_terms(shape, layout, learner)
            if layout.offload_optimizer:
                resident -= learner["optimizer (AdamW)"]
        phases["rollout"] = resident + sum(handoff.values()) + reserved + graphs
        phases["update"] = peak + server["asleep"]
    else:
        phases["update"] = peak
    for phase, used in phases.items():
        if used > layout.gpu_bytes:
            problems.append(
                f"the {phase} phase needs {gib(used)} per GPU but a GPU has {gib(layout.gpu_bytes)}"
            )
    return MemoryEstimate(learner, server, phases, handoff, layout.gpu_bytes, problems)


def handoff_terms(shape: ModelShape, layout: Layout, learner: Mapping[str, int]) -> dict[str, int]:
    """What the learner holds beside its resident tensors while a woken server runs."""
    held = 0 if layout.offload_optimizer else learner["optimizer (AdamW)"]
    largest = max(shape.layer_parameters, shape.vocab * shape.hidden)
    return {
        "held after release": int(RELEASED_OPTIMIZER_HOLD * held),
        "sync buffers": 2 * layout.server_bytes * largest,
    }


def learner_terms(shape: ModelShape, layout: Layout) -> dict[str, int]:
    """Each learner term of the module docstring, in bytes per GPU."""
    n = max(layout.learners, 1)
    p = shape.parameters
    c = layout.compute_bytes
    autocast = c < layout.master_bytes and n == 1
    r = layout.master_bytes if autocast else c
    tokens = layout.micro_batch_size * layout.sequence_tokens
    layer = tokens * (6 * shape.hidden + 3 * shape.intermediate) * c
    residual = tokens * shape.hidden
    if layout.gradient_checkpointing:
        activations = shape.layers * residual * r + layer
    else:
        activations = shape.layers * (layer + residual * (r - c))
    largest = max(shape.layer_parameters, shape.vocab * shape.hidden)
    terms = {
        "master weights": layout.master_bytes * p // n,
        "gradients": layout.master_bytes * p // n,
        "optimizer (AdamW)": 2 * layout.master_bytes * p // n,
        "optimizer temporaries": 0 if layout.fused_adamw else layout.master_bytes * p // n,
        "compute weights": 0 if c >= layout.master_bytes else 2 * c * largest,
        "reference": c * p // n if layout.reference else 0,
        "activations": activations,
        "logits": 2 * c * tokens * shape.vocab + 4 * LOGIT_CHUNK_BYTES,
        "runtime": RUNTIME_BYTES,
    }
    held = sum(value for name, value in terms.items() if name != "runtime")
    terms["fragmentation"] = int(layout.fragmentation * held)
    return terms
