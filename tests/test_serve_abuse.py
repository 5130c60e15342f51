"""`serve` under abuse, on loopback: slowloris connections, impossible seats crafted to cost
search, malformed fields, bursts of connections, streaming, and one slow game beside another."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

import strategic_arena as sa
from strategic_arena.actions import Action
from strategic_arena.serve import GAME_FIELD, PlayerServer
from strategic_arena.turn import Decision, GameState, Player
from strategic_arena.validation import validate

openai = pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")
pytest.importorskip("numba")  # the Nash and Hanabi players of opponents

KUHN, HANABI = "kuhn_poker-v0", "simple_hanabi-v0"


def seat_field(env_id: str, history: list[int] | None = None) -> dict[str, Any]:
    """The seat to move's information after ``history`` (chance: first outcome each time)."""
    spec = sa.get_spec(env_id)
    state = spec.game.new_initial_state()
    for action in history or []:
        state.apply_action(action)
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    return sa.SeatInformation.of(spec, state, state.current_player()).payload()


def eleven_card_hand() -> dict[str, Any]:
    """A Simple Hanabi seat whose own hand holds 11 cards (the variant deals 5): an
    enumeration of its hidden cards would take seconds."""
    field = seat_field(HANABI)
    lines = field["observation"].split("\n")
    at, partner = lines.index("Cur player") + 1, lines.index("-----")
    # Eleven unknown cards of its own, none shown for the partner: every card of the deck is
    # a candidate for every position.
    lines[at:] = [lines[at]] * 11 + ["-----"] + lines[partner + 6 :]
    return {**field, "observation": "\n".join(lines)}


def post(base_url: str, body: dict[str, Any], timeout: float = 30) -> tuple[int, Any]:
    """POST a chat request; its status and decoded JSON answer."""
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def chat(field: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "your move"}], GAME_FIELD: field, **extra}


def connect(server: PlayerServer, timeout: float = 10) -> socket.socket:
    address = urlsplit(server.base_url)
    assert address.hostname is not None and address.port is not None
    return socket.create_connection((address.hostname, address.port), timeout=timeout)


def still_open(sock: socket.socket) -> bool:
    """Whether the server has neither answered nor closed ``sock`` (nothing to read yet)."""
    sock.setblocking(False)
    try:
        sock.recv(1)
    except BlockingIOError:
        return True
    except OSError:  # reset by the server
        return False
    finally:
        sock.setblocking(True)
    return False


def answer(sock: socket.socket) -> bytes:
    """One whole HTTP answer read from ``sock``: its head and the body its length announces."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(head.split(b"Content-Length: ", 1)[1].split(b"\r\n", 1)[0])
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@pytest.fixture(scope="module")
def server() -> Iterator[PlayerServer]:
    with PlayerServer({KUHN: "nash", HANABI: "hanabi_bot"}, model="solvers") as running:
        yield running


BAD_SEATS = {
    "seat out of range": ({**seat_field(KUHN), "seat": 5}, "seat must be between 0 and 1"),
    "unknown information state": (
        {**seat_field(KUHN), "information_state": "9pb"},
        "information_state is not one seat 0 can have",
    ),
    "action id out of range": (
        {**seat_field(KUHN), "legal_actions": {"99": "pass"}},
        "legal action ids must be between 0 and 1",
    ),
    "legal actions of another state": (
        {**seat_field(KUHN), "legal_actions": {"0": "pass"}},
        "legal_actions are not the seat's legal actions",
    ),
    "public moves past the game's end": (
        {**seat_field(KUHN), "public_moves": [[0, 0]] * 50},
        "too many public moves",
    ),
    "eleven-card Hanabi hand": (eleven_card_hand(), "a hand has more than the variant's 5 cards"),
    "not a Hanabi observation": (
        {**seat_field(HANABI), "observation": "Life tokens: 3"},
        "not a Hanabi observation",
    ),
    "nine life tokens": (
        {
            **seat_field(HANABI),
            "observation": seat_field(HANABI)["observation"].replace(
                "Life tokens: 3", "Life tokens: 9"
            ),
        },
        "life tokens must be between 0 and 3",
    ),
    "a huge observation": (
        {**seat_field(HANABI), "observation": "x" * 100_000},
        "observation is over 65536 characters",
    ),
}


@pytest.mark.parametrize("case", list(BAD_SEATS))
def test_impossible_seats_are_400s_before_any_search(server: PlayerServer, case: str) -> None:
    field, message = BAD_SEATS[case]
    status, reply = post(server.base_url, chat(field))
    assert status == 400, reply
    assert reply["error"]["type"] == "invalid_request_error"
    assert message in reply["error"]["message"]


BAD_FIELDS = {
    "stream": ("yes", "stream: must be true or false"),
    "stream_options": ("usage", "stream_options: must be an object"),
    "tools": ("play", "tools: must be a list"),
    "n": (17, "n: must be an integer from 1 to 16"),
    "model": (7, "model: must be a string"),
    "messages": ({"role": "user"}, "messages: must be a list of message objects"),
    "max_tokens": (0, "max_tokens: must be an integer from 1 to 2147483647"),
    "stop": ([""], "stop: must be a non-empty string or a list of them"),
    "seed": (2**64, "seed: must be an integer that fits in 64 bits"),
    "temperature": (-1, "temperature: must lie in [0, 100]"),
    "tool_choice": ("sometimes", "tool_choice: must be none, auto, required or"),
}


@pytest.mark.parametrize("name", list(BAD_FIELDS))
def test_every_malformed_field_is_a_400(server: PlayerServer, name: str) -> None:
    value, message = BAD_FIELDS[name]
    status, reply = post(server.base_url, chat(seat_field(KUHN), **{name: value}))
    assert status == 400 and reply["error"]["message"].startswith(message), reply
    assert reply["error"]["param"] == name and reply["error"]["code"] == 400


def test_a_body_that_is_not_utf8_is_a_400(server: PlayerServer) -> None:
    body = b'{"messages": [], "x": "\xff\xfe\xfa"}'
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    with connect(server) as sock:
        sock.sendall(head.encode() + body)
        reply = answer(sock)
    assert reply.startswith(b"HTTP/1.1 400 ") and b"not JSON" in reply


def test_a_real_seat_still_gets_a_legal_move(server: PlayerServer) -> None:
    for env_id in (KUHN, HANABI):
        field = seat_field(env_id)
        status, reply = post(server.base_url, chat(field))
        assert status == 200, reply
        text = reply["choices"][0]["message"]["content"]
        legal = {int(a): t for a, t in field["legal_actions"].items()}
        move = validate(env_id, text, legal)
        assert isinstance(move, Action) and move.id in legal


def test_normal_requests_are_answered_under_slowloris_and_crafted_searches() -> None:
    # 400 connections that send half a request and then nothing: each holds a server thread
    # until its deadline, which must not stop anyone else from being served. The deadline is
    # long here (300 s) so that "answered while every slow connection is still held" below
    # cannot depend on how fast a loaded machine opens 400 connections.
    with PlayerServer(
        {KUHN: "nash", HANABI: "hanabi_bot"}, model="solvers", request_timeout_s=300.0
    ) as server:
        _serve_under_slowloris(server)


def _serve_under_slowloris(server: PlayerServer) -> None:
    slow = [connect(server) for _ in range(400)]
    crafted: list[socket.socket] = []
    try:
        for sock in slow:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Le")
        # 8 requests crafted to cost seconds of search each, sent all at once.
        body = json.dumps(chat(eleven_card_hand())).encode()
        head = (
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        for _ in range(8):
            crafted.append(connect(server))
            crafted[-1].sendall(head + body)
        status, reply = post(server.base_url, chat(seat_field(KUHN)), timeout=30)
        assert status == 200, reply
        legal = {int(a): t for a, t in seat_field(KUHN)["legal_actions"].items()}
        move = validate(KUHN, reply["choices"][0]["message"]["content"], legal)
        assert isinstance(move, Action) and move.id in legal
        # The answer came while every slow connection was still held open: it did not wait
        # for their deadlines (the server answers or closes a connection at its deadline).
        assert all(still_open(sock) for sock in slow)
        for sock in crafted:  # and the crafted ones were refused, not searched
            assert answer(sock).startswith(b"HTTP/1.1 400 ")
    finally:
        for sock in slow + crafted:
            sock.close()


def test_a_trickling_client_is_cut_off_at_the_request_deadline() -> None:
    with PlayerServer("random", request_timeout_s=1.0) as server, connect(server) as sock:
        request = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 400
        closed = False
        for byte in request:  # one byte every 0.1 s: each read is quick, the whole is not
            try:
                sock.sendall(bytes([byte]))
            except OSError:  # reset: the server closed the connection
                closed = True
                break
            time.sleep(0.1)
        if not closed:
            sock.settimeout(10)
            try:
                closed = sock.recv(1) == b""
            except OSError:
                closed = True
        assert closed  # within 40 s of trickle (a 1 s deadline); before, never


def test_a_burst_of_connections_queues_instead_of_being_reset() -> None:
    server = PlayerServer("random")  # listening, not yet accepting: every connection queues
    try:
        # 100: over Python's default backlog of 5 (the 7th stalled), under the kernel's cap
        # (net.core.somaxconn, 128 on older kernels).
        burst = [connect(server, timeout=5) for _ in range(100)]
        server.start()
        burst[-1].sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer(burst[-1]).startswith(b"HTTP/1.1 200 ")
        for sock in burst:
            sock.close()
    finally:
        server.stop()


def test_over_the_connection_limit_gets_a_503() -> None:
    with PlayerServer("random", max_connections=3) as server:
        held = [connect(server) for _ in range(3)]
        try:
            for sock in held:  # each is being served (its thread waits for a request)
                sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
                assert answer(sock).startswith(b"HTTP/1.1 200 ")
            with connect(server) as extra:
                reply = answer(extra)
            assert reply.startswith(b"HTTP/1.1 503 ") and b"too many connections" in reply
        finally:
            for sock in held:
                sock.close()


class Gate:
    """A player that waits at a gate before moving (the first legal action)."""

    def __init__(self, name: str, gate: threading.Event) -> None:
        self.name = name
        self.gate = gate

    async def act(self, state: GameState, seat: int) -> Decision:
        assert self.gate.wait(60)
        action = min(state.legal_actions(seat))
        return Decision(action=action, text=state.menu(seat)[action])


def test_a_slow_game_does_not_hold_up_another() -> None:
    gate, open_gate = threading.Event(), threading.Event()
    open_gate.set()

    def factory(env_id: str) -> Player:
        return Gate("gated", gate if env_id == HANABI else open_gate)

    with PlayerServer(factory) as server:
        hanabi: list[tuple[int, Any]] = []
        waiting = threading.Thread(
            target=lambda: hanabi.append(post(server.base_url, chat(seat_field(HANABI))))
        )
        waiting.start()
        try:
            status, _ = post(server.base_url, chat(seat_field(KUHN)), timeout=20)
            assert status == 200 and not hanabi  # Kuhn answered while Hanabi still waits
        finally:
            gate.set()
            waiting.join()
        assert hanabi[0][0] == 200


def first_legal_server() -> PlayerServer:
    def factory(env_id: str) -> Player:
        ready = threading.Event()
        ready.set()
        return Gate("first-legal", ready)

    return PlayerServer(factory, model="first-legal")


@pytest.mark.parametrize("style", ["marshal", "tools"])
def test_stream_true_is_served_as_server_sent_events(style: str) -> None:
    field = {**seat_field(KUHN), "style": style}
    with first_legal_server() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
        whole = client.chat.completions.create(
            model="first-legal",
            messages=[{"role": "user", "content": "your move"}],
            extra_body={GAME_FIELD: field},
        )
        chunks = list(
            client.chat.completions.create(
                model="first-legal",
                messages=[{"role": "user", "content": "your move"}],
                extra_body={GAME_FIELD: field},
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == whole.choices[0].message.content
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finish[-1] == whole.choices[0].finish_reason and finish[:-1] == [None]
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    if style == "tools":
        (call,) = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or []]
        (expected,) = whole.choices[0].message.tool_calls or []
        assert call.function is not None
        assert (call.function.name, call.function.arguments) == (
            expected.function.name,
            expected.function.arguments,
        )
