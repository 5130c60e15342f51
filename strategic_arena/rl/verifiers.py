"""Verifiers: a solution to a problem -> a score in [0, 1], as a registry.

MAPoRL rewards each answer of a debate with a verifier's score (:mod:`strategic_arena.rl.maporl`).
Two verifiers are registered:

=========  =========================================================================================
name       verifier
=========  =========================================================================================
exact      the exact-answer check: 1.0 when the solution's final answer is the gold answer
           (:func:`strategic_arena.problems.check_answer`), else 0.0. Needs the gold answer.
learned    MAPoRL's learned verifier: the policy's base model with a linear head and a softmax,
           trained on the policy's own solutions (the ``train`` extra: torch). Reads no gold
           answer. Registered by the trainer, which owns it, when :mod:`strategic_arena.train` is
           imported: this module names nothing above it.
=========  =========================================================================================

A verifier is any object with a ``name`` and ``score_all(items) -> list[float]`` over
``(problem, solution)`` pairs (:class:`Verifier`; batched, since a model scores many solutions
at once). :func:`make_verifier` builds one by name; :func:`register_verifier` adds one (its
factory given as ``module:function``, imported on first use, so the core never imports torch).

:func:`score_debate` turns a debate's solutions into the score table ``scores[t][i]`` that the
reward forms read, with MAPoRL's -10 penalties (:mod:`strategic_arena.rl.penalties`) applied.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from strategic_arena.problems import Problem, check_answer
from strategic_arena.rl.penalties import MAPORL_PENALTIES, PenaltyConfig, penalized, penalties

__all__ = [
    "VERIFIERS",
    "ExactAnswerVerifier",
    "Verifier",
    "make_verifier",
    "register_verifier",
    "score_debate",
]


@runtime_checkable
class Verifier(Protocol):
    """Scores solutions: 1.0 for surely right, 0.0 for surely wrong."""

    name: str

    def score_all(self, items: Sequence[tuple[Problem, str]]) -> list[float]:
        """The score in [0, 1] of each ``(problem, solution)``."""
        ...


class ExactAnswerVerifier:
    """1.0 when the solution's final answer equals the gold answer, else 0.0."""

    name = "exact"

    def score_all(self, items: Sequence[tuple[Problem, str]]) -> list[float]:
        """:func:`~strategic_arena.problems.check_answer` of each solution, as 1.0 or 0.0."""
        return [1.0 if check_answer(problem, solution) else 0.0 for problem, solution in items]


#: Verifier name -> ``module:function`` building it from keyword options (the layers above add
#: theirs with :func:`register_verifier`).
VERIFIERS: dict[str, str] = {
    "exact": "strategic_arena.rl.verifiers:ExactAnswerVerifier",
}


def register_verifier(name: str, factory: str) -> None:
    """Register ``factory`` (``module:function``) as the verifier ``name``."""
    if name in VERIFIERS:
        raise ValueError(f"a verifier named {name!r} is already registered")
    if ":" not in factory:
        raise ValueError(f"a verifier factory is 'module:function', got {factory!r}")
    VERIFIERS[name] = factory


def make_verifier(name: str, **options: Any) -> Verifier:
    """The verifier ``name`` built with ``options`` (``learned``: ``path=`` its saved files).

    Raises:
        ValueError: an unknown name.
        MissingExtraError: the ``learned`` verifier without the ``train`` extra.
    """
    factory = VERIFIERS.get(name)
    if factory is None:
        raise ValueError(
            f"unknown verifier {name!r}; choose one of {', '.join(VERIFIERS)} (the learned "
            "verifier is registered when strategic_arena.train is imported)"
        )
    module, function = factory.split(":")
    verifier: Verifier = getattr(importlib.import_module(module), function)(**options)
    return verifier


def score_debate(
    problem: Problem,
    solutions: Sequence[Sequence[str]],
    verifier: Verifier,
    *,
    ended: Sequence[Sequence[bool]] | None = None,
    penalty: PenaltyConfig | None = MAPORL_PENALTIES,
) -> list[list[float]]:
    """``scores[t][i]``: the verifier's score of each solution, -10 where a penalty applies.

    Args:
        problem: the debate's problem.
        solutions: ``solutions[t][i]``, agent i's solution at turn t.
        verifier: scores the solutions (all at once).
        ended: whether each generation ended by itself (``None``: all did).
        penalty: MAPoRL's penalties (``None``: none).
    """
    flat = [(problem, text) for row in solutions for text in row]
    raw = verifier.score_all(flat)
    scores: list[list[float]] = []
    index = 0
    for t, row in enumerate(solutions):
        scored = []
        for i, text in enumerate(row):
            value = raw[index]
            index += 1
            if penalty is not None:
                finished = True if ended is None else bool(ended[t][i])
                value = penalized(value, penalties(text, ended=finished, config=penalty), penalty)
            scored.append(value)
        scores.append(scored)
    return scores
