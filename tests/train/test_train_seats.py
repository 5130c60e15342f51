"""The trainer on games of three seats and on a simultaneous-move game (tiny model, CPU)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.games import get_spec
from strategic_arena.games.generic import GenericSpec
from strategic_arena.rl.rewards import length_penalty
from strategic_arena.train.config import load_config
from strategic_arena.train.loop.rollout import learner_team
from strategic_arena.train.loop.trainer import Trainer

Overrides = Callable[..., list[str]]

KUHN_3P = "openspiel/kuhn_poker(players=3)"
GOOFSPIEL_3P = "openspiel/goofspiel(num_cards=3,players=3)"


@pytest.mark.parametrize("env_id", [KUHN_3P, GOOFSPIEL_3P])
def test_a_three_player_game_trains_with_every_seat_a_learner(
    env_id: str, tiny_overrides: Overrides
) -> None:
    cfg = load_config(
        None,
        tiny_overrides(
            f'games.ids=["{env_id}"]', "run.steps=2", "games.episodes_per_game=12", "run.seed=1"
        ),
    )
    trainer = Trainer(cfg)
    episodes = trainer.generate(0)
    assert all(e.num_seats == 3 and e.learner_seats == (0, 1, 2) for e in episodes)
    # In self-play every decision of the game is a learner turn, each its own seat's.
    assert all(e.num_moves == len(e.turns) for e in episodes)
    assert any(len({turn.seat for turn in e.turns}) == 3 for e in episodes)
    spec = get_spec(env_id)
    for episode in episodes:
        if episode.status == "forfeit":
            assert episode.returns == tuple(spec.forfeit_returns(episode.forfeited_by or 0))
        if spec.simultaneous:  # a simultaneous turn is one decision of each seat, in order
            seats = [turn.seat for turn in episode.turns]
            assert seats == [0, 1, 2] * (len(seats) // 3)
    trainer.score(episodes)
    rewards = cfg.rewards
    checked = 0
    for episode in episodes:
        for seat in range(3):
            turns = episode.trajectory(seat)
            offender = seat == episode.forfeited_by
            if not turns or not (episode.status == "complete" or offender):
                continue  # a forfeit's other seats get forfeit_other_reward, not their return
            if episode.returns[seat] == 0:
                continue  # a zero return may become MARSHAL's draw reward
            # Each seat's last turn is paid its own return (the offender's: its forfeit's).
            last = turns[-1]
            invalid = last.error_kind is not None or offender
            expected = rewards.invalid_penalty if invalid else rewards.format_reward
            expected += length_penalty(len(last.response_ids), rewards)
            expected += episode.returns[seat] * rewards.scale(env_id)
            assert last.reward == pytest.approx(expected)
            checked += 1
    assert checked > 0
    for _ in range(cfg.run.steps):
        metrics = trainer.train_step()
        assert metrics["train/episodes"] == 12


def test_against_an_opponent_the_policy_plays_its_whole_team() -> None:
    class TwoVersusTwo(GenericSpec):
        seat_teams = (0, 1, 0, 1)

    assert learner_team(TwoVersusTwo("kuhn_poker", {"players": 4}), 2) == (0, 2)
    assert learner_team(get_spec(KUHN_3P), 1) == (1,)  # every seat its own team
    assert learner_team(get_spec("mini_hanabi-v0"), 1) == (1,)  # the opponent is the partner
