"""The results store on PostgreSQL: the same records and rules as on SQLite, and hostile servers.

Each test runs against a real server (:mod:`tests.pg`); the ones parametrized by ``target``
run the same code on a SQLite file and on a PostgreSQL database, and must see the same thing.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from strategic_arena.arena import play_match_sync, postgres
from strategic_arena.arena.records import StoredGame
from strategic_arena.arena.runner import Entrant, run, versus
from strategic_arena.arena.store import ResultsStore, StoreError
from strategic_arena.cli import main
from strategic_arena.door import shown
from strategic_arena.players import RandomPlayer
from tests.pg import PASSWORD, Server


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new store: a SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "arena.db")
    return str(request.getfixturevalue("pg_url"))


def record(seed: int, env_id: str = "kuhn_poker-v0"):  # type: ignore[no-untyped-def]
    return play_match_sync(env_id, [RandomPlayer(seed), RandomPlayer(seed + 1)], seed=seed)


def tasks(num_games: int = 4) -> list:  # type: ignore[type-arg]
    players = [Entrant.opponent("random"), Entrant.opponent("random:seed=7")]
    return versus(players[:1], players[1:], ["kuhn_poker-v0"], num_games, seed=1)


def without_times(game: StoredGame) -> StoredGame:
    return dataclasses.replace(game, finished=0.0, duration_s=0.0)


def test_games_and_moves_round_trip_and_the_rules_hold(target: str) -> None:
    with ResultsStore(target) as store:
        run_id = store.run("demo", seed=1, settings={"envs": ["kuhn_poker-v0"]})
        assert store.run("demo", seed=1, settings={"envs": ["kuhn_poker-v0"]}) == run_id
        with pytest.raises(ValueError, match="exists with seed 1"):
            store.run("demo", seed=2, settings={"envs": ["kuhn_poker-v0"]})
        with pytest.raises(ValueError, match=r"num_games .*runs --delete demo"):
            store.run("demo", seed=1, settings={"envs": ["kuhn_poker-v0"], "num_games": 3})
        store.player("random", "random", {"seed": 1})
        with pytest.raises(ValueError, match="already has a player named 'random'"):
            store.player("random", "llm", {})
        with pytest.raises(ValueError, match="looks like a secret"):
            store.player("gpt", "llm", {"key": "sk-abcdefghijklmnop"})
        games = [record(seed) for seed in range(5)]
        for seed, game in enumerate(games):
            assert store.add_game(run_id, f"g{seed}", game)
        assert not store.add_game(run_id, "g0", games[0])  # a replayed game is not stored twice
        incomplete = dataclasses.replace(games[1], status="incomplete", infrastructure_error="x")
        assert store.add_game(run_id, "g9", incomplete)  # a failed try, stored as such
        assert not store.add_game(run_id, "g1", incomplete)  # never beside a scored game
        assert store.completed_keys(run_id) == {f"g{i}" for i in range(5)}
        assert store.incomplete_counts(run_id) == {"g9": 1}
        stored = store.games(run_id)
        assert [g.returns for g in stored] == [g.returns for g in games]
        assert [list(g.history) for g in stored] == [list(g.history) for g in games]
        moves = store.moves(stored[0].id)
        assert [m.action for m in moves] == [m.action for m in games[0].moves]
        assert [m.prompt for m in moves] == [tuple(m.decision.prompt) for m in games[0].moves]
        stats = store.move_stats([run_id])
        assert len(stats) == sum(len(g.moves) for g in games) + len(incomplete.moves)
        store.rename_run("demo", "renamed")
        assert [r.name for r in store.runs()] == ["renamed"]
        assert len(store.delete_run("renamed")) == 6
        assert store.runs() == [] and store.games(include_incomplete=True) == []


def test_the_same_run_stores_the_same_records_in_both(tmp_path: Path, pg_url: str) -> None:
    stored = []
    for where in (str(tmp_path / "a.db"), pg_url):
        with ResultsStore(where) as store:
            summary = run(store, "r", tasks(6), seed=3, progress=False)
            assert summary.played == 6 and summary.complete
            stored.append(
                (
                    {
                        g.game_key: (
                            dataclasses.replace(without_times(g), id=0),
                            [dataclasses.replace(m, latency_s=0.0) for m in store.moves(g.id)],
                        )
                        for g in store.games(summary.run_id)
                    },
                    store.players(),
                    [dataclasses.replace(r, created=0.0) for r in store.runs()],
                )
            )
        with ResultsStore(where) as store:  # resuming plays nothing
            again = run(store, "r", tasks(6), seed=3, progress=False)
            assert again.resumed == 6 and again.played == 0
    assert stored[0] == stored[1]


def test_reading_opens_a_read_only_session(pg_url: str, pg_server: Server) -> None:
    with ResultsStore(pg_url) as store:
        run(store, "r", tasks(2), seed=3, progress=False)
    with ResultsStore.for_reading(pg_url) as store:
        assert len(store.games()) == 2
        with pytest.raises(StoreError, match="read-only"), store.transaction():
            store.run("other", 1, {})
    empty = pg_server.url(pg_server.create_database())
    with pytest.raises(StoreError, match="not a results store"):
        ResultsStore.for_reading(empty)


def test_a_refused_connection_is_one_line_and_names_no_secret(
    pg_server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = Server(pg_server.folder, 1, [], pg_server.bin, pg_server._databases)  # no server
    url = closed.tcp_url("results", password="hunter2-secret")
    with pytest.raises(StoreError, match="cannot connect") as refused:
        ResultsStore(url)
    assert "hunter2-secret" not in str(refused.value)
    assert main(["report", "--db", url]) == 2
    err = capsys.readouterr().err
    assert "cannot connect" in err and "hunter2-secret" not in err
    assert len(err.strip().splitlines()) == 1


def test_credentials_come_from_the_environment_and_are_never_shown(
    pg_server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    database = pg_server.create_database()
    with pytest.raises(StoreError, match="authentication failed"):
        ResultsStore(pg_server.tcp_url(database, password="wrong"))
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    url = pg_server.tcp_url(database)  # no password in the URL: libpq reads PGPASSWORD
    with ResultsStore(url) as store:
        run(store, "r", tasks(2), seed=3, progress=False)
        assert PASSWORD not in store.location and "arena@" not in store.location
    with_password = pg_server.tcp_url(database, password=PASSWORD)
    assert shown(with_password) == f"postgresql://127.0.0.1:{pg_server.port}/{database}"
    assert main(["runs", "--db", with_password]) == 0
    out = capsys.readouterr().out
    assert "r" in out and PASSWORD not in out
    dump = pg_server.sql(database, "SELECT settings FROM runs UNION ALL SELECT params FROM players")
    assert all(PASSWORD not in str(row) for row in dump)


def test_a_user_without_permission_gets_one_clear_line(pg_server: Server, pg_url: str) -> None:
    with ResultsStore(pg_url) as store:
        run(store, "r", tasks(2), seed=3, progress=False)
    database = pg_url.split("/")[3].split("?")[0]
    pg_server.sql(database, "DROP ROLE IF EXISTS reader")
    pg_server.sql(database, "CREATE ROLE reader LOGIN")
    reader = pg_url.replace("arena@", "reader@")
    with pytest.raises(StoreError, match="permission denied"):
        ResultsStore.for_reading(reader).games()
    with pytest.raises(StoreError, match="permission denied"):
        ResultsStore(reader)


def test_server_errors_are_named_in_words() -> None:
    # A full disk or a read-only server cannot be made on demand here; their errors can: the
    # driver's own exception classes, with the SQLSTATE the server sends.
    psycopg = pytest.importorskip("psycopg")
    full = psycopg.errors.DiskFull("could not extend file: No space left on device")
    assert postgres.explain(full).startswith("the database server's disk is full (")
    readonly = psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT")
    assert postgres.explain(readonly).startswith("it is read-only")
    lost = psycopg.OperationalError("server closed the connection unexpectedly\nmore")
    assert postgres.explain(lost) == (
        "the connection to the database server was lost (server closed the connection unexpectedly)"
    )
    leaked = psycopg.OperationalError("invalid dsn: postgresql://u:hunter2@h/db password=hunter2")
    assert "hunter2" not in postgres.explain(leaked)


def test_a_connection_dropped_inside_a_write_writes_the_game_once(
    pg_url: str, pg_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = pg_url.split("/")[3].split("?")[0]
    with ResultsStore(pg_url) as store:
        run_id = store.run("r", 1, {})
        write = store._add_game
        drops = []

        def dropped_then_written(*args: object) -> bool:
            if not drops:  # the transaction is open: the server ends its session now
                drops.extend(
                    pg_server.sql(
                        database,
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                        "datname = current_database() AND application_name = 'strategic-arena'",
                    )
                )
            return write(*args)  # type: ignore[arg-type]

        monkeypatch.setattr(store, "_add_game", dropped_then_written)
        assert store.add_game(run_id, "g0", record(0))
        assert drops == [(True,)]
        assert [game.game_key for game in store.games(run_id)] == ["g0"]
        assert not store.add_game(run_id, "g0", record(0))  # still stored once
