"""The ``report`` use case: the arena's metrics of stored runs, with their stored grades.

The metrics come from :mod:`strategic_arena.arena.metrics`, the grades from the grading tables
(:mod:`.tables`) when ``grade`` has run; the report lives in this layer because it joins both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from strategic_arena import ranking
from strategic_arena.arena import metrics
from strategic_arena.arena.costs import Price
from strategic_arena.arena.store import ResultsStore
from strategic_arena.grading.grade import report_data
from strategic_arena.grading.moves import instant_grades
from strategic_arena.grading.summary import move_summary
from strategic_arena.grading.tables import GradeTables
from strategic_arena.ratings import ratings_report


def stored_grades(store: ResultsStore, run_names: Sequence[str] | None) -> dict[str, Any]:
    """:func:`~.grade.report_data` of the games of ``run_names`` (all when ``None``).

    Reads only: a store never graded gets no grading tables. The grades are those ``grade``
    stored, and, for the games it has not graded whose exact values are a table lookup
    (Tic-Tac-Toe: :data:`~.moves.INSTANT_GRADERS`), grades computed here in memory, so the
    top-move share of every Tic-Tac-Toe game is reported without a ``grade`` run.
    """
    run_ids = None if run_names is None else {store.run_id(name) for name in run_names}
    games = [g for g in store.games() if run_ids is None or g.run_id in run_ids]
    if "strategy_grades" not in store.table_names():
        return {"moves": move_summary(instant_grades(store, games)), "strategies": []}
    with GradeTables(store.target, readonly=True) as grades:
        done = grades.graded_games()
        extra = instant_grades(store, [g for g in games if g.id not in done])
        return report_data(grades, games, every_strategy=run_names is None, extra=extra)


def report(
    db: str | Path,
    run_names: Sequence[str] | None = None,
    *,
    ratings: bool = False,
    prices: Mapping[str, Price] | None = None,
) -> dict[str, Any]:
    """The metrics of the runs ``run_names`` (all when ``None``) of ``db``, with their grades.

    Args:
        db: the results store.
        run_names: the runs to report (all when ``None``).
        ratings: add the TrueSkill ratings per game and overall
            (:func:`strategic_arena.ratings.ratings_report`; free-for-all and team games too).
            Off by default: rating a large store takes a while.
        prices: money per million prompt and completion tokens by player, for the costs
            (:mod:`strategic_arena.arena.costs`).

    Returns:
        :func:`strategic_arena.arena.metrics.report`'s data with a ``grades`` entry
        (``moves`` and ``strategies``) and, with ``ratings``, a ``ratings`` entry.

    Raises:
        ValueError: no results store at ``db`` (a report never creates one).
        StoreError: ``db`` is not a results store.
        KeyError: an unknown run name.
    """
    with ResultsStore.for_reading(db) as store:  # nothing written: archives report too
        data = metrics.report(store, run_names, prices)
        if ratings:
            data["ratings"] = ratings_report(store, run_names)
        # strategic-arena rank: each ranking run's state (its neighbours' order probabilities).
        data["ranking"] = ranking.report_rows(store, run_names)
        return {**data, "grades": stored_grades(store, run_names)}
