"""The transfer evaluation of a model behind an OpenAI-compatible endpoint (``transfer run``).

:func:`evaluate_endpoint` is the use case the CLI calls: it reads every benchmark file first
(a missing one is one line saying how to get it), checks the endpoint as the arena does
(:mod:`strategic_arena.arena.preflight`: the model listing, then one real request in the
benchmark's prompt and sampling, its failure named), then asks every sample through the
arena's backend (:class:`~strategic_arena.backends.OpenAIBackend`: retries, deadlines, a reply
cap, hostile fields coerced, the key to its origin only) and stores the answers
(:mod:`.runner`). With a multi-agent system (:class:`~.systems.SystemPlan`: MAD, AutoGen) each
sample is that system's conversation; a peer endpoint, when some roles are its, is checked the
same way and asked through its own backend.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from strategic_arena.arena.preflight import (
    PreflightError,
    choose_model,
    diagnose,
    served_models,
)
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import Asking
from strategic_arena.backends import OpenAIBackend
from strategic_arena.door import shown
from strategic_arena.door.printable import printable_line
from strategic_arena.http_body import DEFAULT_MAX_REPLY_BYTES
from strategic_arena.transfer.benchmarks import BenchmarkRun, TransferPlan
from strategic_arena.transfer.runner import BenchmarkResult, answer_sample, evaluate
from strategic_arena.transfer.systems import SystemPlan, answerer

__all__ = ["evaluate_endpoint"]


def preflight(run: BenchmarkRun, backend: OpenAIBackend, api_key_env: str | None) -> None:
    """One real request (the first problem, as it will be asked, one token long).

    Raises:
        PreflightError: the endpoint failed or refused it; the message names the likely cause.
    """
    problems = run.problems()
    cheap = BenchmarkRun(
        run.benchmark, replace(run.protocol, max_tokens=1), run.limit, run.data_dir, run.seed
    )

    async def ask() -> str | None:
        try:
            outcome = await answer_sample(cheap, problems[0], 0, backend.with_sampling)
        finally:
            await backend.aclose()
        return outcome if isinstance(outcome, str) else None

    failure = asyncio.run(ask())
    if failure is not None:
        detail = failure.split(": ", 1)[1] if ": " in failure else failure
        raise diagnose(detail, backend.base_url, "", api_key_env)


def check_budget(
    runs: Sequence[BenchmarkRun], model: str, context: int | None, base_url: str
) -> None:
    """Each run's answer budget fits the served model's context (``None``: not listed).

    A budget the server's ``max_model_len`` cannot hold is refused by the server request by
    request (HTTP 400); it is one line here, before the first request.

    Raises:
        PreflightError: a run's ``max_tokens`` leaves no room for its prompt.
    """
    for run in runs:
        budget = run.protocol.max_tokens
        if context is not None and budget >= context:
            raise PreflightError(
                f"--max-tokens {budget} ({run.benchmark.name}) does not fit the context of "
                f"{printable_line(model, 80)!r} at {shown(base_url)}: {context} tokens for the "
                "prompt and the answer together; lower --max-tokens, or serve the model with a "
                "longer --max-model-len"
            )


def peer_backend(
    system: SystemPlan,
    runs: Sequence[BenchmarkRun],
    endpoint: OpenAIBackend,
    check: bool,
    seed: int,
) -> OpenAIBackend | None:
    """The peer's backend (the evaluated one's limits, its own key), checked; ``None``: no peer.

    The peer is asked with the key of ``system.peer_api_key_env`` only: the evaluated
    endpoint's key never goes to the peer's origin.

    Raises:
        PreflightError: the peer cannot serve the run, or its model is unnamed without a check.
    """
    if not system.peer_roles or system.peer_base_url is None:
        return None
    model = system.peer_model
    key_env = system.peer_api_key_env
    if check:
        cards = served_models(
            system.peer_base_url, key_env, endpoint.timeout_s, endpoint.max_reply_bytes
        )
        model = choose_model(list(cards), model)
        check_budget(runs, model, cards[model], system.peer_base_url)
    elif model is None:
        raise PreflightError("name the peer's model (--peer-model) when the preflight is off")
    peer = OpenAIBackend(
        model,
        system.peer_base_url,
        api_key_env=key_env,
        timeout_s=endpoint.timeout_s,
        max_attempts=endpoint.max_attempts,
        max_reply_bytes=endpoint.max_reply_bytes,
        seed=seed,
        empty_is_answer=True,
    )
    if check:
        preflight(runs[0], peer, key_env)
    return peer


def evaluate_endpoint(
    db: str | Path,
    plan: TransferPlan,
    *,
    base_url: str,
    model: str | None = None,
    label: str | None = None,
    api_key_env: str | None = "OPENAI_API_KEY",
    timeout_s: float = 600.0,
    max_attempts: int = 6,
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    concurrency: int = 16,
    progress: bool = True,
    check: bool = True,
    system: SystemPlan | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> list[BenchmarkResult]:
    """Evaluate the model at ``base_url`` on ``plan``; answers stored in ``db`` as ``label``.

    Args:
        db: the results store.
        plan: paper, benchmarks, data folder and overrides.
        base_url: the endpoint (``http://host:port/v1``).
        model: the model to ask (default: the only one the endpoint lists).
        label: its name in the store and the tables (default: the model's).
        api_key_env: the variable holding the API key (never stored or shown).
        timeout_s: deadline of each request (8,192 tokens take a while).
        max_attempts: requests per sample, the first included.
        max_reply_bytes: the cap on a reply's decoded size.
        concurrency: requests in flight at once.
        progress: print the progress line (stderr).
        check: run the preflight (the listing and one request) first.
        system: the system that answers each sample (default: the single agent), with the
            peer endpoint of the roles it does not give the evaluated model.
        chat_template_kwargs: sent with every request to the evaluated model (a checkpoint's
            trainer's, e.g. Qwen3's ``enable_thinking``; ``transfer run --settings``).

    Raises:
        MissingBenchmarkFile, ProblemFileError: a benchmark file is missing or bad.
        PreflightError: the endpoint cannot serve the run (nothing is stored).
        ValueError: the label's stored runs have other settings.
    """
    runs = plan.runs()
    if not runs:
        raise ValueError("no benchmark to run")
    system = system or SystemPlan()
    system.check()
    if system.name != "single" and plan.shots:
        raise ValueError(
            f"--shots is the single agent's few-shot prompt; the {system.name} system asks its "
            "roles with its own prompts (leave --shots out, or --system single)"
        )
    for run in runs:  # every file read before the endpoint is asked anything
        run.problems()
    if check:
        cards = served_models(base_url, api_key_env, timeout_s, max_reply_bytes)
        model = choose_model(list(cards), model)
        check_budget(runs, model, cards[model], base_url)
    elif model is None:
        raise PreflightError("name the model (--model) when the preflight is off")
    backend = OpenAIBackend(
        model,
        base_url,
        api_key_env=api_key_env,
        timeout_s=timeout_s,
        max_attempts=max_attempts,
        max_reply_bytes=max_reply_bytes,
        seed=plan.seed,
        asking=Asking(chat_template_kwargs=dict(chat_template_kwargs or {})),
        empty_is_answer=True,  # a model that ends its reply at once answers wrongly
    )
    if check:
        preflight(runs[0], backend, api_key_env)
    peer = peer_backend(system, runs, backend, check, plan.seed)
    if peer is not None:
        system = replace(system, peer_model=peer.model)
    answers = answerer(system, backend.with_sampling, None if peer is None else peer.with_sampling)
    with ResultsStore(db) as store:
        return evaluate(
            store,
            label or model,
            runs,
            backend.with_sampling,
            model=model,
            concurrency=concurrency,
            progress=progress,
            answerer=answers,
        )
