"""NCCL weight transfer into vLLM servers (``weight_sync: nccl``, GPUs only).

The trainer side is vLLM's own: :class:`NCCLTransport` drives
``vllm.distributed.weight_transfer.nccl_engine.NCCLTrainerWeightTransferEngine`` through the
server's HTTP routes (``/init_weight_transfer_engine`` once, then ``/start_weight_update``,
``/update_weights``, ``/finish_weight_update`` per sync), broadcasting every tensor from the
learner's GPU to the server's workers; nothing is written to disk. It therefore needs, in the
*trainer's* environment, the ``[vllm]`` extra with the same vLLM version as the servers
(``vllm>=0.32,<0.33``) and a CUDA device; the servers need ``--weight-transfer-config
'{"backend": "nccl"}'`` (:func:`server_args`; the trainer adds it to a server it starts) and
must reach the trainer's address (one NCCL group per server, rendezvous on a free TCP port).

This path has not run here: the machines this was written on have no GPU. The disk transport
(:class:`~strategic_arena.train.vllm_engine.DiskTransport`) is the tested one.
"""

from __future__ import annotations

import contextlib
import importlib
import socket
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from strategic_arena._extras import require
from strategic_arena.train.vllm_server import (
    TESTED_VERSIONS,
    ServerAdmin,
    VLLMServerError,
    free_port,
)

if TYPE_CHECKING:
    import torch


def server_args() -> list[str]:
    """What a vLLM server needs on its command line to receive weights over NCCL."""
    return ["--weight-transfer-config", '{"backend": "nccl"}']


def _address_towards(host: str) -> str:
    """This machine's address as seen from ``host`` (loopback for a local server)."""
    if host in ("127.0.0.1", "localhost", "::1"):
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((host, 9))  # no packet is sent: this only picks the route
        return str(probe.getsockname()[0])


class NCCLTransport:
    """Weights broadcast over NCCL with vLLM's trainer-side engine; see the module docstring.

    Args:
        base_urls: the servers' OpenAI base URLs (one NCCL group each).
        device: the learner's device (must be CUDA).
        timeout_s: timeout of each HTTP call to a server.
    """

    def __init__(self, base_urls: Sequence[str], device: Any, *, timeout_s: float = 600) -> None:
        torch = require("torch", "NCCL weight sync")
        if getattr(device, "type", str(device)) != "cuda" or not torch.cuda.is_available():
            raise VLLMServerError(
                "weight_sync: nccl needs the learner on a CUDA device; use weight_sync: disk on CPU"
            )
        self.vllm = require("vllm", "NCCL weight sync")
        self.base_urls = list(base_urls)
        self.timeout_s = timeout_s
        self._engines: list[Any] | None = None

    def _modules(self) -> tuple[Any, Any, Any]:
        """The NCCL engine module of vLLM, its HTTP client class and the WeightSource base."""
        try:
            package = "vllm.distributed.weight_transfer"
            base = importlib.import_module(f"{package}.base")
            clients = importlib.import_module(f"{package}.clients")
            nccl_engine = importlib.import_module(f"{package}.nccl_engine")
        except ImportError as error:
            raise VLLMServerError(
                f"this vLLM has no NCCL weight transfer ({error}); install vLLM {TESTED_VERSIONS} "
                "in the trainer's environment (the [vllm] extra)"
            ) from None
        return nccl_engine, clients.HTTPVLLMWeightSyncClient, base

    def _source(self, pairs: list[tuple[str, torch.Tensor]]) -> Any:
        """A vLLM ``WeightSource`` over the materialized ``(name, tensor)`` pairs of one sync."""
        _, _, base = self._modules()

        class PairsSource(base.WeightSource):  # type: ignore[misc,name-defined]
            """The learner's full weights of this sync, in a fixed order."""

            def metadata(self) -> list[Any]:
                return [base.ParamMeta(name, t.dtype, tuple(t.shape)) for name, t in pairs]

            def __iter__(self) -> Iterator[tuple[str, torch.Tensor]]:
                return iter(pairs)

        return PairsSource()

    def _connect(self, base_url: str, source: Any) -> Any:
        """Open the NCCL group with one server (the trainer is rank 0, its workers follow)."""
        nccl_engine, client_class, _ = self._modules()
        root = base_url.rstrip("/").removesuffix("/v1")
        admin = ServerAdmin(base_url, timeout_s=self.timeout_s)
        workers = int(admin._call("GET", "/get_world_size")["world_size"])
        host = urlsplit(root).hostname or "127.0.0.1"
        address = _address_towards(host)
        info = nccl_engine.NCCLTrainerInitInfo(
            master_address=address,
            master_port=free_port("0.0.0.0" if address != "127.0.0.1" else address),
            world_size=workers + 1,
            rank=0,
        )
        client = client_class(root, timeout=self.timeout_s)
        return nccl_engine.NCCLTrainerWeightTransferEngine.trainer_init(
            info, client=client, source=source
        )

    def push(
        self, weights: Iterable[tuple[str, torch.Tensor]], admins: Sequence[ServerAdmin]
    ) -> None:
        """Broadcast the weights to every server (the first call opens the NCCL groups)."""
        pairs = [(name, tensor.detach().contiguous()) for name, tensor in weights]
        source = self._source(pairs)
        if self._engines is None:
            self._engines = [self._connect(url, source) for url in self.base_urls]
        for engine in self._engines:
            engine.source = source
            engine.send_weights()

    def close(self) -> None:
        """Shut the transfer engines down on the servers (a dead server is not an error)."""
        for engine in self._engines or []:
            with contextlib.suppress(Exception):
                engine.client.shutdown_weight_transfer_engine()
        self._engines = None
