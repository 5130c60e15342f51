"""The arena on MAPoRL's debate: served players over real HTTP, accuracy per turn, store, replay."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.actions import TEXT_MOVE
from strategic_arena.arena.replay import replay_game
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.games import get_spec
from strategic_arena.games.debate import DebateState, debate_problems
from strategic_arena.serve import PlayerServer
from strategic_arena.turn import Decision, GameState

#: Two agents, two turns, eight generated problems.
ENV = "debate-v0(agents=2,count=8,turns=2)"
PROBLEMS = debate_problems(get_spec(ENV).options)  # type: ignore[attr-defined]


def known(index: int) -> bool:
    """The problems the "even" player knows at turn 1: those of even index."""
    return index % 2 == 0


class KnownSubsetPlayer:
    """Right at turn 1 on the problems of even index (else the gold answer + 1); right after.

    It reads only its seat's view (the question and the turn), as a served endpoint does.
    """

    def __init__(self, always_right: bool = False) -> None:
        self.name = "always" if always_right else "even"
        self.always_right = always_right

    async def act(self, state: GameState, seat: int) -> Decision:
        view = state.observation(seat)
        index = next(i for i, problem in enumerate(PROBLEMS) if problem.question in view)
        first_turn = re.search(r"This is turn 1 of", view) is not None
        right = self.always_right or not first_turn or known(index)
        answer = int(PROBLEMS[index].answer) + (0 if right else 1)
        return Decision(TEXT_MOVE, str(answer), move_text=str(answer))


def eval_args(db: Path, base_url: str, *extra: str) -> list[str]:
    return [
        "eval",
        "--db",
        str(db),
        "--quiet",
        "--base-url",
        base_url,
        "--style",
        "boxed",
        "--envs",
        ENV,
        "--num-games",
        "12",
        "--seed",
        "7",
        "--json",
        *extra,
    ]


def problem_index(seed: int) -> int:
    return seed % len(PROBLEMS)


def test_eval_of_a_served_player_reports_the_accuracy_of_every_turn_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    with PlayerServer(lambda env_id: KnownSubsetPlayer(), model="even") as server:
        assert main(eval_args(db, server.base_url)) == 0
    report = json.loads(capsys.readouterr().out)
    with ResultsStore(db) as store:
        games = store.games()
        assert len(games) == 12 and {game.status for game in games} == {"complete"}
        assert all(game.players == ("even", "even") for game in games)  # self-play only
        # the same answer in both seats: the majority is right at turn 1 exactly on the known
        # problems, and right at turn 2 always
        expected_first = sum(known(problem_index(game.seed)) for game in games) / len(games)
        for game in games:
            moves = store.moves(game.id)
            assert len(moves) == 4 and all(move.action == TEXT_MOVE for move in moves)
            # the move is the whole response, as the endpoint wrote it
            assert all(move.action_text == move.response for move in moves)
            assert all("\\boxed{" in move.action_text for move in moves)
    assert 0.0 < expected_first < 1.0  # the seeds drew problems of both kinds
    (row,) = report["debates"]
    assert row["env_id"] == ENV and row["lineup"] == "even x2" and row["games"] == 12
    assert row["accuracy"] == pytest.approx([expected_first, 1.0])
    assert main(["report", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "== Debates: accuracy of the majority vote per turn" in text
    assert f"even x2: 12 games; turn 1 {expected_first:.3f}" in text


def test_a_debate_between_two_served_models_stores_and_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    with (
        PlayerServer(lambda env_id: KnownSubsetPlayer(), model="even") as even,
        PlayerServer(lambda env_id: KnownSubsetPlayer(always_right=True), model="always") as always,
    ):
        args = eval_args(db, even.base_url, "--opponents", f"model:always@{always.base_url}")
        assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    with ResultsStore(db) as store:
        games = store.games()
        lineups = {game.players for game in games}
        # self-play of the evaluated model, and each seat of it against the other model
        assert lineups == {("even", "even"), ("even", "always"), ("always", "even")}
        for game in games:
            replay = replay_game(store, game.id)  # raises unless the solutions replay exactly
            state = replay.env.spiel_state
            assert isinstance(state, DebateState)
            assert state.solutions == tuple(
                tuple(move.action_text for move in store.moves(game.id)[turn * 2 : turn * 2 + 2])
                for turn in range(2)
            )
            if "always" in game.players:
                # one right and one wrong answer tie at turn 1 on the unknown problems
                first = 1.0 if known(problem_index(game.seed)) else 0.5
                assert state.turn_scores == (first, 1.0)
                assert replay.env.returns() == [1.0, 1.0]
        mixed = [game for game in games if "always" in game.players]
        first_game = mixed[0].id
    rows = {row["lineup"]: row for row in report["debates"]}
    assert set(rows) == {"even x2", "always + even"}
    expected = sum(1.0 if known(problem_index(g.seed)) else 0.5 for g in mixed) / len(mixed)
    assert rows["always + even"]["accuracy"] == pytest.approx([expected, 1.0])
    assert main(["replay", "--db", str(db), str(first_game)]) == 0
    shown = capsys.readouterr().out
    assert "Replayed exactly" in shown and "majority score" in shown
    # rated as a cooperative game: by mean self-play score (always right at turn 2: 1.0)
    assert main(["publish", "--db", str(db), "--out", str(tmp_path / "board")]) == 0
    board = (tmp_path / "board" / "LEADERBOARD.md").read_text(encoding="utf-8")
    assert "Cooperative: ranked by mean self-play score" in board
    assert "| 1 | even | +1.00 ± 0.00 |" in board
