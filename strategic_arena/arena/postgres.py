"""The PostgreSQL back end of the results store: a connection that reads like SQLite's.

A store at a ``postgresql://`` (or ``postgres://``) URL holds the same tables as the SQLite
file, written from the same schema (:mod:`strategic_arena.arena.store`), so every reader and
writer of the store runs unchanged on either. This module adapts psycopg 3 (the ``postgres``
extra, imported on first use) to the few calls the store makes:

* statements are written once, in the syntax both databases share (``?`` placeholders are
  turned into psycopg's ``%s``; the store's SQL has no ``?`` or ``%`` in its literals);
* the session runs in autocommit, and the store opens and ends its own transactions, as it
  does on SQLite; a read-only store is a read-only session (``default_transaction_read_only``),
  so the server itself refuses any write;
* a connection the server or the network dropped is reopened once, on the next statement
  outside a transaction (a statement inside one fails: its transaction is gone, and the
  store's writer replays it whole, see :meth:`ResultsStore.add_game`);
* every driver error is explained in words (:func:`explain`): cannot connect, authentication,
  permission, disk full, read-only, the connection lost.

Credentials come from where libpq takes them -- the URL, ``PGPASSWORD`` and the other ``PG*``
variables, ``~/.pgpass`` or ``PGPASSFILE`` -- and go nowhere else: the store keeps no URL, and
every message names the store by :func:`strategic_arena.arena.store.location`, the URL without
user, password or query values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from strategic_arena._extras import require
from strategic_arena.door import postgres_params, scrub

#: SQLSTATE classes and codes of the errors a user must act on, with what they mean.
_CAUSES_BY_STATE = (
    ("28", "authentication failed (check the user, and the password in PGPASSWORD or ~/.pgpass)"),
    ("42501", "permission denied (the user may not read or write these tables)"),
    ("53100", "the database server's disk is full"),
    ("53", "the database server is out of resources"),
    ("25006", "it is read-only"),
    ("57P", "the server shut the connection down"),
    ("08", "the connection to the database server failed or was lost"),
    ("3D000", "the database does not exist (create it first: createdb NAME)"),
)

#: Words of libpq's messages for errors raised before any SQLSTATE is known.
_CAUSES_BY_TEXT = (
    (("password authentication", "authentication failed", "no password supplied"),
     "authentication failed (check the user, and the password in PGPASSWORD or ~/.pgpass)"),
    (("does not exist",), "the database or user does not exist"),
    (("connection refused", "could not connect", "no such file or directory", "timeout",
      "could not translate host name", "name or service not known"),
     "cannot connect to the database server (is it running, and is the URL right?)"),
    (("server closed the connection", "connection is closed", "consuming input failed",
      "terminating connection", "connection is lost", "ssl syscall"),
     "the connection to the database server was lost"),
    (("no space left", "disk full"), "the database server's disk is full"),
    (("permission denied",), "permission denied (the user may not read or write these tables)"),
    (("read-only",), "it is read-only"),
)  # fmt: skip

#: A password in a URL or a libpq keyword string, wherever a driver message may repeat it.
_PASSWORD = re.compile(r"(password\s*=\s*)\S+|(//[^/:@\s]*:)[^@\s]*@", re.IGNORECASE)


def explain(error: BaseException, target: str | Path | None = None) -> str:
    """What a PostgreSQL error means, in words, with the driver's first line (no password).

    ``target``: the store's URL, whose every secret is masked in the driver's text too
    (:func:`strategic_arena.door.scrub`), whatever form the driver repeats it in.
    """
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    if target is not None:
        first = scrub(first, target)
    detail = _PASSWORD.sub(lambda m: (m.group(1) or m.group(2) or "") + "***", first)
    state = str(getattr(error, "sqlstate", None) or "")
    for prefix, meaning in _CAUSES_BY_STATE:
        if state.startswith(prefix):
            return f"{meaning} ({detail})"
    lowered = detail.lower()
    for words, meaning in _CAUSES_BY_TEXT:
        if any(word in lowered for word in words):
            return f"{meaning} ({detail})"
    return detail


def is_driver_error(error: BaseException) -> bool:
    """Whether ``error`` is psycopg's (without importing psycopg)."""
    return type(error).__module__.split(".", 1)[0] == "psycopg"


def errors() -> tuple[type[BaseException], ...]:
    """The driver's error types (the store turns them into ``StoreError``)."""
    psycopg = require("psycopg", "a PostgreSQL results store")
    return (psycopg.Error,)


def integrity_errors() -> tuple[type[BaseException], ...]:
    """The driver's constraint-violation errors (a foreign key whose run was deleted)."""
    psycopg = require("psycopg", "a PostgreSQL results store")
    return (psycopg.IntegrityError,)


#: Seconds a session may sit idle inside a transaction before the server ends it (a store's
#: transactions take milliseconds between their statements).
IDLE_IN_TRANSACTION_S = 20


class PostgresConnection:
    """A psycopg connection with the calls of ``sqlite3.Connection`` the store makes.

    Args:
        url: the store's URL (libpq's environment supplies what it leaves out).
        readonly: a read-only session: the server refuses every write.
        connect_timeout_s: how long to wait for the server before the open fails.
    """

    def __init__(self, url: str, *, readonly: bool = False, connect_timeout_s: int = 10) -> None:
        self._psycopg = require("psycopg", "a PostgreSQL results store")
        self._url = url
        self._readonly = readonly
        self._timeout_s = connect_timeout_s
        self._conn = self._connect()

    def _connect(self) -> Any:
        # A session that stalls inside a transaction (a frozen or swapped-out worker) would hold
        # its row locks, and every other worker offering or storing the same games would wait
        # on it forever: the server ends such a session after IDLE_IN_TRANSACTION_S, and the
        # worker, if it wakes, finds its session lost and writes the game again.
        options = f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_S * 1000}"
        if self._readonly:
            options += " -c default_transaction_read_only=on"
        # The URL's parts, taken apart by the door, go as separate parameters: the driver never
        # parses the URL, so a password with a raw "@", "/" or space stays the password (libpq
        # would read its tail as a host name and print it back in an error).
        params: dict[str, Any] = {
            **postgres_params(self._url),
            "connect_timeout": self._timeout_s,
            "application_name": "strategic-arena",
            "options": options,
        }
        return self._psycopg.connect(autocommit=True, **params)

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (``sqlite3.Connection.in_transaction``).

        A lost session has none: its transaction died with it, so there is nothing to roll
        back (and rolling back must not open a new session, which would hide the loss from
        the writer that replays the transaction).
        """
        if self.lost():
            return False
        status = self._conn.info.transaction_status
        return bool(status != self._psycopg.pq.TransactionStatus.IDLE)

    def lost(self) -> bool:
        """Whether the connection is closed or broken (the next statement reopens it)."""
        return bool(self._conn.closed or self._conn.broken)

    def reconnect(self) -> None:
        """Open a new session in place of a lost one."""
        try:
            self._conn.close()
        finally:
            self._conn = self._connect()

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        """Run one statement; returns its cursor (``fetchone``, iteration, ``rowcount``).

        Outside a transaction, a lost connection is reopened and the statement run again once.
        """
        statement = sql.replace("?", "%s")
        values = [_storable(value) for value in parameters] or None
        if self.lost():
            self.reconnect()
        idle = not self.in_transaction
        try:
            return self._conn.execute(statement, values)
        except self._psycopg.OperationalError:
            if not (idle and self.lost()):  # inside a transaction: it is gone, so is its work
                raise
            self.reconnect()
            return self._conn.execute(statement, values)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each row of parameters (inside the caller's transaction)."""
        with self._conn.cursor() as cursor:
            cursor.executemany(
                sql.replace("?", "%s"), [[_storable(value) for value in row] for row in rows]
            )

    def executescript(self, script: str) -> None:
        """Run several statements (a schema), as one transaction under a server-wide lock.

        The advisory lock keeps workers that open a new store at once from creating its
        tables together (``CREATE TABLE IF NOT EXISTS`` is not safe against that).
        """
        with self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(7423185503)")
            self._conn.execute(script)

    def table_names(self) -> set[str]:
        """The tables of the store's schema (the session's ``search_path``)."""
        # The catalog, not information_schema: that one hides tables the user may not read,
        # and a store the user may not read must say so, not "no results store".
        rows = self._conn.execute(
            "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
        )
        return {str(row[0]) for row in rows}

    def columns(self, table: str) -> set[str]:
        """The column names of ``table``."""
        rows = self._conn.execute(
            "SELECT attname FROM pg_catalog.pg_attribute "
            "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped",
            (table,),
        )
        return {str(row[0]) for row in rows}

    def close(self) -> None:
        """Close the session."""
        self._conn.close()


def _storable(value: Any) -> Any:
    """A parameter as PostgreSQL text can hold it: NUL, which ``text`` refuses, as U+FFFD.

    A hostile endpoint may send NUL characters; SQLite keeps them, PostgreSQL cannot. The
    game is kept, with each NUL shown as the replacement character.
    """
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value
