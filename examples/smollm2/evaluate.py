"""Evaluate a training checkpoint against the config's ``eval_opponents`` with more games.

The trainer evaluates every ``eval_every`` steps with ``eval_games`` games; a claim such as
"beats the random opponent" needs more games than a training run can spare. This script loads
a checkpoint exactly as a resumed run would (same config, same engine: a vLLM server for
``engine: vllm``), plays ``--games`` games per opponent and prints the ``eval/`` metrics with
95% confidence intervals. Games go to ``--db`` (a results store; rerunning resumes it).

Usage::

    python examples/smollm2/evaluate.py --config configs/smollm2_kuhn.yaml
        --checkpoint runs/smollm2-kuhn/checkpoints/step-000020 --games 400
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path


def main() -> int:
    """Parse the arguments, evaluate the checkpoint, print one line per opponent and seat."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="the run's config file")
    parser.add_argument("--checkpoint", required=True, help="a checkpoint directory of the run")
    parser.add_argument("--games", type=int, default=400, help="games per opponent (default 400)")
    parser.add_argument("--db", default=None, help="results store (default CHECKPOINT/eval.db)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="config override"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)

    from strategic_arena.arena.metrics import summarize
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.trainer import Trainer

    checkpoint = Path(args.checkpoint)
    if not (checkpoint / "trainer.pt").exists():
        parser.error(f"{checkpoint} is not a checkpoint directory (no trainer.pt)")
    db = Path(args.db) if args.db else checkpoint / "eval.db"
    overrides = [*args.set, f"eval.games={args.games}", f"eval.db={db}", f"run.resume={checkpoint}"]
    cfg = load_config(args.config, overrides)
    with Trainer(cfg) as trainer:
        trainer.evaluate()
        step = trainer.step
    with ResultsStore(db) as store:
        for row in summarize(store, [f"{cfg.run.name}/eval/step-{step:06d}"]):
            if row.player.endswith(f"@step-{step}"):
                seat = "both seats" if row.seat is None else f"seat {row.seat}"
                print(
                    f"{row.env_id} vs {row.opponent} ({seat}): {row.games} games, mean return "
                    f"{row.mean_return:+.4f} ± {row.ci95:.4f} (95% CI), wins {row.wins}, "
                    f"losses {row.losses}, invalid {row.invalid_rate:.1%}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
