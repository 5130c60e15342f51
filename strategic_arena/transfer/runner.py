"""Running a benchmark: every sample of every problem asked concurrently, checked and stored.

For each :class:`~strategic_arena.transfer.benchmarks.BenchmarkRun`, :func:`evaluate_async`

1. opens the store's run ``transfer/<label>/<benchmark>`` (``...@<system>`` for a multi-agent
   system, :mod:`.systems`) with the protocol (and the system's settings) as its settings
   (:mod:`strategic_arena.transfer.store`; other settings under the same label are refused);
2. lists the samples without a stored answer (a rerun after a crash or ``kill -9`` asks only
   those);
3. asks them through a chat backend, ``concurrency`` at a time: the paper's prompt
   (:mod:`.prompts`) as chat messages, the protocol's sampling with the sample's own request
   seed (:func:`sample_seed`: the same seeds on every rerun, on any machine), through the
   arena's backend (:class:`~strategic_arena.backends.OpenAIBackend`: retries, a deadline
   per request, a cap on reply size, hostile fields coerced) or the trainer's engine;
4. checks each reply (:func:`strategic_arena.problems.check_answer`; a malformed, empty, cut
   off or hostile reply is a wrong answer, never an error) and stores it at once;
5. reports progress and an ETA on one line (the arena's :class:`~strategic_arena.arena.runner.
   Progress`, counting answers).

How a sample is answered is an :class:`Answerer`: :data:`SINGLE_AGENT` (the default) asks the
one request above; a multi-agent system (:mod:`strategic_arena.transfer.systems`: MAD, AutoGen)
plays a conversation and checks its final answer the same way.

A request the endpoint fails after the backend's retries stores nothing and is counted as
failed: the result says the run is incomplete, and a rerun asks it again. An exception inside
one sample (the backend raising) is that sample's failure too; the others go on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

from strategic_arena.arena.runner import Progress
from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import Sampling
from strategic_arena.backends import ChatBackend, ChatResult
from strategic_arena.door.printable import printable_line
from strategic_arena.problems import Problem, check_answer, extract_boxed, extract_choice
from strategic_arena.seeding import derive_seed
from strategic_arena.transfer.benchmarks import BenchmarkRun
from strategic_arena.transfer.fewshot import check_shots, fewshot_messages
from strategic_arena.transfer.prompts import prompt
from strategic_arena.transfer.store import Answer, answered, open_run, run_name, save_answer

__all__ = [
    "SINGLE_AGENT",
    "Answerer",
    "BackendFor",
    "BenchmarkResult",
    "answer_sample",
    "ask_samples",
    "evaluate",
    "evaluate_async",
    "failure_line",
    "pending_samples",
    "run_settings",
    "sample_seed",
]

#: Builds the backend that asks one sample, from that sample's sampling (its seed).
BackendFor = Callable[[Sampling], ChatBackend]

#: How many failure lines a result keeps.
_KEPT_FAILURES = 5


def sample_seed(seed: int, benchmark: str, problem_id: str, sample: int) -> int:
    """The request seed of one sample (31 bits: every server takes it)."""
    return derive_seed(seed, "transfer", benchmark, problem_id, sample) % (2**31 - 1)


@dataclass(frozen=True)
class BenchmarkResult:
    """What one call did for one benchmark.

    Attributes:
        label: the model's label.
        benchmark: the benchmark's name.
        run: the store's run name.
        problems: problems in the benchmark (after ``limit``).
        samples: samples in all (problems times samples per problem).
        resumed: samples answered by an earlier call.
        answered: samples answered now.
        failed: samples whose request failed (not stored: a rerun asks them again).
        failures: the first few failure lines.
    """

    label: str
    benchmark: str
    run: str
    problems: int
    samples: int
    resumed: int
    answered: int
    failed: int
    failures: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether every sample has a stored answer."""
        return self.resumed + self.answered == self.samples


def problems_digest(problems: Sequence[Problem]) -> str:
    """SHA-256 of the problems as asked (ids, questions, answers, choices)."""
    data = [[p.id, p.question, p.answer, list(p.choices)] for p in problems]
    return hashlib.sha256(json.dumps(data, ensure_ascii=False).encode()).hexdigest()


def run_settings(
    run: BenchmarkRun,
    model: str,
    problems: Sequence[Problem],
    system: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The settings stored with a run: what makes its answers comparable.

    ``system`` (a multi-agent system's settings) is stored under ``"system"``; a single-agent
    run stores none, so its settings are what they were before systems existed. A few-shot run
    stores its ``shots`` too (a zero-shot run's settings are as they always were), so a rerun
    with another number of shots is refused rather than mixed in.
    """
    protocol = run.protocol
    extra = {} if system is None else {"system": system}
    few_shot = {"shots": protocol.shots} if protocol.shots else {}
    return {
        **few_shot,
        "kind": "transfer",
        "model": model,
        "benchmark": run.benchmark.name,
        "schema": run.benchmark.schema,
        "problems": len(problems),
        "problems_sha256": problems_digest(problems),
        "prompt": protocol.prompt,
        "samples": protocol.samples,
        "temperature": protocol.temperature,
        "top_p": protocol.top_p,
        "max_tokens": protocol.max_tokens,
        "metrics": list(protocol.metrics),
        **extra,
    }


def checked(problem: Problem, sample: int, result: ChatResult) -> Answer:
    """A backend's reply to one sample as a checked answer (never raises)."""
    text = result.content if result.malformed is None else ""
    if problem.multiple_choice:
        extracted = extract_choice(text, len(problem.choices))
    else:
        extracted = extract_boxed(text)
    return Answer(
        problem_id=problem.id,
        sample=sample,
        correct=result.malformed is None and check_answer(problem, text),
        extracted=extracted,
        response=result.content,
        reasoning=result.reasoning,
        finish_reason=result.finish_reason,
        malformed=result.malformed,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        latency_s=result.latency_s,
    )


def failure_line(result: ChatResult) -> str:
    """Why a request failed after the backend's retries, in one printable line."""
    last = result.failures[-1] if result.failures else str(result.error)
    return f"{result.error}: {printable_line(last, 200)}"


async def answer_sample(
    run: BenchmarkRun, problem: Problem, sample: int, backend_for: BackendFor
) -> Answer | str:
    """Ask one sample; its checked answer, or a failure line when the request failed."""
    protocol = run.protocol
    seed = sample_seed(run.seed, run.benchmark.name, problem.id, sample)
    messages = fewshot_messages(prompt(protocol.prompt), problem, protocol.shots)
    try:
        result = await backend_for(protocol.sampling(seed)).complete(messages)
    except Exception as error:  # a backend that raises fails this sample only
        return f"{type(error).__name__}: {printable_line(error, 200)}"
    if result.error is not None:
        return failure_line(result)
    return checked(problem, sample, result)


class Answerer(Protocol):
    """How one sample is answered: one request, or a multi-agent system's conversation.

    ``name`` goes into the run's name (``"single"``: none), ``settings`` into its stored
    settings (``None`` for the single agent), and ``answer`` returns the checked answer or a
    failure line, as :func:`answer_sample` does.
    """

    @property
    def name(self) -> str:
        """The system's name (``single``, ``mad``, ``autogen``)."""
        ...

    def settings(self) -> dict[str, Any] | None:
        """What of the system makes its answers comparable (stored with the run)."""
        ...

    async def answer(
        self, run: BenchmarkRun, problem: Problem, sample: int, backend_for: BackendFor
    ) -> Answer | str:
        """One sample's checked answer, or a failure line."""
        ...


@dataclass(frozen=True)
class SingleAgent:
    """The paper's single-agent evaluation: one request per sample (:func:`answer_sample`)."""

    name: str = "single"

    def settings(self) -> dict[str, Any] | None:
        """None: a single-agent run's settings are the protocol's alone."""
        return None

    async def answer(
        self, run: BenchmarkRun, problem: Problem, sample: int, backend_for: BackendFor
    ) -> Answer | str:
        """:func:`answer_sample`."""
        return await answer_sample(run, problem, sample, backend_for)


#: The default answerer.
SINGLE_AGENT: Answerer = SingleAgent()


async def ask_samples(
    run: BenchmarkRun,
    work: Sequence[tuple[Problem, int]],
    backend_for: BackendFor,
    concurrency: int,
    on_answer: Callable[[Answer], None],
    on_failure: Callable[[str], None],
    answerer: Answerer = SINGLE_AGENT,
) -> None:
    """Ask every ``(problem, sample)`` of ``work``, ``concurrency`` at a time.

    Each checked answer goes to ``on_answer`` and each failure line (``<problem>#<sample>:
    <why>``) to ``on_failure`` as soon as it is known, in the event loop's thread.
    ``answerer`` answers each sample (default: one request).
    """
    queue = list(reversed(work))

    async def worker() -> None:
        while queue:
            problem, sample = queue.pop()
            outcome = await answerer.answer(run, problem, sample, backend_for)
            if isinstance(outcome, str):
                on_failure(f"{problem.id}#{sample}: {outcome}")
            else:
                on_answer(outcome)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(work)))))


def pending_samples(
    store: ResultsStore, run_id: int, problems: Sequence[Problem], samples: int
) -> list[tuple[Problem, int]]:
    """The ``(problem, sample)`` pairs of a run without a stored answer, in order."""
    done = answered(store, run_id)
    return [
        (problem, sample)
        for problem in problems
        for sample in range(samples)
        if (problem.id, sample) not in done
    ]


async def evaluate_async(
    store: ResultsStore,
    label: str,
    runs: Sequence[BenchmarkRun],
    backend_for: BackendFor,
    *,
    model: str,
    concurrency: int = 16,
    progress: bool = True,
    stream: TextIO | None = None,
    answerer: Answerer = SINGLE_AGENT,
) -> list[BenchmarkResult]:
    """Evaluate ``model`` (stored as ``label``) on each benchmark run; see the module docstring.

    ``answerer`` answers each sample: the single agent (default) or a multi-agent system
    (:mod:`strategic_arena.transfer.systems`), whose name and settings are part of the run's.

    Raises:
        MissingBenchmarkFile, ProblemFileError: a benchmark's file is missing or bad (checked
            for every benchmark before anything is asked).
        ValueError: a stored run of that label and benchmark has other settings.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, not {concurrency}")
    loaded = [(run, run.problems()) for run in runs]  # every file read before any request
    for run, problems in loaded:
        check_shots(problems, run.protocol.shots)
    results = []
    for run, problems in loaded:
        results.append(
            await _evaluate_one(
                store,
                label,
                run,
                problems,
                backend_for,
                model,
                concurrency,
                progress,
                stream,
                answerer,
            )
        )
    return results


async def _evaluate_one(
    store: ResultsStore,
    label: str,
    run: BenchmarkRun,
    problems: Sequence[Problem],
    backend_for: BackendFor,
    model: str,
    concurrency: int,
    progress: bool,
    stream: TextIO | None,
    answerer: Answerer,
) -> BenchmarkResult:
    name = run_name(label, run.benchmark.name, answerer.name)
    settings = run_settings(run, model, problems, answerer.settings())
    stored = open_run(store, name, run.seed, settings)
    samples = run.protocol.samples
    pending = pending_samples(store, stored.id, problems, samples)
    total = len(problems) * samples
    resumed = total - len(pending)
    shown = label if answerer.name == SINGLE_AGENT.name else f"{label} ({answerer.name})"
    bar = (
        Progress(
            total, resumed, label=f"{shown} {run.benchmark.name}", stream=stream, unit="answers"
        )
        if progress
        else None
    )
    failures: list[str] = []
    counts = {"answered": 0, "failed": 0}

    def on_answer(answer: Answer) -> None:
        save_answer(store, stored.id, answer)
        counts["answered"] += 1
        if bar is not None:
            bar.update(error=answer.extracted is None)

    def on_failure(line: str) -> None:
        counts["failed"] += 1
        failures.append(line)
        if bar is not None:
            bar.update(incomplete=True)

    await ask_samples(run, pending, backend_for, concurrency, on_answer, on_failure, answerer)
    if bar is not None:
        bar.update(final=True)
    return BenchmarkResult(
        label,
        run.benchmark.name,
        name,
        len(problems),
        total,
        resumed,
        counts["answered"],
        counts["failed"],
        tuple(failures[:_KEPT_FAILURES]),
    )


def evaluate(
    store: ResultsStore,
    label: str,
    runs: Sequence[BenchmarkRun],
    backend_for: BackendFor,
    **kwargs: Any,
) -> list[BenchmarkResult]:
    """:func:`evaluate_async` from synchronous code (one event loop for every benchmark)."""
    return asyncio.run(evaluate_async(store, label, runs, backend_for, **kwargs))
