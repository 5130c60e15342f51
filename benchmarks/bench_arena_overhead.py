"""The arena harness's own cost per move, against an instant endpoint on localhost.

``strategic-arena serve --player random`` runs in a separate process (an instant random player
behind real HTTP); this process runs an arena evaluation of that endpoint against the random
opponent at Tic-Tac-Toe at several concurrency levels and reports:

* moves/s -- every decision, the endpoint's and the opponent's, over wall-clock time;
* harness CPU ms per move -- this process's CPU time (user + system: the OpenAI client, prompt
  rendering, validation, env stepping, SQLite writes, the event loop) over all moves; the
  endpoint's own time is in the other process and not counted;
* the same CPU time per endpoint call (the moves that went over HTTP: about half).

Each level is run ``--repeats`` times and the median is printed (the spread beside it).
The goal: a harness overhead of at most 0.5 ms per move at concurrency 64.
Run: ``python benchmarks/bench_arena_overhead.py [--games N] [--repeats R] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from strategic_arena.arena.runner import Entrant, run, versus
from strategic_arena.arena.store import ResultsStore
from strategic_arena.backends import OpenAIBackend


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(base_url: str) -> None:
    for _ in range(200):
        try:
            urllib.request.urlopen(base_url + "/models", timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the endpoint did not start")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=400, help="games per concurrency level")
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--repeats", type=int, default=3, help="runs per level (median shown)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    rows = []
    port = free_port()
    exe = Path(sys.executable).with_name("strategic-arena")
    server = subprocess.Popen(
        [str(exe), "serve", "--player", "random", "--port", str(port)],
        stdout=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_up(base_url)
        print(f"endpoint: random player at {base_url} (separate process); game: Tic-Tac-Toe")
        print(
            f"{'concurrency':>11} {'games':>6} {'moves':>6} {'moves/s':>8} "
            f"{'harness ms/move':>16} {'ms/endpoint call':>17}"
        )
        for level in args.levels:
            runs = [measure(base_url, level, args.games) for _ in range(args.repeats)]
            moves_s, ms_move, ms_call = (statistics.median(r[i] for r in runs) for i in range(3))
            spread = sorted(r[1] for r in runs)
            print(
                f"{level:>11} {args.games:>6} {runs[0][3]:>6} {moves_s:>8.0f} "
                f"{ms_move:>16.3f} {ms_call:>17.3f}   (ms/move {spread[0]:.3f}-{spread[-1]:.3f})"
            )
            rows.append(
                {
                    "concurrency": level,
                    "moves_per_s": moves_s,
                    "ms_per_move": ms_move,
                    "ms_per_call": ms_call,
                    "ms_per_move_runs": spread,
                }
            )
    finally:
        server.terminate()
        server.wait()
    print(f"(cores: {os.cpu_count()}; the endpoint process shares them)")
    if args.json is not None:
        machine = {"cpus": os.cpu_count(), "platform": platform.platform()}
        payload = {"games": args.games, "machine": machine, "rows": rows}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")


def measure(base_url: str, level: int, games: int) -> tuple[float, float, float, int]:
    """One evaluation at ``level``: moves/s, CPU ms per move, CPU ms per endpoint call, moves."""
    backend = OpenAIBackend("random", base_url, api_key="unused", seed=0)
    model = Entrant.llm(backend, name="endpoint")
    tasks = versus([model], [Entrant.opponent("random")], ["tic_tac_toe-v0"], games, level)
    with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "b.db") as store:
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        summary = run(store, "bench", tasks, seed=level, concurrency=level, progress=False)
        wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
        seats = {g.id: g.players for g in store.games()}
        stats = store.move_stats()
        moves = len(stats)
        calls = sum(seats[m.game_id][m.seat] == "endpoint" for m in stats)
    assert summary.complete and not summary.failed
    return moves / wall, 1000 * cpu / moves, 1000 * cpu / calls, moves


if __name__ == "__main__":
    main()
