"""The arena on a free-text game: ``eval`` of a served endpoint over real HTTP, store, replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")
pytest.importorskip("textarena", reason="the [textarena] extra is not installed")

from strategic_arena.actions import TEXT_MOVE
from strategic_arena.arena.replay import replay_game
from strategic_arena.arena.store import ResultsStore
from strategic_arena.cli import main
from strategic_arena.games import get_spec
from strategic_arena.serve import PlayerServer


@pytest.mark.parametrize(
    ("env_id", "num_games"),
    [
        ("spiral_kuhn_poker-v0", 2),
        ("mindgames_three_player_ipd-v0", 3),
        # Offline, Codenames deals from the package's words (docs/games.md).
        ("mindgames_codenames-v0", 2),
    ],
)
def test_eval_of_a_served_endpoint_stores_and_replays_every_move_text(
    env_id: str, num_games: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    with PlayerServer("random", model="served-random") as server:
        args = [
            "eval",
            "--db",
            str(db),
            "--quiet",
            "--base-url",
            server.base_url,
            "--envs",
            env_id,
            "--opponents",
            "random",
            "--num-games",
            str(num_games),
            "--json",
        ]
        assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert env_id in json.dumps(report)
    sample_moves = set(get_spec(env_id).sample_moves)  # what both random players write
    with ResultsStore(db) as store:
        games = store.games()
        # A game ends by its rules, or on a move TextArena refused (SPIRAL's entries allow
        # none: the random sample moves include illegal ones), never incomplete.
        assert len(games) == num_games
        assert {game.status for game in games} <= {"complete", "forfeit"}
        # Every seat rotation: the served player took each seat (each team's, in Codenames) once.
        teams = get_spec(env_id).teams
        firsts = [teams.index(team) for team in sorted(set(teams))]
        assert sorted(game.players.index("served-random") for game in games) == firsts
        for game in games:
            moves = store.moves(game.id)
            # Every move is a text move, kept exactly as the endpoint or the opponent wrote it.
            assert moves and all(move.action == TEXT_MOVE for move in moves)
            assert {move.action_text for move in moves} <= sample_moves
            served = [move for move in moves if game.players[move.seat] == "served-random"]
            assert all(move.response.endswith(move.action_text + "</answer>") for move in served)
            replay = replay_game(store, game.id)  # raises if the texts do not replay
            assert replay.env.returns() == list(game.returns)
        first = games[0]
    assert main(["replay", "--db", str(db), str(first.id)]) == 0
    shown = capsys.readouterr().out
    with ResultsStore(db) as store:
        for move in store.moves(first.id):
            assert f">>> seat {move.seat} plays {move.action_text}" in shown
    assert "--- TextArena state" in shown and "Replayed exactly" in shown


def test_replay_escapes_what_the_players_wrote(tmp_path: Path) -> None:
    from strategic_arena.arena.match import play_match_sync
    from strategic_arena.arena.replay import final_state_text
    from strategic_arena.turn import Decision, GameState

    class Scripted:
        name = "scripted"

        def __init__(self, move: str) -> None:
            self.move = move

        async def act(self, state: GameState, seat: int) -> Decision:
            return Decision(TEXT_MOVE, self.move, move_text=self.move)

    hostile = "Deal? \x1b[2J\x1b]0;owned\x07 [Deny]"
    record = play_match_sync(
        "spiral_negotiation-v0", [Scripted(hostile), Scripted("[Deny]")], seed=0
    )
    with ResultsStore(tmp_path / "arena.sqlite") as store:
        run = store.run("r", 0, {})
        store.add_game(run, "g", record)
        game = store.games(run)[0]
        assert store.moves(game.id)[0].action_text == hostile  # stored exactly
        text = final_state_text(replay_game(store, game.id))
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b[2J" in text
