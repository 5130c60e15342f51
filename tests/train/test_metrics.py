"""Training metrics computed from a step's episodes (hand-built episodes, known answers)."""

from __future__ import annotations

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.loop.metrics import rollout_metrics

KUHN = "kuhn_poker-v0"
TTT = "tic_tac_toe-v0"


def episode(env_id: str, num_moves: int | None, returns: tuple[float, float]) -> Episode:
    turn = Turn(env_id, 0, "player 0", [1], [2], [-0.1], "x", None)
    return Episode(
        env_id, 0, (0,), "random", returns, "complete", None, [turn], num_moves=num_moves
    )


def test_game_length_is_the_mean_number_of_decisions_per_game() -> None:
    # Kuhn games of 2 and 3 decisions -> 2.5; Tic-Tac-Toe 9 -> 9; overall (2 + 3 + 9) / 3 = 14 / 3.
    # An episode without a known length (built by hand) counts in neither.
    metrics = rollout_metrics(
        [
            episode(KUHN, 2, (1.0, -1.0)),
            episode(KUHN, 3, (-2.0, 2.0)),
            episode(TTT, 9, (0.0, 0.0)),
            episode(TTT, None, (1.0, -1.0)),
        ]
    )
    assert metrics[f"train/{KUHN}/game_length"] == 2.5
    assert metrics[f"train/{TTT}/game_length"] == 9.0
    assert metrics["train/game_length"] == 14 / 3
    assert "train/game_length" not in rollout_metrics([episode(KUHN, None, (1.0, -1.0))])
