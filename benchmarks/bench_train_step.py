"""Time per training step of the tiny model on CPU, stage by stage, and the engine vs HF generate.

Builds a :class:`strategic_arena.train.loop.trainer.Trainer` on the tiny locally-built Qwen2
(``model: tiny``, no download) and runs ``--steps`` training steps after ``--warmup`` steps,
reporting the median seconds of each stage -- generate (the games through the match loop with
the transformers engine), score, advantage, update (PPO), sync -- and the generated tokens per
second.

Peer: the same batch of prompts completed by our :class:`TransformersEngine` (per-request seeded
generators, log-probs recorded) and by transformers' own ``model.generate`` (sampling, one
global generator, no log-probs), both to the same number of new tokens.

Usage::

    python benchmarks/bench_train_step.py [--steps 10] [--episodes 32] [--vocab answers]
        [--threads 1] [--compute-dtype auto|float32|bfloat16] [--micro-batch-tokens N]
        [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

STAGES = ("generate", "score", "advantage", "update", "sync", "step")


def _trainer(args: argparse.Namespace, output_dir: str) -> Any:
    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.trainer import Trainer

    overrides = [
        "model.name=tiny",
        f"model.tiny_vocab={args.vocab}",
        f"model.tiny_hidden_size={args.hidden}",
        f"model.tiny_layers={args.layers}",
        f"games.ids=[{args.game}]",
        "answer.style=boxed",
        "answer.strict=false",
        f"sampling.max_tokens={args.max_new_tokens}",
        f"games.episodes_per_game={args.episodes}",
        f"run.steps={args.warmup + args.steps}",
        "ppo.lr=1e-2",
        "model.device=cpu",
        f"model.torch_threads={args.threads}",
        f"ppo.micro_batch_size={args.micro_batch}",
        f"precision.compute_dtype={args.compute_dtype}",
        f"ppo.micro_batch_tokens={args.micro_batch_tokens or 'null'}",
        "run.tensorboard=false",
        "run.checkpoint_every=0",
        "run.resume=never",
        f"run.output_dir={output_dir}",
    ]
    return Trainer(load_config(None, overrides))


def _engine_vs_generate(trainer: Any, args: argparse.Namespace) -> dict[str, float]:
    """Seconds to complete one batch of prompts: our engine, then ``model.generate``."""
    import torch

    from strategic_arena.train.engines.engine import BatchSampling, GenerationRequest

    episodes = trainer.generate(0)
    prompts = [turn.prompt_ids for episode in episodes for turn in episode.turns][:32]
    new_tokens = args.max_new_tokens
    sampling = BatchSampling(1.0, max_new_tokens=new_tokens)
    engine = trainer.engine
    started = time.perf_counter()
    engine.generate([GenerationRequest(p, i) for i, p in enumerate(prompts)], sampling)
    ours = time.perf_counter() - started
    model, tokenizer = trainer.learner.model, trainer.tokenizer
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), tokenizer.pad_token_id)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        mask[row, width - len(prompt) :] = 1
    model.eval()
    started = time.perf_counter()
    with torch.no_grad(), torch.random.fork_rng():
        torch.manual_seed(0)
        model.generate(
            input_ids=ids,
            attention_mask=mask,
            do_sample=True,
            max_new_tokens=new_tokens,
            pad_token_id=tokenizer.pad_token_id,
        )
    theirs = time.perf_counter() - started
    model.train()
    return {"prompts": float(len(prompts)), "ours_s": ours, "hf_generate_s": theirs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="measured steps (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="unmeasured first steps")
    parser.add_argument("--episodes", type=int, default=32, help="games per step")
    parser.add_argument("--game", default="kuhn_poker-v0")
    parser.add_argument("--vocab", choices=("answers", "prompts"), default="answers")
    parser.add_argument("--hidden", type=int, default=32, help="tiny model hidden size")
    parser.add_argument("--layers", type=int, default=1, help="tiny model layers")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--micro-batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument(
        "--compute-dtype",
        choices=("auto", "float32", "bfloat16"),
        default="auto",
        help="the learner's compute dtype over float32 masters (auto: float32 on CPU)",
    )
    parser.add_argument(
        "--micro-batch-tokens", type=int, default=None, help="padded-token cap of a micro-batch"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write results here")
    args = parser.parse_args()

    import tempfile

    with tempfile.TemporaryDirectory() as output_dir:
        started = time.perf_counter()
        trainer = _trainer(args, output_dir)
        build_s = time.perf_counter() - started
        timings: dict[str, list[float]] = {stage: [] for stage in STAGES}
        tokens: list[float] = []
        prompt_tokens: list[float] = []
        for index in range(args.warmup + args.steps):
            metrics = trainer.train_step()
            if index < args.warmup:
                continue
            for stage in STAGES:
                timings[stage].append(metrics[f"time/{stage}"])
            tokens.append(metrics["train/tokens_per_s"])
            prompt_tokens.append(metrics["train/prompt_length"])
        peer = _engine_vs_generate(trainer, args)

    medians = {stage: statistics.median(values) for stage, values in timings.items()}
    print(
        f"tiny Qwen2 ({args.layers} layer, hidden {args.hidden}, vocab '{args.vocab}'), "
        f"{args.game}, {args.episodes} games/step, {args.max_new_tokens} new tokens max, "
        f"{args.threads} torch thread(s), compute {args.compute_dtype}, "
        f"{platform.processor() or platform.machine()}"
    )
    print(f"trainer built in {build_s:.1f} s; mean prompt {statistics.mean(prompt_tokens):.0f}")
    print(f"{'stage':<10} {'median s':>9} {'share':>6}")
    for stage in STAGES:
        share = medians[stage] / medians["step"] if medians["step"] else 0.0
        print(f"{stage:<10} {medians[stage]:>9.4f} {share:>6.1%}")
    print(f"generated tokens/s (generate stage): {statistics.median(tokens):.0f}")
    ratio = peer["hf_generate_s"] / peer["ours_s"] if peer["ours_s"] else float("nan")
    print(
        f"one batch of {peer['prompts']:.0f} prompts: engine {peer['ours_s']:.3f} s, "
        f"transformers generate {peer['hf_generate_s']:.3f} s (generate/engine = {ratio:.2f})"
    )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "median_s": medians,
                    "tokens_per_s": statistics.median(tokens),
                    "peer": peer,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
