"""The asynchronous loop (``max_staleness >= 1``) on the in-process transformers engine.

Rollouts run in a worker thread while the learner trains; every trained game's oldest turn is
at most ``max_staleness`` versions behind, the metrics say so, the first step is the synchronous
loop's first step, and a kill -9 then resume loses and duplicates no step.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from benchmarks.bench_staleness import DelayedTrainer  # noqa: E402
from strategic_arena.train.config import load_config  # noqa: E402
from strategic_arena.train.loop.metrics import read_metrics  # noqa: E402
from strategic_arena.train.loop.trainer import Trainer  # noqa: E402
from strategic_arena.train.policy.checkpoint import checkpoint_dir, load_trainer_state  # noqa: E402
from tests.train.test_train_resume import _train_process, _wait_for  # noqa: E402

Overrides = Callable[..., list[str]]


def test_async_run_trains_only_games_within_the_bound(tiny_overrides: Overrides) -> None:
    cfg = load_config(
        None, tiny_overrides("run.steps=4", "rollout.max_staleness=1", "games.episodes_per_game=6")
    )
    versions: dict[int, set[int | None]] = {}
    with Trainer(cfg) as trainer:
        assert not trainer.engine.shares_weights  # rollouts sample from their own copy

        def record(step: int, metrics: dict[str, float]) -> None:
            versions[step] = {t.weight_version for e in trainer.last_episodes for t in e.turns}

        assert trainer.train(on_step=record) == 4
    # Step s (1-based) trains version s - 1 on games of versions s - 2 and s - 1 only.
    for step, seen in versions.items():
        assert seen and seen <= {step - 2, step - 1}, (step, seen)
    assert versions[1] == {0}  # round 0 is played before any update
    rows = read_metrics(Path(cfg.run.output_dir) / "metrics.jsonl")
    assert [row["step"] for row in rows] == [1, 2, 3, 4]
    for row in rows:
        assert row["async/max_lag"] <= 1
        assert row["async/dropped_stale"] == 0
        lags = row["async/staleness_lag_0"] + row["async/staleness_lag_1"]
        assert lags == row["train/episodes"] == 6
        assert row["time/learner_idle"] >= 0 and row["time/rollout_idle"] >= 0
        assert row["train/trajectories_per_s"] > 0
    assert rows[0]["async/staleness_lag_0"] == 6


def test_the_first_async_step_is_the_synchronous_first_step(tiny_overrides: Overrides) -> None:
    """Round 0 is played by version 0 before any update: same games, same update."""
    synchronous = Trainer(load_config(None, tiny_overrides("run.steps=3")))
    asynchronous = Trainer(
        load_config(None, tiny_overrides("run.steps=3", "rollout.max_staleness=1"))
    )
    before = {n: p.detach().clone() for n, p in synchronous.learner.model.named_parameters()}
    try:
        sync_metrics = synchronous.train_step()
        async_metrics = asynchronous.train_step()
        for key in ("train/reward", "train/invalid_rate", "train/episodes", "train/turns"):
            assert async_metrics[key] == sync_metrics[key], key
        turns = [(t.response_ids, t.logprobs) for e in synchronous.last_episodes for t in e.turns]
        assert turns == [
            (t.response_ids, t.logprobs) for e in asynchronous.last_episodes for t in e.turns
        ]
        # The same update up to round-off: the async step multiplies each token's term by an
        # importance weight of exp(0) (its learner log-probs recomputed) where sync does not.
        mine = dict(asynchronous.learner.model.named_parameters())
        moved = 0.0
        for name, parameter in synchronous.learner.model.named_parameters():
            torch.testing.assert_close(mine[name], parameter, rtol=1e-4, atol=1e-5)
            moved = max(moved, float((parameter.detach() - before[name]).abs().max()))
        assert moved > 1e-3  # the update is large against the tolerance
    finally:
        synchronous.close()
        asynchronous.close()


def test_async_is_the_synchronous_loop_trained_on_one_step_old_games(
    tiny_overrides: Overrides,
) -> None:
    """The worker thread, the engine's weight copy and its syncs, the pairing of round ``s``
    with step ``s``, the seeds and the lr schedule change nothing: the asynchronous run ends
    with exactly the weights of a one-thread synchronous run (shared weights) whose step ``s``
    trains, with the same correction, on round ``s`` played by version ``s - 1``. What is left
    between it and the synchronous loop is the data's one step of staleness."""
    base = tiny_overrides("run.steps=4", "games.episodes_per_game=6")
    asynchronous = Trainer(load_config(None, [*base, "rollout.max_staleness=1"]))
    delayed = DelayedTrainer(
        load_config(None, [*base, "ppo.old_logprobs=learner", "correction.mode=always"])
    )
    synchronous = Trainer(load_config(None, base))
    try:
        assert delayed.engine.shares_weights and not asynchronous.engine.shares_weights
        curves = [
            [t.train_step()["train/invalid_rate"] for _ in range(4)]
            for t in (asynchronous, delayed, synchronous)
        ]
        assert curves[0] == curves[1]
        assert curves[0][1:] != curves[2][1:]  # the synchronous loop trains on other games
        theirs = dict(delayed.learner.model.named_parameters())
        for name, parameter in asynchronous.learner.model.named_parameters():
            assert torch.equal(parameter, theirs[name]), name
        engine = asynchronous.engine.model.state_dict()  # the worker's copy got version 4
        for name, parameter in asynchronous.learner.model.state_dict().items():
            assert torch.equal(engine[name], parameter), name
    finally:
        for trainer in (asynchronous, delayed, synchronous):
            trainer.close()


@pytest.mark.slow  # a training subprocess, killed, then a resumed run: ~20 s on 2 shared cores
def test_kill_then_resume_an_async_run_loses_and_duplicates_nothing(
    tiny_overrides: Overrides, tmp_path: Path
) -> None:
    """SIGKILL after the step-2 checkpoint; the resumed run finishes steps 3..6 once each.

    "Nothing" is the completed steps and their checkpoints: the games in flight at the kill
    (round 3, and round 2's already trained) are played again from the checkpoint's weights.
    """
    run_dir = tmp_path / "killed"
    overrides = [
        *tiny_overrides("run.steps=6", "rollout.max_staleness=1", "games.episodes_per_game=6"),
        "run.checkpoint_every=2",
        f"run.output_dir={run_dir}",
    ]
    process = _train_process([*overrides, "run.resume=never"])
    _wait_for(checkpoint_dir(run_dir, 2) / "trainer.pt", process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    if process.stdout:
        process.stdout.close()

    cfg = load_config(None, [*overrides, "run.resume=auto"])
    with Trainer(cfg) as resumed:
        start = resumed.step
        assert start >= 2 and start % 2 == 0  # the newest checkpoint the kill left
        assert resumed.train() == 6
    steps = [row["step"] for row in read_metrics(run_dir / "metrics.jsonl")]
    assert steps == [1, 2, 3, 4, 5, 6]
    assert load_trainer_state(checkpoint_dir(run_dir, 6))["step"] == 6
    assert all(row["async/max_lag"] <= 1 for row in read_metrics(run_dir / "metrics.jsonl"))


def test_async_settings_are_checked_and_turn_the_correction_on() -> None:
    with pytest.raises(ValueError, match="max_staleness must be >= 0"):
        load_config(None, ["rollout.max_staleness=-1"])
    with pytest.raises(ValueError, match="vllm_sleep_level"):
        load_config(
            None, ["rollout.engine=vllm", "rollout.max_staleness=1", "placement.vllm_sleep_level=1"]
        )
    with pytest.raises(ValueError, match="episode bank is not supported yet"):
        load_config(None, ["rollout.max_staleness=1", "bank.batch_size=8"])
    assert not load_config(None, []).corrects_behaviour  # transformers, synchronous
    assert load_config(
        None, ["rollout.max_staleness=1"]
    ).corrects_behaviour  # stale turns: corrected
    assert not load_config(
        None, ["rollout.max_staleness=1", "ppo.old_logprobs=engine"]
    ).corrects_behaviour
