"""A seat's turn: seat information, the state a player reads, the one illegal-move rule, judge."""

from __future__ import annotations

import asyncio
import json

import pytest

import strategic_arena as sa
from strategic_arena.actions import ActionError
from strategic_arena.arena.match import play_match_sync
from strategic_arena.turn import (
    Decision,
    GameState,
    IllegalMovePolicy,
    SeatInformation,
    judge,
)

ENDPOINT = ActionError("endpoint", "500: injected")
TIMEOUT = ActionError("timeout", "timeout")
FORMAT = ActionError("format", "no answer block")


def kuhn_after(history: list[int]) -> GameState:
    spec = sa.get_spec("kuhn_poker-v0")
    state = spec.game.new_initial_state()
    for action in history:
        state.apply_action(action)
    return GameState("kuhn_poker-v0", state, spec)


@pytest.mark.parametrize(
    ("policy", "invalid_answers", "error", "ruling"),
    [
        ("forfeit", 1, FORMAT, "forfeit"),
        ("random", 1, FORMAT, "random"),
        ("retry:2", 1, FORMAT, "retry"),
        ("retry:2", 2, FORMAT, "retry"),
        ("retry:2", 3, FORMAT, "forfeit"),
        ("retry:0", 1, FORMAT, "forfeit"),
        # An infrastructure failure is no answer: no policy applies, the game stops.
        ("forfeit", 1, ENDPOINT, "stop"),
        ("random", 1, TIMEOUT, "stop"),
        ("retry:5", 1, ENDPOINT, "stop"),
    ],
)
def test_the_one_illegal_move_rule(
    policy: str, invalid_answers: int, error: ActionError, ruling: str
) -> None:
    assert IllegalMovePolicy.parse(policy).rule(error, invalid_answers) == ruling


def test_judge_plays_forfeits_or_stops() -> None:
    assert judge(Decision(1), [0, 1]).outcome == "play"
    forfeit = judge(Decision(5), [0, 1])
    assert forfeit.outcome == "forfeit" and forfeit.action is None
    assert forfeit.error is not None and forfeit.error.kind == "illegal_action"
    assert judge(Decision(None, error=FORMAT), [0, 1]).outcome == "forfeit"
    stopped = judge(Decision(None, error=TIMEOUT), [0, 1])
    assert stopped.outcome == "incomplete" and stopped.error == TIMEOUT


def test_seat_information_holds_only_the_seat_s_card() -> None:
    # Seat 0 holds the Queen (1), seat 1 the Jack (0) or the King (2); seat 0 passed.
    jack, king = kuhn_after([1, 0, 0]), kuhn_after([1, 2, 0])
    for state in (jack, king):
        assert state.legal_actions(1) == [0, 1]
    mine = jack.information(0)
    assert mine == king.information(0)  # what seat 0 knows does not depend on seat 1's card
    assert mine.history is None and mine.public_moves == ((0, 0),)
    assert jack.information(1) != king.information(1)
    assert json.loads(json.dumps(mine.payload())) == mine.payload()
    assert SeatInformation.from_payload(json.loads(json.dumps(mine.payload()))) == mine
    with pytest.raises(ValueError, match="hides information"):
        jack.history()


def test_a_state_built_from_information_knows_that_seat_only() -> None:
    full = kuhn_after([1, 0, 0])
    known = GameState.from_information(full.information(1))
    assert known.spiel_state is None
    assert known.legal_actions(1) == [0, 1] and known.menu(1) == full.menu(1)
    assert known.information_state(1) == full.information_state(1)
    assert known.observation(1) == full.observation(1)
    assert known.public_moves() == full.public_moves() == ((0, 0),)
    with pytest.raises(ValueError, match="not seat 0"):
        known.information(0)
    with pytest.raises(ValueError, match="no text view"):
        known.view(1)
    with pytest.raises(ValueError, match="either"):
        GameState("kuhn_poker-v0", None)


def test_perfect_information_states_give_their_history() -> None:
    spec = sa.get_spec("tic_tac_toe-v0")
    state = spec.game.new_initial_state()
    state.apply_action(4)
    information = SeatInformation.of(spec, state, 1)
    assert information.history == (4,) and information.information_state is not None
    assert GameState.from_information(information).history() == [4]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "JSON object"),
        ({"env_id": 3, "seat": 0}, "env_id"),
        ({"env_id": "kuhn_poker-v0", "seat": "0"}, "seat"),
        ({"env_id": "kuhn_poker-v0", "seat": 0, "observation": 5}, "observation"),
        ({"env_id": "kuhn_poker-v0", "seat": 0, "public_moves": [[0]]}, "public_moves"),
        ({"env_id": "kuhn_poker-v0", "seat": 0, "legal_actions": {"a": "x"}}, "legal_actions"),
        (
            {"env_id": "kuhn_poker-v0", "seat": 0, "legal_actions": {}, "history": [True]},
            "history",
        ),
    ],
)
def test_bad_payloads_say_what_is_wrong(payload: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SeatInformation.from_payload(payload)


class Failing:
    """A player whose endpoint failed after its retries."""

    name = "failing"

    async def act(self, state: GameState, seat: int) -> Decision:
        return Decision(None, error=TIMEOUT)


def test_an_infrastructure_failure_makes_the_match_incomplete() -> None:
    record = play_match_sync("tic_tac_toe-v0", [sa.RandomPlayer(0), Failing()], seed=0)
    assert record.status == "incomplete" and record.forfeited_by is None
    assert record.returns == (0.0, 0.0) and record.infrastructure_error == "timeout: timeout"
    assert record.moves[-1].seat == 1 and record.moves[-1].action is None
    assert len(record.moves) == 2


def test_single_agent_stops_on_an_opponent_s_infrastructure_failure() -> None:
    env = sa.single_agent("tic_tac_toe-v0", opponent=Failing(), seat=0)
    env.reset(seed=0)
    with pytest.raises(RuntimeError, match="opponent's endpoint failed"):
        env.step(4)
    env.close()


def test_served_imperfect_information_players_get_no_state() -> None:
    pytest.importorskip("openai", reason="the [arena] extra (openai) is not installed")
    from strategic_arena.backends import OpenAIBackend
    from strategic_arena.serve import PlayerServer

    seen: list[GameState] = []

    class Spy:
        name = "spy"

        async def act(self, state: GameState, seat: int) -> Decision:
            seen.append(state)
            return await sa.RandomPlayer(0).act(state, seat)

    with PlayerServer(lambda env_id: Spy(), model="spy") as server:
        model = sa.LLMPlayer(OpenAIBackend("spy", server.base_url, timeout_s=30), name="m")
        record = asyncio.run(sa.play_match("leduc_holdem-v0", [model, sa.RandomPlayer(1)], seed=3))
    assert record.status == "complete" and seen
    assert all(state.spiel_state is None and state.known is not None for state in seen)
