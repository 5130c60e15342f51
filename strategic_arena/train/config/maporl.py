"""The ``maporl`` section: MAPoRL's rewards for debate games (verifier, reward form, incentives).

``maporl: null`` (the default) leaves a debate's turns to the ``rewards`` section (the game's
return, the last turn's majority score, paid at each seat's last turn). A mapping scores every
debate answer as MAPoRL does (:mod:`strategic_arena.train.loop.maporl`): a verifier's score (with
the paper's -10 penalties), turned into rewards by a reward form (``influence``: Definition 1)
plus the incentives of Tables 1 and 2, named by their ablation::

    maporl: {verifier: exact, form: influence, gamma: 0.3, incentives: persuasion}

The names come from :mod:`strategic_arena.rl.maporl` (forms, incentive sets) and
:mod:`strategic_arena.rl.verifiers` (verifiers).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class MaporlConfig:
    """How debate answers are rewarded in training (MAPoRL's score stage)."""

    verifier: str = "exact"
    """The verifier scoring each answer in [0, 1]: ``exact`` (the final answer equals the gold
    one: 1, else 0; the CPU default) or ``learned`` (MAPoRL's verifier head, with
    ``verifier_options: {path: ...}``)."""
    verifier_options: dict[str, str] = field(default_factory=dict)
    """Keyword options of the verifier (``learned``: ``path`` of its saved files)."""
    penalties: bool = True
    """Apply the paper's -10 score to an answer with no box, no end of sequence, tokens after
    the box, or repetition."""
    form: str = "influence"
    """The reward form: ``influence`` (own score plus the discounted mean of every agent's
    later scores: MAPoRL's Definition 1), ``immediate``, ``cumulative`` or ``outcome`` (the
    final majority's correctness at the last turn only: the no-verifier ablation)."""
    gamma: float = 0.3
    """Discount of the cumulative and influence forms (MAPoRL's released configs: 0.3; the
    paper does not state it)."""
    normalize: bool = False
    """Divide the discounted forms by their discount sum (MAPoRL's released code)."""
    incentives: str = "baseline"
    """The incentive parameters of Tables 1 and 2, by ablation name: ``baseline`` (all 0),
    ``critical_reasoning``, ``persuadability``, ``useful_wrong_answers`` or ``persuasion``
    (that one raised to 2)."""

    def problems(self) -> list[str]:
        """Unknown names, a discount outside [0, 1]."""
        from strategic_arena.rl.maporl import INCENTIVE_ABLATIONS, REWARD_FORMS
        from strategic_arena.rl.verifiers import VERIFIERS

        problems = []
        for key, value, known in (
            ("verifier", self.verifier, VERIFIERS),
            ("form", self.form, REWARD_FORMS),
            ("incentives", self.incentives, INCENTIVE_ABLATIONS),
        ):
            if value not in known:
                problems.append(f"maporl.{key}: unknown {value!r}; use one of {', '.join(known)}")
        if not 0.0 <= self.gamma <= 1.0:
            problems.append(f"maporl.gamma must lie in [0, 1], got {self.gamma}")
        return problems
