"""How soon each solver reaches a Leduc Hold'em policy of exploitability 1e-3 and 1e-4 (or 1e-6).

Compared: this package's numba CFR+, DCFR and PCFR+ (:mod:`opponents.cfr`), OpenSpiel's C++
``pyspiel.CFRPlusSolver``, OpenSpiel's JAX CFR+ (only when ``jax`` is installed) and
OpenSpiel's exact sequence-form LP (needs ``cvxpy`` with the ``ecos`` solver).

Iterative solvers run in chunks; exploitability is measured between chunks and its time is
not counted. The iteration at which a target is first met is found this way (checked every
``--check-every`` iterations for ours, or every 1% of the iterations done when that is more,
``--cpp-check-every`` for C++); for ours the time to
that iteration is then re-measured on a fresh solver in one go (median of ``--repeats``),
and the exploitability of that fresh solver's policy is measured again with OpenSpiel's own
(Python) ``exploitability``: the figure every target is judged by is the exact one.
Times include each solver's setup (our tree enumeration, C++ solver construction). The
numba compile time is reported apart: a cold compile in a subprocess with an empty cache,
and the first call of this process (compiled code loaded from the cache when present).

Usage::

    python benchmarks/bench_cfr.py [--json PATH] [--targets 1e-3 1e-4 1e-6] [--skip-cpp]
        [--algorithms cfr+ dcfr pcfr+]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyspiel

GAME = "leduc_poker"

_COLD_COMPILE = """
import time
start = time.perf_counter()
from opponents import cfr
solver = cfr.CFRSolver("leduc_poker")
solver.iterate(1)
solver.exploitability()
print(time.perf_counter() - start)
"""


def run_checkpointed(
    step: Callable[[int], None],
    measure: Callable[[], float],
    targets: Sequence[float],
    check_every: int,
    max_iterations: int,
    relative: float = 0.0,
) -> dict[str, Any]:
    """Step in chunks until every target is met; only ``step`` is timed.

    A chunk is ``check_every`` iterations, or ``relative`` times the iterations done when that
    is more (1%: a target met after 64,000 iterations is found within 640 of its first one).

    Returns:
        ``reached``: per target, the first checked iteration meeting it and the solver time
        spent until then; ``iterations``, ``seconds`` and ``exploitability`` at the end.
    """
    remaining = sorted(targets, reverse=True)
    reached: dict[str, dict[str, float]] = {}
    done, seconds, value = 0, 0.0, float("inf")
    while remaining and done < max_iterations:
        count = min(max(check_every, int(relative * done)), max_iterations - done)
        start = time.perf_counter()
        step(count)
        seconds += time.perf_counter() - start
        done += count
        value = measure()
        while remaining and value <= remaining[0]:
            reached[f"{remaining.pop(0):g}"] = {
                "iterations": done,
                "seconds": seconds,
                "exploitability": value,
            }
    return {"reached": reached, "iterations": done, "seconds": seconds, "exploitability": value}


def compile_times() -> dict[str, float]:
    """Cold numba compile (subprocess, empty cache) and this process's first call."""
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(root)}
        output = subprocess.run(
            [sys.executable, "-c", _COLD_COMPILE],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=root,
        ).stdout
    start = time.perf_counter()
    from opponents import cfr

    solver = cfr.CFRSolver(GAME)
    solver.iterate(1)
    solver.exploitability()
    warm = time.perf_counter() - start
    return {"cold_compile_s": float(output.strip().splitlines()[-1]), "first_call_s": warm}


def _clear_trees() -> None:
    """Forget the enumerated game trees, so that the next solver builds them again."""
    from opponents.cfr import tree

    tree._game_tree.cache_clear()
    tree.rank_infosets.cache_clear()


def bench_ours(
    algorithm: str, targets: Sequence[float], check_every: int, repeats: int
) -> dict[str, Any]:
    """Our solver: iterations to each target, then timed fresh runs of that many."""
    from open_spiel.python.algorithms import exploitability as openspiel_exploitability

    from opponents import cfr

    solver = cfr.CFRSolver(GAME, algorithm)
    result = run_checkpointed(
        solver.iterate, solver.exploitability, targets, check_every, 10**6, relative=0.01
    )
    for reached in result["reached"].values():
        iterations = int(reached["iterations"])
        times = []
        for _ in range(repeats):
            _clear_trees()  # setup included: enumerate the trees again
            start = time.perf_counter()
            fresh = cfr.CFRSolver(GAME, algorithm)
            fresh.iterate(iterations)
            times.append(time.perf_counter() - start)
        reached["seconds"] = statistics.median(times)
        reached["openspiel_exploitability"] = float(
            openspiel_exploitability.exploitability(pyspiel.load_game(GAME), fresh.average_policy())
        )
    setups = []
    for _ in range(repeats):
        _clear_trees()
        start = time.perf_counter()
        cfr.CFRSolver(GAME, algorithm)
        setups.append(time.perf_counter() - start)
    result["setup_s"] = statistics.median(setups)
    start = time.perf_counter()
    fresh = cfr.CFRSolver(GAME, algorithm)
    fresh.iterate(1000)
    result["ms_per_iteration"] = (time.perf_counter() - start) / 1000 * 1e3
    return result


def bench_cpp(targets: Sequence[float], check_every: int, max_iterations: int) -> dict[str, Any]:
    """OpenSpiel's C++ CFR+ (construction included in the times)."""
    game = pyspiel.load_game(GAME)
    start = time.perf_counter()
    solver = pyspiel.CFRPlusSolver(game)
    setup = time.perf_counter() - start

    def step(count: int) -> None:
        for _ in range(count):
            solver.evaluate_and_update_policy()

    def measure() -> float:
        return float(pyspiel.exploitability(game, solver.average_policy()))

    result = run_checkpointed(step, measure, targets, check_every, max_iterations)
    for reached in result["reached"].values():
        reached["seconds"] += setup
    result["setup_s"] = setup
    result["ms_per_iteration"] = result["seconds"] / max(result["iterations"], 1) * 1e3
    return result


def bench_jax(targets: Sequence[float], check_every: int, max_iterations: int) -> dict[str, Any]:
    """OpenSpiel's JAX CFR+ when jax is installed (a note otherwise)."""
    try:
        jax = importlib.import_module("jax")  # optional: not a dependency of this project
        from open_spiel.python.jax.cfr.jax_cfr import JaxCFR
    except ImportError:
        return {"skipped": "jax is not installed"}
    from open_spiel.python.algorithms import exploitability as openspiel_exploitability

    game = pyspiel.load_game(GAME)
    start = time.perf_counter()
    solver = JaxCFR(game)
    solver.step()  # compiles
    jax.block_until_ready(solver.averages)
    setup = time.perf_counter() - start

    def step(count: int) -> None:
        solver.multiple_steps(count)
        jax.block_until_ready(solver.averages)

    def measure() -> float:
        policy = solver.average_policy()
        return float(openspiel_exploitability.exploitability(game, policy))

    result = run_checkpointed(step, measure, targets, check_every, max_iterations)
    for reached in result["reached"].values():
        reached["seconds"] += setup
    result["setup_s"] = setup
    result["ms_per_iteration"] = result["seconds"] / max(result["iterations"], 1) * 1e3
    return result


def bench_lp() -> dict[str, Any]:
    """OpenSpiel's exact sequence-form LP (cvxpy + ECOS)."""
    try:
        from open_spiel.python.algorithms import sequence_form_lp
    except ImportError as error:
        return {"skipped": f"sequence-form LP unavailable ({error}); pip install cvxpy ecos"}
    from open_spiel.python import policy as openspiel_policy
    from open_spiel.python.algorithms import exploitability as openspiel_exploitability

    game = pyspiel.load_game(GAME)
    start = time.perf_counter()
    value, _, first, second = sequence_form_lp.solve_zero_sum_game(game)
    seconds = time.perf_counter() - start
    policy = openspiel_policy.merge_tabular_policies([first, second], game)
    return {
        "seconds": seconds,
        "value": float(value),
        "exploitability": float(openspiel_exploitability.exploitability(game, policy)),
    }


def _cell(result: dict[str, Any], target: str) -> tuple[str, str]:
    """Iterations and seconds to ``target``, or dashes."""
    reached = result.get("reached", {}).get(target)
    if reached is None:
        return "-", "-"
    return str(int(reached["iterations"])), f"{reached['seconds']:.3f}"


# The solvers of the table, in order, and their row labels.
_SOLVERS = {
    "ours_cfr+": "ours CFR+ (numba)",
    "ours_dcfr": "ours DCFR 1.5/0/2 (numba)",
    "ours_pcfr+": "ours PCFR+ gamma 10 (numba)",
    "openspiel_cpp_cfr+": "OpenSpiel C++ CFRPlusSolver",
    "openspiel_jax_cfr+": "OpenSpiel JAX CFR+",
}


def table(results: dict[str, Any], targets: Sequence[float]) -> str:
    """The results as a markdown table and speed-up lines."""
    keys = [f"{target:g}" for target in sorted(targets, reverse=True)]
    header = "| solver | setup s | ms/iter |"
    for key in keys:
        header += f" iters to {key} | s to {key} |"
    lines = [header + " final exploitability |", "|" + "---|" * (3 + 2 * len(keys) + 1)]
    for key, label in _SOLVERS.items():
        if results.get(key) is not None:
            lines.append(_solver_row(results[key], label, keys))
    lp = results.get("openspiel_lp")
    if lp is not None:
        lines.append(_lp_row(lp, keys))
    compile_ = results["numba"]
    lines.append("")
    lines.append(
        f"numba: cold compile (empty cache) {compile_['cold_compile_s']:.2f} s; first call in"
        f" this process {compile_['first_call_s']:.2f} s (not included above)"
    )
    lines += _speedup_lines(results, keys)
    if lp is not None and "seconds" in lp:
        lines += _lp_ratio_lines(results, lp["seconds"], keys)
    return "\n".join(lines)


def _solver_row(result: dict[str, Any], label: str, keys: Sequence[str]) -> str:
    """One solver's row: setup, speed, iterations and seconds to each target, final figure."""
    if "skipped" in result:
        return f"| {label} | skipped: {result['skipped']} |"
    row = f"| {label} | {result['setup_s']:.3f} | {result['ms_per_iteration']:.3f} |"
    for target in keys:
        iterations, seconds = _cell(result, target)
        row += f" {iterations} | {seconds} |"
    return row + f" {result['exploitability']:.3g} @ {result['iterations']} |"


def _lp_row(lp: dict[str, Any], keys: Sequence[str]) -> str:
    """The sequence-form LP's row: its one solve time under every target."""
    if "skipped" in lp:
        return f"| OpenSpiel sequence-form LP | skipped: {lp['skipped']} |"
    row = "| OpenSpiel sequence-form LP (ECOS) | - | - |"
    row += f" - | {lp['seconds']:.3f} |" * len(keys)
    return row + f" {lp['exploitability']:.3g} (exact) |"


def _speedup_lines(results: dict[str, Any], keys: Sequence[str]) -> list[str]:
    """Ours CFR+ against OpenSpiel's C++ and JAX CFR+: time ratios to each target both reach."""
    lines = []
    ours = results.get("ours_cfr+", {}).get("reached", {})
    for other_key, label in (("openspiel_cpp_cfr+", "C++ CFR+"), ("openspiel_jax_cfr+", "JAX")):
        other = results.get(other_key, {}).get("reached")
        if not other:
            continue
        for target in keys:
            if target in ours and target in other:
                ratio = other[target]["seconds"] / ours[target]["seconds"]
                lines.append(f"speed-up of ours CFR+ over {label} to {target}: {ratio:.0f}x")
    return lines


def _lp_ratio_lines(results: dict[str, Any], lp_seconds: float, keys: Sequence[str]) -> list[str]:
    """The LP's time over each of ours to each target it reached, with OpenSpiel's figure."""
    lines = []
    for algorithm, label in (("cfr+", "CFR+"), ("dcfr", "DCFR"), ("pcfr+", "PCFR+")):
        reached = results.get(f"ours_{algorithm}", {}).get("reached", {})
        for target in keys:
            if target in reached:
                ratio = lp_seconds / reached[target]["seconds"]
                exact = reached[target]["openspiel_exploitability"]
                lines.append(
                    f"LP time / ours {label} time to {target}: {ratio:.2f}x"
                    f" (OpenSpiel's exploitability of that policy: {exact:.3g})"
                )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=float, nargs="+", default=[1e-3, 1e-4])
    parser.add_argument("--check-every", type=int, default=10)
    parser.add_argument("--cpp-check-every", type=int, default=20)
    parser.add_argument("--cpp-max-iterations", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--algorithms", nargs="+", default=["cfr+", "dcfr", "pcfr+"], help="ours to run"
    )
    parser.add_argument("--skip-cpp", action="store_true", help="skip OpenSpiel's C++ CFR+")
    parser.add_argument("--skip-lp", action="store_true", help="skip the sequence-form LP")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    results: dict[str, Any] = {"game": GAME, "targets": args.targets}
    results["numba"] = compile_times()
    for algorithm in args.algorithms:
        results[f"ours_{algorithm}"] = bench_ours(
            algorithm, args.targets, args.check_every, args.repeats
        )
    if not args.skip_cpp:
        results["openspiel_cpp_cfr+"] = bench_cpp(
            args.targets, args.cpp_check_every, args.cpp_max_iterations
        )
    results["openspiel_jax_cfr+"] = bench_jax(
        args.targets, args.cpp_check_every, args.cpp_max_iterations
    )
    if not args.skip_lp:
        results["openspiel_lp"] = bench_lp()
    print(table(results, args.targets))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
