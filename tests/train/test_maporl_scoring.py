"""MAPoRL's score stage in the trainer (``maporl:``) on a scripted 2 x 2 debate, by hand.

The debate ``debate-v0(agents=2,count=2,problem_seed=25,turns=2)`` with seed 0 plays the
generated problem whose answer is 5. Turn 1: agent 0 answers 5 (right), agent 1 answers 3
(wrong); turn 2: both answer 5. Exact-verifier scores s = [[1, 0], [1, 1]].

Influence form, gamma 0.3: r[t][i] = s[t][i] + sum_{t' > t} 0.3^(t' - t) mean_j s[t'][j]:
r[0] = [1 + 0.3 * 1, 0 + 0.3 * 1] = [1.3, 0.3]; r[1] = [1, 1].
With the ``persuasion`` incentive (2): agent 0 was right at turn 1 while the other agents'
majority (agent 1) went from wrong to right: +2 at turn 1 -> r[0][0] = 3.3. Agent 1's own
revision (W -> R with the other's majority right) is ``persuadability``, 0 here.
The majority's accuracy: turn 1 a tie of 5 (right) and 3 (wrong): 0.5; turn 2: 1.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from strategic_arena.games import get_spec
from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.config import load_config
from strategic_arena.train.config.maporl import MaporlConfig
from strategic_arena.train.loop.maporl import DebateScorer, debate_problem

DEBATE = "debate-v0(agents=2,count=2,problem_seed=25,turns=2)"
ANSWERS = [["5", "3"], ["5", "5"]]


def _debate() -> Episode:
    turns = []
    for row in ANSWERS:
        for seat, answer in enumerate(row):
            text = f"Adding it up step by step gives \\boxed{{{answer}}}"
            turns.append(Turn(DEBATE, seat, f"Agent {seat + 1}", [1], [2], [-0.1], text, None))
    return Episode(DEBATE, 0, (0, 1), "self", (1.0, 1.0), "complete", None, turns, num_seats=2)


def test_the_scripted_debate_plays_the_problem_with_answer_five() -> None:
    assert debate_problem(get_spec(DEBATE), 0).answer == "5"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("incentives", "expected"),
    [("baseline", [1.3, 0.3, 1.0, 1.0]), ("persuasion", [3.3, 0.3, 1.0, 1.0])],
)
def test_influence_rewards_and_incentives_by_hand(incentives: str, expected: list[float]) -> None:
    episode = _debate()
    config = MaporlConfig(penalties=False, form="influence", gamma=0.3, incentives=incentives)
    metrics = DebateScorer(config).score([episode])
    assert [turn.reward for turn in episode.turns] == pytest.approx(expected)
    assert all(turn.eligible for turn in episode.turns)
    assert metrics == {
        "debate/accuracy_turn_1": 0.5,
        "debate/accuracy_turn_2": 1.0,
        "debate/agent_accuracy": 0.75,
    }


def test_the_penalties_score_an_unboxed_answer_minus_ten() -> None:
    episode = _debate()
    episode.turns[1].text = "I think it is 3"  # agent 1, turn 1: no box
    config = MaporlConfig(penalties=True, form="immediate")
    DebateScorer(config).score([episode])
    assert episode.turns[1].reward == -10.0


def test_the_outcome_form_pays_the_final_majority_at_the_last_turn_only() -> None:
    episode = _debate()
    DebateScorer(MaporlConfig(penalties=False, form="outcome")).score([episode])
    assert [turn.reward for turn in episode.turns] == [0.0, 0.0, 1.0, 1.0]


def test_single_agent_rl_with_the_verifier_is_one_policy_in_a_one_agent_debate(
    tiny_overrides: Callable[..., list[str]],
) -> None:
    pytest.importorskip("torch")
    from strategic_arena.train.loop.trainer import Trainer

    cfg = load_config(
        None,
        tiny_overrides(
            'games.ids=["debate-v0(agents=1,count=2,problem_seed=25,turns=1)"]',
            "maporl={verifier: exact, penalties: false, form: immediate}",
            "advantage={type: ppo}",
            "run.steps=1",
        ),
    )
    with Trainer(cfg) as trainer:
        metrics = trainer.train_step()
        turns = [turn for episode in trainer.last_episodes for turn in episode.turns]
    # Immediate reward of a one-agent, one-turn debate: the verifier's 0 or 1, which is also
    # the accuracy of the (one-voter) majority.
    assert {turn.reward for turn in turns} <= {0.0, 1.0}
    assert metrics["debate/accuracy_turn_1"] == pytest.approx(
        sum(turn.reward for turn in turns) / len(turns)
    )
    assert "train/value_loss" in metrics
