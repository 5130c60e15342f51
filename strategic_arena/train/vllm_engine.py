"""In-process vLLM as the rollout engine, sharing one GPU with the learner (extra ``[vllm]``).

Tested version window: ``vllm>=0.8.5,<0.11`` (the V1 engine). The weight-update API of vLLM
changes between releases; within this window the pattern below is the one colocated RL
trainers use (TRL's ``vllm_mode="colocate"`` with sleep mode, verl's FSDP-vLLM sharding):

1. **In-process engine core.** ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` keeps the V1 engine core
   in this process, so the model module is reachable at
   ``llm.llm_engine.model_executor.driver_worker.worker.model_runner.model`` (or
   ``...driver_worker.model_runner.model`` through the worker wrapper). Under ``torchrun`` the
   engine uses ``distributed_executor_backend="external_launcher"``: one engine per rank, in the
   rank's process. Where the module is out of reach (tensor parallelism in worker processes),
   weights travel through ``llm.collective_rpc`` with a function run on every worker.
2. **Sleep mode.** ``LLM(enable_sleep_mode=True)``; after the rollouts ``llm.sleep(level=1)``
   offloads the weights to CPU and frees the KV cache, so the learner has the GPU;
   ``llm.wake_up(tags=["weights"])`` brings the weights back before the update is pushed, then
   ``llm.wake_up(tags=["kv_cache"])`` (plain ``wake_up()`` on versions without tags).
3. **Weight push.** ``model.load_weights(iterable of (name, tensor))`` with Hugging Face
   parameter names (vLLM's loaders map and fuse them: q/k/v into qkv_proj, gate/up into
   gate_up_proj), one tensor at a time so FSDP gathers stay small; then
   ``llm.reset_prefix_cache()``, since cached prefixes were computed with the old weights. The
   engine is never restarted and nothing is read from disk.
4. **Log-probs.** V1 returns *raw* log-probs (before temperature) by default. From 0.10.2 on the
   engine asks for ``logprobs_mode="processed_logprobs"`` (after temperature). Where the
   recorded log-probs may differ from the learner's ``log_softmax(logits / T)`` -- raw mode
   with T != 1, or top-k / top-p truncation -- :meth:`VLLMEngine.logprobs_match_learner` says
   so and the trainer (``old_logprobs: auto``) recomputes the behaviour log-probs with the
   learner. Either way the trainer logs ``train/logprob_ratio`` between the learner's and the
   engine's log-probs of the same tokens right after each sync.

Nothing here runs without a CUDA GPU and vLLM installed; tests marked ``gpu`` cover it.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from strategic_arena._extras import require
from strategic_arena.train.engine import (
    Generation,
    GenerationRequest,
    Sampling,
    stop_token_ids,
)

if TYPE_CHECKING:
    import torch

log = logging.getLogger("strategic_arena.train")

#: The tested vLLM versions: ``MIN_VERSION <= version < MAX_VERSION``.
MIN_VERSION = "0.8.5"
MAX_VERSION = "0.11"
#: The first version with ``logprobs_mode="processed_logprobs"``.
PROCESSED_LOGPROBS_VERSION = "0.10.2"
#: Tensors handed to ``load_weights`` per call.
WEIGHTS_PER_CALL = 16


def check_version(version: str) -> None:
    """Refuse a vLLM outside the tested window (its weight-update API differs)."""
    from packaging.version import Version

    if not Version(MIN_VERSION) <= Version(version) < Version(MAX_VERSION):
        raise RuntimeError(
            f"vLLM {version} is outside the tested window >={MIN_VERSION},<{MAX_VERSION}: "
            "install it with pip install 'strategic-arena[vllm]'"
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _load_weights_on_worker(worker: Any, weights: list[tuple[str, Any]]) -> None:
    """Run on each vLLM worker by ``collective_rpc``: load ``weights`` into its model."""
    worker.model_runner.model.load_weights(weights=weights)


class VLLMEngine:
    """vLLM's ``LLM`` in this process, with sleep mode and in-place weight updates.

    Args:
        model_path: hub id or directory of the initial weights (the architecture and config).
        tokenizer: the policy's tokenizer (stop ids).
        seed: engine seed (each request also carries its own sampling seed).
        gpu_memory_utilization: fraction of GPU memory vLLM may take.
        tensor_parallel_size: tensor-parallel degree.
        max_model_len: context length.
        enable_prefix_caching: reuse KV of shared prompt prefixes.
        enable_sleep_mode: offload between rollouts (see the module docstring).
        enforce_eager: no CUDA graphs.
        dtype: vLLM dtype name.
        trust_remote_code: allow hub model code.
        distributed: running under ``torchrun`` (one engine per rank, external launcher).
    """

    def __init__(
        self,
        model_path: str,
        tokenizer: Any,
        *,
        seed: int = 0,
        gpu_memory_utilization: float = 0.5,
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        enable_prefix_caching: bool = True,
        enable_sleep_mode: bool = True,
        enforce_eager: bool = False,
        dtype: str = "bfloat16",
        trust_remote_code: bool = False,
        distributed: bool = False,
    ) -> None:
        vllm = require("vllm", "the vLLM engine")
        check_version(vllm.__version__)
        from packaging.version import Version

        self.version = Version(vllm.__version__)
        self.vllm = vllm
        # The engine core must live in this process for in-place weight updates.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        kwargs: dict[str, Any] = {
            "model": model_path,
            "seed": seed,
            "gpu_memory_utilization": gpu_memory_utilization,
            "tensor_parallel_size": tensor_parallel_size,
            "max_model_len": max_model_len,
            "enable_prefix_caching": enable_prefix_caching,
            "enable_sleep_mode": enable_sleep_mode,
            "enforce_eager": enforce_eager,
            "dtype": dtype,
            "trust_remote_code": trust_remote_code,
        }
        if distributed:
            kwargs["distributed_executor_backend"] = "external_launcher"
        elif tensor_parallel_size == 1:
            # A single process still needs a (trivial) torch.distributed rendezvous address.
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", str(_free_port()))
        self.processed_logprobs = self.version >= Version(PROCESSED_LOGPROBS_VERSION)
        if self.processed_logprobs:
            kwargs["logprobs_mode"] = "processed_logprobs"
        self.llm = vllm.LLM(**kwargs)
        self.sleep_mode = enable_sleep_mode
        self.sleeping = False
        self.stop_ids = stop_token_ids(tokenizer)

    # -- generation ----------------------------------------------------------------------------

    def logprobs_match_learner(self, sampling: Sampling) -> bool:
        """Whether vLLM's recorded log-probs equal the learner's (module docstring, point 4)."""
        untruncated = sampling.top_k <= 0 and sampling.top_p >= 1.0
        if not untruncated:
            return False
        return self.processed_logprobs or sampling.logprob_temperature == 1.0

    def _params(self, request: GenerationRequest, sampling: Sampling, budget: int) -> Any:
        # Prompts go in and responses come out as token ids (detokenize=False): the policy's
        # tokenizer is the only one that reads text.
        return self.vllm.SamplingParams(
            n=1,
            temperature=max(0.0, sampling.temperature),
            top_p=sampling.top_p,
            top_k=sampling.top_k if sampling.top_k > 0 else -1,
            max_tokens=budget,
            seed=request.seed,
            logprobs=0,
            stop_token_ids=sorted(self.stop_ids),
            detokenize=False,
        )

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: Sampling
    ) -> list[Generation]:
        """Complete ``requests`` in one ``llm.generate`` call (continuous batching inside)."""
        if self.sleeping:
            self.wake_up()
        results: list[Generation | None] = [None] * len(requests)
        prompts, params, where = [], [], []
        for index, request in enumerate(requests):
            budget = (
                sampling.max_new_tokens
                if request.max_new_tokens is None
                else request.max_new_tokens
            )
            if budget <= 0:
                results[index] = Generation([], [], "length")
                continue
            prompts.append({"prompt_token_ids": list(request.prompt_ids)})
            params.append(self._params(request, sampling, budget))
            where.append(index)
        if prompts:
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            for index, output in zip(where, outputs, strict=True):
                completion = output.outputs[0]
                tokens = [int(t) for t in completion.token_ids]
                logprobs = [
                    float(step[token].logprob)
                    for token, step in zip(tokens, completion.logprobs or [], strict=False)
                ]
                if len(logprobs) != len(tokens):
                    raise RuntimeError("vLLM returned no log-prob for some sampled tokens")
                stopped = completion.finish_reason == "stop"
                results[index] = Generation(tokens, logprobs, "stop" if stopped else "length")
        return [result for result in results if result is not None]

    # -- memory and weights ------------------------------------------------------------------

    def sleep(self) -> None:
        """Offload weights to CPU and drop the KV cache (level 1), if sleep mode is on."""
        if self.sleep_mode and not self.sleeping:
            self.llm.sleep(level=1)
            self.sleeping = True

    def _wake(self, tags: list[str]) -> None:
        try:
            self.llm.wake_up(tags=tags)
        except TypeError:  # a version without tags wakes everything at once
            self.llm.wake_up()

    def wake_up(self) -> None:
        """Restore weights and KV cache."""
        if self.sleeping:
            self._wake(["weights"])
            self._wake(["kv_cache"])
            self.sleeping = False

    def _model(self) -> Any:
        """The in-process model module, or ``None`` when it lives in worker processes."""
        executor = getattr(self.llm.llm_engine, "model_executor", None)
        worker = getattr(executor, "driver_worker", None)
        for holder in (getattr(worker, "worker", None), worker):
            runner = getattr(holder, "model_runner", None)
            model = getattr(runner, "model", None)
            if model is not None and hasattr(model, "load_weights"):
                return model
        return None

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Push new weights into the running engine, then reset the prefix cache."""
        if self.sleeping:
            self._wake(["weights"])
        model = self._model()
        chunk: list[tuple[str, Any]] = []

        def flush() -> None:
            if not chunk:
                return
            if model is not None:
                model.load_weights(weights=chunk)
            else:
                cpu = [(name, tensor.detach().to("cpu")) for name, tensor in chunk]
                self.llm.collective_rpc(_load_weights_on_worker, args=(cpu,))
            chunk.clear()

        for name, tensor in weights:
            chunk.append((name, tensor))
            if len(chunk) >= WEIGHTS_PER_CALL:
                flush()
        flush()
        if self.sleeping:
            self._wake(["kv_cache"])
            self.sleeping = False
        self.llm.reset_prefix_cache()
