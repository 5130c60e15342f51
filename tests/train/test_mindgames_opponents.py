"""In2AI's opponents in the trainer: persona-prompted endpoints and a weighted pool.

A persona's system prompt reaches its endpoint over real HTTP (a recording server that plays
``random``); the pool of ``configs/mindgames_multi_game.yaml`` draws its opponents per game by
weight, from the run's seed, with phase 2 joining at step 150.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("textarena", reason="the [textarena] extra is not installed")
pytest.importorskip("httpx", reason="the [arena] extra is not installed")

from strategic_arena.actions import TEXT_MOVE, ActionError
from strategic_arena.arena.match import play_match_sync
from strategic_arena.backends import TokenTrace
from strategic_arena.games import get_spec
from strategic_arena.players import RandomPlayer
from strategic_arena.rl.definitions import score
from strategic_arena.train.config import OpponentConfig, load_config
from strategic_arena.train.loop.opponent_players import OpponentPlayers
from strategic_arena.train.loop.rollout import (
    GamePlan,
    OpponentPool,
    PoolEntry,
    episode_from_record,
    plan_games,
)
from strategic_arena.turn import Decision
from tests.servers import FaultServer

CONFIG = Path(__file__).parents[2] / "configs" / "mindgames_multi_game.yaml"
BLOTTO = "mindgames_colonel_blotto-v0"
PERSONA = "You are an aggressive player: press every advantage, take risks to win."


@pytest.fixture
def server() -> Iterator[FaultServer]:
    endpoint = FaultServer()
    yield endpoint
    endpoint.close()


def blotto_against(server: FaultServer, entry: OpponentConfig) -> list[dict[str, Any]]:
    """The request bodies an endpoint opponent of ``entry`` sent in one Blotto game."""
    players = OpponentPlayers(load_config(CONFIG), tokenizer=None, device=None)
    pool = PoolEntry(entry.name or entry.spec, 1.0, None, 0, config=entry)
    first = len(server.seen_bodies)
    record = play_match_sync(BLOTTO, [RandomPlayer(0), players(pool, BLOTTO, 1, 7)], seed=7)
    assert record.status == "complete"
    return server.seen_bodies[first:]


def test_a_personas_system_prompt_reaches_its_endpoint(server: FaultServer) -> None:
    plain = blotto_against(server, OpponentConfig(spec="gpt-oss-120b", base_url=server.base_url))
    persona = blotto_against(
        server,
        OpponentConfig(
            spec="gpt-oss-120b",
            name="aggressive",
            base_url=server.base_url,
            system_prompt=PERSONA,
        ),
    )
    assert plain and persona
    game_prompt = plain[0]["messages"][0]
    assert game_prompt["role"] == "system" and PERSONA not in str(plain)
    # Every request of the persona's seat: the persona, a blank line, then the game's prompt.
    for body in persona:
        assert body["messages"][0]["role"] == "system"
        assert body["messages"][0]["content"].startswith(PERSONA + "\n\n")
    assert persona[0]["messages"][0]["content"] == f"{PERSONA}\n\n{game_prompt['content']}"


def test_the_recipe_pool_draws_by_weight_from_the_seed() -> None:
    cfg = load_config(CONFIG)
    pool = OpponentPool.from_config(cfg.games)
    names = [entry.name for entry in pool.available(BLOTTO, 0)]
    assert names == [
        f"gpt-oss-120b/{p}" for p in ("aggressive", "cooperative", "unpredictable", "analytical")
    ]
    later = {entry.name: entry.weight for entry in pool.available(BLOTTO, 150)}
    assert later["openai/gpt-5@https://openrouter.ai/api/v1"] == 0.25
    assert len(later) == 10  # phase 1 stays in the pool
    rng = np.random.default_rng(0)
    draws = Counter(pool.sample(BLOTTO, 150, rng).name for _ in range(19_000))  # type: ignore[union-attr]
    # Total weight 4 + 4 * 1.0 + 2 * 0.25 = 8.5: a weight-1 entry 1/8.5, a 0.25 entry 1/34.
    assert draws["gpt-oss-120b/aggressive"] == pytest.approx(19_000 / 8.5, rel=0.05)
    assert draws["openai/gpt-5@https://openrouter.ai/api/v1"] == pytest.approx(19_000 / 34, rel=0.1)
    # No self-play in In2AI's recipe; the same seed plans the same games.
    plans = plan_games(cfg.games, 42, pool, 150)
    assert all(plan.opponent is not None for plan in plans)
    again = plan_games(cfg.games, 42, pool, 150)
    assert [p.opponent.name for p in plans] == [p.opponent.name for p in again]  # type: ignore[union-attr]


class ScriptedPolicy:
    """Plays the given moves with a token trace, as the trainer's policy does; then forfeits."""

    name = "policy"

    def __init__(self, moves: list[str]) -> None:
        self.moves = list(moves)

    async def act(self, state: Any, seat: int) -> Decision:
        trace = TokenTrace((1,), (2,), (-0.5,), 0)
        if not self.moves:
            error = ActionError("no_action", "no move in the answer")
            return Decision(None, "I give up.", error=error, trace=trace)
        move = self.moves.pop(0)
        return Decision(TEXT_MOVE, move, trace=trace, move_text=move)


def round_result(mine: str, theirs: str) -> float:
    """Colonel Blotto by hand: +1 if ``mine`` wins more of the three fields, -1 fewer, 0 tied."""
    a = [int(part[1:]) for part in mine.strip("[]").split()]
    b = [int(part[1:]) for part in theirs.strip("[]").split()]
    won = sum(x > y for x, y in zip(a, b, strict=True))
    lost = sum(x < y for x, y in zip(a, b, strict=True))
    return float((won > lost) - (won < lost))


def test_a_rollout_episode_replays_into_in2ais_step_rewards() -> None:
    # Seat 0 (the policy) plays two Blotto rounds, then forfeits; seat 1 plays `random`.
    cfg = load_config(CONFIG)
    record = play_match_sync(
        BLOTTO, [ScriptedPolicy(["[A7 B7 C6]", "[A7 B7 C6]"]), RandomPlayer(3)], seed=5
    )
    assert record.status == "forfeit" and record.forfeited_by == 0
    plan = GamePlan(0, BLOTTO, 5, None, (0,))
    episode = episode_from_record(record, plan, get_spec(BLOTTO))
    sent = [(m.seat, m.action_text) for m in record.moves if m.action == TEXT_MOVE]
    assert episode.moves == tuple(sent) and len(sent) == 4
    assert [turn.move_index for turn in episode.turns] == [0, 2, None]
    score([episode], cfg.rewards)  # the recipe's in2ai_steps
    # The rounds' results, worked out by hand from the moves:
    theirs = [text for seat, text in episode.moves if seat == 1]
    results = [round_result("[A7 B7 C6]", other) for other in theirs]
    # The forfeit lost the match: a won round keeps a quarter; the forfeit gets the parse floor,
    # -2.0, below every legal step's reward (a lost round's -1 included).
    shaped = [r * 0.25 if r > 0 else r for r in results]
    assert [t.reward for t in episode.turns] == [*shaped, -2.0]
    assert sorted(results) == [-1.0, 1.0]  # this seed gives one round each way
    assert [t.eligible for t in episode.turns] == [True, True, True]
