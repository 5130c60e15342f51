"""The CLI with opponents: ``solve`` and solver players in ``play``."""

from __future__ import annotations

from pathlib import Path

import pytest

from opponents.equilibrium import load_policy
from strategic_arena.cli import main


def test_solve_writes_policies_and_prints_exploitability(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["solve", "--out", str(tmp_path), "--iterations", "2000", "--target", "1e-3"]) == 0
    out = capsys.readouterr().out
    assert "kuhn_poker-v0" in out and "leduc_holdem-v0" in out and "exploitability" in out
    for name in ("kuhn_poker.npz", "leduc_poker.npz"):
        assert load_policy(tmp_path / name) is not None


def test_solve_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "--iterations", "0"]) == 2
    assert "must be positive" in capsys.readouterr().err


def test_play_with_solver_players(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "kuhn_poker-v0", "--players", "nash", "random", "--no-prompts"]) == 0
    assert "=== game over" in capsys.readouterr().out
    assert main(["play", "kuhn_poker-v0", "--players", "nash:colour=3", "random"]) == 2
    assert "no parameter 'colour'" in capsys.readouterr().err
