"""The arena end to end: eval over real HTTP, faults, kill -9 and resume, secrets, replay."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.records import StoredGame
from strategic_arena.arena.replay import replay_game
from strategic_arena.arena.runner import Entrant, run, versus
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import Asking
from strategic_arena.backends import OpenAIBackend
from strategic_arena.cli import main
from strategic_arena.games import get_spec
from strategic_arena.serve import PlayerServer
from tests.servers import FaultServer

SECRET = "sk-arena-test-0123456789abcdef"


def eval_args(db: Path, *extra: str) -> list[str]:
    return ["eval", "--db", str(db), "--quiet", "--concurrency", "4", *extra]


def check_store(db: Path) -> list[StoredGame]:
    """No duplicate or orphan rows, and every stored game replays exactly; returns the games."""
    con = sqlite3.connect(db)
    try:
        dupes = con.execute(
            "SELECT COUNT(*) FROM (SELECT run_id, game_key FROM games "
            "GROUP BY run_id, game_key HAVING COUNT(*) > 1)"
        ).fetchone()[0]
        orphans = con.execute(
            "SELECT COUNT(*) FROM moves WHERE game_id NOT IN (SELECT id FROM games)"
        ).fetchone()[0]
    finally:
        con.close()
    assert dupes == 0 and orphans == 0
    with ResultsStore(db) as store:
        games = store.games()
        for game in games:
            replay = replay_game(store, game.id)  # raises if anything differs
            assert len(replay.moves) >= 1
    return games


def test_eval_over_http_then_report_and_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    with PlayerServer("mcts:simulations=20", model="served-mcts") as server:
        args = eval_args(
            db,
            "--base-url",
            server.base_url,
            "--envs",
            "tic_tac_toe-v0",
            "connect_four-v0",
            "--opponents",
            "random",
            "mcts:simulations=10",
            "--num-games",
            "6",
            "--json",
        )
        assert main(args) == 0
        report = json.loads(capsys.readouterr().out)
        # 2 games x 2 opponents x 2 seatings x 3 games per seating.
        games = check_store(db)
        assert len(games) == 2 * 2 * 2 * 3
        assert {g.env_id for g in games} == {"tic_tac_toe-v0", "connect_four-v0"}
        assert Counter(g.players for g in games)[("served-mcts", "random")] == 6
        # Rerunning the same command plays nothing new.
        assert main(args) == 0
        capsys.readouterr()
    assert len(check_store(db)) == 24
    # The report recomputes from the stored games, independently of metrics.py.
    rows = {(s["player"], s["env_id"], s["opponent"], s["seat"]): s for s in report["summaries"]}
    for env_id in ("tic_tac_toe-v0", "connect_four-v0"):
        for opponent in ("random", "mcts:simulations=10"):
            mine = [g for g in games if g.env_id == env_id and opponent in g.players]
            values = [g.returns[g.players.index("served-mcts")] for g in mine]
            row = rows[("served-mcts", env_id, opponent, None)]
            assert row["games"] == len(values) == 6
            assert row["mean_return"] == pytest.approx(np.mean(values))
            half = stats.t.ppf(0.975, 5) * np.std(values, ddof=1) / np.sqrt(6)
            assert row["ci95"] == pytest.approx(half)
            assert row["wins"] == sum(v > 0 for v in values)
            assert row["losses"] == sum(v < 0 for v in values)
            assert row["draws"] == sum(v == 0 for v in values)
            spec = get_spec(env_id)
            expected = 100 * (np.mean(values) - spec.worst) / (spec.optimum - spec.worst)
            assert row["normalized"] == pytest.approx(expected)
            assert row["invalid_rate"] == 0.0 and row["moves"] > 0
            first = [g.returns[0] for g in mine if g.players[0] == "served-mcts"]
            assert rows[("served-mcts", env_id, opponent, 0)]["mean_return"] == pytest.approx(
                np.mean(first)
            )
    # The text report and the replay command.
    assert main(["report", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "== connect_four-v0" in text and "served-mcts" in text
    game_id = games[0].id
    assert main(["replay", str(game_id), "--db", str(db), "--prompts"]) == 0
    out = capsys.readouterr().out
    assert "Replayed exactly" in out and "--- system ---" in out


def test_replay_labels_the_final_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The replay ends with each seat's view and a named raw state (it ended with a bare
    "1 2 pp")."""
    db = tmp_path / "kuhn.sqlite"
    tasks = versus(
        [Entrant.opponent("nash")], [Entrant.opponent("random")], ["kuhn_poker-v0"], 2, 0
    )
    with ResultsStore(db) as store:
        assert run(store, "r", tasks, seed=0, concurrency=1, progress=False).complete
        game = store.games(store.run_id("r"))[0]
    assert main(["replay", str(game.id), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    final = out[out.index("=== final state") :]
    assert f"--- what seat 0 ({game.players[0]}) sees ---\nYour card: " in final
    assert f"--- what seat 1 ({game.players[1]}) sees ---\nYour card: " in final
    assert "--- OpenSpiel state (raw, with every hidden card) ---\n" in final
    assert final.index("OpenSpiel state") < final.index("Replayed exactly")


@pytest.mark.parametrize("command", ["report", "replay", "publish"])
def test_a_file_that_is_not_a_database_gives_one_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It used to end in a traceback ("sqlite3.DatabaseError: file is not a database")."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database, and it must stay as it is\n")
    extra = {"report": [], "replay": ["1"], "publish": ["--out", str(tmp_path / "site")]}
    assert main([command, *extra[command], "--db", str(notes)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("strategic-arena: error: ") and "not a database" in err
    assert notes.read_text() == "not a database, and it must stay as it is\n"


def test_default_eval_serves_the_solver_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's main command with fewer games: no endpoint given, the suite is served."""
    db = tmp_path / "default.sqlite"
    assert main(eval_args(db, "--num-games", "2", "--envs", "kuhn_poker-v0", "mini_hanabi-v0")) == 0
    out = capsys.readouterr().out
    assert "solver-suite" in out and "(self-play)" in out and "hanabi_bot" in out
    games = check_store(db)
    # Kuhn: random and nash x 2 seatings x 1; Mini Hanabi: self-play x 2 + bot x 2 seatings x 1.
    assert len(games) == 4 + 2 + 2


def test_random_faults_on_30_percent_of_requests(tmp_path: Path) -> None:
    # A slow answer outlasts the deadline many times over, and an honest one, even on a loaded
    # machine, stays far inside it: every timeout is an injected fault, never a slow machine.
    server = FaultServer(rate=0.3, seed=7, slow_s=30.0)
    try:
        backend = OpenAIBackend(
            "random",
            server.base_url,
            api_key="unused",
            timeout_s=5.0,
            max_attempts=20,
            backoff_base_s=0.005,
            backoff_max_s=0.02,
            seed=1,
            asking=Asking(policy="retry:3"),
        )
        model = Entrant.llm(backend, name="flaky")
        tasks = versus(
            [model],
            [Entrant.opponent("random")],
            ["tic_tac_toe-v0", "kuhn_poker-v0"],
            12,
            seed=3,
        )
        with ResultsStore(tmp_path / "faults.sqlite") as store:
            summary = run(store, "faults", tasks, seed=3, concurrency=6, progress=False)
            assert summary.complete and not summary.failed
            stats_ = store.move_stats()
    finally:
        server.close()
    games = check_store(tmp_path / "faults.sqlite")
    assert sorted(g.game_key for g in games) == sorted(t.key for t in tasks)
    # Every fault the server injected is recorded with the move it hit.
    failures = [f for move in stats_ for f in move.failures]
    recorded = Counter(
        "500"
        if f.startswith("500")
        else "429"
        if f.startswith("429")
        else "malformed"
        if f.startswith("malformed")
        else "empty"
        if f.startswith("no choices")
        else "slow"
        if f.startswith("timeout")
        else f
        for f in failures
    )
    recorded["truncated"] = sum(move.errors.count("truncated") for move in stats_)
    injected = {k: v for k, v in server.served.items() if k != "ok"}
    assert sum(injected.values()) > 0.2 * sum(server.served.values())
    assert set(injected) == {"500", "429", "malformed", "empty", "truncated", "slow"}
    assert dict(recorded) == injected


def stored_count(db: Path) -> int:
    """Games stored so far (0 while the store or its tables are still being created)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)  # never creates the file
        try:
            return int(con.execute("SELECT COUNT(*) FROM games").fetchone()[0])
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def test_kill_9_the_runner_at_random_points_then_resume(tmp_path: Path) -> None:
    db = tmp_path / "killed.sqlite"
    args = [
        sys.executable,
        "-m",
        "strategic_arena.cli",
        *eval_args(db, "--envs", "tic_tac_toe-v0", "kuhn_poker-v0"),
        "--opponents",
        "random",
        "--num-games",
        "200",
        "--no-report",
    ]
    rng = np.random.default_rng(11)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    counts = []
    for _ in range(4):
        process = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
        # Wait for the first progress line (imports and the endpoint are up), then kill at a
        # random moment of the run.
        assert process.stderr is not None
        process.stderr.readline()
        # On a loaded machine the first games can take seconds: wait (bounded) until this
        # process has stored a game, then kill at a random moment after that.
        before = stored_count(db)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if stored_count(db) > before:
                break
            time.sleep(0.2)
        time.sleep(float(rng.uniform(0.0, 2.0)))
        process.kill()  # SIGKILL: no cleanup at all
        process.wait()
        process.stderr.close()
        counts.append(len(check_store(db)) if db.exists() else 0)
    assert any(0 < count < 400 for count in counts), counts  # some kills hit a run mid-way
    finished = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    games = check_store(db)
    assert len(games) == 2 * 1 * 2 * 100
    assert len({g.game_key for g in games}) == len(games)


def test_the_api_key_never_reaches_store_logs_or_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARENA_TEST_KEY", SECRET)
    db = tmp_path / "secret.sqlite"
    server = FaultServer(faults=["500", "429"])  # failures are recorded too
    try:
        args = eval_args(
            db,
            "--base-url",
            server.base_url,
            "--model",
            "random",
            "--name",
            "keyed-model",
            "--api-key-env",
            "ARENA_TEST_KEY",
            "--envs",
            "kuhn_poker-v0",
            "--opponents",
            "random",
            "--num-games",
            "4",
        )
        assert main(args) == 0
        assert main(["report", "--db", str(db), "--json"]) == 0
        assert main(["replay", "1", "--db", str(db), "--prompts"]) == 0
    finally:
        server.close()
    assert server.seen_keys and all(key == f"Bearer {SECRET}" for key in server.seen_keys)
    captured = capsys.readouterr()
    assert SECRET not in captured.out and SECRET not in captured.err
    for path in tmp_path.iterdir():  # the database and its WAL/SHM files
        assert SECRET.encode() not in path.read_bytes(), path


def test_eval_rejects_bad_input_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "bad.sqlite"
    assert main(eval_args(db, "--envs", "chess-v9")) == 2
    assert "chess-v9" in capsys.readouterr().err
    assert main(eval_args(db, "--opponents", "mcts:simulations=x")) == 2
    assert "simulations" in capsys.readouterr().err
    assert main(eval_args(db, "--envs", "kuhn_poker-v0", "--opponents", "minimax")) == 2
    assert "no chosen opponent plays kuhn_poker-v0" in capsys.readouterr().err
    assert main(eval_args(db, "--policy", "retry:x")) == 2
    capsys.readouterr()
    for count in ("0", "-3"):  # 0 is not "the default"
        assert main(eval_args(db, "--envs", "kuhn_poker-v0", "--num-games", count)) == 2
        assert "--num-games must be at least 1" in capsys.readouterr().err
    assert not db.exists()
    assert main(["report", "--db", str(tmp_path / "missing.sqlite")]) == 2
    assert "no results store" in capsys.readouterr().err
    assert not (tmp_path / "missing.sqlite").exists()


def test_the_marshal_protocol_plays_its_opponents_in_both_seats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "marshal.sqlite"
    assert main(eval_args(db, "--protocol", "marshal", "--num-games", "2", "--no-report")) == 0
    capsys.readouterr()
    games = check_store(db)
    seatings = Counter((g.env_id, g.players) for g in games)
    model = "solver-suite"
    expected: Counter[tuple[str, tuple[str, ...]]] = Counter()
    for env_id, opponents in {
        # MARSHAL's MCTS: 10 random rollouts per leaf (its repository's rollout_count).
        "tic_tac_toe-v0": ("mcts:simulations=100,rollouts=10", "mcts:simulations=1000,rollouts=10"),
        "connect_four-v0": ("mcts:simulations=10,rollouts=10", "mcts:simulations=100,rollouts=10"),
        "kuhn_poker-v0": ("nash",),
        "leduc_holdem-v0": ("nash",),
    }.items():
        for opponent in opponents:
            expected[(env_id, (model, opponent))] = 1
            expected[(env_id, (opponent, model))] = 1
    expected[("mini_hanabi-v0", (model, model))] = 2
    expected[("simple_hanabi-v0", (model, model))] = 2
    assert seatings == expected
    with ResultsStore(db) as store:
        (run_info,) = store.runs()
    assert run_info.settings["protocol"] == "marshal"


def test_ctrl_c_says_how_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from strategic_arena.arena import runner

    real_run = runner.run

    def interrupted(store: ResultsStore, name: str, tasks: Any, **kwargs: Any) -> Any:
        real_run(store, name, tasks[:2], **kwargs)  # two games stored, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run", interrupted)
    db = tmp_path / "c.sqlite"
    assert main(eval_args(db, "--envs", "kuhn_poker-v0", "--num-games", "4")) == 130
    err = capsys.readouterr().err
    assert "interrupted; 2 of 8 games" in err and "rerun the same command to resume" in err
    assert "Traceback" not in err
    monkeypatch.setattr(runner, "run", real_run)
    assert main(eval_args(db, "--envs", "kuhn_poker-v0", "--num-games", "4", "--no-report")) == 0
    assert "6 games played, 2 resumed" in capsys.readouterr().err


def test_a_model_named_like_an_earlier_opponent_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "n.sqlite"
    args = ("--envs", "tic_tac_toe-v0", "--num-games", "2", "--no-report")
    assert main(eval_args(db, *args, "--opponents", "random")) == 0
    capsys.readouterr()
    assert main(eval_args(db, *args, "--opponents", "minimax", "--name", "random")) == 2
    assert "already has a player named 'random'" in capsys.readouterr().err
    with ResultsStore(db) as store:
        assert store.players()["random"].kind == "random"
        assert len(store.runs()) == 1 or not store.games(store.runs()[1].id)


def test_openspiel_games_are_played_against_random(tmp_path: Path) -> None:
    env_id = "openspiel/tic_tac_toe"
    with PlayerServer("random") as server, ResultsStore(tmp_path / "o.sqlite") as store:
        model = Entrant.llm(OpenAIBackend("random", server.base_url, timeout_s=30), name="m")
        tasks = versus([model], [Entrant.opponent("random")], [env_id], 2, seed=0)
        assert [t.seats[0].name for t in tasks] == ["m", "random"]
        summary = run(store, "os", tasks, seed=0, concurrency=2, progress=False)
        assert summary.complete and not summary.failed and summary.games_with_errors == 0
    check_store(tmp_path / "o.sqlite")


def test_eval_shuffle_actions_is_stored_with_the_player_and_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    with PlayerServer("random", model="served-random") as server:
        # A fixed seed: with a secret one, the 4 games can show only one of the two orders (it
        # happened once in a run of the suite).
        common = [
            "--base-url", server.base_url, "--envs", "kuhn_poker-v0", "--num-games", "4",
            "--seed", "0",
        ]  # fmt: skip
        assert main(eval_args(db, *common, "--shuffle-actions", "--no-report")) == 0
        games = check_store(db)  # every stored prompt, shuffled order included, replays
        with ResultsStore(db) as store:
            assert store.players()["served-random"].params["shuffle_actions"] is True
            prompts = [m.prompt for g in games for m in store.moves(g.id) if m.prompt]
        moves = {"- check", "- bet", "- fold", "- call"}
        orders = {tuple(ln for ln in str(p).split("\\n") if ln in moves) for p in prompts}
        assert ("- check", "- bet") in orders and ("- bet", "- check") in orders
        # The same name without shuffling is another player: refused, nothing stored.
        assert main(eval_args(db, *common, "--run-name", "plain", "--no-report")) == 2
        assert "already has a player named 'served-random'" in capsys.readouterr().err
