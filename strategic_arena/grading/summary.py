"""Figures of the stored grades per player, game and opponent, with 95% intervals.

Definitions (``docs/grading.md`` has them with formulas): over a player's graded moves,
``optimal`` keep the position's exact value (``V_after = V_before``): the *top moves*, whose
share is SPIN-Bench's per-move measure (:func:`~.moves.is_top_move`); ``blunders`` lower its
outcome class (win > draw > loss); ``missed wins`` are blunders from a won position;
``inaccuracies`` are the other non-optimal moves (a slower win or a faster loss in Connect
Four's scores); ``accuracy = 100 * (optimal + inaccuracies / 2) / graded``; ``value loss`` is
``V_before - V_after`` in the solver's units. Invalid answers and ``unknown`` moves are counted
apart and enter none of these.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from strategic_arena.arena.metrics import mean_ci
from strategic_arena.door.printable import printable_line
from strategic_arena.grading.moves import is_blunder, is_top_move
from strategic_arena.grading.tables import MoveGrade

ALL = "all"


def wilson(successes: int, total: int) -> tuple[float | None, float | None, float | None]:
    """A share and its 95% Wilson interval (``None`` for no trials)."""
    if total == 0:
        return None, None, None
    z = 1.959963984540054
    share = successes / total
    centre = (share + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    half /= 1 + z * z / total
    return share, max(0.0, centre - half), min(1.0, centre + half)


def _mean_ci(values: Sequence[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    mean, half = mean_ci(values)
    return mean, half


def _figures(grades: Sequence[MoveGrade]) -> dict[str, Any]:
    graded = [g for g in grades if g.category == "graded"]
    n = len(graded)
    optimal = blunders = missed = 0
    credits: list[float] = []
    losses: list[float] = []
    for grade in graded:
        assert grade.before is not None and grade.after is not None
        best = is_top_move(grade)
        blunder = is_blunder(grade)
        optimal += best
        blunders += blunder
        missed += blunder and grade.before > 0
        credits.append(100.0 if best else (0.0 if blunder else 50.0))
        losses.append(float(grade.before - grade.after))

    def share(count: int) -> dict[str, float | int | None]:
        value, low, high = wilson(count, n)
        return {"count": count, "share": value, "low": low, "high": high}

    accuracy, accuracy_half = _mean_ci(credits)
    loss, loss_half = _mean_ci(losses)
    return {
        "moves": len(grades),
        "graded": n,
        "invalid": sum(g.category == "invalid" for g in grades),
        "unknown": sum(g.category == "unknown" for g in grades),
        "optimal": share(optimal),
        "blunders": share(blunders),
        "missed_wins": share(missed),
        "inaccuracies": share(n - optimal - blunders),
        "accuracy": {"mean": accuracy, "ci95": accuracy_half},
        "value_loss": {"mean": loss, "ci95": loss_half},
    }


def move_summary(grades: Sequence[MoveGrade]) -> list[dict[str, Any]]:
    """One row per player, game and opponent, and one per player and game (opponent ``all``).

    Rows are sorted by game, player and opponent (``all`` first).
    """
    groups: dict[tuple[str, str, str], list[MoveGrade]] = defaultdict(list)
    for grade in grades:
        groups[(grade.env_id, grade.player, grade.opponent)].append(grade)
        groups[(grade.env_id, grade.player, ALL)].append(grade)
    return [
        {"env_id": env, "player": player, "opponent": opponent, **_figures(rows)}
        for (env, player, opponent), rows in sorted(
            groups.items(), key=lambda item: (item[0][0], item[0][1], item[0][2] != ALL, item[0])
        )
    ]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render_text(moves: Sequence[dict[str, Any]], strategies: Sequence[dict[str, Any]]) -> str:
    """The grades as text tables (per player and game, all opponents pooled)."""
    lines: list[str] = []
    pooled = [row for row in moves if row["opponent"] == ALL]
    if pooled:
        lines.append(
            "Move grades (exact solvers; top move: the share of moves the solver ranks best, "
            "SPIN-Bench's measure)"
        )
        header = (
            f"  {'game':<16} {'player':<44} {'graded':>6} {'top move':>8} {'blunders':>8} "
            f"{'missed':>7} {'accuracy':>14} {'loss':>6} {'invalid':>7} {'unknown':>7}"
        )
        lines.append(header)
        for row in pooled:
            acc = row["accuracy"]
            accuracy = "-" if acc["mean"] is None else f"{acc['mean']:.1f}"
            if acc["ci95"] is not None:
                accuracy += f" ±{acc['ci95']:.1f}"
            loss = row["value_loss"]["mean"]
            player = printable_line(row["player"], limit=44)  # a name from an endpoint
            lines.append(
                f"  {row['env_id']:<16} {player:<44} {row['graded']:>6} "
                f"{_pct(row['optimal']['share']):>8} {_pct(row['blunders']['share']):>8} "
                f"{row['missed_wins']['count']:>7} {accuracy:>14} "
                f"{'-' if loss is None else f'{loss:.2f}':>6} {row['invalid']:>7} "
                f"{row['unknown']:>7}"
            )
    if strategies:
        if lines:
            lines.append("")
        lines.append(
            "Poker strategies (exploitability of the measured policy, chips per hand; "
            "bias-corrected bootstrap 95% interval)"
        )
        lines.append(
            f"  {'game':<16} {'player':<44} {'K':>4} {'exploitability':>26} "
            f"{'BR vs seat 0':>12} {'BR vs seat 1':>12} {'distance':>8} {'invalid':>7}"
        )
        for row in strategies:
            low, high = row["ci95"]
            value = f"{row['exploitability']:.4f} [{low:.4f}, {high:.4f}]"
            player = printable_line(row["player"], limit=44)
            lines.append(
                f"  {row['env_id']:<16} {player:<44} {row['samples']:>4} "
                f"{value:>26} {row['best_response'][0]:>12.4f} {row['best_response'][1]:>12.4f} "
                f"{row['distance']:>8.3f} {_pct(row['invalid']):>7}"
            )
    return "\n".join(lines)
