"""Hostile replies: bodies that never end or inflate to gigabytes, and broken HTTP.

An endpoint decides how many bytes it sends and what they decode to. Each test serves a real
player on 127.0.0.1 (:class:`tests.hostile.HostileServer`) whose replies are replaced by what
an adversary would send at the HTTP level -- a gzip bomb, an endless chunked body, an endless
``/models`` listing, a flood of headers, broken chunked framing -- and checks that ``eval``
stays within a stated memory bound, stores the games as the endpoint's failures and prints one
line, never a traceback.

The memory test runs the evals in a child process and reads its peak resident memory
(``VmHWM``, reset between evals through ``/proc/self/clear_refs``): an honest eval first, then
each attack, each against the same bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

pytest.importorskip("httpx", reason="the [arena] extra (httpx) is not installed")

from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.http_body import DEFAULT_MAX_REPLY_BYTES
from strategic_arena.players import RandomPlayer
from strategic_arena.serve import PlayerService
from tests.hostile import HostileServer, Reply, Request

KUHN = "kuhn_poker-v0"
ROOT = Path(__file__).resolve().parent.parent
#: Games in flight at once in the memory test (eval's default).
CONCURRENCY = 8
#: The bound stated in docs/arena.md: a reply in flight holds at most the cap in bytes and about
#: as much again parsed (strategic_arena.http_body), so an attack may add at most this much
#: to an honest eval's peak. The attacks below would take gigabytes without the cap.
BOUND_KIB = 3 * CONCURRENCY * DEFAULT_MAX_REPLY_BYTES // 1024


def service() -> PlayerService:
    return PlayerService("model", lambda env_id: RandomPlayer(0))


def gzip_bomb(decoded_mib: int) -> bytes:
    """``decoded_mib`` MiB of zeros, gzipped (~1/1000 of that on the wire)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1024 * 1024)
    return b"".join(packer.compress(zeros) for _ in range(decoded_mib)) + packer.flush()


def endless_chunks(out: BinaryIO) -> None:
    """A 200 whose chunked body never ends (until the client hangs up)."""
    out.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
    out.write(b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"[" + b"0," * 32767 + b"0"
    while True:
        out.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))


def after_the_probe(hostile: Reply) -> Callable[[Request], Reply]:
    """Honest for the preflight's one request (so games are played), then ``hostile``."""
    seen = 0

    def tamper(request: Request) -> Reply:
        nonlocal seen
        seen += 1
        return Reply(payload=request.answer) if seen == 1 else hostile

    return tamper


#: The child: runs each eval given on argv (a JSON list of argument lists), resetting and then
#: reading its peak resident memory around each; prints the exit statuses and peaks (KiB).
CHILD = """
import json, re, sys
from strategic_arena.cli import main

def peak():
    return int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read())[1])

results = []
for args in json.loads(sys.argv[1]):
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    status = main(args)
    results.append([status, peak()])
print(json.dumps(results))
"""


@pytest.fixture
def bomb_server() -> Iterator[HostileServer]:
    bomb = gzip_bomb(256)
    reply = Reply(raw=bomb, headers={"Content-Encoding": "gzip"})
    with HostileServer(service(), after_the_probe(reply)) as server:
        yield server


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
def test_memory_stays_bounded_against_bombs_and_endless_replies(
    tmp_path: Path, bomb_server: HostileServer
) -> None:
    endless = Reply(http=endless_chunks)
    with (
        HostileServer(service()) as honest,
        HostileServer(service(), after_the_probe(endless)) as flood,
        HostileServer(service(), models=endless) as listing,
    ):
        common = ["--envs", KUHN, "--opponents", "random", "--num-games", "16", "--quiet"]
        common += ["--no-report", "--max-attempts", "1", "--max-replays", "0", "--timeout", "60"]
        common += ["--concurrency", str(CONCURRENCY), "--name", "m"]
        runs = {
            "honest": honest.base_url,
            "gzip bomb": bomb_server.base_url,
            "endless chunks": flood.base_url,
            "endless /models": listing.base_url,
        }
        argv = [
            ["eval", "--base-url", url, "--db", str(tmp_path / f"{i}.sqlite"), *common]
            for i, url in enumerate(runs.values())
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        child = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(argv)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
    assert child.returncode == 0, child.stderr[-2000:]
    results = dict(zip(runs, json.loads(child.stdout.splitlines()[-1]), strict=True))
    statuses = {name: status for name, (status, _) in results.items()}
    assert statuses == {"honest": 0, "gzip bomb": 1, "endless chunks": 1, "endless /models": 2}
    baseline = results["honest"][1]
    for name, (_, peak) in results.items():
        assert peak - baseline < BOUND_KIB, (name, peak, baseline)
    # The games the attacks stopped are stored, as the endpoint's failures (too large).
    for i in (1, 2):
        with ResultsStore(tmp_path / f"{i}.sqlite") as store:
            (run,) = store.runs()
            games = store.games(run.id, include_incomplete=True)
        assert len(games) == 16 and not any(game.scored for game in games)
        assert {game.infrastructure_error for game in games} == {
            f"endpoint: too large: the reply exceeds --max-reply-bytes {DEFAULT_MAX_REPLY_BYTES} "
            "(decoded)"
        }
    assert not (tmp_path / "3.sqlite").exists()  # the preflight stopped it: nothing stored
    assert "exceeds --max-reply-bytes" in child.stderr and "Traceback" not in child.stderr


def headers_flood(count: int) -> Callable[[BinaryIO], None]:
    """A model listing behind ``count`` headers (``http.client`` raised past 100)."""

    def write(out: BinaryIO) -> None:
        body = json.dumps(service().models()).encode()
        out.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        out.write(b"".join(b"X-Filler-%d: %032d\r\n" % (i, i) for i in range(count)))
        out.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    return write


def broken_chunks(out: BinaryIO) -> None:
    """A chunked body whose framing breaks: a chunk size that is not hexadecimal."""
    out.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    out.write(b'5\r\n{"dat\r\nzz\r\nnot a chunk\r\n0\r\n\r\n')


def eval_args(url: str, db: Path, *extra: str) -> list[str]:
    return [
        *["eval", "--base-url", url, "--db", str(db), "--envs", KUHN, "--opponents", "random"],
        *["--num-games", "2", "--quiet", "--max-attempts", "1", "--max-replays", "0", *extra],
    ]


def one_error_line(err: str) -> str:
    """The one ``strategic-arena: error:`` line of ``err`` (and no traceback)."""
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("strategic-arena: error")]
    return line


def test_a_listing_behind_200_headers_is_read_and_a_flood_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 200 headers are valid HTTP: the listing is read (it used to be http.client's
    # "got more than 100 headers" traceback); 5,000 are past the transport's header limit.
    with HostileServer(service(), models=Reply(http=headers_flood(200))) as server:
        assert main(eval_args(server.base_url, tmp_path / "a.sqlite", "--no-report")) == 0
    capsys.readouterr()
    with HostileServer(service(), models=Reply(http=headers_flood(5000))) as server:
        assert main(eval_args(server.base_url, tmp_path / "b.sqlite")) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "/v1/models did not answer with valid HTTP (connection: RemoteProtocolError" in line
    assert not (tmp_path / "b.sqlite").exists()


def test_broken_chunked_framing_is_one_line_in_the_preflight_and_a_failure_in_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with HostileServer(service(), models=Reply(http=broken_chunks)) as server:
        assert main(eval_args(server.base_url, tmp_path / "a.sqlite")) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "did not answer with valid HTTP (connection: RemoteProtocolError" in line
    # During the run: each game it breaks is stored as the endpoint's failure, one line each.
    db = tmp_path / "b.sqlite"
    with HostileServer(service(), after_the_probe(Reply(http=broken_chunks))) as server:
        assert main(eval_args(server.base_url, db, "--name", "m", "--no-report")) == 1
    assert "Traceback" not in capsys.readouterr().err
    with ResultsStore(db) as store:
        (run,) = store.runs()
        games = store.games(run.id, include_incomplete=True)
    assert len(games) == 2 and not any(game.scored for game in games)
    for game in games:
        error = game.infrastructure_error or ""
        assert error.startswith("endpoint: connection: RemoteProtocolError") and "\n" not in error
