"""The CLI's start: CPU seconds of ``strategic-arena --help`` and ``eval --help``, whole process.

Each command runs as a fresh process (``python -m strategic_arena.cli ...``, output discarded),
``--repeats`` times after a warm-up, interleaved with the peer, the interpreter's own start
printing an ``argparse`` help (``python -c ...``): the floor any Python CLI pays. CPU time is
the child's user + system time (``resource.getrusage(RUSAGE_CHILDREN)`` before and after), so a
busy machine inflates it less than wall time; wall time is printed beside it. Prints the
median of each and each command's ratio to the peer; ``--json`` writes them.

    python benchmarks/bench_cli_start.py [--repeats 9] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: (label, arguments after the interpreter).
COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("python + argparse help", ("-c", "import argparse; argparse.ArgumentParser().print_help()")),
    ("strategic-arena --help", ("-m", "strategic_arena.cli", "--help")),
    ("strategic-arena eval --help", ("-m", "strategic_arena.cli", "eval", "--help")),
)
PEER = COMMANDS[0][0]


def timed(arguments: Sequence[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of ``python arguments``; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, *arguments], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="counted runs of each command")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    for _label, arguments in COMMANDS:  # warm-up: the file cache, __pycache__
        timed(arguments)
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in COMMANDS}
    for _ in range(args.repeats):
        for label, arguments in COMMANDS:
            runs[label].append(timed(arguments))
    rows: list[dict[str, Any]] = []
    peer_cpu = statistics.median(cpu for cpu, _ in runs[PEER])
    for label, measured in runs.items():
        cpu = statistics.median(c for c, _ in measured)
        rows.append(
            {
                "command": label,
                "cpu_s": cpu,
                "wall_s": statistics.median(w for _, w in measured),
                "cpu_range": [min(c for c, _ in measured), max(c for c, _ in measured)],
                "ratio_to_peer": cpu / peer_cpu,
            }
        )
    version = sys.version.split()[0]
    print(f"median of {args.repeats} interleaved runs after a warm-up; python {version}")
    print(f"{'command':<30} {'CPU s':>7} {'range':>13} {'wall s':>7} {'/ peer':>7}")
    for row in rows:
        low, high = row["cpu_range"]
        print(
            f"{row['command']:<30} {row['cpu_s']:>7.3f} {f'{low:.3f}-{high:.3f}':>13} "
            f"{row['wall_s']:>7.3f} {row['ratio_to_peer']:>6.1f}x"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"repeats": args.repeats, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
