"""The ``runs`` use cases: list the runs of a results store, list a run's games, rename a run.

Deleting a run lives one layer up (:func:`strategic_arena.grading.runs.delete_run`) because
the grades of its games must go with it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strategic_arena.arena.records import StoredGame
from strategic_arena.arena.store import ResultsStore, existing


@dataclass(frozen=True)
class RunInfo:
    """One run of a store, counted.

    Attributes:
        name: the run's name (``report --run``, ``publish --run`` take it).
        seed: the run seed.
        settings: the public settings stored with it.
        created: when it was created (seconds since the epoch).
        games: scored games stored (complete or forfeit).
        complete: games that ended by the rules.
        forfeit: games a seat forfeited (an invalid answer).
        incomplete: games still unscored: a server failure stopped every try so far.
    """

    name: str
    seed: int
    settings: dict[str, Any]
    created: float
    games: int
    complete: int
    forfeit: int
    incomplete: int


def list_runs(db: str | Path) -> list[RunInfo]:
    """Every run of the store at ``db``, oldest first, with its game counts.

    Raises:
        ValueError: no results store at ``db`` (listing never creates one).
    """
    with ResultsStore.for_reading(db) as store:  # a read-only store lists too
        infos = []
        for run in store.runs():
            games = store.games(run.id, include_incomplete=True)
            status = Counter(game.status for game in games)
            scored = {game.game_key for game in games if game.status != "incomplete"}
            unscored = {game.game_key for game in games if game.status == "incomplete"} - scored
            infos.append(
                RunInfo(
                    run.name,
                    run.seed,
                    dict(run.settings),
                    run.created,
                    games=status["complete"] + status["forfeit"],
                    complete=status["complete"],
                    forfeit=status["forfeit"],
                    incomplete=len(unscored),
                )
            )
        return infos


def run_games(db: str | Path, name: str) -> list[StoredGame]:
    """The stored games of run ``name``, incomplete tries included, oldest first.

    Raises:
        ValueError: no results store at ``db``.
        KeyError: no such run (the message lists the runs).
    """
    with ResultsStore.for_reading(db) as store:
        return store.games(store.run_id(name), include_incomplete=True)


def rename_run(db: str | Path, name: str, new_name: str) -> None:
    """Rename run ``name`` to ``new_name`` (its games stay; reports then use the new name).

    Raises:
        ValueError: no results store at ``db``, or ``new_name`` is taken.
        KeyError: no such run.
    """
    with ResultsStore(existing(db)) as store:
        store.rename_run(name, new_name)
