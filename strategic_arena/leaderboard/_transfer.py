"""The transfer evaluation on the published leaderboard: data, a markdown section, a page tab.

Reasoning benchmarks before and after training (:mod:`strategic_arena.transfer`) are stored as
runs of the same results store; when a store holds some, ``leaderboard.json`` gets a
``transfer`` object (labels, benchmarks, one cell per label and benchmark with every metric,
its 95% half-width and how complete it is), ``LEADERBOARD.md`` a "Transfer evaluation" table
and ``index.html`` a "Transfer" tab: models (labels) as rows, benchmarks as columns, the
headline metric in each cell. A multi-agent system's row (``transfer run --system``) is its
label with the system in brackets, ``base (mad)``. A label is any text (by default the model
name an endpoint lists), so a single-agent label may read like another row's: rows are told
apart by (label, system), and a title two rows would share gets the system in square brackets
(``base (mad) [single]``), so no result ever covers another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from strategic_arena.arena.store import ResultsStore
from strategic_arena.leaderboard._cells import Cell, Column, escape, number_cell, player_cell, table
from strategic_arena.transfer import cells
from strategic_arena.transfer.report import Cell as TransferCell

__all__ = ["transfer_data", "transfer_markdown", "transfer_panel"]


def _row(cell: TransferCell) -> str:
    """A cell's row: its label, and its multi-agent system in brackets (``base (mad)``)."""
    return cell.label if cell.system == "single" else f"{cell.label} ({cell.system})"


def row_titles(found: Sequence[TransferCell]) -> dict[tuple[str, str], str]:
    """Each (label, system) row's title: :func:`_row`, unique (see the module docstring)."""
    keys = list(dict.fromkeys((cell.label, cell.system) for cell in found))
    plain = {key: _row(next(c for c in found if (c.label, c.system) == key)) for key in keys}
    shared = {title for title in plain.values() if list(plain.values()).count(title) > 1}
    return {
        key: f"{title} [{key[1]}]" if title in shared else title for key, title in plain.items()
    }


def transfer_data(
    store: ResultsStore,
    run_names: Sequence[str] | None,
    rounded: Callable[[Any], Any],
) -> dict[str, Any] | None:
    """The published transfer object of the store's transfer runs (``None``: there are none)."""
    found = cells(store)
    if run_names is not None:
        wanted = set(run_names)
        found = [cell for cell in found if cell.run in wanted]
    if not found:
        return None
    titles = row_titles(found)
    return {
        "labels": list(titles.values()),
        "benchmarks": list(dict.fromkeys(cell.benchmark for cell in found)),
        "cells": [
            rounded(
                {
                    "label": titles[(cell.label, cell.system)],
                    "system": cell.system,
                    "benchmark": cell.benchmark,
                    "model": cell.model,
                    "metrics": [
                        {"name": m.name, "mean": m.mean, "ci95": m.half} for m in cell.metrics
                    ],
                    "problems": cell.problems,
                    "complete": cell.complete,
                    "samples": cell.samples,
                    "unreadable": cell.unreadable,
                    "prompt": str(cell.settings.get("prompt", "")),
                    "max_tokens": cell.settings.get("max_tokens"),
                    "temperature": cell.settings.get("temperature"),
                }
            )
            for cell in found
        ],
    }


def _headline(cell: Mapping[str, Any]) -> tuple[float | None, str]:
    """The cell's first metric in % with its half-width, and how complete it is."""
    if not cell["metrics"]:
        return None, "-"
    first = cell["metrics"][0]
    half = "" if first["ci95"] is None else f" ± {100 * first['ci95']:.1f}"
    partial = (
        "" if cell["complete"] == cell["problems"] else f" ({cell['complete']}/{cell['problems']})"
    )
    return first["mean"], f"{100 * first['mean']:.1f}{half}{partial}"


def _grid(
    transfer: Mapping[str, Any],
) -> tuple[list[str], list[tuple[str, list[Mapping[str, Any] | None]]]]:
    by_key = {(c["label"], c["benchmark"]): c for c in transfer["cells"]}
    headers = []
    for bench in transfer["benchmarks"]:
        first = next(c for c in transfer["cells"] if c["benchmark"] == bench)
        name = first["metrics"][0]["name"] if first["metrics"] else ""
        headers.append(f"{bench} {name}".strip())
    rows = [
        (label, [by_key.get((label, bench)) for bench in transfer["benchmarks"]])
        for label in transfer["labels"]
    ]
    return headers, rows


NOTE = (
    "% right on each benchmark (its protocol's headline metric), ± the 95% interval over "
    "problems; (k/n): only k of n problems have every sample answered. docs/transfer.md."
)


def transfer_markdown(transfer: Mapping[str, Any], escape_md: Callable[[object], str]) -> list[str]:
    """The markdown lines of the transfer table."""
    headers, rows = _grid(transfer)
    lines = [NOTE, "", "| Model | " + " | ".join(escape_md(h) for h in headers) + " |"]
    lines.append("| --- |" + " ---: |" * len(headers))
    for label, found in rows:
        texts = [_headline(cell)[1] if cell else "-" for cell in found]
        lines.append(f"| {escape_md(label)} | " + " | ".join(texts) + " |")
    return lines


def transfer_panel(transfer: Mapping[str, Any]) -> str:
    """The page's Transfer tab: the same table, sortable."""
    headers, rows = _grid(transfer)
    columns = [Column("model", text=True), *(Column(escape(h), descending=True) for h in headers)]
    body: list[list[Cell]] = []
    for label, found in rows:
        line = [player_cell(label)]
        for cell in found:
            value, text = _headline(cell) if cell else (None, "-")
            line.append(number_cell(value, text))
        body.append(line)
    return f'<p class="note">{escape(NOTE)}</p>' + table(columns, body, "transfer evaluation")
