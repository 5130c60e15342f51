"""``strategic-arena serve`` honours the OpenAI fields as vLLM's server does, one by one.

Each test sends one field through the official ``openai`` client to a real served solver
(Tic-Tac-Toe's minimax and Kuhn Poker's Nash player on loopback) and checks what vLLM does
with it: ``max_tokens`` cuts the answer with ``finish_reason: length``, ``stop`` ends it before
the stop string, ``n`` gives n choices, ``seed`` makes a stochastic player reproducible,
``tool_choice: none`` gets text, ``response_format: json_object`` gets one JSON object; an
unknown model is a 404, a body without ``messages`` a 400, and a field the endpoint cannot
honour (``logprobs``, ``json_schema``) a 400 naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import strategic_arena as sa
from strategic_arena.serve import GAME_FIELD, PlayerServer
from strategic_arena.tools import play_tool

openai = pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")
pytest.importorskip("numba")  # the Nash player

TTT, KUHN = "tic_tac_toe-v0", "kuhn_poker-v0"
MESSAGES = [{"role": "user", "content": "your move"}]


@pytest.fixture(scope="module")
def server() -> Iterator[PlayerServer]:
    with PlayerServer({TTT: "minimax", KUHN: "nash"}, model="suite") as running:
        yield running


@pytest.fixture
def client(server: PlayerServer) -> Any:
    return openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def seat(env_id: str, history: list[int]) -> dict[str, Any]:
    """The game field: the seat to move's information after ``history``."""
    spec = sa.get_spec(env_id)
    state = spec.game.new_initial_state()
    for action in history:
        state.apply_action(action)
    return sa.SeatInformation.of(spec, state, state.current_player()).payload()


def ask(client: Any, env_id: str = TTT, history: list[int] | None = None, **fields: Any) -> Any:
    extra = {GAME_FIELD: seat(env_id, history or [])}
    return client.chat.completions.create(
        model="suite", messages=MESSAGES, extra_body=extra, **fields
    )


def test_max_tokens_cuts_the_answer_with_finish_reason_length(client: Any) -> None:
    whole = ask(client)
    assert whole.choices[0].finish_reason == "stop"
    words = whole.choices[0].message.content.split()
    assert len(words) > 2
    cut = ask(client, max_tokens=2)
    assert cut.choices[0].finish_reason == "length"
    assert cut.choices[0].message.content.split() == words[:2]
    assert cut.usage.completion_tokens == 2
    also = ask(client, max_completion_tokens=1)
    assert also.choices[0].finish_reason == "length"
    assert also.choices[0].message.content.split() == words[:1]


def test_stop_ends_the_answer_before_the_stop_string(client: Any) -> None:
    whole = ask(client).choices[0].message.content
    marker = whole.split()[1]  # a word of the answer
    stopped = ask(client, stop=[marker]).choices[0]
    assert stopped.finish_reason == "stop"
    assert stopped.message.content == whole[: whole.index(marker)]
    assert marker not in stopped.message.content


def test_n_gives_n_choices_each_a_legal_move(client: Any) -> None:
    reply = ask(client, KUHN, [0, 1], n=5)
    assert [choice.index for choice in reply.choices] == [0, 1, 2, 3, 4]
    legal = set(seat(KUHN, [0, 1])["legal_actions"].values())
    for choice in reply.choices:
        assert any(move in choice.message.content for move in legal)


def test_seed_makes_a_stochastic_player_reproducible(client: Any) -> None:
    """Kuhn's Nash player mixes at the Jack: the same seed gives the same ten samples."""
    first = [c.message.content for c in ask(client, KUHN, [0, 1], n=10, seed=7).choices]
    again = [c.message.content for c in ask(client, KUHN, [0, 1], n=10, seed=7).choices]
    assert first == again
    draws = {
        c.message.content for s in range(6) for c in ask(client, KUHN, [0, 1], n=10, seed=s).choices
    }
    assert len(draws) == 2  # both moves of the mixed strategy show up across seeds


def test_tool_choice_none_answers_in_text_even_when_play_is_offered(client: Any) -> None:
    legal = seat(TTT, [])["legal_actions"].values()
    tools = [play_tool(list(legal))]
    called = ask(client, tools=tools).choices[0]
    assert called.message.tool_calls and called.finish_reason == "tool_calls"
    text = ask(client, tools=tools, tool_choice="none").choices[0]
    assert not text.message.tool_calls and text.message.content
    required = ask(client, tools=tools, tool_choice="required").choices[0]
    assert required.message.tool_calls
    with pytest.raises(openai.BadRequestError, match="tool_choice"):
        ask(client, tool_choice="required")  # no tools offered


def test_response_format_json_object_answers_one_json_object(client: Any) -> None:
    reply = ask(client, response_format={"type": "json_object"}).choices[0].message.content
    value = json.loads(reply)
    assert isinstance(value, dict) and "action" in value
    with pytest.raises(openai.BadRequestError, match="json_schema"):
        schema = {"name": "move", "schema": {"type": "object"}}
        ask(client, response_format={"type": "json_schema", "json_schema": schema})


def test_logprobs_are_refused_naming_the_field(client: Any) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        ask(client, logprobs=True, top_logprobs=2)
    assert refused.value.body["param"] == "logprobs"


def test_an_unknown_model_is_a_404(client: Any) -> None:
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(
            model="gpt-nothing", messages=MESSAGES, extra_body={GAME_FIELD: seat(TTT, [])}
        )


def test_a_body_without_messages_is_a_400(server: PlayerServer) -> None:
    import urllib.error
    import urllib.request

    body = json.dumps({"model": "suite", GAME_FIELD: seat(TTT, [])}).encode()
    request = urllib.request.Request(
        server.base_url + "/chat/completions", body, {"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 400
    assert json.loads(refused.value.read())["error"]["param"] == "messages"


def test_streaming_honours_n_and_max_tokens(client: Any) -> None:
    extra = {GAME_FIELD: seat(KUHN, [0, 1])}
    stream = client.chat.completions.create(
        model="suite",
        messages=MESSAGES,
        extra_body=extra,
        n=2,
        max_tokens=1,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    finishes = {c.choices[0].index: c.choices[0].finish_reason for c in chunks if c.choices}
    assert finishes == {0: "length", 1: "length"}
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 2
