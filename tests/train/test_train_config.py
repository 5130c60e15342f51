"""The training config: YAML, --set overrides with type coercion, errors, shipped configs, help."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from strategic_arena.cli import main
from strategic_arena.train.config import (
    OpponentConfig,
    TrainConfig,
    describe_fields,
    field_docs,
    load_config,
)
from strategic_arena.train.estimators.rae import RAEConfig

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_yaml_then_overrides_in_order(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(
        "games: [tic_tac_toe-v0]\nlr: 1e-5\nsteps: 7\n"
        "opponents:\n  - {spec: 'mcts:simulations=10', weight: 2, from_step: 3}\n  - random\n"
    )
    cfg = load_config(path, ["steps=9", "lr=2e-6", "steps=11"])
    assert cfg.games == ["tic_tac_toe-v0"]
    assert cfg.steps == 11 and cfg.lr == 2e-6  # overrides apply after the file, in order
    assert cfg.opponents == [
        OpponentConfig(spec="mcts:simulations=10", weight=2.0, from_step=3),
        OpponentConfig(spec="random"),
    ]


def test_set_coerces_to_the_field_type() -> None:
    cfg = load_config(
        None,
        [
            "lr=1e-6",  # YAML 1.1 reads 1e-6 as text; the float field converts it
            "ppo_epochs=2",
            "strict=false",
            "draw_reward=0.1",
            "clip_eps_high=null",
            "games=[kuhn_poker-v0, leduc_holdem-v0]",
            "game_scale={kuhn_poker-v0: 2}",
            "eval_opponents={kuhn_poker-v0: [nash, random]}",
            "lora_target_modules=[q_proj, v_proj]",
            "response_prefix=<think>",
            "run_name=123",
        ],
    )
    assert isinstance(cfg.lr, float) and cfg.lr == 1e-6
    assert cfg.ppo_epochs == 2 and cfg.strict is False and cfg.draw_reward == 0.1
    assert cfg.clip_eps_high is None
    assert cfg.games == ["kuhn_poker-v0", "leduc_holdem-v0"]
    assert cfg.game_scale == {"kuhn_poker-v0": 2.0}
    assert cfg.eval_opponents == {"kuhn_poker-v0": ["nash", "random"]}
    assert cfg.lora_target_modules == ["q_proj", "v_proj"]
    assert cfg.response_prefix == "<think>" and cfg.run_name == "123"
    assert load_config(None, ["lora_target_modules=all-linear"]).lora_target_modules == "all-linear"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("learning_rate=1e-6", "unknown TrainConfig field 'learning_rate'"),
        ("ppo_epoch=2", "did you mean 'ppo_epochs'"),
        ("ppo_epochs=two", "ppo_epochs must be an integer"),
        ("strict=maybe", "strict must be true or false"),
        (
            "advantage.type=ppo",
            "unknown advantage estimator 'ppo'; use one of grpo, marshal, mt_grpo",
        ),
        ("advantage.alpha=0.5", "unknown MarshalConfig field 'alpha'"),
        ("advantage.lam=1.5", "advantage.lam must lie in"),
        ("advantage.level=step", "unknown MarshalConfig field 'level'"),
        ("steps=null", "steps may not be null"),
        ("games=kuhn_poker-v0", "games must be a list"),
        ("games=[no_such_game-v0]", "unknown game"),
        ("top_p=1.5", "top_p must lie in"),
        ("noequals", "expects key=value"),
        ("opponents=[{weight: 2}]", "spec"),
        ("opponents=['mcts:depth=3']", "mcts has no parameter 'depth'"),
        ("eval_opponents={kuhn_poker-v0: [solver9]}", "unknown opponent 'solver9'"),
        ("opponents=[{spec: random, wieght: 2}]", "unknown OpponentConfig field 'wieght'"),
    ],
)
def test_bad_values_are_errors_that_say_why(override: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_config(None, [override])


def test_unknown_yaml_key_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("model: tiny\nlearning_rte: 0.1\n")
    with pytest.raises(ValueError, match="unknown TrainConfig field 'learning_rte'"):
        load_config(path)


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_loads(path: Path) -> None:
    cfg = load_config(path)
    assert cfg.games and cfg.steps >= 1


def test_shipped_configs_carry_the_papers_hyperparameters() -> None:
    marshal = load_config(CONFIGS / "marshal_generalist.yaml")
    assert marshal.games == ["tic_tac_toe-v0", "kuhn_poker-v0", "mini_hanabi-v0"]
    assert marshal.game_scale == {"tic_tac_toe-v0": 2.0} and marshal.episodes_per_game == 64
    assert (marshal.lr, marshal.lr_schedule, marshal.warmup_steps) == (1e-6, "cosine", 10)
    assert (marshal.adam_beta1, marshal.adam_beta2, marshal.weight_decay) == (0.9, 0.95, 0.05)
    assert (marshal.temperature, marshal.top_p, marshal.top_k) == (0.6, 0.99, 100)
    assert (marshal.kl_coef, marshal.clip_eps, marshal.ppo_epochs) == (0.2, 0.2, 1)
    assert marshal.dual_clip is not None and marshal.advantage.name == "marshal"
    spiral = load_config(CONFIGS / "spiral_multi_game.yaml")
    assert spiral.advantage == RAEConfig(alpha=0.95, role_grouping=True)
    assert spiral.ppo_epochs == 2
    assert (spiral.lr, spiral.lr_schedule, spiral.kl_coef, spiral.temperature) == (
        1e-6,
        "constant",
        0.0,
        1.0,
    )
    assert spiral.loss_aggregation == "seq-mean-token-sum-norm" and spiral.steps == 400
    # SPIRAL's invalid move: -1.5 for the offender (forfeit loss -1 + penalty), +0.5 for the other.
    assert (spiral.invalid_penalty, spiral.forfeit_other_reward) == (-0.5, 0.5)
    assert marshal.forfeit_other_reward == 0.0


def test_every_field_is_documented_in_the_help() -> None:
    docs = field_docs(TrainConfig)
    fields = [item.name for item in dataclasses.fields(TrainConfig)]
    assert [name for name in fields if not docs.get(name)] == []
    assert set(field_docs(OpponentConfig)) == {f.name for f in dataclasses.fields(OpponentConfig)}
    text = describe_fields()
    for name in fields:
        assert f"  {name} (" in text


def test_cli_prints_the_resolved_config_and_rejects_bad_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(
            [
                "train",
                "--config",
                str(CONFIGS / "tiny_cpu.yaml"),
                "--set",
                "lr=0.5",
                "--print-config",
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed["lr"] == 0.5 and printed["model"] == "tiny"
    assert main(["train", "--set", "no_such_field=1"]) == 2
    assert "unknown TrainConfig field" in capsys.readouterr().err


def test_help_lists_the_fields(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    assert "loss_aggregation" in out and "Dual-clip constant" in out


def test_the_training_docs_name_every_field() -> None:
    docs = (CONFIGS.parent / "docs" / "training.md").read_text(encoding="utf-8")
    missing = [f.name for f in dataclasses.fields(TrainConfig) if f"`{f.name}`" not in docs]
    assert missing == []


def test_vllm_settings_are_checked_together() -> None:
    with pytest.raises(ValueError, match="need engine: vllm"):
        load_config(None, ["weight_sync=nccl"])
    with pytest.raises(ValueError, match="must be http"):
        load_config(None, ["engine=vllm", "vllm_base_urls=[node1:8000]"])
    with pytest.raises(ValueError, match="CUDA_VISIBLE_DEVICES"):
        load_config(None, ["engine=vllm", "weight_sync=nccl"])
    cfg = load_config(
        None, ["engine=vllm", "weight_sync=nccl", "vllm_server_env={CUDA_VISIBLE_DEVICES: '1'}"]
    )
    assert cfg.vllm_server_env == {"CUDA_VISIBLE_DEVICES": "1"}
    assert load_config(None, ["model=~/m"]).model == str(Path("~/m").expanduser())
