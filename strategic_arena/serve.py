"""Any player served as an OpenAI-compatible endpoint: ``/v1/models``, ``/v1/chat/completions``.

A solver behind real HTTP is the arena's stand-in for a model: the arena's real client talks to
it exactly as to a hosted LLM, and tests never mock the client.

How a request becomes a move:

1. The request carries the seat's information -- :class:`~strategic_arena.turn.SeatInformation`
   as JSON, plus the answer ``style`` (default ``marshal``) -- in the ``X-Strategic-Arena-Game``
   header, which :class:`~strategic_arena.players.LLMPlayer` sends to every endpoint (real model
   servers ignore it), or in an extra body field (the OpenAI client's ``extra_body``)::

       {"strategic_arena": {"env_id": "kuhn_poker-v0", "seat": 1, "style": "marshal",
                            "information_state": "1b", "observation": "...",
                            "public_moves": [[0, 1]], "legal_actions": {"0": "pass", ...},
                            "history": null}}

   That is all the server learns: what the seat may know, never another seat's cards. The
   header stays within :data:`~strategic_arena.game_header.GAME_HEADER_CAP` bytes
   (:mod:`strategic_arena.game_header`): past it, a compact form leaves out the observation
   and information state (and, in a perfect-information game, what its history rebuilds),
   and past that an identity form names the game and turn only, which gets a 400 asking for
   the information in the body.
2. The server rebuilds what its player needs from that alone. In a perfect-information game the
   ``history`` (public there) is replayed into the full state, checked to have ``seat`` to move;
   in an imperfect-information game the player gets a :class:`~strategic_arena.turn.GameState`
   that holds only the seat's information (a Nash or CFR policy reads its information state,
   the Hanabi bot its observation and the public moves). From a compact header, a player that
   reads a string the header left out gets the request a 400 that says so (a free-text game's
   ``random`` writes its own move and needs none). The player is built per game from the
   spec by :func:`opponents.make`, or is the one player given.
3. It answers in the requested style -- reasoning, then the move's canonical text -- as a
   ``chat.completion`` object with approximate token usage. When the style is ``tools`` or the
   request offers the ``play`` tool (``tools``), the move is a call of ``play`` in
   ``message.tool_calls`` (``finish_reason`` ``tool_calls``), as a tool-calling server answers.

With ``"stream": true`` the same answer comes as server-sent events, as the OpenAI client
expects: ``data: {chat.completion.chunk}`` lines (the role and content, or the tool call, then
the finish reason, then the usage when ``stream_options.include_usage`` asks for it) and
``data: [DONE]``.

Bad requests get an OpenAI-style error body (``{"error": {"message": ..., "type": ...}}``) with
status 400 (any malformed field, or a seat the game cannot produce), 404 (unknown path), 413
(body too large), 503 (too many connections) or 500 (the player failed on a valid request).

Abuse (anyone who can connect may send anything, as slowly as they like):

* every connection has :data:`REQUEST_TIMEOUT_S` to send each whole request, waiting included
  (a deadline, not a per-read timeout, so a byte every few seconds does not hold it open);
* at most :data:`MAX_CONNECTIONS` connections are served at once (a thread each), more get a
  503; the listen backlog is :data:`LISTEN_BACKLOG`, so bursts of new connections queue rather
  than being reset;
* the seat information is checked against its game before the player acts
  (:mod:`strategic_arena.seat_checks`: a Kuhn state no deal reaches, an eleven-card Hanabi hand
  get a 400 before any search), so a request costs what a real position costs;
* decisions are serialized per game, never server-wide: a slow Hanabi decision does not hold up
  a Kuhn request.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pyspiel

import opponents
from strategic_arena.chat_request import (
    ChatFieldError,
    ChatRequest,
    cut_at_stop,
    cut_to_tokens,
    read_chat_request,
)
from strategic_arena.door import Refused, decode
from strategic_arena.game_header import (
    COMPACT,
    GAME_HEADER,
    GAME_HEADER_CAP,
    IDENTITY,
    header_form,
)
from strategic_arena.games import GameSpec, get_spec
from strategic_arena.games.seats import acting_seats, apply_moves
from strategic_arena.seat_checks import ImpossibleSeat, check_seat
from strategic_arena.styles import AnswerStyle, get_style, style_names
from strategic_arena.tools import PLAY_TOOL
from strategic_arena.turn import GameState, Player, SeatInformation, judge, judge_text

#: Name of the extra body field that carries the game.
GAME_FIELD = "strategic_arena"

PlayerFactory = Callable[[str], Player]
"""Builds the player for an env id."""

SeededFactory = Callable[[str, int], Player]
"""Builds the player for an env id from a request's seed."""


#: The largest request body accepted (a game prompt is a few kB; a chat history some more).
MAX_BODY_BYTES = 16 * 1024 * 1024

#: Seconds a connection has to send one whole request (line, headers, body), idle wait
#: included; then it is closed.
REQUEST_TIMEOUT_S = 30.0

#: Seconds a client has to take an answer (responses are small; a client that reads nothing
#: holds a thread no longer than this).
WRITE_TIMEOUT_S = 30.0

#: Connections served at once (a thread each); more are answered 503 and closed.
MAX_CONNECTIONS = 1024

#: Pending connections the kernel queues before the server accepts them.
LISTEN_BACKLOG = 1024


class RequestError(ValueError):
    """A request the server cannot answer; ``status`` is the HTTP status to send."""

    def __init__(
        self, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        #: The request field at fault, as vLLM's error body names it (``None``: none in particular).
        self.param = param


#: What a request missing the seat's information is told to send instead.
_SEND_IN_BODY = (
    f"send the seat's information in full in the request body's {GAME_FIELD!r} field "
    "(the OpenAI client's extra_body)"
)


@dataclass(frozen=True)
class GameRequest:
    """The game part of a chat request: the seat's information and the answer style.

    ``compact``: the information came in the compact form of the game header
    (:mod:`strategic_arena.game_header`), without its observation and information state.
    """

    information: SeatInformation
    style: AnswerStyle
    compact: bool = False

    @classmethod
    def from_body(cls, body: dict[str, Any], header: str | None = None) -> GameRequest:
        """Read and check the :data:`GAME_FIELD` of a request body, else the game header.

        The header may come in any of its forms (:mod:`strategic_arena.game_header`); its
        identity form, which holds no information to play from, is a 400.
        """
        field = body.get(GAME_FIELD)
        if field is None and header:
            try:
                field = decode(header, f"the {GAME_HEADER} header")
            except Refused as error:
                raise RequestError(str(error)) from None
        if not isinstance(field, dict):
            raise RequestError(
                f"the request needs the seat's information: a {GAME_FIELD!r} object (the OpenAI "
                f"client's extra_body) or the {GAME_HEADER} header, as LLMPlayer sends it"
            )
        try:
            form = header_form(field)
        except ValueError as error:
            raise RequestError(f"{GAME_FIELD}: {error}") from None
        if form == IDENTITY:
            raise RequestError(
                "the game came as its identity alone (the seat's information is over the "
                f"{GAME_HEADER} header's {GAME_HEADER_CAP} bytes): {_SEND_IN_BODY}"
            )
        name = field.get("style", "marshal")
        if not isinstance(name, str) or name not in style_names():
            raise RequestError(f"{GAME_FIELD}.style must be one of {', '.join(style_names())}")
        style = get_style(name)
        try:
            information = SeatInformation.from_payload(field)
        except ValueError as error:
            raise RequestError(f"{GAME_FIELD}: {error}") from None
        return cls(information, style, compact=form == COMPACT)

    def left_out_error(self, error: Exception) -> RequestError:
        """The 400 for a player or a check that needed what the compact header leaves out."""
        return RequestError(
            f"{error} (the compact {GAME_HEADER} header leaves out the observation and the "
            f"information state): {_SEND_IN_BODY}"
        )

    def game_state(self) -> GameState:
        """What the player is handed: the full state, or only the seat's information.

        The full state where nothing is hidden (perfect information); otherwise a state that
        holds the seat's information alone.
        """
        information = self.information
        try:
            spec = get_spec(information.env_id)
        except ValueError as error:
            raise RequestError(str(error)) from None
        perfect = (
            spec.game.get_type().information == pyspiel.GameType.Information.PERFECT_INFORMATION
        )
        if perfect != (information.history is not None):
            raise RequestError(
                f"{information.env_id} has perfect information: send its history"
                if perfect
                else f"{information.env_id} hides information: send no history (it would "
                "carry the other seats' cards), only the seat's information"
            )
        try:
            check_seat(spec, information)
        except ImpossibleSeat as error:
            if self.compact and not perfect:  # a check of a string the header left out
                raise self.left_out_error(error) from None
            raise RequestError(f"{GAME_FIELD}: {error}") from None
        if perfect:
            return GameState(information.env_id, _replay(spec, information), spec)
        if not information.legal_actions and spec.move_kind == "menu":
            raise RequestError(f"seat {information.seat} has no legal action")
        return GameState.from_information(information, spec)


def _replay(spec: GameSpec, information: SeatInformation) -> pyspiel.State:
    """The state after a perfect-information game's history, checked to be the seat's turn."""
    state = spec.game.new_initial_state()
    history = list(information.history or ())
    ply = 0
    while ply < len(history):
        action = history[ply]
        if state.is_chance_node():
            if action not in [outcome for outcome, _ in state.chance_outcomes()]:
                raise RequestError(f"history action {action} at ply {ply} is not legal")
            state.apply_action(action)
            ply += 1
            continue
        # One entry per acting seat: a simultaneous turn's moves are applied together.
        seats = acting_seats(state)
        turn = dict(zip(seats, history[ply : ply + len(seats)], strict=False))
        if not seats or len(turn) < len(seats):
            raise RequestError(f"history action {action} at ply {ply} is not legal")
        for seat, move in turn.items():
            if move not in state.legal_actions(seat):
                raise RequestError(f"history action {move} at ply {ply + seat} is not legal")
        apply_moves(state, turn)
        ply += len(seats)
    seat = information.seat
    if seat not in acting_seats(state):
        raise RequestError(f"seat {seat} is not to move after this history")
    return state


@dataclass
class _GamePlayer:
    """One game's player, built on first use, with the lock that serializes its decisions."""

    lock: threading.Lock
    player: Player | None = None


def _answer_style(chat: ChatRequest, request: GameRequest) -> AnswerStyle:
    """How to answer: the tool call, a JSON object, or the style the game asked for.

    ``tool_choice: none`` answers in text even when ``play`` is offered (the ``marshal`` style
    where the game named ``tools``); an offered ``play`` with ``auto``, ``required`` or the named
    function gets a call; ``response_format: json_object`` gets the ``json`` style's object.
    """
    offered = _offers_play(chat.tools)
    forced = chat.tool_choice == "required" or isinstance(chat.tool_choice, dict)
    if forced and not offered:
        raise RequestError("tool_choice asks for a call, but tools offer no play function",
                           param="tool_choice")  # fmt: skip
    if isinstance(chat.tool_choice, dict) and chat.tool_choice["function"]["name"] != PLAY_TOOL:
        raise RequestError(f"tool_choice: the only tool is {PLAY_TOOL!r}", param="tool_choice")
    if chat.tool_choice == "none":
        return get_style("marshal") if request.style.name == "tools" else request.style
    if offered:
        return get_style("tools")
    return get_style("json") if chat.json_answer else request.style


def _limited(fields: dict[str, Any], finish: str, chat: ChatRequest) -> tuple[dict[str, Any], str]:
    """The answer with ``stop`` and ``max_tokens`` applied, as vLLM applies them.

    The text ends before the first stop string (``finish_reason: stop``); an answer longer
    than ``max_tokens`` tokens is cut there, any tool call dropped (a cut call is not one),
    with ``finish_reason: length``.
    """
    content = str(fields.get("content") or "")
    content, stopped = cut_at_stop(content, chat.stop)
    fields = {**fields, "content": content} if stopped else fields
    if chat.max_tokens is None:
        return fields, finish
    calls = fields.get("tool_calls", [])
    whole = " ".join([content, *(call["function"]["arguments"] for call in calls)])
    if len(whole.split()) <= chat.max_tokens:
        return fields, finish
    return {"content": cut_to_tokens(content, chat.max_tokens)[0]}, "length"


class PlayerService:
    """The model behind the endpoint: one player per game, built on first use.

    Decisions are serialized per game (solvers keep per-player RNG state), never across games.
    """

    def __init__(
        self, model: str, factory: PlayerFactory, seeded: SeededFactory | None = None
    ) -> None:
        self.model = model
        self._factory = factory
        # A request's seed builds a player of that seed; a service given no seeded factory (a
        # player built by the caller's own factory) answers every request with its one player.
        self._seeded = seeded
        self._games: dict[str, _GamePlayer] = {}
        self._lock = threading.Lock()  # guards the dict only, never held while a player works

    def _game(self, env_id: str) -> _GamePlayer:
        with self._lock:
            return self._games.setdefault(env_id, _GamePlayer(threading.Lock()))

    def _player(self, game: _GamePlayer, env_id: str) -> Player:
        """The game's player, built on first use under its lock (a ValueError is a 400)."""
        if game.player is None:
            try:
                game.player = self._factory(env_id)
            except ValueError as error:
                raise RequestError(str(error)) from None
        return game.player

    def player(self, env_id: str) -> Player:
        """The player for ``env_id`` (built once; a ValueError becomes a 400)."""
        game = self._game(env_id)
        with game.lock:
            return self._player(game, env_id)

    def read(self, body: dict[str, Any]) -> ChatRequest:
        """The request's checked fields: a 400 names a field it cannot honour, a 404 a model.

        Raises:
            RequestError: the field, or the unknown model (vLLM's 404).
        """
        try:
            chat = read_chat_request(body)
        except ChatFieldError as error:
            raise RequestError(str(error), param=error.param) from None
        if chat.model is not None and chat.model != self.model:
            raise RequestError(
                f"The model `{chat.model}` does not exist.", HTTPStatus.NOT_FOUND, param="model"
            )
        return chat

    def _decide(
        self, request: GameRequest, state: GameState, chat: ChatRequest
    ) -> list[tuple[str, str]]:
        """``chat.n`` moves of the game's player, each with its reasoning.

        A seeded request is answered by a player of that seed's own.
        """
        env_id = request.information.env_id
        game = self._game(env_id)
        with game.lock:  # this game's player: one decision at a time
            if chat.seed is None or self._seeded is None:
                player = self._player(game, env_id)
            else:  # a player of its own, from the request's seed: the same seed, the same move
                player = self._seeded_player(env_id, chat.seed)
            moves = [self._move(player, request, state) for _ in range(chat.n)]
        return [(f"{player.name} plays {move} from this position.", move) for move in moves]

    def _seeded_player(self, env_id: str, seed: int) -> Player:
        assert self._seeded is not None
        try:
            return self._seeded(env_id, seed)
        except ValueError as error:
            raise RequestError(str(error)) from None

    @staticmethod
    def _move(player: Player, request: GameRequest, state: GameState) -> str:
        """One decision of ``player``, checked legal; its move's text."""
        seat = request.information.seat
        try:
            decision = asyncio.run(player.act(state, seat))
        except ValueError as error:  # a string the compact header left out was read
            if request.compact and state.spiel_state is None:
                raise request.left_out_error(error) from None
            raise
        # A free-text game's move is the player's text; a menu game's, a legal action.
        text_game = state.spec.move_kind == "text"
        verdict = judge_text(decision) if text_game else judge(decision, state.menu(seat))
        if verdict.action is None:
            raise RequestError(
                f"the player returned no legal move ({verdict.error})",
                HTTPStatus.INTERNAL_SERVER_ERROR,
            )
        return verdict.text

    def complete(self, body: dict[str, Any], header: str | None = None) -> dict[str, Any]:
        """A ``chat.completion`` answering the request ``body`` (game in body or ``header``)."""
        chat = self.read(body)
        request = GameRequest.from_body(body, header)
        state = request.game_state()
        style = _answer_style(chat, request)
        choices = []
        completion_tokens = 0
        for index, (reasoning, action_text) in enumerate(self._decide(request, state, chat)):
            fields, finish_reason = _limited(*style.reply(reasoning, action_text), chat)
            calls = fields.get("tool_calls", [])
            words = [fields["content"], *(c["function"]["arguments"] for c in calls)]
            completion_tokens += len(" ".join(words).split())
            message = {"role": "assistant", **fields}
            choices.append({"index": index, "message": message, "finish_reason": finish_reason})
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in chat.messages)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def events(self, body: dict[str, Any], header: str | None = None) -> list[dict[str, Any]]:
        """The answer as the ``chat.completion.chunk`` events of a streamed reply.

        The whole move is known at once, so each choice comes in one content chunk (or one
        tool-call chunk), then a chunk with its finish reason, then -- when ``stream_options``
        ``include_usage`` asks -- a usage chunk with no choices, as OpenAI streams.
        """
        include_usage = self.read(body).include_usage
        completion = self.complete(body, header)
        head = {key: completion[key] for key in ("id", "created", "model")}
        chunk = {**head, "object": "chat.completion.chunk"}
        events = []
        for choice in completion["choices"]:
            message, index = choice["message"], choice["index"]
            delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
            if "tool_calls" in message:
                delta["tool_calls"] = [
                    {"index": number, **call} for number, call in enumerate(message["tool_calls"])
                ]
            events.append({**chunk, "choices": [{"index": index, "delta": delta,
                                                 "finish_reason": None}]})  # fmt: skip
            done = {"index": index, "delta": {}, "finish_reason": choice["finish_reason"]}
            events.append({**chunk, "choices": [done]})
        if include_usage:
            events.append({**chunk, "choices": [], "usage": completion["usage"]})
        return events

    def models(self) -> dict[str, Any]:
        """The ``/v1/models`` listing: this one model."""
        return {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "owned_by": "strategic-arena"}],
        }


def _offers_play(tools: object) -> bool:
    """Whether a request's ``tools`` offer the ``play`` function."""
    return isinstance(tools, list) and any(
        isinstance(tool, dict)
        and isinstance(tool.get("function"), dict)
        and tool["function"].get("name") == PLAY_TOOL
        for tool in tools
    )


class _DeadlineReader(io.RawIOBase):
    """A socket's reading side that fails once its owner's deadline has passed.

    A socket timeout bounds one read only: a client sending a byte just before each timeout
    keeps a connection (and its thread) forever. Here every read gets what is left of the
    deadline as its timeout, so a whole request must arrive in time.
    """

    def __init__(self, connection: socket.socket, deadline: Callable[[], float]) -> None:
        super().__init__()
        self._connection = connection
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline() - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request took too long to arrive")
        self._connection.settimeout(left)
        return self._connection.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    """The HTTP side of a :class:`PlayerService`: routes, body limits and OpenAI error bodies.

    Unbound: :func:`_handler` makes the subclass the server runs, with its service and deadline.
    """

    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; with Nagle's algorithm on, the body waits for
    # the client's delayed ACK (~40 ms per request on Linux).
    disable_nagle_algorithm = True
    service: PlayerService
    request_timeout_s: float
    deadline = 0.0

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the plain reader: replaced, and its hold on the socket freed
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, lambda: self.deadline))

    def handle_one_request(self) -> None:
        # A timeout anywhere in reading the request ends up in the base class's
        # ``except TimeoutError``, which closes the connection.
        self.deadline = time.monotonic() + self.request_timeout_s
        super().handle_one_request()

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send(HTTPStatus.OK, self.service.models())
        else:
            self._error(RequestError(f"no route {self.path}", HTTPStatus.NOT_FOUND))

    def do_POST(self) -> None:
        raw = self._read_body()
        if raw is None:
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(RequestError(f"no route {self.path}", HTTPStatus.NOT_FOUND))
            return
        self._complete(raw)

    def _read_body(self) -> bytes | None:
        """The request's body, or None when it cannot be read (answered, or nobody to answer).

        The declared length is checked before anything is read: a body that is unreadable or
        over :data:`MAX_BODY_BYTES` is refused and the connection closed.
        """
        declared = self.headers.get("Content-Length") or "0"
        if not declared.isdigit():  # negative or not a number: unreadable, and unsafe
            self.close_connection = True
            self._error(RequestError("Content-Length must be a non-negative integer"))
            return None
        if int(declared) > MAX_BODY_BYTES:
            self.close_connection = True
            self._error(
                RequestError(
                    f"the body is over {MAX_BODY_BYTES} bytes",
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                )
            )
            return None
        raw = self.rfile.read(int(declared))
        if len(raw) < int(declared):  # the client closed mid-body: nobody to answer
            self.close_connection = True
            return None
        return raw

    def _complete(self, raw: bytes) -> None:
        """Answer a chat completion from its raw body: the service's answer, or an error body."""
        try:
            body = decode(raw or b"{}", "the request body", finite=False)
            if not isinstance(body, dict):
                raise RequestError("the request body must be a JSON object")
            header = self.headers.get(GAME_HEADER)
            if body.get("stream") is True:
                self._send_events(self.service.events(body, header))
            else:
                self._send(HTTPStatus.OK, self.service.complete(body, header))
        except RequestError as error:
            self._error(error)
        except Refused as error:  # not JSON, not UTF-8 or nested too deeply: one line
            self._error(RequestError(str(error)))
        except (ConnectionError, TimeoutError):  # the client went away or stopped reading
            raise
        except Exception as error:  # the player failed: a 500, not a dropped connection
            self._error(
                RequestError(
                    f"the player failed: {type(error).__name__}: {error}",
                    HTTPStatus.INTERNAL_SERVER_ERROR,
                )
            )

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the arena records what matters."""

    def _error(self, error: RequestError) -> None:
        kind = "invalid_request_error" if error.status < 500 else "server_error"
        if error.status == HTTPStatus.NOT_FOUND:
            kind = "NotFoundError"
        body = {"message": str(error), "type": kind, "param": error.param}
        self._send(error.status, {"error": {**body, "code": int(error.status)}})

    def _send(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        self._write(status, "application/json", json.dumps(payload).encode("utf-8"))

    def _send_events(self, events: list[dict[str, Any]]) -> None:
        """Server-sent events: ``data: {json}`` per event, then ``data: [DONE]``."""
        lines = [f"data: {json.dumps(event)}\n\n" for event in events]
        data = "".join([*lines, "data: [DONE]\n\n"]).encode("utf-8")
        self._write(HTTPStatus.OK, "text/event-stream", data)

    def _write(self, status: HTTPStatus, content_type: str, data: bytes) -> None:
        self.connection.settimeout(WRITE_TIMEOUT_S)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if content_type == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(data)


def _handler(service: PlayerService, request_timeout_s: float) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``service``."""

    class Handler(_Handler):
        pass

    Handler.service = service
    Handler.request_timeout_s = request_timeout_s
    Handler.timeout = request_timeout_s  # the first read's; then _DeadlineReader's
    return Handler


class _Server(ThreadingHTTPServer):
    """The HTTP server: a thread per connection, at most ``max_connections`` of them.

    Quiet about clients that hang up (an interrupted run's requests) or time out.
    """

    daemon_threads = True
    block_on_close = False  # stop() does not wait for clients still connected (up to a deadline)
    request_queue_size = LISTEN_BACKLOG  # listen(2)'s backlog (socketserver's default: 5)

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):  # full: say so and close, spawn nothing
            with contextlib.suppress(OSError):
                request.sendall(_BUSY)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: its slot is free again
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


_BUSY_BODY = json.dumps(
    {"error": {"message": "too many connections; retry later", "type": "server_error"}}
).encode()
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    + f"Content-Length: {len(_BUSY_BODY)}\r\nConnection: close\r\n\r\n".encode()
    + _BUSY_BODY
)


class PlayerServer:
    """A running endpoint: ``with PlayerServer(...) as server: server.base_url``.

    Args:
        player: an opponent spec (``"mcts:simulations=100"``, built per game with
            :func:`opponents.make`), a mapping ``env_id -> spec`` (one solver per game; other
            games are refused) or a factory ``env_id -> Player``.
        model: the model name the endpoint reports (default: the spec).
        host / port: where to listen (port 0 picks a free port).
        request_timeout_s: seconds a connection has to send each whole request.
        max_connections: connections served at once (more get a 503).
    """

    def __init__(
        self,
        player: str | Mapping[str, str] | PlayerFactory,
        model: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        if isinstance(player, (str, Mapping)):
            specs = player

            def factory(env_id: str) -> Player:
                if isinstance(specs, str):
                    return opponents.make(specs, env_id, seed=0)
                if env_id not in specs:
                    raise ValueError(f"this endpoint plays {', '.join(specs)}, not {env_id}")
                return opponents.make(specs[env_id], env_id, seed=0)

            def seeded(env_id: str, seed: int) -> Player:
                spec = specs if isinstance(specs, str) else specs.get(env_id)
                if spec is None:
                    raise ValueError(f"this endpoint plays {', '.join(specs)}, not {env_id}")
                return opponents.make(spec, env_id, seed=seed)

            default = player if isinstance(player, str) else "solvers"
            self.service = PlayerService(model or default, factory, seeded)
        else:
            self.service = PlayerService(model or "player", player)
        handler = _handler(self.service, request_timeout_s)
        self.httpd = _Server((host, port), handler, max_connections)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI base URL: ``http://host:port/v1``."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> PlayerServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted."""
        self.httpd.serve_forever()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> PlayerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
