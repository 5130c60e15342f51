"""Appendix B.4's rule for In2AI's rewards: every error floor lies below every legal step's reward.

The property is checked over the reward tables as the step functions apply them: every
Codenames clue (counts 0-4, one or three words hidden) with every sequence of up to three
guesses of every kind, every Colonel Blotto round result, every three-player IPD round gain of
the payoff table, each in a won, drawn and lost episode. No game is played: the facts are
written here.
"""

from __future__ import annotations

import functools
import itertools

import pytest

from strategic_arena.games.mindgames_facts import MoveFacts
from strategic_arena.rl.mindgames import (
    CONSTANTS,
    In2AIConstants,
    StepReward,
    blotto_steps,
    codenames_steps,
    ipd_steps,
)

GUESSES = ("team", "neutral", "opponent", "assassin", "duplicate", "off_board", "pass", "unparsed")
#: (red, blue) results; each team's two seats share it.
CODENAMES_RESULTS = ((1.0, -1.0), (-1.0, 1.0), (0.0, 0.0))
#: TextArena's three-player IPD payoffs: R 3, T 5, S 0, P 1 (a seat meets two opponents a round).
PAYOFFS, TEMPTATION = (3.0, 5.0, 0.0, 1.0), 5.0


def split(facts: list[MoveFacts], verdicts: list[StepReward]) -> tuple[list[float], list[float]]:
    """(legal steps' rewards, error steps' rewards): an error is a move that did not parse or
    broke a rule; gated steps are neither (they are not trained on)."""
    legal, errors = [], []
    for fact, verdict in zip(facts, verdicts, strict=True):
        if fact.outcome in ("unparsed", "invalid", "substring") or (
            fact.kind == "clue" and fact.number < 1
        ):
            errors.append(verdict.reward)
        elif verdict.eligible:
            legal.append(verdict.reward)
    return legal, errors


@functools.cache
def codenames_rewards() -> tuple[list[float], list[float]]:
    legal: list[float] = []
    errors: list[float] = []
    for number, remaining, (red, blue), length in itertools.product(
        range(5), (1, 3), CODENAMES_RESULTS, range(4)
    ):
        for kinds in itertools.product(GUESSES, repeat=length):
            # A refused clue's guesses are judged alone: one or none of them is enough.
            clue_outcomes = ("clue", "substring", "unparsed") if length < 2 else ("clue",)
            for clue_outcome in clue_outcomes:
                clue = MoveFacts(0, "clue", clue_outcome, number=number, remaining=remaining)
                facts = [clue, *(MoveFacts(1, "guess", kind) for kind in kinds)]
                verdicts = codenames_steps(facts, (red, red, blue, blue))
                more_legal, more_errors = split(facts, verdicts)
                legal += more_legal
                errors += more_errors
    for kind, (red, blue) in itertools.product(GUESSES, CODENAMES_RESULTS):  # guesses with no clue
        facts = [MoveFacts(1, "guess", kind)]
        more_legal, more_errors = split(facts, codenames_steps(facts, (red, red, blue, blue)))
        legal += more_legal
        errors += more_errors
    return legal, errors


@functools.cache
def blotto_rewards() -> tuple[list[float], list[float]]:
    legal: list[float] = []
    errors: list[float] = []
    for outcome, winner, returns in itertools.product(
        ("allocation", "invalid", "unparsed"), (0, 1, -1), ((1.0, -1.0), (-1.0, 1.0), (0.0, 0.0))
    ):
        facts = [MoveFacts(0, "allocation", outcome, round=1, round_winner=winner)]
        more_legal, more_errors = split(facts, blotto_steps(facts, returns))
        legal += more_legal
        errors += more_errors
    return legal, errors


def ipd_rewards() -> tuple[list[float], list[float]]:
    legal: list[float] = []
    errors: list[float] = []
    gains = {a + b for a, b in itertools.product(PAYOFFS, repeat=2)}
    for gain, decision, returns in itertools.product(
        sorted(gains), ("decision", "unparsed"), ((1.0, -1.0, -1.0), (-1.0, 1.0, 1.0), (0.0,) * 3)
    ):
        facts = [
            MoveFacts(0, "chat", round=1, round_gain=gain),
            MoveFacts(0, "decision", decision, round=1, round_gain=gain),
        ]
        more_legal, more_errors = split(facts, ipd_steps(facts, returns, TEMPTATION))
        legal += more_legal
        errors += more_errors
    return legal, errors


@pytest.mark.parametrize("table", [codenames_rewards, blotto_rewards, ipd_rewards])
def test_every_error_floor_is_below_every_legal_reward(table: object) -> None:
    assert callable(table)
    legal, errors = table()
    floors = {CONSTANTS.parse_failure, CONSTANTS.invalid_action}
    assert legal and errors
    assert set(errors) <= floors  # an error step gets a floor, nothing else
    assert max(errors) < min(legal)  # B.4: the floors dominate every legal outcome
    assert CONSTANTS.clip_low <= min(legal) and max(legal) <= CONSTANTS.clip_high


def test_the_worst_legal_steps_sit_at_minus_one_and_the_floors_below() -> None:
    # A lost Blotto round is -1; a clue with no hit that led to the assassin, -0.5 - 1.0,
    # clips to -1: the lowest legal rewards. The floors: invalid -1.5, parse -2.0.
    assert min(blotto_rewards()[0]) == -1.0 and min(codenames_rewards()[0]) == -1.0
    assert (CONSTANTS.invalid_action, CONSTANTS.parse_failure) == (-1.5, -2.0)
    assert set(codenames_rewards()[1]) == {-1.5, -2.0}


def test_constants_whose_floors_tie_a_legal_reward_are_refused() -> None:
    with pytest.raises(ValueError, match="must lie below every legal reward"):
        In2AIConstants(invalid_action=-1.0)
    with pytest.raises(ValueError, match="must lie below every legal reward"):
        In2AIConstants(parse_failure=-0.5)
    assert In2AIConstants(clip_low=-0.5, invalid_action=-0.75, parse_failure=-1.0).clip_low == -0.5


@pytest.mark.parametrize(
    ("error_kind", "floor"), [("illegal_action", -1.5), ("format", -2.0), ("no_action", -2.0)]
)
def test_a_re_asked_error_turn_keeps_its_own_floor(
    error_kind: str, floor: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken rule gets the invalid-action floor, an answer that did not parse the parse
    floor, whether the game ended there or the re-asked move went on (and won its round)."""
    from strategic_arena.rl import mindgames
    from strategic_arena.rl.definitions import In2AIStepRewards
    from strategic_arena.rl.episode import Episode, Turn
    from strategic_arena.rl.rewards import RewardConfig

    monkeypatch.setattr(mindgames, "replay_facts", lambda *args: None)
    won = [mindgames.StepReward(1.0)]  # the re-asked move's step: a round won
    monkeypatch.setattr(mindgames, "step_rewards", lambda *args: won)
    for move_index in (None, 0):  # the game ended at the error / the re-asked move was played
        turn = Turn("mindgames_colonel_blotto-v0", 0, "player 0", [1], [2], [-0.1], "x", error_kind)
        turn.move_index = move_index
        episode = Episode(
            "mindgames_colonel_blotto-v0",
            0,
            (0,),
            "x",
            (0.0, 0.0),
            "complete",
            None,
            [turn],
            moves=(),
        )
        In2AIStepRewards().score(episode, RewardConfig())
        assert (turn.reward, turn.eligible) == (floor, True)
