"""A decoder-only transformer of a given :class:`ModelShape` in plain torch, random weights.

For measuring the learner where only torch is installed (a bare GPU machine: the GPU check,
``benchmarks/gpu_check.py``, its one user): the same tensors as a Qwen3/Llama causal LM of that
shape -- token embeddings, per layer q/k/v/o projections (grouped-query attention, rotary
positions), a gated SiLU MLP and two RMS norms, a final norm and an output head (tied or not) --
under the Hugging Face parameter names, so the learner, FSDP2 sharding (``_no_split_modules``)
and the weight export treat it as they treat a transformers model. It is a stand-in for
*measuring* memory and speed, not a model to train for real: no KV cache, no generation,
attention through ``scaled_dot_product_attention`` with an explicit mask (causal, and padding
masked out).

Its parameter count is :attr:`ModelShape.parameters` exactly (the memory estimate's ``P``;
Qwen3's per-head q/k norms, 256 values a layer, are left out).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn
from torch.nn import functional
from torch.utils.checkpoint import checkpoint

from strategic_arena.train.memory import ModelShape

# (cos, sin) of the rotary angles, each (B, 1, L, head_dim)
Rope = tuple[Tensor, Tensor]


@dataclass
class CausalOutput:
    """What the learner reads from a forward pass: ``logits`` (B, kept positions, V).

    ``past_key_values`` is always ``None``: the model keeps no KV cache, so the transformers
    engine can decode with it one token a response (the GPU check's one-turn loop).
    """

    logits: Tensor
    past_key_values: None = None


class RMSNorm(nn.Module):
    """Root-mean-square norm with a learned scale, computed in float32."""

    def __init__(self, size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        """``x`` normalised over its last axis, in its own dtype."""
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        scaled: Tensor = self.weight * x.to(dtype)
        return scaled


def rotate(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """``x`` turned by the rotary angles (the half-split convention of Llama and Qwen)."""
    half = x.shape[-1] // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    rotated: Tensor = x * cos + turned * sin
    return rotated


class Attention(nn.Module):
    """Grouped-query self-attention with rotary positions."""

    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        self.shape = shape
        q, kv = shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
        bias = shape.attention_bias
        self.q_proj = nn.Linear(shape.hidden, q, bias=bias)
        self.k_proj = nn.Linear(shape.hidden, kv, bias=bias)
        self.v_proj = nn.Linear(shape.hidden, kv, bias=bias)
        self.o_proj = nn.Linear(q, shape.hidden, bias=False)

    def forward(self, x: Tensor, rope: Rope, mask: Tensor) -> Tensor:
        """Attention over ``x`` (B, L, hidden) where ``mask`` allows, projected back."""
        shape = self.shape
        batch, length, _ = x.shape
        d = shape.head_dim
        q = self.q_proj(x).view(batch, length, shape.heads, d).transpose(1, 2)
        k = self.k_proj(x).view(batch, length, shape.kv_heads, d).transpose(1, 2)
        v = self.v_proj(x).view(batch, length, shape.kv_heads, d).transpose(1, 2)
        q, k = rotate(q, *rope), rotate(k, *rope)
        groups = shape.heads // shape.kv_heads
        k = k.repeat_interleave(groups, dim=1)
        v = v.repeat_interleave(groups, dim=1)
        out = functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        projected: Tensor = self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))
        return projected


class MLP(nn.Module):
    """The gated SiLU feed-forward block."""

    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(shape.hidden, shape.intermediate, bias=False)
        self.up_proj = nn.Linear(shape.hidden, shape.intermediate, bias=False)
        self.down_proj = nn.Linear(shape.intermediate, shape.hidden, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        """``down(silu(gate(x)) * up(x))``."""
        out: Tensor = self.down_proj(functional.silu(self.gate_proj(x)) * self.up_proj(x))
        return out


class DecoderLayer(nn.Module):
    """One pre-norm decoder layer: attention then MLP, each around a residual."""

    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        self.self_attn = Attention(shape)
        self.mlp = MLP(shape)
        self.input_layernorm = RMSNorm(shape.hidden)
        self.post_attention_layernorm = RMSNorm(shape.hidden)

    def forward(self, x: Tensor, rope: Rope, mask: Tensor) -> Tensor:
        """The layer's output for ``x`` (B, L, hidden)."""
        x = x + self.self_attn(self.input_layernorm(x), rope, mask)
        out: Tensor = x + self.mlp(self.post_attention_layernorm(x))
        return out


class Body(nn.Module):
    """The ``model`` of a causal LM: embeddings, the layers and the final norm."""

    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(shape.vocab, shape.hidden)
        self.layers = nn.ModuleList(DecoderLayer(shape) for _ in range(shape.layers))
        self.norm = RMSNorm(shape.hidden)


def rope_angles(shape: ModelShape, position_ids: Tensor, dtype: torch.dtype) -> Rope:
    """The rotary (cos, sin) of each position (base 1e6, as Qwen3), in ``dtype``."""
    device = position_ids.device
    half = torch.arange(0, shape.head_dim, 2, device=device, dtype=torch.float32)
    inverse = 1.0 / (1_000_000.0 ** (half / shape.head_dim))
    angles = position_ids[..., None].float() * inverse
    angles = torch.cat((angles, angles), dim=-1)[:, None]
    return angles.cos().to(dtype), angles.sin().to(dtype)


def attention_mask_of(length: int, attention_mask: Tensor | None, device: Any) -> Tensor:
    """Causal, with padded keys masked out; a padded query still sees itself.

    So no row of the softmax is empty.
    """
    causal = torch.ones(length, length, dtype=torch.bool, device=device).tril()
    mask = causal[None, None]
    if attention_mask is not None:
        mask = mask & attention_mask[:, None, None, :].bool()
        mask = mask | torch.eye(length, dtype=torch.bool, device=device)
    return mask


class ShapedCausalLM(nn.Module):
    """The causal LM: :class:`Body` and an output head, tied to the embeddings or not."""

    _no_split_modules: ClassVar[list[str]] = ["DecoderLayer"]

    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        self.shape = shape
        self.model = Body(shape)
        self.lm_head = nn.Linear(shape.hidden, shape.vocab, bias=False)
        if shape.tied_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.checkpointing = False

    def gradient_checkpointing_enable(self, **_: Any) -> None:
        """Recompute each layer's activations in the backward pass (as transformers)."""
        self.checkpointing = True

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        use_cache: bool = False,
        logits_to_keep: int = 0,
        past_key_values: Any = None,
    ) -> CausalOutput:
        """The logits of the last ``logits_to_keep`` positions (all when 0), as transformers."""
        if past_key_values is not None:
            raise ValueError("this model keeps no KV cache: decode one token per response")
        batch, length = input_ids.shape
        device = input_ids.device
        if position_ids is None:
            position_ids = torch.arange(length, device=device).expand(batch, -1)
        x = self.model.embed_tokens(input_ids)
        rope = rope_angles(self.shape, position_ids, x.dtype)
        mask = attention_mask_of(length, attention_mask, device)
        recompute = self.checkpointing and self.training and torch.is_grad_enabled()
        for layer in self.model.layers:
            if recompute:
                x = checkpoint(layer, x, rope, mask, use_reentrant=False)
            else:
                x = layer(x, rope, mask)
        x = self.model.norm(x)
        if logits_to_keep:
            x = x[:, -logits_to_keep:]
        return CausalOutput(self.lm_head(x))


def build_shaped_model(shape: ModelShape, *, device: Any, dtype: Any, seed: int = 0) -> Any:
    """A :class:`ShapedCausalLM` of ``shape`` on ``device`` in ``dtype``, seeded.

    Weights are drawn on ``device`` directly (normal, std 0.02; norms 1), so a 4B model is
    built on a GPU in seconds without passing through host memory.
    """
    torch.manual_seed(seed)
    with torch.device(device):
        model = ShapedCausalLM(shape)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.fill_(1.0)
            elif name.endswith(".bias"):
                parameter.zero_()
            else:
                parameter.normal_(0.0, 0.02)
    return model.to(dtype=dtype)
