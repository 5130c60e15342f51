"""Data parallelism under ``torchrun``: process group, object exchange, FSDP2 sharding.

A run started by ``torchrun --nproc-per-node N`` has ``WORLD_SIZE`` > 1 in its environment;
each rank then runs its own engine, plays its share of the step's games, exchanges episodes
with the others (:func:`all_gather_objects`) so that every rank scores and computes advantages
on the whole batch, and trains on its share of each minibatch with the policy sharded by FSDP2
(:func:`shard`). The backend is NCCL on GPUs and gloo on CPU (the CPU path exists for tests).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, TypeVar

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


def init_distributed(use_cuda: bool) -> DistInfo:
    """Join the ``torchrun`` process group if there is one (idempotent)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistInfo()
    torch = require("torch", "distributed training")
    dist = torch.distributed
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if not dist.is_initialized():
        if use_cuda:
            torch.cuda.set_device(local_rank)
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return DistInfo(rank, world_size, local_rank)


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
