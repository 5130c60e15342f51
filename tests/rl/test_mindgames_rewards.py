"""In2AI's MindGames rewards on real TextArena games played with scripted moves.

Each game is TextArena's own (Codenames, Colonel Blotto, three-player IPD), stepped move by move;
the expected numbers are Appendix A's formulas and Appendix B's rules worked by hand.
"""

from __future__ import annotations

import pytest

from strategic_arena.games import get_spec
from strategic_arena.games.mindgames_facts import blotto_facts
from strategic_arena.games.textarena import TextArenaState
from strategic_arena.rl.definitions import check_definitions, get_definition, score
from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.rl.mindgames import (
    blotto_episode_reward,
    codenames_episode_reward,
    ipd_episode_reward,
)
from strategic_arena.rl.rewards import RewardConfig

pytest.importorskip("textarena")

BLOTTO = "mindgames_colonel_blotto-v0"
IPD = "mindgames_three_player_ipd-v0"
CODENAMES = "mindgames_codenames-v0"
WIN, LOSS = 1.0, 0.25  # the outcome multipliers of positive step rewards (In2AIConstants)
PARSE, RULE = -2.0, -1.5  # the parse and invalid-action floors, below every legal reward (-1)


def started(env_id: str, seed: int) -> TextArenaState:
    state: TextArenaState = get_spec(env_id).game.new_initial_state()
    state.start(seed)
    return state


def scripted(
    env_id: str,
    seed: int,
    moves: list[tuple[int, str]],
    *,
    forfeit_by: int | None = None,
    definition: str = "in2ai_steps",
) -> Episode:
    """Play ``moves`` in TextArena, then ``forfeit_by`` forfeits; score every seat's turns."""
    spec = get_spec(env_id)
    state = started(env_id, seed)
    for seat, move in moves:
        assert state.current_player() == seat
        state.apply_action(move)
    if forfeit_by is None:
        assert state.is_terminal(), "the scripted game must end by its rules"
        returns = tuple(state.returns())
    else:
        assert not state.is_terminal()
        returns = tuple(spec.forfeit_returns(forfeit_by))
    turns = [
        Turn(env_id, seat, f"p{seat}", [1], [2], [0.0], move, None, move_index=i)
        for i, (seat, move) in enumerate(moves)
    ]
    if forfeit_by is not None:
        turns.append(Turn(env_id, forfeit_by, "p", [1], [2], [0.0], "", "no_action"))
    episode = Episode(
        env_id,
        seed,
        tuple(range(spec.num_players)),
        "self",
        returns,
        "complete" if forfeit_by is None else "forfeit",
        forfeit_by,
        turns,
        num_seats=spec.num_players,
        moves=tuple(moves),
    )
    cfg = RewardConfig(length_alpha=0.0, definitions={env_id: definition})
    score([episode], cfg)
    return episode


def rewards(episode: Episode, seat: int) -> list[float]:
    return [t.reward for t in episode.trajectory(seat)]


def eligible(episode: Episode, seat: int) -> list[bool]:
    return [t.eligible for t in episode.trajectory(seat)]


# -- Appendix A: episode rewards -----------------------------------------------------------------


def test_appendix_a_examples() -> None:
    assert [blotto_episode_reward(w, 9) for w in (5, 3, 0)] == [1.0, 0.6, 0.0]
    assert [codenames_episode_reward(c, 9) for c in (9, 5, 0)] == [1.0, 5 / 9, 0.0]
    assert [ipd_episode_reward(s, 5, 5) for s in (50, 30, 10)] == [1.0, 0.6, 0.2]


# Alpha wins B and C with [A0 B10 C10] against [A20 B0 C0]; loses all three to [A7 B7 C6].
ALPHA_WINS = [(0, "[A0 B10 C10]"), (1, "[A20 B0 C0]")]
BETA_WINS = [(0, "[A20 B0 C0]"), (1, "[A0 B10 C10]")]
THREE_THEN_FIVE = ALPHA_WINS * 3 + BETA_WINS * 5  # Beta reaches the majority (5) in round 8


def test_blotto_episode_reward_is_the_margin_toward_the_majority() -> None:
    episode = scripted(BLOTTO, 0, THREE_THEN_FIVE, definition="in2ai_episode")
    assert episode.returns == (-1.0, 1.0)  # TextArena's own result: Beta won
    # The last turn of each seat carries the game reward (3/5, 5/5) plus the format reward.
    assert rewards(episode, 0)[-1] == pytest.approx(0.6 + 0.05)
    assert rewards(episode, 1)[-1] == pytest.approx(1.0 + 0.05)
    assert rewards(episode, 0)[:-1] == pytest.approx([0.05] * 7)


def test_ipd_episode_reward_is_the_score_over_its_maximum() -> None:
    chat = [(seat, "Let us cooperate.") for seat in range(3)] * 3
    rounds = [*chat, (0, "[1 defect] [2 defect]"), (1, "[0 cooperate]"), (2, "[0 cooperate]")]
    episode = scripted(IPD, 0, rounds * 5, definition="in2ai_episode")
    # Seat 0 defects on two cooperators every round: 10 a round, 50 = 5 * 2T; the others 3.
    assert [rewards(episode, s)[-1] - 0.05 for s in range(3)] == pytest.approx([1.0, 0.3, 0.3])


def test_codenames_episode_reward_is_the_fraction_of_own_words_found() -> None:
    board = started(CODENAMES, 2).referee_env().board
    red = [w for w, t in board.items() if t == "R"]
    assassin = next(w for w, t in board.items() if t == "A")
    moves = [(0, "[xylophonic 2]"), (1, f"[{red[0]}]"), (1, f"[{red[1]}]"), (1, "[pass]")]
    moves += [(2, "[xylophonic 1]"), (3, f"[{assassin}]")]  # Blue hits the assassin: Red wins
    episode = scripted(CODENAMES, 2, moves, definition="in2ai_episode")
    assert episode.returns[:2] == (1.0, 1.0)
    # Both seats of a team get the team's fraction: Red found 2 of its 9 words, Blue none.
    last = [rewards(episode, s)[-1] - 0.05 for s in range(4)]
    assert last == pytest.approx([2 / 9, 2 / 9, 0.0, 0.0])


# -- Appendix B: per-step attribution ------------------------------------------------------------


def test_blotto_steps_get_their_rounds_result_shaped_by_the_match() -> None:
    episode = scripted(BLOTTO, 0, THREE_THEN_FIVE)
    # Alpha lost the match: its three won rounds keep a quarter, its lost rounds -1.
    assert rewards(episode, 0) == pytest.approx([LOSS] * 3 + [-1.0] * 5)
    assert rewards(episode, 1) == pytest.approx([-1.0] * 3 + [WIN] * 5)
    assert all(eligible(episode, 0) + eligible(episode, 1))


def test_blotto_allocation_before_an_opponents_forfeit_is_gated() -> None:
    episode = scripted(BLOTTO, 0, [*ALPHA_WINS, (0, "[A5 B10 C5]")], forfeit_by=1)
    assert eligible(episode, 0) == [True, False]  # round 2 never resolved: no outcome
    assert eligible(episode, 1) == [True, True]  # the offender's error turn stays in
    assert rewards(episode, 1) == [-1.0, PARSE]  # round 1 lost; the forfeit at the parse floor


def test_blotto_allocations_textarena_refuses_get_their_floors() -> None:
    # TextArena refuses units that do not add up to 20, lets the seat try again, and ends the
    # game at a second refusal (an allocation its parser cannot read).
    moves = [(0, "[A100 B0 C0]"), (0, "[A7 B7 C6]"), (1, "[A0 B10 C10]")]
    moves += [(0, "[A25 B0 C0]"), (0, "I attack!")]
    facts = blotto_facts(BLOTTO, 0, moves)
    assert [m.outcome for m in facts.moves] == [
        "invalid",
        "allocation",
        "allocation",
        "invalid",
        "unparsed",
    ]
    episode = scripted(BLOTTO, 0, moves)
    assert episode.returns == (-1.0, 1.0)
    # Round 1 went to Beta (B and C); the refused allocations get the rule and parse floors.
    # Round 1 lost (-1), below it the rule floor twice and the parse floor.
    assert rewards(episode, 0) == [RULE, -1.0, RULE, PARSE]
    assert [m.round_winner for m in facts.moves[:3]] == [None, 1, 1]
    assert rewards(episode, 1) == [WIN]
    assert all(eligible(episode, 0))


def test_ipd_turns_share_their_rounds_decision_reward() -> None:
    chat = [(seat, "Cooperate with me.") for seat in range(3)] * 3
    honest = [(0, "[1 defect] [2 defect]"), (1, "[0 cooperate]"), (2, "[0 cooperate]")]
    broken = [(0, "[1 defect] [2 defect]"), (1, "[0 cooperate]"), (2, "I cooperate.")]
    episode = scripted(IPD, 0, chat + broken + (chat + honest) * 4)
    # Seat 0 (the winner) gains 10 = 2T a round: every chat turn and decision gets 1.0.
    assert rewards(episode, 0) == pytest.approx([1.0] * 20)
    # Seat 1 (last, tied) gains 3: 3 / 10, a positive reward of a lost game: times 1/4.
    assert rewards(episode, 1) == pytest.approx([0.3 * LOSS] * 20)
    # Seat 2's first decision is unreadable: its floor, and that round's chat gets 0, gated.
    assert rewards(episode, 2)[:4] == [0.0, 0.0, 0.0, PARSE]
    assert eligible(episode, 2)[:4] == [False, False, False, True]
    assert rewards(episode, 2)[4:] == pytest.approx([0.3 * LOSS] * 16)


def test_ipd_chat_of_a_round_that_never_resolved_is_gated() -> None:
    chat = [(seat, "Hello.") for seat in range(3)]
    episode = scripted(IPD, 0, [*chat, (0, "Still there?")], forfeit_by=1)
    assert eligible(episode, 0) == [False, False]
    assert eligible(episode, 2) == [False]
    assert eligible(episode, 1) == [False, True]  # its chat gated, its forfeit kept
    assert rewards(episode, 1)[-1] == PARSE


def codenames_board(seed: int) -> tuple[list[str], list[str], str, list[str]]:
    board = started(CODENAMES, seed).referee_env().board
    red = [w for w, t in board.items() if t == "R"]
    blue = [w for w, t in board.items() if t == "B"]
    neutral = [w for w, t in board.items() if t == "N"]
    return red, blue, next(w for w, t in board.items() if t == "A"), neutral


def test_codenames_assassin_poisons_the_clue_and_its_correct_guess() -> None:
    red, _, assassin, _ = codenames_board(5)
    moves = [(0, "[xylophonic 2]"), (1, f"[{red[0]}]"), (1, f"[{assassin}]")]
    episode = scripted(CODENAMES, 5, moves)
    clue, correct, fatal = rewards(episode, 0) + rewards(episode, 1)
    # The correct guess gets its group's average, (+1 - 0.7) / 2 = +0.15 (the paper's example),
    # a positive reward of a lost game: times 1/4.
    assert correct == pytest.approx(0.15 * LOSS)
    assert fatal == -0.7
    # The clue: 1 correct of min(2, 9) = 0.5, minus the assassin's 1.0.
    assert clue == pytest.approx(-0.5)


def test_codenames_clue_credited_with_its_guesses_in_a_won_game() -> None:
    red, _, assassin, neutral = codenames_board(7)
    moves = [(0, "[xylophonic 2]"), (1, f"[{red[0]}]"), (1, f"[{red[1]}]"), (1, "[pass]")]
    moves += [(2, "[xylophonic 3]"), (3, f"[{neutral[0]}]")]  # Blue's wrong guess ends its turn
    moves += [(0, "[xylophonic 3]"), (1, "[pass]")]  # an early pass: the clue gets no hit
    moves += [(2, "[xylophonic 1]"), (3, f"[{assassin}]")]  # Blue hits the assassin: Red wins
    episode = scripted(CODENAMES, 7, moves)
    assert rewards(episode, 0) == pytest.approx([1.0, -0.5])  # 2 of 2; then no correct guess
    assert rewards(episode, 1) == pytest.approx([1.0, 1.0, 0.1, -0.2])  # bonus pass; early pass
    blue_clue, blue_clue2 = rewards(episode, 2)
    # No hit (-0.5); no hit and the assassin (-0.5 - 1.0), clipped to -1.
    assert (blue_clue, blue_clue2) == pytest.approx((-0.5, -1.0))
    assert rewards(episode, 3) == pytest.approx([-0.3, -0.7])


def test_codenames_clue_that_names_a_board_word_gets_the_invalid_floor() -> None:
    red, _, _, _ = codenames_board(3)
    episode = scripted(CODENAMES, 3, [(0, f"[{red[0]} 1]")])  # TextArena: Blue wins at once
    assert episode.returns[0] == -1.0
    assert rewards(episode, 0) == [RULE]


def test_codenames_clue_with_no_guess_is_gated() -> None:
    episode = scripted(CODENAMES, 3, [(0, "[xylophonic 2]")], forfeit_by=1)
    assert eligible(episode, 0) == [False]  # nothing followed it: no signal
    assert (rewards(episode, 1), eligible(episode, 1)) == ([PARSE], [True])


def test_an_unknown_definition_is_refused_by_name() -> None:
    (problem,) = check_definitions(RewardConfig(definitions={BLOTTO: "in2ai"}))
    assert "unknown reward definition 'in2ai'" in problem and "in2ai_steps" in problem
    with pytest.raises(ValueError, match="in2ai_steps"):
        get_definition("in2ai")
    assert get_definition("game").name == "game"


def test_the_definitions_refuse_a_game_they_do_not_define() -> None:
    with pytest.raises(ValueError, match="Codenames, Colonel Blotto"):
        scripted("spiral_kuhn_poker-v0", 0, [], forfeit_by=0)
