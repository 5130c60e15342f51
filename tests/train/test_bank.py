"""The episode bank: interleaving, reward strata, coverage, capacity, state, config.

Every expected number is worked out in the comments. Episodes are built by hand: a turn is
trainable when it is eligible and has a response, and an episode's reward is the mean over its
learner seats of their eligible turns' rewards.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from strategic_arena.cli import main
from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.algo.bank import (
    BankConfig,
    EpisodeBank,
    allocate,
    episode_from_dict,
    episode_reward,
)
from strategic_arena.train.algo.estimators.in2ai import In2AIConfig
from strategic_arena.train.config import describe_fields, load_config
from strategic_arena.train.loop.rollout import OpponentPool, plan_games

SHORT = "kuhn_poker-v0"
LONG = "connect_four-v0"


def episode(env_id: str, turns: int, reward: float = 0.0, *, seed: int = 0) -> Episode:
    """A one-seat episode of ``turns`` trainable turns, the last one paid ``reward``."""
    made = [Turn(env_id, 0, "player 0", [1], [2], [-0.5], "x", None) for _ in range(turns)]
    made[-1].reward = reward
    return Episode(env_id, seed, (0,), "random", (reward, -reward), "complete", None, made)


def bank_of(config: BankConfig, *episodes: Episode, seed: int = 0) -> EpisodeBank:
    bank = EpisodeBank(config, seed)
    bank.add(episodes)
    return bank


def turns_by_game(batch_episodes: list[Episode], selected: list[tuple[int, ...]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for drawn, chosen in zip(batch_episodes, selected, strict=True):
        counts[drawn.env_id] = counts.get(drawn.env_id, 0) + len(chosen)
    return counts


# --- allocation ----------------------------------------------------------------------------------


def test_allocate_shares_equally_and_gives_back_what_a_group_cannot_take() -> None:
    # 10 over three: 4, 3, 3; the first can take only 2, so its 2 left go one each to the others.
    assert allocate(10, [2, 100, 100]) == [2, 4, 4]
    assert allocate(7, [100, 100]) == [4, 3]  # the odd unit goes to the first group
    assert allocate(5, [1, 1]) == [1, 1]  # the supply is the limit
    assert allocate(6, [0, 9, 9]) == [0, 3, 3]  # an empty group takes nothing


# --- 1. per-game interleaving --------------------------------------------------------------------


def long_and_short_bank(interleave: bool, seed: int = 0) -> EpisodeBank:
    """20 Kuhn-like episodes of 2 turns (40 turns) and 20 of 40 turns (800 turns)."""
    config = BankConfig(batch_unit="turns", batch_size=80, interleave=interleave)
    games = [episode(SHORT, 2, seed=i) for i in range(20)]
    games += [episode(LONG, 40, seed=i) for i in range(20)]
    return bank_of(config, *games, seed=seed)


def test_interleaving_gives_each_game_its_share_of_the_turns() -> None:
    # Training on every turn gives the long game 800 of 840 turns (95 %). Interleaved, 80 turns
    # split 40 / 40: all 20 short episodes, and one long episode whole (40 turns = its share).
    batch = long_and_short_bank(interleave=True).draw(version=0)
    assert turns_by_game(batch.episodes, batch.selected) == {SHORT: 40, LONG: 40}
    assert [e.env_id for e in batch.episodes].count(SHORT) == 20
    assert [e.env_id for e in batch.episodes].count(LONG) == 1
    assert batch.metrics["bank/turn_share/kuhn_poker-v0"] == 0.5
    assert batch.metrics["bank/turn_share/connect_four-v0"] == 0.5
    assert batch.metrics["bank/batch_turns"] == 80
    assert len(batch.turns) == 80


def test_without_interleaving_the_long_game_dominates() -> None:
    # One pool in a random order, taken until 80 turns: the long game gets 80 - 2k turns, k the
    # number of short episodes drawn before the first long one, so it holds more than half the
    # batch unless all 20 short ones come first (1 order in C(40, 20)).
    long_turns = []
    for seed in range(10):
        batch = long_and_short_bank(interleave=False, seed=seed).draw(version=0)
        counts = turns_by_game(batch.episodes, batch.selected)
        assert sum(counts.values()) == 80
        short = counts.get(SHORT, 0)
        assert short % 2 == 0 and counts[LONG] == 80 - short
        assert counts[LONG] > short, seed
        long_turns.append(counts[LONG])
    # E[k] = 20 / 21 (short episodes before the first long one in a random order of 20 + 20),
    # so the long game's expected share is 1 - 2 E[k] / 80 = 0.976; ten draws average above 0.9.
    assert sum(long_turns) / 10 / 80 > 0.9


def test_a_game_short_of_its_share_gives_all_it_has_and_the_others_fill_the_batch() -> None:
    # 3 short episodes (6 turns) against plenty of long ones, batch 80: short 6, long 74.
    config = BankConfig(batch_unit="turns", batch_size=80)
    games = [episode(SHORT, 2, seed=i) for i in range(3)] + [episode(LONG, 40) for _ in range(5)]
    batch = bank_of(config, *games).draw(version=0)
    assert turns_by_game(batch.episodes, batch.selected) == {SHORT: 6, LONG: 74}


def test_the_episode_crossing_a_share_gives_only_the_turns_that_fit() -> None:
    # One game of 40-turn episodes, batch 30 turns: one episode, 30 of its 40 turns.
    config = BankConfig(batch_unit="turns", batch_size=30)
    batch = bank_of(config, episode(LONG, 40), episode(LONG, 40)).draw(version=0)
    assert len(batch.episodes) == 1 and len(batch.selected[0]) == 30
    assert len(set(batch.selected[0])) == 30 and list(batch.selected[0]) == sorted(
        batch.selected[0]
    )


def test_episode_units_count_episodes_per_game() -> None:
    # batch_unit: episodes, 10 per batch: 5 per game, whatever their lengths.
    config = BankConfig(batch_unit="episodes", batch_size=10)
    games = [episode(SHORT, 2) for _ in range(8)] + [episode(LONG, 40) for _ in range(8)]
    batch = bank_of(config, *games).draw(version=0)
    assert [e.env_id for e in batch.episodes].count(SHORT) == 5
    assert [e.env_id for e in batch.episodes].count(LONG) == 5
    assert turns_by_game(batch.episodes, batch.selected) == {SHORT: 10, LONG: 200}


# --- 2. reward-quantile strata -------------------------------------------------------------------


def test_quantile_strata_draw_evenly_across_reward_levels() -> None:
    # Rewards 0..7 ranked and cut into 4 strata: {0,1} {2,3} {4,5} {6,7}. A batch of 4 episodes
    # takes one from each, whatever the seed.
    config = BankConfig(batch_unit="episodes", batch_size=4, strata=4)
    for seed in range(5):
        games = [episode(SHORT, 1, float(r), seed=r) for r in (5, 2, 7, 0, 3, 6, 1, 4)]
        batch = bank_of(config, *games, seed=seed).draw(version=0)
        drawn = sorted(episode_reward(e) for e in batch.episodes)
        assert [int(r) // 2 for r in drawn] == [0, 1, 2, 3], seed


def test_an_uneven_batch_gives_the_odd_units_to_the_lowest_strata() -> None:
    # Batch 6 over strata of 2: shares [2, 2, 1, 1]: rewards 0..3 all, one of {4,5}, one of {6,7}.
    config = BankConfig(batch_unit="episodes", batch_size=6, strata=4)
    games = [episode(SHORT, 1, float(r), seed=r) for r in range(8)]
    drawn = sorted(episode_reward(e) for e in bank_of(config, *games).draw(version=0).episodes)
    assert drawn[:4] == [0.0, 1.0, 2.0, 3.0]
    assert drawn[4] in (4.0, 5.0) and drawn[5] in (6.0, 7.0)


def test_strata_always_reach_the_rare_failures_and_successes() -> None:
    # 2 failures (-10), 16 average games (0), 2 successes (+1); a batch of 10 of the 20. Ten
    # strata of 2: the lowest is {-10, -10}, the highest {+1, +1}, so every batch holds one
    # failure and one success. One pool (strata 1) misses the failures with probability
    # C(18, 10) / C(20, 10) = 0.24: some of ten seeds do.
    rewards = [-10.0] * 2 + [0.0] * 16 + [1.0] * 2
    games = [episode(SHORT, 1, r, seed=i) for i, r in enumerate(rewards)]
    missed = 0
    for seed in range(10):
        stratified = BankConfig(batch_unit="episodes", batch_size=10, strata=10)
        drawn = [episode_reward(e) for e in bank_of(stratified, *games, seed=seed).draw(0).episodes]
        assert drawn.count(-10.0) == 1 and drawn.count(1.0) == 1, seed
        pooled = BankConfig(batch_unit="episodes", batch_size=10)
        drawn = [episode_reward(e) for e in bank_of(pooled, *games, seed=seed).draw(0).episodes]
        missed += -10.0 not in drawn or 1.0 not in drawn
    assert missed > 0


def test_self_play_reward_is_the_mean_over_the_learner_seats() -> None:
    # Seat 0 earns 1 + 0.5, seat 1 earns -1 (eligible) and 3 (gated): (1.5 - 1) / 2 = 0.25.
    turns = [Turn(SHORT, s, f"player {s}", [1], [2], [-0.1], "x", None) for s in (0, 1, 0, 1)]
    for turn, reward in zip(turns, (1.0, -1.0, 0.5, 3.0), strict=True):
        turn.reward = reward
    turns[3].eligible = False
    game = Episode(SHORT, 0, (0, 1), "self", (1.0, -1.0), "complete", None, turns)
    assert episode_reward(game) == 0.25


# --- 3. episode coverage -------------------------------------------------------------------------


def test_coverage_takes_a_share_of_each_drawn_episode() -> None:
    # Coverage 0.25 of 10 trainable turns: ceil(2.5) = 3 turns per episode; a batch of 9 turns
    # then spreads over 3 episodes instead of one.
    config = BankConfig(batch_unit="turns", batch_size=9, coverage=0.25)
    games = [episode(LONG, 10, seed=i) for i in range(5)]
    bank = bank_of(config, *games)
    assert bank.size() == 15  # 5 episodes x 3 covered turns
    batch = bank.draw(version=0)
    assert [len(chosen) for chosen in batch.selected] == [3, 3, 3]
    batch.drop_unselected()
    for drawn, chosen in zip(batch.episodes, batch.selected, strict=True):
        assert [i for i, t in enumerate(drawn.turns) if t.eligible] == list(chosen)


def test_full_coverage_gives_every_eligible_turn_and_skips_gated_ones() -> None:
    game = episode(LONG, 4)
    game.turns[1].eligible = False  # gated: not trainable
    game.turns[2].response_ids, game.turns[2].logprobs = [], []  # nothing generated
    batch = bank_of(BankConfig(batch_size=100), game).draw(version=0)
    assert batch.selected == [(0, 3)]


# --- capacity, eviction, undrawn episodes, the filter ---------------------------------------------


def test_capacity_evicts_the_oldest_first() -> None:
    bank = EpisodeBank(BankConfig(batch_unit="episodes", batch_size=1, capacity=3), seed=0)
    bank.add([episode(SHORT, 1, seed=i) for i in range(2)])
    bank.add([episode(SHORT, 1, seed=i) for i in range(2, 5)])
    assert [entry.episode.seed for entry in bank.entries] == [2, 3, 4]
    nothing = episode(SHORT, 1, seed=9)
    nothing.turns[0].eligible = False
    bank.add([nothing])  # no trainable turn: not banked, nothing evicted
    assert len(bank) == 3
    metrics = bank.draw(version=0).metrics
    assert (metrics["bank/added"], metrics["bank/evicted"], metrics["bank/drawn"]) == (5, 2, 1)
    assert metrics["bank/episodes"] == 2


def test_undrawn_episodes_are_kept_or_dropped() -> None:
    games = [episode(SHORT, 1, seed=i) for i in range(4)]
    kept = bank_of(BankConfig(batch_unit="episodes", batch_size=2), *games)
    assert kept.draw(version=0).metrics["bank/discarded"] == 0 and len(kept) == 2
    dropped = bank_of(BankConfig(batch_unit="episodes", batch_size=2, undrawn="drop"), *games)
    assert dropped.draw(version=0).metrics["bank/discarded"] == 2 and len(dropped) == 0


def test_the_filter_drops_ineligible_episodes_and_counts_them() -> None:
    # A staleness-like rule: an episode added at version v is fit while the weights are <= v + 1.
    bank = EpisodeBank(BankConfig(batch_unit="episodes", batch_size=10), seed=0)
    bank.keep = lambda game, version: version - game.seed <= 1
    bank.add([episode(SHORT, 1, seed=v) for v in (0, 1, 2, 3)], version=1)
    batch = bank.draw(version=3)
    assert sorted(e.seed for e in batch.episodes) == [2, 3]
    assert batch.metrics["bank/dropped"] == 2
    assert (batch.metrics["bank/age_mean"], batch.metrics["bank/age_max"]) == (2.0, 2.0)


def test_ready_wants_every_game_to_hold_its_part_under_interleaving() -> None:
    # needed = ceil(1.5 * 8) = 12 turns; two games: 6 each.
    config = BankConfig(batch_unit="turns", batch_size=8, over_collection=1.5)
    bank = bank_of(config, *[episode(LONG, 40) for _ in range(2)], episode(SHORT, 2))
    assert not bank.ready(0)  # the short game holds 2 of its 6
    bank.add([episode(SHORT, 2), episode(SHORT, 2)])
    assert bank.ready(0)
    pooled = bank_of(
        BankConfig(batch_unit="turns", batch_size=8, interleave=False), episode(LONG, 8)
    )
    assert pooled.ready(0)


# --- checkpoints ---------------------------------------------------------------------------------


def test_state_round_trip_draws_the_same_next_batch() -> None:
    config = BankConfig(batch_unit="turns", batch_size=6, strata=2, coverage=0.5)
    games = [episode(SHORT if i % 2 else LONG, 2 + i, float(i % 3), seed=i) for i in range(12)]
    bank = bank_of(config, *games, seed=7)
    bank.draw(version=0)
    state = json.loads(json.dumps(bank.state_dict()))  # plain data
    restored = EpisodeBank(config, seed=7)
    restored.load_state_dict(state)
    assert restored.state_dict() == bank.state_dict()
    first, second = bank.draw(version=1), restored.draw(version=1)
    assert first.episodes == second.episodes and first.selected == second.selected
    assert first.metrics == second.metrics


def test_an_episode_survives_plain_data() -> None:
    game = episode(SHORT, 3, 1.5, seed=4)
    game.turns[0].weight_version = 2
    game.turns[0].move_index = 0
    game.moves = ((0, "[A5 B10 C5]"), (1, "[A7 B7 C6]"))  # a free-text game's replayable moves
    assert episode_from_dict(json.loads(json.dumps(dataclasses.asdict(game)))) == game


# --- config --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("bank.batch_size=0", "bank.batch_size must be >= 1"),
        ("bank.over_collection=0.5", "bank.over_collection must be >= 1"),
        ("bank.coverage=1.5", r"bank.coverage must lie in \(0, 1\]"),
        ("bank.strata=0", "bank.strata must be >= 1"),
        ("bank.capacity=0", "bank.capacity must be >= 1"),
        ("bank.batch_unit=steps", "bank.batch_unit must be one of 'turns' or 'episodes'"),
        ("bank.undrawn=later", "bank.undrawn must be one of 'keep' or 'drop'"),
    ],
)
def test_bad_bank_values_are_rejected(setting: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(None, [setting])


def test_a_capacity_below_the_fill_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"cannot hold over_collection \* batch_size \(12\)"):
        load_config(
            None,
            [
                "bank={batch_unit: episodes, batch_size: 8, over_collection: 1.5}",
                "bank.capacity=10",
            ],
        )


def test_the_cli_rejects_a_bad_bank_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train", "--set", "bank.coverage=0", "--print-config"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bank.coverage must lie in (0, 1]" in err
    assert "Traceback" not in err


def test_set_turns_the_bank_on_and_null_turns_it_off() -> None:
    assert load_config(None, []).bank is None
    cfg = load_config(None, ["bank.batch_size=64", "bank.strata=3"])
    assert cfg.bank == BankConfig(batch_size=64, strata=3)
    assert load_config(None, ["bank.batch_size=64", "bank=null"]).bank is None


def test_the_mindgames_config_uses_the_bank_with_in2ais_rloo() -> None:
    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "mindgames.yaml")
    assert cfg.advantage == In2AIConfig(role_grouping=False)
    assert cfg.bank is not None
    assert (cfg.bank.batch_unit, cfg.bank.batch_size, cfg.bank.over_collection) == (
        "turns",
        768,
        1.25,
    )
    assert cfg.bank.interleave and cfg.bank.strata == 3 and cfg.bank.undrawn == "keep"
    assert (cfg.ppo.kl_coef, cfg.ppo.epochs, cfg.rewards.gate_unobserved) == (0.0, 1, True)


def test_the_help_lists_the_bank_settings() -> None:
    text = describe_fields()
    assert "  bank: (default null: off; when set, these fields)" in text
    assert "bank.over_collection (float, default 1.0)\n        Before a batch is drawn" in text


def test_a_further_round_plans_other_games_after_the_first() -> None:
    # Round 0 is the step's usual plan; round 1 has its own seeds and indices 4.. (2 games x 2).
    cfg = load_config(
        None, ["games.ids=[kuhn_poker-v0,tic_tac_toe-v0]", "games.episodes_per_game=2"]
    )
    pool = OpponentPool.from_config(cfg.games)
    first, second = (
        plan_games(cfg.games, cfg.run.seed, pool, 3),
        plan_games(cfg.games, cfg.run.seed, pool, 3, round_=1),
    )
    assert plan_games(cfg.games, cfg.run.seed, pool, 3, round_=0) == first
    assert [p.index for p in first] == [0, 1, 2, 3] and [p.index for p in second] == [4, 5, 6, 7]
    assert [p.env_id for p in second] == [p.env_id for p in first]
    assert {p.seed for p in first}.isdisjoint({p.seed for p in second})
