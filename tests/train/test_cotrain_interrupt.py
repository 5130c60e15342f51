"""Ctrl-C in co-training: the first finishes the step and saves every policy, the second aborts.

The tiny model on Kuhn Poker with the transformers engine (CPU), two policies. Real SIGINTs:
sent from inside bob's update (the co-trainer's last policy, after alice's update) so they
land at a known point of the step, and to a ``strategic-arena train`` process, whose closing
summary must name each policy's checkpoint.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.train.config import load_config
from strategic_arena.train.loop.console import policy_checkpoints
from strategic_arena.train.loop.cotrain import CoTrainer
from strategic_arena.train.policy.checkpoint import load_trainer_state
from tests.train.cotrain_spy import changed, trainable

Overrides = Callable[..., list[str]]
TWO = 'policies=[{"name": "alice", "seats": [0]}, {"name": "bob", "seats": [1]}]'


def _ctrl_c_in_bobs_update(cotrainer: CoTrainer, presses: int) -> None:
    """Press Ctrl-C ``presses`` times when bob's first update starts (alice's is done)."""
    learner = cotrainer.trainers["bob"].learner
    real = learner.update
    pressed = []

    def update(*args: Any, **kwargs: Any) -> Any:
        if not pressed:
            pressed.append(True)
            for _ in range(presses):
                signal.raise_signal(signal.SIGINT)
        return real(*args, **kwargs)

    learner.update = update


def test_one_ctrl_c_finishes_the_step_and_saves_every_policy_at_it(
    tiny_overrides: Overrides,
) -> None:
    settings = [TWO, "run.steps=5", "games.episodes_per_game=4", "run.resume=auto"]
    cfg = load_config(None, tiny_overrides(*settings))
    before = signal.getsignal(signal.SIGINT)
    with CoTrainer(cfg) as cotrainer:
        _ctrl_c_in_bobs_update(cotrainer, 1)
        assert cotrainer.train() == 1  # step 1 finished (bob updated too), then stopped
        weights = {name: trainable(t) for name, t in cotrainer.trainers.items()}
    assert signal.getsignal(signal.SIGINT) is before
    saved = policy_checkpoints(cfg)
    assert {name: path and path.name for name, path in saved.items()} == {
        "alice": "step-000001",
        "bob": "step-000001",
    }
    with CoTrainer(cfg) as resumed:  # every policy resumes at the step, with its weights
        assert resumed.step == 1
        for name, trainer in resumed.trainers.items():
            assert not changed(weights[name], trainable(trainer)), name


def test_a_second_ctrl_c_aborts_and_saves_no_policy_half_updated(
    tiny_overrides: Overrides,
) -> None:
    cfg = load_config(None, tiny_overrides(TWO, "run.steps=5", "games.episodes_per_game=4"))
    with CoTrainer(cfg) as cotrainer:
        start = {name: trainable(t) for name, t in cotrainer.trainers.items()}
        _ctrl_c_in_bobs_update(cotrainer, 2)
        assert cotrainer.train() == 0  # aborted inside step 1
        assert changed(start["alice"], trainable(cotrainer.trainers["alice"]))
        assert not changed(start["bob"], trainable(cotrainer.trainers["bob"]))  # never ran
    # Saving now would store alice at step 1 and bob at step 0: a run that cannot resume.
    assert policy_checkpoints(cfg) == {"alice": None, "bob": None}


def test_ctrl_c_stops_a_co_training_process_whose_summary_names_each_checkpoint(
    tiny_overrides: Overrides, tmp_path: Path
) -> None:
    overrides = tiny_overrides(TWO, "run.steps=100000", "games.episodes_per_game=4")
    args = [arg for item in [*overrides, "run.resume=auto"] for arg in ("--set", item)]
    code = "import sys; from strategic_arena.cli import main; raise SystemExit(main(sys.argv[1:]))"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "train", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    metrics = tmp_path / "run" / "metrics.jsonl"
    while not metrics.exists():  # the first step is logged: the loop (and its handler) runs
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout else ""
            pytest.fail(f"training exited with {process.returncode} first:\n{output}")
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    output = process.communicate()[0].decode()
    assert process.returncode == 130, output
    cfg = load_config(None, [*overrides, "run.resume=auto"])
    saved = policy_checkpoints(cfg)
    steps = set()
    for name, path in saved.items():
        assert path is not None, output
        steps.add(int(load_trainer_state(path)["step"]))
        assert f"checkpoint   {name}: {path}  (model: {path / 'policy'})" in output
    (step,) = steps  # every policy saved at one step
    assert step >= 1 and f"stopped at step {step} of 100000" in output
    assert re.search(rf"step {step}: reward=", output)  # the step saved is the last logged
    with CoTrainer(cfg) as resumed:
        assert resumed.step == step
