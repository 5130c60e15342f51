"""Hostile OpenAI-compatible endpoints: real HTTP on 127.0.0.1, a real player, tampered replies.

:class:`HostileServer` answers every chat request with a real player (``strategic-arena
serve``'s :class:`~strategic_arena.serve.PlayerService`), then hands the honest reply to a
``tamper`` function that may rewrite it, replace it, slow it down or redirect it: what an
endpoint that knows our code could do with nothing but HTTP.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, BinaryIO

from strategic_arena.players import GAME_HEADER
from strategic_arena.serve import PlayerService
from tests.servers import LoopbackServer, any_model


@dataclass
class Reply:
    """What the server sends: a status, a JSON payload (or raw bytes), headers, a trickle.

    ``trickle_s``: seconds between single bytes of the body (a server that is never quite
    silent, so a per-read timeout never fires). ``http``: writes the whole HTTP response
    itself, status line and headers included (broken framing, endless bodies, header floods);
    the connection is closed after it.
    """

    status: int = 200
    payload: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    trickle_s: float = 0.0
    http: Callable[[BinaryIO], None] | None = None

    def body(self) -> bytes:
        return self.raw if self.raw is not None else json.dumps(self.payload).encode()


@dataclass(frozen=True)
class Request:
    """A chat request as the endpoint sees it: body, the seat's information, the honest reply."""

    body: dict[str, Any]
    information: dict[str, Any]
    authorization: str
    answer: dict[str, Any]


Tamper = Callable[[Request], Reply]


def honest(request: Request) -> Reply:
    """The player's own reply, untouched."""
    return Reply(payload=request.answer)


class HostileServer(LoopbackServer):
    """A chat endpoint on 127.0.0.1 whose replies go through ``tamper``.

    Args:
        service: answers each request honestly first (a solver behind ``serve``'s logic).
        tamper: turns the honest reply into what is sent.
        models: the ``/models`` listing's reply (default: the service's honest listing).
    """

    def __init__(
        self,
        service: PlayerService,
        tamper: Tamper = honest,
        models: Reply | None = None,
    ) -> None:
        self.tamper = tamper
        self.models = models
        self.requests: list[Request] = []
        self.authorizations: list[str] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with outer.lock:
                    outer.authorizations.append(self.headers.get("Authorization", ""))
                self.send(outer.models or Reply(payload=service.models()))

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                header = self.headers.get(GAME_HEADER) or "{}"
                request = Request(
                    body,
                    json.loads(header),
                    self.headers.get("Authorization", ""),
                    service.complete(any_model(body), header),
                )
                with outer.lock:
                    outer.requests.append(request)
                    outer.authorizations.append(request.authorization)
                self.send(outer.tamper(request))

            def send(self, reply: Reply) -> None:
                if reply.http is not None:
                    self.close_connection = True
                    try:
                        reply.http(self.wfile)
                        self.wfile.flush()
                    except OSError:  # the client stopped reading (a cap, a deadline)
                        pass
                    return
                data = reply.body()
                try:
                    self.send_response(reply.status)
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if reply.trickle_s <= 0:
                        self.wfile.write(data)
                        return
                    for i in range(len(data)):
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                        time.sleep(reply.trickle_s)
                except OSError:  # the client gave up (a deadline) and closed the socket
                    self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # cut connections are the point of some tests

        self.httpd = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
