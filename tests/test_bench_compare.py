"""The speed regression guard's verdicts (benchmarks/compare.py) on known figures."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.compare import GUARDED, compare, higher, lower, main


def figures(**values: dict[str, object]) -> dict[str, object]:
    return {"machine": {}, "figures": values}


def test_a_figure_more_than_the_tolerance_worse_is_a_regression() -> None:
    baseline = figures(ratio=higher(10.0), ms=lower(0.5, "ms"))
    within = figures(ratio=higher(7.6), ms=lower(0.62, "ms"))
    lines, regressions = compare(within, baseline, 0.25)
    assert len(lines) == 2 and regressions == []
    worse = figures(ratio=higher(7.4), ms=lower(0.63, "ms"))
    _, regressions = compare(worse, baseline, 0.25)
    assert [line.split()[1] for line in regressions] == ["ms:", "ratio:"]
    better = figures(ratio=higher(30.0), ms=lower(0.1, "ms"))
    assert compare(better, baseline, 0.25)[1] == []


def test_figures_missing_from_the_baseline_or_the_results_are_not_judged() -> None:
    baseline = figures(kept=higher(1.0))
    measured = figures(new=higher(0.01))
    assert compare(measured, baseline, 0.25) == ([], [])


def test_the_command_exits_1_on_a_regression(tmp_path: Path) -> None:
    base, results = tmp_path / "base.json", tmp_path / "bench.json"
    base.write_text(json.dumps(figures(ratio=higher(10.0))))
    results.write_text(json.dumps(figures(ratio=higher(5.0))))
    assert main(["--results", str(results), "--baseline", str(base)]) == 1
    results.write_text(json.dumps(figures(ratio=higher(9.0))))
    assert main(["--results", str(results), "--baseline", str(base)]) == 0


def test_every_guarded_benchmark_reads_its_own_results_shape() -> None:
    assert set(GUARDED) >= {"env_playouts", "mcts", "cfr", "arena_overhead", "textarena"}
    arena = {"rows": [{"concurrency": 64, "ms_per_move": 0.4}]}
    assert GUARDED["arena_overhead"].figures(arena) == {
        "harness ms/move at concurrency 64": lower(0.4, "ms")
    }
    playouts = {"ratios": {"tic_tac_toe": {"ours/pettingzoo": {"games_per_s": 9.0}}}}
    assert GUARDED["env_playouts"].figures(playouts) == {
        "tic_tac_toe ours/pettingzoo games/s": higher(9.0)
    }


def test_the_hanabi_partner_falling_back_to_its_rules_is_a_regression() -> None:
    # Its mean would fall 3.957 -> 3.457, within 25%; the shortfall from 4 grows twelvefold.
    def hanabi(mean: float) -> dict[str, dict[str, object]]:
        rows = [{"env_id": "mini_hanabi-v0", "player": "hanabi_bot", "best": 4.0, "mean": mean}]
        rows.append({"env_id": "mini_hanabi-v0", "player": "rules", "best": 4.0, "mean": 3.0})
        return GUARDED["hanabi_bot"].figures({"rows": rows})

    assert set(hanabi(3.957)) == {
        "mini_hanabi-v0 self-play mean",
        "mini_hanabi-v0 self-play points short of 4",
    }
    baseline = figures(**hanabi(3.957))
    _, regressions = compare(figures(**hanabi(3.457)), baseline, 0.25)
    assert [line.split(":")[0] for line in regressions] == [
        "WORSE mini_hanabi-v0 self-play points short of 4"
    ]
    assert compare(figures(**hanabi(3.95)), baseline, 0.25)[1] == []
