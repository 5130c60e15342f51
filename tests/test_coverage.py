"""Coverage per game and opponent: a server that breaks its losing deals in one game is unranked
there (and overall), though its share over all its games is small; honest players are not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trueskill")

from strategic_arena.actions import ActionError
from strategic_arena.arena.runner import Entrant, run, versus
from strategic_arena.arena.store import ResultsStore
from strategic_arena.leaderboard import build, html, markdown, schema
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import Decision, GameState, Player

KUHN, TTT = "kuhn_poker-v0", "tic_tac_toe-v0"


class Budget:
    """How many more deals the dodger may break (shared by all its games)."""

    def __init__(self) -> None:
        self.left = 0


class Dodger:
    """A random player whose server breaks when it holds Kuhn's losing card, the Jack, while
    its budget lasts: an infrastructure error, so the game is stopped and scored nowhere."""

    def __init__(self, name: str, seed: int, budget: Budget) -> None:
        self.name = name
        self.random = RandomPlayer(seed)
        self.budget = budget

    async def act(self, state: GameState, seat: int) -> Decision:
        holds_jack = state.env_id == KUHN and state.information_state(seat).startswith("0")
        if holds_jack and self.budget.left > 0:
            self.budget.left -= 1
            error = ActionError("endpoint", "503: the connection closed without a reply")
            return Decision(action=None, text="", error=error, errors=(error,))
        return await self.random.act(state, seat)


def entrant(name: str, budget: Budget) -> Entrant:
    def build_player(env_id: str, seed: int) -> Player:
        return Dodger(name, seed, budget)

    return Entrant(name, "llm", {"model": name}, build_player, (KUHN, TTT))


def play(store: ResultsStore, run_name: str, tasks: Any) -> None:
    summary = run(store, run_name, tasks, seed=0, concurrency=1, progress=False, max_replays=0)
    assert summary.failed == []


def rows(data: dict[str, Any], env_id: str | None) -> dict[str, dict[str, Any]]:
    table = (
        data["overall"]
        if env_id is None
        else next(env for env in data["envs"] if env["env_id"] == env_id)
    )
    return {row["player"]: row for row in table["rows"]}


@pytest.fixture(scope="module")
def dodged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The issue's dodger: 3 of its 20 Kuhn games broken (15%), 3 of its 120 games (2.5%)."""
    path = tmp_path_factory.mktemp("coverage") / "dodge.sqlite"
    budget, none = Budget(), Budget()
    dodger, honest = entrant("dodger", budget), entrant("honest", none)
    opponent = Entrant.opponent("random")
    with ResultsStore(path) as store:
        budget.left = 3
        play(store, "kuhn", versus([dodger, honest], [opponent], [KUHN], 20, seed=1))
        assert budget.left == 0  # every break was spent
        play(store, "ttt", versus([dodger, honest], [opponent], [TTT], 100, seed=2))
    return path


def test_a_per_game_dodger_is_unranked_in_that_game_and_the_tables_say_why(
    dodged: Path,
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    with ResultsStore(dodged) as store:
        data = build(store)
        lenient = build(store, max_left_out=1.0)
    jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)
    # Pooled over all its games the share is within the limit...
    (pooled,) = data["coverage"]
    assert pooled["player"] == "dodger"
    assert (pooled["scored_games"], pooled["left_out_games"]) == (117, 3)
    assert pooled["left_out_share"] == 0.025
    # ...but at Kuhn it is 15%: no rank there, and the row says why.
    kuhn = rows(data, KUHN)
    assert kuhn["dodger"]["rank"] is None
    reason = "its server left 3 of its 20 Kuhn Poker games unscored (15.0%, above the 5.0% allowed)"
    assert kuhn["dodger"]["unranked_reason"] == reason
    assert kuhn["honest"]["rank"] is not None and kuhn["honest"]["unranked_reason"] is None
    (env_row,) = next(env for env in data["envs"] if env["env_id"] == KUHN)["coverage"]
    assert env_row == {
        "player": "dodger",
        "scored_games": 17,
        "left_out_games": 3,
        "left_out_share": 0.15,
        "ranked": False,
        "opponents": [
            {"opponent": "random", "scored_games": 17, "left_out_games": 3, "left_out_share": 0.15}
        ],
    }
    # Tic-Tac-Toe, where it broke nothing, ranks it; overall does not (its pool holds Kuhn).
    ttt = rows(data, TTT)
    assert ttt["dodger"]["rank"] is not None and ttt["dodger"]["unranked_reason"] is None
    assert next(e for e in data["envs"] if e["env_id"] == TTT)["coverage"] == []
    overall = rows(data, None)
    assert overall["dodger"]["rank"] is None
    assert overall["dodger"]["unranked_reason"] == f"not ranked at Kuhn Poker: {reason}"
    assert pooled["ranked"] is False
    # The honest player is unaffected: ranked everywhere, in no coverage table.
    assert overall["honest"]["rank"] is not None and overall["honest"]["unranked_reason"] is None
    # honest closes up among the models; random, a baseline, is ranked among the baselines
    assert {name: r["rank"] for name, r in kuhn.items()} == {
        "dodger": None,
        "honest": 1,
        "random": 1,
    }
    # The rule, not a missing rating, withholds the ranks.
    assert all(row["rank"] is not None for row in rows(lenient, KUHN).values())
    assert all(row["rank"] is not None for row in rows(lenient, None).values())
    # Both pages say why.
    page = markdown.render(data)
    assert f"- Not ranked: dodger: {reason}." in page
    assert f"- Not ranked: dodger: not ranked at Kuhn Poker: {reason}." in page
    assert "| dodger | all | 17 | 3 | 15.0 | no |" in page
    assert "| dodger | random | 17 | 3 | 15.0 |  |" in page
    site = html.render(data)
    assert f"<li>Not ranked: <strong>dodger</strong>: {reason}.</li>" in site
    assert "Kuhn Poker: games left out by the players' own server failures" in site


def test_breaking_the_games_against_one_opponent_is_unranked_in_that_game(
    tmp_path: Path,
) -> None:
    # 2 of 80 Kuhn games (2.5%), but 2 of the 20 against nash (10%).
    budget = Budget()
    dodger = entrant("dodger", budget)
    with ResultsStore(tmp_path / "opp.sqlite") as store:
        play(store, "easy", versus([dodger], [Entrant.opponent("random")], [KUHN], 60, seed=1))
        budget.left = 2
        play(store, "hard", versus([dodger], [Entrant.opponent("nash")], [KUHN], 20, seed=2))
        data = build(store)
    (env,) = data["envs"]
    (row,) = env["coverage"]
    assert (row["scored_games"], row["left_out_games"], row["ranked"]) == (78, 2, False)
    assert row["opponents"] == [
        {"opponent": "nash", "scored_games": 18, "left_out_games": 2, "left_out_share": 0.1}
    ]
    assert rows(data, KUHN)["dodger"]["unranked_reason"] == (
        "its server left 2 of its 20 Kuhn Poker games against nash unscored "
        "(10.0%, above the 5.0% allowed)"
    )
    assert rows(data, KUHN)["dodger"]["rank"] is None
