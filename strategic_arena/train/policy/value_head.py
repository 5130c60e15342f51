r"""A value head on the policy: V(prompt) from the last prompt token's hidden state (PPO's critic).

MAPoRL trains each agent with PPO and a value head (TRL's ``AutoModelForCausalLMWithValueHead``
design: one linear layer on the policy's last hidden state, the trunk shared). A turn's value
is read at its last prompt token, the state in which the whole answer is chosen
(:mod:`strategic_arena.train.algo.estimators.ppo` runs GAE over these per-turn values).

The head is a ``Linear(hidden, 1)`` initialised to zero (every first estimate is 0, so the
first advantages are the plain returns), with its own AdamW and the policy's schedule: it is
not part of the model, so the model's files, its LoRA adapter and the weights pushed to the
engines stay exactly the policy's.

The loss (TRL's, PPO2's): with the prediction V, the estimate before the update V_old and the
return R,

    L_V = 0.5 * max((V - R)^2, (V_old + clip(V - V_old, -c, c) - R)^2)

averaged over the minibatch's turns and weighted by ``value_coef`` next to the policy loss;
without ``c`` (``value_clip: null``) only the first square.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from strategic_arena._extras import require

if TYPE_CHECKING:
    from torch import Tensor


def value_loss(predicted: Tensor, old: Tensor, target: Tensor, clip: float | None) -> Tensor:
    """Per-turn clipped value loss (the module docstring's L_V), shape of ``predicted``."""
    torch = require("torch", "the value head")
    squared = (predicted - target) ** 2
    if clip is None:
        result: Tensor = 0.5 * squared
        return result
    clipped = old + torch.clamp(predicted - old, -clip, clip)
    widest: Tensor = 0.5 * torch.maximum(squared, (clipped - target) ** 2)
    return widest


def hidden_size(model: Any) -> int:
    """The width of the model's last hidden state (peft models: their base's config)."""
    config = model.config
    size = getattr(config, "hidden_size", None)
    if size is None and hasattr(config, "get_text_config"):
        size = getattr(config.get_text_config(), "hidden_size", None)
    if size is None:
        raise ValueError("the policy's config names no hidden_size: no value head can read it")
    return int(size)


class ValueHead:
    """The head, its optimizer and schedule, and its settings.

    Args:
        model: the policy (its hidden size, device and master dtype are the head's).
        lr: the head's peak learning rate.
        schedule: the learning-rate multiplier of an optimizer step (the policy's).
        coef: weight of the value loss (``advantage.value_coef``).
        clip: the value clip (``advantage.value_clip``).
        betas / eps / weight_decay: AdamW's, as the policy's.
    """

    def __init__(
        self,
        model: Any,
        *,
        lr: float,
        schedule: Callable[[int], float],
        coef: float,
        clip: float | None,
        betas: tuple[float, float] = (0.9, 0.95),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ) -> None:
        torch = require("torch", "the value head")
        parameter = next(p for p in model.parameters() if p.requires_grad)
        self.linear = torch.nn.Linear(hidden_size(model), 1)
        torch.nn.init.zeros_(self.linear.weight)
        torch.nn.init.zeros_(self.linear.bias)
        self.linear.to(device=parameter.device, dtype=parameter.dtype)
        self.coef, self.clip = coef, clip
        self.optimizer = torch.optim.AdamW(
            self.linear.parameters(), lr=lr, betas=betas, eps=eps, weight_decay=weight_decay
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, schedule)

    def __call__(self, hidden: Tensor) -> Tensor:
        """Values (B,) of hidden states (B, H), in float32."""
        values: Tensor = self.linear(hidden.to(self.linear.weight.dtype)).squeeze(-1).float()
        return values

    def step(self, max_norm: float) -> None:
        """Clip the head's gradient to ``max_norm`` (0: no clipping), step, zero, schedule."""
        torch = require("torch", "the value head")
        if max_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.linear.parameters(), max_norm)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()

    def state_dict(self) -> dict[str, Any]:
        """Weights, optimizer and schedule (the trainer's checkpoint carries them)."""
        return {
            "weights": self.linear.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.linear.load_state_dict(state["weights"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
