"""Reading the rows of a benchmark file: JSON Lines, a JSON array, or CSV.

Benchmarks are published as JSON Lines (Qwen2.5-Math's evaluation data, the Hugging Face
exports ``transfer fetch`` writes), JSON arrays or CSV (GPQA's own release). Each reader yields
``(line, row)`` pairs, ``line`` being the 1-based line (JSONL, CSV) or item number (JSON array)
that error messages name. A file that cannot be read is one :class:`ProblemFileError` line:
the file, the line and what is wrong.

A benchmark file is named by a user or a config, so it is read through the door
(:mod:`strategic_arena.door`) as a ``data`` file: a regular file, no link as the file itself,
within the size cap of data, UTF-8; a JSON-lines row longer than the door's line cap or a JSON
value nested deeper than its depth bound is refused in one line, never decoded whole.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from strategic_arena.door import Refused, read_json, read_json_lines, read_text

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

    @classmethod
    def refused(cls, path: str | Path, refusal: Refused) -> ProblemFileError:
        """The door's refusal of ``path`` as is: its one line names the file (and the line)."""
        error = cls(path, None, "")
        error.args = (str(refusal),)
        return error


def read_rows(path: str | Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """Each row of ``path`` (``.jsonl``, ``.json`` or ``.csv``) with its line number.

    Raises:
        ProblemFileError: no such file, the door refused it (not a regular file, too large,
            not UTF-8, a line too long, not JSON, nested too deeply), or a row is not an
            object: one line.
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise ProblemFileError(path, None, "no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            yield from _csv_rows(path)
        elif suffix == ".json":
            yield from _json_rows(path)
        else:
            yield from _jsonl_rows(path)
    except Refused as refusal:
        raise ProblemFileError.refused(path, refusal) from None


def _jsonl_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for number, row in read_json_lines(path, "data"):
        if not isinstance(row, dict):
            raise ProblemFileError(path, number, "a row must be a JSON object")
        yield number, row


def _json_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    data = read_json(path, "data")
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
    reader = csv.DictReader(io.StringIO(read_text(path, "data"), newline=""))
    try:
        for row in reader:
            yield reader.line_num, row
    except csv.Error as error:
        raise ProblemFileError(path, reader.line_num, f"not CSV ({error})") from None
