r"""The papers' metrics over the samples of each problem, with 95% intervals.

Each problem has ``n`` sampled answers, each right or wrong (sample ``j`` is the answer drawn
with the ``j``-th seed). A metric gives each problem a score in [0, 1]; the benchmark's value is
the mean over its problems, with the 95% Student-t half-width over problems
(:func:`strategic_arena.arena.metrics.mean_ci`, the arena's intervals).

* ``pass@k`` -- the unbiased estimator of Chen et al. (2021, "Evaluating Large Language Models
  Trained on Code", eq. 1): with ``c`` right answers among ``n >= k`` samples,
  ``1 - C(n - c, k) / C(n, k)``, the chance that at least one of ``k`` answers drawn without
  replacement is right. ``pass@1`` is then ``c / n``.
* ``avg@k`` -- the mean accuracy of the first ``k`` samples, ``c_k / k`` (SPIRAL's avg@32 on
  AIME and AMC); with ``n == k`` it equals ``pass@1``.

Metrics are small objects parsed from their names (:func:`metric`): a registry of families
(:data:`FAMILIES`), each with its ``k``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["FAMILIES", "Metric", "avg_at_k", "metric", "pass_at_k"]

_NAME = re.compile(r"^([a-z_]+)@([1-9][0-9]*)$")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate from ``c`` right answers among ``n`` samples."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 1 <= k <= n and 0 <= c <= n; got n={n}, c={c}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def avg_at_k(correct: Sequence[bool], k: int) -> float:
    """The accuracy of the first ``k`` samples."""
    if len(correct) < k:
        raise ValueError(f"avg@{k} needs {k} samples; got {len(correct)}")
    return sum(correct[:k]) / k


#: Metric families: name -> the score of one problem's answers (in sample order) at ``k``.
FAMILIES: dict[str, Callable[[Sequence[bool], int], float]] = {
    "pass": lambda correct, k: pass_at_k(len(correct), sum(correct), k),
    "avg": avg_at_k,
}


@dataclass(frozen=True)
class Metric:
    """One metric: its family (``pass``, ``avg``) and its ``k``."""

    family: str
    k: int

    @property
    def name(self) -> str:
        """``pass@1``, ``avg@32``..."""
        return f"{self.family}@{self.k}"

    def problem_score(self, correct: Sequence[bool]) -> float:
        """The score of one problem from its answers, in sample order."""
        return FAMILIES[self.family](correct, self.k)

    def value(self, answers: Sequence[Sequence[bool]]) -> tuple[float, float | None]:
        """The mean over problems and its 95% half-width (``None`` below two problems)."""
        from strategic_arena.arena.metrics import mean_ci  # the arena's intervals (scipy)

        return mean_ci([self.problem_score(correct) for correct in answers])


def metric(name: str) -> Metric:
    """The metric called ``name`` (``pass@1``, ``avg@32``, ``pass@8``)."""
    match = _NAME.match(name)
    if match is None or match.group(1) not in FAMILIES:
        raise ValueError(
            f"unknown metric {name!r}: write FAMILY@K with FAMILY one of "
            f"{', '.join(sorted(FAMILIES))} (e.g. pass@1, avg@32)"
        )
    return Metric(match.group(1), int(match.group(2)))
