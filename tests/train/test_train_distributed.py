"""``torchrun`` with two CPU processes (gloo): FSDP2 shards, episodes exchanged, same result.

Each rank plays its share of the step's games with its own engine, every rank scores the whole
batch, and the update is sharded: the games, rewards and gradient norms equal those of one
process with the same config; the evaluation, spread over the ranks, equals one process's; the
process group runs with the configured timeout; and the checkpoint resumes under ``torchrun``.

This test aborted now and then (SIGABRT, "terminate called without an active exception"): first
while the process group was left alive at exit, then, rarely, inside interpreter finalization
even after it was destroyed. A rank now destroys the group and ends without finalization
(train/dist.py, ``exit_rank``; docs/training.md, "Eight ranks").
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.train.config import load_config  # noqa: E402
from strategic_arena.train.loop.metrics import read_metrics  # noqa: E402
from strategic_arena.train.loop.trainer import Trainer  # noqa: E402
from tests.train.launch import torchrun, train_command  # noqa: E402

Overrides = Callable[..., list[str]]


def _torchrun(overrides: list[str]) -> subprocess.CompletedProcess[str]:
    args = [arg for item in overrides for arg in ("--set", item)]
    return torchrun([train_command(), "train", *args])


@pytest.mark.slow
def test_two_cpu_processes_match_one(tiny_overrides: Overrides, tmp_path: Path) -> None:
    shared = tiny_overrides(
        "run.steps=2",
        "games.episodes_per_game=8",
        "run.checkpoint_every=1",
        "eval.every=2",
        "eval.games=6",
        "eval.opponents={kuhn_poker-v0: [random, nash]}",
    )
    ranked = [*shared, f"run.output_dir={tmp_path / 'ddp'}", "placement.dist_timeout_s=1234"]
    result = _torchrun(ranked)
    assert result.returncode == 0, result.stdout + result.stderr
    # the timeout read back from the process group, not from the config
    assert "2 ranks, collective timeout 1234 s" in result.stderr
    distributed = read_metrics(tmp_path / "ddp" / "metrics.jsonl")
    assert [record["step"] for record in distributed] == [1, 2]

    single = Trainer(load_config(None, [*shared, f"run.output_dir={tmp_path / 'one'}"]))
    for record in distributed:
        metrics = single.train_step()
        for key in ("train/reward", "train/invalid_rate", "train/trained_tokens"):
            assert record[key] == pytest.approx(metrics[key]), key
        assert record["train/grad_norm"] == pytest.approx(metrics["train/grad_norm"], rel=1e-5)
        assert record["train/loss"] == pytest.approx(metrics["train/loss"], abs=1e-5)
    # evaluation spread over the two ranks: the same games and results as one process playing
    # them all (every game's seeds come from its key)
    evaluated = single.evaluate()
    spread = {key: value for key, value in distributed[-1].items() if key.startswith("eval/")}
    assert spread.keys() == evaluated.keys() and len(spread) >= 8
    for key, value in evaluated.items():
        assert spread[key] == pytest.approx(value), key

    resumed = _torchrun([*ranked, "run.steps=3", "run.resume=auto"])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resumed from" in resumed.stderr + resumed.stdout
    assert (tmp_path / "ddp" / "checkpoints" / "step-000003" / "trainer.pt").is_file()
