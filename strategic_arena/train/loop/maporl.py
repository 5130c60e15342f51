"""MAPoRL's score stage for debate games: verifier scores -> rewards per answer, accuracy per turn.

After the ``rewards`` section has scored a step's games, :class:`DebateScorer` rescores the
turns of every debate game (:mod:`strategic_arena.games.debate`) when the config has a
``maporl`` section (:class:`~strategic_arena.train.config.maporl.MaporlConfig`):

1. the game's problem is the one its seed picked (``problems[seed % len(problems)]``); the
   answers are each seat's turns in order (``solutions[t][i]``: agent i's answer at turn t);
2. the verifier scores every answer, -10 where a penalty applies (an answer cut off by the
   token budget did not end by itself) (:func:`strategic_arena.rl.verifiers.score_debate`);
3. the reward form and the incentives turn the scores and each answer's correctness into each
   answer's reward (:func:`strategic_arena.rl.maporl.debate_rewards`), which becomes the
   turn's reward (every turn eligible).

It also reports the majority's accuracy at each turn (``debate/accuracy_turn_<t>``, the
quantity of MAPoRL's Table 7) and each agent's accuracy (``debate/agent_accuracy``). Games
of other envs are left as the rewards section scored them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from strategic_arena.games import get_spec
from strategic_arena.games.debate import (
    DebateSpec,
    answer_of,
    debate_problems,
    majority_score,
    same_answer,
)
from strategic_arena.problems import Problem, check_answer
from strategic_arena.rl.episode import Episode
from strategic_arena.rl.maporl import INCENTIVE_ABLATIONS, DebateRewardConfig, debate_rewards
from strategic_arena.rl.penalties import MAPORL_PENALTIES
from strategic_arena.rl.verifiers import Verifier, make_verifier, score_debate
from strategic_arena.train.config.maporl import MaporlConfig


def debate_problem(spec: DebateSpec, seed: int) -> Problem:
    """The problem a debate game of ``seed`` plays."""
    problems = debate_problems(spec.options)
    return problems[seed % len(problems)]


def turn_accuracies(problem: Problem, solutions: Sequence[Sequence[str]]) -> list[float]:
    """The majority vote's score at each turn (the tie rule of the debate)."""
    scores = []
    for row in solutions:
        answers = [answer_of(problem, text) for text in row]
        correct = [check_answer(problem, text) for text in row]
        same = lambda a, b: same_answer(problem, a, b)  # noqa: E731 - the vote's equality
        scores.append(majority_score(answers, correct, same))
    return scores


class DebateScorer:
    """Rescores debate games with MAPoRL's rewards (see the module docstring).

    Args:
        config: the ``maporl`` section.
        verifier: a verifier to use instead of building ``config.verifier`` (tests).
    """

    def __init__(self, config: MaporlConfig, verifier: Verifier | None = None) -> None:
        self.config = config
        self.verifier = verifier or make_verifier(config.verifier, **config.verifier_options)
        self.rewards = DebateRewardConfig(
            form=config.form,
            gamma=config.gamma,
            normalize=config.normalize,
            incentives=INCENTIVE_ABLATIONS[config.incentives],
        )

    def score(self, episodes: Sequence[Episode]) -> dict[str, float]:
        """Set the reward of every debate turn; returns the ``debate/`` metrics."""
        accuracies: dict[int, list[float]] = defaultdict(list)
        agents: list[float] = []
        for episode in episodes:
            spec = get_spec(episode.env_id)
            if not isinstance(spec, DebateSpec):
                continue
            seats = range(episode.num_seats)
            by_seat = [episode.trajectory(seat) for seat in seats]
            turns = min(len(trajectory) for trajectory in by_seat)
            if turns == 0 or any(len(trajectory) != turns for trajectory in by_seat):
                continue  # a debate missing answers (a seat not trained): nothing to score
            problem = debate_problem(spec, episode.seed)
            solutions = [[by_seat[i][t].text for i in seats] for t in range(turns)]
            ended = [[by_seat[i][t].error_kind != "truncated" for i in seats] for t in range(turns)]
            penalty = MAPORL_PENALTIES if self.config.penalties else None
            scores = score_debate(problem, solutions, self.verifier, ended=ended, penalty=penalty)
            correct = [[check_answer(problem, text) for text in row] for row in solutions]
            per_turn = turn_accuracies(problem, solutions)
            rewards = debate_rewards(scores, correct, self.rewards, final=per_turn[-1])
            for t in range(turns):
                for i in seats:
                    turn = by_seat[i][t]
                    turn.reward, turn.eligible = float(rewards[t][i]), True
            for t, value in enumerate(per_turn):
                accuracies[t + 1].append(value)
            agents += [float(c) for row in correct for c in row]
        metrics = {f"debate/accuracy_turn_{t}": float(np.mean(v)) for t, v in accuracies.items()}
        if agents:
            metrics["debate/agent_accuracy"] = float(np.mean(agents))
        return metrics
