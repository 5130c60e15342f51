"""serve: a player behind real HTTP, spoken to by the real OpenAI client."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

import strategic_arena as sa
from strategic_arena.actions import Action
from strategic_arena.serve import GAME_FIELD, PlayerServer
from strategic_arena.tools import play_tool, play_tool_choice, tool_calls_text
from strategic_arena.validation import STYLES

openai = pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")


@pytest.fixture(scope="module")
def server() -> Iterator[PlayerServer]:
    with PlayerServer("random") as running:
        yield running


def client(server: PlayerServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def seat_field(env_id: str, history: list[int], **extra: object) -> dict[str, object]:
    """The game field of a request: the seat to move's information after ``history``."""
    spec = sa.get_spec(env_id)
    state = spec.game.new_initial_state()
    for action in history:
        state.apply_action(action)
    seat = state.current_player()
    return {**sa.SeatInformation.of(spec, state, seat).payload(), **extra}


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("env_id", ["tic_tac_toe-v0", "leduc_holdem-v0", "mini_hanabi-v0"])
def test_served_player_answers_a_legal_move_in_the_style(
    server: PlayerServer, env_id: str, style: str
) -> None:
    env = sa.make(env_id)
    env.reset(seed=3)
    env.step(next(iter(env.legal_action_texts(env.agent_selection))))
    agent = env.agent_selection
    view = env.seat_view(agent)
    offered = (
        {"tools": [play_tool(view.legal_actions.values())], "tool_choice": play_tool_choice()}
        if style == "tools"
        else {}
    )
    reply = client(server).chat.completions.create(
        model=server.service.model,
        messages=sa.render_messages(env_id, view, style),  # type: ignore[arg-type]
        extra_body={GAME_FIELD: seat_field(env_id, list(env.spiel_state.history()), style=style)},
        **offered,  # type: ignore[arg-type]
    )
    message = reply.choices[0].message
    content = message.content or ""
    assert reply.usage is not None and reply.usage.total_tokens > 0
    if style == "tools":
        # a tool call, read through the client's typed objects as any tool-using program would
        assert reply.choices[0].finish_reason == "tool_calls" and message.tool_calls
        call = message.tool_calls[0]
        assert call.function.name == "play"  # type: ignore[union-attr]
        assert json.loads(call.function.arguments)["move"] in view.legal_actions.values()  # type: ignore[union-attr]
        content = tool_calls_text(content, [call.model_dump()])
    else:
        assert reply.choices[0].finish_reason == "stop" and not message.tool_calls
    outcome = sa.validate(env_id, content, view.legal_actions, style)  # type: ignore[arg-type]
    assert isinstance(outcome, Action), content


def test_models_lists_the_served_model(server: PlayerServer) -> None:
    models = client(server).models.list()
    assert [model.id for model in models.data] == ["random"]


@pytest.mark.parametrize(
    ("game", "message"),
    [
        (None, "needs the seat's information"),
        ({**seat_field("tic_tac_toe-v0", []), "env_id": "chess"}, "unknown env id"),
        ({**seat_field("tic_tac_toe-v0", [4]), "history": [4, 4]}, "not legal"),
        ({**seat_field("tic_tac_toe-v0", [4]), "seat": 0}, "not to move"),
        (seat_field("tic_tac_toe-v0", [], style="xml"), "style"),
        ({**seat_field("tic_tac_toe-v0", []), "history": "01"}, "list of action ids"),
        ({**seat_field("kuhn_poker-v0", [0, 1]), "legal_actions": [0]}, "legal_actions"),
        ({**seat_field("kuhn_poker-v0", [0, 1]), "seat": True}, "seat must be an integer"),
        ({**seat_field("tic_tac_toe-v0", [4]), "history": None}, "perfect information"),
        ({**seat_field("kuhn_poker-v0", [0, 1]), "history": [0, 1]}, "send no history"),
    ],
)
def test_bad_requests_get_clear_400s(server: PlayerServer, game: object, message: str) -> None:
    extra = {} if game is None else {GAME_FIELD: game}
    with pytest.raises(openai.BadRequestError, match=message):
        client(server).chat.completions.create(
            model="random", messages=[{"role": "user", "content": "hi"}], extra_body=extra
        )


def test_unknown_route_and_malformed_json(server: PlayerServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{server.base_url}/nothing")
    assert missing.value.code == 404
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions", data=b"{not json", method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as bad:
        urllib.request.urlopen(request)
    assert bad.value.code == 400
    assert "not JSON" in json.loads(bad.value.read())["error"]["message"]


def test_a_solver_spec_is_served_per_game() -> None:
    with PlayerServer("minimax") as running:
        reply = client(running).chat.completions.create(
            model="minimax",
            messages=[{"role": "user", "content": "your move"}],
            extra_body={GAME_FIELD: seat_field("tic_tac_toe-v0", [0, 4, 8])},
        )
        # O must not play a corner here: (0,1), (1,0), (1,2), (2,1) keep the draw.
        outcome = sa.validate(
            "tic_tac_toe-v0", reply.choices[0].message.content, [1, 2, 3, 5, 6, 7]
        )
        assert isinstance(outcome, Action) and outcome.id in (1, 3, 5, 7)
        with pytest.raises(openai.BadRequestError, match="minimax cannot play"):
            client(running).chat.completions.create(
                model="minimax",
                messages=[{"role": "user", "content": "x"}],
                extra_body={GAME_FIELD: seat_field("kuhn_poker-v0", [0, 1])},
            )


def test_a_mapping_serves_one_solver_per_game() -> None:
    with PlayerServer({"kuhn_poker-v0": "nash"}, model="suite") as running:
        reply = client(running).chat.completions.create(
            model="suite",
            messages=[{"role": "user", "content": "your move"}],
            extra_body={GAME_FIELD: seat_field("kuhn_poker-v0", [2, 0])},
        )
        # Seat 0 holds the King (chance outcome 2): the equilibrium answers a legal move from
        # its information state alone (the request never names seat 1's card).
        outcome = sa.validate("kuhn_poker-v0", reply.choices[0].message.content, [0, 1])
        assert isinstance(outcome, Action)
        with pytest.raises(openai.BadRequestError, match="plays kuhn_poker-v0, not tic_tac_toe"):
            client(running).chat.completions.create(
                model="suite",
                messages=[{"role": "user", "content": "x"}],
                extra_body={GAME_FIELD: seat_field("tic_tac_toe-v0", [])},
            )


def _raw(server: PlayerServer, head: str, body: bytes = b"") -> tuple[int, dict[str, object]]:
    """Send a hand-written HTTP request; the status and JSON body of the answer."""
    import socket
    from urllib.parse import urlsplit

    address = urlsplit(server.base_url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < int(
            data.split(b"Content-Length: ", 1)[1].split(b"\r\n", 1)[0]
            if b"Content-Length: " in data
            else 0
        ):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, json.loads(data.split(b"\r\n\r\n", 1)[1])


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", str(64 * 1024 * 1024)])
def test_a_hostile_content_length_gets_an_answer_not_a_hang(
    server: PlayerServer, length: str
) -> None:
    status, payload = _raw(
        server, f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {length}"
    )
    assert status in (400, 413)
    assert "error" in payload


def test_hostile_bodies_and_headers_are_400s_before_the_player_acts(server: PlayerServer) -> None:
    game = seat_field("tic_tac_toe-v0", [])
    body = json.dumps({"messages": ["not an object"], GAME_FIELD: game}).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}"
    status, payload = _raw(server, head, body)
    assert status == 400 and "messages" in str(payload)
    nested = b"[" * 100_000 + b"]" * 100_000
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(nested)}"
    status, payload = _raw(server, head, nested)
    assert status == 400 and "error" in payload
    deep = "[" * 30_000 + "]" * 30_000  # under http.server's 64 kB line limit
    body = json.dumps({"messages": []}).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
        f"X-Strategic-Arena-Game: {deep}"
    )
    status, payload = _raw(server, head, body)
    assert status == 400 and "X-Strategic-Arena-Game header: JSON nested deeper" in str(payload)
