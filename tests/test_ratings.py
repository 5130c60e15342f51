"""TrueSkill ratings over stored games: tiers on real games, order independence, draws, poker
duplicate matches, and the cooperative (Hanabi) standings."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trueskill")
pytest.importorskip("numba")  # the MCTS opponents of the small ladder

from strategic_arena.arena import play_match_sync
from strategic_arena.arena.metrics import summarize
from strategic_arena.arena.runner import Entrant, GameTask, round_robin, run
from strategic_arena.arena.store import ResultsStore
from strategic_arena.players import RandomPlayer
from strategic_arena.ratings import (
    OVERALL,
    Outcome,
    TrueSkillSettings,
    cooperative_standings,
    outcomes,
    rate,
    rating_tables,
)

TIERS = ("random", "mcts:simulations=10", "mcts:simulations=1000")
TTT = "tic_tac_toe-v0"


def ladder_tasks(seed: int = 0) -> list[GameTask]:
    """A small Tic-Tac-Toe ladder: 60 games per pair, both seats."""
    return round_robin([Entrant.opponent(spec) for spec in TIERS], [TTT], 60, seed)


@pytest.fixture(scope="module")
def ladder_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ratings") / "ladder.db"
    with ResultsStore(path) as store:
        summary = run(store, "ladder", ladder_tasks(), seed=0, concurrency=1, progress=False)
        assert summary.complete
    return path


def test_a_stronger_solver_outranks_a_weaker_one(ladder_db: Path) -> None:
    with ResultsStore(ladder_db) as store:
        table = rating_tables(store)[TTT]
    assert [rating.player for rating in table.ratings] == list(reversed(TIERS))
    strong, weak, worst = (table[name] for name in reversed(TIERS))
    assert strong.conservative > weak.conservative > worst.conservative
    # The gaps are real, not an artefact of ranking by a noisy point: the mu's are separated by
    # several sigmas, and the game order moves them far less than that.
    assert strong.mu - weak.mu > 2 * (strong.sigma + weak.sigma)
    assert weak.mu - worst.mu > 2 * (weak.sigma + worst.sigma)
    assert (
        max(r.mu_spread for r in table.ratings) < min(strong.mu - weak.mu, weak.mu - worst.mu) / 3
    )
    assert table.matches == 3 * 60  # three pairs, 60 games each, none paired (no chance)
    assert strong.wins + strong.draws + strong.losses == strong.matches == 120


def test_ratings_rebuild_identically_and_ignore_the_storage_order(
    ladder_db: Path, tmp_path: Path
) -> None:
    with ResultsStore(ladder_db) as store:
        first = rating_tables(store)
        assert rating_tables(store) == first  # same store, same numbers, bit for bit
        stored_keys = [game.game_key for game in store.games()]
    # The same games stored in another order (the runner shuffles the list it is given, so a
    # reversed list starts its games in another order) and under other row ids.
    with ResultsStore(tmp_path / "reordered.db") as other:
        other.run("unrelated", seed=1, settings={})  # shifts every id
        tasks = list(reversed(ladder_tasks()))
        assert run(other, "ladder", tasks, seed=0, concurrency=1, progress=False).complete
        keys = [game.game_key for game in other.games()]
        assert sorted(keys) == sorted(stored_keys) and keys != stored_keys
        assert rating_tables(other) == first


def test_one_online_pass_depends_on_the_order_which_is_why_passes_are_averaged(
    ladder_db: Path,
) -> None:
    with ResultsStore(ladder_db) as store:
        matches = outcomes(store)
    one_pass = [TrueSkillSettings(passes=1, seed=seed) for seed in range(3)]
    mus = {rate(matches, settings)["random"].mu for settings in one_pass}
    assert len(mus) == 3  # each order gives another rating...
    averaged = rate(matches, TrueSkillSettings(passes=8, seed=0))
    assert rate(list(reversed(matches)), TrueSkillSettings(passes=8, seed=0)) == averaged


def match(key: str, players: tuple[str, str], returns: tuple[float, float]) -> Outcome:
    return Outcome(TTT, "r", (key,), players, returns)


def test_draws_are_handled() -> None:
    drawn = [match(f"g{i}", ("a", "b") if i % 2 else ("b", "a"), (0.0, 0.0)) for i in range(20)]
    table = rate(drawn)
    assert table.draw_probability == 0.9  # all drawn: the estimate is clamped
    assert table["a"].mu == pytest.approx(table["b"].mu)
    assert table["a"].draws == 20 and table["a"].wins == table["a"].losses == 0
    # A player that draws against a strong one and beats a weak one ends in between.
    mixed = [
        *(match(f"s{i}", ("strong", "weak"), (1.0, -1.0)) for i in range(20)),
        *(match(f"d{i}", ("middle", "strong"), (0.0, 0.0)) for i in range(10)),
        *(match(f"m{i}", ("middle", "weak"), (1.0, -1.0)) for i in range(10)),
    ]
    table = rate(mixed, TrueSkillSettings(draw_probability=0.3))
    assert table.draw_probability == 0.3
    assert table["strong"].mu > table["middle"].mu > table["weak"].mu
    assert [r.player for r in table.ratings] == ["strong", "middle", "weak"]


def test_poker_deals_played_in_both_seats_are_one_duplicate_match(tmp_path: Path) -> None:
    env_id = "kuhn_poker-v0"
    with ResultsStore(tmp_path / "kuhn.db") as store:
        run_id = store.run("duplicate", seed=0, settings={})
        for deal in range(4):
            for seats in (("a", "b"), ("b", "a")):
                players = [RandomPlayer(deal * 10 + i, name=name) for i, name in enumerate(seats)]
                record = play_match_sync(env_id, players, seed=100 + deal)
                store.add_game(run_id, f"{deal}/{'-'.join(seats)}", record)
        # An unpaired hand counts alone; self-play says nothing about relative skill.
        lone = play_match_sync(env_id, [RandomPlayer(7, name="a"), RandomPlayer(8, name="b")], 999)
        store.add_game(run_id, "lone", lone)
        mirror = play_match_sync(env_id, [RandomPlayer(1, name="a"), RandomPlayer(2, name="a")], 5)
        store.add_game(run_id, "self", mirror)
        games = {game.game_key: game for game in store.games()}
        matches = outcomes(store)
    assert len(matches) == 5
    for deal in range(4):
        (paired,) = [m for m in matches if m.game_keys == (f"{deal}/a-b", f"{deal}/b-a")]
        assert paired.players == ("a", "b")
        first, second = games[f"{deal}/a-b"].returns, games[f"{deal}/b-a"].returns
        assert paired.returns == (first[0] + second[1], first[1] + second[0])
    assert [m.game_keys for m in matches if len(m.game_keys) == 1] == [("lone",)]


def test_hanabi_is_ranked_by_score_not_trueskill(tmp_path: Path) -> None:
    env_id = "mini_hanabi-v0"
    entrants = [Entrant.opponent("random"), Entrant.opponent("hanabi_bot")]
    with ResultsStore(tmp_path / "hanabi.db") as store:
        tasks = round_robin(entrants, [env_id], 20, seed=3)
        assert run(store, "hanabi", tasks, seed=3, concurrency=1, progress=False).complete
        assert env_id not in rating_tables(store) and OVERALL not in rating_tables(store)
        summaries = summarize(store)
    standings = cooperative_standings(summaries, env_id, partner_bots={"hanabi_bot"})
    assert [s.player for s in standings] == ["hanabi_bot", "random"]
    bot, rand = standings
    assert bot.self_play is not None and rand.self_play is not None
    assert bot.self_play.mean > rand.self_play.mean
    assert bot.self_play.ci95 is not None and bot.self_play.games == 20
    assert bot.with_partner_bot == bot.self_play  # the bot's partner bot is itself
    assert rand.with_partner_bot is not None and rand.with_partner_bot.games == 20
    assert rand.with_partner_bot == rand.partners["hanabi_bot"]
    assert 0 <= rand.self_play.normalized <= 100
