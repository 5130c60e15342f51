"""Fixtures of the trainer tests: tiny configs that run on a CPU in seconds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: A tiny Kuhn Poker run: the answers vocabulary (a random policy answers validly now and
#: then), boxed answers, short responses, one torch thread (fastest on shared cores).
TINY = (
    "model.name=tiny",
    "games.ids=[kuhn_poker-v0]",
    "answer.style=boxed",
    "answer.strict=false",
    "model.tiny_vocab=answers",
    "model.tiny_layers=1",
    "model.tiny_hidden_size=32",
    "sampling.max_tokens=8",
    "games.episodes_per_game=8",
    "run.steps=3",
    "ppo.lr=1e-2",
    "ppo.lr_schedule=constant",
    "model.device=cpu",
    "model.torch_threads=1",
    "run.tensorboard=false",
    "run.checkpoint_every=0",
    "run.resume=never",
)


@pytest.fixture
def tiny_overrides(tmp_path: Path) -> Callable[..., list[str]]:
    """``--set`` overrides of a tiny run writing under ``tmp_path/run``, plus any given."""

    def make(*overrides: str) -> list[str]:
        return [*TINY, f"run.output_dir={tmp_path / 'run'}", *overrides]

    return make


def learner_for(cfg: Any, model: Any, **kwargs: Any) -> Any:
    """A learner of the run ``cfg`` (its sections) for ``model``: what the trainer builds."""
    from strategic_arena.train.policy.learner import Learner

    return Learner.for_run(
        cfg.ppo,
        cfg.correction,
        model,
        sampling=cfg.sampling,
        steps=cfg.run.steps,
        compute=cfg.precision.compute_dtype,
        **kwargs,
    )


def workload(cfg: Any) -> Any:
    """The sections of ``cfg`` the placement check reads."""
    from strategic_arena.train.engines.placement import Workload

    return Workload(cfg.model, cfg.precision, cfg.rollout, cfg.vllm, cfg.placement, cfg.ppo)


def settings_sections(cfg: Any) -> dict[str, Any]:
    """The sections ``write_eval_settings`` reads, by its parameter names."""
    return {
        "run": cfg.run,
        "model": cfg.model,
        "answer": cfg.answer,
        "sampling": cfg.sampling,
        "evaluation": cfg.eval,
    }
