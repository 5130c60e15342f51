"""The arena for N seats: seat rotations, eval over real HTTP, per-seat report, replay."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")

from strategic_arena.arena.match import play_match_sync
from strategic_arena.arena.replay import replay_game
from strategic_arena.arena.runner import Entrant, round_robin, seat_rotations, versus
from strategic_arena.arena.store import ResultsStore
from strategic_arena.backends import OpenAIBackend
from strategic_arena.cli import main
from strategic_arena.serve import PlayerServer
from strategic_arena.turn import Decision, GameState
from tests.test_information_boundary import RecordingEndpoint

BLOTTO = "openspiel/blotto"
GOOFSPIEL_3P = "openspiel/goofspiel(num_cards=4,players=3)"
HANABI_3P = "openspiel/hanabi(players=3)"


def test_seat_rotations_put_the_player_in_every_seat() -> None:
    a, b = Entrant.opponent("random:seed=1"), Entrant.opponent("random")
    assert seat_rotations(a, b) == [(a, b), (b, a)]  # two seats: as before
    assert seat_rotations(a, b, (0, 1, 2)) == [(a, b, b), (b, a, b), (b, b, a)]
    assert seat_rotations(a, a, (0, 1, 2)) == [(a, a, a)]
    # Two against two: the player takes a whole team, then the other.
    assert seat_rotations(a, b, (0, 1, 0, 1)) == [(a, b, a, b), (b, a, b, a)]


def test_versus_schedules_every_rotation_of_a_three_player_game() -> None:
    candidate, rival = Entrant.opponent("random:seed=1"), Entrant.opponent("random")
    tasks = versus([candidate], [rival], [GOOFSPIEL_3P], 6, seed=0)
    seatings = [tuple(e.name for e in task.seats) for task in tasks]
    # 6 games over 3 rotations: 2 per rotation, the same two deals in each.
    assert len(tasks) == 6
    assert {s.index(candidate.name) for s in seatings} == {0, 1, 2}
    assert len({task.seed for task in tasks}) == 2
    # Cooperative three-player Hanabi adds the candidate's self-play.
    hanabi = versus([candidate], [rival], [HANABI_3P], 3, seed=0)
    assert sum(all(e == candidate for e in t.seats) for t in hanabi) == 3
    assert len(hanabi) == 3 + 3


def test_round_robin_of_three_seats_puts_each_entrant_alone_in_every_seat() -> None:
    a, b = Entrant.opponent("random:seed=1"), Entrant.opponent("random")
    tasks = round_robin([a, b], [GOOFSPIEL_3P], 6, seed=0)
    seatings = {tuple(e.name for e in task.seats) for task in tasks}
    assert len(seatings) == 6 and len(tasks) == 6 * 1
    two_seats = round_robin([a, b], [BLOTTO], 2, seed=0)
    assert [tuple(e.name for e in t.seats) for t in two_seats] == [
        (a.name, b.name),
        (b.name, a.name),
    ]


def test_eval_of_a_served_player_on_three_seats_and_a_simultaneous_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "arena.sqlite"
    with PlayerServer("random", model="served") as server:
        args = ["eval", "--db", str(db), "--quiet", "--base-url", server.base_url]
        args += ["--envs", f"{HANABI_3P},{BLOTTO}", GOOFSPIEL_3P, "--opponents", "random"]
        assert main([*args, "--num-games", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    with ResultsStore(db) as store:
        games = store.games()
        for game in games:
            replay_game(store, game.id)  # raises if anything differs
    # Hanabi: 3 self-play + 3 rotations; goofspiel: 3 rotations; blotto: 2 seatings x 2.
    assert len(games) == 6 + 3 + 4
    rows = {(s["env_id"], s["opponent"], s["seat"]): s for s in report["summaries"]}
    for seat in range(3):
        mine = [g for g in games if g.env_id == GOOFSPIEL_3P and g.players[seat] == "served"]
        row = rows[(GOOFSPIEL_3P, "random", seat)]
        assert row["games"] == len(mine) == 1
        assert row["mean_return"] == pytest.approx(np.mean([g.returns[seat] for g in mine]))
    assert main(["report", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "seat 0  seat 1  seat 2" in text
    blotto = next(g for g in games if g.env_id == BLOTTO)
    assert main(["replay", str(blotto.id), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.count("(simultaneous: seats 0, 1)") == 2  # both moves of the one turn
    assert ">>> seat 0 plays" in out and ">>> seat 1 plays" in out
    three = next(g for g in games if g.env_id == GOOFSPIEL_3P)
    assert main(["replay", str(three.id), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert all(f">>> seat {seat} plays" in out for seat in range(3))


class Bids:
    """Plays its bids in order."""

    name = "bids"

    def __init__(self, *bids: int) -> None:
        self.bids = list(bids)

    async def act(self, state: GameState, seat: int) -> Decision:
        return Decision(self.bids.pop(0))


def test_at_a_simultaneous_turn_an_endpoint_learns_nothing_of_the_others_moves() -> None:
    """Goofspiel (perfect information: the history is sent) over real HTTP: whatever seat 0
    bids in a turn, seat 1's request of that turn is byte-identical; the next turn shows it."""
    env_id = "openspiel/goofspiel(num_cards=3,points_order=descending)"
    recorder = RecordingEndpoint()
    try:
        backend = OpenAIBackend("recorder", recorder.base_url, timeout_s=30, max_attempts=1)
        model = Entrant.llm(backend, name="m")
        sent = []
        for bids in ((0, 1), (2, 0)):
            recorder.requests.clear()
            record = play_match_sync(env_id, [Bids(*bids), model.build(env_id, 0)], 3)
            assert record.history[0] == bids[0] and record.status == "complete"
            sent.append(list(recorder.requests))
        assert len(sent[0]) == len(sent[1]) == 2
        assert sent[0][0] == sent[1][0]  # the first turn: seat 0's bid unseen
        assert sent[0][1] != sent[1][1]  # the second turn: the first turn's bids are public
    finally:
        recorder.close()


def test_a_one_seat_game_is_played_by_each_player_alone() -> None:
    a, b = Entrant.opponent("random:seed=1"), Entrant.opponent("random")
    tasks = versus([a], [b], ["openspiel/catch"], 2, seed=0)
    assert [tuple(e.name for e in t.seats) for t in tasks] == [(a.name,), (a.name,)]
    ladder = round_robin([a, b], ["openspiel/catch"], 2, seed=0)
    assert sorted(t.key for t in ladder) == sorted(
        f"openspiel/catch/{e.name}/{i}" for e in (a, b) for i in range(2)
    )


def test_eval_of_a_served_player_on_a_team_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tiny Bridge (partners 0 and 2 against 1 and 3): the player takes each team in turn."""
    db = tmp_path / "arena.sqlite"
    env_id = "openspiel/tiny_bridge_4p"
    with PlayerServer("random", model="served") as server:
        args = ["eval", "--db", str(db), "--quiet", "--base-url", server.base_url]
        assert main([*args, "--envs", env_id, "--opponents", "random", "--num-games", "4"]) == 0
    capsys.readouterr()
    with ResultsStore(db) as store:
        games = store.games()
        for game in games:
            replay_game(store, game.id)
    seatings = sorted({g.players for g in games})
    assert seatings == [
        ("random", "served", "random", "served"),
        ("served", "random", "served", "random"),
    ]
    assert len(games) == 4
    for game in games:  # partners share their return
        assert game.returns[0] == game.returns[2] and game.returns[1] == game.returns[3]
    assert main(["report", "--db", str(db)]) == 0
    assert "seat 0  seat 1  seat 2  seat 3" in capsys.readouterr().out
