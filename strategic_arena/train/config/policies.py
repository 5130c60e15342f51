"""The ``policies`` section: several policies trained together, each controlling its own seats.

MAPoRL co-trains one model per debating agent. A config names the policies as a list; each
has a name, the seats it plays in every training game, and optionally its own base model,
LoRA rank, advantage estimator and learning rate (``null``: the run's ``model``, ``lora``,
``advantage`` and ``ppo`` sections)::

    policies:
      - {name: alice, seats: [0]}
      - {name: bob, seats: [1], advantage: {type: rloo}}

An empty list (the default) is the single-policy trainer, unchanged: one policy in every
seat. How the policies are served (:mod:`strategic_arena.train.loop.cotrain`): with the vLLM
engine, policies sharing the base model with LoRA adapters are one server with an adapter
each (loaded at run time); policies with their own models get a server each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import PlainValidator

from strategic_arena.train.algo.estimators import EstimatorConfig
from strategic_arena.train.config.estimator import estimator_config


def _optional_estimator(value: Any) -> EstimatorConfig | None:
    """``null`` (the run's ``advantage``) or an estimator config, as the ``advantage`` section."""
    return None if value is None else estimator_config(value)


@dataclass(frozen=True)
class PolicyConfig:
    """One co-trained policy (YAML: a mapping in the ``policies`` list)."""

    name: str
    """The policy's name: its LoRA adapter's name on a shared server, its folder under
    run.output_dir/policies, and the prefix of its metrics (``alice/train/loss``)."""
    seats: list[int] = field(default_factory=list)
    """The seats it plays in every training game (0-based); the policies' seats must not
    overlap and together cover every seat of every training game."""
    model: str | None = None
    """Its own base model (hub id or folder; ``null``: model.name, the shared base)."""
    lora_rank: int | None = None
    """Its LoRA rank (``null``: lora.rank). With the vLLM engine, policies on the shared
    base with LoRA are served as adapters of one server."""
    advantage: Annotated[EstimatorConfig | None, PlainValidator(_optional_estimator)] = None
    """Its advantage estimator (``null``: the run's advantage section), e.g. ``{type: ppo}``
    for PPO with a value head and GAE, or ``{type: rloo}``."""
    lr: float | None = None
    """Its peak learning rate (``null``: ppo.lr)."""

    def problems(self) -> list[str]:
        """What is wrong with the values (empty when they are fine)."""
        problems = []
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            problems.append(f"policies: name {self.name!r} must be letters, digits, - or _")
        if not self.seats or any(seat < 0 for seat in self.seats):
            problems.append(f"policies.{self.name}.seats must list seats >= 0")
        if self.lora_rank is not None and self.lora_rank < 0:
            problems.append(f"policies.{self.name}.lora_rank must be >= 0")
        if self.lr is not None and self.lr <= 0:
            problems.append(f"policies.{self.name}.lr must be > 0")
        if self.advantage is not None:
            problems += [f"policies.{self.name}: {p}" for p in self.advantage.problems()]
        return problems


def policy_output_dir(output_dir: str | Path, name: str) -> Path:
    """The folder of policy ``name``'s own run (checkpoints, metrics): ``policies/<name>``."""
    return Path(output_dir) / "policies" / name
