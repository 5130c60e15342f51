"""The door, met where a user meets it: through the CLI, with hostile files and targets.

Each test is one finding of the adversarial review the door answers: a persona that is a link
to ``/proc/self/environ``, a FIFO or a huge file; PostgreSQL passwords with ``@`` or spaces,
and libpq keyword strings, given to every command that opens a store; settings nested 100k
levels deep; sampling values no server can take. Each must be one line, exit 2, before any
request, and show no secret.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.cli import main
from tests.servers import FaultServer

#: The key the evaluated model's endpoint gets, and that no other endpoint may ever see.
KEY = "sk-door-test-0123456789abcdef"


def eval_args(db: Path, base_url: str, *extra: str) -> list[str]:
    args = ["eval", "--db", str(db), "--base-url", base_url, "--name", "m", "--quiet"]
    args += ["--envs", "kuhn_poker-v0", "--num-games", "2", "--no-report", *extra]
    return args


def one_line_error(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def servers() -> object:
    model, rival = FaultServer(), FaultServer()
    yield model, rival
    model.close()
    rival.close()


def _persona_refused(
    tmp_path: Path,
    persona: Path,
    servers: tuple[FaultServer, FaultServer],
    capsys: pytest.CaptureFixture[str],
) -> str:
    model, rival = servers
    spec = f"model:r@{rival.base_url} persona:{persona}"
    code = main(eval_args(tmp_path / "p.sqlite", model.base_url, "--opponents", spec))
    err = capsys.readouterr().err
    assert code == 2
    # Refused before the first request: neither endpoint was asked anything.
    assert model.seen_bodies == [] and rival.seen_bodies == []
    assert sum(model.served.values()) == 0 and sum(rival.served.values()) == 0
    assert KEY not in err
    return one_line_error(err)


def test_a_persona_linked_to_the_environment_sends_nothing_and_is_refused_first(
    tmp_path: Path,
    servers: tuple[FaultServer, FaultServer],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    folder = tmp_path / "pers"
    folder.mkdir()
    (folder / "env.txt").symlink_to("/proc/self/environ")
    line = _persona_refused(tmp_path, folder / "env.txt", servers, capsys)
    assert "symbolic link" in line


def test_a_fifo_or_device_persona_says_what_it_is(
    tmp_path: Path,
    servers: tuple[FaultServer, FaultServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)
    assert "FIFO" in _persona_refused(tmp_path, fifo, servers, capsys)
    assert "character device" in _persona_refused(tmp_path, Path("/dev/zero"), servers, capsys)
    assert "no persona file" in _persona_refused(tmp_path, tmp_path / "none", servers, capsys)


def test_a_huge_persona_is_refused_without_being_read_whole(
    tmp_path: Path,
    servers: tuple[FaultServer, FaultServer],
    capsys: pytest.CaptureFixture[str],
) -> None:
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as handle:  # 300 MB, sparse: nothing is written but the size
        handle.truncate(300 * 1024 * 1024)
    assert "larger than" in _persona_refused(tmp_path, huge, servers, capsys)


def test_a_settings_file_nested_past_the_stack_is_one_line(
    tmp_path: Path, servers: tuple[FaultServer, FaultServer], capsys: pytest.CaptureFixture[str]
) -> None:
    model, _ = servers
    deep = tmp_path / "eval_settings.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    code = main(eval_args(tmp_path / "s.sqlite", model.base_url, "--settings", str(deep)))
    assert code == 2
    assert "nested deeper" in one_line_error(capsys.readouterr().err)
    assert model.seen_bodies == []


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--temperature", "1e999"),
        ("--temperature", "inf"),
        ("--temperature", "nan"),
        ("--max-tokens", str(10**400)),
        ("--top-k", str(2**40)),
        ("--sampling-seed", str(2**70)),
        ("--game-sampling", "kuhn_poker-v0:temperature=1e999"),
        ("--game-sampling", "kuhn_poker-v0:max_tokens=" + "9" * 400),
        ("--game-sampling", "kuhn_poker-v0:temperature=Infinity"),
        ("--extra-body", '{"x": 1e999}'),
    ],
)
def test_numbers_no_server_can_take_are_refused_before_any_request(
    tmp_path: Path,
    servers: tuple[FaultServer, FaultServer],
    capsys: pytest.CaptureFixture[str],
    option: str,
    value: str,
) -> None:
    model, _ = servers
    try:
        code = main(eval_args(tmp_path / "n.sqlite", model.base_url, option, value))
    except SystemExit as exit_:  # argparse's own refusal of the option's type
        code = int(exit_.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()
    assert model.seen_bodies == [] and sum(model.served.values()) == 0
    assert not (tmp_path / "n.sqlite").exists()  # nothing stored either


#: Passwords that libpq would misread in a URL, and the forms a user writes them in.
SECRETS = ("SECRET2-at", "SECRET3 x", "SECRET4-kw")


def _targets(port: int) -> list[str]:
    return [
        f"postgresql://arena:pa@ss@{SECRETS[0]}@127.0.0.1:{port}/results",
        f"postgresql://arena:{SECRETS[1]}@127.0.0.1:{port}/results",
        f"host=127.0.0.1 port={port} user=arena password='{SECRETS[2]}' dbname=results",
        f"postgres://arena:{SECRETS[1]}@127.0.0.1:{port}/results?sslmode=disable",
    ]


def _commands(db: str, out: Path, base_url: str) -> list[list[str]]:
    return [
        ["eval", "--db", db, "--base-url", base_url, "--envs", "kuhn_poker-v0", "--quiet"],
        ["runs", "--db", db],
        ["report", "--db", db],
        ["publish", "--db", db, "--out", str(out)],
        [
            "transfer",
            "run",
            "--db",
            db,
            "--base-url",
            base_url,
            "--benchmarks",
            "arithmetic",
            "--data-dir",
            str(out / "data"),
            "--limit",
            "1",
            "--quiet",
        ],
    ]


def test_store_passwords_are_never_printed_by_any_command_and_make_no_file(
    tmp_path: Path,
    servers: tuple[FaultServer, FaultServer],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """eval, runs, report, publish and transfer run, against a port where no server listens.

    The driver would print ``failed to resolve host 'ss@SECRET2-at@127.0.0.1'`` or
    ``unexpected spaces found in "SECRET3 x"``; a keyword string would be taken for a SQLite
    file named after the password. Each must be one line, exit 2, without the secret, and
    leave the working folder empty.
    """
    pytest.importorskip("psycopg", reason="the [postgres] extra (psycopg) is not installed")
    model, _ = servers
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    closed = _closed_port()
    for target in _targets(closed):
        for args in _commands(target, tmp_path / "out", model.base_url):
            try:
                code = main(args)
            except SystemExit as exit_:
                code = int(exit_.code or 0)
            captured = capsys.readouterr()
            shown = captured.out + captured.err
            assert code == 2, (args[0], shown)
            assert not any(secret in shown for secret in SECRETS), (args[0], shown)
            assert "ss@" not in shown, shown
            assert list(work.iterdir()) == [], (args[0], list(work.iterdir()))


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:  # bound, never listening: connections are refused
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    return port


def test_a_keyword_string_is_refused_with_the_accepted_forms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["runs", "--db", "host=db.example password='hunter2 x' dbname=arena"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "hunter2" not in err and "keyword string" in err and "postgresql://" in err
    assert list(tmp_path.iterdir()) == []


def test_a_benchmark_row_or_stored_value_nested_past_the_stack_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store file is a file someone handed us: its JSON columns go through the door too."""
    import sqlite3

    from strategic_arena.arena.store import ResultsStore

    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        store.run("r", 1, {})
    with sqlite3.connect(db) as raw:
        raw.execute("UPDATE runs SET settings = ?", ("[" * 100_000 + "]" * 100_000,))
    assert main(["runs", "--db", str(db)]) == 2
    assert "nested deeper" in one_line_error(capsys.readouterr().err)


def test_a_real_server_refusing_such_passwords_never_hears_them_misparsed(
    pg_server: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against a real PostgreSQL server: the password reaches it whole (refused as wrong), and
    neither it nor a part of it is printed; the right password with an ``@`` in the URL works."""
    from tests.pg import Server

    assert isinstance(pg_server, Server)
    database = pg_server.create_database()
    for password in ("pa@ss@SECRET2-at", "SECRET3 x"):
        url = pg_server.tcp_url(database, password=password)
        assert main(["runs", "--db", url]) == 2
        err = capsys.readouterr().err
        assert "authentication failed" in one_line_error(err)
        assert "SECRET" not in err and "ss@" not in err
