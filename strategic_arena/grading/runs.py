"""Deleting a run: its games, moves and move grades (a transfer run: its answers), together.

Here rather than beside :mod:`strategic_arena.arena.runs` because move grades (a grading table)
are keyed by game id, and SQLite may give a freed id to a later game: grades left behind would
be read as that game's; a transfer run's answers reference the run, so they go first, in the
same transaction.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from strategic_arena.arena.store import ResultsStore, existing
from strategic_arena.grading.tables import GradeTables
from strategic_arena.transfer.store import delete_answers


def delete_run(db: str | Path, name: str) -> int:
    """Delete run ``name`` from the store at ``db``; returns how many stored games went with it.

    Players, and the strategy grades of players (measured per player, not per run), stay.

    Raises:
        ValueError: no results store at ``db``.
        KeyError: no such run (the message lists the runs).
    """
    with ResultsStore(existing(db)) as store:
        answers = "transfer_answers" in store.table_names()
        game_ids = store.delete_run(
            name, before=partial(delete_answers, store) if answers else None
        )
        graded = "move_grades" in store.table_names()
    if graded:
        with GradeTables(db) as tables:
            tables.forget_games(game_ids)
    return len(game_ids)
