"""A run's before/after table: the starting model against the trained one, from ``eval.db``.

A run with ``eval.at_start`` and ``transfer.at_start`` holds both sides of the comparison in its
evaluation store: the arena games of ``<run>/eval/step-000000`` (the starting model, the player
``<run>@step-0``) and of the last step, and the benchmark answers under the labels
``<run>/step-000000`` and ``<run>/step-NNNNNN``. :func:`before_after` reads them back into
one :class:`Comparison`; :func:`comparison_markdown` renders it as the table that
``docs/flagship.md`` shows:

* per opponent: the valid-move rate (answers the validator accepted, with its 95% Wilson
  interval) and the mean return per game (95% Student-t half-width over games), both seats;
* per benchmark: the headline metric (pass@1 for MARSHAL's protocol) in % with its 95% Wilson
  interval over problems -- a model right on 0 of 50 problems gets [0, 7.1], not a bare 0.

Everything is recomputed from the store (:func:`strategic_arena.arena.metrics.summarize`,
:func:`strategic_arena.transfer.cells`), so the table agrees with ``report``, ``transfer
report`` and the published leaderboard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strategic_arena.arena.metrics import Summary, summarize
from strategic_arena.arena.store import ResultsStore
from strategic_arena.door.printable import printable_line
from strategic_arena.train.engines.serving import eval_name
from strategic_arena.transfer import Cell, cells

__all__ = ["ArenaSide", "BenchmarkSide", "Comparison", "before_after", "comparison_markdown"]


def wilson(successes: int, total: int) -> tuple[float, float]:
    """The 95% Wilson interval of ``successes`` in ``total`` trials, as shares (0, 0 for none)."""
    if total <= 0:
        return 0.0, 0.0
    from scipy.stats import binomtest  # type: ignore[import-untyped]  # comes with open_spiel

    found = binomtest(successes, total).proportion_ci(confidence_level=0.95, method="wilson")
    return float(found.low), float(found.high)


@dataclass(frozen=True)
class ArenaSide:
    """One model against one opponent (both seats): what the table shows of it."""

    games: int
    answers: int
    valid: int
    mean_return: float
    ci95: float | None

    @classmethod
    def of(cls, row: Summary) -> ArenaSide:
        """The side of one ``summarize`` row (``seat`` None)."""
        valid = row.answers - row.invalid_answers
        return cls(row.games, row.answers, valid, row.mean_return, row.ci95)

    def cell_valid(self) -> str:
        """``12.5% [8.1–18.8]`` (of the answers)."""
        low, high = wilson(self.valid, self.answers)
        share = self.valid / self.answers if self.answers else 0.0
        return f"{100 * share:.1f}% [{100 * low:.1f}–{100 * high:.1f}]"

    def cell_return(self) -> str:
        """``-0.240 ± 0.171`` (per game)."""
        half = f" ± {self.ci95:.3f}" if self.ci95 is not None else ""
        return f"{self.mean_return:+.3f}{half}"


@dataclass(frozen=True)
class BenchmarkSide:
    """One model on one benchmark: its headline metric over the problems it answered."""

    metric: str
    problems: int
    right: int

    @classmethod
    def of(cls, cell: Cell) -> BenchmarkSide:
        """The side of one transfer cell (one sample per problem: a share of right problems)."""
        headline = cell.metrics[0] if cell.metrics else None
        mean = headline.mean if headline is not None else 0.0
        name = headline.name if headline is not None else "pass@1"
        return cls(name, cell.complete, round(mean * cell.complete))

    def cell(self) -> str:
        """``0.0% [0.0–7.1] (0/50)``."""
        low, high = wilson(self.right, self.problems)
        share = self.right / self.problems if self.problems else 0.0
        return (
            f"{100 * share:.1f}% [{100 * low:.1f}–{100 * high:.1f}] ({self.right}/{self.problems})"
        )


@dataclass(frozen=True)
class Comparison:
    """The before/after of a run: per (game, opponent) and per benchmark, both steps."""

    run: str
    steps: tuple[int, int]
    arena: dict[tuple[str, str], tuple[ArenaSide | None, ArenaSide | None]]
    benchmarks: dict[str, tuple[BenchmarkSide | None, BenchmarkSide | None]]


def _arena(store: ResultsStore, run: str, step: int) -> dict[tuple[str, str], ArenaSide]:
    """The policy of ``step`` in its evaluation run: one side per (game, opponent)."""
    name = f"{run}/eval/step-{step:06d}"
    if name not in {stored.name for stored in store.runs()}:
        return {}
    player = eval_name(run, step)
    return {
        (row.env_id, row.opponent): ArenaSide.of(row)
        for row in summarize(store, [name])
        if row.player == player and row.seat is None
    }


def _benchmarks(store: ResultsStore, run: str, step: int) -> dict[str, BenchmarkSide]:
    """The benchmarks of the label ``<run>/step-NNNNNN``."""
    label = f"{run}/step-{step:06d}"
    return {cell.benchmark: BenchmarkSide.of(cell) for cell in cells(store, [label])}


def before_after(store: ResultsStore, run: str, first: int, last: int) -> Comparison:
    """Steps ``first`` and ``last`` of ``run`` side by side (a side the store lacks is None)."""
    arenas = (_arena(store, run, first), _arena(store, run, last))
    marks = (_benchmarks(store, run, first), _benchmarks(store, run, last))
    pairs = sorted({key for side in arenas for key in side})
    names = sorted({key for side in marks for key in side})
    return Comparison(
        run,
        (first, last),
        {key: (arenas[0].get(key), arenas[1].get(key)) for key in pairs},
        {name: (marks[0].get(name), marks[1].get(name)) for name in names},
    )


def _row(cells_: Sequence[str]) -> str:
    return "| " + " | ".join(cells_) + " |"


def comparison_markdown(comparison: Comparison) -> str:
    """The comparison as a Markdown table: a row per measure, a column per step."""
    first, last = comparison.steps
    lines = [
        _row(["measure", f"before (step {first})", f"after (step {last})"]),
        _row(["---", "---", "---"]),
    ]
    for (env_id, opponent), sides in comparison.arena.items():
        where = f"{printable_line(env_id)} vs {printable_line(opponent, limit=60)}"
        games = max(side.games for side in sides if side is not None)
        lines.append(
            _row(
                [
                    f"{where}: valid moves (95% Wilson)",
                    *(side.cell_valid() if side else "—" for side in sides),
                ]
            )
        )
        lines.append(
            _row(
                [
                    f"{where}: return per game ({games} games, 95% CI)",
                    *(side.cell_return() if side else "—" for side in sides),
                ]
            )
        )
    for name, marks in comparison.benchmarks.items():
        metric = next(side.metric for side in marks if side is not None)
        lines.append(
            _row(
                [
                    f"{printable_line(name)} {metric} (95% Wilson)",
                    *(side.cell() if side else "—" for side in marks),
                ]
            )
        )
    return "\n".join(lines)
