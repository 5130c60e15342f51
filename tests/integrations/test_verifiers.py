"""The verifiers adapter through verifiers' own entry points: vf-eval and Environment.evaluate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("verifiers", reason="the [verifiers] extra is not installed")

import verifiers as vf

from strategic_arena.integrations.verifiers import GAME_STATE_KEY, load_environment
from strategic_arena.players import GAME_HEADER
from strategic_arena.serve import PlayerServer
from tests.servers import FaultServer

ROOT = Path(__file__).resolve().parents[2]
SOLVERS = {"kuhn_poker-v0": "nash", "tic_tac_toe-v0": "minimax"}


def evaluate(base_url: str, model: str, **env_args: Any) -> list[dict[str, Any]]:
    """Rollouts of every dataset row, one at a time, through ``Environment.evaluate``."""
    env = load_environment(**env_args)
    client = vf.ClientConfig(
        api_base_url=base_url,
        api_key_var="STRATEGIC_ARENA_TEST_NO_KEY",
        max_retries=0,
        extra_headers_from_state={GAME_HEADER: GAME_STATE_KEY},
    )
    outputs = env.evaluate_sync(client, model, max_concurrent=1)
    return [dict(row) for row in outputs["outputs"]]


def test_vf_eval_plays_whole_games_with_tool_calls_against_a_served_solver(
    tmp_path: Path,
) -> None:
    with PlayerServer(SOLVERS, model="solvers") as server:
        args = {"games": list(SOLVERS), "num_games": 2, "style": "tools", "opponent": "random"}
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("vf-eval")),  # the extra's console script
                "strategic_arena.integrations.verifiers",
                *("-a", json.dumps(args), "-m", "solvers", "-b", server.base_url),
                *("-k", "STRATEGIC_ARENA_TEST_NO_KEY", "-n", "4", "-r", "1", "-d", "-s"),
                *("-o", str(tmp_path), "--header-from-state", f"{GAME_HEADER}: {GAME_STATE_KEY}"),
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    (results,) = tmp_path.glob("evals/*/*/results.jsonl")
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(row["info"]["env_id"] for row in rows) == sorted([*SOLVERS, *SOLVERS])
    assert {row["info"]["seat"] for row in rows} == {0, 1}
    for row in rows:
        assert row["error"] is None and row["stop_condition"] == "game_over"
        moves = [m for m in row["completion"] if m["role"] == "assistant"]
        assert moves and all(m["tool_calls"] for m in moves), row["completion"]
        replies = [m for m in row["completion"] if m["role"] == "tool"]
        assert len(replies) == len(moves) and "The game is over" in replies[-1]["content"]
        # every answer was a legal move: the format reward per move, no penalty, and the game
        assert row["invalid"] == 0.0 and row["format"] == pytest.approx(0.05 * len(moves))
        assert row["game"] in (-1.0, 0.0, 1.0, -2.0, 2.0)
        assert row["reward"] == pytest.approx(row["game"] + row["format"])


def test_same_seeds_same_episodes_and_the_solver_wins_tic_tac_toe() -> None:
    runs = []
    for _ in range(2):  # a fresh server each time: the served player's generator restarts
        with PlayerServer("minimax", model="minimax") as server:
            runs.append(
                evaluate(
                    server.base_url,
                    "minimax",
                    games="tic_tac_toe-v0",
                    opponent="random",
                    num_games=4,
                    seed=11,
                )
            )
    first, second = runs
    assert [row["completion"] for row in first] == [row["completion"] for row in second]
    assert [row["info"] for row in first] == [row["info"] for row in second]
    # perfect play never loses to random
    assert all(row["game"] >= 0 for row in first) and any(row["game"] > 0 for row in first)
    other = load_environment("tic_tac_toe-v0", num_games=4, seed=12)
    assert [r["info"]["seed"] for r in other.eval_dataset] != [r["info"]["seed"] for r in first]


def test_an_invalid_answer_forfeits_with_the_documented_reward() -> None:
    server = FaultServer(faults=["truncated"])  # the first answer is cut off at the length limit
    try:
        (row, *_) = evaluate(server.base_url, "random", games="kuhn_poker-v0", num_games=1)
    finally:
        server.close()
    # forfeit: the game's loss (-1) plus invalid_penalty (-10), and the game ends there
    assert (row["game"], row["format"], row["invalid"], row["reward"]) == (-1.0, 0.0, -10.0, -11.0)
    assert row["stop_condition"] == "game_over"
    assert "you forfeited (truncated" in row["completion"][-1]["content"]


def test_thinking_in_history_trims_earlier_answers() -> None:
    with PlayerServer("random", model="random") as server:
        rows = evaluate(
            server.base_url,
            "random",
            games="tic_tac_toe-v0",
            num_games=1,
            thinking_in_history="answer",
        )
    completion = rows[0]["completion"]
    answers = [m["content"] for m in completion if m["role"] == "assistant"]
    assert len(answers) >= 3
    # the earlier answers were sent back without their reasoning; the last one is as given
    assert all(a.startswith("<answer>") for a in answers[:-1]), answers
    assert answers[-1].startswith("<think>")
