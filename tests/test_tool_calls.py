"""The tools answer style end to end: eval, the player's requests and retries, over real HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

import strategic_arena as sa
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import Asking
from strategic_arena.backends import OpenAIBackend
from strategic_arena.cli import main
from strategic_arena.players import LLMPlayer
from strategic_arena.serve import PlayerServer
from strategic_arena.tools import read_tool_calls
from strategic_arena.turn import GameState
from tests.servers import FaultServer


def test_eval_with_tool_calls_against_a_served_solver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "tools.sqlite"
    solvers = {"tic_tac_toe-v0": "minimax", "kuhn_poker-v0": "nash"}
    with PlayerServer(solvers, model="served-solvers") as server:
        args = [
            "eval",
            "--db",
            str(db),
            "--quiet",
            "--base-url",
            server.base_url,
            "--style",
            "tools",
            "--envs",
            "tic_tac_toe-v0",
            "kuhn_poker-v0",
            "--opponents",
            "random",
            "--num-games",
            "2",
            "--json",
        ]
        assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert {row["invalid_rate"] for row in report["summaries"]} == {0.0}
    with ResultsStore(db) as store:
        games = store.games()
        assert len(games) == 2 * 2  # 2 games (one per seating) per game
        moves = [
            move
            for game in games
            for move in store.moves(game.id)
            if game.players[move.seat] == "served-solvers"
        ]
    assert moves
    for move in moves:  # every answer was a call of play, read back to the stored action
        answer = read_tool_calls(move.response)
        assert not isinstance(answer, sa.ActionError), move
        assert answer.moves == (move.action_text,) and move.finish_reason == "tool_calls"


def test_the_player_offers_play_with_the_legal_moves_and_retries_a_wrong_tool() -> None:
    server = FaultServer(faults=["wrong_tool", "ok"])
    try:
        backend = OpenAIBackend("random", server.base_url, max_attempts=1)
        asking = Asking(style="tools", policy="retry:1", thinking_in_history="answer")
        player = LLMPlayer(backend, asking)
        env = sa.make("tic_tac_toe-v0")
        env.reset(seed=0)
        env.step(4)
        state = GameState("tic_tac_toe-v0", env.spiel_state.clone())
        decision = asyncio.run(player.act(state, 1))
    finally:
        server.close()
    assert decision.action in state.legal_actions(1)
    assert [e.kind for e in decision.errors] == ["format"]
    assert "resign" in decision.errors[0].detail
    first, second = server.seen_bodies
    menu = env.legal_action_texts(env.agent_selection)
    for body in (first, second):
        (tool,) = body["tools"]
        assert tool["function"]["name"] == "play"
        assert tool["function"]["parameters"]["properties"]["move"]["enum"] == list(menu.values())
        assert body["tool_choice"] == {"type": "function", "function": {"name": "play"}}
    # the re-ask shows the wrong call without its reasoning ("answer" only), then the feedback
    assistant, feedback = second["messages"][-2:]
    assert assistant["role"] == "assistant" and assistant["content"].startswith("<tool_call>")
    assert '"resign"' in assistant["content"] and "plays" not in assistant["content"]
    assert feedback["role"] == "user" and "not accepted (format)" in feedback["content"]
