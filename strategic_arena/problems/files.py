"""Reading the rows of a benchmark file: JSON Lines, a JSON array, or CSV.

Benchmarks are published as JSON Lines (Qwen2.5-Math's evaluation data, the Hugging Face
exports ``transfer fetch`` writes), JSON arrays or CSV (GPQA's own release). Each reader yields
``(line, row)`` pairs, ``line`` being the 1-based line (JSONL, CSV) or item number (JSON array)
that error messages name. A file that cannot be read is one :class:`ProblemFileError` line:
the file, the line and what is wrong.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["ProblemFileError", "read_rows"]

#: CSV fields may be long (GPQA's explanations run to several kilobytes).
_CSV_FIELD_LIMIT = 1 << 24


class ProblemFileError(ValueError):
    """A benchmark file that cannot be read: ``<file>:<line>: <what is wrong>``."""

    def __init__(self, path: str | Path, line: int | None, what: str) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {what}")
        self.path = str(path)
        self.line = line


def read_rows(path: str | Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """Each row of ``path`` (``.jsonl``, ``.json`` or ``.csv``) with its line number."""
    path = Path(path)
    if not path.is_file():
        raise ProblemFileError(path, None, "no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            yield from _csv_rows(path)
        elif suffix == ".json":
            yield from _json_rows(path)
        else:
            yield from _jsonl_rows(path)
    except UnicodeDecodeError as error:
        raise ProblemFileError(path, None, f"not UTF-8 text ({error.reason})") from None


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ProblemFileError(path, number, f"not JSON ({error.msg})") from None
            if not isinstance(row, dict):
                raise ProblemFileError(path, number, "a row must be a JSON object")
            yield number, row


def _json_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ProblemFileError(path, error.lineno, f"not JSON ({error.msg})") from None
    if isinstance(data, dict) and len(data) == 1 and isinstance(next(iter(data.values())), list):
        data = next(iter(data.values()))  # {"test": [...]} as some exports write it
    if not isinstance(data, list):
        raise ProblemFileError(path, None, "a .json benchmark file must be an array of objects")
    for number, row in enumerate(data, start=1):
        if not isinstance(row, dict):
            raise ProblemFileError(path, number, "a row must be a JSON object")
        yield number, row


def _csv_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    csv.field_size_limit(_CSV_FIELD_LIMIT)
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        try:
            for row in reader:
                yield reader.line_num, row
        except csv.Error as error:
            raise ProblemFileError(path, reader.line_num, f"not CSV ({error})") from None
