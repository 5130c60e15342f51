"""What the arena scores: server failures apart, stated score references, every answer kept."""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.actions import ActionError
from strategic_arena.arena.match import MatchRecord
from strategic_arena.arena.metrics import infrastructure, render_text, report, summarize
from strategic_arena.arena.replay import replay_game
from strategic_arena.arena.runner import Entrant, run, versus
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import Asking
from strategic_arena.backends import OpenAIBackend
from strategic_arena.cli import main
from strategic_arena.players import RandomPlayer
from strategic_arena.serve import PlayerService
from strategic_arena.turn import Decision, GameState, Player
from tests.servers import FaultServer


def flaky_model(server: FaultServer, *, policy: str = "forfeit") -> Entrant:
    backend = OpenAIBackend(
        "random",
        server.base_url,
        api_key="unused",
        max_attempts=2,
        backoff_base_s=0.0,
        seed=0,
        asking=Asking(policy=policy),
    )
    return Entrant.llm(backend, name="flaky")


def test_a_game_a_server_breaks_is_stored_apart_scored_nowhere_and_replayed(
    tmp_path: Path,
) -> None:
    server = FaultServer(["500", "500"])  # the first model request fails twice: given up
    try:
        model = flaky_model(server)
        tasks = versus([model], [Entrant.opponent("random")], ["tic_tac_toe-v0"], 2, seed=0)
        with ResultsStore(tmp_path / "a.sqlite") as store:
            first = run(store, "r", tasks, seed=0, concurrency=1, progress=False)
            assert (first.played, first.incomplete, first.complete) == (1, 1, False)
            run_id = store.run_id("r")
            (broken,) = [g for g in store.games(run_id, include_incomplete=True) if not g.scored]
            assert broken.game_key == tasks[0].key and broken.returns == (0.0, 0.0)
            assert broken.infrastructure_error is not None
            assert broken.infrastructure_error.startswith("endpoint: 500")
            assert [g.game_key for g in store.games(run_id)] == [tasks[1].key]
            # Scored nowhere: one game in the summaries, the other counted apart.
            (mine,) = [s for s in summarize(store) if s.player == "flaky" and s.seat is None]
            assert mine.games == 1 and mine.invalid_answers == 0 and mine.forfeits == 0
            (apart,) = infrastructure(store)
            assert (apart.player, apart.incomplete_games, apart.unresolved) == ("flaky", 1, 1)
            assert apart.failed_requests == 2 and apart.errors == {"endpoint": 1}
            text = render_text(report(store))
            assert "Infrastructure failures" in text and "1 still unscored" in text
            # The stored moves replay exactly up to the failed decision.
            replayed = replay_game(store, broken.id)
            assert replayed.moves[-1].action is None and replayed.moves[-1].error is not None
            # The next run replays it from the start (same seeds): now it is scored.
            second = run(store, "r", tasks, seed=0, concurrency=1, progress=False)
            assert (second.played, second.resumed, second.incomplete) == (1, 1, 0)
            assert second.complete
            assert sorted(g.game_key for g in store.games(run_id)) == sorted(t.key for t in tasks)
            (apart,) = infrastructure(store)
            assert (apart.incomplete_games, apart.unresolved) == (1, 0)
            # After a successful replay nothing is left out, and the report says so.
            text = render_text(report(store))
            assert "left out of every score" not in text and "still unscored" not in text
            assert "1 game stopped by them (endpoint 1), all replayed since and scored" in text
            assert "tok p50: median completion tokens per decision" in text
    finally:
        server.close()


def test_replays_stop_at_the_limit_and_eval_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each eval's preflight request goes through; then the server fails every game's request
    # (2 games, 1 attempt each). The third eval has no game left to try.
    server = FaultServer(["ok", "500", "500", "ok", "500", "500", "ok"])
    db = tmp_path / "down.sqlite"
    args = [
        "eval",
        "--base-url",
        server.base_url,
        "--name",
        "m",
        "--envs",
        "tic_tac_toe-v0",
        "--opponents",
        "random",
        "--num-games",
        "2",
        "--max-attempts",
        "1",
        "--max-replays",
        "1",
        "--db",
        str(db),
        "--quiet",
        "--no-report",
    ]
    try:
        assert main(args) == 1
        assert "2 games are incomplete" in capsys.readouterr().err
        assert main(args) == 1  # the one replay allowed
        assert main(args) == 1  # nothing left to try
        err = capsys.readouterr().err
        assert "0 will be replayed by the same command (--max-replays 1), 2 are given up" in err
        assert main(["report", "--db", str(db)]) == 0  # and the report says the same
        out = capsys.readouterr().out
        assert "2 still unscored and left out of every score: 2 given up (--max-replays" in out
        assert "replayed by rerunning" not in out
    finally:
        server.close()
    with ResultsStore(db) as store:
        (run_info,) = store.runs()
        counts = store.incomplete_counts(run_info.id)
        assert len(counts) == 2 and set(counts.values()) == {2}  # played once, replayed once
        assert store.games(run_info.id) == []


class Forfeiter:
    """A player whose every answer is invalid (as a model that never follows the format)."""

    name = "forfeiter"

    async def act(self, state: GameState, seat: int) -> Decision:
        error = ActionError("format", "not the required layout")
        return Decision(None, "whatever", error, errors=(error,))


@pytest.mark.parametrize(
    ("env_id", "marshal"), [("kuhn_poker-v0", 25.0), ("leduc_holdem-v0", 100 * 12 / 26)]
)
def test_a_player_that_forfeits_everything_scores_zero(
    tmp_path: Path, env_id: str, marshal: float
) -> None:
    def build(env: str, seed: int) -> Player:
        return Forfeiter()

    forfeiter = Entrant("forfeiter", "test", {}, build)
    tasks = versus([forfeiter], [Entrant.opponent("random")], [env_id], 4, seed=0)
    with ResultsStore(tmp_path / "f.sqlite") as store:
        run(store, "f", tasks, seed=0, progress=False)
        (mine,) = [s for s in summarize(store) if s.player == "forfeiter" and s.seat is None]
    assert mine.mean_return == -1.0 and mine.forfeits == 4
    assert mine.normalized == 0.0  # the forfeit reference
    assert mine.marshal_normalized == pytest.approx(marshal)  # MARSHAL's formula, kept


def test_every_answer_of_a_retried_move_is_stored_and_replay_shows_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = FaultServer(["truncated"])  # the first answer is cut off, the second is fine
    try:
        model = flaky_model(server, policy="retry:1")
        tasks = versus([model], [Entrant.opponent("random")], ["tic_tac_toe-v0"], 1, seed=0)
        db = tmp_path / "t.sqlite"
        with ResultsStore(db) as store:
            run(store, "t", tasks[:1], seed=0, progress=False)
            (game,) = store.games()
            first = store.moves(game.id)[0]
    finally:
        server.close()
    assert first.attempts == 2 and len(first.tries) == 2
    cut, good = first.tries
    assert cut.error == ActionError("truncated", "the response was cut off at the length limit")
    assert cut.finish_reason == "length" and cut.feedback is not None
    assert good.error is None and good.response == first.response
    assert main(["replay", str(game.id), "--db", str(db), "--prompts"]) == 0
    out = capsys.readouterr().out
    assert "--- response (answer 1 of 2) ---" in out and "--- response (answer 2 of 2) ---" in out
    assert f"--- feedback (user) ---\n{cut.feedback}" in out


def test_a_refused_eval_leaves_nothing_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = FaultServer()
    db = tmp_path / "r.sqlite"
    common = ["eval", "--base-url", server.base_url, "--name", "m", "--db", str(db)]
    common += ["--envs", "tic_tac_toe-v0,kuhn_poker-v0", "--opponents", "random"]
    common += ["--num-games", "2", "--quiet", "--no-report"]
    try:
        assert main(common) == 0
        # The same name with other settings is another model: refused, and nothing stored.
        assert main([*common, "--temperature", "0.5"]) == 2
        assert "already has a player named 'm'" in capsys.readouterr().err
    finally:
        server.close()
    with ResultsStore(db) as store:
        (only,) = store.runs()
        # --envs took a comma list: both games were played.
        assert {g.env_id for g in store.games(only.id)} == {"tic_tac_toe-v0", "kuhn_poker-v0"}
    assert main(["report", "--db", str(db)]) == 0
    assert capsys.readouterr().out.count("Runs: ") == 1


def test_bad_env_lists_are_refused_with_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--envs", "tic_tac_toe-v0,nope", "--db", "/nonexistent/x"]) == 2
    assert "nope" in capsys.readouterr().err


def test_eval_help_shows_each_default_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: None)" not in text
    assert "(default: 8)" in text  # --concurrency: a default worth showing is still shown
    chunks = text.split(" --")
    assert all(chunk.count("(default") <= 1 for chunk in chunks), [
        c for c in chunks if c.count("(default") > 1
    ]


def test_the_report_never_cuts_names(tmp_path: Path) -> None:
    long_name = "organisation/a-model-with-a-rather-long-name-v2.5-instruct"
    with ResultsStore(tmp_path / "n.sqlite") as store:
        run_id = store.run("n", 0, {"candidates": [long_name]})
        for i, players in enumerate([(long_name, "mcts:simulations=1000"), ("x", long_name)]):
            record = MatchRecord("tic_tac_toe-v0", 0, players, (), (1.0, -1.0), "complete")
            store.add_game(run_id, str(i), record)
        text = render_text(report(store), all_players=True)
    assert f"{long_name} mcts:simulations=1000" in text
    assert "a-rather-long-name-v2.5-instruct" in text


#: eval's --timeout in the fault benchmark's tests: an injected slow answer costs it, and an
#: honest one on a loaded machine never reaches it (exact failure counts are asserted).
FAULT_TIMEOUT_S = 3.0


def test_the_fault_benchmark_in_small(tmp_path: Path) -> None:
    # benchmarks/bench_faults.py at a tiny size: SIGKILLs at random moments and a server failing
    # 30% of requests change nothing in the scored games.
    from benchmarks.bench_faults import measure, parse

    args: argparse.Namespace = parse(
        ["--games", "6", "--kills", "2", "--max-delay", "0.5", "--timeout", str(FAULT_TIMEOUT_S)]
    )
    result = measure(args)
    assert result.kills == 2 and sum(result.injected.values()) > 0
    assert result.scored_games == result.reference_games == 12
    assert result.duplicate_keys == result.missing_keys == result.mismatched_games == 0
    # Failures of games in flight at a kill are lost with them, so whether any failure is left
    # in the store depends on the kill times: the report must agree with the store either way.
    assert result.report_shows_infrastructure == result.failures_stored
    assert result.passed


def test_the_fault_benchmark_records_every_injected_failure_without_kills() -> None:
    # Without kills nothing is in flight at a SIGKILL: each failure the server injected is
    # recorded exactly once, apart from the scored games, and the report shows them.
    from benchmarks.bench_faults import measure, parse

    result = measure(parse(["--games", "6", "--kills", "0", "--timeout", str(FAULT_TIMEOUT_S)]))
    assert sum(result.injected.values()) > 0
    assert result.failed_requests_recorded == sum(result.injected.values())
    assert result.scored_games == result.reference_games == 12
    assert result.report_shows_infrastructure and result.passed


def test_a_version_3_store_is_upgraded_to_keep_incomplete_tries(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite"
    with ResultsStore(path) as store:
        run_id = store.run("old", 0, {})
        store.add_game(
            run_id, "g", MatchRecord("kuhn_poker-v0", 0, ("a", "b"), (), (1, -1), "complete")
        )
    con = sqlite3.connect(path)  # rebuild games as version 3 had it: one row per key
    con.executescript(
        """
        PRAGMA foreign_keys=OFF;
        CREATE TABLE old (id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, game_key TEXT NOT NULL,
            env_id TEXT NOT NULL, seed INTEGER NOT NULL, players TEXT NOT NULL,
            returns TEXT NOT NULL, status TEXT NOT NULL, forfeited_by INTEGER,
            history TEXT NOT NULL, duration_s REAL NOT NULL, finished REAL NOT NULL,
            UNIQUE (run_id, game_key));
        INSERT INTO old SELECT id, run_id, game_key, env_id, seed, players, returns, status,
            forfeited_by, history, duration_s, finished FROM games;
        DROP TABLE games;
        ALTER TABLE old RENAME TO games;
        UPDATE meta SET value = '3' WHERE key = 'schema_version';
        """
    )
    con.close()
    broken = MatchRecord(
        "kuhn_poker-v0", 1, ("a", "b"), (), (0.0, 0.0), "incomplete", infrastructure_error="x"
    )
    with ResultsStore(path) as store:
        run_id = store.run_id("old")
        assert [g.game_key for g in store.games()] == ["g"]
        assert store.add_game(run_id, "h", broken) and store.add_game(run_id, "h", broken)
        assert not store.add_game(run_id, "g", broken)  # "g" is scored already
        assert store.incomplete_counts(run_id) == {"h": 2}
        assert store.completed_keys(run_id) == {"g"}
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM meta").fetchone()[0] == "4"
    con.close()


class JackDodger:
    """An adversarial endpoint's player: random, but its server breaks whenever it holds the
    Jack (Kuhn's losing card), hoping those games are left out of its score."""

    name = "dodger"

    def __init__(self) -> None:
        self.random = RandomPlayer(0)

    async def act(self, state: GameState, seat: int) -> Decision:
        if state.information_state(seat).startswith("0"):  # card 0 = Jack
            raise ValueError("the server breaks: the connection closes without a reply")
        return await self.random.act(state, seat)


def test_a_player_that_fails_its_losing_deals_is_shown_but_not_ranked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("trueskill")
    from strategic_arena.leaderboard import build, markdown

    server = FaultServer(service=PlayerService("dodger", lambda env_id: JackDodger()))
    try:
        backend = OpenAIBackend(
            "dodger", server.base_url, api_key="unused", max_attempts=2, backoff_base_s=0.0
        )
        dodger = Entrant.llm(backend, name="dodger")
        tasks = versus([dodger], [Entrant.opponent("random")], ["kuhn_poker-v0"], 12, seed=3)
        with ResultsStore(tmp_path / "dodge.sqlite") as store:
            summary = run(store, "r", tasks, seed=0, concurrency=2, progress=False, max_replays=0)
            dodged = summary.incomplete
            assert 0 < dodged < len(tasks) and summary.given_up == dodged
            data = build(store)
            default_rule = build(store, max_left_out=1.0)
    finally:
        server.close()
    (coverage,) = data["coverage"]
    assert coverage == {
        "player": "dodger",
        "scored_games": len(tasks) - dodged,
        "left_out_games": dodged,
        "left_out_share": round(dodged / len(tasks), 4),
        "ranked": False,
    }
    (env,) = data["envs"]
    ranks = {row["player"]: row["rank"] for row in env["rows"]}
    assert ranks == {"random": 1, "dodger": None}
    assert {row["player"]: row["rank"] for row in data["overall"]["rows"]}["dodger"] is None
    dodger_row = next(row for row in env["rows"] if row["player"] == "dodger")
    assert dodger_row["games"] == len(tasks) - dodged and dodger_row["trueskill"] is not None
    # Allowing every share ranks it again: the rule, not a missing rating, unranked it.
    assert default_rule["coverage"][0]["ranked"]
    # (the model and the baseline are each first of their group: they are ranked apart)
    assert {r["player"]: r["rank"] for r in default_rule["envs"][0]["rows"]} == {
        "dodger": 1,
        "random": 1,
    }
    page = markdown.render(data)
    assert "shown without a rank" in page
    assert f"| dodger | {len(tasks) - dodged} | {dodged} |" in page
    with ResultsStore(tmp_path / "dodge.sqlite") as store, pytest.raises(ValueError, match="max_"):
        build(store, max_left_out=1.5)
    db, out = str(tmp_path / "dodge.sqlite"), str(tmp_path / "site")
    assert main(["publish", "--db", db, "--out", out, "--max-left-out", "2"]) == 2
    assert "--max-left-out must be between 0 and 1" in capsys.readouterr().err
    assert main(["publish", "--db", db, "--out", out, "--max-left-out", "0.5"]) == 0
    assert "Games left out by the players" in (tmp_path / "site" / "index.html").read_text()
