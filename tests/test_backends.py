"""OpenAIBackend and LLMPlayer over real HTTP: success, every fault kind, and give-up paths."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest

import strategic_arena as sa
from strategic_arena.arena import play_match_sync
from strategic_arena.players import GAME_HEADER, LLMPlayer, RandomPlayer, game_header
from strategic_arena.serve import PlayerServer

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.asking import Asking, Sampling
from strategic_arena.backends import OpenAIBackend
from tests.servers import FaultServer

SECRET = "sk-test-secret-never-stored"
#: The deadline where a test injects slow faults: each costs it, and an honest reply on a loaded
#: machine still has room (milliseconds of work).
SLOW_TIMEOUT_S = 2.0


@pytest.fixture
def faulty() -> Iterator[FaultServer]:
    server = FaultServer([])
    yield server
    server.close()


def backend(url: str, **kwargs: Any) -> OpenAIBackend:
    # A generous deadline: an honest answer on a loaded machine never reaches it, so every
    # timeout a test counts is an injected "slow" fault (which waits for the client to hang up).
    options: dict[str, Any] = {"timeout_s": 30.0, "backoff_base_s": 0.01, "seed": 0}
    options.update(kwargs)
    return OpenAIBackend("random", url, api_key=SECRET, **options)


def test_llm_player_plays_whole_games_against_a_served_solver() -> None:
    with PlayerServer("mcts:simulations=50", model="mcts") as server:  # the name asked
        model = LLMPlayer(OpenAIBackend("mcts", server.base_url, timeout_s=10), name="served-mcts")
        for seed in range(3):
            record = play_match_sync("tic_tac_toe-v0", [model, RandomPlayer(seed)], seed=seed)
            assert record.status == "complete"
            own = [move for move in record.moves if move.seat == 0]
            assert all(
                move.error is None and move.decision.usage["completion_tokens"] > 0 for move in own
            )
            assert all(move.decision.prompt[0]["role"] == "system" for move in own)


def test_one_backend_serves_several_event_loops_and_closes_each_client(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each ``asyncio.run`` gets its own client, closed before its loop ends: the replaced one
    used to be closed by its finalizer on the next loop ("Event loop is closed", logged)."""
    with PlayerServer("random") as server:
        model = OpenAIBackend("random", server.base_url, api_key=SECRET)
        player = LLMPlayer(model)
        clients = []
        for seed in range(3):
            record = play_match_sync("tic_tac_toe-v0", [player, RandomPlayer(seed)], seed=seed)
            assert record.status == "complete"
            clients.append(model._client)
        gc.collect()
    assert len({id(client) for client in clients}) == 3
    assert all(client.is_closed for client in clients)
    assert not [record.getMessage() for record in caplog.records if record.levelno >= 40]

    async def twice() -> bool:
        env = sa.make("tic_tac_toe-v0")
        env.reset(seed=0)
        await player.act(sa.GameState("tic_tac_toe-v0", env.spiel_state.clone()), 0)
        first = model._client
        await model.aclose()  # explicit close; the next request opens a new client
        return bool(first.is_closed and model._client is None)

    with PlayerServer("random") as server:
        model = OpenAIBackend("random", server.base_url, api_key=SECRET)
        player = LLMPlayer(model)
        assert asyncio.run(twice())


@pytest.mark.parametrize("fault", ["500", "429", "malformed", "empty", "slow", "blank", "drop"])
def test_retryable_faults_are_retried_and_recorded(faulty: FaultServer, fault: str) -> None:
    faulty.faults = [fault, fault]
    # A slow fault costs the whole deadline: a short one there, with room for the honest reply.
    player = LLMPlayer(
        backend(faulty.base_url, timeout_s=SLOW_TIMEOUT_S if fault == "slow" else 30)
    )
    env = sa.make("connect_four-v0")
    env.reset(seed=0)
    decision = asyncio.run(player.act(sa.GameState("connect_four-v0", env.spiel_state.clone()), 0))
    assert decision.action is not None and decision.error is None
    result_attempts = len(faulty.seen_keys)
    assert result_attempts == 3


def test_backend_records_each_failure(faulty: FaultServer) -> None:
    faulty.faults = ["500", "429", "slow", "empty"]
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    messages = sa.render_messages("tic_tac_toe-v0", env.seat_view("player_0"))
    information = sa.SeatInformation.of(env.spec, env.spiel_state, 0)
    header = {GAME_HEADER: game_header(information, "marshal")}
    client = backend(faulty.base_url, timeout_s=SLOW_TIMEOUT_S)
    result = asyncio.run(client.complete(messages, headers=header))
    assert result.error is None and result.attempts == 5
    assert [f.split(":")[0] for f in result.failures] == [
        "500",
        "429",
        "timeout",
        "no choices in the response",
    ]


@pytest.mark.parametrize("policy", ["forfeit", "retry:2", "random"])
def test_giving_up_is_an_infrastructure_error_that_stops_the_game(
    faulty: FaultServer, policy: str
) -> None:
    # Not the model's doing: no policy applies (no re-ask, no random move, no forfeit).
    faulty.faults = ["500"] * 3
    client = backend(faulty.base_url, max_attempts=3, timeout_s=SLOW_TIMEOUT_S)
    player = LLMPlayer(client, Asking(policy=policy), seed=0)
    record = play_match_sync("kuhn_poker-v0", [player, RandomPlayer(0)], seed=0)
    assert record.status == "incomplete" and record.forfeited_by is None
    assert record.returns == (0.0, 0.0) and len(record.moves) == 1
    failed = record.moves[0]
    assert failed.action is None and failed.error is not None and failed.error.kind == "endpoint"
    assert failed.decision.attempts == 1 and len(failed.decision.failures) == 3
    assert record.infrastructure_error == f"endpoint: {failed.error.detail}"
    assert sum(faulty.served.values()) == 3  # nothing asked after the backend gave up
    faulty.faults = ["slow"] * 3
    record = play_match_sync("kuhn_poker-v0", [player, RandomPlayer(0)], seed=0)
    assert record.status == "incomplete"
    assert record.moves[0].error.kind == "timeout"  # type: ignore[union-attr]


def test_client_errors_are_not_retried(faulty: FaultServer) -> None:
    faulty.faults = ["400", "ok"]
    result = asyncio.run(backend(faulty.base_url).complete([{"role": "user", "content": "x"}]))
    # A refusal of the request itself, not a server failure: the run stops on it.
    assert result.error == "refused" and result.attempts == 1 and "400" in result.failures[0]


def test_truncated_answer_is_retried_under_retry_policy(faulty: FaultServer) -> None:
    faulty.faults = ["truncated"]
    player = LLMPlayer(backend(faulty.base_url), Asking(policy="retry:1"))
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    decision = asyncio.run(player.act(sa.GameState("tic_tac_toe-v0", env.spiel_state.clone()), 0))
    assert decision.action is not None and decision.attempts == 2
    assert [error.kind for error in decision.errors] == ["truncated"]
    # Every answer is kept, with the feedback the model got after the rejected one.
    first, second = decision.tries
    assert first.error is not None and first.error.kind == "truncated"
    assert first.finish_reason == "length" and len(first.response) == 12
    assert first.feedback is not None and "(truncated)" in first.feedback
    assert second.error is None and second.feedback is None and second.response == decision.text


def test_the_api_key_is_sent_but_never_kept(faulty: FaultServer) -> None:
    player = LLMPlayer(backend(faulty.base_url, sampling=Sampling(temperature=0.6)))
    record = play_match_sync("tic_tac_toe-v0", [player, RandomPlayer(1)], seed=0)
    assert all(key == f"Bearer {SECRET}" for key in faulty.seen_keys)
    assert SECRET not in repr(record)


def test_bad_backend_settings() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        OpenAIBackend("m", "http://127.0.0.1:9/v1", max_attempts=0)


def test_separate_reasoning_is_kept_with_the_move(faulty: FaultServer, tmp_path: Any) -> None:
    from strategic_arena.arena.store import ResultsStore

    faulty.faults = ["reasoning"]
    player = LLMPlayer(backend(faulty.base_url))
    record = play_match_sync("kuhn_poker-v0", [player, RandomPlayer(1)], seed=0)
    first = record.moves[0].decision
    assert first.reasoning == "I think, so I am." and first.finish_reason == "stop"
    with ResultsStore(tmp_path / "r.sqlite") as store:
        store.add_game(store.run("r", 0, {}), "g", record)
        stored = store.moves(store.games()[0].id)[0]
    assert stored.reasoning == "I think, so I am." and stored.finish_reason == "stop"


def test_a_player_that_raises_is_a_500_not_a_dropped_connection() -> None:
    class Broken:
        name = "broken"

        async def act(self, state: Any, seat: int) -> Any:
            raise RuntimeError("solver crashed")

    with PlayerServer(lambda env_id: Broken(), model="random") as server:  # the name asked
        model = LLMPlayer(backend(server.base_url, max_attempts=2), name="m")
        record = play_match_sync("tic_tac_toe-v0", [model, RandomPlayer(0)], seed=0)
    decision = record.moves[0].decision
    assert record.status == "incomplete" and decision.error is not None
    assert decision.error.kind == "endpoint"
    assert len(decision.failures) == 2
    assert all(
        f.startswith("500:") and "player failed: RuntimeError" in f for f in decision.failures
    )


def test_a_key_echoed_by_the_server_is_masked_in_failures(faulty: FaultServer) -> None:
    faulty.faults = ["echo-key", "ok"]
    result = asyncio.run(backend(faulty.base_url).complete([{"role": "user", "content": "x"}]))
    assert result.failures and SECRET not in " ".join(result.failures)
    assert "***" in result.failures[0]


def test_credentials_in_the_base_url_are_not_stored() -> None:
    from strategic_arena.arena.runner import Entrant
    from strategic_arena.door import shown

    assert shown("http://user:sk-abc@host:8000/v1") == "http://host:8000/v1"
    assert shown("https://api.example.com/v1") == "https://api.example.com/v1"
    entrant = Entrant.llm(OpenAIBackend("m", "http://u:pw@localhost:9/v1"))
    assert entrant.params["base_url"] == "http://localhost:9/v1"


def completion(message: Any, **choice: Any) -> dict[str, Any]:
    """A ``chat.completion`` body with one choice."""
    return {"choices": [{"message": message, **choice}]}


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ({"content": 5}, "content is a int, not a string"),
        ({"content": {"move": "bet"}}, "content is a dict, not a string"),
        ({"content": "<answer>bet</answer>", "reasoning_content": ["a"]}, "reasoning_content is"),
        ({"content": "x", "tool_calls": "play(bet)"}, "tool_calls is a str, not a list"),
    ],
)
def test_reply_fields_of_the_wrong_type_are_the_models_malformed_answer(
    message: dict[str, Any], why: str
) -> None:
    from strategic_arena.backends import read_reply

    result = read_reply(completion(message))
    assert result["malformed"] is not None and why in result["malformed"]


def test_reply_fields_are_coerced_into_range_and_valid_text() -> None:
    from strategic_arena.backends import read_reply

    payload = {
        "choices": [
            {"message": {"content": "a\ud800b", "reasoning": "r\udfff"}, "finish_reason": 3}
        ],
        "usage": {"prompt_tokens": 10**30, "completion_tokens": True},
    }
    result = read_reply(payload, lambda text: text.replace("b", "*"))
    assert result == {
        "content": "a\ufffd*",
        "reasoning": "r\ufffd",
        "finish_reason": None,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "malformed": None,
    }
    assert (
        read_reply(completion({"content": "ok"}, finish_reason="x" * 1000))["finish_reason"]
        == "x" * 64
    )


@pytest.mark.parametrize("payload", [[], {"choices": "no"}, {"choices": [{"message": "hi"}]}])
def test_a_body_that_is_not_a_completion_is_the_servers_fault(payload: Any) -> None:
    from strategic_arena.backends import _Retry, read_reply

    with pytest.raises(_Retry, match="malformed response"):
        read_reply(payload)


def test_secrets_in_the_base_url_are_masked_and_refused_unmasked() -> None:
    from strategic_arena.arena.store import check_no_secrets
    from strategic_arena.door import shown

    url = "https://user:pw-123456789@api.example.com/v1?api-key=abcdef123456&api-version=2#x"
    assert shown(url) == "https://api.example.com/v1?api-key=***&api-version=***"
    with pytest.raises(ValueError, match="looks like a secret"):
        check_no_secrets({"base_url": url}, "player")
    with pytest.raises(ValueError, match="looks like a secret"):
        check_no_secrets({"base_url": "http://h/v1?token=abc"}, "player")
    check_no_secrets({"base_url": shown(url)}, "player")  # masked: stored as it is
    backend = OpenAIBackend("m", url, api_key=SECRET)
    assert "abcdef123456" not in repr(backend) and "pw-123456789" not in repr(backend)
    assert backend._scrub(f"echo {SECRET} abcdef123456 pw-123456789") == "echo *** *** ***"


def test_a_body_nested_past_the_stack_is_a_malformed_response() -> None:
    from strategic_arena.serve import PlayerService
    from tests.hostile import HostileServer, Reply

    service = PlayerService("random", lambda env_id: RandomPlayer(0))
    nested = Reply(raw=b'{"choices": ' + b"[" * 100_000)  # fewer values than the cap allows
    with HostileServer(service, lambda request: nested) as server:
        env = sa.make("kuhn_poker-v0")
        env.reset(seed=0)
        information = sa.SeatInformation.of(env.spec, env.spiel_state, 0)
        header = {GAME_HEADER: game_header(information, "marshal")}
        result = asyncio.run(
            backend(server.base_url, max_attempts=1).complete(
                [{"role": "user", "content": "x"}], headers=header
            )
        )
    assert result.error == "endpoint" and result.failures[0].startswith("malformed response")
