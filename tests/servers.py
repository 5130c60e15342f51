"""A fault-injecting OpenAI-compatible test server (real HTTP, real ``random`` answers)."""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

import opponents
from strategic_arena.players import GAME_HEADER, RandomPlayer
from strategic_arena.serve import PlayerService
from strategic_arena.turn import Decision, GameState, Player

#: Faults drawn in random mode; each retryable by the backend except ``truncated``, which the
#: validator turns into a ``truncated`` invalid answer.
RANDOM_FAULTS = ("500", "429", "malformed", "empty", "truncated", "slow")

#: The server's and network's faults only (no answer of the model is changed): what the fault
#: benchmark injects, so that a run behind them must score exactly like a fault-free one.
INFRASTRUCTURE_FAULTS = ("500", "429", "drop", "slow", "malformed", "empty", "blank")


class _QuietServer(ThreadingHTTPServer):
    """A server that does not print the requests its clients cut off (a killed ``eval``)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError | ValueError):  # cut requests: resets, half a body
            super().handle_error(request, client_address)


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (``httpd``, set by the subclass) and its ``/v1`` base URL."""

    httpd: ThreadingHTTPServer

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def wait_for_hangup(connection: socket.socket, cap_s: float) -> None:
    """Block until the client closes ``connection`` (or sends more), for at most ``cap_s``.

    A "slow" answer that waits for the client to give up outlasts any client deadline without
    the test choosing a sleep longer than it: the client's deadline can stay generous (an honest
    answer on a loaded machine never reaches it) and a slow fault still costs only that deadline.
    """
    deadline = time.monotonic() + cap_s
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([connection], [], [], left)
        if readable:  # the request was read whole: anything readable now is the hang-up
            return


def any_model(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` without its model name: a test server stands in for whatever model is asked
    (``serve`` itself answers an unknown name with vLLM's 404)."""
    return {key: value for key, value in body.items() if key != "model"}


class _FaultHandler(BaseHTTPRequestHandler):
    """Answers like ``serve``, with the fault its :class:`FaultServer` draws for each request.

    Unbound: :class:`FaultServer` makes the subclass it serves, with ``fault_server`` (itself)
    and ``service`` (the player that answers).
    """

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    fault_server: FaultServer
    service: PlayerService

    def do_GET(self) -> None:
        self.reply(200, self.service.models())

    def do_POST(self) -> None:
        faults = self.fault_server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        faults.seen_game_headers.append(self.headers.get(GAME_HEADER))
        faults.seen_bodies.append(body)
        fault = faults.next_fault(self.headers.get("Authorization", ""))
        if fault == "slow":  # no answer until the client gives up (or slow_s passes)
            wait_for_hangup(self.connection, faults.slow_s)
        if not self.fail(fault):
            answer = self.service.complete(any_model(body), self.headers.get(GAME_HEADER))
            self.reply(200, altered(answer, fault))

    def fail(self, fault: str) -> bool:
        """Reply with ``fault`` where it takes the answer's place; False where the model answers."""
        if fault == "echo-key":  # a 401-style error that repeats the key it got
            key = self.headers.get("Authorization", "")
            self.reply(500, {"error": {"message": f"bad key {key}"}})
        elif fault in ("500", "400", "408"):
            self.reply(int(fault), {"error": {"message": f"injected {fault}"}})
        elif fault == "429":
            self.reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
        elif fault == "malformed":
            self.reply(200, None, raw=b'{"choices": [')
        elif fault == "empty":
            payload = {"id": "x", "object": "chat.completion", "created": 0}
            self.reply(200, {**payload, "model": "random", "choices": []})
        elif fault == "drop":  # the connection closes before any reply
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        else:
            return False
        return True

    def reply(
        self,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        try:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up on a slow answer and closed the socket
            pass

    def log_message(self, *args: Any) -> None:
        pass


def altered(answer: dict[str, Any], fault: str) -> dict[str, Any]:
    """The model's ``answer`` (changed in place) with the answer ``fault`` applied, if it is one."""
    message = answer["choices"][0]["message"]
    if fault == "reasoning":  # reasoning returned apart, as vLLM's parsers do
        message["reasoning_content"] = "I think, so I am."
    if fault == "wrong_tool":
        message["tool_calls"][0]["function"]["name"] = "resign"
    if fault == "truncated":
        answer["choices"][0]["finish_reason"] = "length"
        message["content"] = message["content"][:12]
    if fault == "blank":  # a reply with nothing in it
        message["content"] = ""
    return answer


class FaultServer(LoopbackServer):
    """Serves ``random`` like ``strategic-arena serve``, with injected faults.

    Faults come from the scripted list ``faults`` first (``500``, ``400``, ``408``, ``429`` with
    ``Retry-After: 0``, ``malformed`` JSON (cut in the middle), ``empty`` choices, ``blank``
    content, ``drop`` (the connection closed without a reply), ``truncated`` answers, ``slow``:
    no answer until the client hangs up (at most ``slow_s``), ``reasoning`` returned apart from the
    content, ``wrong_tool``: a call of another tool than ``play``, or ``ok``); once it is empty,
    each request gets a fault from ``kinds`` (default :data:`RANDOM_FAULTS`) with probability
    ``rate`` (seeded). ``service`` answers the requests (default: a ``random`` player).
    ``served`` counts what was served; ``seen_keys`` the Authorization headers received,
    ``seen_game_headers`` the game headers, ``seen_bodies`` the request bodies.
    """

    def __init__(
        self,
        faults: list[str] | None = None,
        rate: float = 0.0,
        seed: int = 0,
        slow_s: float = 120.0,
        kinds: tuple[str, ...] = RANDOM_FAULTS,
        service: PlayerService | None = None,
    ) -> None:
        self.faults = list(faults or [])
        self.rate = rate
        self.kinds = kinds
        self.slow_s = slow_s
        self.rng = np.random.default_rng(seed)
        self.served: Counter[str] = Counter()
        self.seen_keys: list[str] = []
        self.seen_game_headers: list[str | None] = []
        self.seen_bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()

        class Handler(_FaultHandler):
            pass

        Handler.fault_server = self
        Handler.service = service or PlayerService("random", lambda env_id: RandomPlayer(0))
        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def next_fault(self, authorization: str) -> str:
        """The fault for the next request (and count it)."""
        with self.lock:
            self.seen_keys.append(authorization)
            if self.faults:
                fault = self.faults.pop(0)
            elif self.rng.random() < self.rate:
                fault = str(self.rng.choice(self.kinds))
            else:
                fault = "ok"
            self.served[fault] += 1
            return fault


class PositionSeededMinimax:
    """Perfect Tic-Tac-Toe whose choice among optimal moves is seeded by the position."""

    name = "minimax"

    async def act(self, state: GameState, seat: int) -> Decision:
        seed = zlib.crc32(bytes(state.history()))
        player: Player = opponents.make("minimax", state.env_id, seed=seed)
        return await player.act(state, seat)


#: The longest header line a common front server takes (nginx's and uvicorn's default buffer).
FRONT_SERVER_HEADER_LIMIT = 8 * 1024


class HeaderLimitServer(LoopbackServer):
    """An endpoint behind a front server's header limit: 431 for any header line over ``limit``.

    nginx (``large_client_header_buffers``) and uvicorn answer 431 to a request whose header
    line does not fit their buffer, before any application sees it; every other request is
    answered by ``service`` (``strategic-arena serve``'s logic, from the game header).
    ``longest_lines`` holds the longest header line of each request, ``refused`` counts the
    431s and ``seen_game_headers`` keeps the game headers received.
    """

    def __init__(self, service: PlayerService, limit: int = FRONT_SERVER_HEADER_LIMIT) -> None:
        self.longest_lines: list[int] = []
        self.seen_game_headers: list[str | None] = []
        self.refused = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                self.reply(200, service.models())

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                longest = max(len(f"{name}: {value}") for name, value in self.headers.items())
                header = self.headers.get(GAME_HEADER)
                with outer.lock:
                    outer.longest_lines.append(longest)
                    outer.seen_game_headers.append(header)
                    outer.refused += longest > limit
                if longest > limit:
                    self.reply(431, {"error": {"message": "Request Header Fields Too Large"}})
                else:
                    self.reply(200, service.complete(any_model(json.loads(raw)), header))

            def reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self) -> HeaderLimitServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
