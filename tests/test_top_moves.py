"""SPIN-Bench's per-move measure: the share of moves among those an exact solver ranks best.

One definition (:func:`strategic_arena.grading.moves.is_top_move`: the move keeps the
position's exact value) serves the grades, the report and the page. These tests check it
against the definition itself -- every legal move valued, the best ones listed -- on random
Tic-Tac-Toe and Connect Four positions, then that the report and the published page show the
share for both games.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyspiel
import pytest

from opponents.minimax import MinimaxPlayer
from strategic_arena.cli import main
from strategic_arena.grading.moves import PositionValues, is_top_move
from strategic_arena.grading.tables import MoveGrade
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import Player
from tests.test_grading import _store_games, reported_moves

pytest.importorskip("numba", reason="the Connect Four solver needs the [solvers] extra")


def random_positions(game: str, count: int, plies: range, seed: int) -> list[list[int]]:
    """Histories of ``count`` random non-terminal positions after a number of plies in ``plies``."""
    rng = np.random.default_rng(seed)
    spiel = pyspiel.load_game(game)
    found: list[list[int]] = []
    while len(found) < count:
        state, history = spiel.new_initial_state(), []
        for _ in range(int(rng.integers(plies.start, plies.stop))):
            if state.is_terminal():
                break
            action = int(rng.choice(state.legal_actions()))
            state.apply_action(action)
            history.append(action)
        if not state.is_terminal():
            found.append(history)
    return found


@pytest.mark.parametrize(
    ("env_id", "game", "plies"),
    [
        ("tic_tac_toe-v0", "tic_tac_toe", range(0, 7)),
        ("connect_four-v0", "connect_four", range(18, 26)),
    ],
)
def test_a_top_move_is_one_the_solver_ranks_best(env_id: str, game: str, plies: range) -> None:
    values = PositionValues(None, max_nodes=2_000_000)
    spiel = pyspiel.load_game(game)
    checked = tops = 0
    for history in random_positions(game, 12, plies, seed=7):
        state = spiel.new_initial_state()
        for action in history:
            state.apply_action(action)
        before = values.value(env_id, history)
        after = {a: values.value(env_id, [*history, a]) for a in state.legal_actions()}
        if before is None or None in after.values():
            continue  # past the node budget: never graded
        scores = {a: -v for a, v in after.items() if v is not None}
        best = {a for a, score in scores.items() if score == max(scores.values())}
        for action, score in scores.items():
            grade = MoveGrade(0, len(history), 0, "p", "q", env_id, "graded", before, score)
            assert is_top_move(grade) == (action in best), (history, action)
            checked += 1
            tops += action in best
    assert checked > 40 and 0 < tops < checked  # both kinds of move were met
    invalid = MoveGrade(0, 0, 0, "p", "q", env_id, "invalid")
    assert not is_top_move(invalid)


def test_the_report_and_the_page_show_the_top_move_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    games: list[tuple[str, Sequence[Player], int]] = []
    for seed in range(2):
        pair = [MinimaxPlayer(seed=seed, name="minimax"), RandomPlayer(seed, name="random")]
        games.append(("tic_tac_toe-v0", pair[:: 1 if seed else -1], seed))
        c4 = [RandomPlayer(seed, name="random"), RandomPlayer(seed + 1, name="random-2")]
        games.append(("connect_four-v0", c4, seed))
    _store_games(db, games)
    # Before grading: Tic-Tac-Toe's share comes with the report; Connect Four's needs `grade`.
    assert {r["env_id"] for r in reported_moves(db, capsys)} == {"tic_tac_toe-v0"}
    grade = ["grade", "--db", str(db), "--no-strategies", "--quiet", "--max-nodes", "100000"]
    assert main(grade) == 0
    capsys.readouterr()
    assert main(["report", "--db", str(db), "--all-players"]) == 0
    text = capsys.readouterr().out
    assert "top move" in text and "SPIN-Bench" in text
    rows = reported_moves(db, capsys)
    pooled = {(r["env_id"], r["player"]): r for r in rows if r["opponent"] == "all"}
    assert pooled[("tic_tac_toe-v0", "minimax")]["optimal"]["share"] == 1.0
    assert pooled[("tic_tac_toe-v0", "random")]["optimal"]["share"] < 1.0
    connect_four = pooled[("connect_four-v0", "random")]
    assert connect_four["graded"] > 0 and 0 < connect_four["optimal"]["share"] < 1.0
    out = tmp_path / "site"
    assert main(["publish", "--db", str(db), "--out", str(out)]) == 0
    capsys.readouterr()
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "top-move %" in page and "SPIN-Bench" in page
    assert "top-move %" in (out / "LEADERBOARD.md").read_text(encoding="utf-8")
