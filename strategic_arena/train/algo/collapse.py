"""Collapse detection: a step whose answers all earn the same reward teaches the policy nothing.

Every advantage estimator here centres rewards within a group (MARSHAL's and RAE's per role,
GRPO's and RLOO's per prompt): a group whose returns are all equal gets advantage 0 on every
turn. When that holds for every group of a step, every advantage is 0, the policy-gradient loss
is 0 and so is its gradient (an entropy bonus or KL penalty aside): no reward can move the
policy, so a policy that fell into such a state stays there. The classic case is a collapse
onto one invalid answer (an end-of-sequence token at once: response length 1, every answer
invalid, every reward ``-11``, grad norm 0, step after step), whatever pushed it there (a
learning rate too high, an unlucky update, a reward that cannot tell answers apart).

:func:`signal_metrics` measures a step's learning signal from its trainable turns:

* ``train/zero_advantage_fraction`` -- share of the trainable turns whose advantage is exactly 0;
* ``train/reward_spread`` -- largest minus smallest reward of the trainable turns;
* ``train/no_signal`` -- 1 when the step had no learning signal: no trainable turn, or every
  advantage 0 (then each group's answers all earned the same reward), else 0.

:class:`CollapseDetector` names it. A step without signal (or whose gradient norm is 0) gets
one line: a small batch may have one by chance (eight games whose trainable answers were all
invalid). :data:`COLLAPSE_STEPS` such steps in a row are a *collapse*: a loud warning says what
happened, with the step's reward, invalid rate, response length and grad norm, and the way out
(resume from an earlier checkpoint with a lower learning rate, or an entropy bonus / KL
penalty); each later step of the streak one line. :func:`collapsed_steps` reads the steps
without signal back from ``metrics.jsonl`` and :func:`longest_streak` measures them, for the
run's closing summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from strategic_arena.door import read_json_lines

#: The metric that marks a step without learning signal.
NO_SIGNAL = "train/no_signal"

#: Steps in a row without learning signal that make a collapse.
COLLAPSE_STEPS = 2


def signal_metrics(advantages: Sequence[float], rewards: Sequence[float]) -> dict[str, float]:
    """``train/`` metrics of a step's learning signal (see the module docstring).

    Args:
        advantages: the advantage of each trainable turn.
        rewards: the reward of each trainable turn (same order).
    """
    if not advantages:
        return {"train/zero_advantage_fraction": 1.0, "train/reward_spread": 0.0, NO_SIGNAL: 1.0}
    zero = sum(1 for value in advantages if value == 0.0) / len(advantages)
    return {
        "train/zero_advantage_fraction": zero,
        "train/reward_spread": float(max(rewards) - min(rewards)) if rewards else 0.0,
        NO_SIGNAL: 1.0 if zero == 1.0 else 0.0,
    }


def is_collapsed(metrics: Mapping[str, float]) -> bool:
    """Whether a step's metrics show a collapse: no learning signal, or a zero gradient norm."""
    return metrics.get(NO_SIGNAL, 0.0) == 1.0 or metrics.get("train/grad_norm") == 0.0


class CollapseDetector:
    """Names collapsed steps as they happen (see the module docstring).

    Feed it every step's metrics (:meth:`check`); it returns the warning to print, or ``None``.
    """

    def __init__(self) -> None:
        self.streak = 0  # consecutive steps without signal up to the last one checked
        self.steps: list[int] = []  # every step without signal

    def check(self, step: int, metrics: Mapping[str, float]) -> str | None:
        """The warning for ``step`` (1-based) if it had no learning signal, else ``None``."""
        if not is_collapsed(metrics):
            self.streak = 0
            return None
        self.streak += 1
        self.steps.append(step)
        first = step - self.streak + 1
        if self.streak < COLLAPSE_STEPS:
            return (
                f"no learning signal at step {step}: {_same(metrics)}, so every advantage is 0 "
                "and the step changed nothing"
            )
        if self.streak == COLLAPSE_STEPS:
            return describe(first, step, metrics)
        return (
            f"COLLAPSE: step {step} still has no learning signal ({self.streak} steps in a "
            f"row since step {first})"
        )


def _same(metrics: Mapping[str, float]) -> str:
    """What the answers of a step without signal earned."""
    if metrics.get("train/reward_spread") == 0.0 and "train/reward" in metrics:
        return f"every trainable answer earned the same reward ({metrics['train/reward']:+.3f})"
    return "within every group the answers earned the same reward"


def describe(first: int, step: int, metrics: Mapping[str, float]) -> str:
    """The warning of a collapse: what ``step`` shows, why it stays, what to do."""

    def shown(key: str, fmt: str) -> str:
        return format(metrics[key], fmt) if key in metrics else "?"

    return (
        f"COLLAPSE since step {first}: {step - first + 1} steps in a row without learning "
        f"signal -- at step {step} {_same(metrics)}, so every advantage is 0 (invalid rate "
        f"{shown('train/invalid_rate', '.1%')}, response length "
        f"{shown('train/response_length', '.2f')} tokens, grad norm "
        f"{shown('train/grad_norm', '.3g')}). Nothing in the reward can move the policy out of "
        "this state: stop, and resume from an earlier checkpoint (run.resume=PATH) with a "
        "lower ppo.lr, or a ppo.entropy_coef / ppo.kl_coef that keeps a gradient."
    )


def longest_streak(steps: Sequence[int]) -> tuple[int, int]:
    """The longest run of consecutive steps in ``steps``: (its first step, its length)."""
    best = (0, 0)
    start, length, previous = 0, 0, None
    for step in steps:
        start, length = (start, length + 1) if previous == step - 1 else (step, 1)
        previous = step
        best = max(best, (start, length), key=lambda run: run[1])
    return best


def collapsed_steps(metrics_path: str | Path) -> list[int]:
    """The steps ``metrics.jsonl`` marks as without signal (empty when there is no such file)."""
    path = Path(metrics_path)
    if not path.exists():
        return []
    steps = []
    # a line cut short by a kill is skipped
    for _, record in read_json_lines(path, "checkpoint", finite=False, skip_bad=True):
        if isinstance(record, dict) and is_collapsed(record):
            steps.append(int(record.get("step", 0)))
    return steps
