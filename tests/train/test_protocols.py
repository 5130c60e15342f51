"""The papers' protocols as configs and options: ablations, evaluation sampling, over-long turns."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.algo.estimators import assign, build
from strategic_arena.train.algo.estimators.grpo import GRPOConfig
from strategic_arena.train.algo.estimators.marshal import MarshalConfig
from strategic_arena.train.algo.estimators.rae import RAEConfig
from strategic_arena.train.config import load_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


# --- ablation configs ---------------------------------------------------------------------------


def test_marshal_fixed_opponent_ablations() -> None:
    ttt = load_config(CONFIGS / "marshal_tictactoe_fixed_opponent.yaml")
    assert ttt.games.self_play_weight == 0.0 and ttt.games.ids == ["tic_tac_toe-v0"]
    assert [o.spec for o in ttt.games.opponents] == ["mcts:simulations=100,rollouts=10"]
    assert ttt.games.episodes_per_game == 128  # one learner seat per game: 128 trajectories
    kuhn = load_config(CONFIGS / "marshal_kuhn_poker_fixed_opponent.yaml")
    assert kuhn.games.self_play_weight == 0.0 and [o.spec for o in kuhn.games.opponents] == ["nash"]
    # Everything else is the specialist's run.
    base = load_config(CONFIGS / "marshal_kuhn_poker.yaml")
    assert (kuhn.ppo.lr, kuhn.ppo.kl_coef, kuhn.advantage, kuhn.run.name) == (
        base.ppo.lr,
        base.ppo.kl_coef,
        base.advantage,
        "marshal-kuhn-poker-fixed-opponent",
    )


def test_marshal_advantage_ablations() -> None:
    base = load_config(CONFIGS / "marshal_tictactoe.yaml")
    assert base.advantage == MarshalConfig(role_grouping=True)
    no_turn = load_config(CONFIGS / "marshal_tictactoe_no_turn_level.yaml")
    assert no_turn.advantage == GRPOConfig(role_grouping=True)
    no_agent = load_config(CONFIGS / "marshal_tictactoe_no_agent_specific.yaml")
    assert no_agent.advantage == MarshalConfig(role_grouping=False)
    assert no_agent.games.ids == base.games.ids and no_agent.run.output_dir != base.run.output_dir


def test_spiral_without_rae_is_plain_reinforce() -> None:
    cfg = load_config(CONFIGS / "spiral_multi_game_no_rae.yaml")
    assert cfg.advantage == RAEConfig(alpha=1.0)
    # alpha = 1 keeps every baseline at 0: each trajectory's advantage is its return, step
    # after step (R = 3, then 1, then -2 for the same key).
    batches = [[3.0], [1.0], [-2.0]]
    estimator = build(cfg.advantage)
    for rewards in batches:
        turn = Turn("kuhn_poker-v0", 0, "player 0", [1], [2], [-0.1], "x", None)
        turn.reward = rewards[0]
        episode = Episode("kuhn_poker-v0", 0, (0,), "self", (0.0, 0.0), "complete", None, [turn])
        estimator.assign([episode])
        assert turn.advantage == rewards[0]
    assign([], cfg.advantage)


def test_extends_merges_and_refuses_cycles(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("steps: 7\nlr: 2.0e-6\nadvantage: {type: rloo}\n")
    (tmp_path / "child.yaml").write_text("extends: base.yaml\nsteps: 9\n")
    child = load_config(tmp_path / "child.yaml")
    assert (child.run.steps, child.ppo.lr, child.advantage.name) == (9, 2e-6, "rloo")
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ValueError, match="extends itself"):
        load_config(tmp_path / "a.yaml")
    (tmp_path / "c.yaml").write_text("extends: missing.yaml\n")
    with pytest.raises(ValueError, match=r"extends 'missing\.yaml', which is not a file"):
        load_config(tmp_path / "c.yaml")


# --- evaluation sampling ------------------------------------------------------------------------


def test_eval_top_p_beside_the_eval_temperature() -> None:
    pytest.importorskip("torch")
    from strategic_arena.train.loop.evaluation import eval_sampling

    spiral = eval_sampling(load_config(CONFIGS / "spiral_multi_game.yaml"))
    assert (spiral.temperature, spiral.top_p) == (0.6, 0.95)  # SPIRAL's evaluation
    plain = eval_sampling(load_config(None, ["sampling.top_p=0.9", "sampling.temperature=0.7"]))
    assert (plain.temperature, plain.top_p) == (0.7, 0.9)  # unset: the training sampling
    with pytest.raises(ValueError, match=r"eval\.top_p must lie in"):
        load_config(None, ["eval.top_p=0"])


# --- MARSHAL's over-long rule -------------------------------------------------------------------


class _FiveTokens:
    """An engine that answers five tokens of the tiny vocabulary, stopping normally."""

    weight_version = 0

    def __init__(self, tokens: list[int]) -> None:
        self.tokens = tokens

    def generate(self, requests: Any, sampling: Any) -> list[Any]:
        from strategic_arena.train.engines.engine import Generation

        return [Generation(list(self.tokens), [-0.1] * len(self.tokens), "stop") for _ in requests]


@pytest.mark.parametrize(("overlong", "expected"), [(0, "stop"), (100, "length")])
def test_a_turn_leaving_too_few_tokens_counts_as_cut_off(overlong: int, expected: str) -> None:
    pytest.importorskip("transformers")
    from strategic_arena.train.engines.engine import BatchSampling, EngineClient
    from strategic_arena.train.loop.rollout import EngineBackend, PromptEncoder
    from strategic_arena.train.policy.tiny import build_tiny
    from strategic_arena.validation import validate

    _, tokenizer = build_tiny(["kuhn_poker-v0"], vocab="answers", hidden_size=8, layers=1, seed=0)
    encoder = PromptEncoder(tokenizer)
    messages = [{"role": "user", "content": "bet"}]
    prompt = len(encoder.encode(messages))
    answer = tokenizer("\\boxed{bet}", add_special_tokens=False)["input_ids"]
    client = EngineClient(_FiveTokens(answer), BatchSampling())  # type: ignore[arg-type]
    # 50 tokens of sequence left after the prompt, minus the answer: far below 100.
    backend = EngineBackend(
        client,
        encoder,
        max_new_tokens=40,
        max_sequence_tokens=prompt + 50,
        seed=0,
        overlong_tokens_left=overlong,
    )
    result = asyncio.run(backend.complete(messages))
    assert result.finish_reason == expected
    verdict = validate(
        "kuhn_poker-v0",
        result.content,
        {0: "check", 1: "bet"},
        style="boxed",
        finish_reason=result.finish_reason,
    )
    assert (getattr(verdict, "kind", None) == "truncated") == (overlong > 0)
