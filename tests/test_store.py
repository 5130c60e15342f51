"""The SQLite results store: transactional games, no duplicates, resume after kill -9."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyspiel
import pytest

from strategic_arena.arena import play_match_sync
from strategic_arena.arena.store import ResultsStore, StoreError
from strategic_arena.players import RandomPlayer


def record(seed: int, env_id: str = "kuhn_poker-v0"):  # type: ignore[no-untyped-def]
    return play_match_sync(env_id, [RandomPlayer(seed), RandomPlayer(seed + 1)], seed=seed)


def player_moves(env_id: str, history: list[int]) -> int:
    """Decisions in an OpenSpiel history (chance outcomes excluded)."""
    from strategic_arena.games import get_spec

    state = get_spec(env_id).game.new_initial_state()
    count = 0
    for action in history:
        count += not state.is_chance_node()
        state.apply_action(action)
    return count


def test_games_and_moves_round_trip(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "results" / "arena.db") as store:
        run = store.run("demo", seed=1, settings={"envs": ["kuhn_poker-v0"]})
        assert store.run("demo", seed=1, settings={"envs": ["kuhn_poker-v0"]}) == run
        with pytest.raises(ValueError, match="exists with seed 1"):
            store.run("demo", seed=2, settings={"envs": ["kuhn_poker-v0"]})
        store.player("random", "random", {"seed": 1})
        games = [record(seed) for seed in range(5)]
        for seed, game in enumerate(games):
            assert store.add_game(run, f"g{seed}", game)
        assert not store.add_game(run, "g0", games[0])  # a replayed game is not stored twice
        assert store.completed_keys(run) == {f"g{i}" for i in range(5)}
        stored = store.games(run)
        assert [g.returns for g in stored] == [g.returns for g in games]
        moves = store.moves(stored[0].id)
        assert [m.action for m in moves] == [m.action for m in games[0].moves]
    mode = sqlite3.connect(tmp_path / "results" / "arena.db").execute("PRAGMA journal_mode")
    assert mode.fetchone()[0] == "wal"


def test_secrets_are_refused(tmp_path: Path) -> None:
    with ResultsStore(tmp_path / "a.db") as store:
        with pytest.raises(ValueError, match="looks like a secret"):
            store.player("gpt", "llm", {"key": "sk-abcdefghijklmnop"})
        with pytest.raises(ValueError, match="looks like a secret"):
            store.run("r", 0, {"headers": "Bearer abc123"})
        store.run("r", 0, {"api_key_env": "OPENAI_API_KEY"})  # the variable's name is fine


def test_a_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ResultsStore(tmp_path / "a.db")
    run = store.run("r", 0, {})
    game = record(3)
    original = store._db

    class Failing:
        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(original, name)

        def executemany(self, *args: object) -> None:
            raise sqlite3.OperationalError("disk full (simulated)")

    monkeypatch.setattr(store, "_db", Failing())
    with pytest.raises(StoreError, match=r"disk .* is full"):
        store.add_game(run, "g", game)
    monkeypatch.setattr(store, "_db", original)
    assert store.games(run) == [] and store.completed_keys(run) == set()
    assert original.execute("SELECT COUNT(*) FROM moves").fetchone()[0] == 0


WRITER = """
import sys
from strategic_arena.arena import play_match_sync
from strategic_arena.arena.store import ResultsStore
from strategic_arena.players import RandomPlayer
store = ResultsStore(sys.argv[1])
run = store.run("killed", 7, {})
done = store.completed_keys(run)
for seed in range(int(sys.argv[2])):
    if f"g{seed}" in done:
        continue
    players = [RandomPlayer(seed), RandomPlayer(seed + 100000)]
    game = play_match_sync("leduc_holdem-v0", players, seed)
    store.add_game(run, f"g{seed}", game)
"""


def stored_games(path: Path) -> int:
    """Games in the store right now, read through a separate connection (WAL allows it)."""
    if not path.exists():
        return 0
    try:
        return int(sqlite3.connect(path).execute("SELECT COUNT(*) FROM games").fetchone()[0])
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def test_kill_9_at_random_points_then_resume(tmp_path: Path) -> None:
    path, total = tmp_path / "killed.db", 3000
    rng = np.random.default_rng(0)
    # Kills in the first half: the writer is still far from done when the poller (which a loaded
    # machine may starve for a while) sees the target reached.
    targets = sorted(int(t) for t in rng.integers(20, total // 2, size=4))
    stored_after_kill = []
    for target in targets:  # kill -9 the writer once it has stored `target` games ...
        process = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(total)])
        deadline = time.monotonic() + 120
        while stored_games(path) < target and process.poll() is None:
            assert time.monotonic() < deadline, "the writer made no progress"
            time.sleep(float(rng.uniform(0.005, 0.05)))
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait()
        stored_after_kill.append(stored_games(path))
    # ... then let it finish: it completes only the missing games.
    subprocess.run([sys.executable, "-c", WRITER, str(path), str(total)], check=True, timeout=300)
    assert all(0 < count < total for count in stored_after_kill), stored_after_kill
    with ResultsStore(path) as store:
        run = store.run("killed", 7, {})
        games = store.games(run)
        assert sorted(g.game_key for g in games) == sorted(f"g{s}" for s in range(total))
        db = store._db
        orphans = db.execute(
            "SELECT COUNT(*) FROM moves WHERE game_id NOT IN (SELECT id FROM games)"
        )
        assert orphans.fetchone()[0] == 0
        for game in games:
            assert len(store.moves(game.id)) == player_moves("leduc_holdem-v0", list(game.history))
        fresh = play_match_sync("leduc_holdem-v0", [RandomPlayer(5), RandomPlayer(100005)], 5)
        assert next(g for g in games if g.game_key == "g5").history == fresh.history
    assert pyspiel  # the replay above runs on OpenSpiel's rules


def test_a_version_1_store_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with ResultsStore(path) as store:
        run = store.run("old", 0, {})
        store.add_game(run, "g", play_match_sync("kuhn_poker-v0", [RandomPlayer(0)] * 2, seed=0))
    con = sqlite3.connect(path)  # make it look like a version-1 store
    for column in ("failures", "reasoning", "finish_reason"):
        con.execute(f"ALTER TABLE moves DROP COLUMN {column}")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with ResultsStore(path) as store:
        moves = store.moves(store.games()[0].id)
        assert moves and moves[0].failures == () and moves[0].reasoning is None
        assert store.completed_keys(store.run_id("old")) == {"g"}
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM meta").fetchone()[0] == "4"
    con.close()


def test_a_name_stored_as_another_player_is_refused(tmp_path: Path) -> None:
    # A model named like an opponent of an earlier run would be pooled with it in every report
    # and published under the opponent's kind.
    with ResultsStore(tmp_path / "a.db") as store:
        first = store.player("random", "random", {})
        assert store.player("random", "random", {}) == first
        with pytest.raises(ValueError, match=r"already has a player named 'random' .*kind"):
            store.player("random", "llm", {"model": "m", "base_url": "http://a/v1"})
        llm = store.player("m", "llm", {"model": "m", "temperature": 0.6, "base_url": "http://a"})
        # Only where it is served may change (the embedded server's port changes every run).
        assert store.player("m", "llm", {"model": "m", "temperature": 0.6, "base_url": "x"}) == llm
        # The message names the parameter that differs, with both values.
        with pytest.raises(ValueError, match=r"temperature \(0\.6 stored, now 1\.0\).*--name"):
            store.player("m", "llm", {"model": "m", "temperature": 1.0, "base_url": "http://a"})
        assert store.players()["random"].kind == "random"


class _RacingConnection:
    """A connection that lets another process create run ``name`` just before its INSERT."""

    def __init__(self, db: sqlite3.Connection, other: Path) -> None:
        self.db, self.other = db, other

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql.lstrip().upper().startswith("INSERT") and "INTO runs" in sql:
            with ResultsStore(self.other) as rival:
                rival.run("same", 0, {})
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.db, name)


def test_two_processes_creating_one_run_at_once(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    store = ResultsStore(db)
    store._db = _RacingConnection(store._db, db)  # type: ignore[assignment]
    try:
        run_id = store.run("same", 0, {})
        with pytest.raises(ValueError, match="exists with seed 0"):
            store.run("same", 1, {})
    finally:
        store.close()
    with ResultsStore(db) as again:
        assert [r.id for r in again.runs()] == [run_id]


def test_a_run_name_reused_with_other_settings_is_refused_naming_the_keys(tmp_path: Path) -> None:
    settings = {"num_games": 4, "model": {"temperature": 0.6, "base_url": "http://a/v1"}}
    with ResultsStore(tmp_path / "a.db") as store:
        first = store.run("r", 0, settings)
        # Where the model is served is not what the run plays: the same run.
        moved = {**settings, "model": {"temperature": 0.6, "base_url": "http://b/v1"}}
        assert store.run("r", 0, moved) == first
        other = {"num_games": 8, "model": {"temperature": 1.0}, "protocol": None}
        with pytest.raises(ValueError) as refused:
            store.run("r", 0, other)
        message = str(refused.value)
        assert "model.temperature (0.6 stored, now 1.0)" in message
        assert "num_games (4 stored, now 8)" in message
        assert 'protocol ("(unset)" stored, now null)' in message
        assert "runs --delete r" in message
        assert [run.settings for run in store.runs()] == [settings]  # unchanged
