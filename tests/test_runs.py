"""``strategic-arena runs``: list, inspect, rename and delete runs; reused names are refused."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.runs import list_runs
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.serve import PlayerServer
from tests.servers import FaultServer


@pytest.fixture
def served() -> Iterator[PlayerServer]:
    with PlayerServer("nash", model="nash-model") as server:
        yield server


def eval_into(db: Path, base_url: str, *extra: str) -> int:
    args = ["eval", "--db", str(db), "--base-url", base_url, "--envs", "kuhn_poker-v0"]
    args += ["--opponents", "random", "--quiet", "--no-report", "--concurrency", "1"]
    return main([*args, *extra])


def test_runs_lists_counts_and_games_that_replay_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    # The preflight goes through, then the first game's request fails: 1 incomplete game.
    server = FaultServer(["ok", "500"])
    try:
        args = ("--name", "m", "--max-attempts", "1", "--max-replays", "0")
        assert eval_into(db, server.base_url, *args, "--num-games", "4", "--run-name", "a") == 1
        assert eval_into(db, server.base_url, *args, "--num-games", "2", "--run-name", "b") == 0
    finally:
        server.close()
    capsys.readouterr()
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "a: 3 games scored (" in out and "), 1 incomplete, seed " in out
    assert "b: 2 games scored (" in out and "), 0 incomplete" in out
    assert '"num_games": 4' in out  # the settings
    assert main(["runs", "--db", str(db), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["games"], r["incomplete"]) for r in listed] == [("a", 3, 1), ("b", 2, 0)]
    assert main(["runs", "--db", str(db), "--games", "a"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[1:-1]]
    assert len(rows) == 4 and sorted(row[2] for row in rows)[-1] == "incomplete"
    assert "replay one with: strategic-arena replay ID" in out
    for row in rows:  # every listed id is a game replay takes
        assert main(["replay", row[0], "--db", str(db)]) == 0
    assert main(["runs", "--db", str(db), "--games", "nope"]) == 2
    assert "no run named 'nope'" in capsys.readouterr().err


def test_rename_and_delete_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.sqlite"
    for name in ("first", "second"):
        args = ["eval", "--db", str(db), "--envs", "tic_tac_toe-v0", "--opponents", "random"]
        assert main([*args, "--num-games", "2", "--quiet", "--no-report", "--run-name", name]) == 0
    assert main(["grade", "--db", str(db), "--no-strategies", "--quiet"]) == 0
    assert main(["runs", "--db", str(db), "--rename", "first", "second"]) == 2
    assert "already has a run named 'second'" in capsys.readouterr().err
    assert main(["runs", "--db", str(db), "--rename", "first", "renamed"]) == 0
    assert [run.name for run in list_runs(db)] == ["renamed", "second"]
    assert main(["report", "--db", str(db), "--run", "renamed"]) == 0
    with ResultsStore(db) as store:
        doomed = [g.id for g in store.games(store.run_id("renamed"))]
        kept = [g.id for g in store.games(store.run_id("second"))]
    capsys.readouterr()
    assert main(["runs", "--db", str(db), "--delete", "renamed"]) == 0
    assert "deleted run 'renamed' and its 2 games" in capsys.readouterr().out
    assert [run.name for run in list_runs(db)] == ["second"]
    with sqlite3.connect(db) as con:
        graded = {row[0] for row in con.execute("SELECT DISTINCT game_id FROM move_grades")}
        moves = {row[0] for row in con.execute("SELECT DISTINCT game_id FROM moves")}
    assert graded == set(kept) == moves and not set(doomed) & graded  # grades went too
    assert main(["runs", "--db", str(tmp_path / "none.sqlite")]) == 2
    assert not (tmp_path / "none.sqlite").exists()


def test_a_reused_run_name_with_other_settings_is_refused(
    tmp_path: Path, served: PlayerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.sqlite"
    assert eval_into(db, served.base_url, "--num-games", "2", "--run-name", "x") == 0
    code = eval_into(
        db, served.base_url, "--num-games", "4", "--temperature", "0.5", "--run-name", "x"
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "run 'x' exists" in err and "num_games (2 stored, now 4)" in err
    assert "temperature" in err  # the model's sampling differs too
    with ResultsStore(db) as store:
        assert len(store.games()) == 2  # nothing added under the old settings


def test_grade_refuses_a_name_whose_answers_were_drawn_otherwise(
    tmp_path: Path, served: PlayerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "g.sqlite"
    ResultsStore(db).close()
    args = ["grade", "--db", str(db), "--base-url", served.base_url, "--name", "X", "--quiet"]
    args += ["--envs", "kuhn_poker-v0", "--samples", "1", "--no-moves"]
    assert main([*args, "--temperature", "0.5"]) == 0
    capsys.readouterr()
    assert main([*args, "--temperature", "1.0"]) == 2
    err = capsys.readouterr().err
    assert "strategy answers of 'X'" in err and "temperature (0.5 stored, now 1.0)" in err
    assert main([*args, "--temperature", "0.5"]) == 0  # the same settings resume


def test_deleting_a_run_during_its_eval_ends_the_eval_with_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # Before, the eval ended with "FOREIGN KEY constraint failed"; and a store failure in
    # several workers at once (a full disk too) printed a traceback per worker at shutdown.
    from tests.hostile import HostileServer, Reply, Request
    from tests.test_hostile_endpoints import random_service

    db = tmp_path / "d.sqlite"
    requests = 0

    def delete_midway(request: Request) -> Reply:
        nonlocal requests
        requests += 1
        if requests == 4:  # the preflight, then a few games stored: another shell deletes it
            assert main(["runs", "--db", str(db), "--delete", "doomed"]) == 0
        return Reply(payload=request.answer)

    with HostileServer(random_service(), delete_midway) as server:
        args = ("--run-name", "doomed", "--num-games", "16", "--concurrency", "4")
        status = eval_into(db, server.base_url, *args)
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("strategic-arena: error")]
    assert "was deleted from the store while it ran ('strategic-arena runs --delete')" in line
    assert "FOREIGN KEY" not in err
    assert not [record.getMessage() for record in caplog.records if record.levelno >= 40]
