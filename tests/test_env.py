"""TextGameEnv: PettingZoo conformance, agreement with pyspiel, seeding, AEC details."""

from __future__ import annotations

import warnings

import numpy as np
import pyspiel
import pytest
from cases import CURATED, GENERIC
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test

import strategic_arena as sa
from strategic_arena.env import TextGameEnv

ALL_CASES = [(env_id, {}) for env_id in CURATED] + GENERIC
CASE_IDS = [env_id for env_id, _ in ALL_CASES]


def _make(env_id: str, params: dict[str, int]) -> TextGameEnv:
    return sa.make(env_id, **params)


@pytest.mark.parametrize(("env_id", "params"), ALL_CASES, ids=CASE_IDS)
def test_pettingzoo_api_test(env_id: str, params: dict[str, int]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's style advice about Dict spaces
        api_test(_make(env_id, params), num_cycles=300)


@pytest.mark.parametrize(("env_id", "params"), ALL_CASES, ids=CASE_IDS)
def test_pettingzoo_seed_test(env_id: str, params: dict[str, int]) -> None:
    seed_test(lambda: _make(env_id, params), num_cycles=300)


#: The parallel API's cases: every case above, and two-player Goofspiel as OpenSpiel defines it.
PARALLEL_CASES = [*ALL_CASES, ("openspiel/goofspiel", {})]
PARALLEL_IDS = [env_id for env_id, _ in PARALLEL_CASES]


@pytest.mark.parametrize(("env_id", "params"), PARALLEL_CASES, ids=PARALLEL_IDS)
def test_pettingzoo_parallel_api_test(env_id: str, params: dict[str, int]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the parallel env answers every live agent: no warning
        parallel_api_test(sa.parallel_env(env_id, **params), num_cycles=300)


#: PettingZoo's parallel seed test samples every agent's action without its mask, which the
#: env refuses unless legal (as the AEC env does): run it where every first move is legal.
PARALLEL_SEED_CASES = [
    ("openspiel/blotto", {}),
    ("openspiel/goofspiel", {}),
    ("openspiel/goofspiel", {"num_cards": 4, "players": 3}),
    ("tic_tac_toe-v0", {}),
    ("connect_four-v0", {}),
    ("kuhn_poker-v0", {}),
]


@pytest.mark.parametrize(
    ("env_id", "params"), PARALLEL_SEED_CASES, ids=[env_id for env_id, _ in PARALLEL_SEED_CASES]
)
def test_pettingzoo_parallel_seed_test(env_id: str, params: dict[str, int]) -> None:
    parallel_seed_test(lambda: sa.parallel_env(env_id, **params), num_cycles=300)


def _random_game_in_lockstep(env: TextGameEnv, rng: np.random.Generator, seed: int) -> int:
    """Play one random game through ``env`` and a raw pyspiel state side by side.

    The raw state receives the chance outcomes the env drew (read from its history) and the
    same player actions; at every step the legal actions, the terminal test and the rewards
    must agree. Returns the number of player steps.
    """
    game = env.spec.game
    raw = game.new_initial_state()
    env.reset(seed=seed)
    paid = np.zeros(game.num_players())
    steps = 0

    def sync_chance() -> None:
        history = env.spiel_state.history()
        while len(raw.history()) < len(history):
            outcome = history[len(raw.history())]
            assert raw.is_chance_node()
            assert outcome in dict(raw.chance_outcomes())
            raw.apply_action(outcome)

    sync_chance()
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        seat = env.agent_name_mapping[agent]
        paid[seat] += reward
        assert not truncated
        assert terminated == raw.is_terminal()
        if terminated:
            env.step(None)
            continue
        assert raw.current_player() == seat
        legal = np.flatnonzero(observation["action_mask"]).tolist()
        assert legal == raw.legal_actions()
        np.testing.assert_allclose(observation["observation"], raw.observation_tensor(seat))
        assert isinstance(observation["text"], str) and observation["text"]
        action = int(rng.choice(legal))
        env.step(action)
        raw.apply_action(action)
        sync_chance()
        steps += 1
    assert raw.is_terminal()
    np.testing.assert_allclose(paid, raw.returns())
    return steps


@pytest.mark.parametrize("env_id", CURATED)
def test_random_games_agree_with_pyspiel(env_id: str) -> None:
    env = sa.make(env_id)
    rng = np.random.default_rng(12345)
    # Full Hanabi with 3-5 players: longer games with more seats, so fewer of them.
    games = 2000 if env.spec.num_players == 2 else 60
    total_steps = sum(_random_game_in_lockstep(env, rng, seed) for seed in range(games))
    assert total_steps >= games  # every game had moves


@pytest.mark.parametrize("env_id", CURATED)
def test_same_seed_and_actions_replay_the_same_game(env_id: str) -> None:
    def play(seed: int) -> tuple[list[int], list[str], list[float]]:
        env = sa.make(env_id)
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        texts = []
        for _agent in env.agent_iter():
            observation, _, terminated, _, _ = env.last()
            texts.append(observation["text"])
            if terminated:
                env.step(None)
            else:
                env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
        return list(env.spiel_state.history()), texts, env.returns()

    assert play(7) == play(7)
    if env_id not in ("tic_tac_toe-v0", "connect_four-v0"):  # chance games deal differently
        assert any(play(7)[0] != play(seed)[0] for seed in range(8, 14))


def test_reset_without_seed_continues_the_generator() -> None:
    first, second = sa.make("kuhn_poker-v0"), sa.make("kuhn_poker-v0")
    deals = []
    for env in (first, second):
        env.reset(seed=3)
        env.reset()
        deals.append(env.spiel_state.history())
    assert deals[0] == deals[1]


def test_illegal_action_id_raises_and_changes_nothing() -> None:
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    env.step(4)
    before = env.spiel_state.history()
    with pytest.raises(sa.IllegalActionError):
        env.step(4)
    with pytest.raises(ValueError, match="only valid on a dead step"):
        env.step(None)
    assert env.spiel_state.history() == before
    assert env.agent_selection == "player_1"


def test_dead_steps_and_cumulative_rewards() -> None:
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    for action in (0, 3, 1, 4, 2):  # X wins on the top row
        env.step(action)
    assert all(env.terminations.values())
    assert env.returns() == [1.0, -1.0]
    seen = {}
    for agent in env.agent_iter():
        observation, reward, terminated, _, _ = env.last()
        assert terminated and not observation["action_mask"].any()
        seen[agent] = reward
        with pytest.raises(ValueError):
            env.step(0)
        env.step(None)
    assert seen == {"player_0": 1.0, "player_1": -1.0}
    assert env.agents == []


def test_forfeit_pays_the_forfeit_returns() -> None:
    env = sa.make("connect_four-v0")
    env.reset(seed=0)
    env.step(3)
    env.forfeit("player_1")
    assert env.returns() == [1.0, -1.0]
    assert env.forfeited_by == "player_1"
    assert all(env.terminations.values())
    hanabi = sa.make("mini_hanabi-v0")
    hanabi.reset(seed=0)
    hanabi.forfeit(hanabi.agent_selection)
    assert hanabi.returns() == [0.0, 0.0]


def test_unknown_ids_and_bad_parameters_give_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown env id"):
        sa.make("chess-v9")
    with pytest.raises(ValueError, match="OpenSpiel has no game"):
        sa.make("openspiel/not_a_game")
    with pytest.raises(ValueError, match="takes no game parameters"):
        sa.make("tic_tac_toe-v0", rows=4)
    with pytest.raises(ValueError, match="neither a turn-taking nor a simultaneous"):
        sa.make("openspiel/mfg_crowd_modelling")
    with pytest.raises(ValueError, match="names its parameters already"):
        sa.make("openspiel/hanabi(players=3)", players=4)
    with pytest.raises(ValueError, match="cannot read the game string"):
        sa.make("openspiel/hanabi(players=3")
    with pytest.raises(ValueError, match="render_mode"):
        sa.make("tic_tac_toe-v0", render_mode="rgb_array")


def test_generic_adapter_uses_openspiel_text() -> None:
    env = sa.make("openspiel/breakthrough", rows=5, columns=5)
    env.reset(seed=0)
    menu = env.legal_action_texts("player_0")
    state = env.spiel_state
    assert set(menu) == set(state.legal_actions())
    assert all(text.startswith(state.action_to_string(a)) for a, text in menu.items())
    assert env.observe("player_0")["text"] == state.observation_string(0)
    assert env.spec.game.get_parameters()["rows"] == 5


def test_render_ansi_shows_the_full_state() -> None:
    env = sa.make("kuhn_poker-v0", render_mode="ansi")
    env.reset(seed=1)
    assert env.render() == str(env.spiel_state)


@pytest.mark.parametrize("env_id", ["kuhn_poker-v0", "leduc_holdem-v0"])
def test_poker_text_never_shows_the_opponent_card(env_id: str) -> None:
    """The text of one seat is identical across deals that differ only in the other's card."""
    env = sa.make(env_id)
    game = env.spec.game
    for seed in range(200):
        env.reset(seed=seed)
        state = env.spiel_state
        # Rebuild the same deal with the opponent's card swapped for every other possibility.
        history = state.history()
        own, other = history[0], history[1]
        for replacement in range(game.max_chance_outcomes()):
            if replacement in (own, other):
                continue
            alt = game.new_initial_state()
            alt.apply_action(own)
            if replacement not in dict(alt.chance_outcomes()):
                continue
            alt.apply_action(replacement)
            assert env.spec.observation_text(alt, 0) == env.spec.observation_text(state, 0)


def test_hanabi_text_never_shows_own_cards() -> None:
    """Seat 0's text is unchanged when its own hand is redealt (the partner's kept)."""
    env = sa.make("mini_hanabi-v0")
    spec = env.spec
    game = spec.game
    checked = 0
    for seed in range(100):
        env.reset(seed=seed)
        hand_size = 3
        deal = env.spiel_state.history()[: 2 * hand_size]
        # OpenSpiel deals player 0's cards first, then player 1's.
        alt = game.new_initial_state()
        for i, card in enumerate(deal):
            outcomes = [o for o, _ in alt.chance_outcomes()]
            if i < hand_size:
                card = next((o for o in outcomes if o != card), outcomes[0])
            elif card not in outcomes:  # the redeal used up a card player 1 was dealt
                break
            alt.apply_action(card)
        if alt.is_chance_node():
            continue
        if alt.observation_string(0) != env.spiel_state.observation_string(0):
            continue  # the redeal changed what seat 0 may see (e.g. card counts): skip
        checked += 1
        assert spec.observation_text(alt, 0) == spec.observation_text(env.spiel_state, 0)
        assert spec.observation_text(alt, 1) != spec.observation_text(env.spiel_state, 1)
    assert checked > 20


def test_spaces_contain_every_observation() -> None:
    for env_id in CURATED:
        env = sa.make(env_id)
        env.reset(seed=0)
        rng = np.random.default_rng(0)
        for agent in env.agent_iter():
            observation, _, terminated, _, _ = env.last()
            assert env.observation_space(agent).contains(observation), env_id
            if terminated:
                env.step(None)
            else:
                env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))


def test_pyspiel_game_is_the_one_named_in_reference() -> None:
    expected = {
        "tic_tac_toe-v0": ("tic_tac_toe", {}),
        "connect_four-v0": ("connect_four", {}),
        "kuhn_poker-v0": ("kuhn_poker", {}),
        "leduc_holdem-v0": ("leduc_poker", {}),
        "mini_hanabi-v0": (
            "hanabi",
            dict(colors=2, ranks=2, hand_size=3, max_information_tokens=3, max_life_tokens=3),
        ),
        "simple_hanabi-v0": (
            "hanabi",
            dict(colors=3, ranks=2, hand_size=5, max_information_tokens=8, max_life_tokens=3),
        ),
    }
    for env_id, (name, params) in expected.items():
        game: pyspiel.Game = sa.get_spec(env_id).game
        assert game.get_type().short_name == name
        assert game.num_players() == 2
        actual = game.get_parameters()
        for key, value in params.items():
            assert actual[key] == value, (env_id, key)


def test_after_a_forfeit_every_view_says_the_game_is_over() -> None:
    for env_id in ("tic_tac_toe-v0", "kuhn_poker-v0"):
        env = sa.make(env_id)
        env.reset(seed=0)
        env.step(env.spiel_state.legal_actions()[0])
        env.forfeit(env.agent_selection)
        for agent in env.possible_agents:
            observation = env.observe(agent)
            assert not observation["action_mask"].any()
            assert "forfeited" in observation["text"]
            assert env.legal_action_texts(agent) == {}
            view = env.seat_view(agent)
            assert view.terminal and view.legal_actions == {}


def test_state_is_pettingzoos_global_view() -> None:
    # ``env.state`` used to be the pyspiel state and shadowed AECEnv.state(); it is
    # ``spiel_state`` now, and state() is every seat's observation tensor in seat order.
    env = sa.make("kuhn_poker-v0")
    env.reset(seed=4)
    assert isinstance(env.spiel_state, pyspiel.State)
    state = env.state()
    assert state.shape == env.state_space.shape and state in env.state_space
    both = np.concatenate([env.observe(agent)["observation"] for agent in env.possible_agents])
    assert np.array_equal(state, both)  # both private cards: the global view
