"""Grades with known answers: exact move grades and measured poker exploitability."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from open_spiel.python import policy as openspiel_policy
from open_spiel.python.algorithms import exploitability as openspiel_exploitability

import opponents
from opponents.minimax import MinimaxPlayer
from strategic_arena.actions import ActionError
from strategic_arena.arena.match import play_match_sync
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.games import get_spec
from strategic_arena.grading.grade import (
    IncompleteStrategyError,
    _without_seed,
    grade_moves,
    measure_strategy,
    report_data,
)
from strategic_arena.grading.strategy import info_sets
from strategic_arena.grading.summary import move_summary
from strategic_arena.grading.tables import GradeTables
from strategic_arena.players import RandomPlayer
from strategic_arena.serve import PlayerServer
from strategic_arena.turn import Decision, GameState, Player


class Scripted:
    """Plays the given actions in order (a forced line), or always one action."""

    def __init__(self, actions: Sequence[int], name: str = "scripted") -> None:
        self.actions, self.name, self.turn = list(actions), name, 0

    async def act(self, state: GameState, seat: int) -> Decision:
        action = self.actions[min(self.turn, len(self.actions) - 1)]
        self.turn += 1
        return Decision(action=action, text=str(action))


def _store_games(db: Path, games: Sequence[tuple[str, Sequence[Player], int]]) -> None:
    with ResultsStore(db) as store:
        run = store.run("test", 0, {})
        for index, (env_id, players, seed) in enumerate(games):
            store.add_game(run, f"g{index}", play_match_sync(env_id, players, seed))


def reported_moves(db: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The move-grade rows ``strategic-arena report --json`` prints for ``db``."""
    assert main(["report", "--db", str(db), "--json"]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)["grades"]["moves"]
    return rows


def _rows(db: Path) -> dict[tuple[str, str], dict[str, object]]:
    with ResultsStore(db) as store, GradeTables(db) as tables:
        grade_moves(store, tables, store.games(), 200_000)
        rows = move_summary(tables.move_grades())
    return {(r["player"], r["opponent"]): r for r in rows}


def test_minimax_grades_perfect_and_random_blunders(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    games = []
    for seed in range(6):
        pair: list[Player] = [MinimaxPlayer(seed=seed, name="minimax"), RandomPlayer(seed)]
        games.append(("tic_tac_toe-v0", pair if seed % 2 else pair[::-1], seed))
    _store_games(db, games)
    rows = _rows(db)
    best = rows[("minimax", "all")]
    assert best["graded"] > 0 and best["optimal"]["share"] == 1.0  # type: ignore[index]
    assert best["blunders"]["count"] == 0 and best["accuracy"]["mean"] == 100.0  # type: ignore[index]
    assert rows[("random", "all")]["optimal"]["share"] < 1.0  # type: ignore[index]


def test_forced_blunder_is_counted(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    # X takes the centre; O answers on an edge (cell 1), which loses against perfect play.
    x, o = Scripted([4, 0, 2, 6, 8], "x"), Scripted([1, 3, 5, 7], "o")
    _store_games(db, [("tic_tac_toe-v0", [x, o], 0)])
    o_row = _rows(db)[("o", "all")]
    assert o_row["blunders"]["count"] >= 1  # type: ignore[index]
    with GradeTables(db) as tables:
        first = next(g for g in tables.move_grades() if g.player == "o")
    assert (first.before, first.after, first.category) == (0, -1, "graded")


def test_connect_four_missed_win_is_counted(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    # X builds three on the bottom row, then plays column 5 instead of winning at 3; O stacks
    # column 6 and wins with its fourth stone.
    x, o = Scripted([0, 1, 2, 5], "x"), Scripted([6, 6, 6, 6], "o")
    _store_games(db, [("connect_four-v0", [x, o], 0)])
    with ResultsStore(db) as store, GradeTables(db) as tables:
        grade_moves(store, tables, store.games(), 200_000)
        grades = {g.ply: g for g in tables.move_grades()}
    miss = grades[6]
    assert miss.category == "graded" and miss.before is not None and miss.after is not None
    assert miss.before > 0 > miss.after  # a win thrown into a loss
    assert grades[7].category == "graded" and grades[7].before == grades[7].after  # O wins
    row = _rows(db)[("x", "all")]
    assert row["missed_wins"]["count"] == 1 and row["blunders"]["count"] >= 1  # type: ignore[index]


def test_always_call_kuhn_has_openspiel_exploitability(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    ResultsStore(db).close()
    with GradeTables(db) as tables:
        grade = measure_strategy(
            tables,
            "caller",
            "kuhn_poker-v0",
            lambda seed: Scripted([1], "caller"),
            samples=3,
            policy="forfeit",
            seed=0,
        )
    game = get_spec("kuhn_poker-v0").game
    expected = openspiel_policy.TabularPolicy(game)
    expected.action_probability_array[:] = [0.0, 1.0]
    value = openspiel_exploitability.exploitability(game, expected)
    assert grade["exploitability"] == pytest.approx(value)
    assert grade["ci95"] == pytest.approx([value, value])
    assert grade["info_sets"] == 12 and len(info_sets("leduc_holdem-v0")) == 936


def test_equilibrium_queried_policy_is_nearly_unexploitable(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    ResultsStore(db).close()
    with GradeTables(db) as tables:
        grade = measure_strategy(
            tables,
            "nash",
            "kuhn_poker-v0",
            lambda seed: opponents.make("nash", "kuhn_poker-v0", seed=seed),
            samples=400,
            policy="forfeit",
            seed=0,
        )
    # The shipped Kuhn equilibrium's exploitability is 0; 400 samples per information set
    # leave a sampling error of a few hundredths of a chip at most.
    assert 0.0 <= grade["exploitability"] < 0.03
    assert grade["distance"] < 0.05


def test_served_solver_gets_exploitability_over_http(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    ResultsStore(db).close()
    with PlayerServer("nash") as server:
        args = ["grade", "--db", str(db), "--base-url", server.base_url, "--name", "served"]
        code = main([*args, "--envs", "kuhn_poker-v0", "--samples", "4", "--quiet", "--json"])
    assert code == 0
    with GradeTables(db) as tables:
        (row,) = tables.strategy_grades()
        exploiter = opponents.make(f"best_response:of=served,db={db}", "kuhn_poker-v0", seed=0)
    assert row["player"] == "served" and row["samples"] == 4
    low, high = row["ci95"]
    # Four answers per information set of the equilibrium: near 0, far below uniform random
    # play's 0.458, with an interval from the resampled answers.
    assert 0.0 <= low <= high and row["exploitability"] < 0.25 and high > low
    assert exploiter.name.startswith("best_response")
    # The model played no stored game: its strategy is still reported.
    reported = json.loads(capsys.readouterr().out)["strategies"]
    assert [r["player"] for r in reported] == ["served"]


def test_grade_rejects_bad_input(tmp_path: Path) -> None:
    assert main(["grade", "--db", str(tmp_path / "missing.sqlite")]) == 2
    ResultsStore(tmp_path / "a.sqlite").close()
    assert main(["grade", "--db", str(tmp_path / "a.sqlite"), "--samples", "0"]) == 2
    with GradeTables(tmp_path / "a.sqlite") as tables:
        assert report_data(tables, []) == {"moves": [], "strategies": []}


def test_strategy_queries_resume_and_grades_are_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    _store_games(db, [("tic_tac_toe-v0", [MinimaxPlayer(seed=0), RandomPlayer(0)], 0)])
    asked: list[int] = []

    def build(seed: int) -> Player:
        asked.append(seed)
        return RandomPlayer(seed)

    with GradeTables(db) as tables:
        first = measure_strategy(
            tables, "r", "kuhn_poker-v0", build, samples=3, policy="random", seed=1
        )
        assert len(asked) == 12 * 3
        again = measure_strategy(
            tables, "r", "kuhn_poker-v0", build, samples=3, policy="random", seed=1
        )
        assert len(asked) == 12 * 3 and again == first  # nothing asked twice
        measure_strategy(tables, "r", "kuhn_poker-v0", build, samples=5, policy="random", seed=1)
        assert len(asked) == 12 * 5  # only the new sample numbers
    with ResultsStore(db) as store, GradeTables(db) as tables:
        assert grade_moves(store, tables, store.games(), 1000) == 1
        assert grade_moves(store, tables, store.games(), 1000) == 0  # already graded


def test_exploiter_earns_the_best_response_value(tmp_path: Path) -> None:
    from open_spiel.python.algorithms.expected_game_score import policy_value

    from strategic_arena.grading.exploiter import best_response_policy
    from strategic_arena.grading.strategy import measured_policy

    db = tmp_path / "arena.sqlite"
    ResultsStore(db).close()
    with GradeTables(db) as tables:
        grade = measure_strategy(
            tables,
            "better",
            "kuhn_poker-v0",
            lambda seed: Scripted([1], "better"),
            samples=2,
            policy="forfeit",
            seed=0,
        )
        samples = tables.strategy_samples("better", "kuhn_poker-v0")
    game = get_spec("kuhn_poker-v0").game
    measured = measured_policy("kuhn_poker-v0", samples, 2, "forfeit")
    exploiter = best_response_policy("kuhn_poker-v0", measured)
    # The exploiter in seat 1 against the player in seat 0, and the other way round.
    against_first = policy_value(game.new_initial_state(), [measured, exploiter])[1]
    against_second = policy_value(game.new_initial_state(), [exploiter, measured])[0]
    assert [against_first, against_second] == pytest.approx(grade["best_response"])
    # Against a player who always bets or calls: holding the jack (dealt to seat 1) facing
    # its bet, fold.
    jack_facing_bet = exploiter.action_probabilities(_kuhn_state(game, [1, 0, 1]))
    assert jack_facing_bet == {0: 1.0, 1: 0.0}


def _kuhn_state(game: object, actions: Sequence[int]) -> object:
    state = game.new_initial_state()  # type: ignore[attr-defined]
    for action in actions:
        state.apply_action(action)
    return state


def test_report_shows_the_grades(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:

    db = tmp_path / "arena.sqlite"
    _store_games(db, [("tic_tac_toe-v0", [MinimaxPlayer(seed=0), RandomPlayer(0)], 0)])
    # Tic-Tac-Toe is graded by the report itself (a table lookup); nothing was stored.
    assert {r["env_id"] for r in reported_moves(db, capsys)} == {"tic_tac_toe-v0"}
    with ResultsStore(db) as store:
        assert "move_grades" not in store.table_names()
    assert main(["grade", "--db", str(db), "--no-strategies", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--all-players"]) == 0
    text = capsys.readouterr().out
    assert "Move grades" in text and "minimax" in text
    moves = reported_moves(db, capsys)
    best = next(r for r in moves if r["player"] == "minimax" and r["opponent"] == "all")
    assert best["optimal"]["share"] == 1.0


def test_no_moves_prints_no_move_grades(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "arena.sqlite"
    _store_games(db, [("tic_tac_toe-v0", [MinimaxPlayer(seed=0), RandomPlayer(0)], 0)])
    assert main(["grade", "--db", str(db), "--no-strategies", "--quiet"]) == 0
    assert "Move grades" in capsys.readouterr().out  # graded and stored
    assert main(["grade", "--db", str(db), "--no-strategies", "--no-moves", "--quiet"]) == 0
    assert "Move grades" not in capsys.readouterr().out


def test_grade_help_shows_no_empty_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["grade", "--help"])
    text = capsys.readouterr().out
    assert "(default: None)" not in text and "(default: False)" not in text
    assert "(default: 20)" in text  # a default that says something is still shown


class Answers:
    """Answers the first legal action, recording a decision shaped as ``kind`` says.

    ``retried``: a legal move after one invalid answer (valid); ``substituted``: the random
    policy's move after an invalid answer (invalid); ``endpoint``: the server failed.
    """

    def __init__(self, kind: str) -> None:
        self.kind, self.name = kind, kind

    async def act(self, state: GameState, seat: int) -> Decision:
        action = state.legal_actions(seat)[0]
        bad = ActionError("no_action", "no answer block")
        if self.kind == "retried":
            return Decision(action, error=bad, errors=(bad,), attempts=2)
        if self.kind == "substituted":
            return Decision(action, error=bad, errors=(bad,), attempts=1)
        failure = ActionError("endpoint", "500: server error")
        return Decision(None, error=failure, errors=(failure,))


def _measure(tables: GradeTables, player: Player) -> dict[str, object]:
    return measure_strategy(
        tables,
        player.name,
        "kuhn_poker-v0",
        lambda seed: player,
        samples=2,
        policy="forfeit",
        seed=0,
    )


def test_a_legal_answer_after_a_retry_is_valid_and_a_substitute_is_not(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    ResultsStore(db).close()
    with GradeTables(db) as tables:
        assert _measure(tables, Answers("retried"))["invalid"] == 0.0
        assert _measure(tables, Answers("substituted"))["invalid"] == 1.0


def test_endpoint_failures_are_not_stored_as_answers(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    ResultsStore(db).close()
    with GradeTables(db) as tables:
        with pytest.raises(IncompleteStrategyError, match="24 of 24 queries failed"):
            _measure(tables, Answers("endpoint"))
        assert tables.strategy_samples("endpoint", "kuhn_poker-v0") == {}
        assert tables.strategy_grades() == []


def test_a_seed_in_the_spec_does_not_fix_every_sample() -> None:
    assert _without_seed("nash:seed=7") == "nash"
    assert _without_seed("mcts:simulations=10,seed=3") == "mcts:simulations=10"
    assert _without_seed("random") == "random"


def test_grades_of_more_games_than_sqlite_binds_at_once(tmp_path: Path) -> None:
    db = tmp_path / "arena.sqlite"
    _store_games(db, [("tic_tac_toe-v0", [Scripted([4, 0, 2, 6, 8], "x"), RandomPlayer(1)], 0)])
    with ResultsStore(db) as store, GradeTables(db) as tables:
        grade_moves(store, tables, store.games(), 200_000)
        everything = tables.move_grades()
        (game,) = store.games()
        # 300 000 ids: past SQLite's limit on bound variables in every build (999 before 3.32,
        # 32 766 since, 250 000 in Debian's).
        wanted = [*range(game.id + 1, game.id + 300_000), game.id]
        assert everything and tables.move_grades(wanted) == everything
        assert tables.move_grades([]) == []


def test_the_graded_games_come_from_the_specs() -> None:
    """Which games are graded, and by which exact solver, is in each game's listing."""
    from strategic_arena.games import list_envs
    from strategic_arena.grading import strategy_envs
    from strategic_arena.grading.moves import GRADED_ENVS, POSITION_VALUES, PositionValues

    assert dict(GRADED_ENVS) == {"tic_tac_toe-v0": "minimax", "connect_four-v0": "solver"}
    assert strategy_envs() == ("kuhn_poker-v0", "leduc_holdem-v0")
    for env_id, grader in GRADED_ENVS.items():
        assert grader in POSITION_VALUES and grader in get_spec(env_id).listing.opponents
    for env_id in list_envs():
        listing = get_spec(env_id).listing
        assert (env_id in GRADED_ENVS) == (listing.move_grader is not None)
        assert (env_id in strategy_envs()) == listing.strategy_graded
    values = PositionValues(None)
    # x in cells 0 and 1, o in 3 and 4: x to move completes the top row; once it has, o has lost.
    assert values.value("tic_tac_toe-v0", [0, 3, 1, 4]) == 1
    assert values.value("tic_tac_toe-v0", [0, 3, 1, 4, 2]) == -1
    with pytest.raises(ValueError, match="no exact solver for kuhn_poker-v0"):
        values.value("kuhn_poker-v0", [])
    with pytest.raises(ValueError, match="no strategy grading for tic_tac_toe-v0"):
        info_sets("tic_tac_toe-v0")
