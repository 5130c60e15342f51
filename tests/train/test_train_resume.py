"""Checkpoints resume exactly: kill -9 a training process, resume, compare with an unbroken run.

Also: Ctrl-C (SIGINT) saves a checkpoint of the last finished step and exits with status 130.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.train.config import load_config  # noqa: E402
from strategic_arena.train.loop.metrics import read_metrics  # noqa: E402
from strategic_arena.train.loop.trainer import Trainer  # noqa: E402
from strategic_arena.train.policy.checkpoint import checkpoint_dir, load_trainer_state  # noqa: E402

Overrides = Callable[..., list[str]]

#: Settings that give every piece of resumable state something to hold: cosine schedule with
#: warm-up (scheduler), RAE (baselines), snapshots in the opponent pool, two PPO epochs.
RESUMABLE = (
    "run.steps=40",
    "ppo.lr_schedule=cosine",
    "ppo.warmup_steps=1",
    "advantage.type=rae",
    "ppo.epochs=2",
    "games.snapshot_every=2",
    "games.snapshot_weight=1",
    "games.episodes_per_game=6",
)


def _train_process(overrides: list[str]) -> subprocess.Popen[bytes]:
    args = [arg for item in overrides for arg in ("--set", item)]
    code = "import sys; from strategic_arena.cli import main; raise SystemExit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, "train", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def _wait_for(path: Path, process: subprocess.Popen[bytes]) -> None:
    """Poll until ``path`` exists (fails if the process ends first)."""
    while not path.exists():
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout else ""
            pytest.fail(f"training exited with {process.returncode} before {path}:\n{output}")
        time.sleep(0.05)


def _comparable(metrics: dict[str, float]) -> dict[str, float]:
    return {k: v for k, v in metrics.items() if not k.startswith("time/") and "per_s" not in k}


def test_kill_then_resume_gives_the_same_next_step(
    tiny_overrides: Overrides, tmp_path: Path
) -> None:
    killed_dir = tmp_path / "killed"
    killed = [*tiny_overrides(*RESUMABLE, "run.checkpoint_every=2"), f"run.output_dir={killed_dir}"]
    process = _train_process(killed)
    checkpoint = checkpoint_dir(killed_dir, 2)
    _wait_for(checkpoint / "trainer.pt", process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    if process.stdout:
        process.stdout.close()

    resumed = Trainer(load_config(None, [*killed, f"run.resume={checkpoint}"]))
    assert resumed.step == 2
    assert [s.name for s in resumed.pool.snapshots] == ["snapshot@step-2"]
    assert resumed.estimator.baselines.keys()
    after_resume = _comparable(resumed.train_step())

    unbroken = Trainer(load_config(None, tiny_overrides(*RESUMABLE)))
    for _ in range(3):
        after_unbroken = _comparable(unbroken.train_step())

    assert after_resume == after_unbroken
    for (name, a), b in zip(
        resumed.learner.model.named_parameters(),
        unbroken.learner.model.parameters(),
        strict=True,
    ):
        assert torch.equal(a, b), name
    assert resumed.estimator.state_dict() == unbroken.estimator.state_dict()
    state_a = resumed.learner.optimizer.state_dict()["state"]
    state_b = unbroken.learner.optimizer.state_dict()["state"]
    assert all(torch.equal(state_a[k]["exp_avg"], state_b[k]["exp_avg"]) for k in state_a)


def test_ctrl_c_saves_a_checkpoint_and_a_rerun_resumes(
    tiny_overrides: Overrides, tmp_path: Path
) -> None:
    overrides = [*tiny_overrides("run.steps=100000", "run.checkpoint_every=0"), "run.resume=auto"]
    process = _train_process(overrides)
    metrics = tmp_path / "run" / "metrics.jsonl"
    _wait_for(metrics, process)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate()
    assert process.returncode == 130, output.decode()
    saved = sorted((tmp_path / "run" / "checkpoints").iterdir())
    assert len(saved) == 1 and saved[0].name.startswith("step-")
    step = int(load_trainer_state(saved[0])["step"])
    assert step >= 1 and f"stopped at step {step}" in output.decode()
    assert max(int(r["step"]) for r in read_metrics(metrics)) == step
    assert Trainer(load_config(None, overrides)).step == step
