"""Token-balanced micro-batches against the old split (turn i to rank i mod N), on synthetic steps.

A step of ``--turns`` turns with prompts uniform in [300, 1500) tokens and responses
log-normal (median ~400 tokens, capped at 4096) -- the spread of a reasoning model playing
several games -- is split over ``N`` ranks two ways:

* **old**: turn i to rank i mod N, each rank's turns sorted by length, ``--micro-batch`` per
  forward pass;
* **balanced**: :func:`strategic_arena.train.policy.batching.plan_micro_batches` (ranks get equal
  tokens, micro-batches of similar lengths).

Reported, as ratios to the mean tokens per rank (1.0 is perfect), averaged over ``--trials``
seeded steps: the slowest rank's tokens, and the slowest rank's *padded* tokens (rows x the
longest row of each pass, what a forward pass costs). A step waits for its slowest rank.

Usage::

    python benchmarks/bench_batching.py [--turns 256] [--trials 50] [--micro-batch 4]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from strategic_arena.train.policy.batching import plan_micro_batches  # noqa: E402


def _padded(batches: Sequence[Sequence[int]], sizes: Sequence[int]) -> int:
    return sum(len(batch) * max(sizes[i] for i in batch) for batch in batches if batch)


def _old_split(sizes: list[int], world: int, rows: int) -> list[list[list[int]]]:
    per_rank = []
    for rank in range(world):
        mine = sorted(range(rank, len(sizes), world), key=lambda i: sizes[i])
        per_rank.append([mine[k : k + rows] for k in range(0, len(mine), rows)])
    return per_rank


def measure(turns: int, trials: int, rows: int, world: int, seed: int = 0) -> dict[str, float]:
    """Mean ratios (slowest rank / mean) of tokens and padded tokens, old and balanced."""
    rng = np.random.default_rng(seed)
    ratios: dict[str, list[float]] = {k: [] for k in ("old", "balanced", "old_pad", "bal_pad")}
    for _ in range(trials):
        responses = np.minimum(rng.lognormal(6.0, 1.0, turns), 4096)
        sizes = (rng.integers(300, 1500, turns) + responses).astype(int).tolist()
        mean = sum(sizes) / world
        for name, plan in (
            ("old", _old_split(sizes, world, rows)),
            ("balanced", plan_micro_batches(sizes, world, max_rows=rows)),
        ):
            loads = [sum(sizes[i] for batch in rank for i in batch) for rank in plan]
            ratios[name].append(max(loads) / mean)
            pad = "old_pad" if name == "old" else "bal_pad"
            ratios[pad].append(max(_padded(rank, sizes) for rank in plan) / mean)
    return {name: float(np.mean(values)) for name, values in ratios.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=256)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--micro-batch", type=int, default=4)
    args = parser.parse_args()
    print(f"{args.turns} turns, {args.micro_batch} per pass; slowest rank / mean (1.0 = even)")
    print(f"{'ranks':>5}  {'tokens old':>10} {'balanced':>9}  {'padded old':>10} {'balanced':>9}")
    for world in (2, 4, 8):
        r = measure(args.turns, args.trials, args.micro_batch, world)
        print(
            f"{world:>5}  {r['old']:>10.3f} {r['balanced']:>9.3f}  "
            f"{r['old_pad']:>10.3f} {r['bal_pad']:>9.3f}"
        )


if __name__ == "__main__":
    main()
