"""``eval --until decided``: sequential tests between served players over real HTTP.

Far-apart players (minimax against random at Tic-Tac-Toe) are decided long before the cap, and
for the right side; equal players (random against random) never accept H1; a run killed with
SIGKILL at random moments resumes to the decision of a run never interrupted; server failures
make a test wait for the replay, never decide on a game the store does not hold. The walk over
the stored pairs is checked on its own too (skipped, open, capped and decided tests).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.records import StoredGame
from strategic_arena.arena.runner import Entrant, versus
from strategic_arena.arena.sequential import (
    SKIPPED,
    Matchup,
    check_testable,
    decide,
    pair_outcomes,
)
from strategic_arena.arena.sequential_run import _State, matchups, next_batch
from strategic_arena.arena.sprt import Sprt, llr
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.grading.report import report
from strategic_arena.serve import PlayerServer
from tests.servers import FaultServer, PositionSeededMinimax

ENV = "tic_tac_toe-v0"


def sequential_args(db: Path, base_url: str, *extra: str) -> list[str]:
    return [
        "eval",
        "--db",
        str(db),
        "--quiet",
        "--base-url",
        base_url,
        "--envs",
        ENV,
        "--opponents",
        "random",
        "--until",
        "decided",
        "--seed",
        "7",
        *extra,
    ]


def stored_tests(db: Path) -> list[dict[str, Any]]:
    """The report's sequential rows (what ``report --json`` prints)."""
    rows: list[dict[str, Any]] = report(db)["sequential"]
    return rows


def recomputed(db: Path, candidate: str, sprt: Sprt) -> tuple[int | None, list[int]]:
    """The decision from the stored games, without the package's walk: pairs by index, the
    model's result by the sign of its return, the LLR after each pair, the first crossing."""
    with ResultsStore(db) as store:
        games = store.games()
    by_index: dict[int, list[float]] = defaultdict(list)
    for game in games:
        value = game.returns[game.players.index(candidate)]
        by_index[int(game.game_key.rsplit("/", 1)[1])].append(
            1.0 if value > 0 else 0.5 if value == 0 else 0.0
        )
    counts = np.zeros(5, dtype=int)
    for index in range(len(by_index)):
        pair = by_index[index]
        if len(pair) != 2:
            break
        counts[round(2 * sum(pair))] += 1
        value = float(llr(counts, sprt.elo0, sprt.elo1))
        if value >= sprt.upper or value <= sprt.lower:
            return index + 1, counts.tolist()
    return None, counts.tolist()


def test_minimax_against_random_is_decided_long_before_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "far.sqlite"
    with PlayerServer("minimax", model="served-minimax") as server:
        args = sequential_args(db, server.base_url, "--num-games", "200", "--concurrency", "4")
        assert main([*args, "--json"]) == 0
        out, err = capsys.readouterr()
        data = json.loads(out)
        (row,) = data["sequential"]
        assert row["candidate"] == "served-minimax" and row["opponent"] == "random"
        assert row["status"] == row["decision"] == "H1"
        assert row["llr"] >= row["upper"] == pytest.approx(np.log(0.95 / 0.05))
        assert row["cap_games"] == 200
        # Minimax never loses: every pair is WW, WD or DD, and twelve wins decide.
        assert row["pentanomial"][:2] == [0, 0]
        assert row["games"] <= 50, row  # a quarter of the cap
        assert "H1 accepted" in err and "served-minimax vs random" in err
        # The decision is what the stored games say, recomputed from their returns.
        taken, counts = recomputed(db, "served-minimax", Sprt())
        assert taken == row["pairs"] and counts == row["pentanomial"]
        with ResultsStore(db) as store:
            stored = len(store.games())
        # Batches of 4 games: at most one batch beyond the decision.
        assert row["games"] <= stored <= row["games"] + 4
        # What the decision cost: the model's tokens over the matchup's stored games.
        con = sqlite3.connect(db)
        try:
            moves = con.execute(
                "SELECT g.players, m.seat, m.prompt_tokens, m.completion_tokens "
                "FROM moves m JOIN games g ON g.id = m.game_id"
            ).fetchall()
        finally:
            con.close()
        mine = [(p, c) for players, seat, p, c in moves if json.loads(players)[seat] != "random"]
        assert row["cost"]["prompt_tokens"] == sum(p for p, _ in mine) > 0
        assert row["cost"]["completion_tokens"] == sum(c for _, c in mine) > 0
        # The same command again plays nothing and says the same.
        assert main(args) == 0
        _, again = capsys.readouterr()
        assert "0 games played" in again and "H1 accepted" in again
    with ResultsStore(db) as store:
        assert len(store.games()) == stored
    assert main(["report", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "== Sequential tests of" in text and "H1 accepted (Elo +100 rather than +0)" in text


def test_random_against_random_accepts_h0_or_runs_to_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "equal.sqlite"
    # One game at a time: the served player's generator sees its requests in one order, so
    # the run is reproducible.
    with PlayerServer("random", model="served-random") as server:
        args = sequential_args(db, server.base_url, "--num-games", "200", "--concurrency", "1")
        assert main(args) == 0
    capsys.readouterr()
    (row,) = stored_tests(db)
    assert row["status"] in ("H0", "cap"), row
    if row["status"] == "cap":
        assert row["games"] == row["cap_games"] == 200
    else:
        assert row["llr"] <= row["lower"] and row["games"] < 200
    assert abs(row["score"] - 0.5) < 0.15


def test_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "refused.sqlite"
    base = ["eval", "--db", str(db), "--quiet"]
    cases = [
        (["--envs", "mini_hanabi-v0", "--until", "decided"], "mini_hanabi-v0 is cooperative"),
        (["--envs", ENV, "--elo1", "50"], "apply with --until decided only"),
        (["--envs", ENV, "--until", "decided", "--elo0", "10", "--elo1", "5"], "must be below"),
        (["--envs", ENV, "--until", "decided", "--alpha", "0.7"], "alpha must be above 0"),
    ]
    for extra, message in cases:
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not db.exists()  # refused before anything was stored
    with pytest.raises(ValueError, match="hanabi_3p-v0 is cooperative"):
        check_testable(["tic_tac_toe-v0", "hanabi_3p-v0"])


def test_a_killed_run_resumes_to_the_same_decision(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kill -9 at random moments, resume, and compare with a run never interrupted.

    Every game is reproducible from its key (the served player is asked with a fixed request
    seed; the opponent's seed derives from the run's), so both runs store the same outcomes and
    must reach the same decisions whatever the kills cut off.
    """
    extra = [
        "--envs",
        ENV,
        "kuhn_poker-v0",
        "--sampling-seed",
        "1",
        "--elo1",
        "15",
        "--num-games",
        "300",
        "--concurrency",
        "4",
        "--no-report",
    ]
    with PlayerServer("random", model="served-random") as server:
        reference = tmp_path / "reference.sqlite"
        assert main([*sequential_args(reference, server.base_url), *extra]) == 0
        capsys.readouterr()
        killed = tmp_path / "killed.sqlite"
        args = [sys.executable, "-m", "strategic_arena.cli"]
        args += [*sequential_args(killed, server.base_url), *extra]
        args.remove("--quiet")  # the progress line says the run has started
        rng = np.random.default_rng(5)
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        counts = []
        for _ in range(3):
            process = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
            assert process.stderr is not None
            process.stderr.readline()
            before = stored_count(killed)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and process.poll() is None:
                if stored_count(killed) > before:
                    break
                time.sleep(0.1)
            time.sleep(float(rng.uniform(0.0, 2.0)))
            process.kill()  # SIGKILL: no cleanup
            process.wait()
            process.stderr.close()
            counts.append(stored_count(killed))
        finished = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
        assert finished.returncode == 0, finished.stderr
    expected = stored_tests(reference)
    assert {row["status"] for row in expected} >= {"cap"} and len(expected) == 2
    assert any(0 < count < sum(r["stored_games"] for r in expected) for count in counts), counts
    fields = ("env_id", "status", "llr", "pairs", "pentanomial", "skipped_pairs")
    resumed = stored_tests(killed)
    assert [{k: r[k] for k in fields} for r in resumed] == [
        {k: r[k] for k in fields} for r in expected
    ]


def stored_count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(db)
        try:
            return int(con.execute("SELECT COUNT(*) FROM games").fetchone()[0])
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def test_server_failures_make_the_test_wait_for_their_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A game a server failure stopped is replayed by the next call; until then no pair after
    it counts, and the test never decides on a game the store does not hold."""
    db = tmp_path / "faults.sqlite"
    # The preflight's request goes through, then two requests of the run fail (no retry).
    server = FaultServer(["ok"] * 31 + ["500"] + ["ok"] * 60 + ["500"])
    statuses = []
    try:
        args = sequential_args(db, server.base_url, "--name", "flaky", "--num-games", "200")
        args += ["--max-attempts", "1", "--concurrency", "2", "--max-replays", "5", "--no-report"]
        for _ in range(4):
            statuses.append(main(args))
            capsys.readouterr()
            (row,) = stored_tests(db)
            with ResultsStore(db) as store:
                scored = {g.game_key for g in store.games()}
            # Every pair the test counted (or left out, given up) is before the pair it waits
            # for, and each counted one is stored whole.
            counted = row["pairs"] + row["skipped_pairs"]
            whole = [
                index
                for index in range(counted)
                if {f"{ENV}/flaky/random/{index}", f"{ENV}/random/flaky/{index}"} <= scored
            ]
            assert len(whole) == row["pairs"], (row, whole)
            if statuses[-1] == 0:
                break
    finally:
        server.close()
    assert statuses[0] == 1 and len(statuses) > 1, statuses  # stopped by a failure, then on
    assert statuses[-1] == 0
    assert row["status"] in ("H0", "H1", "cap")


def test_the_walk_over_stored_pairs() -> None:
    sprt = Sprt()
    matchup = Matchup(ENV, "m", "o")
    won = {index: 4 for index in range(20)}
    test = decide(matchup, won, sprt, cap_pairs=100, stored_games=40)
    assert (test.status, test.pairs, test.games, test.next_pair) == ("H1", 12, 24, None)
    assert test.counts == (0, 0, 0, 0, 12) and test.score == 1.0 and test.elo is None
    # A hole: the test waits at pair 5 whatever is stored after it.
    holed = {k: v for k, v in won.items() if k != 5}
    test = decide(matchup, holed, sprt, cap_pairs=100)
    assert (test.status, test.pairs, test.next_pair) == ("open", 5, 5)
    # A pair given up is left out, and the walk goes on past it.
    skipped = {**won, 2: SKIPPED}
    test = decide(matchup, skipped, sprt, cap_pairs=100)
    assert (test.status, test.pairs, test.skipped) == ("H1", 12, 1)
    # Undecided at the cap.
    drawn = {index: 2 for index in range(3)}
    test = decide(matchup, drawn, sprt, cap_pairs=3)
    assert (test.status, test.pairs, test.next_pair) == ("cap", 3, None)
    assert test.llr == pytest.approx(float(llr([0, 0, 3, 0, 0], 0, 100)))


def test_batches_wait_for_a_game_tried_in_this_call() -> None:
    def build(env_id: str, seed: int) -> Any:
        raise AssertionError("never built")

    model = Entrant("m", "llm", {}, build)
    rival = Entrant("random", "random", {}, build)
    tasks = versus([model], [rival], [ENV], 20, 1)
    groups = matchups(tasks, "m")
    (matchup,) = groups
    sprt = Sprt()
    fresh = _State([decide(matchup, {}, sprt, 10)], set(), {})
    batch = next_batch(fresh, groups, set(), 3, concurrency=4)
    # Two pairs fill four games in flight, from pair 0.
    assert sorted((t.index, t.seats[0].name) for t in batch) == [
        (0, "m"),
        (0, "random"),
        (1, "m"),
        (1, "random"),
    ]
    # Pair 0's first game failed in this call: the test waits for the next call.
    failed = batch[0].key
    tried = {t.key for t in batch}
    waiting = _State([decide(matchup, {1: 4}, sprt, 10)], set(), {failed: 1})
    assert next_batch(waiting, groups, tried, 3, concurrency=4) == []
    # Given up (more tries than replays): the pair is left out and the test goes on.
    given_up = _State(
        [decide(matchup, {0: SKIPPED, 1: 4}, sprt, 10)],
        {t.key for t in batch if t.key != failed},
        {failed: 4},
    )
    assert {t.index for t in next_batch(given_up, groups, tried, 3, concurrency=4)} == {2, 3}


@pytest.mark.slow
def test_workers_sharing_a_sequential_run_reach_the_single_process_decision(
    tmp_path: Path, pg_server: Any, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two ``eval --until decided`` processes on one PostgreSQL run: every game once, and the
    decision of the same command run alone into SQLite.

    The served minimax breaks ties by position (the same answer whoever asks), and H0 +300
    against H1 +500 sits around its true strength against ``random``, so the test is long
    enough for both workers to play many batches.
    """
    extra = ["--elo0", "300", "--elo1", "500", "--num-games", "160", "--concurrency", "2"]
    with PlayerServer(lambda env_id: PositionSeededMinimax(), model="minimax") as server:
        alone = tmp_path / "alone.sqlite"
        assert main([*sequential_args(alone, server.base_url, "--no-report"), *extra]) == 0
        capsys.readouterr()
        command = [sys.executable, "-m", "strategic_arena.cli"]
        command += [*sequential_args(Path("DB"), server.base_url, "--no-report"), *extra]
        command[command.index("DB")] = pg_url
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        workers = [
            subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) for _ in range(2)
        ]
        for process in workers:
            _, err = process.communicate(timeout=600)
            assert process.returncode == 0, err
    with ResultsStore.for_reading(pg_url) as store:
        keys = [game.game_key for game in store.games(include_incomplete=True)]
    assert len(keys) == len(set(keys))  # every game stored once
    fields = ("env_id", "status", "llr", "pairs", "pentanomial")
    shared = report(pg_url)["sequential"]
    expected = stored_tests(alone)
    assert [{k: r[k] for k in fields} for r in shared] == [
        {k: r[k] for k in fields} for r in expected
    ]
    assert expected[0]["pairs"] > 8  # long enough to take several batches


def test_pair_outcomes_from_stored_games() -> None:
    def game(key: str, players: tuple[str, str], returns: tuple[float, float], status: str):  # type: ignore[no-untyped-def]
        return StoredGame(0, 1, key, ENV, 0, players, returns, status, None, (), 0.0, 0.0)

    games = [
        # Pair 0: a win as first player, a draw as second: WD (category 3).
        game(f"{ENV}/m/o/0", ("m", "o"), (1.0, -1.0), "complete"),
        game(f"{ENV}/o/m/0", ("o", "m"), (0.0, 0.0), "complete"),
        # Pair 1: one game given up for good (its tries used): left out.
        game(f"{ENV}/m/o/1", ("m", "o"), (-1.0, 1.0), "complete"),
        game(f"{ENV}/o/m/1", ("o", "m"), (0.0, 0.0), "incomplete"),
        # Pair 2: given up once, scored since (a larger --max-replays): it counts, LL.
        game(f"{ENV}/m/o/2", ("m", "o"), (0.0, 0.0), "incomplete"),
        game(f"{ENV}/m/o/2", ("m", "o"), (-1.0, 1.0), "complete"),
        game(f"{ENV}/o/m/2", ("o", "m"), (1.0, -1.0), "complete"),
        # Pair 3: one game only, the other not stored yet: no outcome.
        game(f"{ENV}/m/o/3", ("m", "o"), (1.0, -1.0), "complete"),
        # Another player's game: not this model's test.
        game(f"{ENV}/x/o/0", ("x", "o"), (1.0, -1.0), "complete"),
    ]
    given_up = [f"{ENV}/o/m/1", f"{ENV}/m/o/2"]
    outcomes, stored = pair_outcomes(games, "m", given_up)
    matchup = Matchup(ENV, "m", "o")
    assert outcomes == {matchup: {0: 3, 1: SKIPPED, 2: 0}}
    assert stored == {matchup: 6}
    test = decide(matchup, outcomes[matchup], Sprt(), cap_pairs=10, stored_games=6)
    assert (test.status, test.pairs, test.skipped, test.next_pair) == ("open", 2, 1, 3)
    assert test.counts == (1, 0, 0, 1, 0) and test.score == pytest.approx(0.375)
