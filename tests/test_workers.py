"""Workers sharing a run on a PostgreSQL store: one killed, a connection dropped, nothing lost.

Every worker is a real ``eval`` process against a solver served over real HTTP; the reference
is the same command run once into SQLite. The served solver is minimax with its tie-breaks
drawn from a generator seeded by the position, so its answer to a position is the same
whichever worker asks and in whatever order: the games are equal move for move.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from benchmarks.bench_workers import eval_args
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.serve import PlayerServer
from tests.pg import Server
from tests.servers import PositionSeededMinimax

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with PlayerServer(lambda env_id: PositionSeededMinimax(), model="minimax") as server:
        yield server.base_url


def eval_command(db: str, base_url: str, num_games: int, *extra: str) -> list[str]:
    return eval_args(db, base_url, num_games, *extra, seed=5, concurrency=2)


def worker(command: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "strategic_arena.cli", *command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def games(db: str) -> list[tuple[object, ...]]:
    """Every stored game as (key, seed, players, history, returns, status), sorted."""
    with ResultsStore.for_reading(db) as store:
        return sorted(
            (g.game_key, g.seed, g.players, g.history, g.returns, g.status)
            for g in store.games(include_incomplete=True)
        )


def reference(tmp_path: Path, base_url: str, num_games: int) -> list[tuple[object, ...]]:
    """The games of a single process into SQLite."""
    db = str(tmp_path / "reference.db")
    assert main(eval_command(db, base_url, num_games)) == 0
    return games(db)


def database(url: str) -> str:
    return url.split("/")[3].split("?")[0]


def count(server: Server, name: str, where: str = "TRUE") -> int:
    rows = server.sql(name, f"SELECT COUNT(*) FROM games WHERE {where}")
    return int(rows[0][0])  # type: ignore[call-overload]


def wait_for_games(server: Server, name: str, at_least: int, *processes: subprocess.Popen[str]):  # type: ignore[no-untyped-def]
    """Wait (bounded) until ``at_least`` games are stored; processes must still run."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if count(server, name) >= at_least:
                return
        except Exception:  # the tables do not exist yet
            pass
        assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
        time.sleep(0.05)
    raise AssertionError("no game was stored in time")


def leases(server: Server, name: str, process: subprocess.Popen[str]) -> list[tuple[object, ...]]:
    """The keys of the games ``process`` holds a lease on."""
    try:
        return server.sql(
            name, f"SELECT game_key FROM claims WHERE worker LIKE '%:{process.pid}:%'"
        )
    except Exception:  # the tables do not exist yet
        return []


def in_transaction(server: Server, name: str) -> bool:
    """Whether a client of the database other than this query is inside a transaction.

    A worker frozen there would hold its row locks: every other worker would wait on them.
    """
    rows = server.sql(
        name,
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid() AND state IS NOT NULL AND state <> 'idle'",
    )
    return bool(rows and int(str(rows[0][0])) > 0)


def wait_for_lease(server: Server, name: str, process: subprocess.Popen[str]) -> None:
    """Wait (bounded) until ``process`` holds a lease: it plays."""
    deadline = time.monotonic() + 300
    while not leases(server, name, process):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the worker never took a game"
        time.sleep(0.05)


@pytest.mark.slow
def test_three_workers_one_killed_store_every_game_once(
    tmp_path: Path, served: str, pg_server: Server, pg_url: str
) -> None:
    num_games = 150
    expected = reference(tmp_path, served, num_games)
    name = database(pg_url)
    command = eval_command(pg_url, served, num_games, "--lease-s", "3")
    # The victim first, until it plays; then it is frozen while it holds a lease and no
    # transaction (it cannot store that game, nor finish the run before the others start,
    # however fast the machine, nor hold row locks the others would wait on),
    # and the two others start together, until one of them plays (the other may find every game
    # taken or leased on a fast machine: its summary must count the whole run all the same);
    # then the victim is killed.
    victim = worker(command)
    wait_for_lease(pg_server, name, victim)
    held: list[tuple[object, ...]] = []
    while not held:
        os.kill(victim.pid, signal.SIGSTOP)
        # frozen holding a lease, between transactions: the others must not wait on its locks
        held = [] if in_transaction(pg_server, name) else leases(pg_server, name, victim)
        if not held:
            os.kill(victim.pid, signal.SIGCONT)
            assert victim.poll() is None, "the victim finished before it could be frozen"
            time.sleep(0.02)
    workers = [victim, worker(command), worker(command)]
    deadline = time.monotonic() + 300

    def started() -> bool:
        # a survivor holds a lease, or has already finished: on a fast machine the two can
        # play every game left between two looks (then it finished, its games stored)
        survivors = workers[1:]
        return any(s.poll() is not None for s in survivors) or any(
            leases(pg_server, name, s) for s in survivors
        )

    while not started():
        assert time.monotonic() < deadline, "no other worker took a game"  # a hang guard
        time.sleep(0.05)
    victim.kill()  # SIGKILL: no cleanup, its leases stay until they expire
    victim.communicate()
    for survivor in workers[1:]:
        _, err = survivor.communicate(timeout=600)
        assert survivor.returncode == 0, err
        # Its summary counts the whole run: its own games played, every other one resumed.
        counts = re.search(r"(\d+) games played, (\d+) resumed", err)
        assert counts is not None and sum(map(int, counts.groups())) == num_games, err
    stored = games(pg_url)
    assert stored == expected  # every game once, the same keys, seeds and moves
    assert len({game[0] for game in stored}) == len(stored) == num_games
    orphaned = {str(row[0]) for row in held}
    assert orphaned <= {str(game[0]) for game in stored}  # the dead worker's games were played
    assert pg_server.sql(name, "SELECT COUNT(*) FROM claims") == [(0,)]
    # The report of the shared run counts every worker's games.
    assert main(["runs", "--db", pg_url]) == 0


@pytest.mark.slow
def test_a_connection_dropped_mid_run_loses_nothing(
    tmp_path: Path, served: str, pg_server: Server, pg_url: str
) -> None:
    num_games = 30
    expected = reference(tmp_path, served, num_games)
    name = database(pg_url)
    process = worker(eval_command(pg_url, served, num_games))
    for drops in (2, 10):
        wait_for_games(pg_server, name, drops, process)
        dropped = pg_server.sql(
            name,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND application_name = 'strategic-arena'",
        )
        assert dropped, "the worker's session was not found"
    _, err = process.communicate(timeout=600)
    assert process.returncode == 0, err
    assert games(pg_url) == expected
