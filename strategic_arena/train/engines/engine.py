r"""Generation engines: token ids in, sampled token ids and their log-probs out.

An :class:`Engine` turns a batch of :class:`GenerationRequest` (prompt token ids, a sampling
seed, a token budget) into :class:`Generation` objects (response token ids, the log-probability
of each under the sampling policy, why generation stopped). Two engines implement it:

* :class:`TransformersEngine` (this module): a batched sampling loop over a transformers model
  with its KV cache, on CPU or GPU; used by tests, tiny runs and evaluation of frozen models;
* :class:`strategic_arena.train.engines.vllm_engine.VLLMServerEngine`: stock vLLM servers over HTTP,
  each request sent on its own (``agenerate``) so the server's continuous batching sees them
  all.

Every generation records the ``weight_version`` of the weights that sampled it: the trainer step
whose update they hold (0: the initial weights).

**Log-probs.** The log-prob recorded for a token is ``log_softmax(logits / temperature)`` at
that token, before top-k / top-p truncation: the same quantity the learner computes
(:func:`strategic_arena.train.policy.learner.sequence_logprobs`), so the first PPO ratio of a
step is 1 up to floating-point noise. Greedy decoding (temperature 0) records
``log_softmax(logits)``.

**Randomness.** Every request carries its own seed and gets its own ``torch.Generator``: what a
request samples does not depend on which other requests share its batch, and the global RNG is
never touched.

:class:`EngineClient` lets the concurrently running games of a rollout share one engine: each
player ``await``\ s its request, and the client hands every request pending at that moment to
the engine as one batch.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from strategic_arena._extras import require
from strategic_arena.train.sampling import BatchSampling as BatchSampling  # the engines' sampling

if TYPE_CHECKING:
    import torch

FinishReason = Literal["stop", "length"]


@dataclass(frozen=True)
class GenerationRequest:
    """One prompt to complete.

    Attributes:
        prompt_ids: token ids of the prompt (chat template applied).
        seed: seed of this request's sampling generator.
        max_new_tokens: token budget (``None``: the batch's :class:`BatchSampling` default).
    """

    prompt_ids: Sequence[int]
    seed: int
    max_new_tokens: int | None = None


@dataclass(frozen=True)
class Generation:
    """A sampled response.

    Attributes:
        token_ids: the response's tokens (the stop token included when one was sampled).
        logprobs: log-prob of each token under the sampling policy (see the module docstring).
        finish_reason: ``stop`` (a stop token) or ``length`` (the budget ran out).
        weight_version: the version of the weights that sampled it (``None``: unknown).
    """

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    weight_version: int | None = None


class WeightSource(Protocol):
    """The learner's side of a weight sync, as an engine sees it (never the policy's class)."""

    @property
    def model(self) -> Any:
        """The trainable module (a peft model under LoRA)."""
        ...

    def full_weights(self) -> Iterable[tuple[str, torch.Tensor]]:
        """Every weight of the full model, ``(name, tensor)`` with Hugging Face names."""
        ...


class Engine(Protocol):
    """What the trainer needs from a generation engine.

    An engine may also offer ``async agenerate(request, sampling) -> Generation`` (one request,
    for servers that batch continuously themselves); :class:`EngineClient` then sends each
    request on its own instead of gathering batches.
    """

    weight_version: int | None
    """The version of the weights it generates with (``None``: unknown)."""

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: BatchSampling
    ) -> list[Generation]:
        """Complete every request (results in request order)."""
        ...

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]], version: int) -> None:
        """Replace the policy's weights by ``(name, tensor)`` pairs (Hugging Face names)."""
        ...

    def receive(self, source: WeightSource, version: int) -> None:
        """Take the learner's current weights as ``version``, as this engine takes them.

        Full weights pushed or copied (:meth:`load_weights`), a LoRA adapter loaded, or only the
        version recorded by an engine that shares the learner's module.
        """
        ...

    def close(self) -> None:
        """Release what the engine holds (servers it started); it is unusable afterwards."""
        ...

    def sleep(self) -> None:
        """Free accelerator memory while the learner works (no-op where meaningless)."""
        ...

    def wake_up(self) -> None:
        """Undo :meth:`sleep`."""
        ...

    def logprobs_match_learner(self, sampling: BatchSampling) -> bool:
        """Whether recorded log-probs are the learner's quantity (see the module docstring)."""
        ...


def stop_token_ids(tokenizer: Any, model: Any = None) -> set[int]:
    """The ids that end a response: the tokenizer's EOS and the generation config's EOS ids."""
    ids: set[int] = set()
    if getattr(tokenizer, "eos_token_id", None) is not None:
        ids.add(int(tokenizer.eos_token_id))
    config = getattr(model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    if isinstance(eos, int):
        ids.add(eos)
    elif isinstance(eos, list | tuple):
        ids.update(int(token) for token in eos)
    if not ids:
        raise ValueError("the tokenizer has no EOS token: responses could never end")
    return ids


def filter_logits(
    logits: torch.Tensor, top_k: int, top_p: float, min_p: float = 0.0
) -> torch.Tensor:
    """``logits`` (rows x vocab) with tokens outside the top-k / nucleus / min-p set to ``-inf``.

    Applied in vLLM's order: top-k, top-p, then min-p (tokens below ``min_p`` times the most
    likely one's probability).
    """
    torch = require("torch", "generation")
    if top_k > 0 and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # Drop a token when the tokens before it already reach top_p (the first always stays).
        drop = probs.cumsum(dim=-1) - probs >= top_p
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    if min_p > 0.0:
        probs = torch.softmax(logits, dim=-1)
        floor = min_p * probs.max(dim=-1, keepdim=True).values
        logits = logits.masked_fill(probs < floor, float("-inf"))
    return logits


class TransformersEngine:
    """Batched sampling with a transformers causal LM and its KV cache (CPU or GPU).

    Args:
        model: the policy (``PreTrainedModel``).
        tokenizer: its tokenizer (stop and pad ids).
        max_batch_size: most sequences decoded together (longer lists are split, shortest
            prompts first to limit padding).
        shares_weights: ``model`` is the learner's own module (single process, no LoRA
            merge): :meth:`receive` then has nothing to copy, only the version to record.
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, max_batch_size: int = 64, shares_weights: bool = False
    ) -> None:
        self.torch = require("torch", "the transformers engine")
        self.model = model
        self.shares_weights = shares_weights
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        self.stop_ids = stop_token_ids(tokenizer, model)
        pad = getattr(tokenizer, "pad_token_id", None)
        self.pad_id = int(pad) if pad is not None else min(self.stop_ids)
        self.weight_version: int | None = None
        # The asynchronous loop loads weights from the learner's thread while a rollout thread
        # generates: a weight update lands between two engine calls, never inside one.
        self._lock = threading.Lock()

    @property
    def device(self) -> torch.device:
        """Where the model lives."""
        return next(self.model.parameters()).device  # type: ignore[no-any-return]

    def logprobs_match_learner(self, sampling: BatchSampling) -> bool:
        """Always: the recorded log-probs are ``log_softmax(logits / T)``."""
        return True

    def sleep(self) -> None:
        """Nothing to free: the model is needed as it is."""

    def wake_up(self) -> None:
        """Nothing to restore."""

    def close(self) -> None:
        """Nothing to release."""

    def _stopped(self, tokens: list[int], stop: Sequence[str]) -> bool:
        """Whether the last token completed a stop string (it was not in the text before)."""
        if not stop:
            return False
        # The text of the last few tokens is enough: a stop string is short.
        tail = self.tokenizer.decode(tokens[-16:], skip_special_tokens=True)
        before = self.tokenizer.decode(tokens[-16:-1], skip_special_tokens=True)
        return any(s in tail and s not in before for s in stop)

    def receive(self, source: WeightSource, version: int) -> None:
        """Copy the learner's weights in, or only record ``version`` when they are shared."""
        if self.shares_weights:
            self.weight_version = version
        else:
            self.load_weights(source.full_weights(), version)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]], version: int) -> None:
        """Copy ``(name, tensor)`` pairs into the model's parameters and buffers.

        Waits for a running :meth:`generate` call to end (a lock): every response of a call is
        sampled by one version of the weights.
        """
        own = self.model.state_dict(keep_vars=True)  # tied weights appear under both names
        with self._lock, self.torch.no_grad():
            self.weight_version = version
            for name, tensor in weights:
                target = own.get(name)
                if target is None:
                    raise KeyError(f"the engine's model has no parameter {name!r}")
                target.copy_(tensor.to(device=target.device, dtype=target.dtype))

    def generate(
        self, requests: Sequence[GenerationRequest], sampling: BatchSampling
    ) -> list[Generation]:
        """Complete ``requests``; see the module docstring for log-probs and seeds.

        The whole call holds the weights' lock (see :meth:`load_weights`).
        """
        order = sorted(range(len(requests)), key=lambda i: len(requests[i].prompt_ids))
        results: list[Generation | None] = [None] * len(requests)
        with self._lock:
            for start in range(0, len(order), self.max_batch_size):
                chunk = order[start : start + self.max_batch_size]
                batch = self._generate_batch([requests[i] for i in chunk], sampling)
                for index, generation in zip(chunk, batch, strict=True):
                    results[index] = generation
        return [result for result in results if result is not None]

    def _generate_batch(
        self, requests: Sequence[GenerationRequest], sampling: BatchSampling
    ) -> list[Generation]:
        """One left-padded batch decoded token by token with the KV cache."""
        torch = self.torch
        device = self.device
        batch = len(requests)
        budgets = [
            sampling.max_new_tokens if r.max_new_tokens is None else r.max_new_tokens
            for r in requests
        ]
        width = max(len(r.prompt_ids) for r in requests)
        input_ids = torch.full((batch, width), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((batch, width), dtype=torch.long)
        for row, request in enumerate(requests):
            if request.prompt_ids:
                input_ids[row, width - len(request.prompt_ids) :] = torch.tensor(
                    list(request.prompt_ids), dtype=torch.long
                )
                attention_mask[row, width - len(request.prompt_ids) :] = 1
        input_ids = input_ids.to(device)
        attention_mask = attention_mask.to(device)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        generators = [torch.Generator(device=device).manual_seed(r.seed) for r in requests]
        tokens: list[list[int]] = [[] for _ in requests]
        logprobs: list[list[float]] = [[] for _ in requests]
        finish: list[FinishReason | None] = [
            "length" if budget <= 0 else None for budget in budgets
        ]
        temperature = sampling.logprob_temperature
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                past = None
                step_ids, step_positions = input_ids, position_ids
                while any(reason is None for reason in finish):
                    out = self.model(
                        input_ids=step_ids,
                        attention_mask=attention_mask,
                        position_ids=step_positions,
                        past_key_values=past,
                        use_cache=True,
                    )
                    past = out.past_key_values
                    logits = out.logits[:, -1, :].float() / temperature
                    logp = torch.log_softmax(logits, dim=-1)
                    if sampling.greedy:
                        chosen = logits.argmax(dim=-1)
                    else:
                        probs = torch.softmax(
                            filter_logits(logits, sampling.top_k, sampling.top_p, sampling.min_p),
                            dim=-1,
                        )
                        chosen = torch.zeros(batch, dtype=torch.long, device=device)
                        for row in range(batch):
                            if finish[row] is None:
                                chosen[row] = torch.multinomial(
                                    probs[row], 1, generator=generators[row]
                                )[0]
                    chosen_list = chosen.tolist()
                    chosen_logp = logp.gather(-1, chosen[:, None])[:, 0].tolist()
                    for row in range(batch):
                        if finish[row] is not None:
                            continue
                        token = int(chosen_list[row])
                        tokens[row].append(token)
                        logprobs[row].append(float(chosen_logp[row]))
                        if token in self.stop_ids or self._stopped(tokens[row], sampling.stop):
                            finish[row] = "stop"
                        elif len(tokens[row]) >= budgets[row]:
                            finish[row] = "length"
                    step_ids = chosen[:, None]
                    step_positions = step_positions[:, -1:] + 1
                    attention_mask = torch.cat(
                        [attention_mask, attention_mask.new_ones((batch, 1))], dim=-1
                    )
        finally:
            self.model.train(was_training)
        return [
            Generation(tokens[row], logprobs[row], finish[row] or "length", self.weight_version)
            for row in range(batch)
        ]


class EngineClient:
    """Batches the requests of concurrently running games into engine calls.

    A request waits until every coroutine that can run has had its turn (the event loop goes
    idle for a few rounds) or ``rollout.max_batch_size`` requests are pending, then all pending
    requests go to the engine together. The engine runs in the event loop's thread, so the
    order of everything is a function of the seeds alone: rollouts are reproducible.

    Args:
        engine: the engine.
        sampling: sampling settings of every request through this client.
        max_batch_size: most requests per engine call.
    """

    #: Event-loop rounds without a new request before a batch is dispatched.
    IDLE_ROUNDS = 3

    def __init__(
        self, engine: Engine, sampling: BatchSampling, *, max_batch_size: int = 256
    ) -> None:
        self.engine = engine
        self.sampling = sampling
        self.max_batch_size = max_batch_size
        self._pending: list[tuple[GenerationRequest, asyncio.Future[Generation]]] = []
        self._dispatcher: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.calls = 0
        self.requests = 0

    async def generate(self, request: GenerationRequest) -> Generation:
        """Complete one request (batched with whatever else is pending)."""
        agenerate = getattr(self.engine, "agenerate", None)
        if agenerate is not None:  # the engine batches continuously itself
            self.requests += 1
            result: Generation = await agenerate(request, self.sampling)
            return result
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new event loop: requests of an abandoned one are void
            self._pending.clear()
            self._dispatcher = None
            self._loop = loop
        future: asyncio.Future[Generation] = loop.create_future()
        self._pending.append((request, future))
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = loop.create_task(self._dispatch())
        return await future

    async def aclose(self) -> None:
        """Release what the engine holds in the running event loop (HTTP connections).

        Call it before the loop that ran the rollouts ends.
        """
        aclose = getattr(self.engine, "aclose", None)
        if aclose is not None:
            await aclose()

    async def _dispatch(self) -> None:
        while self._pending:
            seen, idle = len(self._pending), 0
            while idle < self.IDLE_ROUNDS and len(self._pending) < self.max_batch_size:
                await asyncio.sleep(0)
                if len(self._pending) == seen:
                    idle += 1
                else:
                    seen, idle = len(self._pending), 0
            batch = self._pending[: self.max_batch_size]
            del self._pending[: self.max_batch_size]
            self.calls += 1
            self.requests += len(batch)
            try:
                results = self.engine.generate([request for request, _ in batch], self.sampling)
            except Exception as error:  # every waiting player sees the engine's failure
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
