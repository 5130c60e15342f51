"""Fault benchmark: a flaky server and SIGKILLs must change nothing in what ``eval`` scores.

The "model" is a deterministic player served over loopback HTTP by the test suite's
fault-injecting server (``tests/servers.py``): its answer depends only on what its seat knows, so
a game replayed from its seed is the same game. Steps:

1. **Reference.** ``strategic-arena eval`` against the server with no faults.
2. **Faults and kills.** The same command (same seed and run name, another database) against
   the same server failing ``--fault-rate`` of the requests, each failure drawn from
   :data:`tests.servers.INFRASTRUCTURE_FAULTS`: HTTP 500, 429 with ``Retry-After``, a dropped
   connection, a hang past ``--timeout``, truncated JSON, a reply without choices, a reply with
   empty content. It is started ``--kills`` times and killed with SIGKILL at a random moment
   after its first stored game, then restarted until it exits 0 (every game scored).
3. **Checks.** Exactly the expected games are scored, each once; each has the reference's
   OpenSpiel history and returns (same deals, same moves, same outcomes); the report shows the
   infrastructure failures apart from the model's errors whenever the store holds any (the
   failures of games in flight at a kill are lost with them); without kills, every injected
   failure is recorded exactly once.

Run: ``python benchmarks/bench_faults.py [--games N] [--kills K] [--json PATH]``; prints the
figures and exits 1 if a check fails. Loopback only; the default size takes one to one and a half
minutes on two busy cores.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the fault server lives with the tests
    sys.path.insert(0, str(ROOT))

from strategic_arena.arena.metrics import infrastructure  # noqa: E402
from strategic_arena.arena.store import ResultsStore  # noqa: E402
from strategic_arena.serve import PlayerService  # noqa: E402
from strategic_arena.turn import Decision, GameState  # noqa: E402
from tests.servers import INFRASTRUCTURE_FAULTS, FaultServer  # noqa: E402

#: The model's name on the server and in the store.
MODEL = "state-hash"
RUN = "faults"


class StateHashPlayer:
    """A model whose move is a hash of its seat's information state.

    The same question always gets the same answer, whatever was asked before and however often
    (retries, replays, concurrent games), so every outcome is reproducible.
    """

    name = MODEL

    async def act(self, state: GameState, seat: int) -> Decision:
        """The legal action the information state hashes to."""
        legal = state.legal_actions(seat)
        key = f"{state.env_id}|{seat}|{state.information_state(seat)}".encode()
        action = legal[int.from_bytes(hashlib.sha256(key).digest()[:8], "little") % len(legal)]
        return Decision(action, state.menu(seat)[action])


@dataclass
class Result:
    """The benchmark's figures and checks."""

    games_expected: int
    reference_games: int = 0
    scored_games: int = 0
    duplicate_keys: int = 0
    mismatched_games: int = 0
    missing_keys: int = 0
    kills: int = 0
    killed_mid_run: int = 0
    restarts: int = 0
    requests: int = 0
    injected: dict[str, int] = field(default_factory=dict)
    failed_requests_recorded: int = 0
    incomplete_games_stored: int = 0
    report_shows_infrastructure: bool = False
    wall_s: float = 0.0

    @property
    def passed(self) -> bool:
        """Every check holds."""
        return (
            self.reference_games == self.scored_games == self.games_expected
            and self.duplicate_keys == 0
            and self.mismatched_games == 0
            and self.missing_keys == 0
            and self.report_shows_infrastructure == self.failures_stored
            and (self.kills > 0 or self.failed_requests_recorded == sum(self.injected.values()))
        )

    @property
    def failures_stored(self) -> bool:
        """The store holds at least one failed request or incomplete game.

        A run killed with SIGKILL loses the failures of the games it had in flight (a game's
        moves are written when it ends), so with kills only the report's consistency with the
        store is checked; without kills every injected failure must be recorded exactly once.
        """
        return self.failed_requests_recorded + self.incomplete_games_stored > 0


def eval_command(base_url: str, db: Path, args: argparse.Namespace) -> list[str]:
    """The ``eval`` command of both runs (only the database differs)."""
    return [
        sys.executable,
        "-m",
        "strategic_arena.cli",
        "eval",
        "--base-url",
        base_url,
        "--model",
        MODEL,
        "--envs",
        ",".join(args.envs),
        "--opponents",
        "random",
        "--num-games",
        str(args.games),
        "--seed",
        str(args.seed),
        "--timeout",
        str(args.timeout),
        "--max-attempts",
        str(args.max_attempts),
        "--max-replays",
        str(args.max_replays),
        "--concurrency",
        str(args.concurrency),
        "--run-name",
        RUN,
        "--db",
        str(db),
        "--no-report",
    ]


def scored(db: Path) -> dict[str, tuple[tuple[int, ...], tuple[float, ...]]]:
    """History and returns of each scored game, by key."""
    with ResultsStore(db) as store:
        games = store.games(store.run_id(RUN))
    return {game.game_key: (game.history, game.returns) for game in games}


def measure(args: argparse.Namespace) -> Result:
    """Run the benchmark described in the module docstring."""
    started = time.perf_counter()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT)}
    result = Result(games_expected=len(args.envs) * args.games)
    rng = np.random.default_rng(args.seed)
    service = PlayerService(MODEL, lambda env_id: StateHashPlayer())
    with tempfile.TemporaryDirectory() as tmp:
        clean, faulty = Path(tmp) / "clean.sqlite", Path(tmp) / "faulty.sqlite"
        server = FaultServer(service=service)
        try:
            subprocess.run(
                eval_command(server.base_url, clean, args),
                env=env,
                check=True,
                timeout=900,
                capture_output=True,
            )
        finally:
            server.close()
        server = FaultServer(
            rate=args.fault_rate,
            seed=args.seed,
            slow_s=args.timeout + 60.0,  # a cap: a slow answer waits for the hang-up
            kinds=INFRASTRUCTURE_FAULTS,
            service=service,
        )
        command = eval_command(server.base_url, faulty, args)
        try:
            for _ in range(args.kills):
                process = subprocess.Popen(
                    command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
                )
                assert process.stderr is not None
                process.stderr.readline()  # the first progress line: a game is stored
                time.sleep(float(rng.uniform(0.0, args.max_delay)))
                if process.poll() is None:
                    process.send_signal(signal.SIGKILL)  # no cleanup at all
                    result.killed_mid_run += 1
                process.wait()
                process.stderr.close()
                result.kills += 1
            for _ in range(args.max_restarts):
                result.restarts += 1
                done = subprocess.run(command, env=env, capture_output=True, timeout=900)
                if done.returncode == 0:
                    break
        finally:
            server.close()
        result.requests = sum(server.served.values())
        result.injected = {k: v for k, v in sorted(server.served.items()) if k != "ok"}
        reference, outcome = scored(clean), scored(faulty)
        result.reference_games, result.scored_games = len(reference), len(outcome)
        result.missing_keys = len(set(reference) ^ set(outcome))
        result.mismatched_games = sum(
            outcome[key] != value for key, value in reference.items() if key in outcome
        )
        with sqlite3.connect(faulty) as con:
            result.duplicate_keys = con.execute(
                "SELECT COUNT(*) FROM (SELECT game_key FROM games WHERE status != 'incomplete' "
                "GROUP BY run_id, game_key HAVING COUNT(*) > 1)"
            ).fetchone()[0]
        with ResultsStore(faulty) as store:
            for item in infrastructure(store, [RUN]):
                result.failed_requests_recorded += item.failed_requests
                result.incomplete_games_stored += item.incomplete_games
        report = subprocess.run(
            [sys.executable, "-m", "strategic_arena.cli", "report", "--db", str(faulty)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        result.report_shows_infrastructure = "Infrastructure failures" in report.stdout
    result.wall_s = time.perf_counter() - started
    return result


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The benchmark's options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=["tic_tac_toe-v0", "kuhn_poker-v0"])
    parser.add_argument("--games", type=int, default=100, help="games per env (both seats)")
    parser.add_argument("--kills", type=int, default=20, help="runs killed with SIGKILL")
    parser.add_argument(
        "--max-delay", type=float, default=1.0, help="a kill comes 0..S s after a stored game"
    )
    parser.add_argument("--max-restarts", type=int, default=10, help="restarts after the kills")
    parser.add_argument("--fault-rate", type=float, default=0.3, help="share of failed requests")
    parser.add_argument("--timeout", type=float, default=1.0, help="eval --timeout, seconds")
    parser.add_argument("--max-attempts", type=int, default=4, help="eval --max-attempts")
    parser.add_argument("--max-replays", type=int, default=10, help="eval --max-replays")
    parser.add_argument("--concurrency", type=int, default=4, help="eval --concurrency")
    parser.add_argument("--seed", type=int, default=0, help="run seed, kill times and faults")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    result = measure(args)
    injected = sum(result.injected.values())
    print(
        f"{result.games_expected} games expected; reference run: {result.reference_games} "
        f"scored\n"
        f"faulty run: {result.kills} runs killed with SIGKILL ({result.killed_mid_run} while "
        f"running), {result.restarts} restarts; {result.requests} requests, {injected} failed "
        f"({100 * injected / max(result.requests, 1):.0f}%): "
        + ", ".join(f"{k} {v}" for k, v in result.injected.items())
        + f"\nstored: {result.scored_games} scored games, {result.duplicate_keys} keys twice, "
        f"{result.missing_keys} keys missing or extra, {result.mismatched_games} games unlike "
        f"the reference; {result.incomplete_games_stored} incomplete games and "
        f"{result.failed_requests_recorded} failed requests reported apart\n"
        f"{'PASS' if result.passed else 'FAIL'} in {result.wall_s:.0f} s"
    )
    if args.json is not None:
        args.json.write_text(json.dumps({**asdict(result), "passed": result.passed}, indent=2))
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
