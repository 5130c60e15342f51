"""The estimator registry, its options (centering, GAE lambda/gamma), RLOO and the tagged config.

Every expected number is worked out in the comments; eps=0 keeps them exact fractions.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.algo.estimators import EstimatorConfig, assign, build, names
from strategic_arena.train.algo.estimators.grpo import GRPOConfig, grpo
from strategic_arena.train.algo.estimators.in2ai import In2AIConfig
from strategic_arena.train.algo.estimators.marshal import MarshalConfig, gae, marshal
from strategic_arena.train.algo.estimators.mt_grpo import MTGRPOConfig, mt_grpo
from strategic_arena.train.algo.estimators.rae import RAE, RAEConfig
from strategic_arena.train.algo.estimators.rloo import RLOOConfig, rloo
from strategic_arena.train.config import from_dict, load_config

TTT = "tic_tac_toe-v0"
REWARDS = [[1.0, 0.0, 2.0], [-1.0, 1.0]]  # two trajectories of one group "g"


def approx(values: list[float]) -> object:
    return pytest.approx(values, rel=1e-9, abs=1e-12)


def scored(seat_rewards: dict[int, list[float]], env_id: str = TTT) -> Episode:
    turns = []
    for seat, rewards in seat_rewards.items():
        for reward in rewards:
            turn = Turn(env_id, seat, f"player {seat}", [1], [2], [-0.1], "x", None)
            turn.reward = reward
            turns.append(turn)
    return Episode(env_id, 0, tuple(seat_rewards), "self", (0.0, 0.0), "complete", None, turns)


def two_episodes() -> list[Episode]:
    # X rewards [1, 2] and [0, 1]; O rewards [0, 1] and [-1, 0].
    return [scored({0: [1.0, 2.0], 1: [0.0, 1.0]}), scored({0: [0.0, 1.0], 1: [-1.0, 0.0]})]


def by_seat(episodes: list[Episode], seat: int) -> list[list[float]]:
    return [[t.advantage for t in e.trajectory(seat)] for e in episodes]


# --- the registry ------------------------------------------------------------------------------


def test_registry_lists_every_estimator_and_builds_each_from_its_config() -> None:
    assert names() == ("grpo", "in2ai", "marshal", "mt_grpo", "ppo", "rae", "rloo")
    for name in names():
        config = EstimatorConfig.variant(name)()
        assert config.name == name
        assert build(config).config is config


# --- centering: mean only ----------------------------------------------------------------------


def test_marshal_mean_only_centering_by_hand() -> None:
    # returns-to-go [3, 2, 2] and [0, 1]: S = {3, 2, 2, 0, 1}, mean 8/5 = 1.6, no division.
    got = marshal(REWARDS, ["g", "g"], eps=0.0, centering="mean")
    assert got[0].tolist() == approx([1.4, 0.4, 0.4])
    assert got[1].tolist() == approx([-1.6, -0.6])


def test_grpo_and_mt_grpo_mean_only_by_hand() -> None:
    # GRPO: a = [3, 1, 2], mean 2 -> [1, -1, 0]; b alone -> 0.
    got = grpo([3.0, 1.0, 2.0, 5.0], ["a", "a", "a", "b"], centering="mean")
    assert got.tolist() == [1.0, -1.0, 0.0, 0.0]
    # MT-GRPO: t=0 [1, -1] -> [1, -1]; t=1 [0, 1] -> [-0.5, 0.5]; t=2 alone -> 0.
    # Summed to go: [1 - 0.5 + 0, -0.5, 0] = [0.5, -0.5, 0]; [-1 + 0.5, 0.5] = [-0.5, 0.5].
    got_mt = mt_grpo(REWARDS, ["g", "g"], centering="mean")
    assert got_mt[0].tolist() == approx([0.5, -0.5, 0.0])
    assert got_mt[1].tolist() == approx([-0.5, 0.5])


# --- MARSHAL with lambda and gamma -------------------------------------------------------------


def test_marshal_gae_lambda_and_gamma_by_hand() -> None:
    # gamma = 0.5: G_A = [1 + 0.5 * 1, 0 + 0.5 * 2, 2] = [1.5, 1, 2]; G_B = [-1 + 0.5, 1] =
    # [-0.5, 1]. S = {1.5, 1, 2, -0.5, 1}: b = 5 / 5 = 1.
    # deltas A: [1 + 0.5 - 1, 0 + 0.5 - 1, 2 - 1] = [0.5, -0.5, 1]; B: [-1 + 0.5 - 1, 1 - 1]
    # = [-1.5, 0]. lambda = 0.5, gamma * lambda = 0.25:
    # A: A_2 = 1, A_1 = -0.5 + 0.25 = -0.25, A_0 = 0.5 - 0.0625 = 0.4375; B: [-1.5, 0].
    got = marshal(REWARDS, ["g", "g"], eps=0.0, centering="mean", gamma=0.5, lam=0.5)
    assert got[0].tolist() == approx([0.4375, -0.25, 1.0])
    assert got[1].tolist() == approx([-1.5, 0.0])
    # With the std: deviations of S [0.5, 0, 1, -1.5, 0], var 3.5 / 5 = 0.7.
    scaled = marshal(REWARDS, ["g", "g"], eps=0.0, gamma=0.5, lam=0.5)
    assert scaled[0].tolist() == approx(
        [0.4375 / math.sqrt(0.7), -0.25 / math.sqrt(0.7), 1.0 / math.sqrt(0.7)]
    )


def test_marshal_table_lambda_095_by_hand() -> None:
    # gamma = 1: G_A = [3, 2, 2], G_B = [0, 1], b = 1.6.
    # deltas A: [1 + 1.6 - 1.6, 0, 2 - 1.6] = [1, 0, 0.4]; B: [-1, 1 - 1.6] = [-1, -0.6].
    # lambda 0.95: A_2 = 0.4, A_1 = 0.95 * 0.4 = 0.38, A_0 = 1 + 0.95 * 0.38 = 1.361;
    # B_1 = -0.6, B_0 = -1 - 0.57 = -1.57.
    got = marshal(REWARDS, ["g", "g"], eps=0.0, centering="mean", lam=0.95)
    assert got[0].tolist() == approx([1.361, 0.38, 0.4])
    assert got[1].tolist() == approx([-1.57, -0.6])


def test_lambda_one_is_returns_to_go_minus_the_baseline() -> None:
    # GAE with lambda = 1 telescopes to G_t - b whatever gamma is (the paper's identity).
    rewards, baseline, gamma = [1.0, 0.0, 2.0], 0.7, 0.5
    to_go = [1.0 + 0.5 * (0.0 + 0.5 * 2.0), 0.0 + 0.5 * 2.0, 2.0]
    assert gae(rewards, baseline, gamma, 1.0).tolist() == approx([g - baseline for g in to_go])
    # and lambda = gamma = 1 is MARSHAL's default estimator.
    assert [a.tolist() for a in marshal(REWARDS, ["g", "g"], lam=1.0)] == [
        a.tolist() for a in marshal(REWARDS, ["g", "g"])
    ]


# --- RLOO ----------------------------------------------------------------------------------------


def test_rloo_leaves_one_out_by_hand() -> None:
    # a = [3, 1, 2]: 3 - (1 + 2) / 2 = 1.5; 1 - (3 + 2) / 2 = -1.5; 2 - (3 + 1) / 2 = 0.
    # b has one member: nothing to leave out -> 0.
    assert rloo([3.0, 1.0, 2.0, 5.0], ["a", "a", "a", "b"]).tolist() == [1.5, -1.5, 0.0, 0.0]
    assert rloo([0.1, 0.1], ["a", "a"]).tolist() == [0.0, 0.0]


def test_rloo_turn_level_per_environment_and_role() -> None:
    batch = two_episodes()
    assign(batch, RLOOConfig())
    # X returns-to-go [3, 2] and [1, 1]: sum 7, n 4, A = x - (7 - x) / 3:
    #   3 - 4/3 = 5/3, 2 - 5/3 = 1/3, 1 - 2 = -1, -1.
    assert by_seat(batch, 0) == [approx([5 / 3, 1 / 3]), approx([-1.0, -1.0])]
    # O returns-to-go [1, 1] and [-1, 0]: sum 1: 1 - 0 = 1, 1, -1 - 2/3 = -5/3, 0 - 1/3.
    assert by_seat(batch, 1) == [approx([1.0, 1.0]), approx([-5 / 3, -1 / 3])]


def test_rloo_trajectory_level_and_without_roles() -> None:
    batch = two_episodes()
    assign(batch, RLOOConfig(level="trajectory", role_grouping=False))
    # One group per game: R = [3 (X1), 1 (O1), 1 (X2), -1 (O2)], sum 4: A = R - (4 - R) / 3:
    #   3 - 1/3 = 8/3, 1 - 1 = 0, 0, -1 - 5/3 = -8/3; every turn its trajectory's value.
    assert by_seat(batch, 0) == [approx([8 / 3, 8 / 3]), approx([0.0, 0.0])]
    assert by_seat(batch, 1) == [approx([0.0, 0.0]), approx([-8 / 3, -8 / 3])]


# --- In2AI's RLOO: step rewards against the other steps of the game ----------------------------

BLOTTO, CODENAMES, IPD = (
    "mindgames_colonel_blotto-v0",
    "mindgames_codenames-v0",
    "mindgames_three_player_ipd-v0",
)


def blotto_pair() -> list[Episode]:
    # Two Colonel Blotto episodes, one learner seat (the same role) each.
    return [scored({0: [0.25, -1.0, 0.25]}, BLOTTO), scored({0: [1.0, 1.0, -1.0]}, BLOTTO)]


def test_in2ai_baselines_each_step_reward_with_the_other_steps_of_its_game() -> None:
    batch = blotto_pair()
    assign(batch, In2AIConfig())
    # The six step rewards sum to 0.5; A = r - (0.5 - r) / 5:
    #   0.25 - 0.05 = 0.2; -1 - 0.3 = -1.3; 1 - (-0.1) = 1.1.
    assert by_seat(batch, 0) == [approx([0.2, -1.3, 0.2]), approx([1.1, 1.1, -1.3])]


def test_rloo_on_the_same_episodes_gives_the_return_to_go_signal_instead() -> None:
    batch = blotto_pair()
    assign(batch, RLOOConfig())
    # Returns-to-go [-0.5, -0.75, 0.25] and [1, 0, -1] sum to -1; A = x - (-1 - x) / 5:
    #   -0.5 + 0.1 = -0.4; -0.75 + 0.05 = -0.7; 0.25 + 0.25 = 0.5; 1 + 0.4 = 1.4; 0.2; -1.
    assert by_seat(batch, 0) == [approx([-0.4, -0.7, 0.5]), approx([1.4, 0.2, -1.0])]


def test_in2ai_pools_each_environment_apart_whatever_the_role() -> None:
    # Games interleaved in the batch; Codenames' two episodes are of different roles.
    batch = [
        scored({0: [1.0, 0.0]}, CODENAMES),
        scored({0: [3.0]}, IPD),
        scored({1: [0.5, 0.5]}, BLOTTO),
        scored({1: [-1.0, 2.0]}, CODENAMES),
        scored({1: [1.0]}, IPD),
        scored({0: [2.0]}, IPD),
    ]
    assign(batch, In2AIConfig())
    got = [[t.advantage for t in e.turns] for e in batch]
    # Codenames {1, 0, -1, 2}: sum 2, A = r - (2 - r) / 3: 2/3, -2/3, -2, 2.
    # IPD {3, 1, 2}: sum 6, A = r - (6 - r) / 2: 1.5, -1.5, 0.
    # Blotto {0.5, 0.5}: equal rewards -> 0.
    expected = [[2 / 3, -2 / 3], [1.5], [0.0, 0.0], [-2.0, 2.0], [-1.5], [0.0]]
    assert got == [approx(row) for row in expected]
    # Split by role instead, Codenames' groups are {1, 0} and {-1, 2}: 1 - 0 = 1, -1; -3, 3.
    assign(batch, In2AIConfig(role_grouping=True))
    assert [t.advantage for t in batch[0].turns] == approx([1.0, -1.0])
    assert [t.advantage for t in batch[3].turns] == approx([-3.0, 3.0])


# --- state and checkpoints -----------------------------------------------------------------------


def test_rae_owns_and_restores_its_state() -> None:
    first = RAE(RAEConfig(alpha=0.5))
    first.assign(two_episodes())
    state = json.loads(json.dumps(first.state_dict()))  # what a checkpoint stores
    second = build(RAEConfig(alpha=0.5))
    second.load_state_dict(state)
    assert second.state_dict() == first.state_dict()
    # A pre-registry checkpoint stored the bare baselines under "rae_baselines".
    legacy = build(RAEConfig(alpha=0.5))
    legacy.load_state_dict(state["rae_baselines"])
    assert legacy.state_dict() == first.state_dict()
    # Stateless estimators have nothing to save; RAE resumed from their empty state starts fresh.
    assert build(MTGRPOConfig()).state_dict() == {}
    fresh = RAE(RAEConfig())
    fresh.load_state_dict({})
    assert fresh.baselines.keys() == []


# --- the config: a union tagged by type ----------------------------------------------------------


def test_yaml_section_dotted_overrides_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("advantage: {type: marshal, centering: mean, lam: 0.95}\n")
    cfg = load_config(path, ["advantage.gamma=0.99"])
    assert cfg.advantage == MarshalConfig(centering="mean", lam=0.95, gamma=0.99)
    # Switching type keeps the shared settings and drops the others.
    switched = load_config(path, ["advantage.role_grouping=false", "advantage.type=rloo"])
    assert switched.advantage == RLOOConfig(role_grouping=False)
    # A bare name is the estimator with its defaults; to_dict -> from_dict is the identity.
    assert load_config(None, ["advantage=grpo"]).advantage == GRPOConfig()
    again = from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert dataclasses.asdict(again) == dataclasses.asdict(cfg)


def test_legacy_flat_keys_still_load_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(
        "estimator: rae\nrole_grouping: false\nrae_alpha: 0.9\nwhiten_advantages: true\n"
    )
    with pytest.warns(
        FutureWarning, match="estimator -> advantage.type, role_grouping -> advantage.role_grouping"
    ):
        cfg = load_config(path)
    assert cfg.advantage == RAEConfig(role_grouping=False, alpha=0.9, whiten=True)
    with pytest.warns(FutureWarning, match="estimator -> advantage.type"):
        assert load_config(None, ["estimator=grpo"]).advantage == GRPOConfig()
    path.write_text("estimator: rae\nadvantage: {type: rae}\n")
    with pytest.raises(ValueError, match="keep only advantage"):
        load_config(path)


def test_help_lists_every_estimators_own_settings() -> None:
    from strategic_arena.train.config import describe_fields

    text = describe_fields()
    for name in names():
        assert f"advantage: {{type: {name}}}" in text
    # Own settings under their estimator, the shared ones once.
    assert "advantage.level (Literal['turn', 'trajectory'], default 'turn')" in text
    assert "advantage.alpha (float, default 0.95)\n        EMA decay" in text
    assert text.count("role_grouping (bool, default True)") == 1
