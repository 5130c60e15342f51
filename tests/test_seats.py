"""N seats and simultaneous turns through the spec, the env, play_match, the store and replay."""

from __future__ import annotations

import asyncio
import re
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyspiel
import pytest
from gymnasium.utils.env_checker import check_env

import strategic_arena as sa
from strategic_arena.arena.match import play_match, play_match_sync
from strategic_arena.arena.replay import replay_game
from strategic_arena.arena.store import ResultsStore
from strategic_arena.games import get_spec
from strategic_arena.games.generic import PARTNERSHIPS, GenericSpec
from strategic_arena.games.seats import OpenSpielSeats, SeatedGame, acting_seats, turns
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import Decision, GameState

BLOTTO = "openspiel/blotto"
GOOFSPIEL_3P = "openspiel/goofspiel(num_cards=4,players=3)"
HANABI_3P = "openspiel/hanabi(players=3)"
LADDER = Path(__file__).resolve().parents[1] / "leaderboards" / "ladder.db"


class Scripted:
    """Plays a fixed list of action ids, and records the history length it was shown."""

    def __init__(self, actions: Sequence[int], name: str = "scripted") -> None:
        self.name = name
        self.actions = list(actions)
        self.seen_history: list[int] = []

    async def act(self, state: GameState, seat: int) -> Decision:
        assert state.spiel_state is not None
        self.seen_history.append(len(state.spiel_state.history()))
        action = self.actions.pop(0)
        return Decision(action, text=state.menu(seat).get(action, "?"))


def test_seats_and_teams_of_n_player_and_simultaneous_games() -> None:
    assert get_spec("kuhn_poker-v0").teams == (0, 1)
    assert get_spec(HANABI_3P).teams == (0, 0, 0)  # cooperative: one team
    goofspiel = get_spec(GOOFSPIEL_3P)
    assert goofspiel.teams == (0, 1, 2) and goofspiel.num_players == 3
    assert goofspiel.simultaneous and not get_spec(HANABI_3P).simultaneous
    # The id names the parameters as OpenSpiel's game string: the id alone rebuilds the game.
    assert goofspiel.env_id == GOOFSPIEL_3P
    assert sa.make("openspiel/goofspiel", players=3, num_cards=4).spec is goofspiel


def test_turns_split_a_simultaneous_history_as_openspiel_applies_it() -> None:
    game = pyspiel.load_game("goofspiel(num_cards=3,points_order=descending)")
    state = game.new_initial_state()
    assert acting_seats(state) == (0, 1)
    state.apply_actions([0, 2])
    state.apply_actions([1, 0])
    assert state.is_terminal()
    split = [moves for _, moves in turns(game, state.history())]
    assert split == [((0, 0), (1, 2)), ((0, 1), (1, 0))]


def test_the_openspiel_seats_implement_the_seated_game_protocol() -> None:
    spec = get_spec(BLOTTO)
    seats = OpenSpielSeats(spec.game.new_initial_state(), spec.observation_text)
    assert isinstance(seats, SeatedGame)
    assert seats.acting_seats() == (0, 1) and len(seats.legal_moves(1)) == 66
    seats.apply({0: 3, 1: 5})
    reference = spec.game.new_initial_state()
    reference.apply_actions([3, 5])
    assert seats.is_terminal() and seats.returns() == tuple(reference.returns())
    assert seats.acting_seats() == () and seats.legal_moves(0) == {}


def test_the_env_holds_a_simultaneous_move_until_every_seat_has_moved() -> None:
    env = sa.make(BLOTTO)
    env.reset(seed=0)
    assert env.agent_selection == "player_0" and env.acting_seats() == (0, 1)
    env.step(3)
    # Nothing applied yet: the second seat sees the same state and still has its moves.
    assert env.spiel_state.history() == [] and env.agent_selection == "player_1"
    assert env.acting_seats() == (1,)
    assert env.observe("player_1")["action_mask"].sum() == 66
    assert env.observe("player_0")["action_mask"].sum() == 0  # it has moved
    assert env.rewards == {"player_0": 0.0, "player_1": 0.0}
    env.step(5)
    reference = env.spec.game.new_initial_state()
    reference.apply_actions([3, 5])
    assert env.spiel_state.history() == [3, 5]  # the joint move, applied once
    assert all(env.terminations.values())
    assert env.returns() == list(reference.returns())


def test_a_simultaneous_turn_asks_every_seat_from_the_same_state() -> None:
    first, second = Scripted([3], "first"), Scripted([5], "second")
    record = play_match_sync(BLOTTO, [first, second], seed=0)
    reference = get_spec(BLOTTO).game.new_initial_state()
    reference.apply_actions([3, 5])
    assert record.history == (3, 5)
    assert record.returns == tuple(reference.returns()) and record.status == "complete"
    assert [(m.seat, m.action) for m in record.moves] == [(0, 3), (1, 5)]
    # Neither seat saw the other's move of the turn.
    assert first.seen_history == second.seen_history == [0]


def test_simultaneous_seats_are_asked_concurrently() -> None:
    """Each seat waits for the other to have been asked: asking in turn would never finish."""
    asked = [asyncio.Event(), asyncio.Event()]

    class Waiting:
        name = "waiting"

        async def act(self, state: GameState, seat: int) -> Decision:
            asked[seat].set()
            await asked[1 - seat].wait()
            return Decision(min(state.legal_actions(seat)))

    async def both() -> None:
        record = await asyncio.wait_for(play_match(BLOTTO, [Waiting(), Waiting()], 0), 60)
        assert record.history == (0, 0)

    asyncio.run(both())


def test_one_player_in_several_seats_answers_them_in_seat_order() -> None:
    """Self-play at a simultaneous turn draws from the one generator in seat order: replayable.

    Seat 0's answer takes longer (it yields to the loop first): asked concurrently, seat 1
    would draw first.
    """

    class Slow:
        name = "slow"

        def __init__(self) -> None:
            self.rng = np.random.default_rng(5)

        async def act(self, state: GameState, seat: int) -> Decision:
            for _ in range(3 if seat == 0 else 0):
                await asyncio.sleep(0)
            legal = state.legal_actions(seat)
            return Decision(legal[int(self.rng.integers(len(legal)))])

    shared = Slow()
    record = play_match_sync(BLOTTO, [shared, shared], seed=0)
    rng = np.random.default_rng(5)
    expected = tuple(int(rng.integers(66)) for _ in range(2))  # blotto: 66 allocations each
    assert record.history == expected


def test_a_scripted_three_player_game_returns_what_openspiel_returns() -> None:
    """Three-player goofspiel: scripted bids give OpenSpiel's returns for the same moves."""
    bids = [[3, 0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 0]]
    players = [Scripted(bids[seat][:3], f"p{seat}") for seat in range(3)]
    record = play_match_sync(GOOFSPIEL_3P, players, seed=11)
    assert [m.seat for m in record.moves] == [0, 1, 2] * 3
    reference = get_spec(GOOFSPIEL_3P).game.new_initial_state()
    turn = 0
    while not reference.is_terminal():
        if reference.is_chance_node():  # the point cards the env drew, from its history
            reference.apply_action(record.history[len(reference.history())])
        else:
            reference.apply_actions([bids[seat][turn] for seat in range(3)])
            turn += 1
    assert tuple(reference.history()) == record.history
    assert record.returns == tuple(reference.returns())


def test_a_forfeit_at_a_simultaneous_turn_is_the_first_offender_in_seat_order() -> None:
    class Invalid:
        name = "invalid"

        async def act(self, state: GameState, seat: int) -> Decision:
            return Decision(None, "no move", sa.ActionError("no_action", "none"))

    record = play_match_sync(GOOFSPIEL_3P, [RandomPlayer(0), Invalid(), Invalid()], seed=1)
    assert record.status == "forfeit" and record.forfeited_by == 1
    assert [m.seat for m in record.moves] == [0, 1, 2]
    assert record.returns == tuple(get_spec(GOOFSPIEL_3P).forfeit_returns(1))


@pytest.mark.parametrize("env_id", [BLOTTO, GOOFSPIEL_3P, HANABI_3P])
def test_n_seat_and_simultaneous_games_are_stored_and_replayed_exactly(
    env_id: str, tmp_path: Path
) -> None:
    seats = get_spec(env_id).num_players
    with ResultsStore(tmp_path / "a.db") as store:
        run = store.run("r", 0, {})
        ids = []
        for seed in range(3):
            record = play_match_sync(env_id, [RandomPlayer(seed + s) for s in range(seats)], seed)
            store.add_game(run, f"{env_id}/{seed}", record)
            ids.append(record)
        for game in store.games():
            replayed = replay_game(store, game.id)
            assert len({move.seat for move in replayed.moves}) == seats  # every seat moved
            assert replayed.env.spiel_state.history() == list(game.history)
            assert tuple(replayed.env.returns()) == game.returns


def test_a_stored_forfeit_at_a_simultaneous_turn_replays(tmp_path: Path) -> None:
    class Invalid:
        name = "invalid"

        async def act(self, state: GameState, seat: int) -> Decision:
            return Decision(None, "no move", sa.ActionError("no_action", "none"))

    random = RandomPlayer(0)
    record = play_match_sync(BLOTTO, [random, Invalid()], seed=0)
    with ResultsStore(tmp_path / "a.db") as store:
        store.add_game(store.run("r", 0, {}), "k", record)
        (game,) = store.games()
        replayed = replay_game(store, game.id)
    assert replayed.env.forfeited_by == "player_1" and game.returns == (1.0, -1.0)


def test_the_committed_ladder_still_opens_and_replays(tmp_path: Path) -> None:
    """A store written before N seats existed: readable, and its two-seat games replay."""
    copy = tmp_path / "ladder.db"
    shutil.copy(LADDER, copy)
    with ResultsStore.for_reading(copy) as store:
        games = store.games()
        rng = np.random.default_rng(0)
        for index in rng.choice(len(games), size=min(20, len(games)), replace=False):
            game = games[int(index)]
            replayed = replay_game(store, game.id)
            assert replayed.env.spiel_state.history() == list(game.history)


def test_the_python_blocks_of_the_games_doc_run() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "games.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4  # the spec, check_game, seats and simultaneous-turn examples at least
    for block in blocks:
        exec(compile(block, "docs/games.md", "exec"), {})


def test_a_forfeit_loses_for_the_offenders_team() -> None:
    kuhn = get_spec("kuhn_poker-v0")
    assert kuhn.forfeit_returns(1) == [1.0, -1.0]  # two seats: as before
    assert get_spec(GOOFSPIEL_3P).forfeit_returns(2) == [0.5, 0.5, -1.0]

    class TwoVersusTwo(GenericSpec):
        seat_teams = (0, 1, 0, 1)

    teams = TwoVersusTwo("kuhn_poker", {"players": 4})
    stake = teams.forfeit_stake
    assert teams.forfeit_returns(2) == [-stake, stake, -stake, stake]
    assert teams.teams == (0, 1, 0, 1)


def test_one_seat_of_a_three_player_simultaneous_game_as_a_gymnasium_env() -> None:
    env = sa.single_agent(GOOFSPIEL_3P, opponent="random", seat=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium's advice about Dict and Text spaces
        check_env(env, skip_render_check=True)
    observation, _ = env.reset(seed=1)
    total, done = 0.0, False
    while not done:
        action = int(np.flatnonzero(observation["action_mask"])[0])  # the lowest bid left
        observation, reward, done, _, _ = env.step(action)
        total += reward
    assert total == env.env.returns()[2] and env.env.spiel_state.is_terminal()
    with pytest.raises(ValueError, match="seat must be between 0 and 2"):
        sa.single_agent(GOOFSPIEL_3P, seat=3)


@pytest.mark.parametrize("name", sorted(PARTNERSHIPS))
def test_partnership_games_have_the_teams_openspiel_pays(name: str) -> None:
    """Random games of each partnership game: partners always get the same return."""
    spec = get_spec(f"openspiel/{name}")
    assert spec.teams == PARTNERSHIPS[name]
    rng = np.random.default_rng(0)
    for _ in range(3):
        state = spec.game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probabilities = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(outcomes, p=probabilities)))
            else:
                state.apply_action(int(rng.choice(state.legal_actions())))
        returns = state.returns()
        for seat, team in enumerate(spec.teams):
            mates = [returns[s] for s, t in enumerate(spec.teams) if t == team]
            assert returns[seat] == mates[0]


def test_a_server_failure_at_a_simultaneous_turn_stops_the_game_and_replays(
    tmp_path: Path,
) -> None:
    class Failing:
        name = "failing"

        async def act(self, state: GameState, seat: int) -> Decision:
            return Decision(None, "", sa.ActionError("endpoint", "500 after retries"))

    record = play_match_sync(GOOFSPIEL_3P, [Failing(), RandomPlayer(1), RandomPlayer(2)], seed=4)
    assert record.status == "incomplete" and record.returns == (0.0, 0.0, 0.0)
    # Every decision of the turn is kept; the failed one is the game's last move.
    assert [m.seat for m in record.moves] == [1, 2, 0] and record.moves[-1].action is None
    assert record.infrastructure_error == "endpoint: 500 after retries"
    with ResultsStore(tmp_path / "a.db") as store:
        store.add_game(store.run("r", 0, {}), "k", record)
        (game,) = store.games(include_incomplete=True)
        replayed = replay_game(store, game.id)
    assert len(replayed.moves) == 3 and not replayed.env.spiel_state.is_terminal()


def test_play_marks_the_moves_of_a_simultaneous_turn(capsys: pytest.CaptureFixture[str]) -> None:
    from strategic_arena.cli import main

    assert main(["play", "openspiel/blotto", "--no-prompts"]) == 0
    out = capsys.readouterr().out
    assert out.count("(simultaneous: seats 0, 1)") == 2 and "game over after 2 moves" in out
    assert main(["play", "kuhn_poker-v0", "--no-prompts"]) == 0
    assert "simultaneous" not in capsys.readouterr().out
