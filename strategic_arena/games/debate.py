r"""MAPoRL's collaborative debate (Du et al.'s debate, as MAPoRL trains it) as a free-text game.

``debate-v0``: N agents (seats) debate one reasoning problem for T turns. At every turn every
agent answers at once (a simultaneous turn): at turn 1 each answers the question alone; at
every later turn each sees the question and every agent's answers of the earlier turns, and may
revise its own. A move is the agent's whole solution, free text ending in ``\boxed{ANSWER}``
(MAPoRL's format); the other agents read the whole solution, not only its answer.

**Scoring** (MAPoRL section 4.2), per turn: each agent's final answer is the content of the
last ``\boxed{}`` of its solution (the letter chosen, for a multiple-choice problem), checked
against the problem's gold answer by :func:`strategic_arena.problems.check_answer`. The turn's
answer is the **majority vote** of the agents' answers (answers that are equal as answers count
as one: ``72`` and ``72.0``); when several answers tie for the most votes the turn scores the
**expected correctness** of picking one of them uniformly: the share of the tied answers that
are right. Agents that gave no answer (no ``\boxed{}``) vote together for "no answer", which is
always wrong. :func:`majority_score` is the rule; :attr:`DebateState.turn_scores` the score of
every turn (MAPoRL's Table 7 reports them as accuracy per turn) and the game's return, the same
for every seat (the agents cooperate), is the score of the last turn.

**Problems** come from a file in a registered schema
(:func:`strategic_arena.problems.load_problems`: ``gsm8k``, ``tinygsm``, ``anli``...) or, by
default, from the generated arithmetic set (:func:`strategic_arena.problems.generate_arithmetic`;
no download). A game's seed picks its problem: ``problems[seed % len(problems)]``, so seeds
``0..n-1`` play every problem once.

**Ids.** ``debate-v0`` is 3 agents, 3 turns, 1,000 generated problems (set seed 0). Other
settings are parameters of the id, as OpenSpiel writes them:
``debate-v0(agents=2,turns=2)``, ``debate-v0(problems=/data/gsm8k_test.jsonl,schema=gsm8k)``;
``get_spec("debate-v0", agents=2)`` gives the same spec. The id names everything that defines
the game, so the store, replays and reports rebuild it from the id alone (a problems file must
still be at its path to replay).

**What a seat sees.** Its agent number, the question (with its lettered choices), the turn, and
every agent's earlier answers, one per line after the agent's tag (``[Agent 2] ...``), its own
marked: each answer is quoted on one line (:func:`strategic_arena.games.seat_text.quote`), so
no agent can write a line that reads as another's or as the game's. The gold answer is in no
seat's view, and a player's copy of the state (:meth:`DebateState.clone`) does not hold it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import pyspiel

from strategic_arena.games.base import FreeTextGrammar, GameSpec
from strategic_arena.games.listing import Listing
from strategic_arena.games.seat_text import quote, role_tags
from strategic_arena.games.text_moves import TextMovesGame, TextMovesState
from strategic_arena.games.textarena import TextArenaGameType
from strategic_arena.problems import (
    Problem,
    answers_equal,
    check_answer,
    extract_boxed,
    extract_choice,
    generate_arithmetic,
    load_problems,
)

__all__ = [
    "DEBATE_ID",
    "DebateGame",
    "DebateOptions",
    "DebateSpec",
    "DebateState",
    "answer_of",
    "debate_problems",
    "debate_spec",
    "majority_score",
    "same_answer",
]

#: The debate's env id, as the registry (:data:`strategic_arena.games.DEBATE_ID`) knows it; its
#: parameters, when not the defaults, follow in parentheses.
DEBATE_ID = "debate-v0"

#: OpenSpiel's player ids of a simultaneous turn and of the end of the game.
_SIMULTANEOUS = int(pyspiel.PlayerId.SIMULTANEOUS)
_TERMINAL = int(pyspiel.PlayerId.TERMINAL)


@dataclass(frozen=True)
class DebateOptions:
    """What defines one debate game: its seats, turns and problems.

    Attributes:
        agents: N, the number of agents (seats), at least 1 (one agent revising its own answer
            is MAPoRL's self-correction case).
        turns: T, the number of turns, at least 1.
        problems: a problems file (JSON Lines, JSON or CSV), read with ``schema``; empty: the
            generated arithmetic set.
        schema: the problems file's schema (:data:`strategic_arena.problems.SCHEMAS`).
        count: how many arithmetic problems are generated (no file only).
        problem_seed: the seed of the generated set (no file only).
    """

    agents: int = 3
    turns: int = 3
    problems: str = ""
    schema: str = "gsm8k"
    count: int = 1000
    problem_seed: int = 0

    def __post_init__(self) -> None:
        for name in ("agents", "turns", "count", "problem_seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"debate parameter {name} must be an integer, got {value!r}")
        if self.agents < 1 or self.turns < 1 or self.count < 1:
            raise ValueError("a debate needs at least 1 agent, 1 turn and 1 problem")
        if self.problem_seed < 0:
            raise ValueError(f"problem_seed must be >= 0, got {self.problem_seed}")
        if not isinstance(self.problems, str) or not isinstance(self.schema, str):
            raise ValueError("debate parameters problems and schema must be texts")
        if any(char in self.problems for char in ",()="):
            # The path is part of the env id, whose parameters these characters delimit.
            raise ValueError(
                f"a debate's problems path may not contain , ( ) or =: {self.problems!r}"
            )

    @classmethod
    def of(cls, params: Mapping[str, int | float | bool | str]) -> DebateOptions:
        """The options of an id's parameters (an unknown name is a ``ValueError``)."""
        known = {field.name for field in fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            names = ", ".join(sorted(known))
            raise ValueError(f"unknown debate parameter(s) {', '.join(unknown)}; known: {names}")
        return cls(**params)  # type: ignore[arg-type]

    @property
    def env_id(self) -> str:
        """``debate-v0``, with the parameters that differ from the defaults (sorted)."""
        default = DebateOptions()
        changed = {
            field.name: getattr(self, field.name)
            for field in fields(self)
            if getattr(self, field.name) != getattr(default, field.name)
        }
        if not changed:
            return DEBATE_ID
        return f"{DEBATE_ID}({','.join(f'{k}={v}' for k, v in sorted(changed.items()))})"


@functools.lru_cache(maxsize=16)
def debate_problems(options: DebateOptions) -> tuple[Problem, ...]:
    """The problems of a debate: its file's, or the generated arithmetic set (read once)."""
    if options.problems:
        return tuple(load_problems(options.problems, options.schema))
    return tuple(generate_arithmetic(options.count, options.problem_seed))


# -- scoring ------------------------------------------------------------------------------------


def answer_of(problem: Problem, solution: str) -> str | None:
    r"""The final answer of ``solution``: its last ``\boxed{}`` (the letter, in multiple choice)."""
    if problem.multiple_choice:
        return extract_choice(solution, len(problem.choices))
    return extract_boxed(solution)


def same_answer(problem: Problem, first: str, second: str) -> bool:
    """Whether two agents' answers are the same answer (one vote option in the majority)."""
    if problem.multiple_choice:
        return first == second
    return first == second or answers_equal(first, second)


def majority_score(
    answers: Sequence[str | None],
    correct: Sequence[bool],
    same: Callable[[str, str], bool] = str.__eq__,
) -> float:
    """The score of one turn's majority vote (MAPoRL section 4.2).

    Args:
        answers: each agent's final answer; ``None`` for no answer (such agents vote together
            for "no answer", which is wrong).
        correct: whether each agent's answer is right.
        same: whether two answers are the same option of the vote.

    Returns:
        The correctness of the answer with the most votes; when several tie, the share of the
        tied answers that are right (the expected correctness of picking one of them). 0.0 when
        no agent voted.
    """
    if len(answers) != len(correct):
        raise ValueError(f"{len(answers)} answers but {len(correct)} correctness flags")
    options: list[tuple[str | None, bool, int]] = []  # (answer, right, votes)
    for answer, right in zip(answers, correct, strict=True):
        for index, (option, option_right, votes) in enumerate(options):
            if (option is None and answer is None) or (
                option is not None and answer is not None and same(option, answer)
            ):
                options[index] = (option, option_right, votes + 1)
                break
        else:
            options.append((answer, bool(right) and answer is not None, 1))
    if not options:
        return 0.0
    most = max(votes for _, _, votes in options)
    tied = [right for _, right, votes in options if votes == most]
    return sum(tied) / len(tied)


# -- the game -----------------------------------------------------------------------------------


class DebateGame(TextMovesGame):
    """A debate's setting seen through OpenSpiel's ``Game`` interface."""

    def __init__(self, spec: DebateSpec) -> None:
        self.spec = spec

    def num_players(self) -> int:
        """Number of agents."""
        return self.spec.options.agents

    def get_type(self) -> TextArenaGameType:
        """Imperfect information (nobody sees the gold answer), simultaneous turns.

        The seed draws the problem (a sampled chance event): paired seatings of the arena get
        the same problem, as they get the same deal in a card game.
        """
        return TextArenaGameType(
            "debate",
            "MAPoRL collaborative debate",
            dynamics=pyspiel.GameType.Dynamics.SIMULTANEOUS,
        )

    def new_initial_state(self) -> DebateState:
        """A debate not started: :meth:`DebateState.start` draws its problem from a seed."""
        return DebateState(self.spec)


class DebateState(TextMovesState):
    """One debate in progress, through OpenSpiel's ``State`` interface (simultaneous turns).

    ``start(seed)`` draws the problem; ``apply_actions(solutions)`` plays one turn (a solution
    per agent, in seat order). :meth:`clone` is a copy for a player: the question and the
    answers, never the gold answer nor the scores.
    """

    def __init__(self, spec: DebateSpec) -> None:
        self.spec = spec
        self._problem: Problem | None = None  # None in a player's copy, or before start
        self._question = ""
        self._started = False
        #: The solutions of every finished turn, ``[turn][seat]``.
        self._solutions: list[tuple[str, ...]] = []
        #: Each finished turn's answers, correctness and majority score (the env's state only).
        self._answers: list[tuple[str | None, ...]] = []
        self._correct: list[tuple[bool, ...]] = []
        self._scores: list[float] = []

    # -- playing ------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether :meth:`start` has drawn the problem (a player's copy counts as started)."""
        return self._started

    def start(self, seed: int) -> None:
        """Draw the problem of seed ``seed``: ``problems[seed % len(problems)]``."""
        problems = debate_problems(self.spec.options)
        self._problem = problems[seed % len(problems)]
        self._question = question_text(self._problem)
        self._started = True

    def apply_actions(self, solutions: Sequence[str]) -> None:
        """Play one turn: every agent's solution, in seat order."""
        if self._problem is None:
            raise ValueError("a player's copy of a debate (or one not started) cannot be played")
        if self.is_terminal():
            raise ValueError("the debate is over")
        if len(solutions) != self.spec.num_players or not all(
            isinstance(text, str) for text in solutions
        ):
            raise ValueError(f"a turn takes one solution text per agent ({self.spec.num_players})")
        problem = self._problem
        answers = tuple(answer_of(problem, text) for text in solutions)
        correct = tuple(
            answer is not None and check_answer(problem, text)
            for answer, text in zip(answers, solutions, strict=True)
        )
        self._solutions.append(tuple(solutions))
        self._answers.append(answers)
        self._correct.append(correct)
        self._scores.append(
            majority_score(answers, correct, functools.partial(same_answer, problem))
        )

    def apply_action(self, action: object) -> None:
        """Not a sequential game: every agent answers at once (:meth:`apply_actions`)."""
        raise ValueError("every agent answers at once: play a turn with apply_actions")

    # -- what the debate scored ---------------------------------------------------------------

    @property
    def problem(self) -> Problem:
        """The problem (the env's state only; a player's copy has none)."""
        if self._problem is None:
            raise ValueError("a player's copy of a debate holds no problem")
        return self._problem

    @property
    def solutions(self) -> tuple[tuple[str, ...], ...]:
        """Every finished turn's solutions, ``[turn][seat]``."""
        return tuple(self._solutions)

    @property
    def answers(self) -> tuple[tuple[str | None, ...], ...]:
        """Every finished turn's final answers, ``[turn][seat]`` (``None``: no answer)."""
        return tuple(self._answers)

    @property
    def correct(self) -> tuple[tuple[bool, ...], ...]:
        """Whether each answer of each finished turn is right, ``[turn][seat]``."""
        return tuple(self._correct)

    @property
    def turn_scores(self) -> tuple[float, ...]:
        """The majority vote's score of every finished turn (accuracy per turn, Table 7)."""
        return tuple(self._scores)

    # -- OpenSpiel's State interface ----------------------------------------------------------

    def num_players(self) -> int:
        """Number of agents."""
        return self.spec.num_players

    @property
    def turn(self) -> int:
        """The 0-based turn being played (``turns`` once the debate is over)."""
        return len(self._solutions)

    def current_player(self) -> int:
        """OpenSpiel's id of a simultaneous turn, or of the end."""
        return _TERMINAL if self.is_terminal() else _SIMULTANEOUS

    def is_terminal(self) -> bool:
        """Whether every turn has been played."""
        return self.turn >= self.spec.options.turns

    def is_simultaneous_node(self) -> bool:
        """Every agent answers at once at every turn."""
        return not self.is_terminal()

    def returns(self) -> list[float]:
        """The last turn's majority score for every agent at the end; 0 before."""
        final = self._scores[-1] if self.is_terminal() and self._scores else 0.0
        return [final] * self.spec.num_players

    def rewards(self) -> list[float]:
        """The debate pays at the end only."""
        return self.returns()

    def observation_string(self, player: int) -> str:
        """What agent ``player`` sees: the question and every earlier answer."""
        return self.spec.render_view(self, player)

    def information_state_string(self, player: int) -> str:
        """An agent knows what it sees."""
        return self.observation_string(player)

    def clone(self) -> DebateState:
        """A copy for a player: the question and the solutions; no gold answer, no scores."""
        copy_ = DebateState(self.spec)
        copy_._question = self._question
        copy_._started = self._started
        copy_._solutions = list(self._solutions)
        return copy_

    def __str__(self) -> str:
        lines = [f"{self.spec.env_id}: {self._question}"]
        if self._problem is not None:
            lines.append(f"gold answer: {self._problem.answer} (problem {self._problem.id})")
        for turn, solutions in enumerate(self._solutions):
            for seat, text in enumerate(solutions):
                mark = ""
                if turn < len(self._answers):
                    answer = self._answers[turn][seat]
                    right = "right" if self._correct[turn][seat] else "wrong"
                    mark = f" -> {answer if answer is not None else '(no answer)'} ({right})"
                lines.append(f"turn {turn + 1} agent {seat + 1}{mark}: {text}")
            if turn < len(self._scores):
                lines.append(f"turn {turn + 1} majority score: {self._scores[turn]:g}")
        if self.is_terminal():
            lines.append(f"returns: {self.returns()}")
        return "\n".join(lines)


def question_text(problem: Problem) -> str:
    """The question as the agents read it: the statement, then its lettered choices, if any."""
    return problem.with_choices("{letter}. {text}", "\n")


class DebateSpec(GameSpec):
    """The debate of :class:`DebateOptions` as a free-text, cooperative, simultaneous game."""

    rules_engine = "strategic-arena (MAPoRL's collaborative debate)"
    move_kind = "text"
    #: A solution is a whole worked answer, not a short move.
    max_move_chars = 20_000
    public_moves = False
    cooperative = True
    optimum = 1.0
    worst = 0.0
    tensor_bounds = (0.0, 1.0)
    openspiel_name = ""
    openspiel_params: Mapping[str, int | float | bool | str] = {}
    prompt_dir = "debate"
    title = "a collaborative debate"
    #: Every response is the agent's solution, whatever its form: a malformed one (no box) is
    #: a wrong answer in the vote, not a forfeit (see :attr:`GameSpec.move_is_response`).
    move_is_response = True
    listing = Listing(
        opponents=("random",),
        no_solver=(
            "no built-in solver writes solutions to reasoning problems; evaluate a model with "
            "--base-url (every seat, or several models with --opponents model:...)"
        ),
        default_opponents=(),
        ladder_games=None,
    )

    def __init__(self, options: DebateOptions) -> None:
        self.options = options
        self.env_id = options.env_id
        self.grammar = FreeTextGrammar()
        self.sample_moves = tuple(
            f"I work it out step by step. The answer is \\boxed{{{n}}}." for n in range(10)
        )
        self._tags = role_tags([self.agent_name(seat) for seat in range(options.agents)])

    @functools.cached_property
    def game(self) -> Any:  # noqa: D102 - documented on GameSpec
        return DebateGame(self)

    @property
    def num_players(self) -> int:
        """Number of agents."""
        return self.options.agents

    @property
    def rules_source(self) -> str:
        """The debate and its problems."""
        options = self.options
        problems = (
            f"{options.problems} ({options.schema})"
            if options.problems
            else f"generated arithmetic (count={options.count}, seed={options.problem_seed})"
        )
        return (
            f"MAPoRL's collaborative debate: {options.agents} agents, {options.turns} turns, "
            f"problems {problems}"
        )

    @property
    def reward_range(self) -> tuple[float, float]:
        """The majority's score: 0 (wrong) to 1 (right)."""
        return 0.0, 1.0

    def agent_name(self, seat: int) -> str:
        """``Agent 1``, ``Agent 2``... (seats count from 0, agents from 1)."""
        return f"Agent {seat + 1}"

    def player_name(self, player: int) -> str:
        """The agent's name."""
        return self.agent_name(player)

    def role(self, player: int) -> str:
        """``Agent 2 of 3``."""
        return f"{self.agent_name(player)} of {self.options.agents}"

    def observation_text(self, state: pyspiel.State, player: int) -> str:
        """What the agent sees (:meth:`render_view`)."""
        return str(state.observation_string(player))

    def example_action(self, seat: int) -> str:
        """The example answer of the prompts' format section."""
        return "42"

    def render_view(self, state: DebateState, player: int) -> str:
        """The question, the turn and every agent's earlier answers, as ``player`` sees them."""
        options = self.options
        lines = [
            f"You are {self.agent_name(player)}, one of {options.agents} agents solving this "
            "problem together.",
            "",
            f"Question: {state._question}",
            "",
        ]
        if state.is_terminal():
            lines.append("The debate is over.")
        else:
            lines.append(f"This is turn {state.turn + 1} of {options.turns}.")
        if not state._solutions:
            lines.append("Answer the question on your own.")
            return "\n".join(lines)
        lines += [
            "",
            "The agents' answers so far, each on one line after its agent's tag (line breaks "
            "shown as \u23ce):",
        ]
        for turn, solutions in enumerate(state._solutions):
            lines.append(f"Turn {turn + 1}:")
            for seat, text in enumerate(solutions):
                who = self.agent_name(seat) + (" (you)" if seat == player else "")
                lines.append(f"[{who}] {quote(text, self._tags)}")
        if not state.is_terminal():
            lines += [
                "",
                "Consider your earlier answer and the other agents' answers; if you believe an "
                "answer was wrong, revise it. Give your own solution to the question again.",
            ]
        return "\n".join(lines)


@functools.lru_cache(maxsize=64)
def _debate_spec(options: DebateOptions) -> DebateSpec:
    return DebateSpec(options)


def debate_spec(params: Mapping[str, int | float | bool | str] | None = None) -> DebateSpec:
    """The debate spec of an id's parameters (``{}`` or ``None``: ``debate-v0``'s defaults).

    Raises:
        ValueError: an unknown parameter or a bad value.
    """
    options = DebateOptions.of(dict(params or {}))
    spec = _debate_spec(options)
    debate_problems(options)  # a missing or unreadable problems file fails here, clearly
    return spec
