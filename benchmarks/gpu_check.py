"""The GPU path in one command, on a bare GPU machine: does the learner fit, run fast, hand off.

Runs with the machine's own Python and torch (``make gpu-check``: no venv, nothing installed,
no network); the learner rows need only torch and numpy, and every model is built locally from
a shape with random weights. A dependency that is missing skips its rows with the reason.
Each check is one row of a table, printed as it finishes and written (after every row, so a
run cut short keeps what it measured) as ``gpu_check.json`` and ``gpu_check.txt`` under
``--out``:

``cuda``
    the card, its memory, compute capability, bfloat16 support, torch and CUDA versions.
``precision``
    one AdamW step at lr 1e-6 of a small model with float32 masters and bfloat16 compute
    (autocast) moves essentially every weight of a decoder layer; with bfloat16 weights a few
    percent (why the masters are float32).
``learner``
    a model of Qwen3-4B's shape (``--shape 4b``; transformers' Qwen3 when transformers is
    installed, else the torch-only stand-in :mod:`benchmarks.shaped_model`) in
    float32 masters, bfloat16 compute and gradient checkpointing, driven by the project's
    :class:`~strategic_arena.train.policy.learner.Learner` at the one-GPU recipe's micro-batch and
    sequence length: trained tokens/s of one update (after a warm-up update), its peak memory
    against the project's estimate (:mod:`strategic_arena.train.memory`) -- the row fails where
    the peak exceeds the estimate. The turns' behaviour log-probs are the model's own, so no
    token is clipped.
``handoff``
    the colocated hand-off after that update (:class:`~strategic_arena.train.engines.colocation.
    ColocatedMemory`): memory reserved after the update, after emptying the cache, and with
    the optimizer state offloaded, against what waking the recipe's server needs (its weights
    and KV cache at ``vllm.gpu_memory_utilization`` 0.3); fails where the wake would not fit.
``export``
    the weight export stream (the learner's full weights cast to bfloat16 one by one, as the
    NCCL and disk syncs take them): GB/s; and, with safetensors, the disk sync's file write.
``fsdp``
    the same update with the model sharded by FSDP2 on a one-rank process group (NCCL on a
    GPU, gloo on the CPU), mixed precision bfloat16 / float32; whether AdamW is fused there.
``fused_adamw``
    one AdamW step over float32 parameters (``--adamw-gib`` of them) fused against foreach:
    seconds and the extra memory each allocates.
``loop``
    a whole RL loop on the device (:mod:`benchmarks.gpu_loop`): 30 steps of a one-turn game on
    a tiny randomly initialised model, sampled by the transformers engine under the learner's
    compute context and trained by the project's learner (bf16 autocast on a GPU): the reward
    curve (fails unless the last five steps' mean reward reaches 0.5 from about 0.125), the
    engine-vs-learner log-prob gap, and whether a resumed step is bit-equal with the default
    settings and under ``torch.use_deterministic_algorithms``.
``handoff_h100``
    the one-GPU recipe's hand-off decided on an 80 GB H100's memory (:mod:`benchmarks.gpu_handoff`):
    a ballast allocation leaves the card 79.19 GiB, a torch-only stand-in server in another
    process holds the recipe's share, sleeps and wakes the recipe's KV size; each setting
    (``expandable_segments`` on or off, AdamW's state offloaded or not) runs the 4B-shaped update
    in its own process and says whether the wake fits and with what margin. GPU only.
``vllm_tests``, ``bench_rollout``, ``colocated``, ``smoke_recipe``
    with vLLM installed (``.venv-vllm`` or ``$STRATEGIC_ARENA_VLLM_PYTHON``) and the trainer's
    own dependencies: the real-server tests, the rollout benchmark at 256 games, a 3-step
    colocated run of the tiny model, and the GPU smoke recipe (``configs/gpu_smoke.yaml``:
    Qwen3-0.6B, 20 steps, its reward curve; the model must be in the hub cache or reachable);
    else skipped with the reason. These rows add several minutes.

Without a CUDA device the check says so in one line and exits (status 0, or 1 with
``--require-gpu``): ``--smoke`` runs the same rows at tiny shapes on the CPU in seconds (part
of the test suite). The exit status is 1 when a row failed.

Usage::

    python3 benchmarks/gpu_check.py [--out DIR] [--smoke] [--shape 4b|tiny] [--batch 4]
        [--prompt-tokens 2048] [--response-tokens 2048] [--micro-batch 1] [--rows a,b]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import importlib.util
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# torch-free and free of everything else but the standard library
from strategic_arena.train.memory import (  # noqa: E402
    GIB,
    KNOWN_SHAPES,
    Layout,
    ModelShape,
    estimate,
)

#: Model shapes built locally (random weights, nothing downloaded).
SHAPES: dict[str, ModelShape] = {
    "4b": KNOWN_SHAPES["Qwen/Qwen3-4B"],
    "tiny": ModelShape(64, 128, 2, 4, 2, 16, 512, True),
}

#: The one-GPU colocated recipe (configs/gpu1_qwen3_4b_colocated.yaml): its server's share.
RECIPE_UTILIZATION = 0.3

#: The loop row's learning rate (a tiny model learns the one-turn game in ~20 steps at it) and
#: the last five steps' mean reward that counts as learning (a random policy earns 0.125).
LOOP_LR = 1e-2
LOOP_LEARNED = 0.5

#: The trainer's tiny model in a shape vLLM's attention kernels take (head dim 64).
TINY_FOR_VLLM = [
    "model.name=tiny",
    "model.tiny_hidden_size=128",
    "model.tiny_heads=2",
    "model.tiny_vocab=answers",
]

#: The smoke mode's command, named by the one-line answer of a machine without a GPU.
SMOKE_HINT = (
    "make gpu-check-smoke (python3 benchmarks/gpu_check.py --smoke) runs the rows on the CPU"
)


@dataclass
class Row:
    """One check: ``ok``, ``fail`` or ``skip``, its figures and a note (why, when not ok)."""

    name: str
    status: str = "ok"
    seconds: float = 0.0
    figures: dict[str, float | int | str] = field(default_factory=dict)
    note: str = ""


def _missing(*modules: str) -> str | None:
    """``"x is not installed"`` for the first of ``modules`` that cannot be imported."""
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"{module} is not installed"
    return None


def _device(args: argparse.Namespace) -> Any:
    import torch

    if not args.smoke and torch.cuda.is_available():
        return torch.device("cuda", 0)
    return torch.device("cpu")


def model_impl(args: argparse.Namespace) -> str:
    """``transformers`` (its Qwen3 of the shape) when installed and asked for, else ``torch``."""
    if args.impl == "auto":
        return "torch" if _missing("transformers") else "transformers"
    return str(args.impl)


def build(shape: ModelShape, args: argparse.Namespace, dtype: Any, seed: int = 0) -> Any:
    """A causal LM of ``shape`` with random weights on the check's device, in ``dtype``."""
    import torch

    device = _device(args)
    if model_impl(args) == "torch":
        from shaped_model import build_shaped_model  # beside this script, on sys.path as its folder

        return build_shaped_model(shape, device=device, dtype=dtype, seed=seed)
    import transformers

    config = transformers.Qwen3Config(
        **shape.hf_config(), max_position_embeddings=40960, use_cache=False
    )
    torch.manual_seed(seed)  # the transformers initializer draws from the global RNG
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    return model.to(device=device, dtype=dtype)


def _learner(model: Any, compute: Any, world_size: int = 1, **values: Any) -> Any:
    """A learner whose ``ppo`` section is the defaults plus ``values``.

    The correction section's defaults; not validated: no games are loaded (no OpenSpiel).
    """
    from strategic_arena.train.config import CorrectionConfig, PPOConfig
    from strategic_arena.train.policy.learner import Learner

    ppo = PPOConfig(**{"lr": 1e-6, "lr_schedule": "constant", "grad_clip": 1.0, **values})
    return Learner(
        ppo,
        CorrectionConfig(),
        model,
        pad_id=0,
        temperature=1.0,
        compute_dtype=compute,
        world_size=world_size,
    )


def _turns(vocab: int, batch: int, prompt: int, response: int, seed: int) -> list[Any]:
    """``batch`` turns of random tokens with alternating-sign advantages."""
    import numpy as np

    from strategic_arena.rl.episode import Turn

    rng = np.random.default_rng(seed)
    turns = []
    for row in range(batch):
        ids = rng.integers(1, vocab, size=prompt + response).tolist()
        advantage = 1.0 if row % 2 == 0 else -1.0
        turns.append(
            Turn("check", 0, "r", ids[:prompt], ids[prompt:], [0.0] * response, "", None, 0.0)
        )
        turns[-1].advantage = advantage
    return turns


def _own_logprobs(learner: Any, turns: list[Any]) -> None:
    """Set each turn's behaviour log-probs to the model's own (ratio 1: nothing clipped)."""
    for turn, values in zip(turns, learner.recompute_logprobs(turns), strict=True):
        turn.logprobs = values


@contextlib.contextmanager
def _timed(row: Row) -> Iterator[None]:
    """Time the block into ``row.seconds``; an exception fails the row with its message."""
    started = time.perf_counter()
    try:
        yield
    except Exception as error:  # a check that crashed is a failed row, not a crashed run
        row.status, row.note = "fail", f"{type(error).__name__}: {error}"[:500]
    row.seconds = round(time.perf_counter() - started, 2)


def _free(device: Any) -> None:
    import gc

    import torch

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _gib(value: float) -> float:
    return round(value / GIB, 2)


def _host_peak_gib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)  # KiB -> GiB


def check_cuda(args: argparse.Namespace) -> list[Row]:
    """The card (smoke mode: skipped, the rows run on the CPU)."""
    import torch

    row = Row("cuda")
    if args.smoke:
        row.status, row.note = "skip", "smoke mode runs on the CPU"
        return [row]
    properties = torch.cuda.get_device_properties(0)
    row.figures = {
        "name": properties.name,
        "memory_gib": _gib(properties.total_memory),
        "capability": f"{properties.major}.{properties.minor}",
        "bf16": str(torch.cuda.is_bf16_supported()),
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
    }
    return [row]


def check_precision(args: argparse.Namespace) -> list[Row]:
    """Float32 masters + bfloat16 compute move every weight; bfloat16 weights do not."""
    import numpy as np
    import torch

    row = Row("precision")
    with _timed(row):
        device = _device(args)
        base = build(SHAPES["tiny"], args, torch.float32, seed=1)
        turns = _turns(SHAPES["tiny"].vocab, 8, 16, 16, seed=1)
        moved = {}
        forward_dtype = ""
        for label, dtype in (("mixed", torch.float32), ("pure_bf16", torch.bfloat16)):
            model = copy.deepcopy(base).to(dtype)
            learner = _learner(model, torch.bfloat16, grad_clip=0.0)
            _own_logprobs(learner, turns)
            if label == "mixed":  # the matrix products really run in bfloat16
                with torch.no_grad(), learner.compute():
                    ids = torch.tensor([turns[0].prompt_ids], device=device)
                    forward_dtype = str(model(input_ids=ids).logits.dtype)
            layer = {n: p for n, p in model.named_parameters() if ".layers." in n and p.dim() == 2}
            before = {n: p.detach().clone() for n, p in layer.items()}
            learner.update(turns, np.random.default_rng(0))
            changed = sum(int((layer[n] != before[n]).sum()) for n in layer)
            moved[label] = changed / sum(p.numel() for p in layer.values())
        row.figures = {
            "moved_fp32_master_bf16_compute": round(moved["mixed"], 4),
            "moved_bf16_weights": round(moved["pure_bf16"], 4),
            "forward_dtype": forward_dtype,
            "model": model_impl(args),
        }
        if moved["mixed"] < 0.99:
            row.status, row.note = "fail", "float32 masters did not move at lr 1e-6"
        elif forward_dtype != "torch.bfloat16":
            row.status, row.note = "fail", f"the forward pass ran in {forward_dtype}"
    return [row]


def _update_speed(learner: Any, turns: list[Any], device: Any) -> dict[str, float | int | str]:
    """One warm-up update, then one timed: trained tokens/s, peak memory, clip fraction."""
    import numpy as np
    import torch

    _own_logprobs(learner, turns)
    learner.update(turns, np.random.default_rng(0))
    _own_logprobs(learner, turns)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    started = time.perf_counter()
    metrics = learner.update(turns, np.random.default_rng(1))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - started
    if not np.isfinite(metrics["train/loss"]):
        raise RuntimeError(f"the update's loss is {metrics['train/loss']}")
    tokens = sum(len(t.prompt_ids) + len(t.response_ids) for t in turns)
    figures: dict[str, float | int | str] = {
        "update_s": round(seconds, 3),
        "tokens_per_s": round(tokens / seconds, 1),
        "clip_fraction": round(metrics["train/clip_fraction"], 4),
    }
    if device.type == "cuda":
        figures["peak_allocated_gib"] = _gib(torch.cuda.max_memory_allocated(device))
        figures["peak_reserved_gib"] = _gib(torch.cuda.max_memory_reserved(device))
    else:
        figures["host_peak_rss_gib"] = _host_peak_gib()
    return figures


def _layout(args: argparse.Namespace, gpu_bytes: int, learners: int = 1) -> Layout:
    """The check's update as the memory estimate sees it, beside the recipe's server."""
    return Layout(
        gpu_bytes=gpu_bytes,
        learners=learners,
        colocated=True,
        server_gpus=1,
        server_utilization=RECIPE_UTILIZATION,
        sleep_level=1,
        micro_batch_size=args.micro_batch,
        sequence_tokens=args.prompt_tokens + args.response_tokens,
    )


def _gpu_bytes(device: Any) -> int:
    import torch

    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    return 80 * GIB  # the CPU has no such figure; an H100's, for the estimate's columns


def _trainable(args: argparse.Namespace) -> Any:
    """The ``--shape`` model in float32 masters with gradient checkpointing."""
    import torch

    model = build(SHAPES[args.shape], args, torch.float32)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def _update_turns(args: argparse.Namespace, seed: int) -> list[Any]:
    """The update's batch: ``--batch`` sequences of ``--prompt-tokens + --response-tokens``."""
    vocab = SHAPES[args.shape].vocab
    return _turns(vocab, args.batch, args.prompt_tokens, args.response_tokens, seed)


def check_learner(args: argparse.Namespace) -> list[Row]:
    """The learner's update, then the hand-off to a waking server, then the export stream."""
    import torch

    learner_row, handoff, export = Row("learner"), Row("handoff"), Row("export")
    device = _device(args)
    shape = SHAPES[args.shape]
    state: dict[str, Any] = {}
    with _timed(learner_row):
        # the model lives in ``state`` only, so that clearing it frees the GPU for the next rows
        state["learner"] = _learner(
            _trainable(args), torch.bfloat16, micro_batch_size=args.micro_batch
        )
        turns = _update_turns(args, seed=2)
        plan = estimate(shape, _layout(args, _gpu_bytes(device)))
        predicted = sum(plan.learner.values())
        learner_row.figures = {
            "model": model_impl(args),
            "shape": args.shape,
            "parameters": sum(p.numel() for p in state["learner"].model.parameters()),
            "device": str(device),
            "batch": f"{args.batch}x({args.prompt_tokens}+{args.response_tokens})",
            "micro_batch": args.micro_batch,
            "estimate_gib": _gib(predicted),
            "estimate_terms_gib": " ".join(
                f"{name.replace(' (AdamW)', '').replace(' ', '_')}={_gib(value)}"
                for name, value in plan.learner.items()
            ),
        }
        learner_row.figures |= _update_speed(state["learner"], turns, device)
        peak = learner_row.figures.get("peak_reserved_gib")
        if isinstance(peak, float) and peak > _gib(predicted):
            learner_row.status = "fail"
            learner_row.note = (
                f"the update reserved {peak} GiB, more than the estimate's {_gib(predicted)} GiB"
            )
        state["plan"] = plan
    if learner_row.status == "fail" and device.type == "cuda":  # e.g. out of memory: how far
        learner_row.figures["peak_reserved_gib"] = _gib(torch.cuda.max_memory_reserved(device))
    if "plan" in state:
        handoff = _handoff(state["learner"], state["plan"], device)
        export = _export(state["learner"])
    else:
        for row in (handoff, export):
            row.status, row.note = "skip", "the learner row failed"
    state.clear()
    _free(device)
    return [learner_row, handoff, export]


def _handoff(learner: Any, plan: Any, device: Any) -> Row:
    """Reserved memory after the update, after emptying the cache, against the wake's need."""
    import torch

    from strategic_arena.train.engines.colocation import ColocatedMemory, TorchCuda, WakeMemoryError

    row = Row("handoff")
    if device.type != "cuda":
        row.status, row.note = "skip", "needs a CUDA device (the allocator's cache)"
        return row
    with _timed(row):
        server = plan.server
        parts = {"weights_bytes": server["weights"], "kv_bytes": server["KV cache"]}
        memory = ColocatedMemory(TorchCuda(device), **parts)
        wake = memory.wake_bytes()
        after_update = torch.cuda.memory_reserved(device)
        free_before = torch.cuda.mem_get_info(device)[0]
        memory.release()
        after_empty = torch.cuda.memory_reserved(device)
        row.figures = {
            "reserved_after_update_gib": _gib(after_update),
            "free_without_empty_cache_gib": _gib(free_before),
            "reserved_after_empty_cache_gib": _gib(after_empty),
            "wake_needs_gib": _gib(wake),
            "margin_gib": _gib(memory.margin_bytes),
        }
        try:
            row.figures["free_gib"] = _gib(memory.check_wake())
        except WakeMemoryError as error:
            row.status, row.note = "fail", str(error)
        offload = ColocatedMemory(TorchCuda(device), **parts, offload_optimizer=True)
        started = time.perf_counter()
        offload.release([learner.optimizer])
        row.figures["free_with_optimizer_offload_gib"] = _gib(torch.cuda.mem_get_info(device)[0])
        offload.restore([learner.optimizer], device)
        torch.cuda.synchronize(device)
        row.figures["offload_round_trip_s"] = round(time.perf_counter() - started, 2)
    return row


def _export(learner: Any) -> Row:
    """The full weights cast to bfloat16 one by one (the syncs' stream), and the disk file.

    The file (the disk sync's safetensors write) only where safetensors is installed.
    """
    import torch

    from strategic_arena.train.engines.vllm_engine import in_dtype

    row = Row("export")
    with _timed(row):
        started = time.perf_counter()
        size = 0
        for _, tensor in in_dtype(learner.full_weights(), torch.bfloat16):
            size += tensor.numel() * tensor.element_size()
        if tensor.device.type == "cuda":
            torch.cuda.synchronize(tensor.device)
        seconds = time.perf_counter() - started
        row.figures = {"stream_s": round(seconds, 3), "bytes": size, "dtype": "bfloat16"}
        row.figures["stream_gb_per_s"] = round(size / 1e9 / max(seconds, 1e-9), 1)
        reason = _missing("safetensors")
        if reason is not None:
            row.note = f"disk sync file not written: {reason}"
            return row
        from strategic_arena.train.engines.vllm_engine import DiskTransport

        with tempfile.TemporaryDirectory() as folder:
            transport = DiskTransport(folder)
            started = time.perf_counter()
            transport.push(in_dtype(learner.full_weights(), torch.bfloat16), admins=[])
            row.figures["disk_write_s"] = round(time.perf_counter() - started, 2)
            row.figures["file_bytes"] = (transport.directory / "model.safetensors").stat().st_size
            transport.close()
    return row


def check_loop(args: argparse.Namespace) -> list[Row]:
    """30 steps of a one-turn game through the transformers engine and the learner."""
    import torch
    from gpu_loop import run_loop  # beside this script, on sys.path as its folder

    row = Row("loop")
    with _timed(row):
        shape = SHAPES["tiny"]
        compute = torch.bfloat16
        result = run_loop(
            lambda: build(shape, args, torch.float32, seed=3),
            lambda model: _learner(model, compute, lr=LOOP_LR),
            shape.vocab,
            steps=args.loop_steps,
        )
        row.figures = {"device": str(_device(args)), "compute": "bfloat16", **result.figures()}
        if row.figures["reward_last_5"] < LOOP_LEARNED:  # type: ignore[operator]
            row.status = "fail"
            row.note = f"no learning: the last five steps' mean reward is below {LOOP_LEARNED}"
    _free(_device(args))
    return [row]


def handoff_setting(args: argparse.Namespace) -> dict[str, Any]:
    """The ``handoff_h100`` row of one setting, in this (child) process; see gpu_handoff."""
    import torch
    from gpu_handoff import H100_BYTES, StandInServer, run_setting

    device = _device(args)
    total = torch.cuda.mem_get_info(device)[1]
    if total < H100_BYTES:
        return {"status": "skip", "figures": {}, "note": "the card is smaller than an H100"}
    stand_in = StandInServer(str(device))
    try:
        plan = estimate(SHAPES[args.shape], _layout(args, H100_BYTES))
        server = plan.server
        ballast = stand_in.take(total - H100_BYTES)
        started = stand_in.take(server["reserved"] + server["CUDA graphs"])
        if not (ballast["ok"] and started["ok"]):
            return {"status": "fail", "figures": {}, "note": "the stand-in could not start"}
        learner = _learner(_trainable(args), torch.bfloat16, micro_batch_size=args.micro_batch)
        return run_setting(args.handoff_setting, learner, _update_turns(args, 2), stand_in, server)
    finally:
        stand_in.close()


def check_handoff_h100(args: argparse.Namespace) -> list[Row]:
    """The recipe's hand-off on an H100's memory, setting by setting (GPU only)."""
    from gpu_handoff import handoff_rows  # beside this script, on sys.path as its folder

    if _device(args).type != "cuda":
        return [Row("handoff_h100", "skip", note="needs a CUDA device (the allocator's cache)")]
    return [Row("handoff_h100", **fields) for fields in handoff_rows(args, Path(__file__))]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_fsdp(args: argparse.Namespace) -> list[Row]:
    """The update with FSDP2 on a one-rank process group."""
    import torch

    from strategic_arena.train.dist import DistInfo, shard

    row = Row("fsdp")
    device = _device(args)
    dist = torch.distributed
    names = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")
    with _timed(row):
        os.environ.update(
            {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}
            | {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
        )
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
        _fsdp_update(args, row, shard(_trainable(args), DistInfo(), param_dtype=torch.bfloat16))
    if dist.is_initialized():
        dist.destroy_process_group()
    for name in names:
        os.environ.pop(name, None)
    _free(device)
    return [row]


def _fsdp_update(args: argparse.Namespace, row: Row, model: Any) -> None:
    import torch

    dist = torch.distributed
    learner = _learner(
        model, torch.bfloat16, world_size=dist.get_world_size(), micro_batch_size=args.micro_batch
    )
    row.figures = {
        "backend": dist.get_backend(),
        "fused_adamw": str(bool(learner.optimizer.defaults.get("fused"))),
    }
    row.figures |= _update_speed(learner, _update_turns(args, seed=3), _device(args))


def check_fused_adamw(args: argparse.Namespace) -> list[Row]:
    """One AdamW step, fused against foreach: seconds and extra memory."""
    import torch

    row = Row("fused_adamw")
    device = _device(args)
    with _timed(row):
        total = int(args.adamw_gib * GIB) // 4 if device.type == "cuda" else 2**20
        pieces = 16
        for mode in ("fused", "foreach"):
            params = [
                torch.nn.Parameter(torch.randn(total // pieces, device=device))
                for _ in range(pieces)
            ]
            for param in params:
                param.grad = torch.randn_like(param)
            optimizer = torch.optim.AdamW(params, lr=1e-6, **{mode: True})  # type: ignore[arg-type]
            optimizer.step()  # state allocated here, outside the measured step
            if device.type == "cuda":
                torch.cuda.synchronize(device)
                torch.cuda.reset_peak_memory_stats(device)
                base = torch.cuda.memory_allocated(device)
            started = time.perf_counter()
            optimizer.step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
                extra = torch.cuda.max_memory_allocated(device) - base
                row.figures[f"{mode}_extra_gib"] = _gib(extra)
            row.figures[f"{mode}_step_s"] = round(time.perf_counter() - started, 4)
            del optimizer, params
            _free(device)
        row.figures["parameters"] = total
        fused, foreach = row.figures["fused_step_s"], row.figures["foreach_step_s"]
        assert isinstance(fused, float) and isinstance(foreach, float)
        row.figures["foreach_over_fused"] = round(foreach / max(fused, 1e-9), 2)
    return [row]


def _vllm_skip(args: argparse.Namespace) -> str | None:
    """Why the vLLM rows are skipped (``None``: they run)."""
    if args.smoke:
        return "smoke mode: the vLLM rows run only in the full check"
    missing = _missing("httpx", "yaml", "transformers", "safetensors")
    if missing is not None:
        return f"the trainer's server side needs it: {missing}"
    from strategic_arena.train.engines.vllm_server import vllm_unavailable_reason

    return vllm_unavailable_reason()


def _run(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT, check=False
    )


def check_vllm_tests(args: argparse.Namespace) -> list[Row]:
    """The real-server tests."""
    row = Row("vllm_tests")
    with _timed(row):
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "vllm"]
        done = _run([*command, "tests/train/test_vllm_server.py"], timeout=900)
        row.figures = {"summary": (done.stdout.strip().splitlines() or [""])[-1][:200]}
        if done.returncode != 0:
            row.status, row.note = "fail", done.stdout[-400:]
    return [row]


def check_bench_rollout(args: argparse.Namespace) -> list[Row]:
    """``bench_rollout.py`` at 256 games."""
    row = Row("bench_rollout")
    with _timed(row), tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "rollout.json"
        command = [sys.executable, "benchmarks/bench_rollout.py", "--episodes", "256"]
        done = _run([*command, "--gpu-memory-utilization", "0.5", "--json", str(out)], 900)
        if done.returncode != 0:
            row.status, row.note = "fail", (done.stderr or done.stdout)[-400:]
        else:
            row.figures = {"result": json.dumps(json.loads(out.read_text()))[:400]}
    return [row]


def colocated_overrides() -> list[str]:
    """``--set`` overrides of the trainer's colocated mode.

    The started server on the learner's GPU, with vLLM's sleep mode around each update.
    """
    return ["placement.vllm_sleep_level=1", "vllm.gpu_memory_utilization=0.3"]


def check_colocated(args: argparse.Namespace) -> list[Row]:
    """Three training steps with the server beside the learner on one GPU."""
    row = Row("colocated")
    overrides = colocated_overrides()
    with _timed(row), tempfile.TemporaryDirectory() as folder:
        sets = [
            *(TINY_FOR_VLLM if args.model is None else [f"model.name={args.model}"]),
            "rollout.engine=vllm",
            "vllm.enforce_eager=true",
            "run.steps=3",
            "games.episodes_per_game=16",
            "run.tensorboard=false",
            "run.checkpoint_every=0",
            "run.resume=never",
            f"run.output_dir={folder}",
            *overrides,
        ]
        command = [sys.executable, "-m", "strategic_arena.cli", "train"]
        done = _run([*command, *(arg for item in sets for arg in ("--set", item))], 1200)
        row.figures = {"overrides": " ".join(overrides)}
        if done.returncode != 0:
            row.status, row.note = "fail", (done.stderr or done.stdout)[-400:]
    return [row]


def check_smoke_recipe(args: argparse.Namespace) -> list[Row]:
    """``configs/gpu_smoke.yaml``: 20 steps of a sub-1B model, and its reward curve."""
    row = Row("smoke_recipe")
    with _timed(row), tempfile.TemporaryDirectory() as folder:
        sets = [f"run.output_dir={folder}", "run.tensorboard=false", "run.resume=never"]
        command = [sys.executable, "-m", "strategic_arena.cli", "train"]
        command += ["--config", "configs/gpu_smoke.yaml"]
        done = _run([*command, *(arg for item in sets for arg in ("--set", item))], 1500)
        if done.returncode != 0:
            row.status, row.note = "fail", (done.stderr or done.stdout)[-400:]
            return [row]
        lines = (Path(folder) / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        rewards = [json.loads(line)["train/reward"] for line in lines if "train/reward" in line]
        row.figures = {
            "steps": len(rewards),
            "reward_first_5": round(sum(rewards[:5]) / max(1, len(rewards[:5])), 3),
            "reward_last_5": round(sum(rewards[-5:]) / max(1, len(rewards[-5:])), 3),
            "curve": " ".join(f"{value:.2f}" for value in rewards),
        }
    return [row]


#: The checks in order: (the rows each produces, the check, why it cannot run or ``None``).
CHECKS: tuple[tuple[tuple[str, ...], Callable[[argparse.Namespace], list[Row]]], ...] = (
    (("cuda",), check_cuda),
    (("precision",), check_precision),
    (("learner", "handoff", "export"), check_learner),
    (("fsdp",), check_fsdp),
    (("fused_adamw",), check_fused_adamw),
    (("loop",), check_loop),
    (("handoff_h100",), check_handoff_h100),
)
VLLM_CHECKS: tuple[tuple[tuple[str, ...], Callable[[argparse.Namespace], list[Row]]], ...] = (
    (("vllm_tests",), check_vllm_tests),
    (("bench_rollout",), check_bench_rollout),
    (("colocated",), check_colocated),
    (("smoke_recipe",), check_smoke_recipe),
)


def _header(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    device = _device(args)
    return {
        "smoke": args.smoke,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
        "python": platform.python_version(),
        "model": model_impl(args),
        "shape": args.shape,
        "batch": [args.batch, args.prompt_tokens, args.response_tokens, args.micro_batch],
    }


def run(args: argparse.Namespace, on_row: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Every check, in order; ``on_row`` sees the report after each row. The report as data."""
    report = {**_header(args), "passed": True, "rows": []}
    vllm_reason = _vllm_skip(args)
    for names, check in (*CHECKS, *VLLM_CHECKS):
        wanted = [name for name in names if not args.rows or name in args.rows]
        if not wanted:
            continue
        reason = vllm_reason if (names, check) in VLLM_CHECKS else None
        rows = [Row(name, "skip", note=reason) for name in names] if reason else check(args)
        for row in rows:
            if row.name in wanted:
                report["rows"].append(dataclasses.asdict(row))
                report["passed"] = report["passed"] and row.status != "fail"
                on_row(report)
    return report


def table(report: dict[str, Any]) -> str:
    """The report as a text table."""
    lines = [
        f"GPU check on {report['device']} (torch {report['torch']}, CUDA {report['cuda'] or '-'}, "
        f"model {report['model']})" + (" -- smoke mode" if report["smoke"] else ""),
        f"{'check':<14} {'status':<6} {'seconds':>8}  figures / note",
    ]
    lines += [_line(row) for row in report["rows"]]
    lines.append("passed" if report["passed"] else "FAILED")
    return "\n".join(lines)


def _line(row: dict[str, Any]) -> str:
    figures = ", ".join(f"{k}={v}" for k, v in row["figures"].items())
    text = "; ".join(part for part in (figures, row["note"]) if part)
    return f"{row['name']:<14} {row['status']:<6} {row['seconds']:>8.1f}  {text}"


def _cannot_start(args: argparse.Namespace) -> str | None:
    """One line saying why the full check cannot run here (``None``: it can)."""
    if _missing("torch"):
        return (
            f"gpu-check: torch is not installed for {sys.executable} (set GPU_PYTHON to a Python "
            "that has it); nothing ran"
        )
    if args.smoke:
        return None
    import torch

    if not torch.cuda.is_available():
        built = torch.version.cuda or "no CUDA"
        return (
            f"gpu-check: no CUDA device here (torch {torch.__version__}, {built}); nothing ran. "
            + SMOKE_HINT
        )
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU")
    parser.add_argument(
        "--require-gpu", action="store_true", help="kept for old scripts: nothing ran is status 1"
    )
    parser.add_argument("--shape", choices=sorted(SHAPES), default=None, help="default: 4b")
    parser.add_argument("--impl", choices=("auto", "transformers", "torch"), default="auto")
    parser.add_argument("--batch", type=int, default=None, help="sequences per update")
    parser.add_argument("--prompt-tokens", type=int, default=None)
    parser.add_argument("--response-tokens", type=int, default=None)
    parser.add_argument("--micro-batch", type=int, default=1, help="sequences per pass")
    parser.add_argument("--adamw-gib", type=float, default=4.0, help="fused_adamw row's size")
    parser.add_argument("--model", default=None, help="model of the colocated run (tiny)")
    parser.add_argument("--loop-steps", type=int, default=30, help="loop row's steps")
    parser.add_argument("--handoff-setting", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rows", default="", help="comma-separated rows to run (default all)")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON and table here")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    reason = _cannot_start(args)
    if reason is not None:
        print(reason)
        return 1  # nothing ran is no pass, with --smoke or without (one status for one cause)
    small = args.smoke
    if args.handoff_setting:  # one setting of the handoff_h100 row, as a child process
        args.shape = args.shape or "4b"
        print(json.dumps(handoff_setting(args)), flush=True)
        return 0
    args.rows = {name for name in args.rows.split(",") if name}
    args.shape = args.shape or ("tiny" if small else "4b")
    args.batch = args.batch or 4
    args.prompt_tokens = args.prompt_tokens or (16 if small else 2048)
    args.response_tokens = args.response_tokens or (16 if small else 2048)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
    print(table({**_header(args), "passed": True, "rows": []}).rsplit("\n", 1)[0], flush=True)

    def write(report: dict[str, Any]) -> None:
        print(_line(report["rows"][-1]), flush=True)
        text = json.dumps(report, indent=2) + "\n"
        for path in (args.json, args.out and args.out / "gpu_check.json"):
            if path is not None:
                path.write_text(text, encoding="utf-8")
        if args.out is not None:
            (args.out / "gpu_check.txt").write_text(table(report) + "\n", encoding="utf-8")

    # Libraries' warnings (transformers' deprecations) would land between the table's rows:
    # kept, and printed once each after it.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        report = run(args, write)
    print("passed" if report["passed"] else "FAILED")
    for text in dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught):
        print(f"warning: {text}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
