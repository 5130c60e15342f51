"""A collapse into answers that all earn the same reward (no gradient) is measured and named.

The detector's rules on known numbers, then a real tiny run whose every answer is cut at one
token (so every answer is invalid and earns the same -11): its console notes step 1, names the
collapse at step 2 and again in the closing summary; ``metrics.jsonl`` marks both steps. The
shipped tiny recipe (slow) has the signal at every step and ends better than it started.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from strategic_arena.train.algo.collapse import (
    NO_SIGNAL,
    CollapseDetector,
    collapsed_steps,
    is_collapsed,
    longest_streak,
    signal_metrics,
)

Overrides = Callable[..., list[str]]


def test_signal_metrics_count_zero_advantages_and_the_reward_spread() -> None:
    healthy = signal_metrics([0.5, -0.5, 0.0, 1.0], [1.0, -1.0, 0.0, 1.0])
    assert healthy == {
        "train/zero_advantage_fraction": 0.25,
        "train/reward_spread": 2.0,
        NO_SIGNAL: 0.0,
    }
    # Every group's answers earned the same reward: every advantage 0, no signal.
    flat = signal_metrics([0.0, 0.0, 0.0], [-11.0, -11.0, -11.0])
    assert flat[NO_SIGNAL] == 1.0 and flat["train/reward_spread"] == 0.0
    assert signal_metrics([], [])[NO_SIGNAL] == 1.0  # nothing to train on at all


def test_a_zero_gradient_or_no_signal_is_a_collapse() -> None:
    assert is_collapsed({NO_SIGNAL: 1.0, "train/grad_norm": 0.0})
    assert is_collapsed({NO_SIGNAL: 0.0, "train/grad_norm": 0.0})
    assert not is_collapsed({NO_SIGNAL: 0.0, "train/grad_norm": 0.7})
    assert not is_collapsed({"train/reward": -11.0})  # nothing measured: no claim


def test_the_detector_notes_one_step_and_names_a_streak_a_collapse() -> None:
    detector = CollapseDetector()
    dead = {
        NO_SIGNAL: 1.0,
        "train/grad_norm": 0.0,
        "train/reward": -11.0,
        "train/reward_spread": 0.0,
        "train/invalid_rate": 1.0,
        "train/response_length": 1.0,
    }
    assert detector.check(38, {NO_SIGNAL: 0.0, "train/grad_norm": 0.4}) is None
    assert detector.check(39, dead) == (
        "no learning signal at step 39: every trainable answer earned the same reward "
        "(-11.000), so every advantage is 0 and the step changed nothing"
    )
    second = detector.check(40, dead)  # the newcomer's steps 39 and 40
    assert second is not None
    assert second.startswith("COLLAPSE since step 39: 2 steps in a row without learning signal")
    assert "invalid rate 100.0%" in second and "response length 1.00 tokens" in second
    assert "grad norm 0)" in second and "resume from an earlier checkpoint" in second
    third = detector.check(41, dead)
    assert (
        third == "COLLAPSE: step 41 still has no learning signal (3 steps in a row since step 39)"
    )
    assert detector.steps == [39, 40, 41]
    assert detector.check(42, {NO_SIGNAL: 0.0, "train/grad_norm": 0.2}) is None
    assert detector.streak == 0
    # One flat step of a small batch, between learning steps: a note, never a collapse.
    assert detector.check(43, dead) is not None and detector.streak == 1
    assert longest_streak(detector.steps) == (39, 3) and longest_streak([]) == (0, 0)


def test_collapsed_steps_read_back_from_metrics(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    records = [{"step": 1, NO_SIGNAL: 0.0}, {"step": 2, NO_SIGNAL: 1.0}, {"step": 3}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"step": 4, "tr')
    assert collapsed_steps(path) == [2]
    assert collapsed_steps(tmp_path / "missing.jsonl") == []


def test_a_run_whose_answers_all_earn_the_same_reward_says_so(
    tiny_overrides: Overrides, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from strategic_arena.cli import main

    overrides = tiny_overrides("run.steps=2", "sampling.max_tokens=1", "games.opponents=[random]")
    assert main(["train", *[arg for item in overrides for arg in ("--set", item)]]) == 0
    out = capsys.readouterr().out
    assert "no learning signal at step 1: every trainable answer earned the same reward" in out
    assert "COLLAPSE since step 1: 2 steps in a row without learning signal -- at step 2 " in out
    assert "WARNING      collapse: 2 steps in a row without learning signal" in out
    run = Path(
        next(item for item in overrides if item.startswith("run.output_dir=")).split("=", 1)[1]
    )
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r[NO_SIGNAL] for r in records] == [1.0, 1.0]
    assert all(r["train/invalid_rate"] == 1.0 and r["train/grad_norm"] == 0.0 for r in records)


@pytest.mark.slow
def test_the_tiny_cpu_recipe_finishes_better_than_it_started(tmp_path: Path) -> None:
    """``configs/tiny_cpu.yaml`` as shipped (seed 0, 40 steps, about a minute): no step without
    learning signal, and its final evaluation is invalid no more often than any earlier one or
    any training step (the newcomer's run collapsed at step 39 and ended 100% invalid)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from strategic_arena.arena.metrics import summarize
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.cli import main

    config = Path(__file__).resolve().parents[2] / "configs" / "tiny_cpu.yaml"
    out = tmp_path / "tiny"
    assert main(["train", "--config", str(config), "--set", f"run.output_dir={out}"]) == 0
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(records) == 40 and not any(r[NO_SIGNAL] for r in records)
    invalid: dict[int, float] = {}
    with ResultsStore(out / "eval.db") as store:
        for run in store.runs():
            rows = [r for r in summarize(store, [run.name]) if r.seat is None and "@" in r.player]
            answers = sum(r.answers for r in rows)
            invalid[int(run.name.rsplit("-", 1)[1])] = (
                sum(r.invalid_answers for r in rows) / answers
            )
    assert sorted(invalid) == [20, 40]
    assert invalid[40] <= min(invalid.values())
    assert invalid[40] <= min(r["train/invalid_rate"] for r in records)
