"""MCTS simulations per second: the numba search of :mod:`opponents.mcts` vs OpenSpiel's C++ bot.

Both run UCT with one uniformly random rollout per leaf, the same ``uct_c`` and the same
number of simulations, without solving, from the same positions (the start and a few
mid-game positions of Tic-Tac-Toe and Connect Four). Ours is timed through the public
:func:`opponents.mcts.search` (history replay and result building included); OpenSpiel's
through ``pyspiel.MCTSBot.mcts_search`` with a ``pyspiel.RandomRolloutEvaluator``. Each repeat
runs one search of each, interleaved, with a new seed; the table shows the median rate over
the repeats and the ratio of the medians.

The clock (``--clock``) is wall time by default (the regression guard's baseline is in wall
time); ``--clock cpu`` times both by this thread's CPU time, which does not drift with the
machine's load: both searches run in the calling thread, and on a shared machine wall time
also counts the time a search waited for a core, which grows with the search's length (a
search longer than a scheduler slice is preempted more often). Under load, wall-time ratios
favour the shorter search (Connect Four read 89-234x under heavy load), and our longer
Tic-Tac-Toe searches looked as if they slowed sharply past ~4,000 simulations (wall 1.1 ms at
4,000, 69 ms at 10,000, where the CPU time is 1.1 and 3.0 ms). Part of that CPU time was the
search's own: its node arrays were allocated anew by every search, past a few thousand
simulations in fresh pages, each one a page fault; they are now reused (benchmarks/README.md).

Numba compile time is measured apart: the script runs itself twice in subprocesses that share
a fresh ``NUMBA_CACHE_DIR``; the first compiles everything, the second loads the cache. Each
times its imports and its first Tic-Tac-Toe and Connect Four searches.

Usage::

    python benchmarks/bench_mcts.py [--simulations 1000] [--repeats 7] [--uct-c 2.0]
                                    [--json results.json] [--no-compile] [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: (env id, OpenSpiel game, position label, action history)
POSITIONS: list[tuple[str, str, str, list[int]]] = [
    ("tic_tac_toe-v0", "tic_tac_toe", "start", []),
    ("tic_tac_toe-v0", "tic_tac_toe", "2 moves", [4, 0]),
    ("tic_tac_toe-v0", "tic_tac_toe", "4 moves", [4, 0, 2, 6]),
    ("connect_four-v0", "connect_four", "start", []),
    ("connect_four-v0", "connect_four", "6 moves", [3, 3, 2, 4, 3, 2]),
    ("connect_four-v0", "connect_four", "12 moves", [3, 3, 2, 4, 3, 2, 4, 4, 1, 5, 2, 3]),
]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--simulations", type=int, default=1000, help="simulations per search")
    parser.add_argument("--repeats", type=int, default=7, help="searches per position and bot")
    parser.add_argument("--uct-c", type=float, default=2.0, help="UCT exploration constant")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument(
        "--no-compile", action="store_true", help="skip the compile-time subprocesses"
    )
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: wall time (default, as the guard's baseline); cpu: this thread's CPU time "
        "(steady on a shared machine)",
    )
    parser.add_argument("--compile-probe", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def compile_probe() -> dict[str, float]:
    """In a subprocess: seconds to import and to run the first searches (compile or load)."""
    started = time.perf_counter()
    from opponents.mcts import MCTSConfig, search

    imported = time.perf_counter()
    search("tic_tac_toe-v0", [], MCTSConfig(10), seed=0)
    first_ttt = time.perf_counter()
    search("connect_four-v0", [], MCTSConfig(10), seed=0)
    first_c4 = time.perf_counter()
    search("connect_four-v0", [], MCTSConfig(10), seed=1)
    warm = time.perf_counter()
    return {
        "import_s": imported - started,
        "first_search_tic_tac_toe_s": first_ttt - imported,
        "first_search_connect_four_s": first_c4 - first_ttt,
        "warm_search_s": warm - first_c4,
    }


def measure_compile() -> dict[str, dict[str, float]]:
    """Run :func:`compile_probe` twice in fresh processes sharing a new numba cache."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("cold (compiles)", "warm (loads the cache)"):
            started = time.perf_counter()
            output = subprocess.run(
                [sys.executable, __file__, "--compile-probe"],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            probe = json.loads(output.strip().splitlines()[-1])
            probe["process_s"] = time.perf_counter() - started
            results[label] = probe
    return results


#: The clocks a search can be timed by (see the module docstring).
CLOCKS = {"cpu": time.thread_time, "wall": time.perf_counter}


def measure_rates(
    simulations: int, repeats: int, uct_c: float, clock: str = "wall"
) -> list[dict[str, Any]]:
    """Median simulations per second of both searches on every position."""
    now = CLOCKS[clock]
    import pyspiel

    from opponents.mcts import MCTSConfig, search

    config = MCTSConfig(simulations, uct_c)
    rows = []
    for env_id, game_name, label, history in POSITIONS:
        game = pyspiel.load_game(game_name)
        state = game.new_initial_state()
        for action in history:
            state.apply_action(action)
        assert not state.is_terminal(), (game_name, history)
        search(env_id, history, MCTSConfig(10), seed=0)  # compile or load outside the timing
        ours: list[float] = []
        theirs: list[float] = []
        for repeat in range(repeats):
            started = now()
            result = search(env_id, history, config, seed=repeat)
            ours.append(result.simulations / (now() - started))
            bot = pyspiel.MCTSBot(
                game,
                pyspiel.RandomRolloutEvaluator(1, repeat),
                uct_c,
                simulations,
                1000,  # max_memory_mb
                False,  # solve
                repeat,  # seed
                False,  # verbose
            )
            started = now()
            root = bot.mcts_search(state)
            theirs.append(root.explore_count / (now() - started))
        rows.append(
            {
                "game": game_name,
                "position": label,
                "history": history,
                "simulations": simulations,
                "numba_sims_per_s": statistics.median(ours),
                "openspiel_sims_per_s": statistics.median(theirs),
                "ratio": statistics.median(ours) / statistics.median(theirs),
            }
        )
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    """The rates as an aligned text table."""
    lines = [
        f"{'game':<13} {'position':<9} {'sims':>6} {'numba sims/s':>13} "
        f"{'OpenSpiel sims/s':>17} {'ratio':>7}"
    ]
    for row in rows:
        lines.append(
            f"{row['game']:<13} {row['position']:<9} {row['simulations']:>6} "
            f"{row['numba_sims_per_s']:>13,.0f} {row['openspiel_sims_per_s']:>17,.0f} "
            f"{row['ratio']:>6.1f}x"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table (and compile times), optionally write JSON."""
    args = _parse(argv)
    if args.compile_probe:
        print(json.dumps(compile_probe()))
        return 0
    if args.simulations < 2 or args.repeats < 1:
        raise SystemExit("--simulations must be >= 2 and --repeats >= 1")
    import numba
    import pyspiel

    report: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "numba": numba.__version__,
            "open_spiel": getattr(pyspiel, "__version__", "unknown"),
        },
        "uct_c": args.uct_c,
        "repeats": args.repeats,
        "clock": args.clock,
    }
    if not args.no_compile:
        report["compile"] = measure_compile()
        print("numba compile (fresh NUMBA_CACHE_DIR; seconds):")
        for label, probe in report["compile"].items():
            print(
                f"  {label:<23} import {probe['import_s']:.2f}  first TTT search "
                f"{probe['first_search_tic_tac_toe_s']:.2f}  first C4 search "
                f"{probe['first_search_connect_four_s']:.3f}  process {probe['process_s']:.2f}"
            )
        print()
    report["rows"] = measure_rates(args.simulations, args.repeats, args.uct_c, args.clock)
    print(
        f"UCT, 1 random rollout per leaf, uct_c={args.uct_c}, median of {args.repeats}, "
        f"{args.clock} clock:"
    )
    print(format_table(report["rows"]))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
