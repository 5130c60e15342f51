"""Hanabi specs: action layout, grammar, seat views that hide the own hand, public move lines."""

from __future__ import annotations

import re

import numpy as np
import pyspiel
import pytest

from strategic_arena.actions import Action, ActionError
from strategic_arena.games.hanabi import (
    HanabiSpec,
    MiniHanabi,
    SimpleHanabi,
    parse_observation,
)

MINI = MiniHanabi()
SIMPLE = SimpleHanabi()
SPECS = (MINI, SIMPLE)
CARD = re.compile(r"\b[RYGWB][1-5]\b")


def _deal_id(spec: HanabiSpec, card: str) -> int:
    """OpenSpiel's chance outcome that deals ``card`` (colour-major, then rank)."""
    return "RYGWB".index(card[0]) * spec.ranks + int(card[1]) - 1


def _play(spec: HanabiSpec, actions: list[int]) -> pyspiel.State:
    state = spec.game.new_initial_state()
    for action in actions:
        state.apply_action(action)
    return state


def _deal(spec: HanabiSpec, cards: list[str]) -> pyspiel.State:
    state = spec.game.new_initial_state()
    for card in cards:
        assert state.is_chance_node()
        action = _deal_id(spec, card)
        assert state.action_to_string(action) == f"(Deal {card})"
        state.apply_action(action)
    return state


def _chance(state: pyspiel.State, rng: np.random.Generator) -> int:
    outcomes, probs = zip(*state.chance_outcomes(), strict=True)
    return int(rng.choice(outcomes, p=probs))


def _random_states(spec: HanabiSpec, seed: int, games: int) -> list[pyspiel.State]:
    """Every decision and terminal state of ``games`` random games."""
    rng = np.random.default_rng(seed)
    states: list[pyspiel.State] = []
    for _ in range(games):
        state = spec.game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(_chance(state, rng))
                continue
            states.append(state.clone())
            state.apply_action(int(rng.choice(state.legal_actions())))
        states.append(state)
    return states


def _section(text: str, heading: str) -> list[str]:
    """The indented lines under the line starting with ``heading``."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    section = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        section.append(line.strip())
    return section


def test_spec_constants() -> None:
    assert (MINI.env_id, MINI.title) == ("mini_hanabi-v0", "Mini Hanabi")
    assert (SIMPLE.env_id, SIMPLE.title) == ("simple_hanabi-v0", "Simple Hanabi")
    assert MINI.openspiel_params == {
        "colors": 2,
        "ranks": 2,
        "hand_size": 3,
        "max_information_tokens": 3,
        "max_life_tokens": 3,
        "players": 2,
    }
    assert SIMPLE.openspiel_params["hand_size"] == 5
    for spec in SPECS:
        assert spec.openspiel_name == "hanabi"
        assert spec.prompt_dir == "hanabi"
        assert spec.cooperative
        assert spec.num_players == 2
        assert spec.worst == spec.game.min_utility() == 0.0
        assert spec.optimum == spec.reachable_score <= spec.game.max_utility()
        assert "cooperative" in spec.rules
        assert spec.example_action(0) == "play 0"
        assert spec.player_name(1) == "Player 1"
        assert spec.grammar.num_actions == spec.game.num_distinct_actions()
    assert (MINI.optimum, SIMPLE.optimum) == (4.0, 4.0)
    # Simple Hanabi's deck leaves 2 cards to draw: 2 + one last turn each = 4 plays at most.
    assert (MINI.reachable_score, SIMPLE.reachable_score) == (4, 4)
    assert "best possible score 4: complete fireworks would score 6" in SIMPLE.variant()
    assert MINI.role(0) == (
        "Player 0 of 2 (you act first); you and your partner cooperate and share the score"
    )
    assert "act second" in MINI.role(1)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.env_id)
def test_deck_size_matches_card_counts(spec: HanabiSpec) -> None:
    state = spec.game.new_initial_state()
    assert parse_observation(state.observation_string(0)).deck == spec.deck_size
    assert spec.deck_size == spec.colors * 4  # three 1s and one 2 per colour
    assert f"full deck {spec.deck_size} cards" in spec.variant()


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.env_id)
def test_action_layout_matches_openspiel(spec: HanabiSpec) -> None:
    state = _random_states(spec, seed=0, games=1)[0]
    player = state.current_player()
    size, colors = spec.hand_size, spec.colors
    expected = (
        [f"(Discard {i})" for i in range(size)]
        + [f"(Play {i})" for i in range(size)]
        + [f"(Reveal player +1 color {'RYGWB'[c]})" for c in range(colors)]
        + [f"(Reveal player +1 rank {r})" for r in range(1, spec.ranks + 1)]
    )
    assert [state.action_to_string(player, a) for a in range(spec.grammar.num_actions)] == expected
    texts = [spec.grammar.text(a) for a in range(spec.grammar.num_actions)]
    assert texts[0] == "discard 0"
    assert texts[size + 1] == "play 1"
    assert texts[2 * size] == "hint red"
    assert texts[2 * size + colors] == "hint 1"


def test_new_cards_go_to_the_last_position() -> None:
    state = _deal(MINI, ["R1", "Y1", "Y2", "R1", "Y1", "R2"])
    state.apply_action(MINI.grammar.encode("play", 0))  # Player 0 plays R1
    state.apply_action(_deal_id(MINI, "Y1"))
    hand = [card.card for card in parse_observation(state.observation_string(1)).hands[1]]
    assert hand == ["Y1", "Y2", "Y1"]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.env_id)
def test_tensor_bounds_cover_random_states(spec: HanabiSpec) -> None:
    low, high = spec.tensor_bounds
    for state in _random_states(spec, seed=1, games=20):
        for player in range(2):
            tensor = np.asarray(spec.observation_tensor(state, player))
            assert tensor.shape == (spec.tensor_size,)
            assert low <= tensor.min() and tensor.max() <= high


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.env_id)
def test_canonical_and_openspiel_texts_parse_back(spec: HanabiSpec) -> None:
    grammar = spec.grammar
    checked = 0
    for state in _random_states(spec, seed=2, games=40):
        if state.is_terminal():
            continue
        player = state.current_player()
        menu = spec.menu(state, player)
        assert list(menu) == state.legal_actions(player)
        assert len(set(menu.values())) == len(menu)
        for action, text in menu.items():
            assert grammar.parse(text, menu) == Action(action, text)
            assert grammar.parse(text.upper() + ".", menu) == Action(action, text)
        for action in range(grammar.num_actions):
            result = grammar.parse(state.action_to_string(player, action), menu)
            if action in menu:
                assert result == Action(action, menu[action])
            else:
                assert isinstance(result, ActionError)
                assert result.kind == "illegal_action"
                assert grammar.text(action) in result.detail
            checked += 1
    assert checked > 100


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("play card 0", "play 0"),
        ("PLAY   Card 2", "play 2"),
        ("I play card #1", "play 1"),
        ("discard card 1", "discard 1"),
        ("Discard my card 0.", "discard 0"),
        ("(Play 1)", "play 1"),
        ("(Discard 2)", "discard 2"),
        ("hint color red", "hint red"),
        ("hint colour R", "hint red"),
        ("hint rank 1", "hint 1"),
        ("hint 1s", "hint 1"),
        ("hint 2's", "hint 2"),
        ("hint ones", "hint 1"),
        ("clue red", "hint red"),
        ("tell red", "hint red"),
        ("reveal red", "hint red"),
        ("reveal color R", "hint red"),
        ("hint player +1 red", "hint red"),
        ("hint partner red", "hint red"),
        ("give a red hint", "hint red"),
        ("give my partner a hint: yellow", "hint yellow"),
        ("hint yellow to player 1", "hint yellow"),
        ("hint reds", "hint red"),
        ("(Reveal player +1 color Y)", "hint yellow"),
        ("(Reveal player +1 rank 2)", "hint 2"),
        ("`hint 2`", "hint 2"),
    ],
)
def test_synonyms(answer: str, text: str) -> None:
    menu = MINI.grammar.menu_for(range(MINI.grammar.num_actions))
    result = MINI.grammar.parse(answer, menu)
    assert isinstance(result, Action), result
    assert result.text == text


@pytest.mark.parametrize(
    "answer",
    [
        "play 3",  # Mini Hanabi holds 3 cards: positions 0-2
        "discard 7",
        "hint green",  # not a colour of Mini Hanabi
        "hint blue",
        "hint 3",  # ranks 1-2 only
        "hint rank red",
        "hint color 1",
        "hint red 1",
        "play",
        "red",
        "pass",
    ],
)
def test_unknown_actions(answer: str) -> None:
    menu = MINI.grammar.menu_for(range(MINI.grammar.num_actions))
    result = MINI.grammar.parse(answer, menu)
    assert isinstance(result, ActionError)
    assert result.kind == "unknown_action"


def test_simple_hanabi_accepts_green_and_position_4() -> None:
    menu = SIMPLE.grammar.menu_for(range(SIMPLE.grammar.num_actions))
    assert SIMPLE.grammar.parse("hint green", menu) == Action(12, "hint green")
    assert SIMPLE.grammar.parse("discard card 4", menu) == Action(4, "discard 4")
    result = SIMPLE.grammar.parse("hint white", menu)
    assert isinstance(result, ActionError) and result.kind == "unknown_action"


def test_discard_with_full_tokens_is_illegal() -> None:
    state = _deal(MINI, ["R1", "Y1", "Y2", "R1", "Y1", "R2"])
    menu = MINI.menu(state, 0)
    assert "discard 0" not in menu.values()
    for answer in ("discard 0", "discard card 2", "(Discard 1)"):
        result = MINI.grammar.parse(answer, menu)
        assert isinstance(result, ActionError)
        assert result.kind == "illegal_action"
        assert "information tokens" in result.detail


def test_hints_without_tokens_or_matching_cards_are_illegal() -> None:
    state = _deal(MINI, ["R1", "Y1", "Y2", "R1", "R1", "R2"])  # Player 1 holds no yellow
    menu = MINI.menu(state, 0)
    result = MINI.grammar.parse("hint yellow", menu)
    assert isinstance(result, ActionError) and result.kind == "illegal_action"
    assert "at least one card" in result.detail
    for _ in range(3):  # spend the three information tokens
        state.apply_action(MINI.grammar.encode("rank", 1))
    assert parse_observation(state.observation_string(0)).info == 0
    menu = MINI.menu(state, state.current_player())
    for answer in ("hint red", "hint 1", "clue rank 2"):
        result = MINI.grammar.parse(answer, menu)
        assert isinstance(result, ActionError) and result.kind == "illegal_action"
        assert "no information token" in result.detail


def test_observation_hides_own_cards() -> None:
    partner = ["R1", "Y1", "R2"]
    first = _deal(MINI, ["R1", "Y1", "Y2", *partner])
    second = _deal(MINI, ["Y1", "R1", "R1", *partner])
    # Player 0's view cannot depend on Player 0's own cards ...
    assert MINI.observation_text(first, 0) == MINI.observation_text(second, 0)
    # ... while Player 1's view shows them.
    assert MINI.observation_text(first, 1) != MINI.observation_text(second, 1)
    text = MINI.observation_text(first, 1)
    assert _section(text, "Your partner's hand") == [
        f"card {i}: {card}; your partner knows: colour unknown (could be R or Y), "
        "rank unknown (could be 1 or 2)"
        for i, card in enumerate(["R1", "Y1", "Y2"])
    ]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.env_id)
def test_own_hand_section_never_lists_own_cards(spec: HanabiSpec) -> None:
    for state in _random_states(spec, seed=3, games=15):
        for player in range(2):
            text = spec.observation_text(state, player)
            own = _section(text, "Your hand")
            # The partner's observation shows this player's actual cards.
            actual = [
                c.card for c in parse_observation(state.observation_string(1 - player)).hands[1]
            ]
            assert len(own) == len(actual)
            assert not any(CARD.search(line) for line in own), own
            for i, (line, card) in enumerate(zip(own, actual, strict=True)):
                assert line.startswith(f"card {i}: colour ")
                assert card not in line
            theirs = _section(text, "Your partner's hand")
            seen = [c.card for c in parse_observation(state.observation_string(player)).hands[1]]
            assert [CARD.findall(line) for line in theirs] == [[card] for card in seen]


def test_constructed_sequence_views_and_move_lines() -> None:
    state = _deal(MINI, ["R1", "Y1", "Y2", "R1", "Y1", "R2"])
    text = MINI.observation_text(state, 0)
    assert "Life tokens: 3 of 3" in text
    assert "Information tokens: 3 of 3" in text
    assert "Fireworks (highest rank played in each colour): red 0, yellow 0" in text
    assert "Deck: 2 cards left" in text
    assert "Discard pile: empty" in text
    assert text.endswith("It is your turn (Player 0).")
    assert MINI.observation_text(state, 1).endswith("It is your partner's turn (Player 0).")
    assert _section(text, "Your hand") == [
        f"card {i}: colour unknown (could be R or Y), rank unknown (could be 1 or 2)"
        for i in range(3)
    ]

    grammar = MINI.grammar
    steps: list[tuple[int, str, str | None]] = [
        (grammar.encode("colour", 0), "Player 0 hints Player 1: red (cards 0 and 2)", None),
        (grammar.encode("play", 0), "Player 1 plays card 0: it was R1, played successfully", "Y1"),
        (
            grammar.encode("play", 2),
            "Player 0 plays card 2: it was Y2, it could not be played: "
            "a life token is lost (2 left)",
            "R1",
        ),
        (grammar.encode("discard", 0), "Player 1 discards card 0: it was Y1", None),
        (grammar.encode("rank", 2), "Player 0 hints Player 1: rank 2 (card 0)", None),
    ]
    for action, line, drawn in steps:
        player = state.current_player()
        text = MINI.menu(state, player)[action]
        assert MINI.describe_move(state, player, action, text) == line
        state.apply_action(action)
        if drawn is not None:
            state.apply_action(_deal_id(MINI, drawn))

    # Player 0 drew the last card; Player 1 and Player 0 had one more turn each.
    assert state.is_terminal()
    assert state.returns() == [1.0, 1.0]
    text = MINI.observation_text(state, 1)
    assert "Life tokens: 2 of 3" in text
    assert "Information tokens: 2 of 3" in text
    assert "red 1, yellow 0" in text
    assert "Score so far: 1 of 4" in text
    assert "Discard pile: Y2, Y1" in text
    assert "Deck: 0 cards left" in text
    assert _section(text, "Your hand") == [
        "card 0: colour R, rank 2",
        "card 1: colour unknown (could be R or Y), rank 1 (deduced from hints)",
    ]
    assert text.endswith("final score 1.")


def test_completing_a_firework_regains_a_token() -> None:
    encode = MINI.grammar.encode
    state = _deal(MINI, ["R1", "R2", "Y2", "Y1", "Y1", "R1"])
    state.apply_action(encode("play", 0))  # R1
    state.apply_action(_deal_id(MINI, "R1"))  # Player 0: R2 Y2 R1
    state.apply_action(encode("colour", 1))  # Player 1 hints yellow
    assert parse_observation(state.observation_string(0)).info == 2
    assert MINI.describe_move(state, 0, encode("play", 0), "play 0") == (
        "Player 0 plays card 0: it was R2, played successfully (the red firework is complete)"
    )
    state.apply_action(encode("play", 0))
    state.apply_action(_deal_id(MINI, "Y1"))
    obs = parse_observation(state.observation_string(0))
    assert (obs.score, obs.info, obs.deck) == (2, 3, 0)
    assert [card.card for card in parse_observation(state.observation_string(1)).hands[1]] == [
        "Y2",
        "R1",
        "Y1",
    ]


def test_losing_the_last_life_ends_with_score_zero() -> None:
    encode = MINI.grammar.encode
    state = _deal(MINI, ["Y2", "R2", "R1", "Y1", "Y1", "R1"])
    moves: list[tuple[int, str | None, str]] = [
        (
            encode("play", 0),
            "Y1",
            "it was Y2, it could not be played: a life token is lost (2 left)",
        ),
        (encode("rank", 1), None, "Player 1 hints Player 0: rank 1 (cards 1 and 2)"),
        (
            encode("play", 0),
            "R1",
            "it was R2, it could not be played: a life token is lost (1 left)",
        ),
        (encode("play", 0), None, "Player 1 plays card 0: it was Y1, played successfully"),
        (
            encode("play", 1),
            None,
            "Player 0 plays card 1: it was Y1, it could not be played: "
            "the last life token is lost and the game ends with score 0",
        ),
    ]
    for action, drawn, line in moves:
        player = state.current_player()
        described = MINI.describe_move(state, player, action, MINI.grammar.text(action))
        assert described is not None and described.endswith(line)
        score = parse_observation(state.observation_string(0)).score
        state.apply_action(action)
        if drawn is not None:
            state.apply_action(_deal_id(MINI, drawn))
    assert score == 1
    assert state.is_terminal()
    assert state.returns() == [0.0, 0.0]
    text = MINI.observation_text(state, 0)
    assert "Life tokens: 0 of 3" in text
    assert text.endswith("The game is over: all life tokens are lost, so the final score is 0.")


def test_losing_all_lives_scores_zero_in_random_games() -> None:
    rng = np.random.default_rng(4)
    seen = False
    for _ in range(200):
        state = MINI.game.new_initial_state()
        score_before_end = 0
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(_chance(state, rng))
                continue
            plays = [a for a in state.legal_actions() if MINI.grammar.decode(a)[0] == "play"]
            score_before_end = int(state.returns()[0])
            state.apply_action(int(rng.choice(plays)))
        obs = parse_observation(state.observation_string(0))
        if obs.lives == 0 and obs.score > 0:
            seen = True
            assert score_before_end > 0
            assert state.returns() == [0.0, 0.0]
            text = MINI.observation_text(state, 0)
            assert "all life tokens are lost, so the final score is 0" in text
    assert seen


def _first_deal_observation(spec: HanabiSpec, seat: int = 0) -> str:
    state = spec.game.new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    return str(state.observation_string(seat))


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.env_id)
def test_a_real_observation_has_no_problem(spec: HanabiSpec) -> None:
    assert spec.observation_problem(_first_deal_observation(spec)) is None
    assert spec.observation_problem(_first_deal_observation(spec, seat=1)) is None


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda text: "Life tokens: 3", "not a Hanabi observation"),
        (lambda text: text.replace("Life tokens: 3", "Life tokens: 4"), "life tokens must be"),
        (lambda text: text.replace("Info tokens: 8", "Info tokens: 9"), "information tokens"),
        (lambda text: text.replace("Deck size: 2", "Deck size: 13"), "the deck holds between"),
        (lambda text: text.replace("R0 Y0 G0", "R0 Y0 B1"), "a firework names"),
        # A fourth Y1 (the deck holds three), and a card of a rank the variant does not have.
        (
            lambda text: text.replace("Y2 || XX", "Y1 || XX").replace("G1 || XX", "Y1 || XX", 1),
            "cards the deck does not hold (Y1)",
        ),
        (lambda text: text.replace("Y2 || XX", "Y3 || XX"), "cards the deck does not hold (Y3)"),
        (lambda text: text.replace("-----\n", "-----\nY1 || XX|RYG12\n"), "more than the variant"),
    ],
)
def test_an_impossible_observation_is_named(edit, problem: str) -> None:
    """What a served Hanabi seat may not claim (strategic_arena.seat_checks asks the spec)."""
    text = edit(_first_deal_observation(SIMPLE))
    assert problem in (SIMPLE.observation_problem(text) or "")


def test_a_game_without_limits_finds_no_problem() -> None:
    from strategic_arena.games import get_spec

    assert get_spec("kuhn_poker-v0").observation_problem("anything at all") is None
