"""A hostile disk: a store locked by another process, read-only, corrupt or full."""

from __future__ import annotations

import dataclasses
import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from strategic_arena.arena import play_match_sync
from strategic_arena.arena.runner import Entrant, run, versus
from strategic_arena.arena.store import ResultsStore, StoreError
from strategic_arena.cli import main
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import Decision, GameState
from tests.disks import resize, tmpfs

# Holds the store's write lock until told to let go (a line on stdin, or a minute at most),
# then holds it argv[2] seconds more and commits; says whether it was told.
LOCKER = """
import select, sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO meta (key, value) VALUES ('locker', 'was here')")
print("locked", flush=True)
told, _, _ = select.select([sys.stdin], [], [], 60)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
print("told" if told else "timed out", flush=True)
"""


def lock(db: Path, hold_s: float) -> subprocess.Popen[str]:
    """Another process holding the write lock of ``db`` (returns once it holds it)."""
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(db), str(hold_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert locker.stdout is not None and locker.stdout.readline() == "locked\n"
    return locker


def let_go(locker: subprocess.Popen[str]) -> None:
    assert locker.stdin is not None
    locker.stdin.write("go\n")
    locker.stdin.flush()


def tasks(num_games: int = 4) -> list:  # type: ignore[type-arg]
    players = [Entrant.opponent("random"), Entrant.opponent("random:seed=7")]
    return versus(players[:1], players[1:], ["kuhn_poker-v0"], num_games, seed=1)


def filled_store(path: Path) -> None:
    with ResultsStore(path) as store:
        summary = run(store, "r", tasks(), seed=1, progress=False)
    assert summary.complete


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_store_locked_by_another_process_is_waited_for(tmp_path: Path) -> None:
    db = tmp_path / "locked.sqlite"
    ResultsStore(db).close()  # the schema exists; the locker writes into it
    # Held 7 s after the run starts: longer than SQLite's default wait of 5 s (the attack of
    # the issue held it 7 s).
    locker = lock(db, 7)
    try:
        impatient = ResultsStore(db, lock_wait_s=0.2)  # a short wait gives up, clearly
        with impatient, pytest.raises(StoreError, match="locked by another process"):
            run(impatient, "r", tasks(), seed=1, progress=False)
        # The run starts while the lock is held and waits for it instead of failing.
        with ResultsStore(db) as store:
            let_go(locker)
            summary = run(store, "r", tasks(), seed=1, progress=False)
            assert summary.complete and summary.played == 4
            assert len(store.games(store.run_id("r"))) == 4
    finally:
        locker.wait(timeout=90)
    assert locker.returncode == 0
    with sqlite3.connect(db) as check:
        assert check.execute("SELECT value FROM meta WHERE key = 'locker'").fetchone() == (
            "was here",
        )


class Counted(RandomPlayer):
    """A random player that reports each decision it makes."""

    def __init__(self, seed: int, on_act: Callable[[], None]) -> None:
        super().__init__(seed)
        self.on_act = on_act

    async def act(self, state: GameState, seat: int) -> Decision:
        self.on_act()
        return await super().act(state, seat)


def test_a_locked_store_does_not_stall_the_games_in_flight(tmp_path: Path) -> None:
    # The lock is taken at the run's first decision, so the first game to end waits to be
    # stored. Games in flight must go on meanwhile (the write waits in a worker thread, not in
    # the event loop): the lock is let go only after 10 more decisions. Were the event loop
    # blocked, none would come and the locker would give up after a minute on its own.
    db = tmp_path / "busy.sqlite"
    lockers: list[subprocess.Popen[str]] = []
    decisions_while_locked = 0

    def on_act() -> None:
        nonlocal decisions_while_locked
        if not lockers:
            lockers.append(lock(db, 0))
            return
        decisions_while_locked += 1
        if decisions_while_locked == 10:
            let_go(lockers[0])

    a, b = (Entrant(name, "x", {}, lambda env_id, seed: Counted(seed, on_act)) for name in "ab")
    with ResultsStore(db) as store:
        summary = run(
            store,
            "r",
            versus([a], [b], ["tic_tac_toe-v0"], 8, seed=2),
            seed=2,
            concurrency=4,
            progress=False,
        )
    (locker,) = lockers
    out, _ = locker.communicate(timeout=90)
    assert out == "told\n" and decisions_while_locked >= 10
    assert summary.complete and summary.played == 8


def test_reading_commands_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An archived store: journal mode DELETE, no -wal file, the file read-only.
    db = tmp_path / "archive.sqlite"
    filled_store(db)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    db.chmod(0o444)
    before = digest(db)
    (game_id,) = [game.id for game in ResultsStore.for_reading(db).games()][:1]
    assert main(["report", "--db", str(db)]) == 0
    assert main(["replay", str(game_id), "--db", str(db)]) == 0
    assert main(["publish", "--db", str(db), "--out", str(tmp_path / "site")]) == 0
    assert "Runs: r (seed 1)" in capsys.readouterr().out
    assert digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive.sqlite", "site"]
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    with ResultsStore(db, readonly=True) as store, pytest.raises(StoreError, match="read-only"):
        store.add_game(
            store.run_id("r"),
            "new",
            play_match_sync("kuhn_poker-v0", [RandomPlayer(0), RandomPlayer(1)], seed=0),
        )


@pytest.mark.parametrize(
    "content",
    [b"this is not a database, just text\n" * 200, b"SQLite format 3\x00" + b"\xff" * 4000],
)
def test_a_corrupt_store_gives_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    db = tmp_path / "corrupt.sqlite"
    db.write_bytes(content)
    # eval with the built-in solver suite: its preflight passes, then the store is opened
    solver_suite = ["--opponents", "random", "--num-games", "1", "--quiet", "--no-report"]
    for command in (
        ["report"],
        ["replay", "1"],
        ["eval", "--envs", "kuhn_poker-v0", *solver_suite],
    ):
        assert main([*command, "--db", str(db)]) == 2
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if line.startswith("strategic-arena:")]
        assert len(errors) == 1 and "Traceback" not in err
        assert f"cannot open results store {db}: it is not a results store" in err
    assert db.read_bytes() == content  # left as it was


def test_a_full_disk_is_named_and_loses_nothing(tmp_path: Path) -> None:
    db = tmp_path / "full.sqlite"
    filled_store(db)
    with ResultsStore(db) as store:
        run_id = store.run_id("r")
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        # SQLite's own limit on the file's size: the disk is "full" at the next new page.
        store._db.execute(f"PRAGMA max_page_count = {pages}")
        game = play_match_sync("kuhn_poker-v0", [RandomPlayer(0), RandomPlayer(1)], seed=0)
        big = dataclasses.replace(game, infrastructure_error="x" * 100_000)
        with pytest.raises(StoreError, match=r"the disk \(or the database's size limit\) is full"):
            store.add_game(run_id, "too-big", big)
        assert len(store.games(run_id)) == 4 and "too-big" not in store.completed_keys(run_id)
        store._db.execute("PRAGMA max_page_count = 1073741823")
        assert store.add_game(run_id, "fits-now", big)  # the connection is still usable


def test_an_archived_store_of_an_older_version_reads_without_an_upgrade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The committed ladder was stored before games.prompts existed: an older store, read as it
    # is (the missing column reads as its default) instead of being upgraded on every read.
    committed = Path(__file__).resolve().parent.parent / "leaderboards" / "ladder.db"
    if not committed.exists():
        pytest.skip("leaderboards/ladder.db is not in this checkout")
    db = tmp_path / "ladder.db"
    db.write_bytes(committed.read_bytes())
    db.chmod(0o444)
    before = digest(db)
    with ResultsStore.for_reading(db) as store:
        assert store.readonly and len(store.games()) == 7500
        assert all(game.prompts == () for game in store.games()[:10])
    assert main(["report", "--db", str(db), "--all-players"]) == 0
    assert "baseline-ladder (seed 0)" in capsys.readouterr().out
    assert digest(db) == before  # (SQLite's -wal/-shm files of a WAL store may appear beside)


def test_runs_lists_a_read_only_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Found by a read-only store opened as a non-root user: listing runs wrote to it.
    db = tmp_path / "archive.sqlite"
    filled_store(db)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    db.chmod(0o444)
    before = digest(db)
    assert main(["runs", "--db", str(db)]) == 0
    assert main(["runs", "--db", str(db), "--games", "r"]) == 0
    assert "r" in capsys.readouterr().out
    assert digest(db) == before and sorted(p.name for p in tmp_path.iterdir()) == [db.name]


def test_an_eval_whose_disk_fills_up_says_so_once_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    # A real full disk (a 600 KiB tmpfs) under eval's eight workers: one line, not one
    # traceback per worker; the games stored before it are whole, and the same command
    # resumes once there is room.
    with tmpfs(tmp_path / "disk", "600k") as disk:
        db = disk / "store.sqlite"
        args = ["eval", "--envs", "kuhn_poker-v0", "tic_tac_toe-v0", "--num-games", "150"]
        args += ["--db", str(db), "--quiet", "--no-report", "--seed", "1"]
        assert main(args) == 2
        err = capsys.readouterr().err
        (line,) = [line for line in err.splitlines() if line.startswith("strategic-arena: ")]
        assert "the disk (or the database's size limit) is full" in line
        assert "Traceback" not in err
        assert not [r.getMessage() for r in caplog.records if r.levelno >= 40]
        with ResultsStore(db) as store:
            stored = len(store.games())
        assert 0 < stored < 600
        resize(disk, "50m")
        assert main(args) == 0
        assert f"{600 - stored} games played, {stored} resumed" in capsys.readouterr().err
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        finally:
            conn.close()  # the file system is unmounted next
