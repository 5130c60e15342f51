"""Kuhn poker spec: grammar in both betting contexts, menus, seat views that leak nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pyspiel
import pytest

from strategic_arena.actions import Action, ActionError
from strategic_arena.games.kuhn_poker import CARD_NAMES, KuhnPoker, poker_verb

SPEC = KuhnPoker()
GRAMMAR = SPEC.grammar
NO_BET = {0: "check", 1: "bet"}
FACING = {0: "fold", 1: "call"}
CONTEXT_FREE = GRAMMAR.menu_for([0, 1])


def _play(actions: list[int]) -> pyspiel.State:
    state = SPEC.game.new_initial_state()
    for action in actions:
        state.apply_action(action)
    return state


def _all_states() -> Iterator[pyspiel.State]:
    """Every state after the deal (decisions and terminals)."""

    def walk(state: pyspiel.State) -> Iterator[pyspiel.State]:
        if not state.is_chance_node():
            yield state
        if state.is_terminal():
            return
        for action in state.legal_actions():
            yield from walk(state.child(action))

    yield from walk(SPEC.game.new_initial_state())


def test_spec_constants() -> None:
    assert SPEC.env_id == "kuhn_poker-v0"
    assert SPEC.openspiel_params == {}
    assert SPEC.num_players == 2
    assert (SPEC.worst, SPEC.optimum) == (SPEC.game.min_utility(), SPEC.game.max_utility())
    assert "Kuhn poker" in SPEC.rules
    assert SPEC.role(0) == "Player 0 (you act first in the betting)"
    assert SPEC.player_name(1) == "Player 1"
    assert GRAMMAR.text(0) == "pass"
    assert GRAMMAR.text(1) == "bet"


def test_tensor_bounds_cover_every_state() -> None:
    low, high = SPEC.tensor_bounds
    for state in _all_states():
        for player in range(2):
            tensor = np.asarray(SPEC.observation_tensor(state, player))
            assert tensor.shape == (SPEC.tensor_size,)
            assert low <= tensor.min() and tensor.max() <= high


@pytest.mark.parametrize(
    ("history", "menu"),
    [
        ([2, 0], NO_BET),
        ([2, 0, 0], NO_BET),
        ([2, 0, 1], FACING),
        ([2, 0, 0, 1], FACING),
    ],
)
def test_canonical_menus(history: list[int], menu: dict[int, str]) -> None:
    state = _play(history)
    assert SPEC.menu(state, state.current_player()) == menu
    assert SPEC.menu(state, 1 - state.current_player()) == {}


def test_canonical_texts_unique_and_parse_back() -> None:
    for state in _all_states():
        if state.is_terminal():
            continue
        menu = SPEC.menu(state, state.current_player())
        assert len(set(menu.values())) == len(menu)
        for action, text in menu.items():
            assert GRAMMAR.parse(text, menu) == Action(action, text)
            assert GRAMMAR.parse(text.upper(), menu) == Action(action, text)
        assert SPEC.example_action(state.current_player()) in NO_BET.values()


@pytest.mark.parametrize(
    ("answer", "menu", "expected"),
    [
        ("check", NO_BET, 0),
        ("pass", NO_BET, 0),
        ("Pass", NO_BET, 0),
        ("fold", NO_BET, 0),
        ("call", NO_BET, 0),
        ("bet", NO_BET, 1),
        ("Bet", NO_BET, 1),
        ("raise", NO_BET, 1),
        ("pass", FACING, 0),
        ("Pass", FACING, 0),
        ("fold", FACING, 0),
        ("call", FACING, 1),
        ("bet", FACING, 1),
        ("Bet", FACING, 1),
        ("pass", CONTEXT_FREE, 0),
        ("check", CONTEXT_FREE, 0),
        ("fold", CONTEXT_FREE, 0),
        ("call", CONTEXT_FREE, 1),
        ("bet", CONTEXT_FREE, 1),
        ("I check", NO_BET, 0),
        ("I will call", FACING, 1),
        ("I'll call.", FACING, 1),
        ("i’ll fold", FACING, 0),
        ("checks", NO_BET, 0),
        ("checking", NO_BET, 0),
        ("calling", FACING, 1),
        ("folds", FACING, 0),
        ("betting", NO_BET, 1),
        ("bets", NO_BET, 1),
        ("passes", FACING, 0),
        ("**CALL**", FACING, 1),
        ("`bet`", NO_BET, 1),
    ],
)
def test_synonyms(answer: str, menu: dict[int, str], expected: int) -> None:
    assert GRAMMAR.parse(answer, menu) == Action(expected, menu[expected])


@pytest.mark.parametrize(
    ("answer", "menu", "kind", "detail"),
    [
        ("check", FACING, "illegal_action", "you cannot check facing a bet; fold or call"),
        ("I check", FACING, "illegal_action", "you cannot check facing a bet; fold or call"),
        ("raise", FACING, "illegal_action", "Kuhn poker allows no raise; fold or call"),
        ("raising", FACING, "illegal_action", "Kuhn poker allows no raise; fold or call"),
        ("all in", NO_BET, "unknown_action", None),
        ("check-raise", NO_BET, "unknown_action", None),
        ("I think I call", FACING, "unknown_action", None),
        ("you call", FACING, "unknown_action", None),
        ("2", NO_BET, "unknown_action", None),
        ("", NO_BET, "no_action", None),
    ],
)
def test_bad_answers(answer: str, menu: dict[int, str], kind: str, detail: str | None) -> None:
    result = GRAMMAR.parse(answer, menu)
    assert isinstance(result, ActionError)
    assert result.kind == kind
    if detail is not None:
        assert result.detail == detail


@pytest.mark.parametrize(
    ("key", "verb"),
    [
        ("raises", "raise"),
        ("raising", "raise"),
        ("i will bet", "bet"),
        ("i'll pass", "pass"),
        ("i fold", "fold"),
        ("checkk", None),
        ("i", None),
        ("will call", None),
    ],
)
def test_poker_verb(key: str, verb: str | None) -> None:
    assert poker_verb(key) == verb


def _card_words(card: int) -> list[str]:
    return [CARD_NAMES[card], f"({'JQK'[card]})"]


def test_observation_shows_own_card_never_the_opponents() -> None:
    for state in _all_states():
        cards = state.history()[:2]
        for player in range(2):
            text = SPEC.observation_text(state, player)
            assert f"Your card: {CARD_NAMES[cards[player]]}" in text
            for word in _card_words(cards[1 - player]):
                assert word not in text, (state.history(), player, text)


def test_observation_same_whatever_the_opponent_holds() -> None:
    for state in _all_states():
        history = state.history()
        for player in range(2):
            texts = set()
            for other in set(range(3)) - {history[player]}:
                swapped = list(history)
                swapped[1 - player] = other
                texts.add(SPEC.observation_text(_play(swapped), player))
            assert len(texts) == 1


@pytest.mark.parametrize(
    ("history", "pieces"),
    [
        ([2, 0], ["Your card: King (K)", "Pot: 2 chips", "Betting so far: none", "your turn"]),
        ([0, 1, 0, 1], ["Player 0 checked, Player 1 bet 1", "Pot: 3 chips", "call 1 more"]),
        ([0, 1, 1, 0], ["Player 0 bet 1, Player 1 folded", "hand is over", "Player 1 folded"]),
        ([0, 1, 0, 1, 1], ["Player 1 bet 1, Player 0 called 1", "Pot: 4 chips", "showdown"]),
        ([0, 1, 0, 0], ["Player 0 checked, Player 1 checked", "showdown", "Pot: 2 chips"]),
    ],
)
def test_observation_wording(history: list[int], pieces: list[str]) -> None:
    text = SPEC.observation_text(_play(history), 0)
    for piece in pieces:
        assert piece in text


def test_observation_turn_matches_state_in_random_play() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        state = SPEC.game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes = [action for action, _ in state.chance_outcomes()]
                state.apply_action(int(rng.choice(outcomes)))
                continue
            mover = state.current_player()
            assert f"Player {mover} to act" in SPEC.observation_text(state, 1 - mover)
            assert "It is your turn" in SPEC.observation_text(state, mover)
            state.apply_action(int(rng.choice(state.legal_actions())))
        for player in range(2):
            assert "The hand is over" in SPEC.observation_text(state, player)


def test_observation_before_deal() -> None:
    state = SPEC.game.new_initial_state()
    assert SPEC.observation_text(state, 0) == "The cards are being dealt."
    assert re.search(r"Jack|Queen|King", SPEC.observation_text(state.child(0), 1)) is None
