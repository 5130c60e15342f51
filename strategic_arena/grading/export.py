"""Moving results between stores: runs with every game, move, grade and setting, row for row.

:func:`export_runs` copies runs of one results store into another -- SQLite into PostgreSQL
and back, or file into file -- losslessly: each row's values are copied as stored (the JSON
texts as they are, times and seeds unchanged), and ids are kept wherever the target has them
free (so a copy into an empty store is identical row for row). Where an id is taken, the row
gets a new one and everything that refers to it (moves, move grades) follows.

Rules, the same as for a run played into the target:

* a run already in the target must have the same seed and settings (else ``ValueError``
  naming what differs); its games are merged, a key scored in both stores stored once;
* a player already in the target must be the same player (kind and parameters);
* the grades of the copied games come with them, and the strategy grades of their players.

Everything is written in one transaction: a copy that fails leaves the target as it was.
Here rather than in :mod:`strategic_arena.arena` because the grading tables travel too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strategic_arena.arena.store import ResultsStore, setting_differences, stored_value
from strategic_arena.door import is_postgres
from strategic_arena.grading.tables import schema_statements

#: The columns copied per table, in the stored order (``id`` first where there is one).
RUN_COLUMNS = ("id", "name", "seed", "settings", "created")
PLAYER_COLUMNS = ("id", "name", "kind", "params")
GAME_COLUMNS = [
    "id",
    "run_id",
    "game_key",
    "env_id",
    "seed",
    "players",
    "returns",
    "status",
    "forfeited_by",
    "history",
    "duration_s",
    "finished",
    "infrastructure_error",
    "prompts",
]
MOVE_COLUMNS = [
    "id",
    "game_id",
    "ply",
    "seat",
    "action",
    "action_text",
    "prompt",
    "response",
    "error_kind",
    "error_detail",
    "errors",
    "failures",
    "reasoning",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
    "attempts",
    "tries",
]
MOVE_GRADE_COLUMNS = [
    "game_id",
    "ply",
    "seat",
    "player",
    "opponent",
    "env_id",
    "category",
    "value_before",
    "value_after",
]
#: Grading tables keyed by player (or position), copied for the copied players.
_PLAYER_TABLES = {
    "strategy_players": ("player", "params"),
    "strategy_samples": ("player", "env_id", "info_state", "answers"),
    "strategy_grades": ("player", "env_id", "grade"),
}


@dataclass(frozen=True)
class ExportSummary:
    """What :func:`export_runs` copied.

    Attributes:
        runs: names of the runs copied (new in the target, or merged into one there).
        games: games written (scored and incomplete tries).
        skipped: games the target already held (a scored game of the same run and key, or the
            same incomplete try).
        moves: moves written.
        grades: move grades written.
    """

    runs: tuple[str, ...]
    games: int
    skipped: int
    moves: int
    grades: int


def _insert(table: str, columns: Sequence[str]) -> str:
    marks = ", ".join("?" * len(columns))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"


class _Ids:
    """New ids in the target: the source's where free, else the next above the largest."""

    def __init__(self, target: ResultsStore, table: str) -> None:
        self.taken = {int(row[0]) for row in target.rows(f"SELECT id FROM {table}")}
        self.next = max(self.taken, default=0) + 1

    def take(self, wanted: int) -> int:
        if wanted not in self.taken:
            self.taken.add(wanted)
            self.next = max(self.next, wanted + 1)
            return wanted
        while self.next in self.taken:
            self.next += 1
        self.taken.add(self.next)
        return self.next


def _chunks(ids: Sequence[int], size: int = 900) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def _rows_of(
    store: ResultsStore, table: str, columns: Sequence[str], key: str, ids: Sequence[int]
) -> list[tuple[Any, ...]]:
    """The rows of ``table`` whose ``key`` is one of ``ids``, in id order then stored order."""
    rows: list[tuple[Any, ...]] = []
    for chunk in _chunks(sorted(ids)):
        marks = ", ".join("?" * len(chunk))
        order = "id" if "id" in columns else ", ".join(columns[:2])
        rows += store.rows(
            f"SELECT {', '.join(columns)} FROM {table} WHERE {key} IN ({marks}) ORDER BY {order}",
            chunk,
        )
    return rows


def export_runs(
    source: str | Path, target: str | Path, run_names: Sequence[str] | None = None
) -> ExportSummary:
    """Copy runs (all when ``run_names`` is ``None``) of ``source`` into ``target``.

    Args:
        source: the store to read (a SQLite file or a ``postgresql://`` URL); only read.
        target: the store to write (created if missing).
        run_names: the runs to copy.

    Raises:
        ValueError: no store at ``source``; ``source`` and ``target`` are the same; a run or
            player in the target that differs from the source's (nothing is written).
        KeyError: an unknown run name.
        StoreError: a store cannot be read or written (the message says why).
    """
    if str(source) == str(target) or (
        not is_postgres(source)
        and not is_postgres(target)
        and Path(target).exists()
        and Path(source).resolve() == Path(target).resolve()
    ):
        raise ValueError("the source and the target are the same store")
    with ResultsStore.for_reading(source) as reader:
        for name in run_names or ():
            reader.run_id(name)  # a KeyError naming the known runs
        runs = [
            row
            for row in reader.rows(f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY id")
            if run_names is None or row[1] in run_names
        ]
        run_ids = [int(row[0]) for row in runs]
        games = _rows_of(reader, "games", GAME_COLUMNS, "run_id", run_ids)
        game_ids = [int(row[0]) for row in games]
        moves = _rows_of(reader, "moves", MOVE_COLUMNS, "game_id", game_ids)
        names = {name for row in games for name in stored_value(row[5])}
        players = [
            row
            for row in reader.rows(f"SELECT {', '.join(PLAYER_COLUMNS)} FROM players ORDER BY id")
            if run_names is None or row[1] in names
        ]
        graded = "move_grades" in reader.table_names()
        grades: list[tuple[Any, ...]] = []
        graded_games: list[tuple[Any, ...]] = []
        positions: list[tuple[Any, ...]] = []
        per_player: dict[str, list[tuple[Any, ...]]] = {}
        if graded:
            grades = _rows_of(reader, "move_grades", MOVE_GRADE_COLUMNS, "game_id", game_ids)
            graded_games = _rows_of(
                reader, "graded_games", ("game_id", "max_nodes", "unknown"), "game_id", game_ids
            )
            positions = reader.rows("SELECT history, score, max_nodes FROM c4_scores")
            per_player = {
                table: [
                    row
                    for row in reader.rows(f"SELECT {', '.join(columns)} FROM {table}")
                    if run_names is None or row[0] in names
                ]
                for table, columns in _PLAYER_TABLES.items()
            }
    with ResultsStore(target) as writer, writer.transaction():
        if graded:
            for statement in schema_statements(writer.shared):
                writer.execute(statement)
        run_map = _copy_runs(writer, runs)
        _copy_players(writer, players)
        game_map, skipped = _copy_games(writer, games, run_map)
        move_ids = _Ids(writer, "moves")
        kept_moves = [row for row in moves if int(row[1]) in game_map]
        writer.execute_many(
            _insert("moves", MOVE_COLUMNS),
            [(move_ids.take(int(row[0])), game_map[int(row[1])], *row[2:]) for row in kept_moves],
        )
        kept_grades = [row for row in grades if int(row[0]) in game_map]
        _copy_grades(writer, kept_grades, graded_games, game_map, positions, per_player)
        if writer.shared:
            for table in ("runs", "players", "games", "moves"):  # ids given: move the counters on
                writer.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT COALESCE(MAX(id), 0) + 1 FROM {table}), false)"
                )
    return ExportSummary(
        tuple(str(run[1]) for run in runs),
        len(game_map),
        skipped,
        len(kept_moves),
        len(kept_grades),
    )


def _copy_runs(writer: ResultsStore, runs: Sequence[tuple[Any, ...]]) -> dict[int, int]:
    """Source run id -> target run id; a run already there must be the same run."""
    ids = _Ids(writer, "runs")
    mapping: dict[int, int] = {}
    for run_id, name, seed, settings, created in runs:
        found = writer.rows("SELECT id, seed, settings FROM runs WHERE name = ?", (name,))
        if found:
            differences = setting_differences(stored_value(found[0][2]), stored_value(settings))
            if found[0][1] != seed or differences:
                why = "; ".join(differences) or f"seed {found[0][1]} there, {seed} here"
                raise ValueError(
                    f"{writer.location} already has a run named {name!r} that differs: "
                    f"{why}. Rename one of them first (strategic-arena runs --rename)"
                )
            mapping[int(run_id)] = int(found[0][0])
            continue
        mapping[int(run_id)] = ids.take(int(run_id))
        writer.execute(
            _insert("runs", RUN_COLUMNS), (mapping[int(run_id)], name, seed, settings, created)
        )
    return mapping


def _copy_players(writer: ResultsStore, players: Sequence[tuple[Any, ...]]) -> None:
    """Copy the players the target lacks; one it has must be the same player."""
    ids = _Ids(writer, "players")
    for player_id, name, kind, params in players:
        found = writer.rows("SELECT kind, params FROM players WHERE name = ?", (name,))
        if found:
            if (found[0][0], stored_value(found[0][1])) != (kind, stored_value(params)):
                raise ValueError(
                    f"{writer.location} already has a player named {name!r} with other "
                    "parameters; rename the run's player or copy into another store"
                )
            continue
        writer.execute(
            _insert("players", PLAYER_COLUMNS), (ids.take(int(player_id)), name, kind, params)
        )


def _copy_games(
    writer: ResultsStore, games: Sequence[tuple[Any, ...]], run_map: dict[int, int]
) -> tuple[dict[int, int], int]:
    """Source game id -> target game id of the games written; and how many were skipped."""
    ids = _Ids(writer, "games")
    scored: set[tuple[int, str]] = set()
    tries: set[tuple[int, str, float]] = set()  # incomplete tries, known by when they ended
    for run_id in set(run_map.values()):
        for key, status, finished in writer.rows(
            "SELECT game_key, status, finished FROM games WHERE run_id = ?", (run_id,)
        ):
            if status == "incomplete":
                tries.add((run_id, str(key), float(finished)))
            else:
                scored.add((run_id, str(key)))
    mapping: dict[int, int] = {}
    skipped = 0
    rows = []
    for row in games:
        run_id = run_map[int(row[1])]
        seen = scored if row[7] != "incomplete" else tries
        copy = (run_id, row[2]) if row[7] != "incomplete" else (run_id, row[2], float(row[11]))
        if copy in seen:  # already there: a second export adds nothing
            skipped += 1
            continue
        seen.add(copy)  # type: ignore[arg-type]
        mapping[int(row[0])] = ids.take(int(row[0]))
        rows.append((mapping[int(row[0])], run_id, *row[2:]))
    writer.execute_many(_insert("games", GAME_COLUMNS), rows)
    return mapping, skipped


def _copy_grades(
    writer: ResultsStore,
    grades: Sequence[tuple[Any, ...]],
    graded_games: Sequence[tuple[Any, ...]],
    game_map: dict[int, int],
    positions: Sequence[tuple[Any, ...]],
    per_player: dict[str, list[tuple[Any, ...]]],
) -> None:
    """The grades of the copied games and players (a grade already there is replaced)."""
    if not (grades or graded_games or positions or any(per_player.values())):
        return
    game_ids = [game_map[int(row[0])] for row in graded_games if int(row[0]) in game_map]
    for chunk in _chunks(game_ids):  # older grades of these games in the target give way
        marks = ", ".join("?" * len(chunk))
        writer.execute(f"DELETE FROM move_grades WHERE game_id IN ({marks})", chunk)
        writer.execute(f"DELETE FROM graded_games WHERE game_id IN ({marks})", chunk)
    writer.execute_many(
        _insert("move_grades", MOVE_GRADE_COLUMNS),
        [(game_map[int(row[0])], *row[1:]) for row in grades],
    )
    writer.execute_many(
        _insert("graded_games", ("game_id", "max_nodes", "unknown")),
        [(game_map[int(row[0])], *row[1:]) for row in graded_games if int(row[0]) in game_map],
    )
    writer.execute_many(
        "INSERT INTO c4_scores (history, score, max_nodes) VALUES (?, ?, ?) "
        "ON CONFLICT (history) DO NOTHING",
        positions,
    )
    for table, rows in per_player.items():
        columns = _PLAYER_TABLES[table]
        keys = ", ".join(columns[:-1])
        writer.execute_many(
            f"{_insert(table, columns)} ON CONFLICT ({keys}) DO UPDATE SET "
            f"{columns[-1]} = excluded.{columns[-1]}",
            rows,
        )
