"""Hanabi's text against its game: CPU ms per ``last()`` of the curated env and OpenSpiel's.

Random playouts of ``hanabi_3p-v0`` and of ``openspiel/hanabi(players=3)`` (the same rules,
OpenSpiel's own observation string as the text), driven the standard PettingZoo AEC way; each
``last()`` is timed by the thread's CPU clock, with the text read (``obs["text"]``) or not.
Prints, per env and mode, the median over ``--repeats`` of the mean ms per ``last()``, the
steps per CPU second of the whole loop, the text's mean length, and the curated env's ratio
to OpenSpiel's. The repeats of the four rows are interleaved, so a change of load falls on all.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

import strategic_arena as sa

#: (row label, env id, whether the loop reads the text).
ROWS = (
    ("curated, text read", "hanabi_3p-v0", True),
    ("curated, text unread", "hanabi_3p-v0", False),
    ("openspiel, text read", "openspiel/hanabi(players=3)", True),
    ("openspiel, text unread", "openspiel/hanabi(players=3)", False),
)


class Run(NamedTuple):
    """One repeat of one row."""

    last_ms: float
    steps_per_s: float
    text_chars: float


def playouts(env_id: str, *, read: bool, games: int, seed: int) -> Run:
    """``games`` random games of ``env_id``; ``last()`` and the whole loop timed by CPU."""
    env = sa.make(env_id)
    rng = np.random.default_rng(seed)
    in_last = 0.0
    calls = moves = chars = 0
    start = time.thread_time()
    for game in range(games):
        env.reset(seed=seed if game == 0 else None)
        for _agent in env.agent_iter():
            before = time.thread_time()
            obs, _reward, termination, truncation, _info = env.last()
            if read:
                chars += len(obs["text"])
            in_last += time.thread_time() - before
            calls += 1
            if termination or truncation:
                env.step(None)
                continue
            legal = obs["action_mask"].nonzero()[0]
            env.step(int(legal[int(rng.random() * len(legal))]))
            moves += 1
    total = time.thread_time() - start
    return Run(1000 * in_last / calls, moves / total, chars / calls)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10, help="games per repeat and row")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved repeats")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    runs: dict[str, list[Run]] = {label: [] for label, _, _ in ROWS}
    for repeat in range(args.repeats):
        for label, env_id, read in ROWS:
            runs[label].append(playouts(env_id, read=read, games=args.games, seed=repeat))
    medians = {
        label: (
            statistics.median(r.last_ms for r in rows),
            statistics.median(r.steps_per_s for r in rows),
            rows[0].text_chars,
        )
        for label, rows in runs.items()
    }
    print(f"{'row':24s} {'ms/last()':>10s} {'steps/s':>9s} {'text chars':>11s}")
    for label, (ms, steps, chars) in medians.items():
        print(f"{label:24s} {ms:10.3f} {steps:9.0f} {chars:11.0f}")
    ratios = {}
    for mode in ("text read", "text unread"):
        ratios[mode] = medians[f"curated, {mode}"][0] / medians[f"openspiel, {mode}"][0]
        print(f"curated / openspiel ms per last(), {mode}: {ratios[mode]:.1f}x")
    if args.json is not None:
        rows = [
            {"row": label, "last_ms": ms, "steps_per_s": steps, "text_chars": chars}
            for label, (ms, steps, chars) in medians.items()
        ]
        args.json.write_text(json.dumps({"rows": rows, "ratios": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
