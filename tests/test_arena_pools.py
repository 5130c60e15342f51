"""``eval --opponents "pool:..."`` and ``model:... persona:FILE``: In2AI's opponents in the arena.

The evaluated model and the pool's model member are real HTTP endpoints on 127.0.0.1; the
member's server records every request, so the persona is seen arriving; the store shows which
member played each game.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from strategic_arena.arena.model_opponents import ModelOpponent
from strategic_arena.arena.pools import WeightedPool
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.serve import PlayerServer
from tests.servers import FaultServer

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

KUHN = "kuhn_poker-v0"
PERSONA = "You are an aggressive player: bet whenever you can."


@pytest.fixture
def rival() -> Iterator[FaultServer]:
    server = FaultServer()  # serves ``random`` as model "random" and records every body
    yield server
    server.close()


def test_a_pool_draws_a_member_per_game_by_weight_and_a_persona_reaches_its_endpoint(
    tmp_path: Path, rival: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    persona = tmp_path / "aggressive.txt"
    persona.write_text(PERSONA + "\n", encoding="utf-8")
    pool = f"pool:1*random|3*model:random@{rival.base_url} persona:{persona}"
    db = tmp_path / "arena.sqlite"
    with PlayerServer("nash", model="nash-model") as ours:
        args = ["eval", "--base-url", ours.base_url, "--model", "nash-model", "--envs", KUHN]
        args += ["--opponents", pool, "--num-games", "40", "--seed", "3", "--db", str(db)]
        assert main([*args, "--quiet", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert pool in json.dumps(report)
    # The persona member's every request: the persona first, then the game's own prompt.
    assert rival.seen_bodies
    for body in rival.seen_bodies:
        system = body["messages"][0]
        assert system["role"] == "system" and system["content"].startswith(PERSONA + "\n\n")
        assert "Kuhn" in system["content"]
    with ResultsStore(db) as store:
        games = store.games()
        assert len(games) == 40 and all(game.players.count(pool) == 1 for game in games)
        by_model = 0
        for game in games:
            seat = game.players.index(pool)
            prompts = [m.prompt for m in store.moves(game.id) if m.seat == seat]
            by_model += all(prompts)  # the model member stores its prompts; random none
    # Weights 1 : 3, one draw per game from its seed (fixed by --seed): about 30 of 40.
    assert 24 <= by_model <= 36 and by_model < 40


def test_pool_and_persona_specs() -> None:
    pool = WeightedPool.parse("pool:1*random| 0.25*nash ")
    assert pool is not None and pool.members == ((1.0, "random"), (0.25, "nash"))
    assert WeightedPool.parse("nash") is None
    for bad in ("pool:random", "pool:0*random", "pool:x*random", "pool:1*"):
        with pytest.raises(ValueError, match="WEIGHT\\*SPEC"):
            WeightedPool.parse(bad)
    with pytest.raises(ValueError, match="no persona file"):
        ModelOpponent.parse("model:m@http://localhost:8001/v1 persona:/nonexistent/p.txt")


def test_a_persona_names_its_opponent_apart(tmp_path: Path) -> None:
    persona = tmp_path / "calm.txt"
    persona.write_text("Stay calm.", encoding="utf-8")
    opponent = ModelOpponent.parse(f"model:m@http://localhost:8001/v1 persona:{persona}")
    assert opponent is not None
    assert (opponent.model, opponent.name, opponent.persona) == (
        "m",
        "m+persona-calm",
        str(persona),
    )
    assert ModelOpponent.parse(opponent.spec) == opponent
    named = ModelOpponent.parse(f"model:m@http://localhost:8001/v1 persona:{persona} as calm-m")
    assert named is not None and named.name == "calm-m"
