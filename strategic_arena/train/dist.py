"""Data parallelism under ``torchrun``: process group, object exchange, FSDP2 sharding.

A run started by ``torchrun --nproc-per-node N`` has ``WORLD_SIZE`` > 1 in its environment;
each rank then runs its own engine, plays its share of the step's games, exchanges episodes
with the others (:func:`all_gather_objects`) so that every rank scores and computes advantages
on the whole batch, and trains on its share of each minibatch with the policy sharded by FSDP2
(:func:`shard`). The backend is NCCL on GPUs and gloo on CPU (the CPU path exists for tests).

**Timeouts.** A collective that waits longer than the process group's timeout kills the run
(NCCL's default is 10 minutes). The trainer sets it from ``placement.dist_timeout_s`` and
keeps every rank-0-only wait shorter: evaluation games are spread over the ranks, a started server's
start-up timeout must be below it (checked by the config), checkpoints are written while the
others wait at one barrier.

**Teardown.** :func:`shutdown` destroys the process group at the end of a run, and a rank's
process then ends through :func:`exit_rank`, without interpreter finalization. Both are
needed. Left alive, gloo's worker threads are still joinable when C++ static destructors run,
and the process dies with SIGABRT ("terminate called without an active exception") after the
run has finished (2 of 4 runs on a loaded machine). Destroying the group made that rare but
not impossible: with a faulthandler, the abort still came in 2 of 60 two-rank runs beside
other work, always on rank 1 and always with no Python frame left, i.e. inside finalization,
after everything the run writes was closed. Skipping finalization removes the window itself:
0 aborts in 60 runs of the same loop (``docs/training.md``, "Eight ranks").
"""

from __future__ import annotations

import datetime
import logging
import os
import sys
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from strategic_arena._extras import require

T = TypeVar("T")


@dataclass(frozen=True)
class DistInfo:
    """This process's place in data parallelism."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def distributed(self) -> bool:
        """Whether there is more than one process."""
        return self.world_size > 1

    @property
    def main(self) -> bool:
        """Whether this is rank 0 (the one that logs and writes files)."""
        return self.rank == 0


#: Default process-group timeout (seconds): long enough for a vLLM server's start-up and a
#: large checkpoint write on rank 0, short enough that a dead rank is noticed within the hour.
DEFAULT_TIMEOUT_S = 1800.0


def init_distributed(
    use_cuda: bool, timeout_s: float = DEFAULT_TIMEOUT_S, gpu: int | None = None
) -> DistInfo:
    """Join the ``torchrun`` process group if there is one (idempotent).

    Args:
        use_cuda: NCCL on this rank's GPU instead of gloo on the CPU.
        timeout_s: how long a collective may wait for the other ranks before it fails.
        gpu: this rank's GPU index (default: ``LOCAL_RANK``).
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistInfo()
    torch = require("torch", "distributed training")
    dist = torch.distributed
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        if use_cuda:
            torch.cuda.set_device(local_rank if gpu is None else gpu)
        dist.init_process_group(
            backend="nccl" if use_cuda else "gloo",
            timeout=datetime.timedelta(seconds=timeout_s),
        )
    return DistInfo(rank, world_size, local_rank)


def collective_timeout_s(info: DistInfo) -> float | None:
    """The timeout the default process group actually runs with (``None`` without one).

    Read back from the backend, not from the config, so a log line states what holds.
    """
    if not info.distributed:
        return None
    torch = require("torch", "distributed training")
    dist = torch.distributed
    if not dist.is_initialized():
        return None
    group = dist.group.WORLD
    device = torch.device("cuda" if dist.get_backend() == "nccl" else "cpu")
    timeout: datetime.timedelta = group._get_backend(device).options._timeout
    return timeout.total_seconds()


def shutdown(info: DistInfo, *, wait: bool = True) -> None:
    """Leave the process group (idempotent; nothing to do without distribution).

    Args:
        info: this process's place (from :func:`init_distributed`).
        wait: first wait at a barrier for the other ranks (a normal end: no rank tears down
            while another still sends to it). ``False`` after an error, where the other
            ranks may be gone.
    """
    if not info.distributed:
        return
    dist = require("torch", "distributed training").distributed
    if not dist.is_initialized():
        return
    try:
        if wait:
            dist.barrier()
    finally:
        dist.destroy_process_group()


def exit_rank(status: int) -> NoReturn:
    """End this rank's process with ``status`` now, without interpreter finalization.

    For the end of a ``torchrun`` rank, after :func:`shutdown`: finalization is where torch's
    gloo objects can still abort a finished run (see the module docstring). Logging handlers
    and the standard streams are flushed first; the caller has closed its files (the trainer
    closes its metrics, checkpoints and stores before it returns).
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(status)


def all_gather_objects(obj: T, info: DistInfo) -> list[T]:
    """Every rank's ``obj``, in rank order (just ``[obj]`` without distribution)."""
    if not info.distributed:
        return [obj]
    torch = require("torch", "distributed training")
    gathered: list[Any] = [None] * info.world_size
    torch.distributed.all_gather_object(gathered, obj)
    return gathered


def broadcast_object(obj: T, info: DistInfo) -> T:
    """Rank 0's ``obj`` on every rank."""
    if not info.distributed:
        return obj
    torch = require("torch", "distributed training")
    box: list[Any] = [obj]
    torch.distributed.broadcast_object_list(box, src=0)
    result: T = box[0]
    return result


def barrier(info: DistInfo) -> None:
    """Wait for every rank."""
    if info.distributed:
        require("torch", "distributed training").distributed.barrier()


def shard(model: Any, info: DistInfo, *, param_dtype: Any = None) -> Any:
    """Shard ``model`` with FSDP2 (``fully_shard``): each decoder layer, then the root.

    Decoder layers are the modules whose class is listed in the model's ``_no_split_modules``
    (every transformers causal LM declares them). ``param_dtype`` sets the compute dtype of
    mixed precision (master weights stay in their dtype; gradients are reduced in float32).
    """
    torch = require("torch", "FSDP")
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    device = next(model.parameters()).device
    mesh = init_device_mesh(device.type, (info.world_size,))
    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
    layer_names = set(getattr(model, "_no_split_modules", None) or ())
    for module in model.modules():
        if type(module).__name__ in layer_names:
            fully_shard(module, mesh=mesh, mp_policy=policy)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    return model
