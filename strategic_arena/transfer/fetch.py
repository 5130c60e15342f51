"""``transfer fetch``: each benchmark's file written from its Hugging Face dataset.

Through the ``datasets`` library (the ``trl`` extra has it; imported here only), where the
network allows: each row of the benchmark's split is written as one JSON line, in the
dataset's own schema, to ``<data_dir>/<file>``. The generated ``arithmetic`` set needs no
network. The package ships no benchmark text; a machine without network gets, per benchmark,
one line naming the file expected and its source, so it can be copied from elsewhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from strategic_arena._extras import require
from strategic_arena.transfer.benchmarks import BENCHMARKS, arithmetic_file, benchmark

__all__ = ["fetch"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def fetch(names: Sequence[str], data_dir: str | Path) -> list[tuple[str, bool, str]]:
    """Write each benchmark's file; ``(name, written, message)`` per benchmark.

    A benchmark whose file exists is left alone (delete it to fetch again).
    """
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    outcome = []
    for name in names or sorted(BENCHMARKS):
        entry = benchmark(name)
        path = entry.path(folder)
        if path.exists():
            outcome.append((name, True, f"{path} exists (delete it to fetch again)"))
            continue
        if entry.hub is None:
            arithmetic_file(path)
            outcome.append((name, True, f"{path} written (generated)"))
            continue
        hub_path, config, split = entry.hub
        source = hub_path + (f" ({config})" if config else "") + f", split {split}"
        try:
            datasets = require("datasets", "transfer fetch")
            rows = datasets.load_dataset(hub_path, config, split=split)
            partial = path.with_name(path.name + ".partial")
            with partial.open("w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(_jsonable(row), ensure_ascii=False) + "\n")
            os.replace(partial, path)
        except Exception as error:  # offline, gated, no datasets: one line, the next benchmark
            reason = " ".join(f"{type(error).__name__}: {error}".split())[:200]
            outcome.append(
                (
                    name,
                    False,
                    f"cannot fetch {source} ({reason}); put the file at {path} in the "
                    f"{entry.schema} schema (docs/transfer.md)"
                    + (f"; {entry.note}" if entry.note else ""),
                )
            )
            continue
        outcome.append((name, True, f"{path} written from {source}"))
    return outcome
