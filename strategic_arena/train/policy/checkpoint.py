"""Checkpoints that resume exactly.

Layout under ``output_dir/checkpoints/``::

    step-000010/
        policy/        the policy (``save_pretrained``: full weights, or a LoRA adapter) and
                       its tokenizer -- loadable by transformers and vLLM as it is
        trainer.pt     step, optimizer and scheduler state, RAE baselines, opponent pool,
                       RNG states (python, numpy, torch CPU and CUDA), the config
        eval_settings.json  how the evaluation asked the policy and how to serve it so that
                       ``strategic-arena eval --settings`` asks it the same way
                       (:mod:`strategic_arena.train.engines.serving`)

A checkpoint is written into ``step-000010.tmp`` and renamed when complete, so a kill during
the write leaves no half checkpoint behind: :func:`latest_checkpoint` sees only finished ones.
Everything random in a step is derived from ``(seed, step)``, so step, weights and optimizer
state alone already fix the continuation; the global RNG states are saved and restored as well
so that code relying on them (a custom opponent, a library) resumes identically too.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from strategic_arena._extras import require

_NAME = re.compile(r"^step-(\d+)$")


def checkpoint_dir(output_dir: str | Path, step: int) -> Path:
    """Where the checkpoint taken after ``step`` completed steps lives."""
    return Path(output_dir) / "checkpoints" / f"step-{step:06d}"


def list_checkpoints(output_dir: str | Path) -> list[Path]:
    """Finished checkpoints, oldest first."""
    root = Path(output_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [
        (int(match.group(1)), path)
        for path in root.iterdir()
        if (match := _NAME.match(path.name)) and (path / "trainer.pt").is_file()
    ]
    return [path for _, path in sorted(found)]


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest finished checkpoint, if any."""
    found = list_checkpoints(output_dir)
    return found[-1] if found else None


def rng_state() -> dict[str, Any]:
    """The global RNG states of python, numpy and torch (CPU and every CUDA device)."""
    torch = require("torch", "checkpoints")
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.random.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore :func:`rng_state`."""
    torch = require("torch", "checkpoints")
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.random.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def begin(output_dir: str | Path, step: int) -> Path:
    """A fresh temporary directory for the checkpoint of ``step``."""
    final = checkpoint_dir(output_dir, step)
    staging = final.with_name(final.name + ".tmp")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    return staging


def save_trainer_state(staging: Path, state: dict[str, Any]) -> None:
    """Write ``trainer.pt`` into a staging directory."""
    torch = require("torch", "checkpoints")
    torch.save(state, staging / "trainer.pt")


def commit(staging: Path, *, keep: int) -> Path:
    """Rename a finished staging directory into place; delete all but the ``keep`` newest."""
    final = staging.with_name(staging.name.removesuffix(".tmp"))
    if final.exists():
        shutil.rmtree(final)
    staging.rename(final)
    if keep > 0:
        for old in list_checkpoints(final.parent.parent)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    return final


def load_trainer_state(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint's ``trainer.pt`` (on CPU)."""
    torch = require("torch", "checkpoints")
    state: dict[str, Any] = torch.load(
        Path(path) / "trainer.pt", map_location="cpu", weights_only=False
    )
    return state
