"""In2AI's MindGames rewards: game-specific episode rewards and delayed per-step attribution.

The MindGames Arena winner (In2AI) trained on Codenames, Colonel Blotto and the three-player
Iterated Prisoner's Dilemma with rewards it computes once an episode is over (its Appendices A
and B; ``docs/training.md``, "MindGames rewards", restates them). Two reward definitions of the
registry (:mod:`strategic_arena.rl.definitions`) use this module:

* ``in2ai_episode`` -- Appendix A's **episode reward** as the game reward (in place of
  TextArena's win/loss), the rest of the turn's reward as MARSHAL's (format, length):
  Colonel Blotto ``min(1, w / m)`` (rounds won over the majority, m = floor(N / 2) + 1),
  Codenames ``c / g`` (own words found by the team's operative over the team's words: 9 red,
  8 blue; both seats of a team get it), IPD ``S / (N * 2T)`` (the score over its maximum: N
  rounds, defecting on both cooperating opponents).
* ``in2ai_steps`` -- Appendix B's **per-step attribution**: each step's reward comes from
  what happened after it (a Codenames clue from the guesses it led to, the guesses from their
  group's average; a Blotto allocation from its round; every IPD chat turn of a round from
  the round's decision), positive rewards are scaled by the episode's outcome, rewards are
  clipped to a range with error floors below it, and steps with no observed outcome are gated
  out.

The facts of each move (which guesses followed a clue, who won a round, what a round paid) come
from replaying the game through TextArena's referee (:mod:`strategic_arena.games.
mindgames_facts`), from the episode's seed and moves.

**What the paper keeps and what the project chose.** The paper's text lost Appendix B's
constants in its extraction: its clip range ("clipped to [ ]"), both error floors, every guess
and pass value, the clue penalties and the outcome multipliers are blank. It keeps the structure
(which step is credited with what), Appendix B.4's rule that "parsing failures and invalid
actions always dominate shaped rewards", and one worked number: a correct guess followed by the
assassin keeps +0.15 instead of +1.0, which fixes the assassin's value at -0.7 given +1 for a
correct guess. Everything else is the project's choice, the fields of :class:`In2AIConstants`:
shaped (legal) rewards are clipped to [-1, 1], and the floors sit strictly below that range
(invalid action -1.5, parse failure -2.0), so an error is always worse than any legal move, a
lost Blotto round and a clipped assassin clue (-1) included; :class:`In2AIConstants` refuses
constants that break this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from strategic_arena.games.mindgames_facts import GameFacts, MoveFacts


def blotto_episode_reward(rounds_won: float, num_rounds: int) -> float:
    """Appendix A.1: ``min(1, w / m)``, m = floor(N / 2) + 1 (5 of 9: 1.0; 3 of 9: 0.6)."""
    majority = num_rounds // 2 + 1
    return min(1.0, rounds_won / majority)


def codenames_episode_reward(words_found: float, goal: int) -> float:
    """Appendix A.2: ``c / g`` (red: 9 words 1.0, 5 words 5/9, none 0)."""
    return words_found / goal


def ipd_episode_reward(score: float, num_rounds: int, temptation: float) -> float:
    """Appendix A.3: ``S / (N * 2T)`` (5 rounds: 50 points 1.0, 30 cooperating 0.6, 10 0.2)."""
    return score / (num_rounds * 2 * temptation)


def episode_rewards(env_id: str, facts: GameFacts) -> tuple[float, ...]:
    """Appendix A's episode reward of every seat of a replayed MindGames game."""
    game = mindgames_game(env_id)
    if game == "codenames":
        red, blue = (codenames_episode_reward(facts.revealed[t], facts.goals[t]) for t in (0, 1))
        return (red, red, blue, blue)
    if game == "blotto":
        return tuple(blotto_episode_reward(w, facts.num_rounds) for w in facts.revealed)
    return tuple(ipd_episode_reward(s, facts.num_rounds, facts.temptation) for s in facts.revealed)


@dataclass(frozen=True)
class In2AIConstants:
    """Appendix B's constants (the extraction of the paper lost their values: ours, documented).

    Appendix B.4 requires that the error floors "always dominate shaped rewards"; here every
    legal step's reward is clipped to ``[clip_low, clip_high]`` and both floors must lie
    strictly below ``clip_low`` (checked on construction).

    Attributes:
        parse_failure: floor of a step that does not parse (an error turn; a TextArena move
            its patterns cannot read). Below the invalid-action floor: a move that does not
            even parse is further from a legal one than a move that parses and breaks a rule.
        invalid_action: floor of a step that parses but breaks a rule (a Codenames clue that
            is, or holds, a board word; a clue count below 1).
        clip_low: the lowest reward of a legal (shaped) step.
        clip_high: the highest reward of a legal (shaped) step.
        guess_rewards: a Codenames guess by outcome before the group average; ``team`` is
            the value a correct guess puts in the average. The paper's worked example (a
            correct guess then the assassin: +0.15 for the correct one) fixes ``assassin`` at
            -0.7 given ``team`` +1.
        early_pass: a pass within the clue's count.
        bonus_pass: a pass on the N+1-th (bonus) attempt.
        clue_no_hit: a clue none of whose guesses found a team word.
        clue_opponent: added to a clue whose turn revealed an opponent word.
        clue_assassin: added to a clue whose turn revealed the assassin.
        overshoot: taken from a clue per word its count exceeds the team's hidden words.
        outcome_multipliers: positive step rewards times these, by episode outcome.
    """

    parse_failure: float = -2.0
    invalid_action: float = -1.5
    clip_low: float = -1.0
    clip_high: float = 1.0
    guess_rewards: tuple[tuple[str, float], ...] = (
        ("team", 1.0),
        ("neutral", -0.3),
        ("duplicate", -0.5),
        ("off_board", -0.5),
        ("opponent", -0.5),
        ("assassin", -0.7),
    )
    early_pass: float = -0.2
    bonus_pass: float = 0.1
    clue_no_hit: float = -0.5
    clue_opponent: float = -0.5
    clue_assassin: float = -1.0
    overshoot: float = 0.1
    outcome_multipliers: tuple[tuple[str, float], ...] = (
        ("win", 1.0),
        ("draw", 0.5),
        ("loss", 0.25),
    )

    def __post_init__(self) -> None:
        if not self.clip_low < self.clip_high:
            raise ValueError(f"clip_low {self.clip_low} must be below clip_high {self.clip_high}")
        worst_floor = max(self.parse_failure, self.invalid_action)
        if not worst_floor < self.clip_low:
            raise ValueError(
                f"the error floors (parse {self.parse_failure}, invalid {self.invalid_action}) "
                f"must lie below every legal reward (clip_low {self.clip_low}): Appendix B.4"
            )
        if any(factor < 0 for _, factor in self.outcome_multipliers):
            raise ValueError("outcome multipliers must be >= 0 (they scale positive rewards)")

    def guess(self, outcome: str) -> float:
        """The pre-average value of a guess with ``outcome``."""
        return dict(self.guess_rewards)[outcome]

    def multiplier(self, outcome: str) -> float:
        """The factor of positive step rewards in an episode with ``outcome``."""
        return dict(self.outcome_multipliers)[outcome]


#: The constants the reward definitions use.
CONSTANTS = In2AIConstants()


@dataclass(frozen=True)
class StepReward:
    """Appendix B's verdict on one step: its reward and whether it is training data."""

    reward: float
    eligible: bool = True


def outcome_of(returns: Sequence[float], seat: int) -> str:
    """``"win"``, ``"draw"`` or ``"loss"`` from TextArena's return of ``seat``."""
    value = returns[seat]
    return "win" if value > 0 else "loss" if value < 0 else "draw"


def _shape(reward: float, outcome: str, constants: In2AIConstants) -> float:
    """Clip to ``[clip_low, clip_high]``; a positive reward times the outcome's multiplier."""
    reward = max(constants.clip_low, min(constants.clip_high, reward))
    return reward * constants.multiplier(outcome) if reward > 0 else reward


def codenames_steps(
    facts: Sequence[MoveFacts], returns: Sequence[float], constants: In2AIConstants = CONSTANTS
) -> list[StepReward]:
    """Appendix B.1: every move of a Codenames game, a clue credited with its guesses."""
    result: list[StepReward | None] = [None] * len(facts)
    index = 0
    while index < len(facts):
        fact = facts[index]
        outcome = outcome_of(returns, fact.seat)
        if fact.kind == "guess":  # a guess with no clue before it (the turn was skipped)
            result[index] = _lone_guess(fact, outcome, constants)
            index += 1
            continue
        end = index + 1
        while end < len(facts) and facts[end].kind == "guess" and facts[end].seat == fact.seat + 1:
            end += 1
        group = list(range(index + 1, end))
        verdicts = _clue_turn(fact, [facts[g] for g in group], outcome, constants)
        for position, verdict in zip([index, *group], verdicts, strict=True):
            result[position] = verdict
        index = end
    return [verdict for verdict in result if verdict is not None]


def _lone_guess(fact: MoveFacts, outcome: str, constants: In2AIConstants) -> StepReward:
    """A guess outside any clue's scope: its own value, errors at their floor."""
    if fact.outcome == "unparsed":
        return StepReward(constants.parse_failure)
    if fact.outcome == "pass":
        return StepReward(_shape(constants.early_pass, outcome, constants))
    return StepReward(_shape(constants.guess(fact.outcome), outcome, constants))


def _clue_turn(
    clue: MoveFacts, guesses: Sequence[MoveFacts], outcome: str, constants: In2AIConstants
) -> list[StepReward]:
    """The clue and its operative's guesses (B.1.2, B.1.3, B.1.5): the clue first."""
    if clue.outcome == "unparsed":
        return [
            StepReward(constants.parse_failure),
            *(_lone_guess(g, outcome, constants) for g in guesses),
        ]
    if clue.outcome == "substring" or clue.number < 1:
        return [
            StepReward(constants.invalid_action),
            *(_lone_guess(g, outcome, constants) for g in guesses),
        ]
    scoped = guesses[: clue.number + 1]  # TextArena lets the operative guess up to N+1 words
    values = [
        constants.guess(g.outcome) for g in scoped if g.outcome in dict(constants.guess_rewards)
    ]
    average = sum(values) / len(values) if values else 0.0
    verdicts: list[StepReward] = []
    for position, guess in enumerate(guesses):
        if guess.outcome == "unparsed":
            verdicts.append(StepReward(constants.parse_failure))
        elif guess.outcome == "pass":
            bonus = position >= clue.number
            value = constants.bonus_pass if bonus else constants.early_pass
            verdicts.append(StepReward(_shape(value, outcome, constants)))
        elif guess.outcome == "team":
            verdicts.append(StepReward(_shape(average, outcome, constants)))
        else:
            verdicts.append(StepReward(_shape(constants.guess(guess.outcome), outcome, constants)))
    correct = sum(1 for g in scoped if g.outcome == "team")
    attempted = [g for g in scoped if g.outcome not in ("unparsed",)]
    if not attempted:  # B.1.5: a clue with no guess to judge it by has no signal
        return [StepReward(0.0, eligible=False), *verdicts]
    effective = min(clue.number, clue.remaining) or 1
    reward = correct / effective if correct else constants.clue_no_hit
    reward -= constants.overshoot * max(0, clue.number - clue.remaining)
    outcomes = {g.outcome for g in scoped}
    if "opponent" in outcomes:
        reward += constants.clue_opponent
    if "assassin" in outcomes:
        reward += constants.clue_assassin
    return [StepReward(_shape(reward, outcome, constants)), *verdicts]


def blotto_steps(
    facts: Sequence[MoveFacts], returns: Sequence[float], constants: In2AIConstants = CONSTANTS
) -> list[StepReward]:
    """Appendix B.2: each allocation gets its round's result (+1, 0, -1), shaped by the match.

    An allocation whose round never resolved (the game ended first: the opponent's invalid
    move) has no outcome and is gated; one TextArena refused gets its floor (parse or rule),
    eligible.
    """
    verdicts = []
    for fact in facts:
        if fact.outcome == "unparsed":  # TextArena refused it: its floor
            verdicts.append(StepReward(constants.parse_failure))
        elif fact.outcome == "invalid":
            verdicts.append(StepReward(constants.invalid_action))
        elif fact.round_winner is None:
            verdicts.append(StepReward(0.0, eligible=False))
        else:
            won = fact.round_winner == fact.seat
            result = 0.0 if fact.round_winner < 0 else 1.0 if won else -1.0
            outcome = outcome_of(returns, fact.seat)
            verdicts.append(StepReward(_shape(result, outcome, constants)))
    return verdicts


def ipd_steps(
    facts: Sequence[MoveFacts],
    returns: Sequence[float],
    temptation: float,
    constants: In2AIConstants = CONSTANTS,
) -> list[StepReward]:
    """Appendix B.3: a round's chat turns and decision share ``gain / 2T``, shaped by outcome.

    A decision TextArena cannot read gets the parse floor, and that round's chat turns get 0
    and are gated (nothing to propagate); chat turns of a round that never resolved are gated.
    """
    verdicts: list[StepReward] = []
    for fact in facts:
        outcome = outcome_of(returns, fact.seat)
        mates = [f for f in facts if f.seat == fact.seat and f.round == fact.round]
        decision = next((f for f in mates if f.kind == "decision"), None)
        if fact.kind == "decision" and fact.outcome == "unparsed":
            verdicts.append(StepReward(constants.parse_failure))
        elif decision is None or decision.outcome == "unparsed" or fact.round_gain is None:
            verdicts.append(StepReward(0.0, eligible=False))
        else:
            group_reward = fact.round_gain / (2 * temptation)
            verdicts.append(StepReward(_shape(group_reward, outcome, constants)))
    return verdicts


def step_rewards(
    env_id: str, facts: GameFacts, returns: Sequence[float], constants: In2AIConstants = CONSTANTS
) -> list[StepReward]:
    """Appendix B's verdict on every move of a replayed MindGames game, in move order."""
    game = mindgames_game(env_id)
    if game == "codenames":
        return codenames_steps(facts.moves, returns, constants)
    if game == "blotto":
        return blotto_steps(facts.moves, returns, constants)
    return ipd_steps(facts.moves, returns, facts.temptation, constants)


#: The MindGames games by the TextArena environment of their spec.
_GAMES = {"Codenames-v0": "codenames", "ColonelBlotto-v0": "blotto", "ThreePlayerIPD-v0": "ipd"}


def mindgames_game(env_id: str) -> str:
    """``"codenames"``, ``"blotto"`` or ``"ipd"`` for an entry over one of those TextArena games.

    Raises:
        ValueError: ``env_id`` plays another game (the definitions are these games' only).
    """
    from strategic_arena.games import get_spec

    spec = get_spec(env_id)
    game = _GAMES.get(str(getattr(spec, "textarena_id", "")))
    if game is None:
        raise ValueError(
            f"{env_id}: In2AI's rewards are defined for Codenames, Colonel Blotto and the "
            f"three-player IPD ({', '.join(sorted(_GAMES))}) only"
        )
    return game


def replay_facts(env_id: str, seed: int, moves: Sequence[tuple[int, str]]) -> GameFacts:
    """The :class:`GameFacts` of a finished MindGames game, replayed through TextArena."""
    from strategic_arena.games import mindgames_facts

    readers = {
        "codenames": mindgames_facts.codenames_facts,
        "blotto": mindgames_facts.blotto_facts,
        "ipd": mindgames_facts.ipd_facts,
    }
    return readers[mindgames_game(env_id)](env_id, seed, moves)
