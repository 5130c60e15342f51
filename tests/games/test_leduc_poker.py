"""Leduc Hold'em spec: grammar in both betting contexts, menus, seat views that leak nothing."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pyspiel
import pytest

from strategic_arena.actions import Action, ActionError
from strategic_arena.games.leduc_poker import RANK_NAMES, LeducPoker, card_name

SPEC = LeducPoker()
GRAMMAR = SPEC.grammar
NO_BET = {1: "check", 2: "bet"}
FACING = {0: "fold", 1: "call", 2: "raise"}
CAPPED = {0: "fold", 1: "call"}
CONTEXT_FREE_FACING = GRAMMAR.menu_for([0, 1, 2])
CONTEXT_FREE_NO_BET = GRAMMAR.menu_for([1, 2])


def _play(actions: list[int]) -> pyspiel.State:
    state = SPEC.game.new_initial_state()
    for action in actions:
        state.apply_action(action)
    return state


def _random_game(rng: np.random.Generator) -> tuple[list[int], list[bool]]:
    """A random game's actions and, for each, whether it was a chance outcome."""
    state = SPEC.game.new_initial_state()
    actions: list[int] = []
    chance: list[bool] = []
    while not state.is_terminal():
        if state.is_chance_node():
            outcomes = [action for action, _ in state.chance_outcomes()]
            action = int(rng.choice(outcomes))
        else:
            action = int(rng.choice(state.legal_actions()))
        actions.append(action)
        chance.append(state.is_chance_node())
        state.apply_action(action)
    return actions, chance


def _random_games(seed: int, count: int) -> list[tuple[list[int], list[bool]]]:
    rng = np.random.default_rng(seed)
    return [_random_game(rng) for _ in range(count)]


def test_spec_constants() -> None:
    assert SPEC.env_id == "leduc_holdem-v0"
    assert SPEC.openspiel_name == "leduc_poker"
    assert SPEC.openspiel_params == {}
    assert SPEC.num_players == 2
    assert (SPEC.worst, SPEC.optimum) == (-13.0, 13.0)
    assert (SPEC.worst, SPEC.optimum) == (SPEC.game.min_utility(), SPEC.game.max_utility())
    assert "Leduc Hold'em" in SPEC.rules
    assert [GRAMMAR.text(a) for a in range(3)] == ["fold", "call", "raise"]


def test_tensor_bounds_cover_random_states() -> None:
    low, high = SPEC.tensor_bounds
    for actions, _ in _random_games(seed=1, count=300):
        for length in range(2, len(actions) + 1):
            state = _play(actions[:length])
            for player in range(2):
                tensor = np.asarray(SPEC.observation_tensor(state, player))
                assert tensor.shape == (SPEC.tensor_size,)
                assert low <= tensor.min() and tensor.max() <= high


def _strength(card: int, public: int) -> int:
    return 10 + card // 2 if card // 2 == public // 2 else card // 2


def test_card_mapping_matches_showdowns() -> None:
    """Rank = id // 2; a pair with the public card wins, else the higher rank; equal ranks tie."""
    for mine, theirs, public in itertools.permutations(range(6), 3):
        state = _play([mine, theirs, 1, 1, public, 1, 1])
        assert state.is_terminal()

        expected = np.sign(_strength(mine, public) - _strength(theirs, public))
        assert state.returns()[0] == expected
    assert [card_name(c) for c in (0, 3, 4)] == [
        "Jack (J, suit 0)",
        "Queen (Q, suit 1)",
        "King (K, suit 0)",
    ]


@pytest.mark.parametrize(
    ("history", "menu"),
    [
        ([0, 3], NO_BET),
        ([0, 3, 1], NO_BET),
        ([0, 3, 2], FACING),
        ([0, 3, 1, 2], FACING),
        ([0, 3, 2, 2], CAPPED),
        ([0, 3, 1, 1, 5], NO_BET),
        ([0, 3, 1, 1, 5, 2], FACING),
        ([0, 3, 1, 1, 5, 2, 2], CAPPED),
    ],
)
def test_canonical_menus(history: list[int], menu: dict[int, str]) -> None:
    state = _play(history)
    assert SPEC.menu(state, state.current_player()) == menu


def test_canonical_texts_unique_and_parse_back() -> None:
    for actions, chance in _random_games(seed=2, count=200):
        for length in range(len(actions)):
            if chance[length]:
                continue
            state = _play(actions[:length])
            menu = SPEC.menu(state, state.current_player())
            assert len(set(menu.values())) == len(menu)
            for action, text in menu.items():
                assert GRAMMAR.parse(text, menu) == Action(action, text)
                assert GRAMMAR.parse(f" {text.title()}. ", menu) == Action(action, text)


@pytest.mark.parametrize(
    ("answer", "menu", "expected"),
    [
        ("check", NO_BET, 1),
        ("call", NO_BET, 1),
        ("Call", NO_BET, 1),
        ("pass", NO_BET, 1),
        ("bet", NO_BET, 2),
        ("raise", NO_BET, 2),
        ("Raise", NO_BET, 2),
        ("fold", FACING, 0),
        ("Fold", FACING, 0),
        ("call", FACING, 1),
        ("Call", FACING, 1),
        ("raise", FACING, 2),
        ("Raise", FACING, 2),
        ("bet", FACING, 2),
        ("pass", FACING, 0),
        ("Fold", CAPPED, 0),
        ("Call", CAPPED, 1),
        ("check", CONTEXT_FREE_NO_BET, 1),
        ("pass", CONTEXT_FREE_NO_BET, 1),
        ("bet", CONTEXT_FREE_NO_BET, 2),
        ("pass", CONTEXT_FREE_FACING, 0),
        ("bet", CONTEXT_FREE_FACING, 2),
        ("I check", NO_BET, 1),
        ("I will raise", FACING, 2),
        ("I'll call.", FACING, 1),
        ("checks", NO_BET, 1),
        ("calling", FACING, 1),
        ("folds", FACING, 0),
        ("folding", FACING, 0),
        ("raises", FACING, 2),
        ("raising", FACING, 2),
        ("betting", NO_BET, 2),
        ("**bet**", NO_BET, 2),
    ],
)
def test_synonyms(answer: str, menu: dict[int, str], expected: int) -> None:
    assert GRAMMAR.parse(answer, menu) == Action(expected, menu[expected])


@pytest.mark.parametrize(
    ("answer", "menu", "kind", "detail"),
    [
        ("check", FACING, "illegal_action", "you cannot check facing a bet; fold, call or raise"),
        ("checking", CAPPED, "illegal_action", "you cannot check facing a bet; fold or call"),
        ("fold", NO_BET, "illegal_action", "there is nothing to fold against; check or bet"),
        ("Fold", NO_BET, "illegal_action", "there is nothing to fold against; check or bet"),
        ("raise", CAPPED, "illegal_action", "raise is not legal now; legal actions: fold, call"),
        ("Raise", CAPPED, "illegal_action", "raise is not legal now; legal actions: fold, call"),
        ("bet", CAPPED, "illegal_action", "raise is not legal now; legal actions: fold, call"),
        ("all in", FACING, "unknown_action", None),
        ("raise to 4", FACING, "unknown_action", None),
        ("check or fold", NO_BET, "unknown_action", None),
        ("", NO_BET, "no_action", None),
    ],
)
def test_bad_answers(answer: str, menu: dict[int, str], kind: str, detail: str | None) -> None:
    result = GRAMMAR.parse(answer, menu)
    assert isinstance(result, ActionError)
    assert result.kind == kind
    if detail is not None:
        assert result.detail == detail


def _public_card(actions: list[int], chance: list[bool]) -> int | None:
    deals = [action for action, is_chance in zip(actions, chance, strict=True) if is_chance]
    return deals[2] if len(deals) > 2 else None


def _mentions(text: str, rank: int) -> bool:
    name = RANK_NAMES[rank]
    letter = "JQK"[rank]
    return re.search(rf"\b{name}s?\b|\({letter},", text) is not None


def test_observation_shows_own_card_never_the_opponents() -> None:
    checked = 0
    for actions, chance in _random_games(seed=3, count=400):
        cards = actions[:2]
        for length in range(2, len(actions) + 1):
            state = _play(actions[:length])
            public = _public_card(actions[:length], chance[:length])
            for player in range(2):
                text = SPEC.observation_text(state, player)
                assert f"Your private card: {card_name(cards[player])}." in text
                if public is None:
                    assert "not yet revealed" in text
                else:
                    assert f"Public card: {card_name(public)}." in text
                other_rank = cards[1 - player] // 2
                shown = {cards[player] // 2} | ({public // 2} if public is not None else set())
                if other_rank not in shown:
                    assert not _mentions(text, other_rank), (actions[:length], player, text)
                    checked += 1
                # The opponent's exact card (rank and suit) never shows.
                assert card_name(cards[1 - player]) not in text or cards[1 - player] == public
    assert checked > 1000


def test_observation_same_whatever_the_opponent_holds() -> None:
    for actions, chance in _random_games(seed=4, count=150):
        public = _public_card(actions, chance)
        for player in range(2):
            others = set(range(6)) - {actions[player], public}
            for length in range(2, len(actions) + 1):
                texts = set()
                for other in others:
                    swapped = list(actions[:length])
                    swapped[1 - player] = other
                    texts.add(SPEC.observation_text(_play(swapped), player))
                assert len(texts) == 1, (actions[:length], player, texts)


def _money(state: pyspiel.State) -> list[int]:
    match = re.search(r"\[Money: (\d+) (\d+)\]", state.information_state_string(0))
    assert match is not None
    return [int(match[1]), int(match[2])]


def test_observation_chips_and_turn_agree_with_openspiel() -> None:
    for actions, _ in _random_games(seed=5, count=300):
        for length in range(2, len(actions) + 1):
            state = _play(actions[:length])
            text = SPEC.observation_text(state, 0)
            match = re.search(
                r"Pot: (\d+) chips \(Player 0 put in (\d+), Player 1 put in (\d+)", text
            )
            assert match is not None, text
            pot, chips = int(match[1]), [int(match[2]), int(match[3])]
            assert pot == sum(chips)
            if state.is_terminal():
                assert "The hand is over" in text
                assert all("The hand is over" in SPEC.observation_text(state, p) for p in (0, 1))
                # Net returns are what the winner takes from the loser's contribution.
                assert max(abs(r) for r in state.returns()) <= max(chips)
                continue
            assert [100 - money for money in _money(state)] == chips
            if state.is_chance_node():
                assert "the public card is being dealt" in text
                continue
            mover = state.current_player()
            assert f"Player {mover} to act" in text
            assert "It is your turn" in SPEC.observation_text(state, mover)
            to_call = chips[1 - mover] - chips[mover]
            if 0 in state.legal_actions():
                assert f"{to_call} chips to call" in text
            else:
                assert to_call == 0 and "nothing to call" in text


@pytest.mark.parametrize(
    ("history", "player", "pieces"),
    [
        (
            [3, 4],
            0,
            [
                "Your private card: Queen (Q, suit 1).",
                "Public card: not yet revealed",
                "Round 1 of 2",
                "Pot: 2 chips",
                "Round 1 betting: none yet.",
                "It is your turn (Player 0 to act): nothing to call; a bet is 2 chips.",
            ],
        ),
        (
            [3, 4, 2, 2],
            0,
            [
                "Pot: 8 chips (Player 0 put in 3, Player 1 put in 5",
                "Round 1 betting: Player 0 bet 2, Player 1 raised by 2 (put in 4).",
                "2 chips to call; raises left this round: 0.",
            ],
        ),
        (
            [3, 4, 1, 1, 2],
            1,
            [
                "Your private card: King (K, suit 0).",
                "Public card: Queen (Q, suit 0).",
                "Your hand: no pair",
                "Round 2 of 2",
                "Round 1 betting: Player 0 checked, Player 1 checked.",
                "Round 2 betting: none yet.",
                "It is your opponent's turn (Player 0 to act): nothing to call; a bet is 4 chips.",
            ],
        ),
        (
            [3, 4, 1, 1, 2, 2],
            0,
            ["Your hand: a pair of Queens.", "Round 2 betting: Player 0 bet 4."],
        ),
        (
            [3, 4, 2, 2, 1, 2, 2, 2, 1],
            1,
            [
                "Pot: 26 chips (Player 0 put in 13, Player 1 put in 13",
                "Round 2 betting: Player 0 bet 4, Player 1 raised by 4 (put in 8), "
                "Player 0 called 4.",
                "The hand is over (showdown",
            ],
        ),
        ([3, 4, 2, 0], 0, ["Player 1 folded", "The hand is over (Player 1 folded"]),
        ([3, 4, 1, 1], 1, ["Round 1 is over; the public card is being dealt."]),
    ],
)
def test_observation_wording(history: list[int], player: int, pieces: list[str]) -> None:
    text = SPEC.observation_text(_play(history), player)
    for piece in pieces:
        assert piece in text, text


def test_observation_before_deal() -> None:
    state = SPEC.game.new_initial_state()
    assert SPEC.observation_text(state, 0) == "The cards are being dealt."
    assert SPEC.observation_text(state.child(5), 1) == "The cards are being dealt."
