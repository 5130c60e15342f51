"""SPIRAL's evaluation in ``configs/spiral*.yaml``: its held-out games, its fixed model opponent,
and its Tic-Tac-Toe prompt exactly as its code builds it.

SPIRAL's Tables 4-5 play the three training games and three held-out games (Snake, Pig Dice,
Truth and Deception) against Gemini-2.0-Flash; its code asks the policy with
``apply_qwen3_template(observation)``: one user turn, "You are playing a two-player zero-sum
game. Make valid actions to win.", "Observation: " and TextArena's observation, then "Please
reason step by step, and put your final answer within \\boxed{}.", and nothing else.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from strategic_arena.train.config import load_config
from strategic_arena.train.config.sections import OpponentConfig

pytest.importorskip("yaml", reason="the [train] extra (pyyaml) is not installed")

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TRAINING = ["spiral_tic_tac_toe-v0", "spiral_kuhn_poker-v0", "spiral_negotiation-v0"]
HELD_OUT = ["spiral_snake-v0", "spiral_pig_dice-v0", "spiral_truth_and_deception-v0"]
GEMINI = OpponentConfig(
    spec="google/gemini-2.0-flash-001",
    base_url="https://openrouter.ai/api/v1",
    api_key_env="OPENROUTER_API_KEY",
)


@pytest.mark.parametrize("name", ["spiral_multi_game.yaml", "spiral_multi_game_no_rae.yaml"])
def test_the_evaluation_names_the_held_out_games_and_the_fixed_model(name: str) -> None:
    cfg = load_config(CONFIGS / name)
    for env_id in TRAINING + HELD_OUT:
        assert cfg.eval.opponents[env_id] == ["random", GEMINI], env_id
    assert set(HELD_OUT).isdisjoint(cfg.games.ids)  # evaluated, never trained on
    assert not cfg.answer.include_history


def test_tic_tac_toe_is_asked_as_spirals_code_asks_it() -> None:
    pytest.importorskip("textarena")
    from strategic_arena.games import get_spec
    from strategic_arena.prompting import render_messages
    from strategic_arena.views import seat_view

    cfg = load_config(CONFIGS / "spiral_multi_game.yaml")
    spec = get_spec("spiral_tic_tac_toe-v0")
    state = spec.game.new_initial_state()
    state.start(0)
    for move in ("[4]", "[0]"):
        state.apply_action(move)
    # The view and the messages as the trainer's player builds them, with the config's settings.
    view = seat_view(spec, state, state.current_player(), history=cfg.answer.include_history)
    messages = render_messages(
        spec,
        view,
        cfg.answer.style,
        include_history=cfg.answer.include_history,
        prompts=cfg.answer.prompt_set(),
    )
    observation = view.text
    assert "Current Board:" in observation and " X | 1 | 2 " in observation
    assert messages == [
        {
            "role": "user",
            "content": "You are playing a two-player zero-sum game. Make valid actions to win.\n"
            f"Observation: {observation}\n"
            "Please reason step by step, and put your final answer within \\boxed{}.",
        }
    ]
