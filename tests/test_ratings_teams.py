"""TrueSkill for N seats and teams: free-for-all and team matches against the package itself.

The expected numbers are computed here with the ``trueskill`` package directly (one match, one
pass, a fixed draw probability), and :func:`strategic_arena.ratings.rate` must reproduce them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import strategic_arena as sa
from strategic_arena.arena.store import ResultsStore
from strategic_arena.players import RandomPlayer
from strategic_arena.ratings import Outcome, TrueSkillSettings, outcomes, rate

trueskill = pytest.importorskip("trueskill")

SETTINGS = TrueSkillSettings(draw_probability=0.1, passes=1)
GAME = "openspiel/kuhn_poker(players=3)"


def _env() -> trueskill.TrueSkill:
    """The TrueSkill environment ``rate`` uses with :data:`SETTINGS`."""
    return trueskill.TrueSkill(
        mu=25.0, sigma=25.0 / 3, beta=25.0 / 6, tau=25.0 / 300, draw_probability=0.1
    )


def _assert_rated(table: object, expected: dict[str, trueskill.Rating]) -> None:
    for name, rating in expected.items():
        got = table[name]  # type: ignore[index]
        assert got.mu == pytest.approx(rating.mu, abs=1e-9), name
        assert got.sigma == pytest.approx(rating.sigma, abs=1e-9), name


def test_a_three_player_free_for_all_is_one_ranked_match() -> None:
    match = Outcome(GAME, "r", ("g",), ("a", "b", "c"), (2.0, -1.0, -1.0))
    table = rate([match], SETTINGS)
    env = _env()
    new = env.rate([(env.create_rating(),)] * 3, ranks=[-2.0, 1.0, 1.0])  # b and c tie
    _assert_rated(table, {"a": new[0][0], "b": new[1][0], "c": new[2][0]})
    assert (table["a"].wins, table["b"].losses, table["c"].losses) == (1, 1, 1)
    assert table["a"].mu > max(table["b"].mu, table["c"].mu)


def test_a_two_against_two_team_game_rates_the_teams() -> None:
    # Seats 0 and 2 are one team, 1 and 3 the other (Codenames' layout); the first team wins.
    match = Outcome(GAME, "r", ("g",), ("a", "b", "c", "d"), (1.0, -1.0, 1.0, -1.0), (0, 1, 0, 1))
    table = rate([match], SETTINGS)
    env = _env()
    fresh = env.create_rating()
    (a, c), (b, d) = env.rate([(fresh, fresh), (fresh, fresh)], ranks=[-1.0, 1.0])
    _assert_rated(table, {"a": a, "b": b, "c": c, "d": d})
    assert [table[name].wins for name in "ac"] == [1, 1]
    assert [table[name].losses for name in "bd"] == [1, 1]
    # A team match is not a free-for-all: the same returns rated seat by seat differ.
    ffa = rate([Outcome(GAME, "r", ("g",), ("a", "b", "c", "d"), match.returns)], SETTINGS)
    assert ffa["a"].mu != pytest.approx(table["a"].mu)


def test_one_model_in_both_seats_of_a_team_plays_once_for_it() -> None:
    # The model holds both seats of team 0 against two bots; then it loses a game to them.
    won = Outcome(GAME, "r", ("g1",), ("m", "x", "m", "y"), (1.0, -1.0, 1.0, -1.0), (0, 1, 0, 1))
    lost = Outcome(GAME, "r", ("g2",), ("m", "x", "m", "y"), (-1.0, 1.0, -1.0, 1.0), (0, 1, 0, 1))
    env = _env()
    fresh = env.create_rating()
    ((m,), (x, y)) = env.rate([(fresh,), (fresh, fresh)], ranks=[-1.0, 1.0])
    table = rate([won], SETTINGS)
    _assert_rated(table, {"m": m, "x": x, "y": y})
    assert table["m"].matches == 1 and table["m"].wins == 1
    both = rate([won, lost], SETTINGS)
    assert both["m"].wins == both["m"].losses == 1 and both["x"].matches == 2


def test_one_opponent_in_two_free_for_all_seats_is_one_side() -> None:
    # A model against two seats of random at three-player poker: the model against random,
    # whose return is the mean of its two seats' (-0.5 here: it lost overall).
    match = Outcome(GAME, "r", ("g",), ("model", "random", "random"), (1.0, 0.0, -1.0))
    assert match.sides() == [(("model",), 1.0), (("random",), -0.5)]
    table = rate([match], SETTINGS)
    env = _env()
    fresh = env.create_rating()
    (model,), (rival,) = env.rate([(fresh,), (fresh,)], ranks=[-1.0, 0.5])
    _assert_rated(table, {"model": model, "random": rival})
    assert table["random"].matches == 1 and table["random"].losses == 1


def test_self_play_across_teams_and_single_teams_are_not_rateable() -> None:
    across = Outcome(GAME, "r", ("g",), ("a", "b", "a", "b"), (1.0, -1.0, 1.0, -1.0), (0, 1, 1, 0))
    alone = Outcome(GAME, "r", ("g",), ("a", "b"), (3.0, 3.0), (0, 0))
    assert not across.rateable() and not alone.rateable()
    assert Outcome(GAME, "r", ("g",), ("a", "b", "c"), (1.0, 0.0, -1.0)).rateable()


def test_stored_three_player_games_are_rated_free_for_all(tmp_path: Path) -> None:
    """Real three-player Kuhn poker games played through the match loop, stored and rated."""
    with ResultsStore(tmp_path / "ffa.db") as store:
        run_id = store.run("ffa", seed=0, settings={})
        for seed in range(3):
            players = [RandomPlayer(seed * 3 + i, name=name) for i, name in enumerate("abc")]
            record = sa.play_match_sync(GAME, players, seed)
            store.add_game(run_id, f"g{seed}", record)
        games = store.games()
        matches = outcomes(store)
    # Three seats, so no duplicate pairing: one match per game, every seat its own team.
    assert [m.game_keys for m in matches] == [("g0",), ("g1",), ("g2",)]
    assert [m.returns for m in matches] == [g.returns for g in games]
    assert all(m.seat_teams == (0, 1, 2) for m in matches)
    table = rate(matches, SETTINGS)
    # By hand: the one pass feeds the matches in the seeded permutation's order.
    env = _env()
    current = {name: env.create_rating() for name in "abc"}
    for index in np.random.default_rng(SETTINGS.seed).permutation(len(matches)):
        m = matches[int(index)]
        rated = env.rate([(current[name],) for name in m.players], ranks=[-r for r in m.returns])
        for name, (rating,) in zip(m.players, rated, strict=True):
            current[name] = rating
    _assert_rated(table, current)
    assert all(table[name].matches == 3 for name in "abc")
