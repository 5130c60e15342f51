"""The use cases as library functions: what the CLI calls, callable (and checked) without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.endpoint import ModelOptions
from strategic_arena.arena.evaluate import evaluate
from strategic_arena.arena.replay import replay
from strategic_arena.grading.report import report

ROOT = Path(__file__).resolve().parents[1]


def test_evaluate_report_replay_without_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "lib.sqlite"
    announced: list[str] = []
    result = evaluate(
        db,
        ModelOptions(),  # no base URL: the solver suite, served over real HTTP
        envs=["kuhn_poker-v0"],
        opponents=["random"],
        num_games=2,
        announce=announced.append,
    )
    assert result.summary.played == 2 and result.unscored == 0
    assert result.run_name.startswith("eval-solver-suite-")
    # What is served; the embedded suite is sent no key, so no key line (a user's endpoint has one).
    assert len(announced) == 1 and "solver suite" in announced[0]
    # The same call resumes: the name derives from the settings, nothing is played again.
    again = evaluate(db, ModelOptions(), envs=["kuhn_poker-v0"], opponents=["random"], num_games=2)
    assert (again.run_name, again.summary.resumed, again.summary.played) == (
        result.run_name,
        2,
        0,
    )
    data = report(db, [result.run_name])
    assert data["grades"] == {"moves": [], "strategies": []}  # never graded
    assert {s["player"] for s in data["summaries"]} == {"solver-suite", "random"}
    replayed = replay(db, 1)
    assert replayed.game.env_id == "kuhn_poker-v0" and replayed.env.spiel_state.is_terminal()


def test_library_functions_refuse_a_missing_store(tmp_path: Path) -> None:
    missing = tmp_path / "none.sqlite"
    with pytest.raises(ValueError, match="no results store"):
        report(missing)
    with pytest.raises(ValueError, match="no results store"):
        replay(missing, 1)
    assert not missing.exists()


def test_import_layers_hold() -> None:
    """The contracts of pyproject's [tool.importlinter]: layers, a clean core, no cycles."""
    linter = Path(sys.executable).with_name("lint-imports")
    if not linter.exists():
        pytest.skip("import-linter (the [dev] extra) is not installed")
    result = subprocess.run(
        [str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout
