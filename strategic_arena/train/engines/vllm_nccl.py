"""NCCL weight transfer into vLLM servers (``weight_sync: nccl``, GPUs only).

:class:`NCCLTransport` is a :class:`~strategic_arena.train.engines.vllm_engine.WeightTransport` that
broadcasts the learner's tensors from its GPU straight into the servers' workers, with nothing
written to disk. The NCCL side is vLLM's own trainer-side engine
(``vllm.distributed.weight_transfer.nccl_engine.NCCLTrainerWeightTransferEngine``, built through
``WeightTransferTrainerFactory``); this module only feeds it the weights and fans its control
calls out to every server over the routes of ``vllm/entrypoints/rl/online/api_router.py``:

* at the first push, once: ``GET /server_info`` (is the server set up for NCCL, same vLLM?),
  ``GET /get_world_size``, then ``POST /init_weight_transfer_engine`` on every server at once
  while the trainer opens its end. **One NCCL group spans the trainer and every server's
  workers**: the trainer is rank 0 and hosts the rendezvous (a TCP store on
  ``master_address:master_port``); server ``i``'s workers take the ranks after server ``i - 1``'s
  (its ``rank_offset``), so one broadcast reaches all servers;
* at every push: ``POST /start_weight_update``, ``POST /update_weights`` (which blocks in the
  workers' NCCL receive while the trainer broadcasts, packed into double buffers), then
  ``POST /finish_weight_update``; the caller
  (:meth:`~strategic_arena.train.engines.vllm_engine.VLLMServerEngine.load_weights`) pauses the
  servers before and resets their prefix cache, sets the weight version and resumes them after;
* at :meth:`NCCLTransport.close`: ``POST /shutdown_weight_transfer_engine`` (a dead server is
  not an error), then the trainer's communicator is destroyed.

**Requirements.** In the *trainer's* environment: a CUDA learner and the ``[vllm]`` extra with
the servers' vLLM version (``vllm>=0.32,<0.33``; the engine is imported only here, lazily). On
the servers: ``VLLM_SERVER_DEV_MODE=1`` (the RL routes) and ``--weight-transfer-config
'{"backend": "nccl"}'`` (:func:`server_args`). The servers must reach the trainer's rank-0 host
on ``master_address:master_port`` and over NCCL, and the trainer and every server worker must
be on *different* GPUs: NCCL refuses two ranks of one group on one device ("Duplicate GPU
detected"), so a server sharing the learner's GPU needs ``weight_sync: disk``.

**Memory.** vLLM's engine declares every tensor's name, dtype and shape before it sends any of
them, but the learner's weights come as a one-pass stream (under FSDP every tensor is a
gather). The first push therefore stages that stream on the CPU once, to learn its layout;
later pushes reuse the layout and stream tensor by tensor, so the learner's GPU never holds a
second copy of the model. The weights' names, dtypes and shapes must not change between pushes
(vLLM's engine checks every tensor against the layout).

**Stream order.** vLLM's packed producer copies each tensor on a CUDA stream of its own, which
does not wait for the learner's default stream: without a barrier it could read a weight while
``optimizer.step()`` (queued on the default stream, and returning before the GPU ran it) is
still writing it, and broadcast a half-updated tensor. :meth:`NCCLTransport.push` therefore
synchronises the learner's device before the broadcast starts (every queued kernel, the
optimizer step's included, has finished), and the weight source synchronises the current stream
after making each tensor it hands over (the cast or gather that made it has finished before
vLLM's stream reads it). ``tests/train/test_vllm_nccl.py`` records the order of these calls.

**Failures.** A push that fails leaves the servers' workers inside a half-done transfer, which
cannot be resumed: the transport then refuses further pushes with the first error, and the
servers have to be restarted. A server that dies *during* a broadcast can leave it waiting
(NCCL has no timeout here).

This path has not run here: the machines this was written on have no GPU. The disk transport
(:class:`~strategic_arena.train.engines.vllm_engine.DiskTransport`) is the tested one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from strategic_arena._extras import MissingExtraError, require
from strategic_arena.train.engines.vllm_server import (
    TESTED_VERSIONS,
    ServerAdmin,
    VLLMServerError,
    free_port,
)

if TYPE_CHECKING:
    import torch

log = logging.getLogger("strategic_arena.train")

#: The weight-transfer backend the servers must run (``--weight-transfer-config``).
BACKEND = "nccl"

_LOOPBACK = ("localhost", "::1", "0:0:0:0:0:0:0:1")


def server_args() -> list[str]:
    """The command-line arguments a vLLM server needs to receive weights over NCCL.

    The trainer appends them to a server it starts; servers run elsewhere need them too (and
    ``VLLM_SERVER_DEV_MODE=1`` in their environment, as for every weight sync).
    """
    return ["--weight-transfer-config", json.dumps({"backend": BACKEND})]


def root_url(base_url: str) -> str:
    """A server's root URL (``http://host:port``) from its OpenAI base URL or its root."""
    return base_url.rstrip("/").removesuffix("/v1")


def _is_loopback(host: str) -> bool:
    return host in _LOOPBACK or host.startswith("127.")


def rendezvous_address(base_urls: Sequence[str]) -> str:
    """This machine's address as the servers see it: loopback if they are all local.

    Otherwise the address of the interface that routes to the first remote server (found by
    connecting a UDP socket to it, which sends nothing); every server must reach it.
    """
    hosts = [urlsplit(root_url(url)).hostname or "127.0.0.1" for url in base_urls]
    remote = [host for host in hosts if not _is_loopback(host)]
    if not remote:
        return "127.0.0.1"
    family = socket.AF_INET6 if ":" in remote[0] else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect((remote[0], 9))
        return str(probe.getsockname()[0])


def _major_minor(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version string such as ``0.32.0+cpu`` (``None``: unparsable)."""
    match = re.match(r"\s*(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else None


class ServerGroupClient:
    """vLLM's ``VLLMWeightSyncClient`` over several servers: each call goes to all at once.

    It speaks the same HTTP routes and bodies as vLLM's ``HTTPVLLMWeightSyncClient`` (one
    server), with two differences: ``init_weight_transfer_engine`` gives each server its own
    ``rank_offset`` (its workers' first rank in the one NCCL group), and every call runs on all
    servers concurrently -- the servers' ``init`` and ``update_weights`` block inside NCCL
    calls that need every rank, so they cannot go one after the other.

    Args:
        base_urls: the servers' OpenAI base URLs or roots.
        timeout_s: timeout of each HTTP call (an ``update_weights`` lasts the whole broadcast).
    """

    def __init__(self, base_urls: Sequence[str], *, timeout_s: float = 600.0) -> None:
        if not base_urls:
            raise ValueError("NCCL weight sync needs at least one server")
        self.httpx = require("httpx", "NCCL weight sync")
        self.roots = [root_url(url) for url in base_urls]
        self.timeout_s = timeout_s
        self.world_sizes: list[int] = []
        self.errors: list[str] = []

    # -- discovery --------------------------------------------------------------------------------

    def _get(self, root: str, path: str) -> Any:
        """``GET root + path`` as JSON; a failure raises :class:`VLLMServerError`."""
        url = f"{root}{path}"
        try:
            response = self.httpx.get(url, timeout=self.timeout_s)
        except self.httpx.HTTPError as error:
            raise VLLMServerError(f"GET {url}: {error!r}") from None
        if response.status_code == 404:
            raise VLLMServerError(
                f"{url} is missing: start the server with VLLM_SERVER_DEV_MODE=1 "
                f"(vLLM {TESTED_VERSIONS})"
            )
        if response.status_code >= 400:
            raise VLLMServerError(f"GET {url}: HTTP {response.status_code} {response.text[:300]}")
        return response.json()

    def check_servers(self, trainer_version: str) -> None:
        """Refuse servers without the NCCL weight-transfer config or with another vLLM.

        Without this a misconfigured server would fail only inside the rendezvous, after the
        trainer had waited minutes for it. ``/server_info`` is a development route: where it
        cannot answer, the check is skipped and the rendezvous reports what goes wrong.
        """
        for root in self.roots:
            try:
                info = self._get(root, "/server_info?config_format=json")
                config = info["vllm_config"]
                transfer = config.get("weight_transfer_config")
            except (VLLMServerError, KeyError, TypeError, ValueError, AttributeError) as error:
                log.debug("no configuration check of %s: %s", root, error)
                continue
            backend = transfer.get("backend") if isinstance(transfer, Mapping) else None
            if backend != BACKEND:
                what = "without a weight-transfer config" if transfer is None else str(transfer)
                raise VLLMServerError(
                    f"the vLLM server at {root} runs {what}: NCCL weight sync needs it started "
                    f"with {' '.join(server_args())!r} "
                    "(strategic_arena.train.engines.vllm_nccl.server_args()), "
                    "or use weight_sync: disk"
                )
            served = str((info.get("system_env") or {}).get("vllm_version", ""))
            ours, theirs = _major_minor(trainer_version), _major_minor(served)
            if ours is not None and theirs is not None and ours != theirs:
                raise VLLMServerError(
                    f"the vLLM server at {root} runs vLLM {served} but the trainer has vLLM "
                    f"{trainer_version}: NCCL weight sync needs the same version on both sides "
                    f"(vLLM {TESTED_VERSIONS}; the trainer's comes with the [vllm] extra)"
                )

    def discover(self) -> list[int]:
        """Each server's number of workers (``/get_world_size``: all of its TP x PP x DP)."""
        self.world_sizes = [
            int(self._get(root, "/get_world_size")["world_size"]) for root in self.roots
        ]
        return self.world_sizes

    def rank_offsets(self) -> list[int]:
        """Each server's first rank in the NCCL group (the trainer is rank 0)."""
        if len(self.world_sizes) != len(self.roots):
            raise RuntimeError("discover() the servers' world sizes first")
        offsets, next_rank = [], 1
        for size in self.world_sizes:
            offsets.append(next_rank)
            next_rank += size
        return offsets

    # -- the VLLMWeightSyncClient protocol --------------------------------------------------------

    def _post(self, root: str, path: str, body: Mapping[str, Any] | None, timeout: float) -> None:
        url = f"{root}{path}"
        try:
            response = self.httpx.post(url, json=body, timeout=timeout)
        except self.httpx.HTTPError as error:
            raise VLLMServerError(f"POST {url}: {error!r}") from None
        if response.status_code == 404:
            raise VLLMServerError(
                f"{url} is missing: start the server with VLLM_SERVER_DEV_MODE=1 "
                f"(vLLM {TESTED_VERSIONS})"
            )
        if response.status_code >= 400:
            raise VLLMServerError(f"POST {url}: HTTP {response.status_code} {response.text[:300]}")

    def _post_all(
        self, path: str, bodies: Sequence[Mapping[str, Any] | None], timeout: float | None = None
    ) -> list[str]:
        """``POST`` to every server at once; the problems, one line per failed server."""
        wait = self.timeout_s if timeout is None else timeout
        with ThreadPoolExecutor(max_workers=len(self.roots)) as pool:
            futures = [
                pool.submit(self._post, root, path, body, wait)
                for root, body in zip(self.roots, bodies, strict=True)
            ]
        return [str(f.exception()) for f in futures if f.exception() is not None]

    def _fan_out(self, path: str, bodies: Sequence[Mapping[str, Any] | None]) -> None:
        problems = self._post_all(path, bodies)
        if problems:
            self.errors.extend(problems)
            raise VLLMServerError("; ".join(problems))

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        """Have every server's workers join the NCCL group, each at its own rank offset."""
        self._fan_out(
            "/init_weight_transfer_engine",
            [{"init_info": {**init_info, "rank_offset": off}} for off in self.rank_offsets()],
        )

    def start_weight_update(self) -> None:
        """Open a weight update on every server."""
        self._fan_out("/start_weight_update", [None] * len(self.roots))

    def update_weights(self, update_info: dict[str, Any] | list[dict[str, Any]]) -> None:
        """Have every server's workers receive the broadcast described by ``update_info``."""
        self._fan_out("/update_weights", [{"update_info": update_info}] * len(self.roots))

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        """Close the weight update on every server (and tag the weights if a version is given)."""
        body = None if weight_version is None else {"weight_version": weight_version}
        self._fan_out("/finish_weight_update", [body] * len(self.roots))

    def shutdown_weight_transfer_engine(self, timeout_s: float = 30.0) -> list[str]:
        """Release every server's end of the group; the servers that could not, one line each.

        Never raises: it runs while a run ends, when some servers may be dead already.
        """
        return self._post_all(
            "/shutdown_weight_transfer_engine", [None] * len(self.roots), timeout_s
        )


class _RoundSource:
    """The weights of one push as vLLM's ``WeightSource``: a declared layout, then one pass.

    vLLM's NCCL engine reads :meth:`metadata` (name, dtype, shape of every tensor) before it
    iterates, and iterates once per ``send_weights``. :meth:`stage` learns the layout by
    copying a first stream to the CPU; :meth:`set_round` hands over each later stream, which is
    then yielded tensor by tensor on the learner's device.
    """

    def __init__(
        self,
        vllm_base: ModuleType,
        device: torch.device,
        synchronize: Callable[[], None] = lambda: None,
    ) -> None:
        self.param_meta = vllm_base.ParamMeta
        self.device = device
        self.synchronize = synchronize
        self.layout: list[Any] = []
        self._pending: Iterable[tuple[str, torch.Tensor]] | None = None

    def stage(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Copy ``weights`` to the CPU, record their layout and make them the next round."""
        staged = [(name, tensor.detach().to("cpu")) for name, tensor in weights]
        self.layout = [self.param_meta(name, t.dtype, tuple(t.shape)) for name, t in staged]
        self._pending = staged

    def set_round(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Make ``weights`` (same layout as staged) the next round's stream."""
        self._pending = weights

    def clear(self) -> None:
        """Drop the round's weights (after a failure: nothing will send them)."""
        self._pending = None

    def metadata(self) -> list[Any]:
        """``ParamMeta`` (name, dtype, shape) of every tensor, in the order they come."""
        return list(self.layout)

    def __iter__(self) -> Iterator[tuple[str, torch.Tensor]]:
        pending, self._pending = self._pending, None
        if pending is None:
            raise RuntimeError("no weights for this round: the stream was already sent")
        for name, tensor in pending:
            ready = tensor.detach().to(self.device)
            self.synchronize()  # made on this stream; vLLM reads it on its own (module docstring)
            yield name, ready


class NCCLTransport:
    """Weights broadcast over NCCL by vLLM's trainer-side engine; see the module docstring.

    Construction checks the device and imports vLLM's engine; the first :meth:`push` opens the
    NCCL group (rank 0 only: under ``torchrun`` the other ranks never build a transport).

    Args:
        base_urls: the servers' OpenAI base URLs (``http://host:port/v1``), the engine's order.
        device: the learner's CUDA device (the broadcast's source).
        timeout_s: timeout of each HTTP call to a server (an ``update_weights`` call lasts the
            whole broadcast).
        master_address: the trainer's address for the rendezvous, as the servers reach it
            (default: :func:`rendezvous_address`).
        master_port: the rendezvous' TCP port on it (default: a free one).

    Raises:
        VLLMServerError: the device is not CUDA, CUDA is unavailable, or vLLM (the ``[vllm]``
            extra) or its NCCL weight-transfer engine cannot be imported.
    """

    def __init__(
        self,
        base_urls: Sequence[str],
        device: torch.device | str,
        *,
        timeout_s: float = 600.0,
        master_address: str | None = None,
        master_port: int | None = None,
    ) -> None:
        self.torch = require("torch", "NCCL weight sync")
        self.device = self.torch.device(device)
        if self.device.type != "cuda":
            raise VLLMServerError(
                f"weight_sync: nccl broadcasts from the learner's CUDA device, but the learner "
                f"is on {self.device}; use weight_sync: disk (it works everywhere, CPU included)"
            )
        if not self.torch.cuda.is_available():
            raise VLLMServerError(
                "weight_sync: nccl needs CUDA, which this torch cannot use (no GPU, or a CPU "
                "build of torch); use weight_sync: disk"
            )
        vllm = self._require("vllm")
        self.vllm_version = str(getattr(vllm, "__version__", "?"))
        self.vllm_base = self._require("vllm.distributed.weight_transfer.base")
        self.vllm_factory = self._require("vllm.distributed.weight_transfer.factory")
        self.vllm_nccl = self._require("vllm.distributed.weight_transfer.nccl_engine")
        self.client = ServerGroupClient(base_urls, timeout_s=timeout_s)
        self.master_address = master_address
        self.master_port = master_port
        self._source = _RoundSource(self.vllm_base, self.device, self._stream_done)
        self._engine: Any = None
        self._failure: str | None = None

    @staticmethod
    def _require(module: str) -> ModuleType:
        """Import a vLLM module, or say what the trainer's environment needs."""
        try:
            return require(module, "NCCL weight sync")
        except MissingExtraError as error:
            raise VLLMServerError(
                f"{error}. NCCL weight sync runs vLLM's weight-transfer engine in the trainer: "
                f"it needs the [vllm] extra with the servers' version (vLLM {TESTED_VERSIONS}), "
                "a CUDA build; or use weight_sync: disk"
            ) from error
        except ImportError as error:
            raise VLLMServerError(
                f"this vLLM has no NCCL weight transfer ({module}: {error}); install vLLM "
                f"{TESTED_VERSIONS} in the trainer's environment (the [vllm] extra), the "
                "servers' version"
            ) from error

    def _stream_done(self) -> None:
        """Wait for the work queued on the learner's current CUDA stream (one tensor's)."""
        self.torch.cuda.current_stream(self.device).synchronize()

    def _device_done(self) -> None:
        """Wait for every kernel queued on the learner's device (the optimizer step's)."""
        self.torch.cuda.synchronize(self.device)

    @property
    def connected(self) -> bool:
        """Whether the NCCL group is open."""
        return self._engine is not None

    def push(
        self, weights: Iterable[tuple[str, torch.Tensor]], admins: Sequence[ServerAdmin]
    ) -> None:
        """Broadcast ``weights`` into every (paused) server; the first call opens the group.

        Raises:
            VLLMServerError: a server refused, the rendezvous or the broadcast failed, or an
                earlier push failed (the servers then need a restart).
            ValueError: ``admins`` are not this transport's servers, in its order.
        """
        if self._failure is not None:
            raise VLLMServerError(
                "an earlier NCCL weight sync failed, which leaves the servers' workers inside a "
                f"half-done rendezvous or transfer; restart the servers. It was: {self._failure}"
            )
        roots = [admin.root_url for admin in admins]
        if roots != self.client.roots:
            raise ValueError(
                f"NCCLTransport was built for servers {self.client.roots} but pushes to {roots}"
            )
        with self.torch.cuda.device(self.device), self.torch.no_grad():
            self._device_done()  # the optimizer step has written every weight (stream order)
            if self._engine is None:
                self._source.stage(weights)
                self._connect()
            else:
                self._source.set_round(weights)
            try:
                self._engine.send_weights()
            except Exception as error:
                self._source.clear()
                self._failure = f"{type(error).__name__}: {error}"
                raise VLLMServerError(
                    f"the NCCL weight broadcast failed ({self._failure}); the servers have to be "
                    "restarted"
                ) from error

    def _connect(self) -> None:
        """Check the servers, then open the NCCL group (trainer rank 0, then every worker)."""
        client = self.client
        client.check_servers(self.vllm_version)
        workers = client.discover()
        address = self.master_address or rendezvous_address(client.roots)
        port = self.master_port or free_port(address)
        world_size = 1 + sum(workers)
        log.info(
            "NCCL weight sync: opening a group of %d ranks (the trainer on %s, %s server "
            "workers), rendezvous on %s:%d",
            world_size,
            self.device,
            "+".join(str(n) for n in workers),
            address,
            port,
        )
        info = self.vllm_nccl.NCCLTrainerInitInfo(
            master_address=address, master_port=port, world_size=world_size, rank=0
        )
        try:
            self._engine = self.vllm_factory.WeightTransferTrainerFactory.trainer_init(
                info, client=client, source=self._source
            )
        except Exception as error:
            self._source.clear()
            self._failure = f"{type(error).__name__}: {error}"
            said = f" The servers said: {'; '.join(client.errors)}." if client.errors else ""
            raise VLLMServerError(
                f"could not open the NCCL weight-transfer group ({self._failure}).{said} "
                f"Check that every server reaches {address}:{port} (NCCLTransport's "
                "master_address / master_port), that the trainer and each server worker are on "
                "different GPUs (NCCL refuses two ranks on one GPU), and that the servers run "
                f"{' '.join(server_args())!r} with vLLM {self.vllm_version}"
            ) from error

    def close(self) -> None:
        """Release the group on the servers (dead ones are skipped), then the trainer's end."""
        engine, self._engine = self._engine, None
        if engine is None:
            return
        try:
            problems = self.client.shutdown_weight_transfer_engine(
                timeout_s=min(self.client.timeout_s, 30.0)
            )
            for problem in problems:
                log.warning("NCCL weight sync: a server did not release the group: %s", problem)
        finally:
            with contextlib.suppress(Exception):
                engine.shutdown()
