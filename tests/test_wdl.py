"""One W/D/L everywhere: the report's table, the TrueSkill table and the published pages count
the same games of a real stored run the same way (a seat's result by the sign of its return).

The run is real: solvers playing Kuhn Poker (dealt cards: TrueSkill pairs the deals into
duplicate matches, the case where the TrueSkill table used to count matches instead of games)
and Tic-Tac-Toe (draws) through the arena runner into SQLite.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest

pytest.importorskip("trueskill")
pytest.importorskip("numba")  # the Nash and MCTS opponents

from strategic_arena.arena.metrics import SELF, report, summarize
from strategic_arena.arena.runner import Entrant, round_robin, run
from strategic_arena.arena.store import ResultsStore
from strategic_arena.arena.teams import player_result, result_of
from strategic_arena.leaderboard.data import build
from strategic_arena.ratings import OVERALL, rating_tables, ratings_report

KUHN, TTT = "kuhn_poker-v0", "tic_tac_toe-v0"
Record = tuple[int, int, int]


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("wdl") / "arena.db"
    specs = ["random", "nash", "mcts:simulations=10", "minimax"]
    with ResultsStore(path) as store:
        tasks = round_robin([Entrant.opponent(s) for s in specs], [KUHN, TTT], 12, seed=4)
        assert run(store, "wdl", tasks, seed=4, concurrency=1, progress=False).complete
    return path


def test_the_definition_is_the_sign_of_the_return() -> None:
    assert [result_of(v) for v in (2.0, 0.0, -0.5)] == ["win", "draw", "loss"]
    # Three-player ranks as TextArena pays them (-1, 0, +1): the middle seat drew.
    assert [player_result((-1.0, 0.0, 1.0), (0, 1, 2), [s]) for s in range(3)] == [
        "loss",
        "draw",
        "win",
    ]
    # Two teams of two: a seat's result is its team's.
    assert player_result((1.0, -1.0, 1.0, -1.0), (0, 1, 0, 1), [2]) == "win"


def test_report_trueskill_and_pages_show_the_same_wdl(store_path: Path) -> None:
    with ResultsStore(store_path) as store:
        summaries = summarize(store)
        tables = rating_tables(store)
        data = build(store)
        games = store.games()
    # The report's rows (every seat together, against each opponent), summed per env.
    per_env: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for row in summaries:
        if row.seat is None and row.opponent != SELF and row.wins is not None:
            per_env[(row.env_id, row.player)].update(
                win=row.wins, draw=row.draws or 0, loss=row.losses or 0
            )
    report_wdl = {key: (c["win"], c["draw"], c["loss"]) for key, c in per_env.items()}
    # Counted by hand from the stored games: each player's seat by the sign of its return.
    by_hand: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for game in games:
        for seat, player in enumerate(game.players):
            by_hand[(game.env_id, player)][result_of(game.returns[seat])] += 1
    assert report_wdl == {key: (c["win"], c["draw"], c["loss"]) for key, c in by_hand.items()}
    assert any(draws for _, draws, _ in report_wdl.values())  # Tic-Tac-Toe draws
    trueskill_wdl = {
        (env_id, r.player): (r.wins, r.draws, r.losses)
        for env_id, table in tables.items()
        if env_id != OVERALL
        for r in table.ratings
    }
    page_wdl = {
        (env["env_id"], row["player"]): (row["wins"], row["draws"], row["losses"])
        for env in data["envs"]
        for row in env["rows"]
    }
    assert trueskill_wdl == report_wdl == page_wdl
    # Kuhn's deals were paired into duplicate matches: fewer matches than games, same W/D/L.
    kuhn_games = sum(1 for game in games if game.env_id == KUHN)
    assert tables[KUHN].matches < kuhn_games
    # Overall: every env's games together, in the TrueSkill table and on the page alike.
    overall: dict[str, Counter[str]] = defaultdict(Counter)
    for (_, player), (wins, draws, losses) in report_wdl.items():
        overall[player].update(win=wins, draw=draws, loss=losses)
    expected = {p: (c["win"], c["draw"], c["loss"]) for p, c in overall.items()}
    assert {r.player: (r.wins, r.draws, r.losses) for r in tables[OVERALL].ratings} == expected
    page_overall = {
        row["player"]: (row["wins"], row["draws"], row["losses"]) for row in data["overall"]["rows"]
    }
    assert page_overall == expected


def test_the_text_report_prints_one_wdl_per_player_and_game(store_path: Path) -> None:
    from strategic_arena.arena.metrics import render_text

    with ResultsStore(store_path) as store:
        data = report(store)
        data["ratings"] = ratings_report(store)
    text = render_text(data, all_players=True)
    table = text.split(f"== TrueSkill: {KUHN}")[1].split("\n\n")[0]
    nash = next(line for line in table.splitlines() if line.startswith("nash "))
    rows = [s for s in data["summaries"] if s["env_id"] == KUHN and s["player"] == "nash"]
    wins = sum(s["wins"] for s in rows if s["seat"] is None and s["opponent"] != SELF)
    draws = sum(s["draws"] for s in rows if s["seat"] is None and s["opponent"] != SELF)
    losses = sum(s["losses"] for s in rows if s["seat"] is None and s["opponent"] != SELF)
    assert nash.endswith(f"(games {wins + draws + losses})  W/D/L {wins}/{draws}/{losses}")


def test_the_report_says_what_paper_percent_is_and_why_it_leaves_0_100(
    store_path: Path,
) -> None:
    from strategic_arena.arena.metrics import OUT_OF_RANGE_NOTE, PAPER_NOTE, render_text

    with ResultsStore(store_path) as store:
        data = report(store)
    # random against nash at Kuhn has MARSHAL's references: the legend explains the column.
    papers = [s["marshal_paper"] for s in data["summaries"] if s["marshal_paper"] is not None]
    assert papers
    text = render_text(data, all_players=True)
    assert PAPER_NOTE in text
    # Every score in range: no note about the range; one out of range (the newcomer saw
    # -350.4) comes with the reason.
    for summary in data["summaries"]:
        summary["normalized"] = 50.0
        if summary["marshal_paper"] is not None:
            summary["marshal_paper"] = 50.0
    assert OUT_OF_RANGE_NOTE not in render_text(data, all_players=True)
    next(s for s in data["summaries"] if s["marshal_paper"] is not None)["marshal_paper"] = -350.4
    assert OUT_OF_RANGE_NOTE in render_text(data, all_players=True)
