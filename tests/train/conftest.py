"""Fixtures of the trainer tests: tiny configs that run on a CPU in seconds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

#: A tiny Kuhn Poker run: the answers vocabulary (a random policy answers validly now and
#: then), boxed answers, short responses, one torch thread (fastest on shared cores).
TINY = (
    "model=tiny",
    "games=[kuhn_poker-v0]",
    "style=boxed",
    "strict=false",
    "tiny_vocab=answers",
    "tiny_layers=1",
    "tiny_hidden_size=32",
    "max_new_tokens=8",
    "episodes_per_game=8",
    "steps=3",
    "lr=1e-2",
    "lr_schedule=constant",
    "device=cpu",
    "torch_threads=1",
    "tensorboard=false",
    "checkpoint_every=0",
    "resume=never",
)


@pytest.fixture
def tiny_overrides(tmp_path: Path) -> Callable[..., list[str]]:
    """``--set`` overrides of a tiny run writing under ``tmp_path/run``, plus any given."""

    def make(*overrides: str) -> list[str]:
        return [*TINY, f"output_dir={tmp_path / 'run'}", *overrides]

    return make
