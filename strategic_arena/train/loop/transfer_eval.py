"""The transfer evaluation inside training: the policy on reasoning benchmarks, through its engine.

At the steps the ``transfer`` section names (before the first, every ``every``, after the last)
the trainer asks the policy every sample of its benchmarks through its own engine -- the same
weights its rollouts use, whether the engine is a vLLM server or in-process transformers --
with the benchmarks' prompts through the policy's chat template (:class:`~strategic_arena.
train.rollout.PromptEncoder`, without the game answer's prefix) and each protocol's sampling
(one engine client per sampling, every sample with its own seed). The answers go to the
evaluation store under the label ``<run_name>/step-NNNNNN`` (:mod:`strategic_arena.transfer.
store`), so a rerun of the same step resumes, and ``strategic-arena transfer report --db
<eval.db>`` shows them.

**Under torchrun** the samples still to answer are spread over the ranks (sample ``i`` of a
benchmark's list goes to rank ``i mod world size``), like the game evaluation's games: every
rank answers its share, the answers are gathered, and rank 0 alone writes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from strategic_arena.arena.store import ResultsStore
from strategic_arena.asking import Asking
from strategic_arena.asking import Sampling as RequestSampling
from strategic_arena.backends import ChatBackend
from strategic_arena.train.config import TrainConfig
from strategic_arena.train.dist import DistInfo, all_gather_objects, broadcast_object
from strategic_arena.train.engines.engine import BatchSampling, Engine, EngineClient
from strategic_arena.train.loop.evaluation import eval_db
from strategic_arena.train.loop.rollout import EngineBackend, PromptEncoder
from strategic_arena.transfer import Cell, cells, evaluate_async
from strategic_arena.transfer.runner import ask_samples, pending_samples, run_settings
from strategic_arena.transfer.store import Answer, open_run, run_name, save_answer

__all__ = ["TransferEvaluation", "evaluate_transfer", "step_label", "transfer_metrics"]


@dataclass(frozen=True)
class TransferEvaluation:
    """One transfer evaluation of the policy: its label, store, cells and metrics."""

    step: int
    label: str
    db: Path
    cells: list[Cell] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)


def step_label(run_name_: str, step: int) -> str:
    """The policy of ``step`` in the transfer tables: ``<run_name>/step-NNNNNN``."""
    return f"{run_name_}/step-{step:06d}"


def transfer_metrics(found: Sequence[Cell]) -> dict[str, float]:
    """``transfer/<benchmark>/<metric>`` (and ``/unreadable``) of the cells."""
    metrics: dict[str, float] = {}
    for cell in found:
        for value in cell.metrics:
            metrics[f"transfer/{cell.benchmark}/{value.name}"] = value.mean
        metrics[f"transfer/{cell.benchmark}/unreadable"] = cell.unreadable
    return metrics


class _EngineBackends:
    """One engine client per sampling, and a backend per sample (its seed)."""

    def __init__(self, cfg: TrainConfig, engine: Engine, encoder: PromptEncoder, label: str):
        self.cfg, self.engine, self.encoder, self.label = cfg, engine, encoder, label
        self.clients: dict[BatchSampling, EngineClient] = {}

    def __call__(self, sampling: RequestSampling) -> ChatBackend:
        engine_sampling = BatchSampling.of(replace(sampling, seed=None))
        client = self.clients.get(engine_sampling)
        if client is None:
            client = EngineClient(
                self.engine, engine_sampling, max_batch_size=self.cfg.rollout.max_batch_size
            )
            self.clients[engine_sampling] = client
        return EngineBackend(
            client,
            self.encoder,
            max_new_tokens=engine_sampling.max_new_tokens,
            max_sequence_tokens=self.cfg.rollout.max_sequence_tokens,
            seed=sampling.seed or 0,
            model=self.label,
        )

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.aclose()


async def evaluate_transfer(
    cfg: TrainConfig,
    engine: Engine,
    tokenizer: Any,
    step: int,
    info: DistInfo | None = None,
) -> TransferEvaluation:
    """Ask the policy of ``step`` the ``transfer`` section's benchmarks; every rank calls it."""
    section = cfg.transfer
    if section is None:
        raise ValueError("the config has no transfer section")
    info = info or DistInfo()
    engine.wake_up()
    label = step_label(cfg.run.name, step)
    db = eval_db(cfg)
    runs = section.runs()
    encoder = PromptEncoder(tokenizer, Asking(chat_template_kwargs=cfg.answer.chat_template_kwargs))
    backends = _EngineBackends(cfg, engine, encoder, label)
    found: list[Cell] = []
    try:
        if not info.distributed:
            with ResultsStore(db) as store:
                await evaluate_async(
                    store,
                    label,
                    runs,
                    backends,
                    model=cfg.model.name,
                    concurrency=section.concurrency,
                    progress=False,
                )
                found = cells(store, [label])
        else:
            found = await _spread(cfg, runs, backends, label, db, section.concurrency, info)
    finally:
        await backends.aclose()
    metrics = broadcast_object(transfer_metrics(found), info)
    return TransferEvaluation(step, label, db, found, metrics)


async def _spread(
    cfg: TrainConfig,
    runs: Sequence[Any],
    backends: _EngineBackends,
    label: str,
    db: Path,
    concurrency: int,
    info: DistInfo,
) -> list[Cell]:
    """Every rank answers its share of the open samples; rank 0 stores them all."""
    loaded = [(run, run.problems()) for run in runs]
    pending: dict[str, list[tuple[str, int]]] = {}
    if info.main:
        with ResultsStore(db) as store:
            for run, problems in loaded:
                name = run_name(label, run.benchmark.name)
                stored = open_run(
                    store, name, run.seed, run_settings(run, cfg.model.name, problems)
                )
                work = pending_samples(store, stored.id, problems, run.protocol.samples)
                pending[name] = [(problem.id, sample) for problem, sample in work]
    pending = broadcast_object(pending, info)
    mine: list[tuple[str, Answer]] = []
    for run, problems in loaded:
        name = run_name(label, run.benchmark.name)
        by_id = {problem.id: problem for problem in problems}
        share = pending[name][info.rank :: info.world_size]
        work = [(by_id[problem_id], sample) for problem_id, sample in share]

        def keep(answer: Answer, name: str = name) -> None:
            mine.append((name, answer))

        await ask_samples(run, work, backends, concurrency, keep, lambda line: None)
    gathered = all_gather_objects(mine, info)
    if not info.main:
        return []
    with ResultsStore(db) as store:
        ids = {stored.name: stored.id for stored in store.runs()}
        for part in gathered:
            for name, answer in part:
                save_answer(store, ids[name], answer)
        return cells(store, [label])
