"""The results store: every run, player, game and move in one SQLite file (WAL mode).

Or in a PostgreSQL database (``postgresql://`` URL, :mod:`strategic_arena.arena.postgres`),
which workers on many machines share (:mod:`strategic_arena.arena.leases`). Both back ends are
written from the one schema below (:data:`_SCHEMA`, column types filled per back end from
:data:`SQLITE_TYPES` / :data:`POSTGRES_TYPES`), in the SQL both speak (``ON CONFLICT``,
``RETURNING``), with the same rules; only opening, locking and explaining errors differ. The
SQLite file is exactly what it was before PostgreSQL came (same schema text, same statements'
effects).

Tables:

* ``runs`` -- one row per named run: its seed, settings (JSON) and creation time;
* ``players`` -- name, kind and parameters (JSON) of each participant; never secrets: the
  caller passes only what may be published, and :func:`check_no_secrets` refuses values that
  look like API keys;
* ``games`` -- one row per stored game of a run, keyed by ``(run_id, game_key)``: env id, seed,
  players by seat, returns, status, forfeiting seat, OpenSpiel history, timestamps, and for an
  ``incomplete`` game (a player's server failed) the error. A key has at most one *scored* game
  (``complete`` or ``forfeit``; a partial unique index) and any number of incomplete ones, one
  per failed try;
* ``moves`` -- every decision of a game: seat, action, canonical text, prompt messages (JSON),
  raw response, error kind and detail, tokens, latency, attempts, and every answer of a retried
  decision with the feedback sent after it (``tries``, JSON).

A game and its moves are written in one transaction (:meth:`ResultsStore.add_game`), so the
store holds a game completely or not at all; the unique key makes a re-run that plays a scored
game again a no-op, which is what resuming relies on (:meth:`ResultsStore.completed_keys`), and
the incomplete tries of a key say how often it was replayed
(:meth:`ResultsStore.incomplete_counts`). Readers return the frozen records of
:mod:`strategic_arena.arena.records`; only :meth:`ResultsStore.games` with
``include_incomplete=True`` and :meth:`ResultsStore.game` return incomplete games.

Durability and hostile input:

* **Locks.** A write waits for another process's lock (SQLite's busy handler, which backs off)
  up to ``lock_wait_s`` before it fails, and :class:`ResultsStore` serializes its own writes
  with a lock so the runner may write from worker threads, off its event loop.
* **Errors name their cause.** Every SQLite failure becomes a :class:`StoreError` (an
  ``OSError``) that says what happened -- locked, disk full, read-only, not a results store --
  never a follow-up error such as a failed rollback.
* **Read-only.** ``readonly=True`` (what :meth:`ResultsStore.for_reading` picks for a file or
  folder that cannot be written: an archive, a read-only mount) opens without switching the
  journal mode or writing the schema.
* **Sizes.** A response or reasoning text longer than ``max_response_chars`` is stored cut,
  with a note of its full length; the final answer of a decision is stored once (in
  ``moves.response``), not again in its ``tries``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shlex
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, cast

from strategic_arena.actions import ActionError, Attempt, ErrorKind
from strategic_arena.arena import postgres
from strategic_arena.arena.match import MatchRecord
from strategic_arena.arena.option_defaults import (
    DEFAULT_MAX_RESPONSE_CHARS as DEFAULT_MAX_RESPONSE_CHARS,
)
from strategic_arena.arena.records import (
    MoveStats,
    StoredGame,
    StoredMove,
    StoredPlayer,
    StoredRun,
)
from strategic_arena.door import decode, is_postgres, shown, store_target
from strategic_arena.seeding import secret_seed

SCHEMA_VERSION = 4

#: The schema of both back ends; ``{id}``, ``{int}`` and ``{real}`` are each back end's types.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id {id},
    name TEXT NOT NULL UNIQUE,
    seed {int} NOT NULL,
    settings TEXT NOT NULL,
    created {real} NOT NULL
);
CREATE TABLE IF NOT EXISTS players (
    id {id},
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    params TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS games (
    id {id},
    run_id {int} NOT NULL REFERENCES runs(id),
    game_key TEXT NOT NULL,
    env_id TEXT NOT NULL,
    seed {int} NOT NULL,
    players TEXT NOT NULL,
    returns TEXT NOT NULL,
    status TEXT NOT NULL,
    forfeited_by {int},
    history TEXT NOT NULL,
    duration_s {real} NOT NULL,
    finished {real} NOT NULL,
    infrastructure_error TEXT,
    prompts TEXT
);
CREATE TABLE IF NOT EXISTS moves (
    id {id},
    game_id {int} NOT NULL REFERENCES games(id),
    ply {int} NOT NULL,
    seat {int} NOT NULL,
    action {int},
    action_text TEXT NOT NULL,
    prompt TEXT NOT NULL,
    response TEXT NOT NULL,
    error_kind TEXT,
    error_detail TEXT,
    errors TEXT NOT NULL,
    failures TEXT NOT NULL DEFAULT '[]',
    reasoning TEXT,
    finish_reason TEXT,
    prompt_tokens {int} NOT NULL,
    completion_tokens {int} NOT NULL,
    latency_s {real} NOT NULL,
    attempts {int} NOT NULL,
    tries TEXT NOT NULL DEFAULT '[]',
    UNIQUE (game_id, ply)
);
"""

#: The column types of each back end (the schema's ``{id}``, ``{int}`` and ``{real}``): the
#: same columns, of the widths each database needs -- PostgreSQL's ``INTEGER`` and ``REAL``
#: are 32 bits, while seeds and token counts are 64-bit integers and times 64-bit floats.
SQLITE_TYPES = {"id": "INTEGER PRIMARY KEY", "int": "INTEGER", "real": "REAL"}
POSTGRES_TYPES = {
    "id": "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
    "int": "BIGINT",
    "real": "DOUBLE PRECISION",
}

#: Game leases of the runs that workers share (PostgreSQL only: claims need the server's row
#: locks, ``FOR UPDATE SKIP LOCKED``). One row per game still to play in the current round;
#: a worker holds a game while ``expires`` (the server's clock, seconds since the epoch) is
#: ahead, and deletes its row when it stores the game (see :mod:`strategic_arena.arena.leases`).
CLAIMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS claims (
    run_id {int} NOT NULL REFERENCES runs(id),
    game_key TEXT NOT NULL,
    position {int} NOT NULL,
    worker TEXT,
    expires {real},
    PRIMARY KEY (run_id, game_key)
);
CREATE INDEX IF NOT EXISTS claims_by_position ON claims (run_id, position);
"""

#: Indexes, created after a migration has rebuilt ``games``.
_INDEXES = """
CREATE INDEX IF NOT EXISTS games_by_run ON games (run_id);
CREATE UNIQUE INDEX IF NOT EXISTS games_scored ON games (run_id, game_key)
    WHERE status != 'incomplete';
"""

#: Columns of ``games`` in their stored order (the version-4 rebuild copies them).
_GAME_COLUMNS = (
    "id, run_id, game_key, env_id, seed, players, returns, status, forfeited_by, history, "
    "duration_s, finished"
)

#: Columns of ``moves`` added after version 1 (added to older stores on open).
_ADDED_MOVE_COLUMNS = {
    "failures": "TEXT NOT NULL DEFAULT '[]'",
    "reasoning": "TEXT",
    "finish_reason": "TEXT",
    "tries": "TEXT NOT NULL DEFAULT '[]'",
}

#: Columns of ``games`` added after version 4 (added to older stores on open): ``prompts``,
#: the prompt set of each seat (JSON list of ``{"name", "digest"}`` or ``null`` for a seat that
#: reads no prompt; ``NULL`` for games stored before).
_ADDED_GAME_COLUMNS = {"prompts": "TEXT"}

#: Strings that look like credentials: OpenAI-style ``sk-...`` keys, bearer tokens, a URL's
#: userinfo password (``//user:key@host``) and a URL query's value that is not masked
#: (``?api-key=...``; :func:`strategic_arena.door.shown` writes ``***``).
_SECRET = re.compile(
    r"sk-[A-Za-z0-9_\-]{8,}"
    r"|Bearer\s+\S+"
    r"|//[^/?#@\s]*:[^/?#@\s]*@"
    r"|[?&][^=&#\s'\"]+=(?!\*\*\*(?![^&#\s'\"]))[^&#\s'\"]+",
    re.IGNORECASE,
)

#: How long a write waits for another process's lock by default, in seconds.
DEFAULT_LOCK_WAIT_S = 300.0


class StoreError(OSError):
    """The results store cannot be opened, read or written; the message says why."""


class RunDeleted(ValueError):
    """The run a process writes to was deleted by another process (``runs --delete``)."""


class _OlderSchema(StoreError):
    """A store that must be upgraded before it can be read (so not read-only)."""


def explain(error: sqlite3.Error) -> str:
    """What a SQLite error means, in words (its own text kept after them)."""
    text = str(error)
    lowered = text.lower()
    causes = (
        (("locked", "busy"), "it is locked by another process"),
        (("full",), "the disk (or the database's size limit) is full"),
        (("readonly", "read-only"), "it is read-only"),
        (
            ("not a database", "malformed", "corrupt"),
            "it is not a results store (not SQLite, or corrupt)",
        ),
        (("unable to open", "disk i/o"), "it cannot be opened or read"),
    )
    for words, meaning in causes:
        if any(word in lowered for word in words):
            return f"{meaning} ({text})"
    return text


def connect_readonly(path: Path, timeout_s: float = DEFAULT_LOCK_WAIT_S) -> sqlite3.Connection:
    """A connection that never writes ``path``: no journal switch, no schema.

    Falls back to SQLite's ``immutable`` mode when even its shared-memory file cannot be made
    (a WAL database in a folder that cannot be written: an archive, a read-only mount).

    Raises:
        sqlite3.Error: the file cannot be read as SQLite.
    """
    if not path.is_file():
        raise sqlite3.OperationalError("unable to open database file: no such file")
    uri = path.resolve().as_uri() + "?mode=ro"
    for suffix in ("", "&immutable=1"):
        db = sqlite3.connect(uri + suffix, uri=True, check_same_thread=False, timeout=timeout_s)
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            db.close()
            if suffix:
                raise
            continue
        except BaseException:
            db.close()
            raise
        return db
    raise AssertionError("unreachable")


def capped(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with a note of its full length when cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text)} characters in all]"


def check_no_secrets(values: Mapping[str, Any], what: str) -> None:
    """Refuse parameters that look like credentials (they would end up in published files)."""
    for key, value in values.items():
        if _SECRET.search(str(key)) or _SECRET.search(str(value)):
            raise ValueError(f"{what} parameter {key!r} looks like a secret; it is not stored")


def _identity(params: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters that say what a player is (``base_url`` says only where it is served)."""
    return {key: value for key, value in params.items() if key != "base_url"}


#: Setting keys that say where or how a run was started, not what it plays: a run or player
#: reused with other values of these is the same run or player (``max_replays``: how often a
#: rerun may replay stopped games, which a user may raise between reruns).
LOCATION_KEYS = frozenset({"base_url", "command", "max_replays"})


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one mapping of dotted keys (``{"model": {"top_p": 1}}``: model.top_p)."""
    if not isinstance(value, Mapping) or (prefix and not value):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, item in value.items():
        flat.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def setting_differences(stored: Mapping[str, Any], given: Mapping[str, Any]) -> list[str]:
    """``key (stored value -> given value)`` for each setting that differs, dotted keys sorted.

    Compared as JSON (a tuple equals a list); :data:`LOCATION_KEYS` are left out.
    """
    missing = "(unset)"
    old = _flat(stored_value(json.dumps(dict(stored), sort_keys=True)))
    new = _flat(stored_value(json.dumps(dict(given), sort_keys=True)))
    keys = sorted(k for k in old.keys() | new.keys() if k.split(".")[-1] not in LOCATION_KEYS)
    shown = {key: (old.get(key, missing), new.get(key, missing)) for key in keys}
    return [
        f"{key} ({json.dumps(was)} stored, now {json.dumps(now)})"
        for key, (was, now) in shown.items()
        if was != now
    ]


class _Connection(Protocol):
    """The calls the store makes on its connection.

    ``sqlite3.Connection``'s; :class:`~strategic_arena.arena.postgres.PostgresConnection` makes
    them for PostgreSQL.
    """

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Any, /) -> Any: ...

    def executescript(self, script: str, /) -> Any: ...

    def close(self) -> None: ...


def stored_value(text: str | bytes) -> Any:
    """A JSON column's value, through the door: a store file is a file someone handed us.

    Lossless (a stored non-finite return reads back as it was written), depth-bounded.
    """
    return decode(text, "a value in the results store", finite=False)


def existing(db: str | Path) -> str | Path:
    """``db`` for a command that never creates a store: a URL as it is, a path to a file.

    Raises:
        ValueError: there is no file at the path (a wrong path is bad input), or ``db`` is
            neither a path nor a PostgreSQL URL (:func:`strategic_arena.door.store_target`).
    """
    db = store_target(db)
    if not is_postgres(db) and not Path(db).is_file():
        raise ValueError(f"no results store at {shown(db)}")
    return db


class ResultsStore:
    """A results database at ``path`` (created with its parent folder if missing).

    Args:
        path: the SQLite file, or a ``postgresql://`` URL: the same store in a PostgreSQL
            database (:mod:`strategic_arena.arena.postgres`), which workers on many machines
            can share. Its credentials come from libpq's environment (``PGPASSWORD``,
            ``~/.pgpass``) or the URL, and are never stored or shown.
        readonly: open for reading only (no journal switch, no schema write); the file must
            exist and hold the current schema.
        max_response_chars: the longest response or reasoning text stored per answer.
        lock_wait_s: how long a statement waits for another process's lock.

    Raises:
        StoreError: the file cannot be opened as a results store (the message says why).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        readonly: bool = False,
        max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS,
        lock_wait_s: float = DEFAULT_LOCK_WAIT_S,
    ) -> None:
        if max_response_chars < 1:
            raise ValueError("max_response_chars must be at least 1")
        path = store_target(path)  # a keyword string or another scheme: refused, not a file
        #: What the store was opened from (a path, or the URL with its credentials).
        self.target: str | Path = path
        #: The store's name in messages (a path, or the URL without credentials).
        self.location = shown(path)
        #: The SQLite file (a PostgreSQL store has none: messages use :attr:`location`).
        self.path = Path(self.location)
        #: Whether workers may share a run in this store (leases; PostgreSQL only).
        self.shared = is_postgres(path)
        self.readonly = readonly
        self.max_response_chars = max_response_chars
        self._lock = threading.RLock()  # one writer at a time on this connection
        self._errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
        self._integrity_errors: tuple[type[BaseException], ...] = (sqlite3.IntegrityError,)
        self._explain: Callable[[BaseException], str] = explain  # type: ignore[assignment]
        if self.shared:
            self._errors = postgres.errors()
            self._integrity_errors = postgres.integrity_errors()
            self._explain = functools.partial(postgres.explain, target=path)
        try:
            self._db: _Connection = self._open(lock_wait_s)
        except self._errors as error:
            raise StoreError(
                f"cannot open results store {self.location}: {self._explain(error)}"
            ) from None

    @classmethod
    def for_reading(cls, path: str | Path) -> ResultsStore:
        """The store at ``path`` for commands that only read it (report, replay, publish).

        Opened read-only: nothing is written (no journal switch, no schema), so an archived
        store, a read-only file or a read-only mount reads as it is; columns added since it was
        written read as their defaults. Only a store older than schema version 4, which must
        be rebuilt to be read, is opened for writing, where it can be.

        Raises:
            ValueError: there is no file at ``path``.
            StoreError: it is not a results store (the message says why).
        """
        path = store_target(path)
        if is_postgres(path):
            try:
                return cls(path, readonly=True)
            except _OlderSchema:
                raise StoreError(
                    f"cannot open results store {shown(path)}: it has an older schema, "
                    "which must be upgraded; open it once for writing (eval, runs)"
                ) from None
        where = Path(path)
        if not where.is_file():  # a wrong path is bad input, not a broken store
            raise ValueError(f"no results store at {shown(where)}")
        try:
            return cls(where, readonly=True)
        except _OlderSchema:
            if not (os.access(where, os.W_OK) and os.access(where.parent, os.W_OK | os.X_OK)):
                raise StoreError(
                    f"cannot open results store {where}: it has an older schema, which must be "
                    "upgraded, and it is read-only; open a writable copy once"
                ) from None
            return cls(where)

    def _open(self, lock_wait_s: float) -> _Connection:
        """The connection, set up for writing or reading only."""
        if self.shared:
            return self._open_postgres()
        if self.readonly:
            return self._open_readonly(lock_wait_s)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One connection per store object; autocommit off, explicit transactions below. The
        # timeout is SQLite's busy handler: a statement backs off and waits for a lock.
        db = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=lock_wait_s
        )
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.executescript(_SCHEMA.format(**SQLITE_TYPES))
            self._db = db
            self._migrate()
        except BaseException:
            db.close()
            raise
        return db

    def _open_postgres(self) -> _Connection:
        """A session on the PostgreSQL store, its schema created or upgraded when writable."""
        db = postgres.PostgresConnection(str(self.target), readonly=self.readonly)
        self._db = db
        try:
            if self.readonly:
                if not {"games", "moves"} <= db.table_names():
                    raise StoreError(
                        f"cannot open results store {self.location}: it is not a results store "
                        "(no games table)"
                    )
                if self._schema_is_older() or self._missing_columns():
                    raise _OlderSchema(f"results store {self.location} has an older schema")
                return db
            db.executescript((_SCHEMA + CLAIMS_SCHEMA).format(**POSTGRES_TYPES))
            self._migrate()
        except BaseException:
            db.close()
            raise
        return db

    def _open_readonly(self, lock_wait_s: float) -> sqlite3.Connection:
        """A read-only connection to a results store of the current schema."""
        db = connect_readonly(Path(self.target), lock_wait_s)
        self._db = db
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
            if "games" not in tables or "moves" not in tables:
                raise sqlite3.DatabaseError("not a database of this package: no games table")
            if self._schema_is_older():
                raise _OlderSchema(
                    f"cannot open results store {self.path} read-only: it has an older schema"
                )
            self._shadow_missing_columns()
        except BaseException:
            db.close()
            raise
        return db

    def _schema_is_older(self) -> bool:
        """Whether the store must be upgraded (by :meth:`_migrate`) before it can be read."""
        row = None
        if "meta" in self.table_names():
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        stored = int(row[0]) if row is not None and str(row[0]).isdigit() else 0
        return stored < SCHEMA_VERSION or self._games_need_rebuild()

    def _shadow_missing_columns(self) -> None:
        """Read-only: columns added since the store was written, read as their defaults.

        A temporary view (in memory, never in the file) named like the table shows the table
        with each missing added column as its default, so an archived store of an older
        version reads without being upgraded.
        """
        shown: dict[str, list[str]] = {}
        for table, column, definition in self._missing_columns():
            default = re.search(r"DEFAULT\s+('(?:[^']|'')*'|\S+)", definition)
            value = default.group(1) if default else "NULL"
            shown.setdefault(table, []).append(f"{value} AS {column}")
        for table, columns in shown.items():
            self._db.execute(
                f"CREATE TEMP VIEW {table} AS SELECT *, {', '.join(columns)} FROM main.{table}"
            )

    def _missing_columns(self) -> list[tuple[str, str, str]]:
        """``(table, column, definition)`` of every added column an older store lacks."""
        missing = []
        for table, added in (("moves", _ADDED_MOVE_COLUMNS), ("games", _ADDED_GAME_COLUMNS)):
            columns = self._columns(table)
            missing += [(table, c, d) for c, d in added.items() if c not in columns]
        return missing

    def _columns(self, table: str) -> set[str]:
        """The column names of ``table`` as stored (not as a read-only view shows them)."""
        if isinstance(self._db, sqlite3.Connection):
            return {row[1] for row in self._db.execute(f"PRAGMA main.table_info({table})")}
        return cast(postgres.PostgresConnection, self._db).columns(table)

    def _migrate(self) -> None:
        """Bring an older store up to :data:`SCHEMA_VERSION`, keeping its data."""
        if self._games_need_rebuild():
            self._rebuild_games()
        self._db.executescript(_INDEXES)
        for table, column, definition in self._missing_columns():
            if self.shared:  # PostgreSQL says IF NOT EXISTS
                self._db.execute(
                    f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {definition}"
                )
                continue
            try:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
            except sqlite3.OperationalError as error:  # another process added it first
                if "duplicate column" not in str(error):
                    raise
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or row[0] != str(SCHEMA_VERSION):  # written once, not on every open
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

    def _games_need_rebuild(self) -> bool:
        """Whether ``games`` is older than version 4 (one row per key, no error column)."""
        return "infrastructure_error" not in self._columns("games")

    def _rebuild_games(self) -> None:
        """Version 4: recreate ``games`` without its table-wide unique key.

        SQLite cannot drop a constraint in place; without it a key can hold incomplete tries
        beside its scored game (the partial index ``games_scored`` keeps scored games unique).
        """
        db = self._db
        db.execute("PRAGMA foreign_keys=OFF")  # moves reference games while the table is swapped
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                if self._games_need_rebuild():  # another process may have done it meanwhile
                    schema = _SCHEMA.format(**SQLITE_TYPES)
                    table = schema[schema.index("CREATE TABLE IF NOT EXISTS games") :]
                    table = table[: table.index(");") + 2]
                    db.execute(table.replace("IF NOT EXISTS games", "games_v4"))
                    db.execute(
                        f"INSERT INTO games_v4 ({_GAME_COLUMNS}) SELECT {_GAME_COLUMNS} FROM games"
                    )
                    db.execute("DROP TABLE games")
                    db.execute("ALTER TABLE games_v4 RENAME TO games")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        finally:
            db.execute("PRAGMA foreign_keys=ON")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Everything written inside is committed together, or not at all on an exception.

        ``eval`` registers its run and players in one, so a refused run leaves nothing behind.
        SQLite errors inside become :class:`StoreError` naming their cause.
        """
        with self._lock:
            # SQLite: take the write lock now, not at the first write (no deadlock between
            # two readers that both want to write). PostgreSQL locks rows as they are written.
            self._execute_or_explain("BEGIN" if self.shared else "BEGIN IMMEDIATE")
            try:
                yield
            except self._errors as error:
                self._rollback()
                raise StoreError(
                    f"cannot write to {self.location}: {self._explain(error)}"
                ) from None
            except BaseException:
                self._rollback()
                raise
            self._execute_or_explain("COMMIT")

    def _execute_or_explain(self, statement: str) -> None:
        """Run a transaction statement; a failure becomes a :class:`StoreError`."""
        try:
            self._db.execute(statement)
        except self._errors as error:
            self._rollback()
            raise StoreError(f"cannot write to {self.location}: {self._explain(error)}") from None

    def _rollback(self) -> None:
        """Roll back if a transaction is open (SQLite ends some on its own, e.g. disk full)."""
        with contextlib.suppress(*self._errors):  # the original error is the one to report
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, name: str, seed: int, settings: Mapping[str, Any]) -> int:
        """The id of run ``name``, created if new (see :meth:`open_run`)."""
        return self.open_run(name, seed, settings).id

    def open_run(
        self,
        name: str,
        seed: int | None,
        settings: Mapping[str, Any],
        *,
        rename: str = "--run-name",
        repin_if: Callable[[StoredRun], bool] | None = None,
    ) -> StoredRun:
        """Run ``name``, created if new.

        Args:
            name: the run.
            seed: its root seed; an existing run must have this one. ``None``: the existing
                run's, or for a new run a secret seed drawn from the OS
                (:func:`strategic_arena.seeding.secret_seed`).
            settings: public settings stored with a new run. An existing run must have the
                same settings (apart from :data:`LOCATION_KEYS`): a name reused for other
                settings would add games its stored settings do not describe, so it is a
                ``ValueError`` naming the keys that differ.
            rename: how the refusal tells the user to name the run another way (the command's
                option); the refusal also gives the delete command with this store's ``--db``.
            repin_if: an existing run with another seed or other settings for which this
                says yes (it holds nothing yet: a first attempt that stored nothing) takes
                the new seed and settings instead of refusing them.
        """
        check_no_secrets(settings, "run")
        row = self._run_row(name)
        if row is None:
            # DO NOTHING: another process may create the same run between the SELECT and here;
            # then its seed wins when none was given.
            self._db.execute(
                "INSERT INTO runs (name, seed, settings, created) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (
                    name,
                    secret_seed() if seed is None else seed,
                    json.dumps(dict(settings), sort_keys=True),
                    time.time(),
                ),
            )
            row = self._run_row(name)
            assert row is not None
        other_seed = seed is not None and row.seed != seed
        differences = setting_differences(row.settings, settings)
        if (other_seed or differences) and repin_if is not None and repin_if(row):
            self._db.execute(
                "UPDATE runs SET seed = ?, settings = ? WHERE id = ?",
                (
                    row.seed if seed is None else seed,
                    json.dumps(dict(settings), sort_keys=True),
                    row.id,
                ),
            )
            repinned = self._run_row(name)
            assert repinned is not None
            return repinned
        if other_seed:
            raise ValueError(f"run {name!r} exists with seed {row.seed}, not {seed}")
        if differences:
            delete = shlex.join(
                ["strategic-arena", "runs", "--delete", name, "--db", self.location]
            )
            raise ValueError(
                f"run {name!r} exists in {self.location} with other settings: "
                f"{'; '.join(differences)}. Give this one another name ({rename}), or "
                f"delete the stored run first ({delete})"
            )
        return row

    def _run_row(self, name: str) -> StoredRun | None:
        row = self._db.execute(
            "SELECT id, name, seed, settings, created FROM runs WHERE name = ?", (name,)
        ).fetchone()
        return (
            None if row is None else StoredRun(row[0], row[1], row[2], stored_value(row[3]), row[4])
        )

    def player(self, name: str, kind: str, params: Mapping[str, Any]) -> int:
        """The id of player ``name`` (registered with its kind and public parameters).

        Names identify players across runs (reports and leaderboards pool a name's games), so a
        name already stored as another player -- another kind, or other parameters apart from
        ``base_url`` (where a model is served, not what it is) -- is a ``ValueError``.
        """
        check_no_secrets(params, f"player {name!r}")
        encoded = json.dumps(dict(params), sort_keys=True)
        self._db.execute(
            "INSERT INTO players (name, kind, params) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (name, kind, encoded),
        )
        row = self._db.execute(
            "SELECT id, kind, params FROM players WHERE name = ?", (name,)
        ).fetchone()
        stored_params = stored_value(row[2])
        if row[1] != kind or _identity(stored_params) != _identity(stored_value(encoded)):
            differences = setting_differences(
                {"kind": row[1], **stored_params}, {"kind": kind, **stored_value(encoded)}
            )
            raise ValueError(
                f"{self.location} already has a player named {name!r} with other parameters: "
                f"{'; '.join(differences)}. Give this one another name (--name), or another "
                "--db"
            )
        return int(row[0])

    def completed_keys(self, run_id: int) -> set[str]:
        """Keys of the scored games of ``run_id`` (a resumed run skips them)."""
        rows = self._db.execute(
            "SELECT game_key FROM games WHERE run_id = ? AND status != 'incomplete'", (run_id,)
        )
        return {str(key) for (key,) in rows}

    def incomplete_counts(self, run_id: int) -> Counter[str]:
        """How many incomplete tries each key of ``run_id`` has stored (scored keys included)."""
        rows = self._db.execute(
            "SELECT game_key, COUNT(*) FROM games WHERE run_id = ? AND status = 'incomplete' "
            "GROUP BY game_key",
            (run_id,),
        )
        return Counter({str(key): int(count) for key, count in rows})

    def add_game(self, run_id: int, game_key: str, record: MatchRecord) -> bool:
        """Store a game and all its moves in one transaction.

        A scored game (``complete`` or ``forfeit``) is stored once per key; an ``incomplete``
        one is stored as one more try of its key, unless the key is already scored.

        Returns:
            ``False`` when nothing was written (the key already has a scored game), else
            ``True``.
        """
        for attempt in range(2):
            try:
                with self.transaction():
                    stored = self._add_game(run_id, game_key, record)
                    if self.shared:  # the game is stored: its lease (if any) ends with it
                        self._db.execute(
                            "DELETE FROM claims WHERE run_id = ? AND game_key = ?",
                            (run_id, game_key),
                        )
                    return stored
            except StoreError:
                # A PostgreSQL session the server or the network dropped took this
                # transaction with it: nothing was written, so it is written again once on a
                # new session.
                if attempt or not self._connection_lost():
                    raise
        raise AssertionError("unreachable")

    def _connection_lost(self) -> bool:
        """Whether the store's PostgreSQL session was dropped (never for SQLite)."""
        return self.shared and cast(postgres.PostgresConnection, self._db).lost()

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """Run one statement; its first row, if any. For the store's own modules (leases).

        Raises:
            StoreError: the database failed (the message says why).
        """
        with self._lock:
            try:
                cursor = self._db.execute(sql, tuple(parameters))
                row = cursor.fetchone() if cursor.description is not None else None
            except self._errors as error:
                raise StoreError(
                    f"cannot use results store {self.location}: {self._explain(error)}"
                ) from None
        return None if row is None else tuple(row)

    def rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one query, as stored. For the store's own modules (copying runs).

        Raises:
            StoreError: the database failed (the message says why).
        """
        with self._lock:
            try:
                return [tuple(row) for row in self._db.execute(sql, tuple(parameters))]
            except self._errors as error:
                raise StoreError(
                    f"cannot read results store {self.location}: {self._explain(error)}"
                ) from None

    def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement per row of parameters (inside :meth:`transaction`)."""
        self._db.executemany(sql, [tuple(row) for row in rows])

    def _add_game(self, run_id: int, game_key: str, record: MatchRecord) -> bool:
        """:meth:`add_game` inside its transaction (``False``: nothing to write)."""
        db = self._db
        scored = db.execute(
            "SELECT 1 FROM games WHERE run_id = ? AND game_key = ? AND status != 'incomplete'",
            (run_id, game_key),
        ).fetchone()
        if record.status == "incomplete" and scored:
            return False
        try:
            cursor = db.execute(
                "INSERT INTO games (run_id, game_key, env_id, seed, players, returns, "
                "status, forfeited_by, history, duration_s, finished, infrastructure_error, "
                "prompts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING RETURNING id",
                (
                    run_id,
                    game_key,
                    record.env_id,
                    record.seed,
                    json.dumps(list(record.players)),
                    json.dumps(list(record.returns)),
                    record.status,
                    record.forfeited_by,
                    json.dumps(list(record.history)),
                    record.duration_s,
                    time.time(),
                    record.infrastructure_error,
                    json.dumps(list(record.prompts)) if any(record.prompts) else None,
                ),
            )
        except self._integrity_errors:
            if db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
                raise RunDeleted(
                    f"the run this eval writes to (id {run_id}) was deleted from the store "
                    "while it ran ('strategic-arena runs --delete'); its games of this call "
                    "are not stored: rerun the same command to play the run again"
                ) from None
            raise
        inserted = cursor.fetchone()
        if inserted is None:  # the key was scored meanwhile (by another process)
            return False
        game_id = int(inserted[0])
        cap = self.max_response_chars
        rows = []
        for move in record.moves:
            decision = move.decision
            response = capped(move.response, cap)
            reasoning = None if decision.reasoning is None else capped(decision.reasoning, cap)
            tries = [_encode_attempt(attempt, cap) for attempt in decision.tries]
            if tries and (tries[-1]["response"], tries[-1]["reasoning"]) == (response, reasoning):
                # The final answer is the move's own response: stored once, in its column.
                del tries[-1]["response"], tries[-1]["reasoning"]
            rows.append(
                (
                    game_id,
                    move.index,
                    move.seat,
                    move.action,
                    move.action_text,
                    json.dumps([dict(m) for m in decision.prompt]),
                    response,
                    move.error.kind if move.error else None,
                    capped(move.error.detail, cap) if move.error else None,
                    json.dumps([[e.kind, capped(e.detail, cap)] for e in decision.errors]),
                    json.dumps(list(decision.failures)),
                    reasoning,
                    decision.finish_reason,
                    _token_count(decision.usage.get("prompt_tokens", 0)),
                    _token_count(decision.usage.get("completion_tokens", 0)),
                    decision.latency_s,
                    decision.attempts,
                    json.dumps(tries),
                )
            )
        db.executemany(
            "INSERT INTO moves (game_id, ply, seat, action, action_text, prompt, response, "
            "error_kind, error_detail, errors, failures, reasoning, finish_reason, "
            "prompt_tokens, completion_tokens, latency_s, attempts, tries) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        return True

    def table_names(self) -> set[str]:
        """The tables of the database (other modules keep theirs in the same file)."""
        if self.shared:
            return cast(postgres.PostgresConnection, self._db).table_names()
        return {str(row[0]) for row in self._db.execute("SELECT name FROM sqlite_master")}

    def runs(self) -> list[StoredRun]:
        """Every run, oldest first."""
        rows = self._db.execute("SELECT id, name, seed, settings, created FROM runs ORDER BY id")
        return [StoredRun(r[0], r[1], r[2], stored_value(r[3]), r[4]) for r in rows]

    def run_id(self, name: str) -> int:
        """The id of run ``name``; ``KeyError`` naming the known runs if there is none."""
        row = self._db.execute("SELECT id FROM runs WHERE name = ?", (name,)).fetchone()
        if row is None:
            known = ", ".join(run.name for run in self.runs()) or "none"
            raise KeyError(f"no run named {name!r} in {self.location} (runs: {known})")
        return int(row[0])

    def rename_run(self, name: str, new_name: str) -> None:
        """Rename run ``name`` to ``new_name`` (``KeyError``: unknown; ``ValueError``: taken)."""
        run_id = self.run_id(name)
        taken = self._db.execute("SELECT 1 FROM runs WHERE name = ?", (new_name,)).fetchone()
        if taken is not None:
            raise ValueError(f"{self.location} already has a run named {new_name!r}")
        with self.transaction():
            self._db.execute("UPDATE runs SET name = ? WHERE id = ?", (new_name, run_id))

    def delete_run(self, name: str, before: Callable[[int], object] | None = None) -> list[int]:
        """Delete run ``name`` with its games and moves, in one transaction; returns the game ids.

        Players stay (other runs may have them); a later run may reuse the name. ``before`` is
        called with the run's id inside the transaction, first: an upper layer's rows keyed by
        the run (a transfer run's answers) go with it, or nothing does.
        """
        run_id = self.run_id(name)
        rows = self._db.execute("SELECT id FROM games WHERE run_id = ?", (run_id,))
        game_ids = [int(row[0]) for row in rows]
        with self.transaction():
            if before is not None:
                before(run_id)
            self._db.execute(
                "DELETE FROM moves WHERE game_id IN (SELECT id FROM games WHERE run_id = ?)",
                (run_id,),
            )
            self._db.execute("DELETE FROM games WHERE run_id = ?", (run_id,))
            if self.shared:
                self._db.execute("DELETE FROM claims WHERE run_id = ?", (run_id,))
            self._db.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return game_ids

    def players(self) -> dict[str, StoredPlayer]:
        """Registered players by name."""
        rows = self._db.execute("SELECT name, kind, params FROM players ORDER BY id")
        return {r[0]: StoredPlayer(r[0], r[1], stored_value(r[2])) for r in rows}

    def move_stats(self, run_ids: Iterable[int] | None = None) -> list[MoveStats]:
        """Per-move numbers for metrics, without prompts or responses.

        Every game's moves, incomplete games included: their failed requests are reported apart.
        """
        query = (
            "SELECT m.game_id, m.seat, m.errors, m.failures, m.attempts, m.prompt_tokens, "
            "m.completion_tokens, m.latency_s FROM moves m JOIN games g ON g.id = m.game_id"
        )
        params: tuple[int, ...] = ()
        if run_ids is not None:
            params = tuple(run_ids)
            query += f" WHERE g.run_id IN ({', '.join('?' * len(params)) or 'NULL'})"
        rows = self._db.execute(query + " ORDER BY m.game_id, m.ply", params)
        return [
            MoveStats(
                game_id=r[0],
                seat=r[1],
                errors=tuple(kind for kind, _ in stored_value(r[2])),
                failures=tuple(stored_value(r[3])),
                attempts=r[4],
                prompt_tokens=r[5],
                completion_tokens=r[6],
                latency_s=r[7],
            )
            for r in rows
        ]

    def game(self, game_id: int) -> StoredGame:
        """One stored game, whatever its status; ``KeyError`` if there is none."""
        for game in self._select_games(" WHERE id = ?", (game_id,)):
            return game
        raise KeyError(f"no game with id {game_id} in {self.location}")

    def games(
        self, run_id: int | None = None, *, include_incomplete: bool = False
    ) -> list[StoredGame]:
        """Stored games (of one run or all), oldest first.

        Args:
            run_id: only this run's games.
            include_incomplete: also the incomplete games, which no score counts (left out by
                default so that no caller scores them by mistake).
        """
        where = [] if include_incomplete else ["status != 'incomplete'"]
        params: tuple[Any, ...] = ()
        if run_id is not None:
            where.append("run_id = ?")
            params = (run_id,)
        return self._select_games(" WHERE " + " AND ".join(where) if where else "", params)

    def _select_games(self, where: str, params: tuple[Any, ...]) -> list[StoredGame]:
        query = f"SELECT {_GAME_COLUMNS}, infrastructure_error, prompts FROM games"
        rows = self._db.execute(query + where + " ORDER BY id", params)
        return [
            StoredGame(
                id=row[0],
                run_id=row[1],
                game_key=row[2],
                env_id=row[3],
                seed=row[4],
                players=tuple(stored_value(row[5])),
                returns=tuple(float(r) for r in stored_value(row[6])),
                status=row[7],
                forfeited_by=row[8],
                history=tuple(stored_value(row[9])),
                duration_s=row[10],
                finished=row[11],
                infrastructure_error=row[12],
                prompts=tuple(stored_value(row[13])) if row[13] else (),
            )
            for row in rows
        ]

    def moves(self, game_id: int) -> list[StoredMove]:
        """The stored moves of one game, in order."""
        rows = self._db.execute(
            "SELECT ply, seat, action, action_text, prompt, response, error_kind, error_detail, "
            "errors, failures, reasoning, finish_reason, prompt_tokens, completion_tokens, "
            "latency_s, attempts, tries FROM moves WHERE game_id = ? ORDER BY ply",
            (game_id,),
        )
        return [
            StoredMove(
                ply=r[0],
                seat=r[1],
                action=r[2],
                action_text=r[3],
                prompt=tuple(stored_value(r[4])),
                response=r[5],
                error=None if r[6] is None else _error(r[6], r[7] or ""),
                errors=tuple(_error(kind, detail) for kind, detail in stored_value(r[8])),
                failures=tuple(stored_value(r[9])),
                reasoning=r[10],
                finish_reason=r[11],
                prompt_tokens=r[12],
                completion_tokens=r[13],
                latency_s=r[14],
                attempts=r[15],
                tries=tuple(_decode_attempt(a, r[5], r[10]) for a in stored_value(r[16])),
            )
            for r in rows
        ]


def _error(kind: str, detail: str) -> ActionError:
    """An :class:`ActionError` read back from the store."""
    return ActionError(cast(ErrorKind, kind), detail)


def _token_count(value: object) -> int:
    """A token count as SQLite can hold it (players other than the backend's may overflow)."""
    return value if isinstance(value, int) and 0 <= value < 2**63 else 0


def _encode_attempt(attempt: Attempt, cap: int) -> dict[str, Any]:
    """One answer of a decision as JSON, its texts cut to ``cap`` characters."""
    error = attempt.error
    return {
        "response": capped(attempt.response, cap),
        "error": None if error is None else [error.kind, error.detail],
        "feedback": attempt.feedback,
        "reasoning": None if attempt.reasoning is None else capped(attempt.reasoning, cap),
        "finish_reason": attempt.finish_reason,
        "failures": list(attempt.failures),
    }


def _decode_attempt(
    data: Mapping[str, Any], final_response: str, final_reasoning: str | None
) -> Attempt:
    """The inverse of :func:`_encode_attempt`.

    The final answer's texts are absent (stored once, in the move's columns): they are the
    move's ``final_response`` and ``final_reasoning``.
    """
    error = data.get("error")
    return Attempt(
        response=str(data.get("response", final_response)),
        error=None if error is None else _error(error[0], error[1]),
        feedback=data.get("feedback"),
        reasoning=data.get("reasoning", final_reasoning),
        finish_reason=data.get("finish_reason"),
        failures=tuple(data.get("failures", ())),
    )
