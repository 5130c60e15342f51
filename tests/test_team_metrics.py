"""Per-team and per-seat metrics in the report and the leaderboard, from real N-seat games.

The team game is four-player Kuhn poker (OpenSpiel) whose spec pairs seats 0 and 2 against
1 and 3, registered for the test: real games played through the match loop, a real store.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import strategic_arena as sa
from strategic_arena.arena import metrics
from strategic_arena.arena.defaults import DEFAULT_OPPONENTS, SOLVER_SUITE
from strategic_arena.arena.store import ResultsStore
from strategic_arena.arena.teams import seat_teams, team_summaries
from strategic_arena.cli import main
from strategic_arena.games import CURATED
from strategic_arena.games.generic import GenericSpec
from strategic_arena.games.tables import opponent_envs
from strategic_arena.leaderboard import publish, schema
from strategic_arena.players import RandomPlayer
from strategic_arena.ratings import outcomes, rating_tables
from strategic_arena.serve import PlayerServer

TEAM_GAME = "team_kuhn-v0"


class TeamKuhn(GenericSpec):
    """Four-player Kuhn poker played as two teams of two (seats 0 + 2 against 1 + 3)."""

    seat_teams = (0, 1, 0, 1)

    def __init__(self) -> None:
        super().__init__("kuhn_poker", {"players": 4})
        self.env_id = TEAM_GAME


@pytest.fixture
def team_game(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # The derived tables are read before the test game joins the registry, and keep it out.
    len(SOLVER_SUITE), len(DEFAULT_OPPONENTS), opponent_envs("random")
    monkeypatch.setitem(CURATED, TEAM_GAME, f"{__name__}:TeamKuhn")
    yield TEAM_GAME


def _store(path: Path) -> list[tuple[float, ...]]:
    """Four games: the model and a bot as one team (seats 0 and 2) against two bots."""
    returns = []
    with ResultsStore(path) as store:
        run_id = store.run("teams", 0, {})
        for seed in range(4):
            names = ["model", "bot-a", "bot-b", "bot-c"]
            players = [RandomPlayer(seed * 4 + i, name=name) for i, name in enumerate(names)]
            record = sa.play_match_sync(TEAM_GAME, players, seed)
            store.add_game(run_id, f"g{seed}", record)
            returns.append(record.returns)
    return returns


def _expected(returns: list[tuple[float, ...]]) -> tuple[float, tuple[int, int, int]]:
    """By hand: the model's team (seats 0 and 2) mean return and W/D/L against seats 1 + 3."""
    ours = [(r[0] + r[2]) / 2 for r in returns]
    theirs = [(r[1] + r[3]) / 2 for r in returns]
    wins = sum(a > b for a, b in zip(ours, theirs, strict=True))
    draws = sum(a == b for a, b in zip(ours, theirs, strict=True))
    return sum(ours) / len(ours), (wins, draws, len(ours) - wins - draws)


def test_the_report_shows_each_team_against_the_others(team_game: str, tmp_path: Path) -> None:
    db = tmp_path / "teams.sqlite"
    returns = _store(db)
    mean, (wins, draws, losses) = _expected(returns)
    assert seat_teams(team_game, 4) == (0, 1, 0, 1)
    with ResultsStore(db) as store:
        theirs, ours = team_summaries(store.games())  # sorted by line-up
        data = metrics.report(store)
        summaries = metrics.summarize(store)
        matches = outcomes(store)
    assert ours.players == ("model", "bot-b") and ours.opponents == ("bot-a", "bot-c")
    assert ours.games == 4 and ours.mean_return == pytest.approx(mean)
    assert (ours.wins, ours.draws, ours.losses) == (wins, draws, losses)
    assert (theirs.wins, theirs.losses) == (losses, wins)
    assert [tuple(team["players"]) for team in data["teams"]] == [theirs.players, ours.players]
    text = metrics.render_text(data)
    assert (
        f"{team_game}: model + bot-b vs bot-a + bot-c: 4 games, mean return {mean:+.3f}, "
        f"W/D/L {wins}/{draws}/{losses}"
    ) in text
    # The model's own row: its teammate is no rival, so W/D/L is the team's.
    (row,) = [s for s in summaries if s.player == "model" and s.seat is None]
    assert (row.wins, row.draws, row.losses) == (wins, draws, losses)
    # Rated as two teams: the model and bot-b share the result of every match.
    assert all(m.seat_teams == (0, 1, 0, 1) for m in matches) and len(matches) == 4


def test_publish_lists_the_teams_and_validates(team_game: str, tmp_path: Path) -> None:
    db = tmp_path / "teams.sqlite"
    returns = _store(db)
    mean, (wins, draws, losses) = _expected(returns)
    publish(db, tmp_path / "site")
    data = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    (ours,) = [team for team in data["teams"] if team["players"] == ["model", "bot-b"]]
    assert ours == {
        "env_id": team_game,
        "players": ["model", "bot-b"],
        "opponents": ["bot-a", "bot-c"],
        "games": 4,
        "mean_return": pytest.approx(mean, abs=1e-4),
        "wins": wins,
        "draws": draws,
        "losses": losses,
    }
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(data, schema(), cls=jsonschema.Draft202012Validator)
    markdown = (tmp_path / "site" / "LEADERBOARD.md").read_text()
    assert f"| {team_game} | model + bot-b | bot-a + bot-c | 4 |" in markdown
    assert 'id="tab-teams"' in (tmp_path / "site" / "index.html").read_text()
    # Four seats: each player's mean return per seat (each sat in one seat: its 4 games).
    (env,) = data["envs"]
    seats = {(row["player"], row["seat"]): row for row in env["seats"]}
    assert set(seats) == {("model", 0), ("bot-a", 1), ("bot-b", 2), ("bot-c", 3)}
    for (_, seat), row in seats.items():
        assert row["games"] == 4
        expected = sum(r[seat] for r in returns) / 4
        assert row["mean_return"]["mean"] == pytest.approx(expected, abs=1e-4)
    assert "Per seat (every opponent together):" in markdown


def _eval_served_against_random(db: Path, env_id: str, num_games: int) -> None:
    """``eval`` of a served random player (``served``) against random, over HTTP, seed 1."""
    with PlayerServer("random", model="served") as server:
        args = ["eval", "--db", str(db), "--quiet", "--no-report", "--base-url", server.base_url]
        args += ["--envs", env_id, "--opponents", "random", "--num-games", str(num_games)]
        assert main([*args, "--seed", "1"]) == 0


def test_eval_of_a_three_player_game_is_rated_and_published_per_seat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A served model against two seats of random, over HTTP: each game is one rated match."""
    db = tmp_path / "three.sqlite"
    env_id = "openspiel/kuhn_poker(players=3)"
    _eval_served_against_random(db, env_id, 6)
    with ResultsStore(db) as store:
        games = store.games()
    publish(db, tmp_path / "site")
    (env,) = json.loads((tmp_path / "site" / "leaderboard.json").read_text())["envs"]
    # Every seat rotation, two games each; the model against random is one TrueSkill match.
    assert len(games) == 6 and env["rated_matches"] == 6
    assert {row["player"] for row in env["rows"] if row["trueskill"]} == {"served", "random"}
    served = {row["seat"]: row for row in env["seats"] if row["player"] == "served"}
    for seat, row in served.items():
        mine = [g.returns[seat] for g in games if g.players[seat] == "served"]
        assert row["games"] == len(mine) == 2
        assert row["mean_return"]["mean"] == pytest.approx(sum(mine) / 2, abs=1e-4)
    assert sorted(served) == [0, 1, 2]
    # report --ratings: the same TrueSkill numbers as the leaderboard's, in JSON and in text.
    with ResultsStore(db) as store:
        table = rating_tables(store)[env_id]
    assert main(["report", "--db", str(db), "--ratings", "--json"]) == 0
    pool = json.loads(capsys.readouterr().out)["ratings"][env_id]
    assert pool["matches"] == 6
    assert {r["player"]: r["mu"] for r in pool["ratings"]} == {
        r.player: r.mu for r in table.ratings
    }
    assert main(["report", "--db", str(db), "--ratings"]) == 0
    text = capsys.readouterr().out
    assert f"== TrueSkill: {env_id} (6 rated matches; ranked by mu - 3 sigma)" in text
    assert f"mu {table['served'].mu:6.2f} ± {table['served'].sigma:5.2f}" in text


def test_a_textarena_three_player_game_is_rated_and_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TextArena's games (no OpenSpiel game type) rate and publish like OpenSpiel's."""
    pytest.importorskip("textarena", reason="the [textarena] extra is not installed")
    db = tmp_path / "ipd.sqlite"
    env_id = "mindgames_three_player_ipd-v0"
    _eval_served_against_random(db, env_id, 3)
    assert main(["report", "--db", str(db), "--ratings", "--json"]) == 0
    pool = json.loads(capsys.readouterr().out)["ratings"][env_id]
    assert pool["matches"] == 3  # served against random's two seats, one match per game
    assert {rating["player"] for rating in pool["ratings"]} == {"served", "random"}
    publish(db, tmp_path / "site")
    (env,) = json.loads((tmp_path / "site" / "leaderboard.json").read_text())["envs"]
    assert env["rated_matches"] == 3
    assert sorted(row["seat"] for row in env["seats"] if row["player"] == "served") == [0, 1, 2]
