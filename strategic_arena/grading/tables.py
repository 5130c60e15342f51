"""The grading tables, kept in the arena's results store (SQLite or PostgreSQL) next to its games.

Tables (created on first use; the arena's own tables are only read):

* ``move_grades`` -- one row per graded move, keyed by ``(game_id, ply)``: the mover's name,
  the opponent, the game, the category (``graded``, ``invalid`` or ``unknown``) and the values
  of the position before and after the move for the mover (``NULL`` unless graded);
* ``graded_games`` -- each game whose moves are graded, with the node budget used (a game is
  graded again only when a larger budget could settle its ``unknown`` moves);
* ``c4_scores`` -- the Connect Four solver's exact score of each position met (history as the
  key), or ``NULL`` with the node budget it exceeded: ladders repeat positions across games;
* ``strategy_samples`` -- the answers of a player queried at an information state, one row per
  ``(player, env_id, info_state)``: a JSON list indexed by sample number, each entry ``null``
  (not asked yet) or ``[action, error kind]`` (action ``null`` for an invalid answer);
* ``strategy_grades`` -- the exploitability measured from those samples, per player and game.

Every write is idempotent (an upsert on the keys), so an interrupted ``grade``
resumes where it stopped.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strategic_arena.arena import postgres
from strategic_arena.arena.store import (
    POSTGRES_TYPES,
    SQLITE_TYPES,
    connect_readonly,
    existing,
    setting_differences,
    stored_value,
)
from strategic_arena.door import is_postgres

_SCHEMA = """
CREATE TABLE IF NOT EXISTS move_grades (
    game_id {int} NOT NULL,
    ply {int} NOT NULL,
    seat {int} NOT NULL,
    player TEXT NOT NULL,
    opponent TEXT NOT NULL,
    env_id TEXT NOT NULL,
    category TEXT NOT NULL,
    value_before {int},
    value_after {int},
    PRIMARY KEY (game_id, ply)
);
CREATE TABLE IF NOT EXISTS graded_games (
    game_id {int} PRIMARY KEY,
    max_nodes {int} NOT NULL,
    unknown {int} NOT NULL
);
CREATE TABLE IF NOT EXISTS c4_scores (
    history TEXT PRIMARY KEY,
    score {int},
    max_nodes {int} NOT NULL
);
CREATE TABLE IF NOT EXISTS strategy_samples (
    player TEXT NOT NULL,
    env_id TEXT NOT NULL,
    info_state TEXT NOT NULL,
    answers TEXT NOT NULL,
    PRIMARY KEY (player, env_id, info_state)
);
CREATE TABLE IF NOT EXISTS strategy_players (
    player TEXT PRIMARY KEY,
    params TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS strategy_grades (
    player TEXT NOT NULL,
    env_id TEXT NOT NULL,
    grade TEXT NOT NULL,
    PRIMARY KEY (player, env_id)
);
"""


def schema_statements(postgres: bool) -> list[str]:
    """The statements that create the grading tables (each alone: for inside a transaction)."""
    script = _SCHEMA.format(**(POSTGRES_TYPES if postgres else SQLITE_TYPES))
    return [statement.strip() for statement in script.split(";") if statement.strip()]


def _upsert(table: str, columns: str, key: str) -> str:
    """``INSERT`` that replaces the row of the same ``key`` (SQLite and PostgreSQL alike)."""
    names = [name.strip() for name in columns.split(",")]
    keys = {name.strip() for name in key.split(",")}
    updates = ", ".join(f"{name} = excluded.{name}" for name in names if name not in keys)
    marks = ", ".join("?" * len(names))
    return (
        f"INSERT INTO {table} ({columns}) VALUES ({marks}) "
        f"ON CONFLICT ({key}) DO UPDATE SET {updates}"
    )


@dataclass(frozen=True)
class MoveGrade:
    """One graded move.

    Attributes:
        game_id: the stored game.
        ply: the move's number in the game (the arena's ``moves.ply``).
        seat: who moved.
        player: the mover's name.
        opponent: the other seat's name.
        env_id: the game.
        category: ``graded`` (both values exact), ``invalid`` (the answer was not a legal
            move: forfeited or replaced by the run's policy) or ``unknown`` (the solver's node
            budget ran out; never counted as exact).
        before: the position's value for the mover before the move (``None`` unless graded).
        after: its value for the mover after the move (``None`` unless graded).
    """

    game_id: int
    ply: int
    seat: int
    player: str
    opponent: str
    env_id: str
    category: str
    before: int | None = None
    after: int | None = None


#: Game ids per ``IN`` list (SQLite's default limit on bound variables was 999 before 3.32).
_IDS_PER_QUERY = 900


class GradeTables:
    """The grading tables of the SQLite file at ``path`` (the arena's results store)."""

    def __init__(self, path: str | Path, *, readonly: bool = False) -> None:
        existing(path)
        self._begin = "BEGIN IMMEDIATE"
        self._db: Any
        if is_postgres(path):  # the same tables in the PostgreSQL store
            self._begin = "BEGIN"
            self._db = postgres.PostgresConnection(str(path), readonly=readonly)
            if not readonly:
                self._db.executescript(_SCHEMA.format(**POSTGRES_TYPES))
            return
        if readonly:  # reading grades (report, publish) writes nothing
            self._db = connect_readonly(Path(path))
            return
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA.format(**SQLITE_TYPES))

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def __enter__(self) -> GradeTables:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- moves -------------------------------------------------------------------------------

    def graded_games(self) -> dict[int, tuple[int, int]]:
        """Game id -> (node budget used, unknown moves) of every graded game."""
        rows = self._db.execute("SELECT game_id, max_nodes, unknown FROM graded_games")
        return {int(g): (int(n), int(u)) for g, n, u in rows}

    def add_game_grades(self, game_id: int, max_nodes: int, grades: Sequence[MoveGrade]) -> None:
        """Store the grades of one game's moves in one transaction (replacing older ones)."""
        db = self._db
        db.execute(self._begin)
        try:
            db.executemany(
                _upsert(
                    "move_grades",
                    "game_id, ply, seat, player, opponent, env_id, category, value_before, "
                    "value_after",
                    "game_id, ply",
                ),
                [
                    (
                        g.game_id,
                        g.ply,
                        g.seat,
                        g.player,
                        g.opponent,
                        g.env_id,
                        g.category,
                        g.before,
                        g.after,
                    )
                    for g in grades
                ],
            )
            unknown = sum(g.category == "unknown" for g in grades)
            db.execute(
                _upsert("graded_games", "game_id, max_nodes, unknown", "game_id"),
                (game_id, max_nodes, unknown),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def move_grades(self, game_ids: Iterable[int] | None = None) -> list[MoveGrade]:
        """Stored move grades (of the given games, or all), in game and move order.

        The ids go to SQLite in chunks of :data:`_IDS_PER_QUERY`: one ``IN`` list of every game
        of a large store would pass SQLite's limit on bound variables.
        """
        query = (
            "SELECT game_id, ply, seat, player, opponent, env_id, category, value_before, "
            "value_after FROM move_grades"
        )
        if game_ids is None:
            return [MoveGrade(*row) for row in self._db.execute(query + " ORDER BY game_id, ply")]
        ids = sorted(set(game_ids))
        grades: list[MoveGrade] = []
        for start in range(0, len(ids), _IDS_PER_QUERY):  # ascending chunks: order is kept
            chunk = ids[start : start + _IDS_PER_QUERY]
            where = f" WHERE game_id IN ({', '.join('?' * len(chunk))}) ORDER BY game_id, ply"
            grades += [MoveGrade(*row) for row in self._db.execute(query + where, chunk)]
        return grades

    # -- Connect Four positions --------------------------------------------------------------

    def c4_scores(self) -> dict[str, tuple[int | None, int]]:
        """History key -> (exact score or ``None``, node budget tried) of every stored position."""
        rows = self._db.execute("SELECT history, score, max_nodes FROM c4_scores")
        return {str(h): (None if s is None else int(s), int(n)) for h, s, n in rows}

    def add_c4_scores(self, scores: Mapping[str, tuple[int | None, int]]) -> None:
        """Store solved (or budget-exceeded) positions."""
        self._db.executemany(
            _upsert("c4_scores", "history, score, max_nodes", "history"),
            [(key, score, nodes) for key, (score, nodes) in scores.items()],
        )

    def forget_games(self, game_ids: Iterable[int]) -> None:
        """Drop the move grades of deleted games (a later game may get a freed id)."""
        ids = list(game_ids)
        for start in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[start : start + _IDS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            self._db.execute(f"DELETE FROM move_grades WHERE game_id IN ({marks})", chunk)
            self._db.execute(f"DELETE FROM graded_games WHERE game_id IN ({marks})", chunk)

    # -- strategies --------------------------------------------------------------------------

    def check_sampler(self, player: str, params: Mapping[str, Any]) -> None:
        """Bind ``player``'s stored answers to its parameters (model, sampling, prompts).

        The first measurement records them; a later one under the same name with other
        parameters (apart from where it is served) would silently reuse answers drawn another
        way, so it is a ``ValueError`` naming the parameters that differ.
        """
        encoded = json.dumps(dict(params), sort_keys=True)
        self._db.execute(
            "INSERT INTO strategy_players (player, params) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (player, encoded),
        )
        row = self._db.execute(
            "SELECT params FROM strategy_players WHERE player = ?", (player,)
        ).fetchone()
        differences = setting_differences(stored_value(row[0]), params)
        if differences:
            raise ValueError(
                f"the strategy answers of {player!r} stored in this database were drawn with "
                f"other parameters: {'; '.join(differences)}. Give this model another --name"
            )

    def _answers(self, player: str, env_id: str) -> dict[str, list[Any]]:
        rows = self._db.execute(
            "SELECT info_state, answers FROM strategy_samples WHERE player = ? AND env_id = ?",
            (player, env_id),
        )
        return {str(state): stored_value(answers) for state, answers in rows}

    def strategy_samples(self, player: str, env_id: str) -> dict[tuple[str, int], int | None]:
        """(info state, sample number) -> action (``None``: invalid) of ``player`` in ``env_id``."""
        return {
            (state, sample): None if answer[0] is None else int(answer[0])
            for state, answers in self._answers(player, env_id).items()
            for sample, answer in enumerate(answers)
            if answer is not None
        }

    def add_strategy_samples(
        self,
        player: str,
        env_id: str,
        samples: Sequence[tuple[str, int, int | None, str | None]],
    ) -> None:
        """Store answers as ``(info state, sample number, action or None, error kind)``."""
        if not samples:
            return
        db = self._db
        db.execute(self._begin)
        try:
            stored = self._answers(player, env_id)
            changed: dict[str, list[Any]] = {}
            for state, sample, action, kind in samples:
                answers = changed.setdefault(state, stored.get(state, []))
                answers.extend([None] * (sample + 1 - len(answers)))
                answers[sample] = [action, kind]
            db.executemany(
                _upsert(
                    "strategy_samples",
                    "player, env_id, info_state, answers",
                    "player, env_id, info_state",
                ),
                [(player, env_id, state, json.dumps(a)) for state, a in changed.items()],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def set_strategy_grade(self, player: str, env_id: str, grade: Mapping[str, Any]) -> None:
        """Store (or replace) the measured grade of ``player``'s strategy in ``env_id``."""
        self._db.execute(
            _upsert("strategy_grades", "player, env_id, grade", "player, env_id"),
            (player, env_id, json.dumps(dict(grade), sort_keys=True)),
        )

    def strategy_grades(self) -> list[dict[str, Any]]:
        """Every stored strategy grade: ``player``, ``env_id`` and the grade's fields."""
        rows = self._db.execute(
            "SELECT player, env_id, grade FROM strategy_grades ORDER BY env_id, player"
        )
        return [{"player": p, "env_id": e, **stored_value(g)} for p, e, g in rows]
