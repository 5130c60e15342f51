"""The OpenEnv adapter over real HTTP and WebSockets on loopback, with OpenEnv's own clients."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openenv.core", reason="the [openenv] extra is not installed")

from openenv.core import GenericEnvClient

from strategic_arena.asking import Asking
from strategic_arena.backends import OpenAIBackend
from strategic_arena.integrations.openenv import (
    GameServer,
    TextGameAction,
    TextGameClient,
    main,
)
from strategic_arena.players import GAME_HEADER
from strategic_arena.serve import PlayerServer


@pytest.fixture(scope="module")
def kuhn() -> Iterator[GameServer]:
    with GameServer(env_id="kuhn_poker-v0", opponent="nash") as server:
        yield server


def play_episode(
    env_url: str, model_url: str, seed: int, env_id: str | None = None
) -> tuple[list[Any], Any]:
    """One game: the served solver answers each observation's messages (and tools)."""
    backend = OpenAIBackend("solver", model_url, max_attempts=1)
    observations = []
    with TextGameClient(base_url=env_url).sync() as client:
        result = client.reset(seed=seed, **({"env_id": env_id} if env_id else {}))
        observations.append(result.observation)
        while not result.done:
            state = client.state()
            style = "tools" if result.observation.tools else "marshal"
            reply = asyncio.run(
                backend.complete(
                    result.observation.messages,
                    headers={GAME_HEADER: json.dumps({**state.information, "style": style})},
                    tools=result.observation.tools or None,
                )
            )
            assert reply.error is None, reply.failures
            result = client.step(TextGameAction(message=reply.content))
            observations.append(result.observation)
    return observations, result


def test_a_served_solver_plays_whole_games_and_seeds_fix_the_episode(kuhn: GameServer) -> None:
    runs = []
    for seed in (4, 4, 9):  # a fresh model server each time: its generator restarts
        with PlayerServer("nash", model="solver") as model:
            runs.append(play_episode(kuhn.base_url, model.base_url, seed))
    (first, end), (again, end_again), (other, _) = runs
    assert end.done and end.observation.outcome.startswith("The game is over: it ended by")
    parts = end.metadata["reward_parts"]
    moves = len(first) - 1
    assert parts["invalid"] == 0.0 and parts["format"] == pytest.approx(0.05 * moves)
    assert end.reward == pytest.approx(parts["game"] + parts["format"])
    assert parts["game"] == end.observation.returns[end.observation.seat]
    # the same seed, the same answers: the same episode; another seed deals another game
    assert [o.model_dump() for o in first] == [o.model_dump() for o in again]
    assert end.reward == end_again.reward
    assert [o.model_dump() for o in other] != [o.model_dump() for o in first]


def test_tool_calls_through_openenv() -> None:
    with (
        GameServer(env_id="tic_tac_toe-v0", asking=Asking(style="tools")) as env,
        PlayerServer("minimax", model="solver") as model,
    ):
        observations, end = play_episode(env.base_url, model.base_url, seed=2)
    tool = observations[0].tools[0]["function"]
    assert tool["name"] == "play"
    assert tool["parameters"]["properties"]["move"]["enum"] == observations[0].legal_actions
    assert end.done and end.metadata["reward_parts"]["invalid"] == 0.0
    assert end.observation.returns[end.observation.seat] >= 0  # perfect play never loses


def test_any_openenv_client_gets_the_same_seeded_game_and_invalid_answers_forfeit(
    kuhn: GameServer,
) -> None:
    # OpenEnv's generic client (raw dicts, no package of ours) over the WebSocket, two sessions
    with (
        GenericEnvClient(base_url=kuhn.base_url).sync() as client,
        GenericEnvClient(base_url=kuhn.base_url).sync() as other,
    ):
        first = client.reset(seed=21, seat=0)
        assert other.reset(seed=21, seat=0).observation == first.observation
        assert client.reset(seed=21, seat=0).observation == first.observation
        assert client.state()["seed"] == 21  # the client's own seed
        other.reset()  # a seed the environment draws decides the deal: it is not shown
        assert other.state()["seed"] is None and other.state()["information"]
        end = client.step({"message": "<think>hmm</think><answer>castle</answer>"})
        assert not other.state()["done"]  # the other session's game is its own
    assert end.done and end.reward == -11.0
    assert end.observation["error"].startswith("unknown_action")
    assert end.metadata["reward_parts"] == {"game": -1.0, "format": 0.0, "invalid": -10.0}
    # and the stateless HTTP endpoint deals the same game for the same seed
    request = urllib.request.Request(
        f"{kuhn.base_url}/reset",
        data=json.dumps({"seed": 21, "seat": 0}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as response:
        assert json.loads(response.read())["observation"] == first.observation


def test_bad_options_are_refused_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--env", "chess-v0"])
    assert exit_info.value.code == 2 and "unknown env id" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--env", "kuhn_poker-v0", "--opponent", "mcts"])  # mcts plays no poker
