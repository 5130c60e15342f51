"""Deleting a run: its games, their moves and their move grades, together.

Here rather than beside :mod:`strategic_arena.arena.runs` because move grades (a grading table)
are keyed by game id, and SQLite may give a freed id to a later game: grades left behind would
be read as that game's.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from strategic_arena.arena.store import ResultsStore
from strategic_arena.grading.tables import GradeTables


def delete_run(db: str | Path, name: str) -> int:
    """Delete run ``name`` from the store at ``db``; returns how many stored games went with it.

    Players, and the strategy grades of players (measured per player, not per run), stay.

    Raises:
        ValueError: no results store at ``db``.
        KeyError: no such run (the message lists the runs).
    """
    path = Path(db)
    if not path.is_file():
        raise ValueError(f"no results store at {db}")
    with ResultsStore(path) as store:
        game_ids = store.delete_run(name)
    with sqlite3.connect(path) as con:
        graded = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'move_grades'").fetchone()
    if graded is not None:
        with GradeTables(path) as tables:
            tables.forget_games(game_ids)
    return len(game_ids)
