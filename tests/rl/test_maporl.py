"""MAPoRL's reward forms and incentives against their formulas, on scripted debates."""

from __future__ import annotations

import pytest

from strategic_arena.rl.maporl import (
    INCENTIVE_ABLATIONS,
    REWARD_FORMS,
    DebateRewardConfig,
    Incentives,
    debate_rewards,
    incentive_bonus,
    majority_of_others,
)

#: A scripted 2x2 debate: scores[t][i] of agents 0 and 1 at turns 0 and 1.
SCORES = [[0.2, 0.6], [0.9, 0.5]]
GAMMA = 0.5


def flat(table: list[list[float]]) -> list[float]:
    return [value for row in table for value in row]


def test_immediate_reward_is_the_answers_own_score() -> None:
    config = DebateRewardConfig(form="immediate", gamma=GAMMA)
    assert debate_rewards(SCORES, [[False] * 2] * 2, config) == SCORES


def test_cumulative_reward_is_the_agents_own_discounted_scores() -> None:
    config = DebateRewardConfig(form="cumulative", gamma=GAMMA)
    rewards = debate_rewards(SCORES, [[False] * 2] * 2, config)
    # r[0][i] = s[0][i] + 0.5 s[1][i]; r[1][i] = s[1][i]
    assert flat(rewards) == pytest.approx([0.2 + 0.5 * 0.9, 0.6 + 0.5 * 0.5, 0.9, 0.5])
    normalized = DebateRewardConfig(form="cumulative", gamma=GAMMA, normalize=True)
    assert flat(debate_rewards(SCORES, [[False] * 2] * 2, normalized)) == pytest.approx(
        [(0.2 + 0.45) / 1.5, (0.6 + 0.25) / 1.5, 0.9, 0.5]
    )


def test_influence_reward_adds_the_discounted_mean_of_all_agents_later_scores() -> None:
    config = DebateRewardConfig(form="influence", gamma=GAMMA)
    rewards = debate_rewards(SCORES, [[False] * 2] * 2, config)
    later_mean = (0.9 + 0.5) / 2  # every agent's turn-1 scores, averaged
    assert flat(rewards) == pytest.approx(
        [0.2 + 0.5 * later_mean, 0.6 + 0.5 * later_mean, 0.9, 0.5]
    )


def test_outcome_reward_pays_the_final_majority_at_the_last_turn_only() -> None:
    config = DebateRewardConfig(form="outcome")
    assert debate_rewards(SCORES, [[False] * 2] * 2, config, final=1.0) == [[0, 0], [1, 1]]


def test_forms_are_a_registry_and_bad_settings_fail_clearly() -> None:
    assert list(REWARD_FORMS) == ["immediate", "cumulative", "influence", "outcome"]
    with pytest.raises(ValueError, match="choose one of immediate"):
        DebateRewardConfig(form="sum")
    with pytest.raises(ValueError, match="gamma"):
        DebateRewardConfig(gamma=1.5)
    with pytest.raises(ValueError, match="non-empty table"):
        debate_rewards([[0.1], [0.2, 0.3]], [[True], [True]], DebateRewardConfig())


ALL = Incentives(
    critical_reasoning=1.0, persuadability=2.0, useful_wrong_answers=3.0, persuasion=4.0
)
R, W = True, False


@pytest.mark.parametrize(
    ("before", "after", "majority", "bonus"),
    [
        # Table 1: answer (t), answer (t+1), majority (t) -> incentive, paid at turn t+1
        (R, W, R, 0.0),
        (R, W, W, 0.0),
        (W, R, W, 1.0),  # critical reasoning
        (W, R, R, 2.0),  # persuadability
    ],
)
def test_each_row_of_table_1_own_revision(
    before: bool, after: bool, majority: bool, bonus: float
) -> None:
    # agent 0 revises; agents 1 and 2 (the others' majority) keep their correctness, so no
    # influence row of Table 2 applies
    correct = [[before, majority, majority], [after, majority, majority]]
    assert incentive_bonus(correct, ALL)[1][0] == bonus
    assert incentive_bonus(correct, ALL)[0][0] == 0.0


@pytest.mark.parametrize(
    ("then", "next_", "answer", "bonus"),
    [
        # Table 2: majority (t), majority (t+1), answer (t) -> incentive, paid at turn t
        (R, W, R, 0.0),
        (R, W, W, 0.0),
        (W, R, W, 3.0),  # useful wrong answers
        (W, R, R, 4.0),  # persuasion
    ],
)
def test_each_row_of_table_2_influence(then: bool, next_: bool, answer: bool, bonus: float) -> None:
    # agent 0 keeps its answer's correctness (no row of Table 1); the others change together
    correct = [[answer, then, then], [answer, next_, next_]]
    assert incentive_bonus(correct, ALL)[0][0] == bonus
    assert incentive_bonus(correct, ALL)[1][0] == 0.0


def test_reversals_cost_the_same_amounts_only_when_asked() -> None:
    symmetric = Incentives(critical_reasoning=1.0, persuadability=2.0, penalize_reversals=True)
    # R -> W with the others right: -persuadability; with the others wrong: -critical_reasoning
    assert incentive_bonus([[R, R, R], [W, R, R]], symmetric)[1][0] == -2.0
    assert incentive_bonus([[R, W, W], [W, W, W]], symmetric)[1][0] == -1.0
    assert incentive_bonus([[R, R, R], [W, R, R]], ALL)[1][0] == 0.0


def test_an_even_split_of_the_others_is_no_majority() -> None:
    assert majority_of_others([W, R, W], 0) is None
    assert majority_of_others([W], 0) is None
    assert majority_of_others([W, R, R, W], 3) is True
    # with an even split no incentive applies
    assert incentive_bonus([[W, R, W], [R, R, W]], ALL) == [[0.0] * 3, [0.0] * 3]


def test_the_ablations_raise_one_parameter_to_2() -> None:
    assert INCENTIVE_ABLATIONS["baseline"] == Incentives()
    for name, incentives in INCENTIVE_ABLATIONS.items():
        values = [
            incentives.critical_reasoning,
            incentives.persuadability,
            incentives.useful_wrong_answers,
            incentives.persuasion,
        ]
        assert sorted(values) == ([0.0] * 4 if name == "baseline" else [0.0, 0.0, 0.0, 2.0])
        if name != "baseline":
            assert getattr(incentives, name) == 2.0


def test_rewards_are_the_form_plus_the_incentives() -> None:
    correct = [[W, W], [R, W]]  # agent 0 turns right against a wrong other: critical reasoning
    config = DebateRewardConfig(
        form="immediate", incentives=INCENTIVE_ABLATIONS["critical_reasoning"]
    )
    assert flat(debate_rewards(SCORES, correct, config)) == pytest.approx([0.2, 0.6, 2.9, 0.5])
