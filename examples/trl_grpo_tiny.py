"""Train a tiny local model on Kuhn Poker with TRL's GRPOTrainer, on a CPU, in seconds.

The model moves by calling the ``play`` tool of
:class:`strategic_arena.integrations.trl.GameEnvironment`; TRL runs the tool-calling loop, the
package's opponent answers in-process, and the reward is the game's (MARSHAL's definitions).
The model is built locally (:func:`strategic_arena.train.policy.tiny.build_tiny`: a word-level
tokenizer whose answers are single tokens, and a small Qwen2); its chat template is TRL's Qwen2.5
template, which renders tools and is parsed back for tool calls. Swap in any tool-calling chat
model (``AutoModelForCausalLM.from_pretrained(...)``) for a real run.

    python examples/trl_grpo_tiny.py --steps 4 --output-dir /tmp/trl-kuhn
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental

from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen2_5_chat_template

from strategic_arena.integrations.trl import GameEnvironment, game_dataset
from strategic_arena.train.policy.tiny import build_tiny


def train(
    output_dir: str,
    *,
    games: Sequence[str] = ("kuhn_poker-v0",),
    opponent: str = "random",
    steps: int = 4,
    seed: int = 0,
) -> GRPOTrainer:
    """Build the tiny model and train it ``steps`` GRPO steps; returns the trainer."""
    model, tokenizer = build_tiny(
        list(games), vocab="answers", style="tools", hidden_size=32, layers=1, seed=seed
    )
    tokenizer.chat_template = qwen2_5_chat_template
    config = GRPOConfig(
        output_dir=output_dir,
        max_steps=steps,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=64,
        learning_rate=1e-3,
        temperature=1.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=seed,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        train_dataset=game_dataset(list(games), num_games=4 * steps, seed=seed),
        environment_factory=functools.partial(GameEnvironment, opponent),
        args=config,
    )
    trainer.train()
    return trainer


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line and train."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default="trl-tiny", help="where TRL writes its files")
    parser.add_argument("--games", nargs="+", default=["kuhn_poker-v0"], help="env ids")
    parser.add_argument("--opponent", default="random", help="opponent spec (e.g. nash)")
    parser.add_argument("--steps", type=int, default=4, help="GRPO steps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    trainer = train(
        args.output_dir,
        games=args.games,
        opponent=args.opponent,
        steps=args.steps,
        seed=args.seed,
    )
    history: list[dict[str, Any]] = trainer.state.log_history
    for entry in history:
        if "reward" in entry:
            print(f"step {entry['step']}: reward {entry['reward']:+.3f}")


if __name__ == "__main__":
    main()
