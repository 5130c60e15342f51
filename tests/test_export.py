"""Moving results between stores: SQLite -> PostgreSQL -> SQLite row for row, one leaderboard."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("numba", reason="grading needs the [solvers] extra (numba)")

from strategic_arena.arena.match import play_match_sync
from strategic_arena.arena.runner import Entrant, run, versus
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.grading.grade import measure_strategy
from strategic_arena.grading.tables import GradeTables
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import Decision, GameState

#: Every table a store holds, with the columns that order its rows.
TABLES = {
    "meta": "key",
    "runs": "id",
    "players": "id",
    "games": "id",
    "moves": "id",
    "move_grades": "game_id, ply",
    "graded_games": "game_id",
    "c4_scores": "history",
    "strategy_players": "player",
    "strategy_samples": "player, env_id, info_state",
    "strategy_grades": "player, env_id",
}


class AlwaysCall:
    name = "caller"

    async def act(self, state: GameState, seat: int) -> Decision:
        return Decision(action=1, text="call")


def dump(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a SQLite store, in key order."""
    con = sqlite3.connect(db)
    try:
        present = {name for (name,) in con.execute("SELECT name FROM sqlite_master")}
        return {
            table: con.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            for table, order in TABLES.items()
            if table in present
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store with two runs, an incomplete try, a gap in its ids and every grade.

    Shared by the tests, which only read it.
    """
    db = tmp_path_factory.mktemp("export") / "source.db"
    minimax, rand = Entrant.opponent("minimax"), Entrant.opponent("random")
    with ResultsStore(db) as store:
        run(
            store,
            "gone",
            versus([rand], [minimax], ["tic_tac_toe-v0"], 2, 1),
            seed=1,
            progress=False,
        )
        first = run(
            store,
            "first",
            versus([rand], [minimax], ["tic_tac_toe-v0"], 4, 2),
            seed=2,
            progress=False,
        )
        played = play_match_sync("tic_tac_toe-v0", [RandomPlayer(0), RandomPlayer(1)], seed=0)
        stopped = dataclasses.replace(
            played, status="incomplete", infrastructure_error="endpoint: 500"
        )
        store.add_game(first.run_id, "extra-key", stopped)
        run(
            store,
            "second",
            versus([rand], [minimax], ["tic_tac_toe-v0"], 2, 3),
            seed=3,
            progress=False,
        )
    assert main(["runs", "--db", str(db), "--delete", "gone"]) == 0  # ids 1..n are not all used
    assert main(["grade", "--db", str(db), "--no-strategies", "--quiet"]) == 0
    with GradeTables(db) as tables:
        tables.check_sampler("caller", {"kind": "scripted"})
        measure_strategy(
            tables,
            "caller",
            "kuhn_poker-v0",
            lambda seed: AlwaysCall(),
            samples=2,
            policy="forfeit",
            seed=0,
        )
    return db


def test_sqlite_to_postgres_and_back_is_identical_row_for_row(
    source: Path, pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    back = tmp_path / "back.db"
    assert main(["runs", "--db", str(source), "--export", pg_url]) == 0
    assert main(["runs", "--db", pg_url, "--export", str(back)]) == 0
    original, copied = dump(source), dump(back)
    # Every table has rows to copy (Connect Four positions aside: no Connect Four game here).
    assert all(original[table] for table in TABLES if table != "c4_scores")
    assert copied == original
    # A second export adds nothing: every game is already there.
    assert main(["runs", "--db", str(source), "--export", pg_url]) == 0
    assert "0 games, 0 moves" in capsys.readouterr().out.splitlines()[-1]
    assert main(["runs", "--db", pg_url, "--export", str(tmp_path / "again.db")]) == 0
    assert dump(tmp_path / "again.db") == original
    # A player measured under another name stays out of a store that already knows it as
    # something else; a run of the same name with another seed is refused, nothing written.
    other = tmp_path / "other.db"
    with ResultsStore(other) as store:
        store.run("first", 99, {})
    before = dump(other)
    assert main(["runs", "--db", str(source), "--export", str(other)]) == 2
    assert "already has a run named 'first'" in capsys.readouterr().err
    assert dump(other) == before


def without_source(data: dict[str, Any]) -> dict[str, Any]:
    """A leaderboard without where it came from (the database's name and the command)."""
    data = json.loads(json.dumps(data))
    data["source"].pop("database")
    for entry in data["source"]["runs"]:
        entry.pop("command")
    return data


def published(db: list[str], out: Path) -> dict[str, Any]:
    args = ["publish", "--out", str(out), "--passes", "2"]
    for one in db:
        args += ["--db", one]
    assert main(args) == 0
    return dict(json.loads((out / "leaderboard.json").read_text()))


def test_publish_from_the_postgres_copy_and_from_several_stores(
    source: Path, pg_url: str, tmp_path: Path
) -> None:
    pytest.importorskip("trueskill")
    assert main(["runs", "--db", str(source), "--export", pg_url]) == 0
    original = published([str(source)], tmp_path / "sqlite")
    from_postgres = published([pg_url], tmp_path / "postgres")
    assert from_postgres["source"]["database"].startswith("postgresql://")
    assert without_source(from_postgres) == without_source(original)
    # Runs kept in two files (one per machine; run "first" in both, its games once in the
    # leaderboard, and the strategy grades the second holds) publish as the one leaderboard.
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    assert main(["runs", "--db", pg_url, "--export", str(first), "--run", "first"]) == 0
    assert main(["runs", "--db", str(source), "--export", str(second)]) == 0
    pooled = published([str(first), str(second)], tmp_path / "pooled")
    assert pooled["source"]["database"] == "first.db, second.db"
    assert without_source(pooled) == without_source(original)


def test_grading_a_postgres_store_writes_the_grades_sqlite_got(
    source: Path, pg_url: str, pg_server: Any, tmp_path: Path
) -> None:
    assert main(["runs", "--db", str(source), "--export", pg_url]) == 0
    database = pg_url.split("/")[3].split("?")[0]
    pg_server.sql(database, "DELETE FROM move_grades")
    pg_server.sql(database, "DELETE FROM graded_games")
    assert main(["grade", "--db", pg_url, "--no-strategies", "--quiet"]) == 0
    back = tmp_path / "back.db"
    assert main(["runs", "--db", pg_url, "--export", str(back)]) == 0
    assert dump(back)["move_grades"] == dump(source)["move_grades"]
    assert dump(back)["graded_games"] == dump(source)["graded_games"]
