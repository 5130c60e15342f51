"""MAPoRL's -10 penalties: each applies to its malformed answer and to nothing else."""

from __future__ import annotations

import pytest

from strategic_arena.problems import Problem
from strategic_arena.rl.penalties import PENALTY, PenaltyConfig, penalized, penalties, repeated
from strategic_arena.rl.verifiers import ExactAnswerVerifier, make_verifier, score_debate

#: Fifty words of honest reasoning: long enough, no repetition.
REASONING = " ".join(f"step{i}" for i in range(50))
GOOD = f"{REASONING} so the answer is \\boxed{{12}}"


def test_a_well_formed_solution_has_no_penalty() -> None:
    assert penalties(GOOD) == ()
    assert penalized(0.7, penalties(GOOD)) == 0.7


@pytest.mark.parametrize(
    ("text", "ended", "kind"),
    [
        (f"{REASONING} so the answer is 12", True, "no_box"),
        (GOOD, False, "no_eos"),
        (f"{GOOD} Hope this helps!", True, "after_box"),
        (f"{GOOD}.", True, "after_box"),
        (f"{REASONING} so so so so the answer is \\boxed{{12}}", True, "repetition"),
        (f"{REASONING} add it up add it up add it up add it up \\boxed{{12}}", True, "repetition"),
        ("the answer is \\boxed{12}", True, "too_short"),
    ],
)
def test_each_penalty_applies_to_its_malformed_answer(text: str, ended: bool, kind: str) -> None:
    assert penalties(text, ended=ended) == (kind,)
    assert penalized(0.9, penalties(text, ended=ended)) == PENALTY == -10.0


def test_numbers_may_repeat_and_three_repeats_are_allowed() -> None:
    assert not repeated(["1", "1", "1", "1", "1"])
    assert not repeated(["so", "so", "so"])
    assert repeated(["so", "so", "so", "so"])
    assert repeated([7, 8, 7, 8, 7, 8, 7, 8])  # token ids: no digits exemption possible


def test_penalties_can_be_chosen_and_limited() -> None:
    short = "the answer is \\boxed{12}"
    assert penalties(short, config=PenaltyConfig(min_tokens=0)) == ()
    only_box = PenaltyConfig(kinds=("no_box",))
    assert penalties("no answer", ended=False, config=only_box) == ("no_box",)
    with pytest.raises(ValueError, match="unknown penalties"):
        PenaltyConfig(kinds=("typo",))  # type: ignore[arg-type]
    assert penalized(0.5, ("no_box",), PenaltyConfig(value=-1.0)) == -1.0


def test_a_debate_scored_by_the_exact_verifier_with_penalties() -> None:
    problem = Problem("p", "What is 5 + 7?", "12")
    solutions = [[GOOD, f"{REASONING} so \\boxed{{13}}"], [GOOD, "\\boxed{12}"]]
    verifier = make_verifier("exact")
    assert isinstance(verifier, ExactAnswerVerifier)
    scores = score_debate(problem, solutions, verifier, ended=[[True, True], [False, True]])
    # turn 0: right, wrong; turn 1: right but cut off (no EOS), right but too short
    assert scores == [[1.0, 0.0], [-10.0, -10.0]]
    assert score_debate(problem, solutions, verifier, penalty=None) == [[1.0, 0.0], [1.0, 1.0]]
    with pytest.raises(ValueError, match="unknown verifier"):
        make_verifier("oracle")
