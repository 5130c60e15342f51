"""The sequential probability ratio test on game pairs: is one player stronger than another?

Pure statistics, no store and no games: counts of outcomes in, a log-likelihood ratio and a
decision out. :mod:`strategic_arena.arena.sequential` feeds it the stored games of ``eval
--until decided``.

**Outcomes.** A game scores 1 for a win, 1/2 for a draw and 0 for a loss. Two games on the same
deal with the seats swapped are a *pair*, scored by their mean: 0, 1/4, 1/2, 3/4 or 1 (LL, LD,
DD or WL, WD, WW). The counts of those five pair scores are the *pentanomial* results; the counts
of the three game scores (L, D, W) of games that are not paired are the *trinomial* ones. The
pentanomial model is the right one for paired deals: the two games of a pair are correlated
(the same cards, the same seat advantage), and treating them as independent games overstates
the variance, so the test would take more games than it needs.

**Hypotheses.** Expected score ``s`` of the first player against the second. In *logistic Elo*
``s = 1 / (1 + 10 ** (-elo / 400))``; H0 is ``elo = elo0`` and H1 is ``elo = elo1``, so the test
asks "at least ``elo1`` better, or at most ``elo0``?". In *normalized Elo* the hypotheses are on
``t = (s - 1/2) / sigma`` with ``sigma`` the standard deviation of one game's score, and
``nelo = t * 800 / ln 10`` (:data:`NELO_PER_T`): the number of games a test takes then depends
on the Elo difference barely at all on the draw rate.

**The generalized SPRT** (GSPRT; Van den Bergh's pentanomial note,
http://hardy.uhasselt.be/Fishtest/support_MLE_multinomial.pdf, as fishtest's
``stats/LLRcalc.py`` computes it; the sequential test is Wald's, 1945):

1. Regularize: a count that is 0 becomes :data:`EPSILON` (a category never seen keeps a tiny
   probability, so every hypothesis has a finite likelihood); ``N`` is the sum of the counts
   and ``p^_i = n_i / N`` the empirical distribution on the outcome scores ``a_i``.
2. For each hypothesis, the maximum-likelihood distribution ``p`` subject to the hypothesis:

   * expected score ``s`` (logistic Elo): ``p_i = p^_i / (1 + lam * (a_i - s))`` where ``lam``
     is the root of the secular equation ``sum_i p^_i (a_i - s) / (1 + lam (a_i - s)) = 0``
     inside the interval where every denominator is positive (the left side decreases there
     from +inf to -inf, so the root is unique: :func:`_secular_root`);
   * t-value ``t`` (normalized Elo): the Lagrange condition of ``mu - ref - t * sigma = 0`` gives
     the same form with ``a_i - s`` replaced by
     ``u_i = a_i - ref - t * sigma * (1 + ((a_i - mu) / sigma) ** 2) / 2``, where ``mu`` and
     ``sigma`` are those of ``p`` itself: solved by fixed-point iteration from the uniform
     distribution (:func:`mle_with_t`).

3. ``LLR = N * sum_i p^_i * log(p1_i / p0_i)``, the log of the ratio of the two maximized
   likelihoods.
4. Stop when ``LLR >= log((1 - beta) / alpha)`` (accept H1) or ``LLR <= log(beta / (1 - alpha))``
   (accept H0); otherwise play another pair. The test then rejects a true H0 with probability
   at most about ``alpha`` and a true H1 with probability at most about ``beta`` (Wald's bounds;
   ``tests/test_sprt.py`` checks both by simulation).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from strategic_arena.arena.option_defaults import (
    ELO_MODELS,
    SPRT_ALPHA,
    SPRT_BETA,
    SPRT_ELO0,
    SPRT_ELO1,
    SPRT_ELO_MODEL,
)

#: What a zero count becomes before the likelihoods are maximized (fishtest's regularization).
EPSILON = 1e-3

#: Normalized Elo per unit of t-value: ``800 / ln 10`` (about 347.4).
NELO_PER_T = 800 / math.log(10)

#: The decisions of a test: H1 accepted, H0 accepted, or neither yet.
Decision = Literal["H1", "H0"]

#: Iterations of the vectorized root search and of the normalized fixed point (both converge
#: far sooner; the caps only bound the work).
_ROOT_ITERATIONS = 200
_FIXED_POINT_ITERATIONS = 100


def logistic_score(elo: float) -> float:
    """The expected score of a player ``elo`` logistic Elo stronger: ``1/(1 + 10**(-elo/400))``."""
    return float(1.0 / (1.0 + 10.0 ** (-elo / 400.0)))


def logistic_elo(score: float) -> float | None:
    """The logistic Elo difference of an expected ``score`` (``None`` at 0 or 1: infinite)."""
    if not 0.0 < score < 1.0:
        return None
    return -400.0 * math.log10(1.0 / score - 1.0)


def outcome_scores(categories: int) -> NDArray[np.float64]:
    """The scores of the outcome categories: five for pairs (0 to 1 by 1/4), three for games."""
    if categories not in (3, 5):
        raise ValueError(f"counts must have 3 (L, D, W) or 5 (pair) categories, not {categories}")
    return np.linspace(0.0, 1.0, categories)


def regularized(counts: ArrayLike) -> NDArray[np.float64]:
    """``counts`` as floats with every zero replaced by :data:`EPSILON` (step 1).

    Raises:
        ValueError: a negative count.
    """
    array = np.asarray(counts, dtype=float)
    if np.any(array < 0):
        raise ValueError("outcome counts cannot be negative")
    return np.where(array > 0, array, EPSILON)


def _secular_root(phat: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The root ``lam`` of ``sum_i phat_i x_i / (1 + lam x_i) = 0`` along the last axis.

    Needs ``min x < 0 < max x`` in each row and every ``phat_i`` positive. Solved as the root
    other than 0 of the convex ``g(lam) = sum_i phat_i / (1 + lam x_i) - 1`` (``g = -lam`` times
    the secular function, as ``sum_i phat_i = 1``):

    1. The root lies on the side of 0 where the mean ``m = sum_i phat_i x_i`` points (``g'(0) =
       -m``), before the pole ``-1/x_k`` of the extreme ``x_k`` on that side (the smallest when
       ``m > 0``, the largest otherwise); ``m = 0`` is the root 0.
    2. Start at ``lam = (phat_k - 1) / x_k``, where the pole's term alone is 1, so ``g > 0``:
       beyond the root, on the branch where the convex ``g`` climbs to the pole.
    3. Newton's steps from there move monotonically onto the root (a convex function's tangent
       crosses zero between the point and the root), quadratically once near it.
    """
    mean = (phat * x).sum(axis=-1)
    pole = np.where(mean > 0, x.argmin(axis=-1), x.argmax(axis=-1))[..., None]
    x_k = np.take_along_axis(x, pole, axis=-1)[..., 0]
    p_k = np.take_along_axis(phat, pole, axis=-1)[..., 0]
    lam = np.where(mean == 0, 0.0, (p_k - 1.0) / x_k)
    active = np.flatnonzero(mean != 0)
    flat_lam = lam.reshape(-1)
    flat_x = x.reshape(-1, x.shape[-1])
    flat_p = phat.reshape(-1, x.shape[-1])
    for _ in range(_ROOT_ITERATIONS):
        if active.size == 0:
            break
        rows_x, rows_p, rows_lam = flat_x[active], flat_p[active], flat_lam[active]
        denominator = 1.0 + rows_lam[:, None] * rows_x
        value = (rows_p / denominator).sum(axis=-1) - 1.0
        slope = -(rows_p * rows_x / denominator**2).sum(axis=-1)
        step = value / slope
        flat_lam[active] = rows_lam - step
        # Converged when the step moves no denominator by more than rounding.
        moved = np.abs(step[:, None] * rows_x) > 1e-14 * denominator
        active = active[moved.any(axis=-1)]
    return flat_lam.reshape(lam.shape)


def mle_with_mean(phat: ArrayLike, scores: ArrayLike, s: float) -> NDArray[np.float64]:
    """The distribution nearest ``phat`` in likelihood whose expected score is ``s`` (step 2).

    Args:
        phat: empirical distributions (rows sum to 1, every entry positive), shape ``(..., K)``.
        scores: the outcome scores ``a_i``, shape ``(K,)``, with ``min < s < max``.
        s: the hypothesized expected score.
    """
    p = np.asarray(phat, dtype=float)
    x = np.asarray(scores, dtype=float) - s
    x = np.broadcast_to(x, p.shape)
    lam = _secular_root(p, x)
    return p / (1.0 + lam[..., None] * x)


def mle_with_t(phat: ArrayLike, scores: ArrayLike, ref: float, t: float) -> NDArray[np.float64]:
    """The distribution nearest ``phat`` in likelihood with ``(mu - ref) / sigma = t`` (step 2).

    Fixed-point iteration: from the uniform distribution, take ``mu`` and ``sigma`` of the
    current ``p``, solve the secular equation with ``u_i`` of the module docstring, and repeat
    until ``p`` stops moving.
    """
    p_hat = np.asarray(phat, dtype=float)
    a = np.asarray(scores, dtype=float)
    rows = p_hat.reshape(-1, a.size)
    p = np.full(rows.shape, 1.0 / a.size)
    active = np.arange(rows.shape[0])
    for _ in range(_FIXED_POINT_ITERATIONS):
        if active.size == 0:
            break
        current = p[active]
        mu = (current * a).sum(axis=-1, keepdims=True)
        sigma = np.sqrt(np.maximum((current * (a - mu) ** 2).sum(axis=-1, keepdims=True), 1e-300))
        u = a - ref - t * sigma * (1.0 + ((a - mu) / sigma) ** 2) / 2.0
        lam = _secular_root(rows[active], u)
        updated = rows[active] / (1.0 + lam[:, None] * u)
        p[active] = updated
        # Stops at a change rounding cannot undercut (a fixed point to about 1e-11).
        active = active[np.abs(updated - current).max(axis=-1) > 1e-11]
    return p.reshape(p_hat.shape)


def llr(
    counts: ArrayLike, elo0: float, elo1: float, elo_model: str = "logistic"
) -> NDArray[np.float64]:
    """The GSPRT log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``) (steps 1-3).

    Args:
        counts: outcome counts, shape ``(..., 5)`` (pairs: LL, LD, DD+WL, WD, WW) or
            ``(..., 3)`` (games: L, D, W); leading axes are independent tests.
        elo0: H0's Elo difference (of the first player over the second).
        elo1: H1's.
        elo_model: ``logistic`` or ``normalized`` (see the module docstring).

    Returns:
        The LLR of each row (a 0-d array for one test).
    """
    n = regularized(counts)
    scores = outcome_scores(n.shape[-1])
    total = n.sum(axis=-1)
    phat = n / total[..., None]
    if elo_model == "logistic":
        p0, p1 = (mle_with_mean(phat, scores, logistic_score(elo)) for elo in (elo0, elo1))
    elif elo_model == "normalized":
        # t per game; a pair's score is the mean of two games, so its t is sqrt(2) times larger.
        per_outcome = math.sqrt(2.0) if scores.size == 5 else 1.0
        t0, t1 = (per_outcome * elo / NELO_PER_T for elo in (elo0, elo1))
        p0, p1 = (mle_with_t(phat, scores, 0.5, t) for t in (t0, t1))
    else:
        raise ValueError(f"unknown Elo model {elo_model!r}; choose from {', '.join(ELO_MODELS)}")
    result: NDArray[np.float64] = total * (phat * np.log(p1 / p0)).sum(axis=-1)
    return result


@dataclass(frozen=True)
class Sprt:
    """One SPRT's settings: the hypotheses (Elo bounds and model) and the error rates.

    Attributes:
        elo0: H0: the first player is ``elo0`` Elo stronger (usually 0: no stronger).
        elo1: H1: ``elo1`` Elo stronger (above ``elo0``).
        alpha: the largest acceptable probability of accepting H1 when H0 holds.
        beta: the largest acceptable probability of accepting H0 when H1 holds.
        elo_model: ``logistic`` or ``normalized`` (the units of the bounds).
    """

    elo0: float = SPRT_ELO0
    elo1: float = SPRT_ELO1
    alpha: float = SPRT_ALPHA
    beta: float = SPRT_BETA
    elo_model: str = SPRT_ELO_MODEL

    def __post_init__(self) -> None:
        if self.elo_model not in ELO_MODELS:
            raise ValueError(
                f"unknown Elo model {self.elo_model!r}; choose from {', '.join(ELO_MODELS)}"
            )
        if not (math.isfinite(self.elo0) and math.isfinite(self.elo1) and self.elo0 < self.elo1):
            raise ValueError(f"elo0 ({self.elo0:g}) must be below elo1 ({self.elo1:g})")
        for name, value in (("alpha", self.alpha), ("beta", self.beta)):
            if not 0.0 < value < 0.5:
                raise ValueError(f"{name} must be above 0 and below 0.5, not {value:g}")

    @property
    def lower(self) -> float:
        """Accept H0 at or below this LLR: ``log(beta / (1 - alpha))``."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """Accept H1 at or above this LLR: ``log((1 - beta) / alpha)``."""
        return math.log((1.0 - self.beta) / self.alpha)

    def llr(self, counts: ArrayLike) -> NDArray[np.float64]:
        """:func:`llr` of ``counts`` under these hypotheses."""
        return llr(counts, self.elo0, self.elo1, self.elo_model)

    def decision(self, value: float) -> Decision | None:
        """``H1`` or ``H0`` when ``value`` reaches a bound, else ``None`` (step 4)."""
        if value >= self.upper:
            return "H1"
        if value <= self.lower:
            return "H0"
        return None

    def as_dict(self) -> dict[str, float | str]:
        """The settings as stored with a run (JSON-ready)."""
        return asdict(self)


def game_score(mine: float, theirs: float) -> float:
    """One game's score for the first player: 1 above the other's return, 1/2 equal, 0 below."""
    return 1.0 if mine > theirs else 0.5 if mine == theirs else 0.0


def pair_category(first: float, second: float) -> int:
    """The pentanomial category (0: LL ... 4: WW) of a pair of game scores."""
    return round(2 * (first + second))


def first_crossing(
    sprt: Sprt, categories: ArrayLike, *, paired: bool = True
) -> tuple[int | None, NDArray[np.float64]]:
    """Where a sequence of outcomes, checked after each one, first reaches a bound.

    Args:
        sprt: the test.
        categories: each outcome's category in the order played: pentanomial (0: LL ... 4:
            WW) with ``paired``, else trinomial (0: L, 1: D, 2: W).
        paired: whether the outcomes are pairs (the pentanomial model) or single games.

    Returns:
        The number of outcomes the test took to decide (``None``: not decided yet) and the LLR
        after each outcome.
    """
    sequence = np.asarray(categories, dtype=int).reshape(-1)
    if sequence.size == 0:
        return None, np.zeros(0)
    counts = np.cumsum(np.eye(5 if paired else 3, dtype=int)[sequence], axis=0)
    values = np.atleast_1d(sprt.llr(counts))
    crossed = np.flatnonzero((values >= sprt.upper) | (values <= sprt.lower))
    return (int(crossed[0]) + 1 if crossed.size else None), values
