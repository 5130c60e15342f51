"""The speed regression guard: run the benchmarks, write their figures, compare with the baseline.

Each guarded benchmark runs in its own process with ``--json``; :data:`GUARDED` says how and
which figures its results hold: ratios to the peer run in the same process (ours / PettingZoo,
numba MCTS / OpenSpiel's C++ ``MCTSBot``, the LP's time / ours to an exploitability...), which
hold across machines, and the arena harness's CPU ms per move, which is a property of the
machine (the baseline names it). Every figure says whether higher or lower is better.

    python benchmarks/compare.py                       # run all, write bench.json, compare
    python benchmarks/compare.py --only env_playouts,arena_overhead
    python benchmarks/compare.py --results bench.json  # compare figures already measured
    python benchmarks/compare.py --write-baseline      # run all and make them the baseline
    python benchmarks/compare.py --against main        # paired: this tree against main's code

A figure more than ``--tolerance`` (25%) worse than ``benchmarks/baseline.json`` is reported
and the exit status is 1. Timings on a shared machine are noisy, so this is not part of
``make test``; run it before a change to a hot path is submitted (``make bench`` does).

**Paired mode** (``--against REV``): a figure measured on another day under another load says
little about a change, so this mode measures the code of ``REV`` (its packages extracted with
``git archive`` into a temporary folder, put first on ``PYTHONPATH``) beside this tree's, with
the same benchmark scripts, in ``--rounds`` rounds that alternate which goes first (A B, B A,
...), the clocks that support it set to the thread's CPU time. A figure is judged by the median
over the rounds of its paired quotient this tree / ``REV``: a load that slows both sides alike
cancels, and a flag means the code changed speed.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = HERE / "baseline.json"

#: The folders that make up the code under test.
PACKAGES = ("strategic_arena", "opponents", "prompts")

Figures = dict[str, dict[str, Any]]


def higher(value: float, unit: str = "x") -> dict[str, Any]:
    """A figure where more is better (a speed ratio, a score)."""
    return {"value": float(value), "better": "higher", "unit": unit}


def lower(value: float, unit: str) -> dict[str, Any]:
    """A figure where less is better (CPU time per move)."""
    return {"value": float(value), "better": "lower", "unit": unit}


def env_playouts(results: dict[str, Any]) -> Figures:
    """Games/s of ours over PettingZoo and over raw pyspiel, per game."""
    return {
        f"{game} ours/{peer.removeprefix('ours/')} games/s": higher(ratio["games_per_s"])
        for game, peers in results["ratios"].items()
        for peer, ratio in peers.items()
    }


def mcts(results: dict[str, Any]) -> Figures:
    """Simulations/s of the numba search over OpenSpiel's C++ MCTSBot, per position."""
    return {
        f"{row['game']} {row['position']} numba/openspiel sims/s": higher(row["ratio"])
        for row in results["rows"]
    }


def cfr(results: dict[str, Any]) -> Figures:
    """The LP's time and OpenSpiel C++ CFR+'s time over ours (CFR+, DCFR, PCFR+), per target."""
    figures: Figures = {}
    lp = results.get("openspiel_lp", {})
    cpp = results.get("openspiel_cpp_cfr+", {}).get("reached", {})
    for algorithm in ("cfr+", "dcfr", "pcfr+"):
        ours = results.get(f"ours_{algorithm}", {}).get("reached", {})
        for target, reached in ours.items():
            if "seconds" in lp:
                figures[f"lp/ours {algorithm} time to {target}"] = higher(
                    lp["seconds"] / reached["seconds"]
                )
            if target in cpp:
                figures[f"openspiel c++ cfr+/ours {algorithm} time to {target}"] = higher(
                    cpp[target]["seconds"] / reached["seconds"]
                )
    return figures


def hanabi_bot(results: dict[str, Any]) -> Figures:
    """The partner's self-play mean score, and what it falls short of the best, per variant.

    Scores, not times: the seeds are fixed, so they move only when the bot's play changes. The
    shortfall is the figure the tolerance guards well (25% of a mean near 4 would let the bot
    lose a whole point; 25% of the shortfall is a few hundredths).
    """
    figures: Figures = {}
    for row in results["rows"]:
        if row["player"] == "hanabi_bot":
            env_id, best = row["env_id"], row["best"]
            figures[f"{env_id} self-play mean"] = higher(row["mean"], "points")
            figures[f"{env_id} self-play points short of {best:g}"] = lower(
                best - row["mean"], "points"
            )
    return figures


def connect_four_solver(results: dict[str, Any]) -> Figures:
    """Positions/s of our weak solver over OpenSpiel's alpha-beta, where both ran."""
    figures: Figures = {}
    for stones, row in results["sets"].items():
        theirs = row.get("openspiel alpha_beta_search")
        if theirs is not None:
            ratio = row["ours weak (W/D/L)"]["positions_per_s"] / theirs["positions_per_s"]
            figures[f"{stones} stones ours weak/openspiel alpha-beta pos/s"] = higher(ratio)
    return figures


def arena_overhead(results: dict[str, Any]) -> Figures:
    """The harness's CPU ms per move at each concurrency (a figure of this machine)."""
    return {
        f"harness ms/move at concurrency {row['concurrency']}": lower(row["ms_per_move"], "ms")
        for row in results["rows"]
    }


def textarena(results: dict[str, Any]) -> Figures:
    """Games/s of the TextArena adapter over TextArena's own loop, per game."""
    return {
        f"{row['env_id']} ours/textarena games/s": higher(row["ratio"]) for row in results["rows"]
    }


def rollout(results: list[dict[str, Any]]) -> Figures:
    """Tokens/s of the trainer's rollouts over the same requests posted directly, per model.

    Plain ``httpx`` (the goal's peer) and ``httpx`` over the trainer's own transport (what the
    trainer adds beyond HTTP).
    """
    figures: Figures = {}
    for row in results:
        model = Path(str(row["model"])).name
        figures[f"{model} trainer/plain vllm tokens/s"] = higher(row["ratio"])
        figures[f"{model} trainer/keep-alive vllm tokens/s"] = higher(row["ratio_keep_alive"])
    return figures


def hanabi_text(results: dict[str, Any]) -> Figures:
    """CPU ms per ``last()`` of ``hanabi_3p-v0`` over OpenSpiel's Hanabi env, text read or not."""
    return {
        f"hanabi_3p-v0 {mode} curated/openspiel ms per last()": lower(ratio, "x")
        for mode, ratio in results["ratios"].items()
    }


def cli_start(results: dict[str, Any]) -> Figures:
    """CPU seconds of each CLI command's whole process (a figure of this machine)."""
    return {
        f"{row['command']} CPU s": lower(row["cpu_s"], "s")
        for row in results["rows"]
        if row["command"].startswith("strategic-arena")
    }


def no_vllm() -> str | None:
    """Why the rollout benchmark cannot run here (no vLLM environment), or ``None``."""
    from strategic_arena.train.engines.vllm_server import default_vllm_python

    python = default_vllm_python()
    return None if Path(python).exists() else f"no vLLM environment at {python} (make vllm)"


@dataclass(frozen=True)
class Guarded:
    """A benchmark in the guard: its script, the arguments it runs with, its figures.

    ``paired``: the arguments added in paired mode (the thread's CPU clock where the script has
    one; OpenSpiel's C++ CFR+, minutes of a run, left out: both sides would time the same C++).
    ``unavailable``: why the benchmark cannot run on this machine (it is then skipped, saying
    so), or ``None``.
    """

    script: str
    arguments: tuple[str, ...]
    figures: Callable[[Any], Figures]
    paired: tuple[str, ...] = ()
    unavailable: Callable[[], str | None] | None = None


#: The benchmarks the guard runs, by name (about five minutes in all on two cores).
CPU_CLOCK = ("--clock", "cpu")
GUARDED: dict[str, Guarded] = {
    "env_playouts": Guarded("bench_env_playouts.py", (), env_playouts, CPU_CLOCK),
    "mcts": Guarded("bench_mcts.py", ("--no-compile", "--repeats", "21"), mcts, CPU_CLOCK),
    "cfr": Guarded("bench_cfr.py", ("--targets", "1e-3", "1e-4", "1e-6"), cfr, ("--skip-cpp",)),
    "hanabi_bot": Guarded("bench_hanabi_bot.py", (), hanabi_bot),
    "connect_four_solver": Guarded("bench_connect_four_solver.py", (), connect_four_solver),
    "arena_overhead": Guarded("bench_arena_overhead.py", ("--games", "200"), arena_overhead),
    "textarena": Guarded(
        "bench_textarena.py", ("--games", "50", "--repeats", "5"), textarena, CPU_CLOCK
    ),
    "hanabi_text": Guarded("bench_hanabi_text.py", (), hanabi_text),
    "cli_start": Guarded("bench_cli_start.py", (), cli_start),
    "rollout": Guarded(
        "bench_rollout.py", ("--models", "tiny", "--repeats", "3"), rollout, unavailable=no_vllm
    ),
}


@dataclass(frozen=True)
class Goal:
    """A speed goal: figures matching ``pattern`` (``fnmatch``) at least / at most ``bound``.

    At least where higher is better, at most where lower is. Goals are reported, not enforced:
    a missed goal is a figure to improve, not a regression.
    """

    pattern: str
    bound: float


#: The speed goals set for the guarded figures (benchmarks/README.md says what limits the
#: ones not met).
GOALS: tuple[Goal, ...] = (
    Goal("rollout/tiny trainer/plain vllm tokens/s", 0.8),
    Goal("hanabi_text/hanabi_3p-v0 text read curated/openspiel ms per last()", 3.0),
    Goal("textarena/* ours/textarena games/s", 1.0),
    Goal("env_playouts/* ours/pettingzoo games/s", 10.0),
    Goal("env_playouts/* ours/pyspiel games/s", 0.33),
    Goal("mcts/tic_tac_toe * numba/openspiel sims/s", 10.0),
    Goal("mcts/connect_four 12 moves numba/openspiel sims/s", 15.0),
    Goal("cli_start/strategic-arena --help CPU s", 0.5),
    Goal("cli_start/strategic-arena eval --help CPU s", 0.5),
)


def goal_lines(figures: Figures) -> list[str]:
    """A line per figure a goal covers: met or missed, the figure and the goal."""
    lines = []
    for name, figure in sorted(figures.items()):
        for goal in GOALS:
            if fnmatch.fnmatchcase(name, goal.pattern):
                at_least = figure["better"] == "higher"
                met = figure["value"] >= goal.bound if at_least else figure["value"] <= goal.bound
                sign = ">=" if at_least else "<="
                lines.append(
                    f"{'met' if met else 'MISSED':6} {name}: {figure['value']:.4g} "
                    f"(goal {sign} {goal.bound:g})"
                )
    return lines


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def run(names: list[str], code: Path | None = None, label: str = "") -> dict[str, Any]:
    """Run the benchmarks ``names``; their figures by ``benchmark/figure``.

    ``code``: the folder whose packages are measured, first on ``PYTHONPATH``, with the
    paired arguments (paired mode); ``None``: whatever Python finds, the guard's arguments.
    """
    figures: Figures = {}
    failed: list[str] = []
    env = None
    if code is not None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(ROOT)])}
    skipped: dict[str, str] = {}
    for name in names:
        guarded = GUARDED[name]
        reason = guarded.unavailable() if guarded.unavailable else None
        if reason is not None:
            print(f"== {name}{label}: skipped, {reason}", flush=True)
            skipped[name] = reason
            continue
        arguments = (*guarded.arguments, *guarded.paired) if code else guarded.arguments
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.json"
            command = [sys.executable, str(HERE / guarded.script), *arguments]
            print(f"== {name}{label}: {' '.join(command[1:])}", flush=True)
            done = subprocess.run([*command, "--json", str(out)], check=False, env=env)
            if done.returncode != 0:
                failed.append(name)  # the others still run; the comparison names it
                continue
            results = json.loads(out.read_text())
        for figure, value in guarded.figures(results).items():
            figures[f"{name}/{figure}"] = value
    return {"machine": machine(), "figures": figures, "failed": failed, "skipped": skipped}


def resolve(revision: str) -> str:
    """The commit ``revision`` names in this repository.

    Raises:
        ValueError: it names none (the message says which revision).
    """
    found = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
        check=False,
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        raise ValueError(f"--against {revision!r} names no commit of {ROOT}")
    return found.stdout.strip()


@contextmanager
def code_of(revision: str) -> Iterator[tuple[Path, str]]:
    """The packages of ``revision`` in a temporary folder, and the commit it names.

    ``git archive`` of :data:`PACKAGES` (the prompt files stay in ``prompts/`` beside the
    package, where a checkout keeps them), so that the folder alone is that commit's code.
    """
    commit = resolve(revision)
    with tempfile.TemporaryDirectory(prefix="guard-reference-") as tmp:
        archive = Path(tmp) / "code.tar"
        subprocess.run(
            ["git", "-C", str(ROOT), "archive", "-o", str(archive), commit, *PACKAGES],
            check=True,
        )
        code = Path(tmp) / "code"
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.10.12+, 3.11.4+
                tar.extractall(code, filter="data")
            else:  # our own repository's archive
                tar.extractall(code)
        yield code, commit


def run_paired(names: list[str], revision: str, rounds: int) -> dict[str, Any]:
    """Run ``names`` on this tree and on ``revision``'s code, ``rounds`` times, alternating."""
    with code_of(revision) as (reference, commit):
        measured: list[dict[str, Figures]] = []
        failed: set[str] = set()
        skipped: dict[str, str] = {}
        for index in range(rounds):
            sides = [("current", ROOT), ("reference", reference)]
            if index % 2:
                sides.reverse()
            pair: dict[str, Figures] = {}
            for side, code in sides:
                label = f" ({side}, round {index + 1} of {rounds})"
                result = run(names, code, label)
                pair[side] = result["figures"]
                failed.update(result["failed"])
                skipped.update(result["skipped"])
            measured.append(pair)
    return {
        "machine": machine(),
        "against": {"revision": revision, "commit": commit},
        "rounds": measured,
        "failed": sorted(failed),
        "skipped": skipped,
    }


def current_figures(measured: dict[str, Any]) -> Figures:
    """This tree's figures: as measured, or (paired) each the median over the rounds."""
    if "rounds" not in measured:
        figures: Figures = measured["figures"]
        return figures
    values: dict[str, list[float]] = {}
    kinds: Figures = {}
    for pair in measured["rounds"]:
        for name, figure in pair["current"].items():
            values.setdefault(name, []).append(figure["value"])
            kinds[name] = figure
    return {name: {**kinds[name], "value": statistics.median(v)} for name, v in values.items()}


def quotient(value: float, reference: float) -> float:
    """``value / reference``, with 0 / 0 as 1 (a shortfall of none both times)."""
    if reference == 0:
        return 1.0 if value == 0 else float("inf")
    return value / reference


def compare_paired(measured: dict[str, Any], tolerance: float) -> tuple[list[str], list[str]]:
    """Lines for every figure both sides measured in every round, and the regressions.

    A figure regresses when the median over the rounds of this tree's value / the reference's
    is below ``1 - tolerance`` where higher is better, above ``1 + tolerance`` where lower is.
    """
    rounds = measured["rounds"]
    names = (
        set.intersection(*(set(pair["current"]) & set(pair["reference"]) for pair in rounds))
        if rounds
        else set()
    )
    lines, regressions = [], []
    for name in sorted(names):
        better = rounds[0]["current"][name]["better"]
        quotients = sorted(
            quotient(pair["current"][name]["value"], pair["reference"][name]["value"])
            for pair in rounds
        )
        middle = statistics.median(quotients)
        worse = middle < 1 - tolerance if better == "higher" else middle > 1 + tolerance
        current = statistics.median(pair["current"][name]["value"] for pair in rounds)
        reference = statistics.median(pair["reference"][name]["value"] for pair in rounds)
        line = f"{'WORSE' if worse else 'ok':5} {name}: {current:.4g} (reference {reference:.4g}; "
        line += f"paired {middle - 1:+.0%}, rounds {quotients[0] - 1:+.0%} to "
        line += f"{quotients[-1] - 1:+.0%}; {better} is better)"
        lines.append(line)
        if worse:
            regressions.append(line)
    return lines, regressions


def compare(
    measured: dict[str, Any], baseline: dict[str, Any], tolerance: float
) -> tuple[list[str], list[str]]:
    """Lines for every figure measured, and the regressions among them.

    A figure regresses when it is more than ``tolerance`` worse: below ``(1 - tolerance)`` of
    the baseline where higher is better, above ``(1 + tolerance)`` where lower is. A figure the
    baseline lacks gets a ``new`` line and is not judged.
    """
    lines = [
        f"new   {name}: {now['value']:.4g} (not in the baseline)"
        for name, now in sorted(measured["figures"].items())
        if name not in baseline["figures"]
    ]
    regressions = []
    for name, base in sorted(baseline["figures"].items()):
        now = measured["figures"].get(name)
        if now is None:
            continue
        value, reference = now["value"], base["value"]
        if base["better"] == "higher":
            worse = value < (1 - tolerance) * reference
        else:
            worse = value > (1 + tolerance) * reference
        change = value / reference - 1 if reference else 0.0
        line = f"{'WORSE' if worse else 'ok':5} {name}: {value:.4g} (baseline {reference:.4g}, "
        line += f"{change:+.0%}, {base['better']} is better)"
        lines.append(line)
        if worse:
            regressions.append(line)
    return lines, regressions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated benchmark names (default: all)")
    parser.add_argument("--results", type=Path, help="compare this results file; run nothing")
    parser.add_argument("--out", type=Path, default=Path("bench.json"), help="results file")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument("--tolerance", type=float, default=0.25)
    parser.add_argument(
        "--write-baseline", action="store_true", help="write the measured figures as the baseline"
    )
    parser.add_argument(
        "--against",
        metavar="REV",
        help="paired mode: measure REV's code beside this tree's; compare them, not the baseline",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="paired mode: rounds, alternating which side first"
    )
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(GUARDED)
    unknown = [name for name in names if name not in GUARDED]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(GUARDED)}")
    if args.against is not None and args.write_baseline:
        parser.error("--write-baseline takes figures of one tree: not with --against")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.against is not None and args.results is None:
        try:
            resolve(args.against)  # before minutes of benchmarks, not after
        except ValueError as error:
            parser.error(str(error))
    if args.results is not None:
        measured = json.loads(args.results.read_text())
    else:
        measured = run_paired(names, args.against, args.rounds) if args.against else run(names)
        args.out.write_text(json.dumps(measured, indent=2, sort_keys=True) + "\n")
        print(f"figures written to {args.out}")
    if "rounds" in measured:
        return verdict(*compare_paired(measured, args.tolerance), measured, args.tolerance)
    if args.write_baseline:
        if measured.get("failed"):
            print(f"not written: {', '.join(measured['failed'])} failed")
            return 1
        old = json.loads(args.baseline.read_text()) if args.baseline.exists() else {"figures": {}}
        old["figures"].update(measured["figures"])
        old["machine"] = measured["machine"]
        args.baseline.write_text(json.dumps(old, indent=2, sort_keys=True) + "\n")
        print(f"baseline written to {args.baseline}")
        return 0
    lines, regressions = compare(measured, json.loads(args.baseline.read_text()), args.tolerance)
    return verdict(lines, regressions, measured, args.tolerance)


def verdict(
    lines: list[str], regressions: list[str], measured: dict[str, Any], tolerance: float
) -> int:
    """Print the comparison and the goals; 1 if a benchmark failed or a figure regressed."""
    against = measured.get("against")
    reference = f"{against['revision']} ({against['commit'][:12]})" if against else "the baseline"
    print("\n".join(lines))
    goals = goal_lines(current_figures(measured))
    if goals:
        print("goals (reported, not enforced):")
        print("\n".join(goals))
    for name, reason in measured.get("skipped", {}).items():
        print(f"skipped {name}: {reason}")
    if measured.get("failed"):
        print(f"benchmarks that failed (no figures): {', '.join(measured['failed'])}")
        return 1
    if regressions:
        print(f"{len(regressions)} figure(s) more than {tolerance:.0%} worse than {reference}")
        return 1
    print(f"every figure within {tolerance:.0%} of {reference}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
