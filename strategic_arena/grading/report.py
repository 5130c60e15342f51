"""The ``report`` use case: the arena's metrics of stored runs, with their stored grades.

The metrics come from :mod:`strategic_arena.arena.metrics`, the grades from the grading tables
(:mod:`.tables`) when ``grade`` has run; the report lives in this layer because it joins both.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from strategic_arena.arena import metrics
from strategic_arena.arena.store import ResultsStore
from strategic_arena.grading.grade import report_data
from strategic_arena.grading.tables import GradeTables


def stored_grades(store: ResultsStore, run_names: Sequence[str] | None) -> dict[str, Any]:
    """:func:`~.grade.report_data` of the games of ``run_names`` (all when ``None``).

    Reads only: a store never graded has no grades (and gets no grading tables).
    """
    with sqlite3.connect(store.path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    if "strategy_grades" not in tables:
        return {"moves": [], "strategies": []}
    run_ids = None if run_names is None else {store.run_id(name) for name in run_names}
    games = [g for g in store.games() if run_ids is None or g.run_id in run_ids]
    with GradeTables(store.path) as grades:
        return report_data(grades, games, every_strategy=run_names is None)


def report(db: str | Path, run_names: Sequence[str] | None = None) -> dict[str, Any]:
    """The metrics of the runs ``run_names`` (all when ``None``) of ``db``, with their grades.

    Returns:
        :func:`strategic_arena.arena.metrics.report`'s data with a ``grades`` entry
        (``moves`` and ``strategies``).

    Raises:
        ValueError: no results store at ``db`` (a report never creates one).
        KeyError: an unknown run name.
    """
    if not Path(db).exists():
        raise ValueError(f"no results store at {db}")
    with ResultsStore(db) as store:
        data = metrics.report(store, run_names)
        return {**data, "grades": stored_grades(store, run_names)}
