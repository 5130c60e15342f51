"""Connect Four solver speed: positions solved per second and nodes per second.

Positions come from "careful" random games (take an immediate win, avoid moves that let the
opponent win at once, otherwise uniform), seeded, cut at a given number of stones: late
(30 stones), mid-game (24, 18) and early (14, 10) sets. Each position is solved by
:func:`opponents.connect_four_solver.solve_with_stats` with the transposition table cleared
first (cold, as in Pons' benchmarks), exactly (the score) and weakly (win/draw/loss).

OpenSpiel ships no Connect Four solver; its only generic exact search usable here is the
Python ``open_spiel.python.algorithms.minimax.alpha_beta_search`` (plain alpha-beta over
``pyspiel`` states, no transposition table, win/draw/loss values). It is timed on the late
set only (earlier sets would take hours), and its values are checked against ours.

Usage::

    python benchmarks/bench_connect_four_solver.py [--positions 20] [--seed 0]
        [--stones 30 24 18 14 10] [--skip-openspiel] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from opponents.connect_four_solver import (  # noqa: E402
    clear_transposition_table,
    position_from_history,
    solve_with_stats,
)

OPENSPIEL_MAX_STONES_DEFAULT = 30


def careful_game(rng: np.random.Generator, stones: int) -> list[int] | None:
    """A careful random game cut at ``stones`` stones (``None`` if it ended before)."""
    history: list[int] = []
    while len(history) < stones:
        pos = position_from_history(history)
        if pos.over:
            return None
        columns = pos.legal_columns()
        wins = [c for c in columns if pos.wins(c)]
        if wins:
            history.append(wins[0])
            continue
        safe = []
        for column in columns:
            child = pos.play(column)
            if not any(child.wins(c) for c in child.legal_columns()):
                safe.append(column)
        choices = safe or columns
        history.append(int(choices[int(rng.integers(len(choices)))]))
    return None if position_from_history(history).over else history


def position_set(seed: int, stones: int, count: int) -> list[list[int]]:
    """``count`` distinct careful positions with ``stones`` stones."""
    rng = np.random.default_rng([seed, stones])
    out: list[list[int]] = []
    seen: set[tuple[int, ...]] = set()
    while len(out) < count:
        history = careful_game(rng, stones)
        if history is not None and tuple(history) not in seen:
            seen.add(tuple(history))
            out.append(history)
    return out


def time_ours(positions: list[list[int]], weak: bool) -> dict[str, Any]:
    """Solve each position cold; total time, nodes and the scores."""
    seconds: list[float] = []
    nodes: list[int] = []
    scores: list[int] = []
    for history in positions:
        clear_transposition_table()
        started = time.perf_counter()
        result = solve_with_stats(history, weak=weak)
        seconds.append(time.perf_counter() - started)
        nodes.append(result.nodes)
        scores.append(result.score)
    total = sum(seconds)
    return {
        "positions": len(positions),
        "seconds": total,
        "positions_per_s": len(positions) / total,
        "mean_ms": 1000 * total / len(positions),
        "max_ms": 1000 * max(seconds),
        "median_ms": 1000 * statistics.median(seconds),
        "nodes": sum(nodes),
        "nodes_per_s": sum(nodes) / total,
        "scores": scores,
    }


def time_openspiel(positions: list[list[int]]) -> dict[str, Any]:
    """OpenSpiel's Python alpha-beta to the end of the game; values for the player to move."""
    import pyspiel
    from open_spiel.python.algorithms.minimax import alpha_beta_search

    game = pyspiel.load_game("connect_four")
    values: list[int] = []
    started = time.perf_counter()
    for history in positions:
        state = game.new_initial_state()
        for action in history:
            state.apply_action(action)
        mover = state.current_player()
        value, _ = alpha_beta_search(game, state=state, maximizing_player_id=mover)
        values.append(round(value))
    total = time.perf_counter() - started
    return {
        "positions": len(positions),
        "seconds": total,
        "positions_per_s": len(positions) / total,
        "mean_ms": 1000 * total / len(positions),
        "values": values,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--positions", type=int, default=20, help="positions per set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stones", type=int, nargs="+", default=[30, 24, 18, 14, 10])
    parser.add_argument("--skip-openspiel", action="store_true")
    parser.add_argument(
        "--openspiel-min-stones",
        type=int,
        default=OPENSPIEL_MAX_STONES_DEFAULT,
        help="time OpenSpiel's alpha-beta only on sets with at least this many stones",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    started = time.perf_counter()
    solve_with_stats([int(c) for c in "4026264661222444532401000113"])  # compile or load
    warmup_s = time.perf_counter() - started
    print(f"numba warm-up (compile or cache load + first solve): {warmup_s:.2f} s")
    print(f"{platform.processor() or platform.machine()}, python {platform.python_version()}")
    header = (
        f"{'stones':>6} {'solver':<22} {'pos/s':>9} {'mean ms':>9} {'median':>9} "
        f"{'max ms':>9} {'Mnodes/s':>9}"
    )
    print(header)
    results: dict[str, Any] = {"warmup_s": warmup_s, "sets": {}}
    for stones in args.stones:
        positions = position_set(args.seed, stones, args.positions)
        row: dict[str, Any] = {"histories": positions}
        for label, weak in (("ours exact", False), ("ours weak (W/D/L)", True)):
            stats = time_ours(positions, weak)
            row[label] = stats
            print(
                f"{stones:>6} {label:<22} {stats['positions_per_s']:>9.1f} "
                f"{stats['mean_ms']:>9.2f} {stats['median_ms']:>9.2f} {stats['max_ms']:>9.1f} "
                f"{stats['nodes_per_s'] / 1e6:>9.2f}"
            )
        if not args.skip_openspiel and stones >= args.openspiel_min_stones:
            theirs = time_openspiel(positions)
            row["openspiel alpha_beta_search"] = theirs
            ours_signs = [int(np.sign(s)) for s in row["ours exact"]["scores"]]
            agree = ours_signs == theirs["values"]
            print(
                f"{stones:>6} {'openspiel alpha-beta':<22} {theirs['positions_per_s']:>9.1f} "
                f"{theirs['mean_ms']:>9.2f} {'':>9} {'':>9} {'':>9}   values agree: {agree}"
            )
            ratio = row["ours weak (W/D/L)"]["positions_per_s"] / theirs["positions_per_s"]
            print(f"{'':>6} ours weak / openspiel: {ratio:.0f}x")
        results["sets"][str(stones)] = row
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
