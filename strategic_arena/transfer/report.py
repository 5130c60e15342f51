"""The transfer report: each model on each benchmark, with 95% intervals, before and after.

Recomputed from the results store alone (:mod:`.store`), like the arena's reports. One
:class:`Cell` per (label, benchmark): every metric of the run's protocol (:mod:`.metrics`)
over the problems whose samples are all answered, with the 95% half-width over problems, how
many problems that is out of how many, the share of answers with no readable answer, and the
mean response length. Labels are in the order their first run was stored (a trainer's
``step-000000`` before ``step-000100``; ``before`` before ``after``).

A multi-agent system's run (``transfer/<label>/<benchmark>@<system>``, :mod:`.systems`) is a
cell of its own, whose ``system`` says which (``single`` for one request per sample).

:func:`render_table` draws the before/after table for the terminal (labels as rows,
benchmarks as columns, each cell the headline metric ``mean ± half``; with multi-agent cells,
MARSHAL's layout: a row per system and label, a ``system`` column first and the average over
the benchmarks, ``avg``, before them); :func:`report_data` gives the
same as JSON-ready data, which ``transfer report --json`` prints and the published
leaderboard's page shows (:mod:`strategic_arena.leaderboard`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from strategic_arena.arena.records import StoredRun
from strategic_arena.arena.store import ResultsStore
from strategic_arena.door.printable import printable_line
from strategic_arena.transfer.metrics import metric
from strategic_arena.transfer.store import RUN_PREFIX, SYSTEM_MARK, Answer, answers

__all__ = ["Cell", "MetricValue", "cells", "render_table", "report_data"]


@dataclass(frozen=True)
class MetricValue:
    """One metric's value: the mean over problems and its 95% half-width."""

    name: str
    mean: float
    half: float | None


@dataclass(frozen=True)
class Cell:
    """One model (``label``) on one benchmark.

    Attributes:
        label: the model's label.
        benchmark: the benchmark.
        run: the store's run.
        model: the model name the run asked.
        metrics: the protocol's metrics, headline first (over the complete problems).
        problems: problems in the run.
        complete: problems whose every sample has an answer (the metrics' problems).
        samples: samples per problem.
        answers: stored answers.
        unreadable: share of the answers with no readable answer (no box, no letter).
        mean_completion_tokens: the answers' mean length in tokens.
        settings: the run's stored settings (the protocol).
        system: the system that answered (``single``, ``mad``, ``autogen``).
    """

    label: str
    benchmark: str
    run: str
    model: str
    metrics: tuple[MetricValue, ...]
    problems: int
    complete: int
    samples: int
    answers: int
    unreadable: float
    mean_completion_tokens: float
    settings: Mapping[str, Any] = field(default_factory=dict)
    system: str = "single"

    @property
    def headline(self) -> MetricValue | None:
        """The protocol's first metric, if any problem is complete."""
        return self.metrics[0] if self.metrics else None


def _parse(run: StoredRun) -> tuple[str, str, str] | None:
    """``(label, benchmark, system)`` of a transfer run, else ``None``."""
    if not run.name.startswith(RUN_PREFIX) or run.settings.get("kind") != "transfer":
        return None
    label, _, benchmark = run.name.removeprefix(RUN_PREFIX).rpartition("/")
    benchmark, _, system = benchmark.partition(SYSTEM_MARK)
    return (label, benchmark, system or "single") if label and benchmark else None


def _cell(run: StoredRun, parsed: tuple[str, str, str], stored: Sequence[Answer]) -> Cell:
    label, benchmark, system = parsed
    settings = run.settings
    samples = int(settings.get("samples", 1))
    by_problem: dict[str, list[Answer]] = defaultdict(list)
    for answer in stored:
        by_problem[answer.problem_id].append(answer)
    complete = [
        [a.correct for a in sorted(found, key=lambda a: a.sample)]
        for found in by_problem.values()
        if {a.sample for a in found} >= set(range(samples))
    ]
    values: list[MetricValue] = []
    if complete:
        for name in settings.get("metrics", ["pass@1"]):
            mean, half = metric(str(name)).value([correct[:samples] for correct in complete])
            values.append(MetricValue(str(name), mean, half))
    count = len(stored)
    return Cell(
        label=label,
        benchmark=benchmark,
        run=run.name,
        model=str(settings.get("model", "")),
        metrics=tuple(values),
        problems=int(settings.get("problems", len(by_problem))),
        complete=len(complete),
        samples=samples,
        answers=count,
        unreadable=sum(a.extracted is None for a in stored) / count if count else 0.0,
        mean_completion_tokens=sum(a.completion_tokens for a in stored) / count if count else 0.0,
        settings=dict(settings),
        system=system,
    )


def cells(store: ResultsStore, labels: Sequence[str] | None = None) -> list[Cell]:
    """Every (label, benchmark) of the store's transfer runs (of ``labels`` only, if given)."""
    runs = [(run, parsed) for run in store.runs() if (parsed := _parse(run)) is not None]
    if labels is not None:
        wanted = set(labels)
        runs = [(run, parsed) for run, parsed in runs if parsed[0] in wanted]
    runs.sort(key=lambda item: (item[0].created, item[0].id))
    stored = answers(store, [run.id for run, _ in runs])
    return [_cell(run, parsed, stored[run.id]) for run, parsed in runs]


def _fmt(value: MetricValue | None) -> str:
    if value is None:
        return "-"
    half = "" if value.half is None else f" ± {100 * value.half:.1f}"
    return f"{100 * value.mean:.1f}{half}"


def _cell_text(cell: Cell | None) -> str:
    """A table cell: the headline, and ``(k/n)`` when only k of n problems are complete."""
    text = "-" if cell is None else _fmt(cell.headline)
    if cell is not None and cell.complete < cell.problems:
        text += f" ({cell.complete}/{cell.problems})"
    return text


def _average(row: Sequence[Cell | None]) -> str:
    """The mean headline of a row in %, when every benchmark of it is complete; else ``-``."""
    values = [c.headline.mean for c in row if c and c.headline and c.complete == c.problems]
    return f"{100 * sum(values) / len(values):.2f}" if values and len(values) == len(row) else "-"


def render_table(found: Sequence[Cell], title: str = "transfer evaluation") -> str:
    """Labels × benchmarks, each cell the headline metric in % with its 95% half-width.

    With a multi-agent system's cells the rows are (system, label) pairs, the single agent's
    first, with MARSHAL's ``avg`` column: the mean of the row's headlines over the benchmarks.
    """
    if not found:
        return f"{title}: no transfer runs stored"
    systems = list(dict.fromkeys(cell.system for cell in found))
    multi = systems != ["single"]
    rows = list(dict.fromkeys((cell.system, cell.label) for cell in found))
    rows.sort(key=lambda row: systems.index(row[0]))
    benchmarks = list(dict.fromkeys(cell.benchmark for cell in found))
    by_key = {(cell.system, cell.label, cell.benchmark): cell for cell in found}
    headline = {cell.benchmark: cell.settings.get("metrics", ["?"])[0] for cell in found}
    headers = [f"{bench} {headline[bench]}" for bench in benchmarks]
    table = [["system", "model", "avg", *headers] if multi else ["model", *headers]]
    for system, label in rows:
        found_row = [by_key.get((system, label, bench)) for bench in benchmarks]
        texts = [_cell_text(cell) for cell in found_row]
        named = [printable_line(label, 40)]
        table.append([system, *named, _average(found_row), *texts] if multi else named + texts)
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = [f"{title} (% right, ± 95% interval over problems; (k/n): problems complete)"]
    left = 2 if multi else 1
    for line in table:
        cells_text = [
            text.ljust(width) if i < left else text.rjust(width)
            for i, (text, width) in enumerate(zip(line, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells_text).rstrip())
    return "\n".join(lines)


def report_data(found: Sequence[Cell]) -> dict[str, Any]:
    """The cells as JSON-ready data: ``{"labels", "benchmarks", "systems", "cells": [...]}``."""
    return {
        "labels": list(dict.fromkeys(cell.label for cell in found)),
        "systems": list(dict.fromkeys(cell.system for cell in found)),
        "benchmarks": list(dict.fromkeys(cell.benchmark for cell in found)),
        "cells": [asdict(cell) for cell in found],
    }
