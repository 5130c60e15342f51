"""Workers benchmark: games/s of one run over 1, 2 and 4 workers on PostgreSQL, beside SQLite.

One run split over 1, 2 and 4 ``eval`` workers sharing a PostgreSQL store, beside the same run
in one process into SQLite.

The "model" is a solver served over loopback HTTP (minimax whose choice among optimal moves is
seeded by the position, ``tests/servers.py``), so every configuration plays exactly the same
games; the benchmark checks that it did (same keys, seeds and moves as the SQLite run). Each
configuration plays the whole run into a fresh store:

* ``sqlite``: one ``strategic-arena eval`` process, ``--db`` a file (the default store);
* ``postgres xN``: N ``eval`` processes started together with the same command, ``--db`` one
  PostgreSQL database (a server started by the benchmark, as the tests start one).

Two figures per configuration: ``games/s`` over the whole wall time (process start-up and
imports included, what a user waits for) and ``store games/s`` between the first and the last
game stored (the steady rate). Ratios are to the SQLite process of the same call. On one
machine the workers share its cores with the server and the database, so N workers measure the
overhead of sharing, not the speed-up of N machines; across machines each worker brings its own
cores and its own model server.

Run: ``python benchmarks/bench_workers.py [--games N] [--workers 1 2 4] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the test server and the served player live with the tests
    sys.path.insert(0, str(ROOT))

from strategic_arena.arena.store import ResultsStore  # noqa: E402
from strategic_arena.serve import PlayerServer  # noqa: E402
from tests.pg import start_server, unavailable  # noqa: E402
from tests.servers import PositionSeededMinimax  # noqa: E402


@dataclass(frozen=True)
class Result:
    """One configuration's figures."""

    store: str
    workers: int
    games: int
    wall_s: float
    games_per_s: float
    store_games_per_s: float
    same_games: bool


def eval_args(
    db: str, base_url: str, games: int, *extra: str, seed: int = 1, concurrency: int = 4
) -> list[str]:
    """The ``strategic-arena`` arguments of one worker of the run (the tests' workers too)."""
    return [
        "eval",
        "--db",
        db,
        "--base-url",
        base_url,
        "--model",
        "minimax",
        "--envs",
        "tic_tac_toe-v0",
        "--opponents",
        "random",
        "--num-games",
        str(games),
        "--seed",
        str(seed),
        "--concurrency",
        str(concurrency),
        "--quiet",
        "--no-report",
        *extra,
    ]


def command(db: str, base_url: str, games: int, concurrency: int) -> list[str]:
    """One worker's process command."""
    return [
        sys.executable,
        "-m",
        "strategic_arena.cli",
        *eval_args(db, base_url, games, concurrency=concurrency),
    ]


def played(db: str) -> tuple[list[tuple[object, ...]], float]:
    """The stored games (key, seed, history) and the seconds from the first to the last."""
    with ResultsStore.for_reading(db) as store:
        games = store.games()
    span = max(g.finished for g in games) - min(g.finished - g.duration_s for g in games)
    return sorted((g.game_key, g.seed, g.history) for g in games), span


def measure(db: str, workers: int, base_url: str, games: int, concurrency: int) -> Result:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    processes = [
        subprocess.Popen(command(db, base_url, games, concurrency), env=env) for _ in range(workers)
    ]
    codes = [process.wait() for process in processes]
    wall = time.perf_counter() - started
    if any(codes):
        raise SystemExit(f"a worker failed: exit codes {codes}")
    stored, span = played(db)
    return Result(
        "postgres" if db.startswith("postgresql://") else "sqlite",
        workers,
        len(stored),
        wall,
        len(stored) / wall,
        len(stored) / span if span > 0 else float("nan"),
        True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=300, help="games per matchup and seating")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--concurrency", type=int, default=4, help="games in flight per worker")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    reason = unavailable()
    if reason is not None:
        print(f"bench_workers: no PostgreSQL server: {reason}", file=sys.stderr)
        return 2
    server = start_server()
    results: list[Result] = []
    try:
        with (
            PlayerServer(lambda env_id: PositionSeededMinimax(), model="minimax") as served,
            tempfile.TemporaryDirectory() as folder,
        ):
            sqlite_db = str(Path(folder) / "bench.db")
            baseline = measure(sqlite_db, 1, served.base_url, args.games, args.concurrency)
            reference, _ = played(sqlite_db)
            results.append(baseline)
            for workers in args.workers:
                db = server.url(server.create_database())
                result = measure(db, workers, served.base_url, args.games, args.concurrency)
                same = played(db)[0] == reference
                results.append(Result(**{**asdict(result), "same_games": same}))
    finally:
        server.stop()
    print(f"{'store':10s} {'workers':>7s} {'games':>6s} {'wall s':>7s} {'games/s':>8s} "
          f"{'ratio':>6s} {'store games/s':>13s} {'ratio':>6s} same games")  # fmt: skip
    for result in results:
        print(
            f"{result.store:10s} {result.workers:7d} {result.games:6d} {result.wall_s:7.1f} "
            f"{result.games_per_s:8.1f} {result.games_per_s / baseline.games_per_s:6.2f} "
            f"{result.store_games_per_s:13.1f} "
            f"{result.store_games_per_s / baseline.store_games_per_s:6.2f} {result.same_games}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    return 0 if all(result.same_games for result in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
