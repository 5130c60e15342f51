"""Preflight: a misconfigured endpoint stops eval and grade with its cause, storing nothing.

Real HTTP on 127.0.0.1 throughout: the project's own PlayerServer, and a small stdlib server
that answers like a vLLM server started without a tool-call parser.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.endpoint import ModelOptions, checked_entrant
from strategic_arena.arena.match import play_match_sync
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import Asking
from strategic_arena.cli import main
from strategic_arena.players import RandomPlayer
from strategic_arena.serve import PlayerServer
from tests.servers import FaultServer

#: vLLM's answer to a tool request when started without --tool-call-parser.
VLLM_NO_PARSER = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
)


class NoToolParserServer:
    """Lists one model and answers plain chat requests, but refuses any request with tools."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self.reply(200, {"object": "list", "data": [{"id": "qwen", "object": "model"}]})
                else:
                    self.reply(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                if "tools" in body:
                    error = {"message": VLLM_NO_PARSER, "type": "BadRequestError", "code": 400}
                    self.reply(400, {"error": error})
                    return
                message = {"role": "assistant", "content": "I play 'pass'."}
                choice = {"index": 0, "message": message, "finish_reason": "stop"}
                self.reply(200, {"id": "x", "object": "chat.completion", "choices": [choice]})

            def reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def served() -> Iterator[PlayerServer]:
    with PlayerServer("random", model="random") as server:
        yield server


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port nothing listens on: bound (so no other test can take it) but never listening,
    so a connection to it is refused for as long as the test runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def run_eval(db: Path, base_url: str, *extra: str) -> int:
    args = ["eval", "--db", str(db), "--base-url", base_url, "--envs", "kuhn_poker-v0"]
    return main([*args, "--opponents", "random", "--num-games", "2", "--quiet", *extra])


def test_a_base_url_without_v1_is_named(
    tmp_path: Path, served: PlayerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "a.sqlite"
    without_v1 = served.base_url.removesuffix("/v1")
    assert run_eval(db, without_v1) == 2
    err = capsys.readouterr().err
    assert "lacks /v1" in err and f"--base-url {served.base_url}" in err
    assert "Traceback" not in err and not db.exists()


def test_nothing_listening_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], closed_port: int
) -> None:
    db = tmp_path / "a.sqlite"
    assert run_eval(db, f"http://127.0.0.1:{closed_port}/v1", "--max-attempts", "1") == 2
    err = capsys.readouterr().err
    assert "nothing answers at 127.0.0.1:" in err and "is the server running" in err
    assert "0 models" not in err and not db.exists()


def test_a_model_the_server_does_not_serve_is_named(
    tmp_path: Path, served: PlayerServer, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "a.sqlite"
    assert run_eval(db, served.base_url, "--model", "qwen3") == 2
    err = capsys.readouterr().err
    assert "does not serve model 'qwen3'" in err and "it lists: random" in err
    assert not db.exists()


def test_a_server_without_a_tool_parser_is_named_for_style_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = NoToolParserServer()
    try:
        db = tmp_path / "a.sqlite"
        assert run_eval(db, server.base_url, "--style", "tools") == 2
        err = capsys.readouterr().err
        assert "--enable-auto-tool-choice --tool-call-parser" in err and "--style" in err
        assert not db.exists()
        assert len(server.requests) == 1  # refused at once: a 400 is not retried
        # The same server serves the other styles: the preflight passes and games are stored.
        assert run_eval(db, server.base_url, "--style", "marshal", "--no-report") == 0
    finally:
        server.close()
    with ResultsStore(db) as store:
        assert len(store.runs()) == 1 and len(store.games()) == 2


def test_grade_checks_the_endpoint_before_grading_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], closed_port: int
) -> None:
    db = tmp_path / "g.sqlite"
    with ResultsStore(db) as store:
        run = store.run("test", 0, {})
        players = [RandomPlayer(0), RandomPlayer(1)]
        store.add_game(run, "g0", play_match_sync("tic_tac_toe-v0", players, 0))
    dead = f"http://127.0.0.1:{closed_port}/v1"
    assert main(["grade", "--db", str(db), "--base-url", dead, "--quiet"]) == 2
    assert "nothing answers at" in capsys.readouterr().err
    with sqlite3.connect(db) as con:
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master")}
    assert "strategy_grades" not in tables  # not even the move grades were written


def test_a_refusal_during_the_run_keeps_that_game_as_incomplete_and_plays_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The preflight request goes through; the first game's request is refused (HTTP 400).
    # The refused game stays in the record as incomplete: an endpoint that refused only in
    # lost positions must not make those games vanish from its coverage. The other game is
    # played: a refusal does not stop the run (a selective refuser could stop every rerun).
    server = FaultServer(["ok", "400"])
    db = tmp_path / "r.sqlite"
    try:
        code = run_eval(db, server.base_url, "--name", "m", "--concurrency", "1", "--no-report")
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 2
    assert "the endpoint refused the requests of 1 game (first: 400: injected 400)" in err
    assert "kept as incomplete and left out of every score" in err
    assert "replays a refused game at most --max-replays 3 times" in err
    assert server.served["400"] == 1  # not retried
    with ResultsStore(db) as store:
        (run,) = store.runs()
        assert len(store.games(run.id)) == 1  # the other game, scored
        assert list(store.incomplete_counts(run.id).values()) == [1]  # the refused, on record


def test_a_408_is_retried_like_a_server_failure(tmp_path: Path) -> None:
    server = FaultServer(["ok", "408"])
    db = tmp_path / "t.sqlite"
    try:
        assert (
            run_eval(db, server.base_url, "--name", "m", "--concurrency", "1", "--no-report") == 0
        )
    finally:
        server.close()
    assert server.served["408"] == 1
    with ResultsStore(db) as store:
        assert len(store.games()) == 2


def test_the_probe_asks_once_whatever_the_policy() -> None:
    server = FaultServer(["truncated"] * 4)  # invalid answers: retry:3 would ask four times
    try:
        options = ModelOptions(base_url=server.base_url, asking=Asking(policy="retry:3"))
        entrant = checked_entrant(options, server.base_url, None, 0, "kuhn_poker-v0")
    finally:
        server.close()
    assert len(server.seen_bodies) == 1  # an invalid answer is no reason to stop, or re-ask
    assert entrant.params["policy"] == "retry:3"  # the run keeps the user's policy


def test_a_refused_api_key_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    class Locked(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = b'{"error": {"message": "Incorrect API key provided"}}'
            self.send_response(401)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Locked)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    db = tmp_path / "a.sqlite"
    try:
        code = run_eval(db, f"http://127.0.0.1:{httpd.server_address[1]}/v1", "--model", "m")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert code == 2
    err = capsys.readouterr().err
    assert "refused the credentials (HTTP 401)" in err and "$OPENAI_API_KEY" in err
    assert not db.exists()
