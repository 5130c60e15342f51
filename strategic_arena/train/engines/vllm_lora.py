"""Several policies on one vLLM server: a LoRA adapter each, loaded and replaced at run time.

Co-trained policies that share a base model (:mod:`strategic_arena.train.loop.cotrain`) are served
by one server started with ``--enable-lora`` (and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=1``, which
turns on vLLM's adapter routes). Each policy is an :class:`AdapterEngine`: a view of the shared
:class:`~strategic_arena.train.engines.vllm_engine.VLLMServerEngine` whose requests name the
policy's adapter as their ``model``, and whose weight sync (:meth:`AdapterEngine.load_adapter`)
saves the learner's adapter (``save_pretrained`` of the peft model) into a fresh folder per version
and loads it in place with ``POST /v1/load_lora_adapter`` (``load_inplace``), then drops the
server's prefix cache. A fresh folder per version matters: vLLM keys cached prefixes by the
adapter's name *and path*, so an adapter reloaded from the same path could reuse blocks
computed with its old weights. The base model's weights never change.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from strategic_arena.train.engines.engine import (
    BatchSampling,
    Generation,
    GenerationRequest,
    WeightSource,
)
from strategic_arena.train.engines.vllm_engine import (
    VLLMServerEngine,
    complete_all,
    on_every_server,
)
from strategic_arena.train.engines.vllm_server import ServerAdmin

if TYPE_CHECKING:
    import torch


log = logging.getLogger("strategic_arena.train")

#: ``--max-lora-rank`` must be one of vLLM's supported ranks (the least one that fits is used).
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def lora_server_args(ranks: Sequence[int], adapters: int) -> list[str]:
    """The server arguments serving ``adapters`` adapters of at most the largest rank."""
    largest = max(ranks)
    fits = next((rank for rank in VLLM_LORA_RANKS if rank >= largest), None)
    if fits is None:
        raise ValueError(f"LoRA rank {largest} exceeds vLLM's largest ({VLLM_LORA_RANKS[-1]})")
    return ["--enable-lora", "--max-loras", str(adapters), "--max-lora-rank", str(fits)]


#: The environment variable that turns on vLLM's ``/v1/load_lora_adapter`` route.
LORA_SERVER_ENV = {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1"}


class AdapterEngine:
    """One policy's engine: its LoRA adapter on a shared server (see the module docstring).

    Args:
        shared: the engine of the server (it owns and stops the server).
        adapter: the adapter's name (the policy's name).
        directory: where the adapter's versions are saved (the newest kept).
    """

    def __init__(self, shared: VLLMServerEngine, adapter: str, directory: str | Path) -> None:
        self.shared = shared
        self.adapter = adapter
        self.directory = Path(directory)
        self.weight_version: int | None = None
        self._loaded: Path | None = None

    async def agenerate(self, request: GenerationRequest, sampling: BatchSampling) -> Generation:
        """Complete one request with the policy's adapter."""
        generation = await self.shared.agenerate(request, sampling, model=self.adapter)
        return dataclasses.replace(generation, weight_version=self.weight_version)

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: BatchSampling
    ) -> list[Generation]:
        """Complete ``requests`` (all in flight at once); results in request order."""
        return complete_all(self.agenerate, self.aclose, requests, sampling)

    async def aclose(self) -> None:
        """Close the running loop's HTTP client (see :meth:`VLLMServerEngine.aclose`)."""
        await self.shared.aclose()

    def load_adapter(self, model: Any, version: int) -> None:
        """Save the peft ``model``'s adapter; load it into every server as ``version``."""
        if not hasattr(model, "peft_config"):
            raise TypeError(
                f"policy {self.adapter}: adapter serving needs a LoRA policy (lora.rank > 0)"
            )
        path = self.directory / f"{self.adapter}-v{version:06d}"
        model.save_pretrained(str(path))
        replace = self._loaded is not None

        def load(admin: ServerAdmin) -> None:
            admin.load_lora_adapter(self.adapter, str(path), replace=replace)
            admin.reset_prefix_cache()

        on_every_server(self.shared.admins, load)
        if self._loaded is not None and self._loaded != path:
            shutil.rmtree(self._loaded, ignore_errors=True)
        self._loaded = path
        self.weight_version = version

    def receive(self, source: WeightSource, version: int) -> None:
        """Load the learner's adapter (:meth:`load_adapter` of its model) as ``version``."""
        self.load_adapter(source.model, version)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]], version: int) -> None:
        """Full weights cannot go into an adapter: the trainer syncs by :meth:`load_adapter`."""
        raise TypeError(f"policy {self.adapter} is a LoRA adapter: sync it with load_adapter")

    def close(self) -> None:
        """Nothing of its own to release (the shared engine's owner stops the server)."""

    def sleep(self) -> None:
        """No sleep mode for shared servers."""

    def wake_up(self) -> None:
        """No sleep mode for shared servers."""

    def logprobs_match_learner(self, sampling: BatchSampling) -> bool:
        """As the shared server's."""
        return self.shared.logprobs_match_learner(sampling)
