"""The SPRT's statistics: known answers, an independent optimizer, and error rates by simulation.

The simulation plays thousands of sequential tests between two players of known strength, each
pair of games drawn from an exact pentanomial distribution (a model with draws and a seat
advantage that changes sign from deal to deal, so the two games of a pair are correlated as on
paired deals), and checks that a true H0 is rejected at most ``alpha`` of the time and a true
H1 at most ``beta`` of the time, within three standard errors of the simulated rate. It prints
the average sample numbers that docs/arena.md quotes.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import optimize

from strategic_arena.arena.sprt import (
    EPSILON,
    NELO_PER_T,
    Sprt,
    first_crossing,
    game_score,
    llr,
    logistic_elo,
    logistic_score,
    outcome_scores,
    pair_category,
    regularized,
)

#: The simulated players' games: draws and a seat advantage, in score units.
DRAW = 0.2
SEAT_BIAS = 0.15


def game_distribution(score: float) -> NDArray[np.float64]:
    """L, D, W probabilities of one game whose expected score is ``score``, with :data:`DRAW`."""
    probs = np.array([1 - score - DRAW / 2, DRAW, score - DRAW / 2])
    assert (probs >= 0).all()
    return probs


def pair_distribution(score: float) -> NDArray[np.float64]:
    """The exact pentanomial distribution of a pair when the first player's score is ``score``.

    Each deal favours one seat by :data:`SEAT_BIAS` (which seat: a fair coin per deal); the first
    player takes that seat in one game of the pair and the other seat in the other.
    """
    total = np.zeros(5)
    for bias in (SEAT_BIAS, -SEAT_BIAS):
        favoured, other = game_distribution(score + bias), game_distribution(score - bias)
        total += 0.5 * np.convolve(favoured, other)
    return total


def unpaired_distribution(score: float) -> NDArray[np.float64]:
    """L, D, W of one game of the same players in a seat drawn at random: no pair to match."""
    return 0.5 * (game_distribution(score + SEAT_BIAS) + game_distribution(score - SEAT_BIAS))


def score_of_normalized_elo(nelo: float) -> float:
    """The first player's score whose pairs have normalized Elo ``nelo`` (by bisection)."""
    t = nelo / NELO_PER_T
    low, high = 0.35, 0.65
    scores = outcome_scores(5)
    for _ in range(80):
        middle = (low + high) / 2
        p = pair_distribution(middle)
        mu = float(p @ scores)
        per_game_sigma = math.sqrt(2 * float(p @ (scores - mu) ** 2))
        low, high = (middle, high) if (mu - 0.5) / per_game_sigma < t else (low, middle)
    return low


def simulate(
    sprt: Sprt, probs: NDArray[np.float64], runs: int, seed: int, cap: int = 5000
) -> tuple[NDArray[np.str_], NDArray[np.int_]]:
    """``runs`` sequential tests on outcomes drawn from ``probs``: decisions and outcomes taken."""
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(probs)
    counts = np.zeros((runs, probs.size))
    decided = np.full(runs, "-", dtype="<U2")
    taken = np.full(runs, cap)
    active = np.arange(runs)
    for step in range(1, cap + 1):
        drawn = np.searchsorted(cdf, rng.random(active.size), side="right")
        counts[active, np.minimum(drawn, probs.size - 1)] += 1
        values = sprt.llr(counts[active])
        for decision, crossed in (("H1", values >= sprt.upper), ("H0", values <= sprt.lower)):
            decided[active[crossed]] = decision
            taken[active[crossed]] = step
        active = active[decided[active] == "-"]
        if active.size == 0:
            break
    return decided, taken


def within(rate: float, nominal: float, runs: int) -> bool:
    """``rate`` is at most ``nominal`` plus three binomial standard errors of ``runs`` tests."""
    return rate <= nominal + 3 * math.sqrt(nominal * (1 - nominal) / runs)


def test_bounds_are_walds() -> None:
    sprt = Sprt(0, 100, alpha=0.05, beta=0.05)
    assert sprt.lower == pytest.approx(math.log(0.05 / 0.95)) == pytest.approx(-2.944439)
    assert sprt.upper == pytest.approx(math.log(0.95 / 0.05)) == pytest.approx(2.944439)
    lopsided = Sprt(0, 100, alpha=0.01, beta=0.2)
    assert lopsided.lower == pytest.approx(math.log(0.2 / 0.99))
    assert lopsided.upper == pytest.approx(math.log(0.8 / 0.01))
    assert sprt.decision(3.0) == "H1" and sprt.decision(-3.0) == "H0"
    assert sprt.decision(2.9) is None


def test_a_hand_computed_trinomial_llr() -> None:
    """W/D/L = 3/4/3 (mean score 1/2), H0: Elo 0 (s = 1/2), H1: s = 0.6.

    H0's maximum-likelihood distribution is the empirical one (its mean is 1/2 already). Under
    H1, with x = a - 0.6 = (-0.6, -0.1, 0.4) for L, D, W and p^ = (0.3, 0.4, 0.3), the secular
    equation sum p^ x / (1 + lam x) = 0 times its denominators is the quadratic
    0.024 lam^2 - 0.13 lam - 0.1 = 0, whose root in (-1/0.4, 1/0.6) is
    lam = (0.13 - sqrt(0.0265)) / 0.048 = -0.683098...; then p1 = p^ / (1 + lam x) and
    LLR = 10 * sum p^ log(p1 / p^) = -0.337306...
    """
    lam = (0.13 - math.sqrt(0.13**2 + 4 * 0.024 * 0.1)) / (2 * 0.024)
    phat = np.array([0.3, 0.4, 0.3])
    x = np.array([-0.6, -0.1, 0.4])
    p1 = phat / (1 + lam * x)
    assert p1.sum() == pytest.approx(1.0) and p1 @ [0, 0.5, 1] == pytest.approx(0.6)
    expected = 10 * float(phat @ np.log(p1 / phat))
    assert expected == pytest.approx(-0.337306, abs=1e-6)
    elo1 = 400 * math.log10(0.6 / 0.4)
    assert logistic_score(elo1) == pytest.approx(0.6)
    assert float(llr([3, 4, 3], 0.0, elo1)) == pytest.approx(expected, rel=1e-10)
    # Reversing the outcomes and the hypotheses gives the same ratio.
    assert float(llr([3, 4, 3], -elo1, 0.0)) == pytest.approx(-expected, rel=1e-10)


def _constrained_loglik(phat: NDArray[np.float64], scores: NDArray[np.float64], s: float) -> float:
    """max sum phat log p subject to sum p = 1, sum p a = s: a general optimizer, no theory."""
    result = optimize.minimize(
        lambda p: -float(phat @ np.log(p)),
        np.full(phat.size, 1 / phat.size),
        method="SLSQP",
        bounds=[(1e-12, 1.0)] * phat.size,
        constraints=[
            {"type": "eq", "fun": lambda p: p.sum() - 1},
            {"type": "eq", "fun": lambda p: p @ scores - s},
        ],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert result.success
    return -float(result.fun)


def _constrained_loglik_t(
    phat: NDArray[np.float64], scores: NDArray[np.float64], t: float
) -> float:
    """max sum phat log p subject to sum p = 1, (mu - 1/2) / sigma = t: a general optimizer."""

    def t_gap(p: NDArray[np.float64]) -> float:
        mu = p @ scores
        return float(mu - 0.5 - t * math.sqrt(p @ (scores - mu) ** 2))

    result = optimize.minimize(
        lambda p: -float(phat @ np.log(p)),
        phat.copy(),
        method="SLSQP",
        bounds=[(1e-12, 1.0)] * phat.size,
        constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1}, {"type": "eq", "fun": t_gap}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert result.success
    return -float(result.fun)


@pytest.mark.parametrize(
    "counts", [[3, 7, 20, 12, 8], [0, 2, 9, 14, 25], [12, 5, 3, 0, 1], [0, 0, 0, 1, 11]]
)
def test_the_pentanomial_llr_matches_a_general_optimizer(counts: list[int]) -> None:
    """The secular-equation MLE against SLSQP on the same constrained likelihood."""
    n = regularized(counts)
    assert n.min() >= EPSILON
    phat = n / n.sum()
    scores = outcome_scores(5)
    for elo0, elo1 in ((0.0, 100.0), (-30.0, 60.0)):
        expected = n.sum() * (
            _constrained_loglik(phat, scores, logistic_score(elo1))
            - _constrained_loglik(phat, scores, logistic_score(elo0))
        )
        assert float(llr(counts, elo0, elo1)) == pytest.approx(expected, abs=1e-5)
    # Normalized Elo: the pair's t is sqrt(2) times the game's.
    t0, t1 = (math.sqrt(2) * nelo / NELO_PER_T for nelo in (0.0, 80.0))
    expected = n.sum() * (
        _constrained_loglik_t(phat, scores, t1) - _constrained_loglik_t(phat, scores, t0)
    )
    assert float(llr(counts, 0.0, 80.0, "normalized")) == pytest.approx(expected, abs=1e-4)


def test_rows_are_independent_tests() -> None:
    counts = np.array([[3, 7, 20, 12, 8], [0, 0, 0, 2, 10], [1, 1, 1, 1, 1]])
    together = llr(counts, 0, 100)
    assert together.shape == (3,)
    for row, value in zip(counts, together, strict=True):
        assert float(llr(row, 0, 100)) == pytest.approx(float(value))
    # Symmetric outcomes sit halfway between symmetric hypotheses.
    assert float(llr([1, 1, 1, 1, 1], -50, 50)) == pytest.approx(0.0, abs=1e-12)


def test_scores_and_categories() -> None:
    assert game_score(1.0, -1.0) == 1.0 and game_score(0.0, 0.0) == 0.5
    assert game_score(-2.0, 2.0) == 0.0
    assert [pair_category(a, b) for a, b in ((0, 0), (0, 0.5), (1, 0), (0.5, 0.5), (1, 1))] == [
        0,
        1,
        2,
        2,
        4,
    ]
    assert logistic_elo(logistic_score(123.0)) == pytest.approx(123.0)
    assert logistic_elo(1.0) is None and logistic_elo(0.0) is None


def test_first_crossing_checks_after_every_outcome() -> None:
    sprt = Sprt(0, 100)
    # Twelve pairs won twice: the LLR passes log(19) at the twelfth (2.9640 >= 2.9444).
    taken, values = first_crossing(sprt, [4] * 20)
    assert taken == 12
    assert values[10] < sprt.upper <= values[11]
    assert values[11] == pytest.approx(2.96395, abs=1e-4)
    assert first_crossing(sprt, [2, 2, 2])[0] is None
    assert first_crossing(sprt, [])[0] is None
    # Games, not pairs: the trinomial model.
    taken, _ = first_crossing(sprt, [2] * 30, paired=False)
    assert taken is not None and taken < 30


def test_bad_settings_are_one_line_errors() -> None:
    for kwargs, message in (
        ({"elo0": 10, "elo1": 5}, "elo0 (10) must be below elo1 (5)"),
        ({"alpha": 0.0}, "alpha must be above 0 and below 0.5"),
        ({"beta": 0.6}, "beta must be above 0 and below 0.5"),
        ({"elo_model": "bayes"}, "unknown Elo model 'bayes'"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            Sprt(**kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"3 \(L, D, W\) or 5"):
        llr([1, 2, 3, 4], 0, 10)
    with pytest.raises(ValueError, match="negative"):
        llr([1, -2, 3], 0, 10)


@pytest.mark.parametrize(
    ("sprt", "runs"),
    [
        (Sprt(0, 100, alpha=0.05, beta=0.05), 4000),
        (Sprt(0, 50, alpha=0.05, beta=0.1), 2000),
        (Sprt(0, 100, alpha=0.05, beta=0.05, elo_model="normalized"), 1000),
    ],
    ids=["logistic-0-100", "logistic-0-50-beta-0.1", "normalized-0-100"],
)
def test_error_rates_by_simulation(
    sprt: Sprt, runs: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A true H0 is rejected at most alpha, a true H1 at most beta (3 standard errors)."""
    if sprt.elo_model == "logistic":
        at_h0, at_h1 = logistic_score(sprt.elo0), logistic_score(sprt.elo1)
    else:
        at_h0, at_h1 = score_of_normalized_elo(sprt.elo0), score_of_normalized_elo(sprt.elo1)
    decided0, taken0 = simulate(sprt, pair_distribution(at_h0), runs, seed=1)
    decided1, taken1 = simulate(sprt, pair_distribution(at_h1), runs, seed=2)
    false_h1 = float(np.mean(decided0 == "H1"))
    false_h0 = float(np.mean(decided1 == "H0"))
    with capsys.disabled():
        print(
            f"\n{sprt.elo_model} [{sprt.elo0:g}, {sprt.elo1:g}] alpha {sprt.alpha} beta "
            f"{sprt.beta}, {runs} tests each: H1 accepted under H0 {false_h1:.4f}, H0 accepted "
            f"under H1 {false_h0:.4f}; average games under H0 {2 * taken0.mean():.1f}, under H1 "
            f"{2 * taken1.mean():.1f} (90th percentile {2 * np.percentile(taken0, 90):.0f} and "
            f"{2 * np.percentile(taken1, 90):.0f})"
        )
    # Every test ended, long before the simulation's cap.
    assert (decided0 != "-").all() and (decided1 != "-").all()
    assert within(false_h1, sprt.alpha, runs), false_h1
    assert within(false_h0, sprt.beta, runs), false_h0
    # And the test has power: it is no coin that never errs by never deciding.
    assert float(np.mean(decided0 == "H0")) > 1 - sprt.alpha - 0.02
    assert float(np.mean(decided1 == "H1")) > 1 - sprt.beta - 0.02


def test_pairs_take_fewer_games_than_unpaired_games(capsys: pytest.CaptureFixture[str]) -> None:
    """The trinomial fallback keeps its error rates too; on paired deals the pentanomial model
    needs fewer games, since the seat advantage cancels inside a pair."""
    sprt = Sprt(0, 100)
    runs = 2000
    decided0, games0 = simulate(sprt, unpaired_distribution(0.5), runs, seed=3)
    decided1, games1 = simulate(sprt, unpaired_distribution(logistic_score(100)), runs, seed=4)
    assert within(float(np.mean(decided0 == "H1")), sprt.alpha, runs)
    assert within(float(np.mean(decided1 == "H0")), sprt.beta, runs)
    _, pairs0 = simulate(sprt, pair_distribution(0.5), runs, seed=5)
    _, pairs1 = simulate(sprt, pair_distribution(logistic_score(100)), runs, seed=6)
    with capsys.disabled():
        print(
            f"\naverage games, unpaired (trinomial) vs paired (pentanomial): under H0 "
            f"{games0.mean():.1f} vs {2 * pairs0.mean():.1f}, under H1 {games1.mean():.1f} vs "
            f"{2 * pairs1.mean():.1f}"
        )
    assert 2 * pairs0.mean() < games0.mean() and 2 * pairs1.mean() < games1.mean()
