"""GPU memory of a learner that shares its GPU with a sleeping vLLM server.

With ``placement.vllm_sleep_level`` > 0 the server releases its weights and KV cache during
each update and takes them back when it wakes. PyTorch's caching allocator keeps every block
the update used reserved (for the 4B one-GPU recipe: the update's peak, ~69 GiB of 79), so
the server cannot get its memory back unless the cache is emptied first -- TRL and verl both call
``torch.cuda.empty_cache()`` before ``wake_up``. :class:`ColocatedMemory` does the three
things around a wake:

1. :meth:`~ColocatedMemory.release` after each update: drop the update's garbage, empty the
   cache, and (``offload_optimizer``) move AdamW's moments to host memory;
2. :meth:`~ColocatedMemory.check_wake` before each wake: empty the cache again, and refuse
   with both numbers when the free memory is below what the server needs plus a margin for
   fragmentation (a clear error, not an out-of-memory error from inside the server). What the
   server needs is what it *released* when it fell asleep, measured (:func:`sleep_measured`:
   the device's free memory before and after ``/sleep``), not the estimate's weights and KV
   cache: a sleeping server keeps an amount nobody has measured on every card and vLLM
   version, so the estimate could refuse a wake that fits or pass one that does not. Before
   the first measured sleep the estimate stands in;
3. :meth:`~ColocatedMemory.restore` before the next update: the optimizer state back on the GPU.

:func:`learner_turn` is the one hand-off around an update: the engine sleeps (every rank waits
until no server is awake), the optimizer state comes back, the update runs, and what it left is
released for the wake that the weight sync ends with. :func:`colocated_memory` builds the
learner's side from the ``placement`` section and the memory estimate.

The CUDA calls go through a small :class:`CudaMemory` object, so the order of the calls can be
checked without a GPU.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from strategic_arena._extras import require
from strategic_arena.train.config.sections import PlacementConfig
from strategic_arena.train.dist import DistInfo, barrier
from strategic_arena.train.memory import GIB, MemoryEstimate, gib

if TYPE_CHECKING:
    from strategic_arena.train.engines.engine import Engine

log = logging.getLogger("strategic_arena.train")

#: Free memory kept on top of what a waking server asks for: the allocator rounds blocks and
#: the server's own start-up of its CUDA graphs and sampler needs some slack.
DEFAULT_WAKE_MARGIN_BYTES = 1 * GIB


class CudaMemory(Protocol):
    """The allocator calls the manager makes (``torch.cuda``'s, or a recorder's in tests)."""

    def empty_cache(self) -> None:
        """Return the allocator's unused cached blocks to the driver."""

    def mem_get_info(self) -> tuple[int, int]:
        """``(free, total)`` bytes of the device."""


class TorchCuda:
    """:class:`CudaMemory` of one CUDA device through ``torch.cuda``."""

    def __init__(self, device: Any) -> None:
        self.torch = require("torch", "colocated training")
        self.device = device

    def empty_cache(self) -> None:
        """``torch.cuda.empty_cache()``."""
        self.torch.cuda.empty_cache()

    def mem_get_info(self) -> tuple[int, int]:
        """``torch.cuda.mem_get_info(device)``."""
        free, total = self.torch.cuda.mem_get_info(self.device)
        return int(free), int(total)


class WakeMemoryError(RuntimeError):
    """The GPU has less free memory than the waking server needs."""


@dataclass
class ColocatedMemory:
    """The learner's side of sharing a GPU with a sleeping server (module docstring).

    Attributes:
        cuda: the allocator calls.
        weights_bytes: what the server's weights take back when they wake.
        kv_bytes: what its KV cache takes back (with the weights: its share
            ``vllm_gpu_memory_utilization`` of the GPU, less what it keeps asleep).
        margin_bytes: free memory required on top of what a wake takes.
        offload_optimizer: move the optimizer's state to host memory between updates.
    """

    cuda: CudaMemory
    weights_bytes: int
    kv_bytes: int
    margin_bytes: int = DEFAULT_WAKE_MARGIN_BYTES
    offload_optimizer: bool = False
    released_bytes: int | None = None

    def wake_bytes(self, tags: Sequence[str] = ()) -> int:
        """What waking ``tags`` (``weights``, ``kv_cache``; none: everything) takes back.

        With a measured release (:attr:`released_bytes`) the wake takes back exactly that: the
        weights their estimated share of it (at most all of it), the KV cache the rest.
        """
        weights, kv = self.weights_bytes, self.kv_bytes
        if self.released_bytes is not None:
            weights = min(weights, self.released_bytes)
            kv = self.released_bytes - weights
        parts = {"weights": weights, "kv_cache": kv}
        return sum(parts[tag] for tag in tags or parts)

    def free_bytes(self) -> int:
        """The device's free memory now (bytes)."""
        return self.cuda.mem_get_info()[0]

    def note_release(self, free_before: int, free_after: int) -> None:
        """Record what a server gave back by falling asleep: the rise of the free memory."""
        self.released_bytes = max(0, free_after - free_before)
        log.info(
            "the sleeping vLLM server released %s (estimate: %s)",
            gib(self.released_bytes),
            gib(self.weights_bytes + self.kv_bytes),
        )

    def release(self, optimizers: Iterable[Any] = ()) -> None:
        """After an update: free what it left (and offload ``optimizers``' state)."""
        if self.offload_optimizer:
            for optimizer in optimizers:
                move_optimizer_state(optimizer, "cpu")
        gc.collect()  # cycles can hold activations of a failed pass
        self.cuda.empty_cache()

    def check_wake(self, tags: Sequence[str] = ()) -> int:
        """Before waking ``tags``: empty the cache, check the free memory; returns it (bytes).

        Raises:
            WakeMemoryError: less free memory than the wake takes plus ``margin_bytes``.
        """
        self.cuda.empty_cache()
        free, total = self.cuda.mem_get_info()
        wake = self.wake_bytes(tags)
        if free < wake + self.margin_bytes:
            what = " and ".join(tags) if tags else "weights and KV cache"
            basis = (
                "the estimate"
                if self.released_bytes is None
                else f"it released {gib(self.released_bytes)} at /sleep"
            )
            raise WakeMemoryError(
                f"the vLLM server needs {gib(wake)} (+ {gib(self.margin_bytes)} margin) to wake "
                f"its {what} ({basis}), but only {gib(free)} of {gib(total)} is free after the "
                "update: "
                "lower vllm.gpu_memory_utilization or ppo.micro_batch_size, or set "
                "placement.colocated_offload_optimizer: true"
            )
        return free

    def restore(self, optimizers: Iterable[Any], device: Any) -> None:
        """Before an update: the optimizers' state back on ``device`` (when offloaded)."""
        if self.offload_optimizer:
            for optimizer in optimizers:
                move_optimizer_state(optimizer, device)


def sleep_measured(engine: Engine, colocated: ColocatedMemory | None) -> None:
    """``engine.sleep()``; a colocated learner records what the server released by it.

    Only a server that was awake and fell asleep in this call is measured (an engine already
    asleep, or one that does not sleep, leaves the last measurement as it was). Nothing else
    allocates on the learner's side between the two readings.
    """
    if colocated is None:
        engine.sleep()
        return
    awake = not getattr(engine, "asleep", True)
    before = colocated.free_bytes()
    engine.sleep()
    if awake and getattr(engine, "asleep", False):
        colocated.note_release(before, colocated.free_bytes())


def move_optimizer_state(optimizer: Any, device: Any) -> None:
    """Every tensor of ``optimizer``'s state moved to ``device`` in place (step counts too)."""
    for state in optimizer.state.values():
        for key, value in state.items():
            if hasattr(value, "to") and hasattr(value, "device"):
                state[key] = value.to(device)  # no copy when it is there already


def colocated_memory(
    placement: PlacementConfig, device: Any, estimate: MemoryEstimate | None
) -> ColocatedMemory | None:
    """The learner's side of a GPU shared with a sleeping server (``None``: no sleep mode).

    A wake's need is the estimate's server weights and KV cache (0 when the model's shape is
    unknown: the cache is still emptied and the margin still checked).
    """
    if not placement.vllm_sleep_level or device.type != "cuda":
        return None
    server = estimate.server if estimate is not None else {}
    return ColocatedMemory(
        TorchCuda(device),
        weights_bytes=server.get("weights", 0),
        kv_bytes=server.get("KV cache", 0),
        margin_bytes=int(placement.colocated_wake_margin_gib * GIB),
        offload_optimizer=placement.colocated_offload_optimizer,
    )


@contextmanager
def learner_turn(
    engine: Engine,
    colocated: ColocatedMemory | None,
    optimizers: Sequence[Any],
    device: Any,
    world: DistInfo,
    *,
    sleep_level: int,
) -> Iterator[None]:
    """The GPU handed from the engine to the learner for one update, and made ready to go back.

    The engine sleeps (with sleep mode, every rank waits at a barrier: no rank's update may start
    beside a server still awake; a colocated learner measures what the server released,
    :func:`sleep_measured`); a colocated learner's optimizer state comes back from host
    memory; after the update its leftovers are released so that the engine can wake.
    """
    sleep_measured(engine, colocated)
    if sleep_level:
        barrier(world)
    if colocated is not None:  # the optimizer's state back from host memory
        colocated.restore(optimizers, device)
    yield
    if colocated is not None:  # the update's cache back to the driver for the wake
        colocated.release(optimizers)
