"""Advantage estimators against hand-computed examples (the arithmetic is in the comments).

std is the population standard deviation throughout. Most examples pass eps=0 so the expected
values are exact fractions; the default eps=1e-6 is checked to within 1e-5 relative.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.algo.estimators import (
    EstimatorConfig,
    assign,
    names,
    normalize,
    returns_to_go,
    trajectories,
)
from strategic_arena.train.algo.estimators.grpo import GRPOConfig, grpo
from strategic_arena.train.algo.estimators.marshal import MarshalConfig, marshal
from strategic_arena.train.algo.estimators.mt_grpo import mt_grpo
from strategic_arena.train.algo.estimators.rae import RAE, RAEBaselines, RAEConfig, rae

TTT = "tic_tac_toe-v0"
KUHN = "kuhn_poker-v0"


def approx_list(values: list[float]) -> object:
    return pytest.approx(values, rel=1e-9, abs=1e-12)


def turn(seat: int, reward: float, *, env_id: str = TTT, eligible: bool = True) -> Turn:
    t = Turn(env_id, seat, f"player {seat}", [1], [2, 3], [-0.1, -0.2], "x", None)
    t.reward = reward
    t.eligible = eligible
    t.advantage = 99.0  # assign must overwrite every turn, the ineligible ones included
    return t


def episode(
    env_id: str,
    seat_rewards: dict[int, list[float]],
    *,
    gated: tuple[tuple[int, int], ...] = (),
) -> Episode:
    """A self-play episode whose turns already carry rewards; ``gated`` = (seat, index) pairs."""
    turns = [
        turn(seat, r, env_id=env_id, eligible=(seat, i) not in gated)
        for seat, rs in seat_rewards.items()
        for i, r in enumerate(rs)
    ]
    return Episode(env_id, 0, tuple(seat_rewards), "self", (0.0, 0.0), "complete", None, turns)


def advantages(ep: Episode, seat: int) -> list[float]:
    return [t.advantage for t in ep.trajectory(seat)]


# --- building blocks -------------------------------------------------------------------------


def test_returns_to_go_is_the_undiscounted_suffix_sum() -> None:
    # [1, 0, 2] -> [1 + 0 + 2, 0 + 2, 2] = [3, 2, 2]
    assert returns_to_go([1.0, 0.0, 2.0]).tolist() == [3.0, 2.0, 2.0]
    assert returns_to_go([]).tolist() == []


def test_normalize_is_zero_for_equal_values_and_never_nan() -> None:
    # 0.1 three times: the mean 0.1 + round-off would give ~1e-11 / eps; the rule gives 0 exactly.
    assert normalize([0.1, 0.1, 0.1]).tolist() == [0.0, 0.0, 0.0]
    assert normalize([5.0]).tolist() == [0.0]
    assert normalize([]).tolist() == []


# --- GRPO ----------------------------------------------------------------------------------


def test_grpo_by_hand() -> None:
    returns = [3.0, 2.0, 1.0, 4.0, 6.0, 8.0, 7.0, 0.1, 0.1]
    groups = ["a", "b", "a", "b", "b", "b", "c", "d", "d"]
    got = grpo(returns, groups, eps=0.0)
    # a: [3, 1], mean 2, std 1 -> [+1, -1]
    # b: [2, 4, 6, 8], mean 5, var (9 + 1 + 1 + 9) / 4 = 5 -> [-3, -1, 1, 3] / sqrt(5)
    # c: singleton -> 0; d: equal values -> 0
    r5 = math.sqrt(5.0)
    expected = [1.0, -3 / r5, -1.0, -1 / r5, 1 / r5, 3 / r5, 0.0, 0.0, 0.0]
    assert got.tolist() == approx_list(expected)
    # The default eps only shrinks by std / (std + 1e-6).
    assert grpo(returns, groups).tolist() == pytest.approx(expected, rel=1e-5)


def test_grpo_rejects_mismatched_groups() -> None:
    with pytest.raises(ValueError, match="group keys"):
        grpo([1.0, 2.0], ["a"])


# --- MARSHAL -------------------------------------------------------------------------------


def test_marshal_variable_length_by_hand() -> None:
    rewards = [[1.0, 0.0, 2.0], [-1.0, 1.0], [2.0]]
    groups = ["g", "g", "h"]
    got = marshal(rewards, groups, eps=0.0)
    # returns-to-go: A = [3, 2, 2], B = [0, 1]; S_g = {3, 2, 2, 0, 1}
    # mean = 8 / 5 = 1.6; deviations [1.4, 0.4, 0.4, -1.6, -0.6]
    # var = (1.96 + 0.16 + 0.16 + 2.56 + 0.36) / 5 = 5.2 / 5 = 1.04
    std = math.sqrt(1.04)
    assert got[0].tolist() == approx_list([1.4 / std, 0.4 / std, 0.4 / std])
    assert got[1].tolist() == approx_list([-1.6 / std, -0.6 / std])
    # h: one trajectory with one turn -> 0
    assert got[2].tolist() == [0.0]
    # Centred over S: the five advantages of g sum to 0.
    assert float(np.concatenate(got[:2]).sum()) == pytest.approx(0.0, abs=1e-12)


def test_marshal_single_trajectory_still_ranks_its_turns() -> None:
    # One trajectory, rewards [1, 2]: S = {3, 2}, mean 2.5, std 0.5 -> [+1, -1]; only a group
    # of identical returns-to-go is all zero.
    assert marshal([[1.0, 2.0]], ["g"], eps=0.0)[0].tolist() == approx_list([1.0, -1.0])
    assert marshal([[0.0, 0.0]], ["g"])[0].tolist() == [0.0, 0.0]


# --- MT-GRPO -------------------------------------------------------------------------------


def test_mt_grpo_variable_length_by_hand() -> None:
    rewards = [[1.0, 0.0, 2.0], [-1.0, 1.0]]
    got = mt_grpo(rewards, ["g", "g"], eps=0.0)
    # t = 0: [1, -1], mean 0, std 1 -> [1, -1]
    # t = 1: [0, 1], mean 0.5, std 0.5 -> [-1, 1]
    # t = 2: only A reaches it -> 0
    # normalized A = [1, -1, 0] -> to go [0, -1, 0]; B = [-1, 1] -> to go [0, 1]
    assert got[0].tolist() == approx_list([0.0, -1.0, 0.0])
    assert got[1].tolist() == approx_list([0.0, 1.0])
    # Same data, MARSHAL's sum-then-normalize gives other numbers (see the test above).
    assert marshal(rewards, ["g", "g"], eps=0.0)[0].tolist() != got[0].tolist()


def test_mt_grpo_groups_are_independent() -> None:
    # In separate groups each trajectory is alone at every turn index -> all zeros.
    got = mt_grpo([[1.0, 0.0], [-1.0, 3.0]], ["g", "h"])
    assert [a.tolist() for a in got] == [[0.0, 0.0], [0.0, 0.0]]


# --- RAE -----------------------------------------------------------------------------------


def test_rae_reads_the_baseline_before_updating_it() -> None:
    baselines = RAEBaselines(alpha=0.95)
    k, other = (TTT, "player 0"), (TTT, "player 1")
    got = rae([1.0, -1.0, 4.0, 2.0, 0.0], [k, k, other, k, k], baselines)
    # k:  R=1:  A = 1 - 0 = 1;              b = 0.95 * 0 + 0.05 * 1 = 0.05
    #     R=-1: A = -1 - 0.05 = -1.05;      b = 0.95 * 0.05 + 0.05 * -1 = -0.0025
    # other R=4: A = 4 - 0 = 4;             b_other = 0.05 * 4 = 0.2 (k untouched)
    # k:  R=2:  A = 2 + 0.0025 = 2.0025;    b = 0.95 * -0.0025 + 0.05 * 2 = 0.097625
    #     R=0:  A = 0 - 0.097625;           b = 0.95 * 0.097625 = 0.09274375
    assert got.tolist() == approx_list([1.0, -1.05, 4.0, 2.0025, -0.097625])
    assert baselines.baseline(k) == pytest.approx(0.09274375)
    assert baselines.baseline(other) == pytest.approx(0.2)
    assert baselines.updates(k) == 4
    assert baselines.baseline(("unseen", "player 0")) == 0.0


def test_rae_state_dict_round_trips_through_json() -> None:
    baselines = RAEBaselines(alpha=0.9)
    keys = [(TTT, "player 0"), KUHN, ("g", 1, (None, True)), 3]
    for i, key in enumerate(keys):
        baselines.advantage_and_update(key, float(i + 1))
    restored = RAEBaselines(alpha=0.5)
    restored.load_state_dict(json.loads(json.dumps(baselines.state_dict())))
    assert restored.alpha == 0.9
    assert restored.keys() == keys
    for key in keys:
        assert restored.baseline(key) == baselines.baseline(key)
        assert restored.updates(key) == 1
    # Both continue identically: (TTT, "player 0") has b = 0.1 * 1 = 0.1; R = 2 -> A = 1.9.
    assert restored.advantage_and_update(keys[0], 2.0) == pytest.approx(1.9)
    assert baselines.advantage_and_update(keys[0], 2.0) == pytest.approx(1.9)
    assert restored.state_dict() == baselines.state_dict()


def test_rae_state_dict_refuses_unsaveable_keys() -> None:
    baselines = RAEBaselines()
    baselines.advantage_and_update(frozenset({"a"}), 1.0)
    with pytest.raises(TypeError, match="frozenset"):
        baselines.state_dict()


def test_rae_alpha_is_checked() -> None:
    with pytest.raises(ValueError, match="alpha"):
        RAEBaselines(alpha=1.5)


# --- assign() on episodes ------------------------------------------------------------------


def two_ttt_episodes() -> list[Episode]:
    # Episode 1: X rewards [1, 2] (R = 3), O rewards [0, 1] (R = 1).
    # Episode 2: X rewards [0, 1] (R = 1), O rewards [-1, 0] (R = -1).
    return [
        episode(TTT, {0: [1.0, 2.0], 1: [0.0, 1.0]}),
        episode(TTT, {0: [0.0, 1.0], 1: [-1.0, 0.0]}),
    ]


def test_assign_grpo_role_grouping_on_and_off() -> None:
    by_role = two_ttt_episodes()
    assign(by_role, GRPOConfig(role_grouping=True, eps=0.0))
    # X: [3, 1] -> [+1, -1]; O: [1, -1] -> [+1, -1]; every turn gets its trajectory's value.
    assert advantages(by_role[0], 0) == [1.0, 1.0]
    assert advantages(by_role[0], 1) == [1.0, 1.0]
    assert advantages(by_role[1], 0) == [-1.0, -1.0]
    assert advantages(by_role[1], 1) == [-1.0, -1.0]

    by_game = two_ttt_episodes()
    assign(by_game, GRPOConfig(role_grouping=False, eps=0.0))
    # One group [3, 1, 1, -1]: mean 1, deviations [2, 0, 0, -2], std sqrt(8 / 4) = sqrt(2)
    r2 = math.sqrt(2.0)
    assert advantages(by_game[0], 0) == approx_list([2 / r2] * 2)
    assert advantages(by_game[0], 1) == [0.0, 0.0]
    assert advantages(by_game[1], 0) == [0.0, 0.0]
    assert advantages(by_game[1], 1) == approx_list([-2 / r2] * 2)


def test_assign_marshal_several_games_and_roles() -> None:
    def batch() -> list[Episode]:
        return [
            episode(TTT, {0: [1.0, 2.0], 1: [0.0, -1.0]}),
            episode(TTT, {0: [0.0, 1.0, 0.0], 1: [2.0, 0.0]}),
            episode(KUHN, {0: [1.0], 1: [-1.0]}),
        ]

    by_role = batch()
    assign(by_role, MarshalConfig(eps=0.0))
    # TTT X returns-to-go: [3, 2] and [1, 1, 0]; S = {3, 2, 1, 1, 0}
    #   mean 7/5 = 1.4, deviations [1.6, 0.6, -0.4, -0.4, -1.4], var 5.2 / 5 = 1.04
    s = math.sqrt(1.04)
    assert advantages(by_role[0], 0) == approx_list([1.6 / s, 0.6 / s])
    assert advantages(by_role[1], 0) == approx_list([-0.4 / s, -0.4 / s, -1.4 / s])
    # TTT O returns-to-go: [-1, -1] and [2, 0]; S = {-1, -1, 2, 0}: mean 0, var 6 / 4 = 1.5
    s = math.sqrt(1.5)
    assert advantages(by_role[0], 1) == approx_list([-1 / s, -1 / s])
    assert advantages(by_role[1], 1) == approx_list([2 / s, 0.0])
    # Kuhn: each role is a singleton group -> 0
    assert advantages(by_role[2], 0) == [0.0]
    assert advantages(by_role[2], 1) == [0.0]

    by_game = batch()
    assign(by_game, MarshalConfig(role_grouping=False, eps=0.0))
    # TTT S = {3, 2, -1, -1, 1, 1, 0, 2, 0}: sum 7, mean 7/9; sum of squares 21
    #   var = 21/9 - (7/9)^2 = 140/81, std = sqrt(140) / 9
    mean, s = 7 / 9, math.sqrt(140) / 9
    assert advantages(by_game[0], 0) == approx_list([(3 - mean) / s, (2 - mean) / s])
    assert advantages(by_game[1], 1) == approx_list([(2 - mean) / s, (0 - mean) / s])
    # Kuhn S = {1, -1}: mean 0, std 1 -> [1] and [-1]
    assert advantages(by_game[2], 0) == approx_list([1.0])
    assert advantages(by_game[2], 1) == approx_list([-1.0])


def test_assign_gated_turns_get_zero_and_stay_out_of_the_returns() -> None:
    # Episode 1: O's last turn (reward 5) is gated. Episode 2 is complete.
    batch = [
        episode(TTT, {0: [1.0], 1: [1.0, 5.0]}, gated=((1, 1),)),
        episode(TTT, {0: [3.0], 1: [-1.0, 0.0]}),
    ]
    assign(batch, MarshalConfig(eps=0.0))
    gated = batch[0].trajectory(1)[1]
    assert gated.advantage == 0.0  # was 99.0
    # O: returns-to-go [1] (not [6, 5]) and [-1, 0]: S = {1, -1, 0}, mean 0,
    #   var 2/3 -> [1, -1, 0] / sqrt(2/3)
    s = math.sqrt(2 / 3)
    assert advantages(batch[0], 1) == approx_list([1 / s, 0.0])
    assert advantages(batch[1], 1) == approx_list([-1 / s, 0.0])
    # X: [1] and [3] -> mean 2, std 1 -> [-1], [+1]
    assert advantages(batch[0], 0) == approx_list([-1.0])
    assert advantages(batch[1], 0) == approx_list([1.0])


@pytest.mark.parametrize("method", names())
def test_assign_singletons_give_zero_not_nan(method: str) -> None:
    # One episode, one one-turn trajectory per role: every group is a singleton.
    batch = [episode(KUHN, {0: [2.0], 1: [-2.0]})]
    assign(batch, EstimatorConfig.variant(method)())
    values = [t.advantage for t in batch[0].turns]
    assert not any(math.isnan(v) for v in values)
    if method == "rae":
        # RAE has a persistent baseline, not a group: A = R - 0 on the first update.
        assert values == [2.0, -2.0]
    elif method == "ppo":
        # PPO's baseline is the value head (no estimate yet: 0), not a group: A = R - 0,
        # whitened over the batch: (2 - 0) / 2 = 1 and -1.
        assert values == pytest.approx([1.0, -1.0], rel=1e-5)
    elif method == "in2ai":
        # In2AI pools the steps of a game whatever the seat (no role groups): two steps, each
        # baselined by the other's reward: 2 - (-2) = 4 and -2 - 2 = -4.
        assert values == [4.0, -4.0]
    else:
        assert values == [0.0, 0.0]


def test_assign_with_no_eligible_turns_zeroes_everything() -> None:
    batch = [episode(TTT, {0: [1.0], 1: [2.0]}, gated=((0, 0), (1, 0)))]
    estimator = RAE(RAEConfig())
    estimator.assign(batch)
    assert [t.advantage for t in batch[0].turns] == [0.0, 0.0]
    assert estimator.baselines.keys() == []  # nothing eligible, nothing folded into them
    assign([], MarshalConfig())


def test_assign_rae_updates_in_episode_then_seat_order() -> None:
    estimator = RAE(RAEConfig(alpha=0.5))
    baselines = estimator.baselines
    batch = two_ttt_episodes()  # X: R = 3 then 1; O: R = 1 then -1
    estimator.assign(batch)
    # X: A = 3 - 0 = 3, b = 1.5; then A = 1 - 1.5 = -0.5, b = 1.25
    # O: A = 1 - 0 = 1, b = 0.5;  then A = -1 - 0.5 = -1.5, b = -0.25
    assert advantages(batch[0], 0) == [3.0, 3.0]
    assert advantages(batch[1], 0) == [-0.5, -0.5]
    assert advantages(batch[0], 1) == [1.0, 1.0]
    assert advantages(batch[1], 1) == [-1.5, -1.5]
    assert baselines.baseline((TTT, "player 0")) == 1.25
    assert baselines.baseline((TTT, "player 1")) == -0.25

    # Without role grouping one baseline per game: R = 3, 1, 1, -1 in order (ep1 X, ep1 O, ...)
    # A = 3, b = 1.5; A = 1 - 1.5 = -0.5, b = 1.25; A = 1 - 1.25 = -0.25, b = 1.125;
    # A = -1 - 1.125 = -2.125
    by_game = RAE(RAEConfig(alpha=0.5, role_grouping=False))
    shared = by_game.baselines
    batch = two_ttt_episodes()
    by_game.assign(batch)
    assert advantages(batch[0], 0) == [3.0, 3.0]
    assert advantages(batch[0], 1) == [-0.5, -0.5]
    assert advantages(batch[1], 0) == [-0.25, -0.25]
    assert advantages(batch[1], 1) == [-2.125, -2.125]
    assert shared.keys() == [TTT]


def test_assign_whiten_normalizes_over_all_eligible_turns() -> None:
    # RAE with fresh baselines in two separate games: X of Kuhn (1 turn, R = 1) -> A = 1;
    # X of TTT (3 turns, R = 3) -> A = 3 on each turn. Flat [1, 3, 3, 3]: mean 2.5,
    # deviations [-1.5, 0.5, 0.5, 0.5], var (2.25 + 3 * 0.25) / 4 = 0.75
    batch = [episode(KUHN, {0: [1.0]}), episode(TTT, {0: [1.0, 1.0, 1.0]})]
    assign(batch, RAEConfig(whiten=True, eps=0.0))
    s = math.sqrt(0.75)
    assert advantages(batch[0], 0) == approx_list([-1.5 / s])
    assert advantages(batch[1], 0) == approx_list([0.5 / s] * 3)


def test_unknown_estimator_names_the_registered_ones() -> None:
    with pytest.raises(ValueError, match="unknown advantage estimator 'a2c'; use one of grpo"):
        EstimatorConfig.variant("a2c")


def test_trajectories_keys_and_order() -> None:
    batch = two_ttt_episodes()
    keys = [t.key for t in trajectories(batch)]
    assert keys == [(TTT, "player 0"), (TTT, "player 1")] * 2
    assert [t.key for t in trajectories(batch, role_grouping=False)] == [TTT] * 4
    assert [t.total_return for t in trajectories(batch)] == [3.0, 1.0, 1.0, -1.0]
