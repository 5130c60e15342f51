"""The benchmarks, and each paper's protocol for them.

A :class:`Benchmark` (in :data:`BENCHMARKS`) says what a benchmark *is*: its local file's name,
the schema that reads it (:mod:`strategic_arena.problems.schemas`), where ``transfer fetch``
gets it (a Hugging Face dataset: path, config, split) and which papers report it. A
:class:`Protocol` says how a paper *ran* it: the prompt (:mod:`.prompts`), samples per
problem, temperature, top-p, response budget and metrics. :data:`PAPERS` holds each paper's
protocols by benchmark; :func:`plan` turns a paper, a list of benchmarks and overrides into
the :class:`BenchmarkRun` list the runner executes. Everything is listed in
``docs/transfer.md``; adding a benchmark is one entry here (and its schema, if new).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from strategic_arena.asking import Sampling
from strategic_arena.problems import SCHEMAS, Problem, load_problems
from strategic_arena.transfer.fewshot import MAX_SHOTS
from strategic_arena.transfer.metrics import metric
from strategic_arena.transfer.prompts import PROMPTS

__all__ = [
    "BENCHMARKS",
    "PAPERS",
    "Benchmark",
    "BenchmarkRun",
    "MissingBenchmarkFile",
    "Protocol",
    "benchmark",
    "plan",
]

#: The generated arithmetic set that ``transfer fetch arithmetic`` writes (no download).
ARITHMETIC_PROBLEMS = 200


class MissingBenchmarkFile(FileNotFoundError):
    """A benchmark's local file is missing; the message says where and how to get it."""


@dataclass(frozen=True)
class Benchmark:
    """A benchmark: its file, its schema and its source.

    Attributes:
        name: the registry name (``math500``).
        schema: the schema of its file (:data:`strategic_arena.problems.SCHEMAS`).
        file: the file's name in the data folder.
        hub: the Hugging Face dataset ``transfer fetch`` reads: ``(path, config, split)``;
            ``None``: generated here (``arithmetic``).
        papers: the papers that report it.
        note: what a user should know about its source (a gated dataset, a subset).
    """

    name: str
    schema: str
    file: str
    hub: tuple[str, str | None, str] | None
    papers: tuple[str, ...]
    note: str = ""

    def __post_init__(self) -> None:
        if self.schema not in SCHEMAS:
            raise ValueError(f"benchmark {self.name!r}: unknown schema {self.schema!r}")

    def path(self, data_dir: str | Path) -> Path:
        """Where its file is expected under ``data_dir``."""
        return Path(data_dir) / self.file

    def load(self, data_dir: str | Path) -> list[Problem]:
        """Its problems, from ``data_dir``.

        Raises:
            MissingBenchmarkFile: the file is not there (one line: the file and how to get it).
            ProblemFileError: the file is there but cannot be read.
        """
        path = self.path(data_dir)
        if not os.path.lexists(path):  # anything else there is the door's to refuse
            if self.hub is None:
                how = f"strategic-arena transfer fetch {self.name} --data-dir {data_dir}"
            else:
                hub_path, config, split = self.hub
                source = f"{hub_path}" + (f" ({config})" if config else "") + f", split {split}"
                how = (
                    f"strategic-arena transfer fetch {self.name} --data-dir {data_dir} where the "
                    f"network allows (from {source}), or write it yourself in the "
                    f"{self.schema} schema (docs/transfer.md)"
                )
            raise MissingBenchmarkFile(f"benchmark {self.name}: no file {path}; get it with {how}")
        return load_problems(path, self.schema)


def _entries(*benchmarks: Benchmark) -> dict[str, Benchmark]:
    return {entry.name: entry for entry in benchmarks}


#: Every benchmark by name.
BENCHMARKS: dict[str, Benchmark] = _entries(
    Benchmark("gsm8k", "gsm8k", "gsm8k.jsonl", ("openai/gsm8k", "main", "test"), ("marshal",)),
    Benchmark(
        "math500",
        "math",
        "math500.jsonl",
        ("HuggingFaceH4/MATH-500", None, "test"),
        ("marshal", "spiral"),
    ),
    Benchmark(
        "aime24",
        "competition",
        "aime24.jsonl",
        ("HuggingFaceH4/aime_2024", None, "train"),
        ("marshal", "spiral"),
    ),
    Benchmark(
        "aime25", "competition", "aime25.jsonl", ("math-ai/aime25", None, "test"), ("spiral",)
    ),
    Benchmark(
        "amc23",
        "competition",
        "amc23.jsonl",
        ("math-ai/amc23", None, "test"),
        ("marshal", "spiral"),
    ),
    Benchmark(
        "olympiadbench",
        "olympiadbench",
        "olympiadbench.jsonl",
        ("Hothan/OlympiadBench", "OE_TO_maths_en_COMP", "train"),
        ("spiral",),
        note="the English, text-only, open-ended competition-maths part (675 problems)",
    ),
    Benchmark(
        "minerva", "minerva", "minerva.jsonl", ("math-ai/minervamath", None, "test"), ("spiral",)
    ),
    Benchmark(
        "gpqa_diamond",
        "gpqa",
        "gpqa_diamond.jsonl",
        ("Idavidrein/gpqa", "gpqa_diamond", "train"),
        ("marshal", "spiral"),
        note="gated on the Hugging Face hub: accept its terms and log in (HF_TOKEN) first",
    ),
    Benchmark(
        "mmlu_pro",
        "mmlu_pro",
        "mmlu_pro.jsonl",
        ("TIGER-Lab/MMLU-Pro", None, "test"),
        ("spiral",),
    ),
    Benchmark(
        "mmlu_stem",
        "mmlu_stem",
        "mmlu_stem.jsonl",
        ("cais/mmlu", "all", "test"),
        ("marshal",),
        note="MMLU's test split; the schema keeps its 18 STEM subjects (3,018 questions)",
    ),
    Benchmark(
        "aqua_rat",
        "aqua_rat",
        "aqua_rat.jsonl",
        ("deepmind/aqua_rat", "raw", "test"),
        ("marshal",),
    ),
    Benchmark(
        "arithmetic",
        "gsm8k",
        "arithmetic.jsonl",
        None,
        (),
        note=f"generated here ({ARITHMETIC_PROBLEMS} problems, seed 0): smoke runs, no download",
    ),
)


def benchmark(name: str) -> Benchmark:
    """The registered benchmark ``name`` (``ValueError`` listing the names otherwise)."""
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(
            f"unknown benchmark {name!r}; known: {', '.join(sorted(BENCHMARKS))}"
        ) from None


def arithmetic_file(path: Path) -> Path:
    """Write the generated ``arithmetic`` benchmark at ``path``."""
    from strategic_arena.problems import write_gsm8k_jsonl

    return write_gsm8k_jsonl(path, ARITHMETIC_PROBLEMS, seed=0)


@dataclass(frozen=True)
class Protocol:
    """How a paper ran a benchmark.

    Attributes:
        prompt: the prompt's name (:data:`~strategic_arena.transfer.prompts.PROMPTS`).
        samples: answers sampled per problem.
        temperature: sampling temperature (0: greedy).
        top_p: nucleus threshold.
        max_tokens: the response budget.
        metrics: the metrics reported, the first being the headline one.
        shots: worked exemplars asked before each problem (:mod:`.fewshot`; 0: zero-shot,
            every paper's protocol for the models it trained).
    """

    prompt: str
    samples: int = 1
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 8192
    metrics: tuple[str, ...] = ("pass@1",)
    shots: int = 0

    def __post_init__(self) -> None:
        if self.prompt not in PROMPTS:
            raise ValueError(f"unknown prompt {self.prompt!r}; known: {', '.join(PROMPTS)}")
        if self.samples < 1 or self.max_tokens < 1 or not self.metrics:
            raise ValueError("a protocol needs samples >= 1, max_tokens >= 1 and a metric")
        if not 0 <= self.shots <= MAX_SHOTS:
            raise ValueError(f"shots must be between 0 and {MAX_SHOTS}, not {self.shots}")
        for name in self.metrics:
            if metric(name).k > self.samples:
                raise ValueError(f"metric {name} needs at least {metric(name).k} samples")

    def sampling(self, seed: int) -> Sampling:
        """The request's sampling, with the seed of one sample."""
        return Sampling(
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            seed=seed,
        )


_MARSHAL = Protocol("qwen25_math_cot")
#: SPIRAL samples (avg@32 needs it); its code does not state the temperature: 0.6 and top-p
#: 0.95 are Qwen3's recommended thinking settings (docs/transfer.md).
_SPIRAL = Protocol("spiral_qwen3", temperature=0.6, top_p=0.95)
_SPIRAL_AVG32 = replace(_SPIRAL, samples=32, metrics=("avg@32", "pass@1"))


@dataclass(frozen=True)
class Paper:
    """A paper's transfer protocol: its benchmarks and how it ran each."""

    name: str
    protocols: Mapping[str, Protocol]
    default: Protocol
    """The protocol of a benchmark the paper does not report (``arithmetic``, a user's)."""
    citation: str

    def protocol(self, name: str) -> Protocol:
        """How the paper runs benchmark ``name``."""
        return self.protocols.get(name, self.default)


#: Each paper's protocol.
PAPERS: dict[str, Paper] = {
    "marshal": Paper(
        "marshal",
        {
            name: _MARSHAL
            for name in (
                "math500",
                "gsm8k",
                "aqua_rat",
                "aime24",
                "amc23",
                "mmlu_stem",
                "gpqa_diamond",
            )
        },
        _MARSHAL,
        "MARSHAL (Yuan et al., 2025), Tables 1, 6, 8, 9 and 11: Qwen2.5-Math's evaluation "
        "scripts, greedy, 8,192 tokens; GPQA-Diamond through lm-eval",
    ),
    "spiral": Paper(
        "spiral",
        {
            "math500": _SPIRAL,
            "aime24": _SPIRAL_AVG32,
            "aime25": _SPIRAL_AVG32,
            "olympiadbench": _SPIRAL,
            "amc23": _SPIRAL_AVG32,
            "minerva": _SPIRAL,
            "gpqa_diamond": _SPIRAL,
            "mmlu_pro": _SPIRAL,
        },
        _SPIRAL,
        "SPIRAL (Liu et al., 2025), Table 1: zero-shot, avg@32 on AIME and AMC, pass@1 otherwise",
    ),
}


@dataclass(frozen=True)
class BenchmarkRun:
    """One benchmark as it will run: the benchmark, its protocol, and at most how many problems."""

    benchmark: Benchmark
    protocol: Protocol
    limit: int | None = None
    data_dir: str = "data/transfer"
    seed: int = 0
    """The root of every sample's request seed (:func:`~.runner.sample_seed`)."""

    def problems(self) -> list[Problem]:
        """Its problems (the first ``limit`` of the file)."""
        problems = self.benchmark.load(self.data_dir)
        return problems[: self.limit] if self.limit is not None else problems


def plan(
    paper: str,
    benchmarks: Sequence[str] | None = None,
    *,
    data_dir: str | Path = "data/transfer",
    samples: int | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    limit: int | None = None,
    seed: int = 0,
    shots: int = 0,
) -> list[BenchmarkRun]:
    """The runs of ``paper``'s protocol on ``benchmarks`` (default: the paper's own).

    ``samples``, ``max_tokens`` and ``temperature`` override the protocol for every benchmark
    (metrics needing more samples than given are dropped, ``pass@1`` kept); ``shots`` asks
    every problem after that many exemplars (a base model's few-shot evaluation); ``limit``
    keeps the first problems of each file (smoke runs).
    """
    if paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r}; known: {', '.join(sorted(PAPERS))}")
    chosen = PAPERS[paper]
    names = list(benchmarks) if benchmarks else list(chosen.protocols)
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, not {limit}")
    runs = []
    for name in names:
        protocol = chosen.protocol(benchmark(name).name)
        if samples is not None:
            kept = tuple(m for m in protocol.metrics if metric(m).k <= samples) or ("pass@1",)
            protocol = replace(protocol, samples=samples, metrics=kept)
        if max_tokens is not None:
            protocol = replace(protocol, max_tokens=max_tokens)
        if temperature is not None:
            protocol = replace(protocol, temperature=temperature)
        if shots:
            protocol = replace(protocol, shots=shots)
        runs.append(BenchmarkRun(BENCHMARKS[name], protocol, limit, str(data_dir), seed))
    return runs


@dataclass(frozen=True)
class TransferPlan:
    """What to evaluate: a paper's protocol on benchmarks read from a data folder.

    The keys of a transfer config file (``configs/transfer_*.yaml``) and of the trainer's
    ``transfer`` section.
    """

    paper: str = "spiral"
    """Whose protocol (prompt, samples, temperature, top-p, tokens, metrics): marshal or
    spiral (docs/transfer.md)."""
    benchmarks: tuple[str, ...] = ()
    """Benchmarks to run (empty: every benchmark the paper reports)."""
    data_dir: str = "data/transfer"
    """Folder of the benchmarks' files (``strategic-arena transfer fetch`` writes them)."""
    samples: int | None = None
    """Answers per problem for every benchmark (unset: the paper's)."""
    max_tokens: int | None = None
    """Response budget for every benchmark (unset: the paper's, 8192)."""
    temperature: float | None = None
    """Sampling temperature for every benchmark (unset: the paper's)."""
    limit: int | None = None
    """Only the first N problems of each file (smoke runs; unset: all)."""
    seed: int = 0
    """Root of the per-sample request seeds."""
    shots: int = 0
    """Worked exemplars before each problem (0: zero-shot; a base model's few-shot
    evaluation: GSM8K's 8 chain-of-thought exemplars, docs/transfer.md)."""

    def runs(self) -> list[BenchmarkRun]:
        """The benchmark runs of this plan (:func:`plan`)."""
        return plan(
            self.paper,
            self.benchmarks,
            data_dir=self.data_dir,
            samples=self.samples,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            limit=self.limit,
            seed=self.seed,
            shots=self.shots,
        )
