"""SPIRAL's multi-game config trains on all three of SPIRAL's games (TextArena's, free text)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("textarena", reason="the [textarena] extra is not installed")
pytest.importorskip("torch", reason="the [train] extra is not installed")

from strategic_arena.train.config import load_config
from strategic_arena.train.loop.metrics import read_metrics
from strategic_arena.train.loop.trainer import Trainer

Overrides = Callable[..., list[str]]
CONFIGS = Path(__file__).parents[2] / "configs"
SPIRAL_GAMES = ["spiral_tic_tac_toe-v0", "spiral_kuhn_poker-v0", "spiral_negotiation-v0"]


def test_spiral_multi_game_config_names_all_three_games() -> None:
    cfg = load_config(CONFIGS / "spiral_multi_game.yaml")
    assert cfg.games.ids == SPIRAL_GAMES


@pytest.mark.slow
def test_spiral_multi_game_plays_all_three_games_on_the_tiny_model(
    tiny_overrides: Overrides,
) -> None:
    cfg = load_config(
        CONFIGS / "spiral_multi_game.yaml",
        tiny_overrides(
            f"games.ids=[{', '.join(SPIRAL_GAMES)}]",
            "answer.style=spiral",
            "rollout.engine=transformers",
            "model.gradient_checkpointing=false",
            "rollout.max_sequence_tokens=4096",
            "games.episodes_per_game=2",
            "run.steps=1",
            "eval.every=1",
            "eval.games=2",
            "eval.opponents={spiral_negotiation-v0: [random]}",
            "eval.past_checkpoints=[]",  # one step: no checkpoint 16 steps back
        ),
    )
    assert Trainer(cfg).train() == 1
    out = Path(cfg.run.output_dir)
    (record,) = read_metrics(out / "metrics.jsonl")
    for env_id in SPIRAL_GAMES:
        assert f"train/{env_id}/win_rate/seat0" in record, env_id
    with sqlite3.connect(out / "eval.db") as db:
        texts = [row[0] for row in db.execute("SELECT action_text FROM moves")]
    assert texts  # the evaluation stored every move text the model and random played


def test_mindgames_config_names_the_three_games_and_in2ais_trainer() -> None:
    cfg = load_config(CONFIGS / "mindgames_multi_game.yaml")
    assert cfg.games.ids == [
        "mindgames_codenames-v0",
        "mindgames_colonel_blotto-v0",
        "mindgames_three_player_ipd-v0",
    ]
    # In2AI's trainer, from configs/mindgames.yaml; 12,288-token completions as in the paper.
    assert cfg.advantage.type == "in2ai" and cfg.sampling.max_tokens == 12288
    assert (cfg.ppo.epochs, cfg.ppo.kl_coef, cfg.ppo.min_lr_ratio) == (1, 0.0, 0.1)


@pytest.mark.slow
def test_mindgames_config_self_plays_the_three_player_game(tiny_overrides: Overrides) -> None:
    cfg = load_config(
        CONFIGS / "mindgames_multi_game.yaml",
        tiny_overrides(
            "games.ids=[mindgames_three_player_ipd-v0]",
            "games.self_play_weight=1.0",
            "games.opponents=[]",
            "rollout.engine=transformers",
            "model.gradient_checkpointing=false",
            "answer.chat_template_kwargs={}",
            "rollout.max_sequence_tokens=4096",
            "games.episodes_per_game=1",
            "run.steps=1",
            "eval.opponents={}",
        ),
    )
    assert Trainer(cfg).train() == 1
    (record,) = read_metrics(Path(cfg.run.output_dir) / "metrics.jsonl")
    for seat in range(3):  # self-play: the policy took every seat
        assert f"train/mindgames_three_player_ipd-v0/win_rate/seat{seat}" in record
