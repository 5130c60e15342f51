"""The speed regression guard's verdicts (benchmarks/compare.py) on known figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.compare import (
    GUARDED,
    ROOT,
    code_of,
    compare,
    compare_paired,
    goal_lines,
    higher,
    lower,
    main,
)


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
    lines, regressions = compare(measured, baseline, 0.25)
    assert regressions == [] and [line.split()[0] for line in lines] == ["new"]


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


def paired_rounds(*pairs: tuple[float, float], better: str = "higher") -> dict[str, object]:
    def figure(value: float) -> dict[str, object]:
        return higher(value) if better == "higher" else lower(value, "ms")

    rounds = [{"current": {"f": figure(a)}, "reference": {"f": figure(b)}} for a, b in pairs]
    return {"machine": {}, "against": {"revision": "main", "commit": "0" * 40}, "rounds": rounds}


def test_paired_mode_judges_the_median_quotient_of_each_round() -> None:
    # A load that halves both sides of a round cancels; the code's own change does not.
    assert compare_paired(paired_rounds((5.0, 10.0), (4.0, 8.0), (19.0, 20.0)), 0.25)[1] != []
    assert compare_paired(paired_rounds((5.0, 6.0), (2.0, 2.2), (9.0, 10.0)), 0.25)[1] == []
    slower = paired_rounds((0.6, 0.4), (1.3, 1.0), better="lower")
    assert compare_paired(slower, 0.25)[1] != []  # +50% and +30% of ms per move
    assert compare_paired(paired_rounds((0.4, 0.4), better="lower"), 0.25)[1] == []
    none_short = paired_rounds((0.0, 0.0), better="lower")  # a shortfall of none both times
    assert compare_paired(none_short, 0.25) == (compare_paired(none_short, 0.25)[0], [])


def test_paired_mode_compares_only_figures_of_both_sides_in_every_round() -> None:
    measured = paired_rounds((1.0, 1.0), (1.0, 1.0))
    measured["rounds"][1]["current"] = {}  # type: ignore[index]
    assert compare_paired(measured, 0.25) == ([], [])


def test_paired_results_exit_1_on_a_regression(tmp_path: Path) -> None:
    results = tmp_path / "bench.json"
    results.write_text(json.dumps(paired_rounds((5.0, 10.0), (6.0, 10.0))))
    assert main(["--results", str(results)]) == 1
    results.write_text(json.dumps(paired_rounds((9.0, 10.0), (10.0, 10.0))))
    assert main(["--results", str(results)]) == 0


def test_the_reference_code_is_that_commits_packages_alone_on_the_path() -> None:
    script = (
        "import strategic_arena, opponents;"
        "from strategic_arena.prompt_files import package_root;"
        "print(strategic_arena.__file__, opponents.__file__, package_root(), sep='\\n')"
    )
    with code_of("HEAD") as (code, commit):
        assert len(commit) == 40
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(ROOT)])}
        done = subprocess.run(  # -P: no current folder first on the path, as for a script
            [sys.executable, "-P", "-c", script], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        files = done.stdout.split()
        assert len(files) == 3 and all(Path(f).is_relative_to(code) for f in files), files
    assert not code.exists()


def test_goals_are_reported_met_or_missed_by_the_figures_direction() -> None:
    lines = goal_lines(
        {
            "mcts/tic_tac_toe start numba/openspiel sims/s": higher(5.6),
            "mcts/connect_four 12 moves numba/openspiel sims/s": higher(15.0),
            "cli_start/strategic-arena --help CPU s": lower(0.12, "s"),
            "rollout/tiny trainer/plain vllm tokens/s": higher(0.79),
            "cfr/lp/ours cfr+ time to 0.001": higher(7.0),  # no goal
        }
    )
    assert [line.split(":")[0].split(maxsplit=1) for line in lines] == [
        ["met", "cli_start/strategic-arena --help CPU s"],
        ["met", "mcts/connect_four 12 moves numba/openspiel sims/s"],
        ["MISSED", "mcts/tic_tac_toe start numba/openspiel sims/s"],
        ["MISSED", "rollout/tiny trainer/plain vllm tokens/s"],
    ]


def test_new_figures_are_shown_not_judged_and_skips_do_not_fail(tmp_path: Path) -> None:
    base, results = tmp_path / "base.json", tmp_path / "bench.json"
    base.write_text(json.dumps(figures(ratio=higher(10.0))))
    measured = figures(ratio=higher(10.0), fresh=higher(0.01))
    assert compare(measured, json.loads(base.read_text()), 0.25)[1] == []
    assert compare(measured, json.loads(base.read_text()), 0.25)[0][0].startswith("new   fresh")
    measured["skipped"] = {"rollout": "no vLLM environment"}
    results.write_text(json.dumps(measured))
    assert main(["--results", str(results), "--baseline", str(base)]) == 0


def test_the_new_benchmarks_figures_from_their_results() -> None:
    rollout = [{"model": "tiny", "ratio": 1.9, "ratio_keep_alive": 0.7}]
    assert GUARDED["rollout"].figures(rollout) == {
        "tiny trainer/plain vllm tokens/s": higher(1.9),
        "tiny trainer/keep-alive vllm tokens/s": higher(0.7),
    }
    hanabi = {"ratios": {"text read": 12.5, "text unread": 0.9}}
    assert GUARDED["hanabi_text"].figures(hanabi)[
        "hanabi_3p-v0 text read curated/openspiel ms per last()"
    ] == lower(12.5, "x")
    cli = {"rows": [{"command": "python + argparse help", "cpu_s": 0.03}]}
    cli["rows"].append({"command": "strategic-arena --help", "cpu_s": 0.12})
    assert GUARDED["cli_start"].figures(cli) == {"strategic-arena --help CPU s": lower(0.12, "s")}


def test_a_revision_that_names_no_commit_is_one_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--against", "no-such-revision", "--only", "cli_start"])
    assert exit_.value.code == 2
    assert "'no-such-revision' names no commit" in capsys.readouterr().err
