"""The TRL adapter: GRPOTrainer trains a tiny local model through environment_factory."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the [trl] extra is not installed")

import torch

from examples.trl_grpo_tiny import train
from strategic_arena.integrations.trl import GameEnvironment, game_dataset
from strategic_arena.train.policy.tiny import build_tiny


def test_grpo_trains_a_tiny_model_that_moves_by_tool_calls(tmp_path: Path) -> None:
    trainer = train(str(tmp_path), steps=2, seed=0)
    steps = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert [entry["step"] for entry in steps] == [1, 2]
    # the model called play (single-token tool calls of the tiny vocabulary), TRL ran the tools
    assert all(entry["tools/call_frequency"] > 0 for entry in steps)
    assert all(entry["tools/failure_frequency"] == 0 for entry in steps)
    # every reward is a game's: at least the invalid penalty plus a loss, at most a win + format
    assert all(-12.0 <= entry["reward"] <= 2.5 for entry in steps)
    # and the learner changed the weights it generated with
    untrained, _ = build_tiny(
        ["kuhn_poker-v0"], vocab="answers", style="tools", hidden_size=32, layers=1, seed=0
    )
    before = dict(untrained.named_parameters())
    changed = [
        name
        for name, weight in trainer.model.named_parameters()
        if not torch.equal(weight.detach().cpu(), before[name].detach())
    ]
    assert changed


def test_the_environment_plays_whole_games_with_the_documented_rewards() -> None:
    rows = game_dataset(["kuhn_poker-v0", "tic_tac_toe-v0"], num_games=2, seed=3)
    assert (
        rows.to_list()
        == game_dataset(["kuhn_poker-v0", "tic_tac_toe-v0"], num_games=2, seed=3).to_list()
    )
    assert [row["seat"] for row in rows] == [0, 0, 1, 1]
    environment = GameEnvironment({"kuhn_poker-v0": "nash", "tic_tac_toe-v0": "random"})
    for row in rows:
        first = environment.reset(**row)
        assert environment.reset(**row) == first  # the seed fixes the deal and the opponent
        assert "# Legal actions" in first and row["prompt"][1]["content"] == ""
        moves = 0
        view = first
        while environment.session is not None and not environment.session.done:
            legal = list(environment.session.view().legal_actions.values())
            view = environment.play(legal[0])
            moves += 1
        assert view.startswith("The game is over: it ended by the rules.")
        returns = environment.session.returns()  # type: ignore[union-attr]
        assert environment.get_reward() == pytest.approx(returns[row["seat"]] + 0.05 * moves)
    # an illegal or unknown move forfeits: the loss plus invalid_penalty
    for row, move, kind in (
        (rows[1], "O(1,1)", "illegal_action"),
        (rows[0], "castle", "unknown_action"),
    ):
        environment.reset(**row)  # Tic-Tac-Toe as X; Kuhn Poker first to act
        assert environment.play(move).startswith(f"The game is over: you forfeited ({kind}")
        assert environment.get_reward() == -11.0
    # a model that stops calling play has forfeited too
    environment.reset(**rows[0])
    assert environment.get_reward() == -11.0
    assert environment.play("check") == environment.session.outcome_text()  # type: ignore[union-attr]
