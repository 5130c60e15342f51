r"""MAPoRL's rewards for a debate: verifier scores per turn -> each agent's reward per turn.

A debate of N agents and T turns (:mod:`strategic_arena.games.debate`) gives every answer a
verifier score ``s[t][i]`` (turn t, agent i; :mod:`strategic_arena.rl.verifiers`, with the
paper's -10 penalties of :mod:`strategic_arena.rl.penalties`). A *reward form* turns the scores
into each answer's reward ``r[t][i]`` (Definition 1 and Appendix F of MAPoRL), and the
*incentives* of Tables 1 and 2 add a bonus for revisions and influence. Everything here is pure
arithmetic on nested lists (checkable by hand; ``tests/rl/test_maporl.py`` does).

**Reward forms** (:data:`REWARD_FORMS`, a registry; ``gamma`` is the discount):

=============  ==================================================================================
name           ``r[t][i]``
=============  ==================================================================================
immediate      ``s[t][i]``: the answer's own score (Appendix F, immediate verification reward)
cumulative     ``sum_{t'=t}^{T-1} gamma^(t'-t) s[t'][i]``: the agent's own later scores,
               discounted (Appendix F, equation 1)
influence      ``s[t][i] + sum_{t'=t+1}^{T-1} gamma^(t'-t) mean_j s[t'][j]``: its own score and
               the discounted mean of *all* agents' later scores (Definition 1: an answer is
               credited with the answers it influenced)
outcome        ``score of the last turn's majority`` at the last turn, 0 before: the ablation
               without a verifier (Table 7, "w/o verifier": a reward of 1 if the final answer is
               right, 0 otherwise, nothing at intermediate turns)
=============  ==================================================================================

With ``normalize`` the discounted forms are divided by ``sum_{t'=t}^{T-1} gamma^(t'-t)``, as
MAPoRL's released code does (the paper's formulas do not divide).

**Incentives** (Tables 1 and 2; :class:`Incentives`). An answer is right (R) or wrong (W); the
*majority* of the other agents at a turn is R when more than half of them are right, W when
more than half are wrong, and neither on an exact half (no incentive then), as the released
code reads it (the other agents, excluding the one rewarded):

* own revision (Table 1), paid at the revised answer's turn ``t+1``: agent i was W at ``t`` and
  is R at ``t+1``. With the majority W at ``t``: ``critical_reasoning`` (it found the right
  answer although most were wrong); with the majority R at ``t``: ``persuadability`` (it took the
  right answer from the others). R -> W rows pay nothing.
* influence (Table 2), paid at the influencing answer's turn ``t``: the majority of the others
  was W at ``t`` and is R at ``t+1``. With agent i W at ``t``: ``useful_wrong_answers`` (a wrong
  answer that still helped); with agent i R at ``t``: ``persuasion`` (a right answer that
  persuaded). Majority R -> W rows pay nothing.

All four are 0 by default (the baseline of Tables 3 and 4); the ablations raise one of them to 2
(:data:`INCENTIVE_ABLATIONS`). ``penalize_reversals`` also subtracts each amount on the reverse
transition (R -> W with the same majority; majority R -> W with the same own answer), as the
released code does; the paper's tables show no incentive there, so it is off by default.

:func:`debate_rewards` is the whole score stage of one debate: form plus incentives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "INCENTIVE_ABLATIONS",
    "REWARD_FORMS",
    "DebateRewardConfig",
    "Incentives",
    "RewardForm",
    "cumulative_rewards",
    "debate_rewards",
    "immediate_rewards",
    "incentive_bonus",
    "influence_rewards",
    "majority_of_others",
    "outcome_rewards",
    "register_form",
    "reward_form",
]

Scores = Sequence[Sequence[float]]
"""``scores[t][i]``: the verifier score of agent i's answer at turn t."""
Rewards = list[list[float]]
"""``rewards[t][i]``: agent i's reward for its answer at turn t."""
#: A reward form: ``(scores, gamma, normalize, *, final) -> rewards`` (``final``: the last
#: turn's majority score, which only ``outcome`` reads).
FormFunction = Callable[..., Rewards]


def _check(scores: Scores) -> tuple[int, int]:
    """``(T, N)`` of a rectangular table, else ``ValueError``."""
    turns = len(scores)
    agents = len(scores[0]) if turns else 0
    if turns == 0 or agents == 0 or any(len(row) != agents for row in scores):
        raise ValueError("scores must be a non-empty table: one row per turn, one entry per agent")
    return turns, agents


def _discount_sum(gamma: float, start: int, turns: int) -> float:
    """``sum_{t'=start}^{turns-1} gamma^(t'-start)``."""
    return sum(gamma**k for k in range(turns - start))


def immediate_rewards(
    scores: Scores, gamma: float = 1.0, normalize: bool = False, *, final: float = 0.0
) -> Rewards:
    """``r[t][i] = s[t][i]`` (``gamma``, ``normalize`` and ``final`` do not apply)."""
    _check(scores)
    return [[float(s) for s in row] for row in scores]


def _discounted(
    scores: Scores, gamma: float, normalize: bool, term: Callable[[int, int, int], float]
) -> Rewards:
    """``r[t][i] = sum_{t'>=t} gamma^(t'-t) term(t, t', i)`` (over the discount sum if asked)."""
    turns, agents = _check(scores)
    rewards = []
    for t in range(turns):
        scale = _discount_sum(gamma, t, turns) if normalize else 1.0
        rewards.append(
            [
                sum(gamma ** (u - t) * term(t, u, i) for u in range(t, turns)) / scale
                for i in range(agents)
            ]
        )
    return rewards


def cumulative_rewards(
    scores: Scores, gamma: float = 1.0, normalize: bool = False, *, final: float = 0.0
) -> Rewards:
    """``r[t][i] = sum_{t'>=t} gamma^(t'-t) s[t'][i]`` (divided by the discount sum if asked)."""
    return _discounted(scores, gamma, normalize, lambda t, u, i: float(scores[u][i]))


def influence_rewards(
    scores: Scores, gamma: float = 1.0, normalize: bool = False, *, final: float = 0.0
) -> Rewards:
    """``r[t][i] = s[t][i] + sum_{t'>t} gamma^(t'-t) mean_j s[t'][j]`` (Definition 1)."""
    _check(scores)
    means = [sum(float(s) for s in row) / len(row) for row in scores]
    return _discounted(
        scores,
        gamma,
        normalize,
        lambda t, u, i: float(scores[t][i]) if u == t else means[u],
    )


def outcome_rewards(
    scores: Scores, gamma: float = 1.0, normalize: bool = False, *, final: float = 0.0
) -> Rewards:
    """The last turn's majority score ``final`` at the last turn, 0 before (no verifier)."""
    turns, agents = _check(scores)
    return [[float(final) if t == turns - 1 else 0.0 for _ in range(agents)] for t in range(turns)]


@dataclass(frozen=True)
class RewardForm:
    """One reward form of the registry: its name, what it is, and its function."""

    name: str
    description: str
    rewards: FormFunction


#: The reward forms by name (``rewards.form`` in a config); :func:`register_form` adds one.
REWARD_FORMS: dict[str, RewardForm] = {}


def register_form(form: RewardForm) -> RewardForm:
    """Add ``form`` to :data:`REWARD_FORMS` (a name already taken is an error)."""
    if form.name in REWARD_FORMS:
        raise ValueError(f"a debate reward form named {form.name!r} is already registered")
    REWARD_FORMS[form.name] = form
    return form


def reward_form(name: str) -> RewardForm:
    """The registered form ``name`` (a clear ``ValueError`` names the others)."""
    found = REWARD_FORMS.get(name)
    if found is None:
        raise ValueError(
            f"unknown debate reward form {name!r}; choose one of {', '.join(REWARD_FORMS)}"
        )
    return found


for _form in (
    RewardForm("immediate", "the answer's own verifier score", immediate_rewards),
    RewardForm("cumulative", "the agent's own discounted later scores", cumulative_rewards),
    RewardForm(
        "influence",
        "own score plus the discounted mean of all agents' later scores (Definition 1)",
        influence_rewards,
    ),
    RewardForm("outcome", "the final majority's score at the last turn only", outcome_rewards),
):
    register_form(_form)


@dataclass(frozen=True)
class Incentives:
    """The four incentive parameters of MAPoRL's Tables 1 and 2 (module docstring).

    Attributes:
        critical_reasoning: own revision W -> R while the other agents' majority was W.
        persuadability: own revision W -> R while the other agents' majority was R.
        useful_wrong_answers: the others' majority W -> R after the agent's W answer.
        persuasion: the others' majority W -> R after the agent's R answer.
        penalize_reversals: also subtract each amount on the reverse transition (the released
            code's reading; the paper's tables pay nothing there).
    """

    critical_reasoning: float = 0.0
    persuadability: float = 0.0
    useful_wrong_answers: float = 0.0
    persuasion: float = 0.0
    penalize_reversals: bool = False


#: The ablations of section 4.4: the baseline, and each parameter raised to 2 alone.
INCENTIVE_ABLATIONS: Mapping[str, Incentives] = {
    "baseline": Incentives(),
    "critical_reasoning": Incentives(critical_reasoning=2.0),
    "persuadability": Incentives(persuadability=2.0),
    "useful_wrong_answers": Incentives(useful_wrong_answers=2.0),
    "persuasion": Incentives(persuasion=2.0),
}


def majority_of_others(correct: Sequence[bool], agent: int) -> bool | None:
    """Whether the other agents' majority is right (``True``), wrong (``False``), or neither.

    ``None`` on an exact half, or when there is no other agent.
    """
    others = [bool(c) for i, c in enumerate(correct) if i != agent]
    right = sum(others)
    if not others or 2 * right == len(others):
        return None
    return 2 * right > len(others)


def incentive_bonus(correct: Sequence[Sequence[bool]], incentives: Incentives) -> Rewards:
    """The incentive bonus of every answer, ``bonus[t][i]``, from each answer's correctness."""
    turns = len(correct)
    agents = len(correct[0]) if turns else 0
    if turns == 0 or agents == 0 or any(len(row) != agents for row in correct):
        raise ValueError("correct must be a non-empty table: one row per turn, one per agent")
    sign = -1.0 if incentives.penalize_reversals else 0.0
    bonus = [[0.0] * agents for _ in range(turns)]
    for t in range(turns - 1):
        for i in range(agents):
            before, after = bool(correct[t][i]), bool(correct[t + 1][i])
            majority = majority_of_others(correct[t], i)
            # Table 1, own revision, paid at the revised answer's turn t + 1.
            if majority is not None and before != after:
                amount = incentives.persuadability if majority else incentives.critical_reasoning
                bonus[t + 1][i] += amount if after else sign * amount
            # Table 2, influence on the others, paid at the influencing answer's turn t.
            then, next_ = majority, majority_of_others(correct[t + 1], i)
            if then is not None and next_ is not None and then != next_:
                amount = incentives.persuasion if before else incentives.useful_wrong_answers
                bonus[t][i] += amount if next_ else sign * amount
    return bonus


@dataclass(frozen=True)
class DebateRewardConfig:
    """How a debate's verifier scores become rewards.

    Attributes:
        form: a reward form of :data:`REWARD_FORMS` (``influence``: MAPoRL's Definition 1).
        gamma: the discount of the ``cumulative`` and ``influence`` forms (MAPoRL's released
            configs use 0.3).
        normalize: divide the discounted forms by their discount sum (the released code).
        incentives: the bonuses of Tables 1 and 2 (all 0: none).
    """

    form: str = "influence"
    gamma: float = 0.3
    normalize: bool = False
    incentives: Incentives = field(default_factory=Incentives)

    def __post_init__(self) -> None:
        reward_form(self.form)  # an unknown name fails here, naming the others
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {self.gamma}")


def debate_rewards(
    scores: Scores,
    correct: Sequence[Sequence[bool]],
    config: DebateRewardConfig,
    *,
    final: float = 0.0,
) -> Rewards:
    """Every answer's reward: the configured form of ``scores`` plus the incentive bonus.

    Args:
        scores: ``scores[t][i]``, the verifier score of each answer (penalties applied).
        correct: ``correct[t][i]``, whether each answer is right (keys the incentives).
        config: the form, discount and incentives.
        final: the last turn's majority score (the ``outcome`` form's reward).
    """
    base = reward_form(config.form).rewards(scores, config.gamma, config.normalize, final=final)
    bonus = incentive_bonus(correct, config.incentives)
    return [
        [b + extra for b, extra in zip(row, more, strict=True)]
        for row, more in zip(base, bonus, strict=True)
    ]
