"""Why the asynchronous loop learns slower: a defect of the loop, or one step of staleness?

Trains ``configs/tiny_vllm.yaml`` on the in-process transformers engine (CPU, no server, ~1 s
a step) in up to three loops, each from the same seed:

1. ``sync``: ``max_staleness: 0`` -- step ``s`` trains on games played by version ``s``;
2. ``async``: ``max_staleness: 1`` -- the rollout worker thread with its own copy of the
   weights; step ``s`` trains on round ``s``, played by version ``s - 1`` while step ``s - 1``
   trained, with the per-turn importance correction;
3. ``delayed``: the *synchronous* loop (one thread, the engine shares the learner's module, no
   worker, no weight copies) whose step ``s`` trains on the games of round ``s`` played one
   step early, by version ``s - 1``, with the same correction (``old_logprobs: learner``,
   ``importance_correction: always``).

``async`` and ``delayed`` see the same games and apply the same update, so if their curves and
final weights agree, nothing the asynchronous loop adds -- the thread, the engine's copy of
the weights and its syncs, the pairing of rounds with steps, the seeds, the learning-rate
schedule -- is the cause of a gap to ``sync``: what remains is the data's one step of
staleness. ``--set`` varies both runs (``lr=1e-3``, ``is_level=sequence``, ``tis_cap=null``,
``importance_correction=never``) to see which settings the gap depends on.

For each loop it reports the first step whose invalid-answer rate is below 0.1, the mean
invalid rate of the last ``--tail`` steps, and the largest absolute difference between the
final weights of ``async`` and ``delayed``.

Usage::

    python benchmarks/bench_staleness.py [--steps 25] [--seeds 0,1,2] [--set lr=1e-3] [--json out]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from strategic_arena.rl.episode import Episode  # noqa: E402
from strategic_arena.train.config import TrainConfig, load_config  # noqa: E402
from strategic_arena.train.loop.trainer import Trainer  # noqa: E402

RECIPE = ROOT / "configs" / "tiny_vllm.yaml"
LOOPS = ("sync", "async", "delayed")

#: Overrides of each loop (``delayed`` is a synchronous run with the async loop's correction).
LOOP_OVERRIDES = {
    "sync": ["rollout.max_staleness=0"],
    "async": ["rollout.max_staleness=1", "ppo.old_logprobs=auto"],
    "delayed": ["rollout.max_staleness=0", "ppo.old_logprobs=learner", "correction.mode=always"],
}


class DelayedTrainer(Trainer):
    """The synchronous loop trained on one-step-old games.

    Step ``s`` gets round ``s`` played by version ``s - 1`` (round 0, like the asynchronous
    loop's, by version 0); one thread, the engine sharing the learner's module.
    """

    _next_round: list[Episode] | None = None

    def collect(self, step: int) -> tuple[list[Episode], dict[str, float]]:
        """Round ``step`` (played a step early), then play round ``step + 1`` with these weights."""
        episodes = self._next_round if self._next_round is not None else self.generate(step)
        last = step + 1 >= self.cfg.run.steps
        self._next_round = None if last else self.generate(step + 1)
        return episodes, {"train/dropped_games": 0.0}


def config(loop: str, seed: int, steps: int, out: Path, overrides: list[str]) -> TrainConfig:
    """The recipe on the transformers engine for ``loop`` (one of :data:`LOOPS`)."""
    return load_config(
        str(RECIPE),
        [
            "rollout.engine=transformers",
            f"run.seed={seed}",
            f"run.steps={steps}",
            f"run.output_dir={out}",
            "run.resume=never",
            "eval.every=0",
            "run.checkpoint_every=0",
            "run.tensorboard=false",
            *LOOP_OVERRIDES[loop],
            *overrides,
        ],
    )


def run(cfg: TrainConfig, loop: str) -> tuple[list[float], dict[str, Any]]:
    """Train ``cfg`` in ``loop``; the invalid rate per step and the final weights (on the CPU)."""
    trainer_type = DelayedTrainer if loop == "delayed" else Trainer
    invalid: list[float] = []
    with trainer_type(cfg) as trainer:
        trainer.train(on_step=lambda _, metrics: invalid.append(metrics["train/invalid_rate"]))
        weights = {
            k: v.detach().cpu().clone() for k, v in trainer.learner.model.state_dict().items()
        }
    return invalid, weights


def max_weight_difference(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The largest absolute difference between two state dicts of the same model."""
    return max(float((a[name] - b[name]).abs().max()) for name in a)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=25, help="updates per run")
    parser.add_argument("--seeds", default="0", help="comma-separated run seeds")
    parser.add_argument("--loops", default=",".join(LOOPS), help="comma-separated loops")
    parser.add_argument("--tail", type=int, default=5, help="steps averaged for the tail")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="config override (all)"
    )
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    loops = args.loops.split(",")
    results: dict[str, Any] = {"overrides": args.set, "seeds": {}}
    print(
        f"{'seed':>4} {'loop':>8} {'first invalid<0.1':>18} {'invalid, last ' + str(args.tail):>16}"
    )
    for seed in (int(s) for s in args.seeds.split(",")):
        row: dict[str, Any] = {}
        weights: dict[str, dict[str, Any]] = {}
        for loop in loops:
            with tempfile.TemporaryDirectory(prefix="bench-staleness-") as scratch:
                cfg = config(loop, seed, args.steps, Path(scratch), args.set)
                invalid, weights[loop] = run(cfg, loop)
            first = next((s for s, rate in enumerate(invalid, 1) if rate < 0.1), None)
            tail = sum(invalid[-args.tail :]) / len(invalid[-args.tail :])
            row[loop] = {"invalid_rate": invalid, "first_below_0.1": first, "tail": tail}
            print(f"{seed:>4} {loop:>8} {first!s:>18} {tail:>16.3f}", flush=True)
        if "async" in weights and "delayed" in weights:
            row["async_vs_delayed_max_weight_diff"] = max_weight_difference(
                weights["async"], weights["delayed"]
            )
            print(f"{seed:>4} async vs delayed: {row['async_vs_delayed_max_weight_diff']:.3g}")
        results["seeds"][str(seed)] = row
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
