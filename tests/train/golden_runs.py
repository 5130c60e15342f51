"""Tiny seeded CPU runs whose ``metrics.jsonl`` is pinned under ``tests/train/golden/``.

The files were written by the trainer before it was split into packages (commit ef6bdac); the
test (``test_golden_metrics.py``) runs the same configs on today's code and compares every
field but the timings, so a refactoring that changes what the trainer computes shows up here.
``python -m tests.train.golden_runs`` rewrites the files (only when a change of behaviour is
meant).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.train.conftest import TINY

GOLDEN = Path(__file__).parent / "golden"

#: One config per path through the step: self-play with opponents, snapshots and evaluation
#: (MARSHAL's default estimator); PPO with a critic on a one-agent debate scored by MAPoRL's
#: verifier; RLOO through the replay bank; two policies trained together.
RUNS: dict[str, tuple[str, ...]] = {
    "marshal": (
        "run.steps=3",
        "games.opponents=[random]",
        "games.snapshot_every=1",
        "eval.every=2",
        "eval.games=2",
        "eval.opponents={kuhn_poker-v0: [random]}",
    ),
    "ppo_debate": (
        'games.ids=["debate-v0(agents=1,count=2,problem_seed=25,turns=1)"]',
        "maporl={verifier: exact, penalties: false, form: immediate}",
        "advantage={type: ppo}",
        "run.steps=2",
    ),
    "bank_rloo": (
        "games.ids=[kuhn_poker-v0,tic_tac_toe-v0]",
        "games.episodes_per_game=3",
        "advantage.type=rloo",
        "bank={batch_unit: turns, batch_size: 8, over_collection: 1.5, strata: 2, coverage: 0.5}",
        "run.steps=2",
    ),
    "cotrain": (
        'policies=[{"name": "alice", "seats": [0], "advantage": {"type": "ppo"}}, '
        '{"name": "bob", "seats": [1]}]',
        "run.steps=2",
    ),
}

#: Fields that measure time, not what was computed.
TIMING_PREFIXES = ("time/",)
TIMING_SUFFIXES = ("tokens_per_s", "trajectories_per_s")


def is_timing(key: str) -> bool:
    """Whether a metric is a wall-clock measurement (left out of the comparison)."""
    last = key.rsplit("/", 1)[-1]
    return key.startswith(TIMING_PREFIXES) or "/time/" in key or last.endswith(TIMING_SUFFIXES)


def without_timings(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` without its timing fields."""
    return {key: value for key, value in row.items() if not is_timing(key)}


def run(name: str, output_dir: Path) -> list[dict[str, Any]]:
    """Train the ``name`` config into ``output_dir``; its metrics rows without timings."""
    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.run import train_and_report

    overrides = [*TINY, f"run.output_dir={output_dir}", "run.seed=3", *RUNS[name]]
    assert train_and_report(load_config(None, overrides)) == 0
    lines = (output_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [without_timings(json.loads(line)) for line in lines]


def main(argv: list[str]) -> None:
    """Rewrite the golden files (those named in ``argv``, else all)."""
    import tempfile

    for name in argv or list(RUNS):
        with tempfile.TemporaryDirectory() as tmp:
            rows = run(name, Path(tmp))
        text = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
        (GOLDEN / f"{name}.jsonl").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
