"""Where a run's parts live -- which GPUs learn, which serve -- and whether that can work.

One node (docs/training.md, "Placement"):

* ``placement.learner_gpus`` -- the GPU of each learner rank (local rank ``i`` uses
  ``learner_gpus[i]``; empty: GPU ``LOCAL_RANK``, torchrun's default);
* ``placement.vllm_gpus`` -- the GPUs of the vLLM servers the trainer starts, cut into groups of
  ``vllm.tensor_parallel_size``: one server per group (data parallel over servers, the
  requests spread over them); empty: one server on what the trainer sees (GPU 0 on a GPU
  machine, the first learner's: colocated);
* colocated -- a server on a learner's GPU -- works with ``placement.vllm_sleep_level`` 1 or 2: the
  server sleeps (weights and KV cache released) during each update and wakes for the sync.

Before anything is loaded, :func:`check_placement` refuses what cannot work, each problem in
one line with its numbers: a layout whose memory estimate (:mod:`~strategic_arena.train.
memory`) exceeds a GPU; under multi-node torchrun a server the trainer would start on
loopback, or a loopback URL in ``vllm.base_urls`` (other nodes would talk to themselves); and
a disk weight sync whose folder has less free space than the weights.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from strategic_arena.door import read_json
from strategic_arena.train.config.sections import (
    ModelConfig,
    PlacementConfig,
    PPOConfig,
    PrecisionConfig,
    RolloutConfig,
    VllmConfig,
)
from strategic_arena.train.dist import (
    DistInfo,
    collective_timeout_s,
    init_distributed,
    shutdown,
)
from strategic_arena.train.memory import (
    DEFAULT_SERVER_SEQUENCES,
    GIB,
    KNOWN_SHAPES,
    Layout,
    MemoryEstimate,
    ModelShape,
    estimate,
    gib,
)

log = logging.getLogger("strategic_arena.train")


class PlacementError(ValueError):
    """A layout that cannot work (the message says why, with numbers)."""


@dataclass(frozen=True)
class World:
    """The torchrun world: all ranks, and the ranks on this node."""

    size: int = 1
    local_size: int = 1

    @classmethod
    def from_env(cls) -> World:
        """``WORLD_SIZE`` and ``LOCAL_WORLD_SIZE`` (1 and 1 without torchrun)."""
        size = int(os.environ.get("WORLD_SIZE", "1"))
        return cls(size, int(os.environ.get("LOCAL_WORLD_SIZE", str(size))))

    @property
    def multi_node(self) -> bool:
        """Whether the ranks span more than one node."""
        return self.size > self.local_size


def learner_gpu(placement: PlacementConfig, local_rank: int) -> int:
    """The GPU index of the learner of ``local_rank`` (``learner_gpus``, else the rank)."""
    gpus = placement.learner_gpus
    if not gpus:
        return local_rank
    if local_rank >= len(gpus):
        raise PlacementError(
            f"placement.learner_gpus {gpus} names {len(gpus)} GPUs but this is local rank "
            f"{local_rank}: start torchrun with --nproc-per-node {len(gpus)}"
        )
    return gpus[local_rank]


def server_groups(placement: PlacementConfig, tensor_parallel_size: int) -> list[list[int]]:
    """The GPUs of each server the trainer starts (``vllm_gpus`` by tensor-parallel size)."""
    size = max(tensor_parallel_size, 1)
    gpus = placement.vllm_gpus
    return [gpus[i : i + size] for i in range(0, len(gpus), size)]


def visible_devices(gpus: list[int]) -> str:
    """``CUDA_VISIBLE_DEVICES`` of a server on ``gpus`` (indices as the trainer sees them)."""
    inherited = os.environ.get("CUDA_VISIBLE_DEVICES")
    names = [n.strip() for n in inherited.split(",")] if inherited else None
    return ",".join(names[i] if names and i < len(names) else str(i) for i in gpus)


@dataclass(frozen=True)
class Workload:
    """What a run asks of its GPUs: the config sections the placement check reads."""

    model: ModelConfig
    precision: PrecisionConfig
    rollout: RolloutConfig
    vllm: VllmConfig
    placement: PlacementConfig
    ppo: PPOConfig


def model_shape(model: ModelConfig) -> ModelShape | None:
    """The policy's shape, read without loading or downloading the model.

    From its ``config.json`` (a directory, or the hub cache), else the table of known hub
    models; ``None`` when neither has it (``model: tiny`` included).
    """
    if model.name == "tiny":
        return None
    path = Path(model.name).expanduser() / "config.json"
    if path.is_file():
        return ModelShape.from_hf_config(read_json(path, "checkpoint"))
    try:  # a hub id already downloaded; never a download just for the estimate
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(model.name, "config.json")
    except (ImportError, ValueError):
        cached = None
    if isinstance(cached, str):
        # The hub cache's snapshot files are links into its blobs: read the blob itself.
        return ModelShape.from_hf_config(read_json(Path(cached).resolve(), "checkpoint"))
    return KNOWN_SHAPES.get(model.name)


def layout(cfg: Workload, world: World, gpu_bytes: int) -> Layout:
    """The memory layout of ``cfg`` on GPUs of ``gpu_bytes`` (see :mod:`.memory`)."""
    server_gpus = 0
    colocated = False
    if cfg.rollout.engine == "vllm" and not cfg.vllm.base_urls:
        if cfg.placement.vllm_gpus:
            server_gpus = len(cfg.placement.vllm_gpus)
            mine = set(cfg.placement.learner_gpus or range(world.local_size))
            colocated = bool(mine & set(cfg.placement.vllm_gpus))
        else:  # one server on the trainer's first GPU
            server_gpus, colocated = 1, True
    elif cfg.rollout.engine == "vllm":  # external servers: only their KV budget is unknown here
        server_gpus = 0
    sequence = cfg.rollout.max_sequence_tokens
    if cfg.vllm.max_model_len:
        sequence = min(sequence, cfg.vllm.max_model_len)
    master = _bytes(cfg.precision.master_dtype, 4)
    compute = _bytes(cfg.precision.compute_dtype, 2)  # auto: bfloat16 on a GPU
    return Layout(
        gpu_bytes=gpu_bytes,
        learners=world.size,
        colocated=colocated,
        server_gpus=server_gpus,
        tensor_parallel=cfg.vllm.tensor_parallel_size,
        server_utilization=cfg.vllm.gpu_memory_utilization,
        sleep_level=cfg.placement.vllm_sleep_level,
        micro_batch_size=cfg.ppo.micro_batch_size,
        sequence_tokens=sequence,
        compute_bytes=compute,
        server_bytes=_bytes(cfg.precision.server_dtype, compute),
        master_bytes=master,
        reference=cfg.ppo.kl_coef > 0,
        gradient_checkpointing=cfg.model.gradient_checkpointing,
        server_sequences=_server_sequences(cfg.vllm.server_args),
        enforce_eager=cfg.vllm.enforce_eager,
        offload_optimizer=cfg.placement.colocated_offload_optimizer,
    )


def _server_sequences(arguments: list[str]) -> int:
    """The servers' ``--max-num-seqs`` where their arguments set it, else the estimate's default."""
    for index, argument in enumerate(arguments):
        if argument.startswith("--max-num-seqs="):
            return int(argument.split("=", 1)[1])
        if argument == "--max-num-seqs" and index + 1 < len(arguments):
            return int(arguments[index + 1])
    return DEFAULT_SERVER_SEQUENCES


def _bytes(dtype: str, auto: int) -> int:
    """Bytes per value of a config dtype (``auto``: ``auto``)."""
    return auto if dtype == "auto" else 4 if dtype == "float32" else 2


def _loopback(url: str) -> bool:
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def placement_problems(
    cfg: Workload, world: World, shape: ModelShape | None, gpu: bool = False
) -> list[str]:
    """What cannot work across nodes and in the weight-sync folder (empty: nothing)."""
    return [
        *node_problems(cfg.rollout, cfg.vllm, world),
        *sync_dir_problems(cfg.rollout, cfg.vllm, cfg.precision, shape, gpu),
    ]


def node_problems(rollout: RolloutConfig, vllm: VllmConfig, world: World) -> list[str]:
    """What cannot work when torchrun spans several nodes (empty: nothing)."""
    problems = []
    if world.multi_node and rollout.engine == "vllm":
        if not vllm.base_urls:
            problems.append(
                f"torchrun spans {world.size // max(world.local_size, 1)} nodes but the "
                "trainer would start its vLLM server on 127.0.0.1 of rank 0's node, which the "
                "other nodes cannot reach: run the servers yourself and list them in "
                "vllm_base_urls by a host name every node resolves"
            )
        loopback = [url for url in vllm.base_urls if _loopback(url)]
        if loopback:
            problems.append(
                f"torchrun spans several nodes but vllm_base_urls has loopback URLs "
                f"{loopback}: each node would reach its own loopback; use a host name every "
                "node resolves"
            )
        if vllm.weight_sync == "disk" and vllm.weight_sync_dir is None:
            problems.append(
                "torchrun spans several nodes and weight_sync is disk, but weight_sync_dir is "
                "the node-local default (/dev/shm): set it to a folder on a shared file system"
            )
    return problems


def sync_dir_problems(
    rollout: RolloutConfig,
    vllm: VllmConfig,
    precision: PrecisionConfig,
    shape: ModelShape | None,
    gpu: bool = False,
) -> list[str]:
    """A disk weight sync whose folder has less free space than one weight file.

    ``gpu``: the learner computes on a GPU (``compute_dtype: auto`` is then bfloat16).
    """
    problems = []
    if rollout.engine == "vllm" and vllm.weight_sync == "disk" and shape is not None:
        from strategic_arena.train.engines.vllm_engine import default_sync_dir

        folder = Path(vllm.weight_sync_dir) if vllm.weight_sync_dir else default_sync_dir()
        existing = next((p for p in (folder, *folder.parents) if p.exists()), Path("/"))
        free = shutil.disk_usage(existing).free
        # weights travel in the server's dtype (auto: the compute dtype, bf16 on a GPU)
        size = _bytes(precision.server_dtype, _bytes(precision.compute_dtype, 2 if gpu else 4))
        needed = size * shape.parameters
        if free < needed:
            problems.append(
                f"weight_sync_dir {folder} has {gib(free)} free but one weight file needs "
                f"{gib(needed)} ({shape.parameters:,} parameters x {size} bytes): set "
                "weight_sync_dir to a larger folder (containers often give /dev/shm 64 MB)"
            )
    return problems


def gpu_bytes(placement: PlacementConfig, use_cuda: bool) -> int | None:
    """Memory of one GPU: ``gpu_memory_gib``, else what CUDA reports, else ``None`` (CPU)."""
    if placement.gpu_memory_gib is not None:
        return int(placement.gpu_memory_gib * GIB)
    if not use_cuda:
        return None
    import torch

    return int(torch.cuda.get_device_properties(0).total_memory)


def check_placement(cfg: Workload, world: World, use_cuda: bool) -> MemoryEstimate | None:
    """Refuse what cannot work (see the module docstring); the estimate when one was made.

    Raises:
        PlacementError: every problem found, with the estimate's table when memory is short.
    """
    shape = model_shape(cfg.model)
    problems = placement_problems(cfg, world, shape, use_cuda)
    result = None
    memory = gpu_bytes(cfg.placement, use_cuda)
    if cfg.placement.memory_check and memory is not None:
        if shape is None:
            log.info("memory estimate skipped: the shape of %r is unknown here", cfg.model.name)
        else:
            result = estimate(shape, layout(cfg, world, memory))
            if result.problems:
                problems += [*result.problems, "estimate:\n" + result.table()]
    if problems:
        raise PlacementError("this layout cannot work: " + "; ".join(problems))
    return result


def check_machine(cfg: Workload, world: World) -> tuple[bool, MemoryEstimate | None]:
    """Whether the learner computes on CUDA, and the memory estimate; before anything loads.

    ``model.device: cuda`` on a machine whose GPUs torch cannot use is refused; ``auto`` falls
    back to the CPU, loudly. Then :func:`check_placement` refuses a layout that cannot fit or
    cannot connect; rank 0 logs the estimate.

    Raises:
        PlacementError: the GPUs are unusable though asked for, or the layout cannot work.
    """
    import torch

    asked = cfg.model.device in ("cuda", "auto")
    use_cuda = asked and torch.cuda.is_available()
    unusable = cuda_unusable_reason() if asked else None
    if unusable is not None and cfg.model.device == "cuda":
        raise PlacementError(unusable)
    if unusable is not None:
        log.warning("!!! %s; training on the CPU !!!", unusable)
    result = check_placement(cfg, world, use_cuda)
    if result is not None and int(os.environ.get("RANK", "0")) == 0:
        log.info("memory estimate:\n%s", result.table())
    return use_cuda, result


def join_ranks(
    placement: PlacementConfig, rollout: RolloutConfig, use_cuda: bool
) -> tuple[int, DistInfo]:
    """This rank's GPU, and its place in the process group (joined under ``torchrun``).

    Raises:
        ValueError: asynchronous rollouts (``rollout.max_staleness`` >= 1) under ``torchrun``:
            they run in one process.
    """
    gpu = learner_gpu(placement, int(os.environ.get("LOCAL_RANK", "0")))
    info = init_distributed(use_cuda, placement.dist_timeout_s, gpu)
    if info.distributed and rollout.max_staleness > 0:
        shutdown(info, wait=False)
        raise ValueError("max_staleness >= 1 runs in one process: not under torchrun")
    if info.distributed and info.main:
        timeout = collective_timeout_s(info)
        log.info("process group: %d ranks, collective timeout %.0f s", info.world_size, timeout)
    return gpu, info


def cuda_unusable_reason() -> str | None:
    """Why NVIDIA GPUs this machine has are unusable to torch (``None``: usable or absent).

    vLLM 0.32 and the pinned torch are CUDA 13 builds: they need NVIDIA driver >= 580. With an
    older driver ``torch.cuda.is_available()`` is quietly False and a run would train on the
    CPU.
    """
    import torch

    has_gpu = Path("/dev/nvidiactl").exists() or shutil.which("nvidia-smi") is not None
    if not has_gpu or torch.cuda.is_available():
        return None
    built = torch.version.cuda or "no CUDA (a CPU build)"
    return (
        f"this machine has NVIDIA GPUs but torch {torch.__version__} (built for CUDA {built}) "
        "cannot use them; CUDA 13 builds need NVIDIA driver >= 580 (nvidia-smi shows the "
        "driver). Install a matching torch or driver, or set device: cpu"
    )
