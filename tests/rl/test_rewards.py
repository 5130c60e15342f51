"""Rewards and eligibility gating on hand-built episodes (no model, no torch).

Defaults throughout unless a test says otherwise: format +0.05, invalid -10, length penalty 0
below 2048 tokens (the turns here are 20 tokens long unless given a length).
"""

from __future__ import annotations

import pytest

from strategic_arena.actions import ActionError
from strategic_arena.arena import play_match_sync
from strategic_arena.backends import TokenTrace
from strategic_arena.games import get_spec
from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.rl.rewards import (
    RewardConfig,
    game_reward,
    length_penalty,
    score,
    score_episode,
    unobserved_turns,
)
from strategic_arena.train.algo.estimators import returns_to_go
from strategic_arena.train.algo.game_rewards import rewards_by_move
from strategic_arena.train.loop.rollout import GamePlan, episode_from_record
from strategic_arena.turn import Decision, GameState

TTT = "tic_tac_toe-v0"
KUHN = "kuhn_poker-v0"
HANABI = "mini_hanabi-v0"
DEFAULT = RewardConfig()


def make_turn(seat: int, *, error: str | None = None, tokens: int = 20, env_id: str = TTT) -> Turn:
    return Turn(
        env_id=env_id,
        seat=seat,
        role=f"player {seat}",
        prompt_ids=[1, 2, 3],
        response_ids=list(range(tokens)),
        logprobs=[-0.5] * tokens,
        text="<think>...</think><answer>move</answer>",
        error_kind=error,
    )


def make_episode(
    env_id: str,
    turns: list[Turn],
    returns: tuple[float, ...],
    *,
    learner_seats: tuple[int, ...] = (0, 1),
    forfeited_by: int | None = None,
    opponent: str = "self",
) -> Episode:
    return Episode(
        env_id=env_id,
        seed=7,
        learner_seats=learner_seats,
        opponent=opponent,
        returns=returns,
        status="complete" if forfeited_by is None else "forfeit",
        forfeited_by=forfeited_by,
        turns=turns,
    )


def rewards(turns: list[Turn]) -> list[float]:
    return [turn.reward for turn in turns]


def eligible(turns: list[Turn]) -> list[bool]:
    return [turn.eligible for turn in turns]


# --- length penalty -------------------------------------------------------------------------


def test_length_penalty_values_with_the_defaults() -> None:
    # r_len = 0.5 * min(0, 1 - (L - 11) / (2048 - 11)), L_max - L_min = 2037.
    assert length_penalty(11, DEFAULT) == 0.0
    assert length_penalty(1000, DEFAULT) == 0.0
    # L = 2048: 1 - 2037/2037 = 0 -> 0: free up to the soft budget.
    assert length_penalty(2048, DEFAULT) == 0.0
    # L = 3072: 1 - 3061/2037 = -1024/2037; times 0.5 = -512/2037 = -0.25135...
    assert length_penalty(3072, DEFAULT) == pytest.approx(-512 / 2037)
    assert length_penalty(3072, DEFAULT) == pytest.approx(-0.25135, abs=1e-5)
    # L = 4096: 1 - 4085/2037 = -2048/2037; times 0.5 = -1024/2037 = -0.50270... (about -0.5).
    assert length_penalty(4096, DEFAULT) == pytest.approx(-1024 / 2037)
    assert length_penalty(4096, DEFAULT) == pytest.approx(-0.5027, abs=1e-4)


def test_length_penalty_alpha_zero_disables_and_alpha_scales() -> None:
    assert length_penalty(4096, RewardConfig(length_alpha=0.0)) == 0.0
    # alpha 1.0 doubles the default: -2048/2037.
    assert length_penalty(4096, RewardConfig(length_alpha=1.0)) == pytest.approx(-2048 / 2037)
    # A tighter budget: L_min 0, L_max 100, L = 150: 0.5 * (1 - 1.5) = -0.25.
    tight = RewardConfig(length_min=0, length_max=100)
    assert length_penalty(150, tight) == pytest.approx(-0.25)


def test_reward_config_rejects_an_empty_length_range() -> None:
    with pytest.raises(ValueError, match="length_max"):
        RewardConfig(length_min=100, length_max=100)
    with pytest.raises(ValueError, match="length_alpha"):
        RewardConfig(length_alpha=-1.0)


# --- games that end by their rules ----------------------------------------------------------


def test_win_and_loss_with_format_and_length_terms() -> None:
    # Self-play Tic-Tac-Toe, X (seat 0) wins after 3 moves; O's first move ran 3072 tokens.
    turns = [
        make_turn(0),
        make_turn(1, tokens=3072),
        make_turn(0),
        make_turn(1),
        make_turn(0),
    ]
    episode = make_episode(TTT, turns, (1.0, -1.0))
    score_episode(episode, DEFAULT)
    x, o = episode.trajectory(0), episode.trajectory(1)
    # X: +0.05 per valid move, +1 game reward on the last one.
    assert rewards(x) == pytest.approx([0.05, 0.05, 0.05 + 1.0])
    # O: first move 0.05 - 512/2037 (length), last move 0.05 - 1.
    assert rewards(o) == pytest.approx([0.05 - 512 / 2037, 0.05 - 1.0])
    assert all(eligible(episode.turns))


def test_draw_is_zero_without_draw_reward_and_draw_reward_when_set() -> None:
    def drawn() -> Episode:
        return make_episode(TTT, [make_turn(0), make_turn(1), make_turn(0)], (0.0, 0.0))

    plain = drawn()
    score_episode(plain, DEFAULT)
    assert rewards(plain.turns) == pytest.approx([0.05, 0.05, 0.05])

    with_draw = drawn()
    score_episode(with_draw, RewardConfig(draw_reward=0.1))
    # The exact-0 terminal game reward becomes 0.1 on each seat's LAST turn only:
    # seat 0: [0.05, 0.05 + 0.1]; seat 1: [0.05 + 0.1].
    assert rewards(with_draw.trajectory(0)) == pytest.approx([0.05, 0.15])
    assert rewards(with_draw.trajectory(1)) == pytest.approx([0.15])

    # draw_reward is a shaping constant: the game scale does not multiply it.
    scaled = drawn()
    score_episode(scaled, RewardConfig(draw_reward=0.1, game_scale={TTT: 2.0}))
    assert rewards(scaled.trajectory(1)) == pytest.approx([0.15])


def test_draw_reward_leaves_nonzero_outcomes_alone() -> None:
    episode = make_episode(TTT, [make_turn(0), make_turn(1)], (1.0, -1.0))
    score_episode(episode, RewardConfig(draw_reward=0.1))
    assert rewards(episode.turns) == pytest.approx([1.05, -0.95])


def test_game_scale_multiplies_only_the_named_game() -> None:
    cfg = RewardConfig(game_scale={TTT: 2.0})
    ttt = make_episode(TTT, [make_turn(0), make_turn(1)], (1.0, -1.0))
    kuhn = make_episode(KUHN, [make_turn(0, env_id=KUHN), make_turn(1, env_id=KUHN)], (-2.0, 2.0))
    score([ttt, kuhn], cfg)
    # Tic-Tac-Toe x2: 0.05 + 2, 0.05 - 2.  Kuhn unscaled (missing = 1.0): 0.05 - 2, 0.05 + 2.
    assert rewards(ttt.turns) == pytest.approx([2.05, -1.95])
    assert rewards(kuhn.turns) == pytest.approx([-1.95, 2.05])
    assert cfg.scale(KUHN) == 1.0


def test_error_turn_under_retry_keeps_its_penalty_and_stays_eligible() -> None:
    # Seat 0's second generation was re-asked (format error), its third was a legal move that
    # won: the error turn gets -10 and no format reward, and is still training data.
    turns = [make_turn(0), make_turn(1), make_turn(0, error="format"), make_turn(0)]
    episode = make_episode(TTT, turns, (1.0, -1.0))
    score_episode(episode, DEFAULT)
    assert rewards(episode.trajectory(0)) == pytest.approx([0.05, -10.0, 1.05])
    assert rewards(episode.trajectory(1)) == pytest.approx([-0.95])
    assert all(eligible(episode.turns))


# --- forfeits -------------------------------------------------------------------------------


def test_forfeit_by_the_learner_against_an_opponent() -> None:
    # The learner plays O (seat 1) against MCTS; its 2nd answer is over-long (4096 tokens,
    # truncated) and forfeits: OpenSpiel's forfeit returns are (+1, -1).
    turns = [make_turn(1), make_turn(1, error="truncated", tokens=4096)]
    episode = make_episode(
        TTT, turns, (1.0, -1.0), learner_seats=(1,), forfeited_by=1, opponent="mcts"
    )
    score_episode(episode, DEFAULT)
    # Last turn: loss -1 + penalty -10 + length -1024/2037, no format reward.
    assert rewards(episode.turns) == pytest.approx([0.05, -11.0 - 1024 / 2037])
    assert eligible(episode.turns) == [True, True]  # error steps stay in training
    assert unobserved_turns(episode) == []


def test_forfeit_by_the_opponent_gates_the_learners_unobserved_move() -> None:
    # The learner (seat 0) moved twice; the opponent's answer to the second move was invalid.
    turns = [make_turn(0), make_turn(0)]

    def forfeited() -> Episode:
        return make_episode(
            TTT, turns_copy(turns), (1.0, -1.0), learner_seats=(0,), forfeited_by=1, opponent="x"
        )

    episode = forfeited()
    score_episode(episode, DEFAULT)
    # The non-offender's terminal game reward is 0 (MARSHAL), not OpenSpiel's +1; its last move
    # was never answered, so it is gated.
    assert rewards(episode.turns) == pytest.approx([0.05, 0.05])
    assert eligible(episode.turns) == [True, False]
    assert unobserved_turns(episode) == [1]
    assert game_reward(episode, 0, DEFAULT) == 0.0
    assert game_reward(episode, 1, DEFAULT) == -1.0

    # Gating off: the same turn is training data with reward 0.05 + 0.
    ungated = forfeited()
    score_episode(ungated, RewardConfig(gate_unobserved=False))
    assert eligible(ungated.turns) == [True, True]
    assert rewards(ungated.turns) == pytest.approx([0.05, 0.05])

    # A forfeit is not a draw: draw_reward does not replace the non-offender's 0.
    drawish = forfeited()
    score_episode(drawish, RewardConfig(draw_reward=0.1))
    assert rewards(drawish.turns) == pytest.approx([0.05, 0.05])


def turns_copy(turns: list[Turn]) -> list[Turn]:
    return [make_turn(t.seat, error=t.error_kind, tokens=len(t.response_ids)) for t in turns]


def test_self_play_forfeit() -> None:
    # X, O, X, O(illegal): O forfeits; both seats are learners.
    turns = [make_turn(0), make_turn(1), make_turn(0), make_turn(1, error="illegal_action")]
    episode = make_episode(TTT, turns, (1.0, -1.0), forfeited_by=1)
    score_episode(episode, RewardConfig(game_scale={TTT: 2.0}))
    # X: [0.05, 0.05 + 0] and its last move is gated; O: [0.05, -1 * 2 - 10].
    assert rewards(episode.trajectory(0)) == pytest.approx([0.05, 0.05])
    assert rewards(episode.trajectory(1)) == pytest.approx([0.05, -12.0])
    assert eligible(episode.turns) == [True, True, False, True]
    assert unobserved_turns(episode) == [2]


def test_spiral_forfeit_rewards_the_other_seat() -> None:
    # SPIRAL: an invalid move gives -1.5 to the offender and +0.5 to the other seat.
    turns = [make_turn(0), make_turn(1), make_turn(0), make_turn(1, error="illegal_action")]
    episode = make_episode(TTT, turns, (1.0, -1.0), forfeited_by=1)
    spiral = RewardConfig(format_reward=0.0, invalid_penalty=-0.5, length_alpha=0.0)
    score_episode(episode, RewardConfig(**{**spiral.__dict__, "forfeit_other_reward": 0.5}))
    assert rewards(episode.trajectory(0)) == pytest.approx([0.0, 0.5])
    assert rewards(episode.trajectory(1)) == pytest.approx([0.0, -1.5])
    assert game_reward(episode, 0, spiral) == 0.0  # the default: MARSHAL's 0


def test_forfeiting_last_turn_is_invalid_even_without_an_error_kind() -> None:
    # Seat 0's second decision ended the game (say its endpoint failed and nothing was recorded
    # as an error kind): the forfeit itself marks it invalid.
    turns = [make_turn(0), make_turn(1), make_turn(0)]
    episode = make_episode(TTT, turns, (-1.0, 1.0), forfeited_by=0)
    score_episode(episode, DEFAULT)
    # Seat 0: [0.05, -1 - 10]. Seat 1: its only move was answered by the forfeit: 0.05 + 0, gated.
    assert rewards(episode.trajectory(0)) == pytest.approx([0.05, -11.0])
    assert rewards(episode.trajectory(1)) == pytest.approx([0.05])
    assert eligible(episode.turns) == [True, False, True]


def test_non_offenders_last_turn_that_was_itself_an_error_stays_eligible() -> None:
    # A random illegal-move policy played for seat 0's format error; then seat 1 forfeited.
    turns = [make_turn(0), make_turn(1), make_turn(0, error="format"), make_turn(1, error="empty")]
    episode = make_episode(TTT, turns, (1.0, -1.0), forfeited_by=1)
    score_episode(episode, DEFAULT)
    assert rewards(episode.trajectory(0)) == pytest.approx([0.05, -10.0])
    assert eligible(episode.trajectory(0)) == [True, True]
    assert unobserved_turns(episode) == []


# --- cooperative Hanabi ---------------------------------------------------------------------


def hanabi_turn(seat: int, error: str | None = None) -> Turn:
    return make_turn(seat, error=error, env_id=HANABI)


def test_hanabi_shared_score_goes_to_both_seats() -> None:
    turns = [hanabi_turn(0), hanabi_turn(1), hanabi_turn(0), hanabi_turn(1)]
    episode = make_episode(HANABI, turns, (3.0, 3.0))
    score_episode(episode, DEFAULT)
    # Both seats' last turns carry the shared +3.
    assert rewards(episode.turns) == pytest.approx([0.05, 0.05, 3.05, 3.05])
    assert all(eligible(episode.turns))


def test_hanabi_no_card_played_with_draw_reward() -> None:
    episode = make_episode(HANABI, [hanabi_turn(0), hanabi_turn(1)], (0.0, 0.0))
    score_episode(episode, RewardConfig(draw_reward=0.1))
    assert rewards(episode.turns) == pytest.approx([0.15, 0.15])


def test_hanabi_partner_forfeit_gates_the_non_offenders_last_turn() -> None:
    # Seat 1's invalid move ends the game; the cooperative forfeit returns are (0, 0).
    turns = [hanabi_turn(0), hanabi_turn(1), hanabi_turn(0), hanabi_turn(1, error="no_action")]
    episode = make_episode(HANABI, turns, (0.0, 0.0), forfeited_by=1)
    score_episode(episode, RewardConfig(draw_reward=0.1))
    # Offender: [0.05, 0 - 10] (no draw bonus on a forfeit). Other seat: its last hint was never
    # acted on: [0.05, 0.05 + 0], the last one gated.
    assert rewards(episode.trajectory(1)) == pytest.approx([0.05, -10.0])
    assert rewards(episode.trajectory(0)) == pytest.approx([0.05, 0.05])
    assert eligible(episode.turns) == [True, True, False, True]


# --- data-model checks ----------------------------------------------------------------------


def test_score_refuses_turns_of_non_learner_seats() -> None:
    episode = make_episode(TTT, [make_turn(0), make_turn(1)], (1.0, -1.0), learner_seats=(0,))
    with pytest.raises(ValueError, match="not learner seats"):
        score_episode(episode, DEFAULT)


def test_score_resets_eligibility_from_an_earlier_pass() -> None:
    episode = make_episode(TTT, [make_turn(0), make_turn(0)], (1.0, -1.0), learner_seats=(0,))
    episode.turns[1].eligible = False
    score_episode(episode, DEFAULT)
    assert eligible(episode.turns) == [True, True]


def test_episode_and_turn_validation() -> None:
    with pytest.raises(ValueError, match="forfeit"):
        Episode(TTT, 0, (0, 1), "self", (1.0, -1.0), "forfeit", None, [])
    with pytest.raises(ValueError, match="forfeit"):
        Episode(TTT, 0, (0, 1), "self", (1.0, -1.0), "complete", 1, [])
    with pytest.raises(ValueError, match="status"):
        Episode(TTT, 0, (0, 1), "self", (1.0, -1.0), "truncated", None, [])
    with pytest.raises(ValueError, match="returns"):
        Episode(TTT, 0, (0, 1), "self", (1.0,), "complete", None, [])
    with pytest.raises(ValueError, match="seats"):
        Episode(TTT, 0, (0, 2), "self", (1.0, -1.0), "complete", None, [])
    with pytest.raises(ValueError, match="log-prob"):
        Turn(TTT, 0, "player 0", [1], [5, 6], [-0.1], "x", None)


def test_trajectory_keeps_play_order() -> None:
    turns = [make_turn(0, tokens=1), make_turn(1, tokens=2), make_turn(0, tokens=3)]
    episode = make_episode(TTT, turns, (0.0, 0.0))
    assert [len(t.response_ids) for t in episode.trajectory(0)] == [1, 3]
    assert [len(t.response_ids) for t in episode.trajectory(1)] == [2]


# --- per-turn game rewards: a scripted Mini Hanabi game ---------------------------------------
#
# Seed 3 deals Player 0 [R1, R1, Y1] and Player 1 [Y1, R1, Y1]; the deck holds R2 then Y2.
# The script: move 0, P0 plays card 0 (R1: +1); move 1, P1 hints red (0); move 2, P0 plays
# card 2 (the R2 it drew: +1); move 3, P1 plays card 0 (Y1: +1); move 4, P0 hints rank 1 (0);
# the deck ran out at move 2, so the game ends after move 4 with 3 points.
HANABI_SCRIPT = ["play 0", "hint red", "play 2", "play 0", "hint 1"]


class ScriptedTexts:
    """Plays the given move texts in turn order, with a token trace as the trainer's player has."""

    def __init__(self, texts: list[str | None]) -> None:
        self.name = "scripted"
        self.texts = texts  # shared by both seats: the script is in play order

    async def act(self, state: GameState, seat: int) -> Decision:
        text = self.texts.pop(0)
        trace = TokenTrace((1,), tuple(range(20)), tuple([-0.5] * 20))
        if text is None:  # an invalid answer forfeits the game
            return Decision(None, "???", ActionError("no_action", "scripted"), trace=trace)
        action = next(a for a, t in state.menu(seat).items() if t == text)
        return Decision(action, text, trace=trace)


def scripted_hanabi(texts: list[str | None]) -> Episode:
    player = ScriptedTexts(list(texts))
    record = play_match_sync(HANABI, [player, player], seed=3)
    plan = GamePlan(0, HANABI, 3, None, (0, 1))
    return episode_from_record(record, plan, get_spec(HANABI))


def test_hanabi_pays_each_card_to_both_seats_at_the_turn_it_is_played() -> None:
    episode = scripted_hanabi(list(HANABI_SCRIPT))
    assert episode.returns == (3.0, 3.0) and episode.status == "complete"
    # What the game paid each seat from each of its decisions to its next one:
    # P0 decides at moves 0, 2, 4: [move 0 + move 1, move 2 + move 3, move 4] = [1, 2, 0]
    # P1 decides at moves 1, 3 (move 0 came before its first decision and counts there):
    #   [move 0 + move 1 + move 2, move 3 + move 4] = [2, 1]
    assert [t.game_reward for t in episode.trajectory(0)] == [1.0, 2.0, 0.0]
    assert [t.game_reward for t in episode.trajectory(1)] == [2.0, 1.0]
    cfg = RewardConfig(format_reward=0.0, length_alpha=0.0)
    score_episode(episode, cfg)
    assert rewards(episode.trajectory(0)) == [1.0, 2.0, 0.0]
    assert rewards(episode.trajectory(1)) == [2.0, 1.0]
    # MARSHAL's returns-to-go: P0 [3, 2, 0], P1 [3, 1] (terminal-only would be all 3s).
    assert returns_to_go(rewards(episode.trajectory(0))).tolist() == [3.0, 2.0, 0.0]
    assert returns_to_go(rewards(episode.trajectory(1))).tolist() == [3.0, 1.0]
    # With the format reward each turn adds 0.05; Tic-Tac-Toe-style scaling multiplies the game
    # part: game_scale 2 -> P0 [2.05, 4.05, 0.05].
    score_episode(episode, RewardConfig(game_scale={HANABI: 2.0}, length_alpha=0.0))
    assert rewards(episode.trajectory(0)) == pytest.approx([2.05, 4.05, 0.05])


def test_draw_reward_replaces_a_final_payment_of_zero_as_marshals_code() -> None:
    # MARSHAL's env turns a 0 reward of the final step into 0.1. The scripted game ends with
    # P0's hint (paid 0): each seat's last turn gets +0.1 on top of what play paid it.
    episode = scripted_hanabi(list(HANABI_SCRIPT))
    assert episode.final_rewards == (0.0, 0.0)
    score_episode(episode, RewardConfig(format_reward=0.0, length_alpha=0.0, draw_reward=0.1))
    assert rewards(episode.trajectory(0)) == pytest.approx([1.0, 2.0, 0.1])
    assert rewards(episode.trajectory(1)) == pytest.approx([2.0, 1.1])
    # A perfect game whose last move plays the last card (Y2: +1) gets no 0.1.
    perfect = scripted_hanabi(["play 0", "play 0", "play 2", "play 2"])
    assert perfect.returns == (4.0, 4.0) and perfect.final_rewards == (1.0, 1.0)
    score_episode(perfect, RewardConfig(format_reward=0.0, length_alpha=0.0, draw_reward=0.1))
    assert sum(rewards(perfect.turns)) == 8.0


def test_hanabi_forfeit_settles_the_score_on_each_seats_last_turn() -> None:
    # Same game, but P1's move 3 is invalid: the forfeit ends the shared score at 0.
    episode = scripted_hanabi(["play 0", "hint red", "play 2", None])
    assert episode.returns == (0.0, 0.0) and episode.forfeited_by == 1
    # Paid: P0 [1 (move 0), 1 (move 2; nothing after)]; P1 [1 + 0 + 1, 0 (the forfeit)].
    assert [t.game_reward for t in episode.trajectory(0)] == [1.0, 1.0]
    assert [t.game_reward for t in episode.trajectory(1)] == [2.0, 0.0]
    score_episode(episode, RewardConfig(format_reward=0.0, length_alpha=0.0))
    # As in MARSHAL's code: the offender P1 ends with its forfeit return 0 (last turn 0 - 2,
    # taking back what it was paid) plus the invalid penalty -10; its partner P0 keeps what play
    # paid it and adds forfeit_other_reward 0 (its last turn is the unobserved one: gated).
    assert rewards(episode.trajectory(0)) == [1.0, 1.0]
    assert rewards(episode.trajectory(1)) == [2.0, -12.0]
    assert eligible(episode.trajectory(0)) == [True, False]


def test_zero_sum_games_pay_only_on_the_last_turn() -> None:
    # Tic-Tac-Toe: X takes the top row (moves 0, 2, 4); OpenSpiel pays +1 / -1 at move 4 only.
    player = ScriptedTexts(["X(0,0)", "O(1,0)", "X(0,1)", "O(1,1)", "X(0,2)"])
    record = play_match_sync(TTT, [player, player], seed=0)
    episode = episode_from_record(record, GamePlan(0, TTT, 0, None, (0, 1)), get_spec(TTT))
    assert [t.game_reward for t in episode.trajectory(0)] == [0.0, 0.0, 1.0]
    assert [t.game_reward for t in episode.trajectory(1)] == [0.0, -1.0]


def test_a_history_that_does_not_match_the_decisions_pays_everything_at_the_end() -> None:
    # Kuhn: two deal chance outcomes, then P0 and P1 decide. Seats that disagree with the
    # history (P1 first) cannot be replayed: None, and the scorer pays at the last turn only.
    spec = get_spec(KUHN)
    assert rewards_by_move(spec, [0, 1, 0, 0], [1, 0]) is None
    assert rewards_by_move(spec, [0, 1], []) == []
    # Pass, pass: P0 holds the J (card 0), P1 the Q: P1 wins the antes, paid at P1's decision.
    assert rewards_by_move(spec, [0, 1, 0, 0], [0, 1]) == [[0.0, 0.0], [-1.0, 1.0]]
