"""SPIRAL's rules of play as its config plays them: a refused move loses at once, -1.5 / +0.5.

SPIRAL's scripts set TextArena's ``error_allowance`` to 0 after every reset (a move TextArena
refuses ends the game, no retry) and pay the offender -1.5 and the other seat +0.5. Here the
curated SPIRAL entries carry the allowance and ``configs/spiral_multi_game.yaml`` the rewards;
these tests play real TextArena games through the match loop and score them with that config.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path

import pytest

pytest.importorskip("textarena", reason="the [textarena] extra is not installed")

from strategic_arena.actions import TEXT_MOVE
from strategic_arena.arena.match import MatchRecord, play_match_sync
from strategic_arena.arena.replay import replay_game
from strategic_arena.arena.store import ResultsStore
from strategic_arena.games import get_spec
from strategic_arena.rl.rewards import score
from strategic_arena.traces import TokenTrace
from strategic_arena.train.config import load_config
from strategic_arena.train.loop.rollout import GamePlan, episode_from_record
from strategic_arena.turn import Decision, GameState

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "spiral_multi_game.yaml"
NEGOTIATION = "spiral_negotiation-v0"


class Scripted:
    """A learner seat that plays the given moves, then ``[Deny]``, each with a token trace."""

    name = "policy"

    def __init__(self, moves: Iterable[str]) -> None:
        self.moves = itertools.chain(moves, itertools.repeat("[Deny]"))

    async def act(self, state: GameState, seat: int) -> Decision:
        move = next(self.moves)
        trace = TokenTrace((1, 2), (3, 4), (-0.5, -0.5))
        return Decision(TEXT_MOVE, move, move_text=move, trace=trace)


def spiral_rewards(record: MatchRecord) -> dict[int, list[float]]:
    """Each seat's per-turn rewards under the SPIRAL config's reward settings."""
    cfg = load_config(CONFIG)
    plan = GamePlan(0, record.env_id, record.seed, None, (0, 1))
    episode = episode_from_record(record, plan, get_spec(record.env_id))
    score([episode], cfg.rewards)
    return {seat: [t.reward for t in episode.trajectory(seat)] for seat in (0, 1)}


def test_a_rejected_offer_ends_spirals_negotiation_at_once_with_its_rewards() -> None:
    # Player 0 offers 500 Wheat it does not hold: TextArena refuses the offer. Under SPIRAL's
    # rule the game ends on that move (no retry), the offender's forfeit.
    record = play_match_sync(
        NEGOTIATION, [Scripted(["[Offer: 500 Wheat -> 1 Ore]"]), Scripted([])], seed=0
    )
    assert record.status == "forfeit" and record.forfeited_by == 0
    assert len(record.moves) == 1
    error = record.moves[0].error
    assert error is not None and error.kind == "illegal_action"
    assert "without having the necessary resources" in error.detail  # TextArena's reason
    # The offender's only turn: -1.5; the other seat made no decision (nothing to train on),
    # and SPIRAL's +0.5 reaches its last turn where it has one (next test).
    assert spiral_rewards(record) == {0: [-1.5], 1: []}


def test_the_other_seat_gets_plus_one_half_when_the_second_mover_errs() -> None:
    # Player 0 deals honestly ([Deny]), player 1 sends an offer in no format TextArena reads.
    record = play_match_sync(NEGOTIATION, [Scripted([]), Scripted(["[Offer: Wheat]"])], seed=3)
    assert (record.status, record.forfeited_by, len(record.moves)) == ("forfeit", 1, 2)
    assert spiral_rewards(record) == {0: [0.5], 1: [-1.5]}


def test_textarenas_default_gives_a_retry_that_spirals_entry_does_not() -> None:
    # The same refused offer in TextArena's own SimpleNegotiation (error allowance 1): the
    # offender is asked again, and only the second refusal ends the game.
    offer = "[Offer: 500 Wheat -> 1 Ore]"
    record = play_match_sync(
        "textarena/SimpleNegotiation-v0", [Scripted([offer, offer]), Scripted([])], seed=0
    )
    assert (record.forfeited_by, len(record.moves)) == (0, 2)
    assert record.moves[0].error is None and record.moves[1].error is not None
    assert get_spec(NEGOTIATION).error_allowance == 0
    assert get_spec("textarena/SimpleNegotiation-v0").error_allowance is None


@pytest.mark.parametrize("env_id", load_config(CONFIG).games.ids)
def test_every_game_of_the_spiral_config_plays_by_spirals_rule(env_id: str) -> None:
    spec = get_spec(env_id)
    assert spec.error_allowance == 0  # type: ignore[attr-defined]
    assert spec.rules_source.endswith("error_allowance=0")


def test_a_refused_board_move_is_a_forfeit_that_replays(tmp_path: Path) -> None:
    # Tic-Tac-Toe: seat 1 plays the occupied centre; the game ends there, TextArena's -1 / +1.
    record = play_match_sync(
        "spiral_tic_tac_toe-v0", [Scripted(["[4]"]), Scripted(["[4]"])], seed=0
    )
    assert (record.status, record.forfeited_by, record.returns) == ("forfeit", 1, (1.0, -1.0))
    assert spiral_rewards(record) == {0: [0.5], 1: [-1.5]}
    with ResultsStore(tmp_path / "arena.sqlite") as store:
        store.add_game(store.run("r", 0, {}), "g", record)
        (game,) = store.games(store.run("r", 0, {}))
        assert game.status == "forfeit"
        assert replay_game(store, game.id).env.returns() == [1.0, -1.0]
