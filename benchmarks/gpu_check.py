"""The GPU path in one command: does the learner learn, fit and run fast; do the servers work.

Meant for one H100 (``make gpu-check``, about 10-25 minutes), also on a locked-down node that
has torch but no vLLM and no network: every model is built locally from a config with random
weights. Each check is one row of a table (printed, and written as JSON with ``--json``):

0. ``cuda``: a usable CUDA device (name, memory, bfloat16 support); without one the check
   fails, since the other rows would have run on the CPU;
1. ``precision``: one AdamW step at lr 1e-6 of a small model with float32 master weights and
   bfloat16 compute (autocast) moves essentially every weight of a decoder layer; the same step
   with bfloat16 weights moves a few percent (the reason masters are float32);
2. ``learner``: a model of Qwen3-4B's shape (``--shape 4b``: hidden 2560, 36 layers, vocab
   151936; random weights) in float32 masters with bfloat16 compute and gradient checkpointing:
   peak GPU memory and trained tokens per second of one PPO update (``--batch`` sequences of
   ``--prompt-tokens`` + ``--response-tokens``), after one warm-up update;
3. ``fsdp``: the same update with the model sharded by FSDP2 on a one-rank process group
   (NCCL on GPU, gloo on CPU), the mixed-precision policy bfloat16 / float32;
4. ``export``: the full weights cast to the server's dtype (bfloat16) and written as the disk
   sync's safetensors file: seconds and bytes;
5. with vLLM installed (``.venv-vllm`` or ``$STRATEGIC_ARENA_VLLM_PYTHON``), also
   ``vllm_tests`` (the real-server tests, ``pytest -m vllm``), ``bench_rollout``
   (``benchmarks/bench_rollout.py`` at 256 games) and ``colocated`` (a 3-step run with the
   server on the learner's GPU and vLLM's sleep mode, ``vllm_sleep_level: 1``, if this trainer
   has it); without vLLM these rows are skipped with the reason.

``--smoke`` runs the same checks at tiny shapes on the CPU (seconds; part of the test suite)
and skips the vLLM rows. The exit status is 0 when no row failed.

Usage::

    python benchmarks/gpu_check.py [--json gpu_check.json] [--shape 4b|tiny] [--smoke]
        [--batch 8] [--prompt-tokens 512] [--response-tokens 512]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import json
import os
import platform
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from strategic_arena.train.memory import KNOWN_SHAPES  # noqa: E402  (torch-free)

#: Model shapes built from a config (random weights, nothing downloaded).
SHAPES: dict[str, dict[str, Any]] = {
    # Qwen3-4B's published config.json, as a Qwen2 architecture (the same tensors but q/k norms)
    "4b": {**KNOWN_SHAPES["Qwen/Qwen3-4B"].hf_config(), "max_position_embeddings": 40960},
    "tiny": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "vocab_size": 512,
        "tie_word_embeddings": True,
        "max_position_embeddings": 4096,
    },
}


#: The trainer's tiny model in a shape vLLM's attention kernels take (head dim 64).
TINY_FOR_VLLM = [
    "model.name=tiny",
    "model.tiny_hidden_size=128",
    "model.tiny_heads=2",
    "model.tiny_vocab=answers",
]


@dataclass
class Row:
    """One check: ``ok``, ``fail`` or ``skip``, its figures and a note (why, when not ok)."""

    name: str
    status: str = "ok"
    seconds: float = 0.0
    figures: dict[str, float | int | str] = field(default_factory=dict)
    note: str = ""


def _device(smoke: bool) -> Any:
    import torch

    if not smoke and torch.cuda.is_available():
        return torch.device("cuda", 0)
    return torch.device("cpu")


def _build(shape: str, device: Any, dtype: Any, seed: int = 0) -> Any:
    """A random Qwen2-architecture causal LM of ``shape`` on ``device``, in ``dtype``."""
    import torch
    import transformers

    config = transformers.Qwen2Config(**SHAPES[shape], use_cache=False)
    torch.manual_seed(seed)  # the transformers initializer draws from the global RNG
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config)  # type: ignore[no-untyped-call]
    return model.to(device=device, dtype=dtype)


def _turns(vocab: int, batch: int, prompt: int, response: int, seed: int) -> list[Any]:
    """``batch`` turns of random tokens with alternating-sign advantages."""
    import numpy as np

    from strategic_arena.train.episode import Turn

    rng = np.random.default_rng(seed)
    turns = []
    for row in range(batch):
        ids = rng.integers(1, vocab, size=prompt + response).tolist()
        turns.append(
            Turn(
                "kuhn_poker-v0",
                0,
                "r",
                ids[:prompt],
                ids[prompt:],
                [-1.0] * response,
                "",
                None,
                advantage=1.0 if row % 2 == 0 else -1.0,
            )
        )
    return turns


def _learner(model: Any, compute: Any, *overrides: str, world_size: int = 1) -> Any:
    from strategic_arena.train.config import load_config
    from strategic_arena.train.learner import Learner

    cfg = load_config(
        None, ["ppo.lr=1e-6", "ppo.lr_schedule=constant", "ppo.grad_clip=1.0", *overrides]
    )
    return Learner.from_config(cfg, model, pad_id=0, compute_dtype=compute, world_size=world_size)


@contextlib.contextmanager
def _timed(row: Row) -> Iterator[None]:
    """Time the block into ``row.seconds``; an exception fails the row with its message."""
    started = time.perf_counter()
    try:
        yield
    except Exception as error:  # a check that crashed is a failed row, not a crashed run
        row.status, row.note = "fail", f"{type(error).__name__}: {error}"[:500]
    row.seconds = round(time.perf_counter() - started, 2)


def check_cuda(args: argparse.Namespace) -> Row:
    """Row 0: a usable CUDA device (else every other row ran on the CPU and proves nothing)."""
    import torch

    row = Row("cuda")
    if args.smoke:
        row.status, row.note = "skip", "smoke mode runs on the CPU"
    elif not torch.cuda.is_available():
        row.status = "fail"
        row.note = (
            f"no usable CUDA device (torch {torch.__version__}, built for CUDA "
            f"{torch.version.cuda or 'none'}): the rows below ran on the CPU"
        )
    else:
        properties = torch.cuda.get_device_properties(0)
        row.figures = {
            "name": properties.name,
            "memory_gib": round(properties.total_memory / 2**30, 1),
            "capability": f"{properties.major}.{properties.minor}",
            "bf16": str(torch.cuda.is_bf16_supported()),
        }
    return row


def check_precision(args: argparse.Namespace) -> Row:
    """Row 1: float32 masters + bfloat16 compute move every weight; bfloat16 weights do not."""
    import numpy as np
    import torch

    row = Row("precision")
    with _timed(row):
        device = _device(args.smoke)
        base = _build("tiny", device, torch.float32, seed=1)
        turns = _turns(SHAPES["tiny"]["vocab_size"], 8, 16, 16, seed=1)
        moved = {}
        forward_dtype = ""
        for label, dtype in (("mixed", torch.float32), ("pure_bf16", torch.bfloat16)):
            model = copy.deepcopy(base).to(dtype)
            learner = _learner(model, torch.bfloat16, "ppo.grad_clip=0")
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
        }
        if moved["mixed"] < 0.99:
            row.status, row.note = "fail", "float32 masters did not move at lr 1e-6"
        elif forward_dtype != "torch.bfloat16":
            row.status, row.note = "fail", f"the forward pass ran in {forward_dtype}"
    return row


def _peak_memory_gib(device: Any) -> float:
    import torch

    if device.type == "cuda":
        return round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)  # KiB -> GiB


def _update_speed(learner: Any, turns: list[Any], device: Any) -> dict[str, float]:
    """One warm-up update, then one timed: trained tokens per second and peak memory."""
    import numpy as np
    import torch

    learner.update(turns, np.random.default_rng(0))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    started = time.perf_counter()
    metrics = learner.update(turns, np.random.default_rng(1))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - started
    tokens = sum(len(t.prompt_ids) + len(t.response_ids) for t in turns)
    if not np.isfinite(metrics["train/loss"]):
        raise RuntimeError(f"the update's loss is {metrics['train/loss']}")
    return {
        "update_s": round(seconds, 3),
        "tokens_per_s": round(tokens / seconds, 1),
        "peak_memory_gib": _peak_memory_gib(device),
    }


def _update_args(args: argparse.Namespace) -> list[str]:
    return [f"ppo.micro_batch_size={args.micro_batch}"]


def _trainable(args: argparse.Namespace, device: Any) -> Any:
    """The ``--shape`` model in float32 masters with gradient checkpointing."""
    import torch

    model = _build(args.shape, device, torch.float32)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def _update_turns(args: argparse.Namespace, seed: int) -> list[Any]:
    """The update's batch: ``--batch`` sequences of ``--prompt-tokens + --response-tokens``."""
    vocab = SHAPES[args.shape]["vocab_size"]
    return _turns(vocab, args.batch, args.prompt_tokens, args.response_tokens, seed)


def check_learner(args: argparse.Namespace) -> Row:
    """Row 2: a 4B-shaped model's PPO update in float32 masters with bfloat16 compute."""
    import torch

    row = Row("learner")
    with _timed(row):
        device = _device(args.smoke)
        model = _trainable(args, device)
        params = sum(p.numel() for p in model.parameters())
        learner = _learner(model, torch.bfloat16, *_update_args(args))
        turns = _update_turns(args, seed=2)
        row.figures = {"shape": args.shape, "parameters": params, "device": str(device)}
        row.figures |= _update_speed(learner, turns, device)
        # float32 weights + gradients + two AdamW moments: 16 bytes a parameter
        row.figures["weights_grads_adam_gib"] = round(16 * params / 2**30, 2)
        del learner, model
    _free(device)
    return row


def _free(device: Any) -> None:
    import gc

    import torch

    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_fsdp(args: argparse.Namespace) -> Row:
    """Row 3: the update with FSDP2 on a one-rank process group."""
    import torch

    from strategic_arena.train.dist import DistInfo, shard

    row = Row("fsdp")
    device = _device(args.smoke)
    dist = torch.distributed
    with _timed(row):
        os.environ.update(
            {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port())}
            | {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
        )
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
        model = shard(_trainable(args, device), DistInfo(), param_dtype=torch.bfloat16)
        learner = _learner(model, torch.bfloat16, *_update_args(args))
        turns = _update_turns(args, seed=3)
        row.figures = {"backend": dist.get_backend(), **_update_speed(learner, turns, device)}
        del learner, model
    if dist.is_initialized():
        dist.destroy_process_group()
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        os.environ.pop(name, None)
    _free(device)
    return row


def check_export(args: argparse.Namespace) -> Row:
    """Row 4: the weights in the server's dtype, written as the disk sync writes them."""
    import torch

    from strategic_arena.train.vllm_engine import DiskTransport, in_dtype

    row = Row("export")
    with _timed(row), tempfile.TemporaryDirectory() as folder:
        device = _device(args.smoke)
        model = _build(args.shape, device, torch.float32)
        transport = DiskTransport(folder)
        started = time.perf_counter()
        transport.push(in_dtype(model.state_dict().items(), torch.bfloat16), admins=[])
        seconds = time.perf_counter() - started
        size = (transport.directory / "model.safetensors").stat().st_size
        row.figures = {"write_s": round(seconds, 2), "bytes": size, "dtype": "bfloat16"}
        transport.close()
        del model
    _free(_device(args.smoke))
    return row


def _vllm_skip(args: argparse.Namespace) -> str | None:
    """Why the vLLM rows are skipped (``None``: they run)."""
    if args.smoke:
        return "smoke mode: the vLLM rows run only in the full check"
    from strategic_arena.train.vllm_server import vllm_unavailable_reason

    return vllm_unavailable_reason()


def _run(command: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT, check=False
    )


def check_vllm_tests(args: argparse.Namespace) -> Row:
    """Row 5a: the real-server tests."""
    row = Row("vllm_tests")
    with _timed(row):
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "vllm"]
        done = _run([*command, "tests/train/test_vllm_server.py"], timeout=900)
        row.figures = {"summary": (done.stdout.strip().splitlines() or [""])[-1][:200]}
        if done.returncode != 0:
            row.status, row.note = "fail", done.stdout[-400:]
    return row


def check_bench_rollout(args: argparse.Namespace) -> Row:
    """Row 5b: ``bench_rollout.py`` at 256 games."""
    row = Row("bench_rollout")
    with _timed(row), tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "rollout.json"
        command = [sys.executable, "benchmarks/bench_rollout.py", "--episodes", "256"]
        done = _run([*command, "--gpu-memory-utilization", "0.5", "--json", str(out)], 900)
        if done.returncode != 0:
            row.status, row.note = "fail", (done.stderr or done.stdout)[-400:]
        else:
            row.figures = {"result": json.dumps(json.loads(out.read_text()))[:400]}
    return row


def colocated_overrides() -> list[str] | None:
    """``--set`` overrides of the trainer's colocated mode (``None``: this trainer has none).

    Colocated is the default placement (the started server on the learner's GPU) with vLLM's
    sleep mode around each update: the ``vllm_sleep_level`` field, where the trainer has it.
    """
    from strategic_arena.train.config import TrainConfig

    names = {item.name for item in dataclasses.fields(TrainConfig)}
    if "vllm_sleep_level" not in names:
        return None
    return ["placement.vllm_sleep_level=1", "vllm.gpu_memory_utilization=0.3"]


def check_colocated(args: argparse.Namespace) -> Row:
    """Row 5c: three training steps with the server beside the learner on one GPU."""
    row = Row("colocated")
    overrides = colocated_overrides()
    if overrides is None:
        row.status = "skip"
        row.note = "this trainer has no colocated mode (no vllm_sleep_level in TrainConfig)"
        return row
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
    return row


CHECKS: tuple[Callable[[argparse.Namespace], Row], ...] = (
    check_cuda,
    check_precision,
    check_learner,
    check_fsdp,
    check_export,
)
VLLM_CHECKS: tuple[Callable[[argparse.Namespace], Row], ...] = (
    check_vllm_tests,
    check_bench_rollout,
    check_colocated,
)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every check, in order; the report as plain data."""
    import torch

    rows = [check(args) for check in CHECKS]
    reason = _vllm_skip(args)
    for check in VLLM_CHECKS:
        if reason is None:
            rows.append(check(args))
        else:
            rows.append(Row(check.__name__.removeprefix("check_"), "skip", note=reason))
    device = _device(args.smoke)
    return {
        "smoke": args.smoke,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
        "python": platform.python_version(),
        "shape": args.shape,
        "batch": [args.batch, args.prompt_tokens, args.response_tokens],
        "passed": all(row.status != "fail" for row in rows),
        "rows": [dataclasses.asdict(row) for row in rows],
    }


def table(report: dict[str, Any]) -> str:
    """The report as a text table."""
    lines = [
        f"GPU check on {report['device']} (torch {report['torch']}, CUDA {report['cuda'] or '-'})"
        + (" -- smoke mode" if report["smoke"] else ""),
        f"{'check':<14} {'status':<6} {'seconds':>8}  figures / note",
    ]
    for row in report["rows"]:
        figures = ", ".join(f"{k}={v}" for k, v in row["figures"].items())
        text = "; ".join(part for part in (figures, row["note"]) if part)
        lines.append(f"{row['name']:<14} {row['status']:<6} {row['seconds']:>8.1f}  {text}")
    lines.append("passed" if report["passed"] else "FAILED")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU")
    parser.add_argument("--shape", choices=sorted(SHAPES), default=None, help="default: 4b")
    parser.add_argument("--batch", type=int, default=None, help="sequences per update")
    parser.add_argument("--prompt-tokens", type=int, default=None)
    parser.add_argument("--response-tokens", type=int, default=None)
    parser.add_argument("--micro-batch", type=int, default=4, help="sequences per pass")
    parser.add_argument("--model", default=None, help="model of the colocated run (tiny)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    small = args.smoke
    args.shape = args.shape or ("tiny" if small else "4b")
    args.batch = args.batch or (4 if small else 8)
    args.prompt_tokens = args.prompt_tokens or (16 if small else 512)
    args.response_tokens = args.response_tokens or (16 if small else 512)
    report = run(args)
    print(table(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
