"""The rule-based Hanabi bot: legality, reading only its seat, its rules, strength."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

import opponents
from opponents.hanabi_bot import HanabiBot
from strategic_arena.arena import MoveRecord, play_match_sync
from strategic_arena.games import get_spec
from strategic_arena.games.hanabi import HanabiSpec, parse_observation
from strategic_arena.players import RandomPlayer
from strategic_arena.turn import GameState, Player

MINI = "mini_hanabi-v0"
SIMPLE = "simple_hanabi-v0"
VARIANTS = [MINI, SIMPLE]


def hanabi_spec(env_id: str) -> HanabiSpec:
    spec = get_spec(env_id)
    assert isinstance(spec, HanabiSpec)
    return spec


def dealt(
    env_id: str, hands: Sequence[Sequence[str]], moves: Sequence[int | str] = ()
) -> GameState:
    """A state with the given hands (seat 0 first) after ``moves``.

    A move is a player action id, or a card such as ``"R1"``: the card the next chance node
    deals (a draw after a play or discard).
    """
    spec = hanabi_spec(env_id)
    state = spec.game.new_initial_state()

    def deal(card: str) -> None:
        assert state.is_chance_node()
        state.apply_action("RYGWB".index(card[0]) * spec.ranks + int(card[1]) - 1)

    for hand in hands:
        for card in hand:
            deal(card)
    for move in moves:
        if isinstance(move, str):
            deal(move)
        else:
            assert move in state.legal_actions(), (move, state.legal_actions())
            state.apply_action(move)
    assert not state.is_chance_node()
    return GameState(env_id, state, spec)


def action(env_id: str, kind: str, value: int | str) -> int:
    """Action id of ``play 0``, ``discard 2``, ``colour R`` or ``rank 1``."""
    spec = hanabi_spec(env_id)
    if kind == "colour":
        assert isinstance(value, str)
        return spec.grammar.encode("colour", "RYGWB".index(value))
    assert isinstance(value, int)
    return spec.grammar.encode(kind, value)


# -- legality ------------------------------------------------------------------------------------


@dataclass
class Audit:
    """What a move callback checks for every decision of the bot."""

    bot_names: tuple[str, ...]
    decisions: int = 0
    discards_at_full_tokens: int = 0

    def __call__(self, record: MoveRecord, state: GameState) -> None:
        name = self.bot_names[record.seat]
        if name != "hanabi_bot":
            return
        self.decisions += 1
        assert record.action is not None, record.error
        assert record.action in state.legal_actions(record.seat)
        spec = state.spec
        assert isinstance(spec, HanabiSpec)
        obs = parse_observation(state.spiel_state.observation_string(record.seat))
        if obs.info == spec.max_information_tokens and record.action < spec.hand_size:
            self.discards_at_full_tokens += 1


@pytest.mark.parametrize("env_id", VARIANTS)
def test_self_play_is_always_legal(env_id: str) -> None:
    bot = HanabiBot(env_id)
    audit = Audit(("hanabi_bot", "hanabi_bot"))
    for seed in range(300):
        record = play_match_sync(env_id, [bot, bot], seed=seed, on_move=audit)
        assert record.status == "complete"
        assert record.forfeited_by is None
    assert audit.decisions > 300 * 4
    assert audit.discards_at_full_tokens == 0


@pytest.mark.parametrize("env_id", VARIANTS)
def test_legal_beside_a_random_partner(env_id: str) -> None:
    bot = HanabiBot(env_id)
    for seed in range(200):
        players: list[Player] = [bot, RandomPlayer(seed)]
        if seed % 2:
            players.reverse()
        audit = Audit(tuple(player.name for player in players))
        record = play_match_sync(env_id, players, seed=seed, on_move=audit)
        assert record.status == "complete"
        assert audit.discards_at_full_tokens == 0


# -- reading only its seat -----------------------------------------------------------------------


@pytest.mark.parametrize("env_id", VARIANTS)
def test_reads_only_what_its_seat_sees(env_id: str) -> None:
    bot = HanabiBot(env_id)
    checked = 0

    def compare(record: MoveRecord, state: GameState) -> None:
        nonlocal checked
        # A state holding only the seat's information: all there is behind ``serve``.
        masked = GameState.from_information(state.information(record.seat), state.spec)
        assert masked.spiel_state is None
        assert bot.choose(masked, record.seat) == record.action
        checked += 1

    for seed in range(60):
        play_match_sync(env_id, [bot, bot], seed=seed, on_move=compare)
    assert checked > 60 * 4


@pytest.mark.parametrize("joint", [True, False])
def test_same_observation_same_action(joint: bool) -> None:
    # Seat 0 holds different cards (and the deck differs) but sees exactly the same thing.
    partner = ["Y1", "R2", "Y2"]
    hint_ones = action(MINI, "rank", 1)
    for moves in ([], [action(MINI, "rank", 2), hint_ones]):
        first = dealt(MINI, [["R1", "R1", "Y1"], partner], moves)
        second = dealt(MINI, [["Y1", "Y1", "R1"], partner], moves)
        seat = first.spiel_state.current_player()
        assert seat == 0
        assert first.spiel_state.observation_string(0) == second.spiel_state.observation_string(0)
        assert first.spiel_state.history() != second.spiel_state.history()
        bot = HanabiBot(MINI, joint=joint)
        assert bot.choose(first, 0) == bot.choose(second, 0)


# -- the rules -----------------------------------------------------------------------------------


def rules_bot(env_id: str) -> HanabiBot:
    """The bot without its joint policy: these positions test the rules behind it."""
    return HanabiBot(env_id, joint=False)


def test_plays_a_card_known_playable_from_negative_knowledge() -> None:
    # Partner (seat 1) holds R2 Y2 R1: "2" tells it that card 2 is not a 2, hence a 1, and every
    # 1 is playable on empty fireworks. The hints spend every token, so the bot cannot hint
    # first: it plays the card (a blind guess would not pick the newest card).
    hint_twos = action(MINI, "rank", 2)
    state = dealt(
        MINI,
        [["R1", "Y1", "Y1"], ["R2", "Y2", "R1"]],
        [hint_twos, action(MINI, "rank", 1), hint_twos],
    )
    knowledge = parse_observation(state.spiel_state.observation_string(1)).hands[0]
    assert knowledge[2].ranks == (1,) and knowledge[2].hinted_rank is None
    assert state.legal_actions(1) == [0, 1, 2, 3, 4, 5]  # no token left: no hint
    chosen, rule = rules_bot(MINI).decide(state, 1)
    assert chosen == action(MINI, "play", 2)
    assert rule == "play a surely playable card"


def test_plays_the_focus_of_a_hint_at_once() -> None:
    # "red" touches only card 1 of Y2 R1 Y1: it could be R1 or R2, and the convention says the
    # partner would only hint it if it were playable.
    state = dealt(MINI, [["R1", "Y1", "R1"], ["Y2", "R1", "Y1"]], [action(MINI, "colour", "R")])
    chosen, rule = rules_bot(MINI).decide(state, 1)
    assert chosen == action(MINI, "play", 1)
    assert rule == "play the hinted card"


def test_hints_a_playable_card_without_misleading() -> None:
    # Partner holds R2 Y2 R1 G1 G1. "red" would focus R2 and "yellow" Y2 (each could be a 1 or
    # a 2 to the partner, so the convention reads them as playable): misleading. "1" marks R1
    # and the two G1s as surely playable.
    state = dealt(SIMPLE, [["R1", "R1", "Y1", "Y1", "G1"], ["R2", "Y2", "R1", "G1", "G1"]])
    chosen, rule = HanabiBot(SIMPLE).decide(state, 0)
    assert rule == "play hint"
    assert chosen == action(SIMPLE, "rank", 1)
    state.spiel_state.apply_action(chosen)
    knowledge = parse_observation(state.spiel_state.observation_string(1)).hands[0]
    assert [view.ranks for view in knowledge] == [(2,), (2,), (1,), (1,), (1,)]


def test_counts_cards_it_cannot_see() -> None:
    # Seat 0 sees both 2s of Mini Hanabi in its partner's hand: its own cards are all 1s, all
    # playable, though no hint said so. It has a sure play, so it hints its partner first.
    state = dealt(MINI, [["Y1", "Y1", "R1"], ["R2", "Y2", "R1"]])
    knowledge = parse_observation(state.spiel_state.observation_string(0)).hands[0]
    assert all(view.ranks == (1, 2) for view in knowledge)
    chosen, rule = rules_bot(MINI).decide(state, 0)
    assert rule == "play hint before playing"
    assert chosen == action(MINI, "rank", 1)


def test_hints_before_playing_when_the_partner_has_nothing_to_play() -> None:
    # Seat 1 knows three 1s (playable) and two tokens are left; its partner knows nothing, so
    # the bot hands over a play first: plays keep, and hints cost no card.
    state = dealt(MINI, [["Y2", "Y1", "R1"], ["R1", "R1", "Y1"]], [action(MINI, "rank", 1)])
    chosen, rule = rules_bot(MINI).decide(state, 1)
    assert rule == "play hint before playing"
    assert chosen == action(MINI, "rank", 1)  # both of its 1s, a different colour each


def test_never_discards_with_full_tokens() -> None:
    # Full tokens and no card known: the bot hints (discarding is illegal, never chosen).
    state = dealt(SIMPLE, [["R1", "Y1", "G1", "R1", "Y1"], ["R2", "Y2", "G2", "G1", "R1"]])
    spec = hanabi_spec(SIMPLE)
    chosen = HanabiBot(SIMPLE).choose(state, 0)
    assert chosen in state.legal_actions(0)
    assert chosen >= 2 * spec.hand_size


# -- the player ----------------------------------------------------------------------------------


def test_deterministic_and_seed_independent() -> None:
    def moves(seed: int) -> list[tuple[int | None, ...]]:
        bot = HanabiBot(SIMPLE, seed=seed)
        return [
            tuple(move.action for move in play_match_sync(SIMPLE, [bot, bot], seed=game).moves)
            for game in range(20)
        ]

    assert moves(1) == moves(2)


def test_rejects_other_games() -> None:
    with pytest.raises(ValueError, match="mini_hanabi-v0"):
        HanabiBot("tic_tac_toe-v0")


def test_registry_builds_it() -> None:
    player = opponents.make("hanabi_bot:seed=3", MINI)
    assert isinstance(player, HanabiBot)
    assert player.name == "hanabi_bot:seed=3"
    assert player.joint
    rules = opponents.make("hanabi_bot:joint=false", MINI)
    assert isinstance(rules, HanabiBot) and not rules.joint


# -- strength ------------------------------------------------------------------------------------


def test_beats_random_play_on_mini_hanabi() -> None:
    bot = HanabiBot(MINI)
    ours = [play_match_sync(MINI, [bot, bot], seed=seed).returns[0] for seed in range(200)]
    theirs = []
    for seed in range(200):
        random = RandomPlayer(seed)
        theirs.append(play_match_sync(MINI, [random, random], seed=seed).returns[0])
    # Measured: about 3.9 against 1.6 (standard errors about 0.02 and 0.1).
    assert statistics.mean(ours) > statistics.mean(theirs) + 1.0
    assert statistics.mean(ours) > 3.0
