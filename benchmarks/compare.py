"""The speed regression guard: run the benchmarks, write their figures, compare with the baseline.

Each guarded benchmark runs in its own process with ``--json``; :data:`GUARDED` says how and
which figures its results hold: ratios to the peer run in the same process (ours / PettingZoo,
numba MCTS / OpenSpiel's C++ ``MCTSBot``, the LP's time / ours to an exploitability...), which
hold across machines, and the arena harness's CPU ms per move, which is a property of the
machine (the baseline names it). Every figure says whether higher or lower is better.

    python benchmarks/compare.py                       # run all, write bench.json, compare
    python benchmarks/compare.py --only env_playouts,arena_overhead
    python benchmarks/compare.py --results bench.json  # compare figures already measured
    python benchmarks/compare.py --write-baseline      # run all and make them the baseline

A figure more than ``--tolerance`` (25%) worse than ``benchmarks/baseline.json`` is reported
and the exit status is 1. Timings on a shared machine are noisy, so this is not part of
``make test``; run it before a change to a hot path is submitted (``make bench`` does).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline.json"

Figures = dict[str, dict[str, Any]]


def higher(value: float, unit: str = "x") -> dict[str, Any]:
    """A figure where more is better (a speed ratio, a score)."""
    return {"value": float(value), "better": "higher", "unit": unit}


def lower(value: float, unit: str) -> dict[str, Any]:
    """A figure where less is better (CPU time per move)."""
    return {"value": float(value), "better": "lower", "unit": unit}


def env_playouts(results: dict[str, Any]) -> Figures:
    """Games/s of ours over PettingZoo and over raw pyspiel, per game."""
    return {
        f"{game} ours/{peer.removeprefix('ours/')} games/s": higher(ratio["games_per_s"])
        for game, peers in results["ratios"].items()
        for peer, ratio in peers.items()
    }


def mcts(results: dict[str, Any]) -> Figures:
    """Simulations/s of the numba search over OpenSpiel's C++ MCTSBot, per position."""
    return {
        f"{row['game']} {row['position']} numba/openspiel sims/s": higher(row["ratio"])
        for row in results["rows"]
    }


def cfr(results: dict[str, Any]) -> Figures:
    """The LP's time and OpenSpiel C++ CFR+'s time over ours (CFR+, DCFR, PCFR+), per target."""
    figures: Figures = {}
    lp = results.get("openspiel_lp", {})
    cpp = results.get("openspiel_cpp_cfr+", {}).get("reached", {})
    for algorithm in ("cfr+", "dcfr", "pcfr+"):
        ours = results.get(f"ours_{algorithm}", {}).get("reached", {})
        for target, reached in ours.items():
            if "seconds" in lp:
                figures[f"lp/ours {algorithm} time to {target}"] = higher(
                    lp["seconds"] / reached["seconds"]
                )
            if target in cpp:
                figures[f"openspiel c++ cfr+/ours {algorithm} time to {target}"] = higher(
                    cpp[target]["seconds"] / reached["seconds"]
                )
    return figures


def hanabi_bot(results: dict[str, Any]) -> Figures:
    """The partner's self-play mean score, and what it falls short of the best, per variant.

    Scores, not times: the seeds are fixed, so they move only when the bot's play changes. The
    shortfall is the figure the tolerance guards well (25% of a mean near 4 would let the bot
    lose a whole point; 25% of the shortfall is a few hundredths).
    """
    figures: Figures = {}
    for row in results["rows"]:
        if row["player"] == "hanabi_bot":
            env_id, best = row["env_id"], row["best"]
            figures[f"{env_id} self-play mean"] = higher(row["mean"], "points")
            figures[f"{env_id} self-play points short of {best:g}"] = lower(
                best - row["mean"], "points"
            )
    return figures


def connect_four_solver(results: dict[str, Any]) -> Figures:
    """Positions/s of our weak solver over OpenSpiel's alpha-beta, where both ran."""
    figures: Figures = {}
    for stones, row in results["sets"].items():
        theirs = row.get("openspiel alpha_beta_search")
        if theirs is not None:
            ratio = row["ours weak (W/D/L)"]["positions_per_s"] / theirs["positions_per_s"]
            figures[f"{stones} stones ours weak/openspiel alpha-beta pos/s"] = higher(ratio)
    return figures


def arena_overhead(results: dict[str, Any]) -> Figures:
    """The harness's CPU ms per move at each concurrency (a figure of this machine)."""
    return {
        f"harness ms/move at concurrency {row['concurrency']}": lower(row["ms_per_move"], "ms")
        for row in results["rows"]
    }


def textarena(results: dict[str, Any]) -> Figures:
    """Games/s of the TextArena adapter over TextArena's own loop, per game."""
    return {
        f"{row['env_id']} ours/textarena games/s": higher(row["ratio"]) for row in results["rows"]
    }


@dataclass(frozen=True)
class Guarded:
    """A benchmark in the guard: its script, the arguments it runs with, its figures."""

    script: str
    arguments: tuple[str, ...]
    figures: Callable[[dict[str, Any]], Figures]


#: The benchmarks the guard runs, by name (about five minutes in all on two cores).
GUARDED: dict[str, Guarded] = {
    "env_playouts": Guarded("bench_env_playouts.py", (), env_playouts),
    "mcts": Guarded("bench_mcts.py", ("--no-compile", "--repeats", "21"), mcts),
    "cfr": Guarded("bench_cfr.py", ("--targets", "1e-3", "1e-4", "1e-6"), cfr),
    "hanabi_bot": Guarded("bench_hanabi_bot.py", (), hanabi_bot),
    "connect_four_solver": Guarded("bench_connect_four_solver.py", (), connect_four_solver),
    "arena_overhead": Guarded("bench_arena_overhead.py", ("--games", "200"), arena_overhead),
    "textarena": Guarded("bench_textarena.py", ("--games", "50", "--repeats", "5"), textarena),
}


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def run(names: list[str]) -> dict[str, Any]:
    """Run the benchmarks ``names``; their figures by ``benchmark/figure``."""
    figures: Figures = {}
    failed: list[str] = []
    for name in names:
        guarded = GUARDED[name]
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.json"
            command = [sys.executable, str(HERE / guarded.script), *guarded.arguments]
            print(f"== {name}: {' '.join(command[1:])}", flush=True)
            if subprocess.run([*command, "--json", str(out)], check=False).returncode != 0:
                failed.append(name)  # the others still run; the comparison names it
                continue
            results = json.loads(out.read_text())
        for figure, value in guarded.figures(results).items():
            figures[f"{name}/{figure}"] = value
    return {"machine": machine(), "figures": figures, "failed": failed}


def compare(
    measured: dict[str, Any], baseline: dict[str, Any], tolerance: float
) -> tuple[list[str], list[str]]:
    """Lines for every figure of ``baseline`` that was measured, and the regressions among them.

    A figure regresses when it is more than ``tolerance`` worse: below ``(1 - tolerance)`` of
    the baseline where higher is better, above ``(1 + tolerance)`` where lower is.
    """
    lines, regressions = [], []
    for name, base in sorted(baseline["figures"].items()):
        now = measured["figures"].get(name)
        if now is None:
            continue
        value, reference = now["value"], base["value"]
        if base["better"] == "higher":
            worse = value < (1 - tolerance) * reference
        else:
            worse = value > (1 + tolerance) * reference
        change = value / reference - 1 if reference else 0.0
        line = f"{'WORSE' if worse else 'ok':5} {name}: {value:.4g} (baseline {reference:.4g}, "
        line += f"{change:+.0%}, {base['better']} is better)"
        lines.append(line)
        if worse:
            regressions.append(line)
    return lines, regressions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated benchmark names (default: all)")
    parser.add_argument("--results", type=Path, help="compare this results file; run nothing")
    parser.add_argument("--out", type=Path, default=Path("bench.json"), help="results file")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--tolerance", type=float, default=0.25)
    parser.add_argument(
        "--write-baseline", action="store_true", help="write the measured figures as the baseline"
    )
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(GUARDED)
    unknown = [name for name in names if name not in GUARDED]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(GUARDED)}")
    if args.results is not None:
        measured = json.loads(args.results.read_text())
    else:
        measured = run(names)
        args.out.write_text(json.dumps(measured, indent=2, sort_keys=True) + "\n")
        print(f"figures written to {args.out}")
    if args.write_baseline:
        if measured.get("failed"):
            print(f"not written: {', '.join(measured['failed'])} failed")
            return 1
        old = json.loads(args.baseline.read_text()) if args.baseline.exists() else {"figures": {}}
        old["figures"].update(measured["figures"])
        old["machine"] = measured["machine"]
        args.baseline.write_text(json.dumps(old, indent=2, sort_keys=True) + "\n")
        print(f"baseline written to {args.baseline}")
        return 0
    lines, regressions = compare(measured, json.loads(args.baseline.read_text()), args.tolerance)
    print("\n".join(lines))
    if measured.get("failed"):
        print(f"benchmarks that failed (no figures): {', '.join(measured['failed'])}")
        return 1
    if regressions:
        print(
            f"{len(regressions)} figure(s) more than {args.tolerance:.0%} worse than the baseline"
        )
        return 1
    print(f"every figure within {args.tolerance:.0%} of the baseline")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
