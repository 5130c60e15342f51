"""``strategic-arena rank``: adaptive match-making settles a ranking with fewer games.

Four players of known order at Tic-Tac-Toe (minimax, MCTS with 50 and with 5 simulations,
random: a round robin of 40 games per pairing gives minimax 17 wins 23 draws 0 losses against
MCTS-50, MCTS-50 26/4/10 against MCTS-5, MCTS-5 30/4/6 against random), served over real HTTP,
are ranked in that order with a fraction of the full schedule; the schedule is reproducible
from the seed, and a run killed with SIGKILL resumes to the ranking of a run never interrupted.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("trueskill", reason="the [arena] extra (trueskill) is not installed")

from strategic_arena.cli import main
from strategic_arena.grading.report import report
from strategic_arena.ranking import order_probability
from strategic_arena.ratings import PlayerRating
from strategic_arena.serve import PlayerServer

ORDER = ["minimax", "mcts:simulations=50", "mcts:simulations=5", "random"]


def rank_args(db: Path, players: list[str], *extra: str) -> list[str]:
    return [
        "rank",
        "--db",
        str(db),
        "--env",
        "tic_tac_toe-v0",
        "--players",
        *players,
        "--num-games",
        "60",
        "--seed",
        "3",
        *extra,
    ]


def test_order_probability_is_the_gaussian_posterior() -> None:
    a = PlayerRating("a", 30.0, 2.0, 0.0, 0, 0, 0, 0)
    b = PlayerRating("b", 27.0, 1.5, 0.0, 0, 0, 0, 0)
    # Phi(3 / 2.5) = Phi(1.2) = 0.884930...
    assert order_probability(a, b) == pytest.approx(0.8849303, abs=1e-7)
    assert order_probability(b, a) == pytest.approx(1 - 0.8849303, abs=1e-7)
    assert order_probability(a, a) == 0.5


def test_four_served_players_are_ranked_with_a_fraction_of_the_schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "rank.sqlite"
    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(PlayerServer(spec, model=f"p{i}")) for i, spec in enumerate(ORDER)
        ]
        players = [f"model:p{i}@{server.base_url}" for i, server in enumerate(servers)]
        # Scrambled on the command line: the order comes from the games.
        scrambled = [players[i] for i in (2, 0, 3, 1)]
        # One game at a time: each served player's generator sees one order of requests.
        assert main(rank_args(db, scrambled, "--concurrency", "1", "--json")) == 0
        (row,) = json.loads(capsys.readouterr().out)
        assert main(rank_args(db, scrambled, "--concurrency", "1")) == 0  # settled: no game
        again = capsys.readouterr()
    assert row["status"] == "settled"
    assert [entry["player"] for entry in row["ranking"]] == ["p0", "p1", "p2", "p3"]
    assert all(p >= 0.95 for p in row["order_probabilities"])
    assert row["full_schedule"] == 6 * 60
    ratio = row["games"] / row["full_schedule"]
    with capsys.disabled():
        print(f"\nranked with {row['games']} of {row['full_schedule']} games ({ratio:.1%})")
    assert ratio < 0.5
    con = sqlite3.connect(db)
    try:
        stored = con.execute("SELECT COUNT(*) FROM games").fetchone()[0]
    finally:
        con.close()
    assert stored == row["games"]
    assert "0 games played" in again.err and "settled after" in again.out
    # The report shows it too.
    assert report(db)["ranking"][0]["ranking"] == row["ranking"]


def stored(db: Path) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return sorted(con.execute("SELECT game_key, seed, history, returns FROM games"))
    finally:
        con.close()


def stored_count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        return len(stored(db))
    except sqlite3.OperationalError:
        return 0


def test_the_schedule_is_reproducible_and_survives_kill_9(tmp_path: Path) -> None:
    """Built-in players are seeded per game from the run's seed, so the same command plays the
    same games in another store; a run killed at random moments resumes to the same ranking."""
    extra = ["--concurrency", "2", "--confidence", "0.99"]
    first, second = tmp_path / "first.sqlite", tmp_path / "second.sqlite"
    assert main(rank_args(first, ORDER, *extra)) == 0
    assert main(rank_args(second, ORDER, *extra)) == 0
    assert stored(first) == stored(second)
    expected = report(first)["ranking"][0]
    assert expected["status"] == "settled"
    assert [e["player"] for e in expected["ranking"]] == ORDER
    killed = tmp_path / "killed.sqlite"
    args = [sys.executable, "-m", "strategic_arena.cli", *rank_args(killed, ORDER, *extra)]
    rng = np.random.default_rng(2)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    counts = []
    for _ in range(3):
        process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        before = stored_count(killed)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if stored_count(killed) > before:
                break
            time.sleep(0.05)
        time.sleep(float(rng.uniform(0.0, 1.0)))
        process.kill()
        process.wait()
        assert process.stderr is not None
        process.stderr.close()
        counts.append(stored_count(killed))
    finished = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    assert any(0 < count < expected["games"] for count in counts), counts
    resumed = report(killed)["ranking"][0]
    assert stored(killed) == stored(first)
    assert resumed["ranking"] == expected["ranking"]
    assert math.isclose(resumed["games"], expected["games"])


def test_rank_refuses_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "refused.sqlite"
    for extra, message in (
        (["--env", "mini_hanabi-v0", "--players", "random", "hanabi_bot"], "two-sided"),
        (["--env", "tic_tac_toe-v0", "--players", "random"], "at least two players"),
        (["--env", "tic_tac_toe-v0", "--players", "random", "random"], "a player twice"),
        (
            ["--env", "tic_tac_toe-v0", "--players", "random", "minimax", "--confidence", "1"],
            "--confidence",
        ),
    ):
        assert main(["rank", "--db", str(db), *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not db.exists()
