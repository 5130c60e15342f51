"""The arena harness's own cost per move, against an instant endpoint on localhost.

``strategic-arena serve --player random`` runs in a separate process (an instant random player
behind real HTTP); this process runs an arena evaluation of that endpoint against the random
opponent at Tic-Tac-Toe at several concurrency levels and reports:

* moves/s -- every decision, the endpoint's and the opponent's, over wall-clock time;
* harness CPU ms per move -- this process's CPU time (user + system: the OpenAI client, prompt
  rendering, validation, env stepping, SQLite writes, the event loop) over all moves; the
  endpoint's own time is in the other process and not counted;
* the same CPU time per endpoint call (the moves that went over HTTP: about half).

The goal the arena issue sets is a harness overhead of at most 2 ms per move at concurrency 64.
Run: ``python benchmarks/bench_arena_overhead.py [--games N]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
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
    args = parser.parse_args()
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
            backend = OpenAIBackend("random", base_url, api_key="unused", seed=0)
            model = Entrant.llm(backend, name="endpoint")
            tasks = versus(
                [model], [Entrant.opponent("random")], ["tic_tac_toe-v0"], args.games, level
            )
            with tempfile.TemporaryDirectory() as tmp, ResultsStore(Path(tmp) / "b.db") as store:
                cpu0, wall0 = cpu_seconds(), time.perf_counter()
                summary = run(store, "bench", tasks, seed=level, concurrency=level, progress=False)
                wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
                seats = {g.id: g.players for g in store.games()}
                stats = store.move_stats()
                moves = len(stats)
                calls = sum(seats[m.game_id][m.seat] == "endpoint" for m in stats)
            assert summary.complete and not summary.failed
            print(
                f"{level:>11} {summary.played:>6} {moves:>6} {moves / wall:>8.0f} "
                f"{1000 * cpu / moves:>16.3f} {1000 * cpu / calls:>17.3f}"
            )
    finally:
        server.terminate()
        server.wait()
    print(f"(cores: {os.cpu_count()}; the endpoint process shares them)")


if __name__ == "__main__":
    main()
