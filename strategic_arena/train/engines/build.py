"""The rollout engine of a run, built from its sections and a model source.

:func:`build_engine` is the one way in: the transformers engine (sharing the learner's module in
one synchronous process, else a frozen copy refreshed by every sync) or vLLM servers (the
configured ones, or servers it starts, with the weight transport the run asks for). What it needs
of the policy is a :class:`ModelSource`, a small protocol, so this package never imports the
policy package.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from strategic_arena.train.config.sections import PlacementConfig, RolloutConfig, VllmConfig
from strategic_arena.train.dist import DistInfo, broadcast_object
from strategic_arena.train.engines.engine import Engine, TransformersEngine, stop_token_ids
from strategic_arena.train.engines.placement import server_groups, visible_devices

if TYPE_CHECKING:
    import torch

    from strategic_arena.train.engines.vllm_engine import WeightTransport
    from strategic_arena.train.engines.vllm_server import VLLMServer

log = logging.getLogger("strategic_arena.train")


class ModelSource(Protocol):
    """What an engine is built from: the policy as the engines see it."""

    @property
    def name(self) -> str:
        """What a server loads: a hub id or directory, or ``tiny`` (written out first)."""
        ...

    @property
    def trust_remote_code(self) -> bool:
        """Whether the model's own code may run (a server gets ``--trust-remote-code``)."""
        ...

    @property
    def tokenizer(self) -> Any:
        """The policy's tokenizer."""
        ...

    @property
    def device(self) -> Any:
        """Where the learner computes (an in-process copy goes there; NCCL pushes from there)."""
        ...

    @property
    def server_dtype(self) -> Any:
        """The dtype a server computes in (``precision.server_dtype`` resolved)."""
        ...

    @property
    def model(self) -> Any:
        """The learner's trainable module."""
        ...

    def full_weights(self) -> Iterable[tuple[str, torch.Tensor]]:
        """Every weight of the full model (a collective under FSDP: every rank calls it)."""
        ...

    def inference_copy(self) -> Any:
        """A frozen copy of the policy in the compute dtype, for an in-process engine."""
        ...

    def save_full(self, weights: dict[str, Any], path: str | Path) -> None:
        """Write ``weights`` as a plain transformers directory a server can load."""
        ...

    def context_length(self, budget: int) -> int:
        """``budget`` tokens, capped by the model's position limit."""
        ...


def build_engine(
    rollout: RolloutConfig,
    vllm: VllmConfig,
    placement: PlacementConfig,
    source: ModelSource,
    world: DistInfo,
    output_dir: Path,
    before_wake: Callable[[Sequence[str]], object] | None = None,
) -> Engine:
    """The configured rollout engine (see the module docstring).

    Args:
        rollout: the ``rollout`` section (which engine, batch sizes, staleness).
        vllm: the ``vllm`` section (servers, their options, the weight sync).
        placement: the ``placement`` section (server GPUs, sleep mode).
        source: the policy.
        world: this process's place among the ranks (rank 0 starts servers and pushes).
        output_dir: the run's folder (server logs, a tiny model written out for a server).
        before_wake: called before a sleeping server wakes (a colocated learner's check).
    """
    if rollout.engine != "transformers":
        return _vllm_engine(rollout, vllm, placement, source, world, output_dir, before_wake)
    if not world.distributed and rollout.max_staleness == 0:
        return TransformersEngine(
            source.model,
            source.tokenizer,
            max_batch_size=rollout.max_batch_size,
            shares_weights=True,
        )
    # Under FSDP each rank decodes with a full copy, refreshed by every sync; so does the
    # asynchronous loop, whose rollouts go on while the learner changes its weights.
    return TransformersEngine(
        source.inference_copy(), source.tokenizer, max_batch_size=rollout.max_batch_size
    )


def _vllm_engine(
    rollout: RolloutConfig,
    vllm: VllmConfig,
    placement: PlacementConfig,
    source: ModelSource,
    world: DistInfo,
    output_dir: Path,
    before_wake: Callable[[Sequence[str]], object] | None,
) -> Engine:
    """Rollouts from vLLM servers: the configured ones, or the ones rank 0 starts.

    Every rank sends its own games' requests; rank 0 alone pushes weights. A started server
    loads ``source.name`` (a tiny model is written out first) and gets the current weights by
    the first sync, resumed runs included.
    """
    from strategic_arena.train.engines.vllm_engine import VLLMServerEngine

    servers: list[VLLMServer] = []
    urls = list(vllm.base_urls)
    initial = None
    if not urls and source.name == "tiny":  # the server loads from disk: write it once
        initial = dict(source.full_weights())  # collective under FSDP: every rank
    if not urls and world.main:
        path = source.name
        if initial is not None:
            path = str(output_dir / "engine-init")
            source.save_full(initial, path)
        servers = _start_servers(path, rollout, vllm, placement, source, output_dir)
        urls = [server.base_url for server in servers]
    urls = broadcast_object(urls, world)
    return VLLMServerEngine(
        urls,
        vllm.served_model,
        stop_token_ids(source.tokenizer, source.model),
        transport=_transport(vllm, urls, source.device) if world.main else None,
        servers=servers,
        timeout_s=vllm.request_timeout_s,
        max_in_flight=rollout.max_batch_size,
        pushes=world.main,
        sleep_level=placement.vllm_sleep_level,
        weight_dtype=source.server_dtype,
        keep_requests=rollout.max_staleness > 0,
        before_wake=before_wake,
    )


def _transport(vllm: VllmConfig, urls: list[str], device: Any) -> WeightTransport:
    """How rank 0 pushes weights: NCCL from ``device``, or files in ``vllm.weight_sync_dir``."""
    if vllm.weight_sync == "nccl":
        from strategic_arena.train.engines.vllm_nccl import NCCLTransport

        return NCCLTransport(urls, device)
    from strategic_arena.train.engines.vllm_engine import DiskTransport

    return DiskTransport(vllm.weight_sync_dir)


def _start_servers(
    path: str,
    rollout: RolloutConfig,
    vllm: VllmConfig,
    placement: PlacementConfig,
    source: ModelSource,
    output_dir: Path,
) -> list[VLLMServer]:
    """Start one server per GPU group of ``placement`` (one on the default GPU when none).

    All at once, and wait until every one is healthy: start-up is rank 0's longest lone wait.
    """
    from strategic_arena.train.engines.vllm_nccl import server_args as nccl_server_args
    from strategic_arena.train.engines.vllm_server import VLLMServer, start_all

    groups: list[list[int] | None] = [*server_groups(placement, vllm.tensor_parallel_size)] or [
        None
    ]
    servers = []
    for index, group in enumerate(groups):
        env = dict(vllm.server_env)
        if group is not None:  # this server's GPUs (placement: vllm_gpus)
            env["CUDA_VISIBLE_DEVICES"] = visible_devices(group)
        name = "vllm-server.log" if len(groups) == 1 else f"vllm-server-{index}.log"
        servers.append(
            VLLMServer(
                path,
                python=vllm.python,
                served_name=vllm.served_model,
                dtype=str(source.server_dtype).removeprefix("torch."),
                max_model_len=vllm.max_model_len
                or source.context_length(rollout.max_sequence_tokens),
                gpu_memory_utilization=vllm.gpu_memory_utilization,
                tensor_parallel_size=vllm.tensor_parallel_size,
                enable_prefix_caching=vllm.enable_prefix_caching,
                enforce_eager=vllm.enforce_eager,
                enable_sleep_mode=placement.vllm_sleep_level > 0,
                extra_args=[
                    *vllm.server_args,
                    *(["--trust-remote-code"] if source.trust_remote_code else []),
                    *(nccl_server_args() if vllm.weight_sync == "nccl" else []),
                ],
                env=env,
                log_path=output_dir / name,
                startup_timeout_s=vllm.startup_timeout_s,
            )
        )
    logs = ", ".join(str(server.log_path) for server in servers)
    log.info("starting %d vLLM server(s) (log: %s)", len(servers), logs)
    started = time.perf_counter()
    start_all(servers)
    waited = time.perf_counter() - started
    urls = " ".join(server.base_url for server in servers)
    log.info("vLLM server(s) %s healthy after %.0f s", urls, waited)
    return servers
