"""A real PostgreSQL server for the tests: one per test session, a fresh database per test.

The server is the system's (Debian's ``postgresql`` package, which ``.ci/run`` installs as it
installs Chromium): ``initdb`` into a temporary folder, listening on a Unix socket there and on
a free loopback port, with ``fsync`` off (a test server loses nothing it must keep). PostgreSQL
refuses to run as root, so as root it runs as the ``postgres`` user the package creates.

Local connections (the socket) are trusted; TCP connections need the password
:data:`PASSWORD`, so the credential tests have a real authentication to pass or fail. Tests
skip, saying why, where psycopg or the server binaries are missing.

``tests/conftest.py`` offers its fixtures to every test: ``pg_url`` (the URL of a new, empty
database) and ``pg_server``.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The superuser's password over TCP (the socket needs none).
PASSWORD = "arena-test-password"
USER = "arena"


@dataclass
class Server:
    """A running test server: its socket folder, its TCP port and how to reach a database."""

    folder: Path
    port: int
    run_as: list[str]
    bin: Path
    _databases: itertools.count[int]

    def url(self, database: str) -> str:
        """A URL of ``database`` over the Unix socket (no password needed)."""
        return f"postgresql://{USER}@/{database}?host={self.folder}&port={self.port}"

    def tcp_url(self, database: str, password: str | None = None) -> str:
        """A URL of ``database`` over TCP on 127.0.0.1 (with ``password`` in it, if given)."""
        auth = f"{USER}:{password}" if password is not None else USER
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new, empty database; returns its name."""
        import psycopg

        name = f"arena_test_{next(self._databases)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return name

    def sql(self, database: str, statement: str) -> list[tuple[object, ...]]:
        """Run ``statement`` in ``database`` as the superuser; its rows."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as admin:
            cursor = admin.execute(statement)
            return list(cursor.fetchall()) if cursor.description is not None else []

    def stop(self) -> None:
        """Stop the server at once and delete its folder."""
        with contextlib.suppress(subprocess.CalledProcessError):
            self.pg_ctl("-m", "immediate", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

    def pg_ctl(self, *args: str) -> None:
        """Run ``pg_ctl`` on this server's data folder (as the server's user)."""
        data = str(self.folder / "data")
        subprocess.run(
            [*self.run_as, str(self.bin / "pg_ctl"), "-D", data, *args],
            check=True,
            capture_output=True,
        )


def _binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: on the PATH, or Debian's newest version."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: int(Path(path).parts[-3]) if Path(path).parts[-3].isdigit() else 0,
    )
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def unavailable() -> str | None:
    """Why no test server can start here (``None``: one can)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (the [postgres] extra)"
    if _binaries() is None:
        return "no PostgreSQL server binaries (initdb); install Debian's postgresql"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run the server as"
    return None


def start_server() -> Server:
    """Create and start a server in a new temporary folder (see :func:`unavailable`)."""
    binaries = _binaries()
    assert binaries is not None, unavailable()
    run_as: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="arena-pg-"))  # short: a socket path has a limit
    (folder / "password").write_text(PASSWORD + "\n")
    if os.geteuid() == 0:  # the server refuses to run as root
        owner = pwd.getpwnam("postgres")
        run_as = ["runuser", "-u", "postgres", "--"]
        for path in (folder, folder / "password"):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    server = Server(folder, _free_port(), run_as, binaries, itertools.count())
    try:
        subprocess.run(
            [
                *run_as,
                str(binaries / "initdb"),
                "-D",
                str(folder / "data"),
                "-U",
                USER,
                f"--pwfile={folder / 'password'}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-locale",
            ],
            check=True,
            capture_output=True,
        )
        options = (
            f"-k {folder} -p {server.port} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off"
        )
        server.pg_ctl("-o", options, "-w", "-l", str(folder / "log"), "start")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Server]:
    """A PostgreSQL server for the whole session (skips, saying why, where none can run)."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: Server) -> str:
    """The URL of a new, empty database on the session's server."""
    return pg_server.url(pg_server.create_database())
