"""sa.parallel_env: known answers, agreement with the AEC env, checked actions, conversions.

PettingZoo's own ``parallel_api_test`` and ``parallel_seed_test`` run in tests/test_env.py,
beside the AEC env's ``api_test`` and ``seed_test``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test
from pettingzoo.utils.conversions import aec_to_parallel

import strategic_arena as sa
from strategic_arena.env import IllegalActionError
from strategic_arena.parallel import TextParallelEnv

BLOTTO = "openspiel/blotto"
GOOFSPIEL_3 = "openspiel/goofspiel(num_cards=3,points_order=descending)"


def _id_of(info: dict[str, Any], text: str) -> int:
    """The action id whose canonical text is ``text`` in an agent's legal moves."""
    ids = [action for action, shown in info["legal_moves"].items() if shown == text]
    assert len(ids) == 1, (text, info["legal_moves"])
    return ids[0]


def test_a_blotto_allocation_pair_pays_its_known_payoff() -> None:
    env = sa.parallel_env(BLOTTO)
    _, infos = env.reset(seed=0)
    assert env.acting_agents() == ["player_0", "player_1"]
    # Three fields, ten coins: [3,3,4] wins the second and third fields against [10,0,0].
    actions = {
        "player_0": _id_of(infos["player_0"], "[10,0,0]"),
        "player_1": _id_of(infos["player_1"], "[3,3,4]"),
    }
    _, rewards, terminations, truncations, infos = env.step(actions)
    assert rewards == {"player_0": -1.0, "player_1": 1.0}
    assert terminations == {"player_0": True, "player_1": True}
    assert truncations == {"player_0": False, "player_1": False}
    assert infos == {agent: {"to_move": False, "legal_moves": {}} for agent in env.possible_agents}
    assert env.agents == [] and env.acting_agents() == []
    with pytest.raises(RuntimeError, match=r"the game is over; call reset\(\)"):
        env.step(actions)


def test_goofspiel_turns_are_played_whole_and_pay_the_known_result() -> None:
    # Point cards 3, 2, 1 in that order. player_0 bids 3 then 2, player_1 bids 1 then 2, and
    # OpenSpiel plays the last cards itself (1 against 3): the first point card (3 points) goes
    # to player_0, the second is tied (discarded), the third (1 point) goes to player_1.
    env = sa.parallel_env(GOOFSPIEL_3)
    _, infos = env.reset(seed=0)
    paid = {agent: 0.0 for agent in env.possible_agents}
    for bid_0, bid_1 in ((3, 1), (2, 2)):
        assert [agent for agent, info in infos.items() if info["to_move"]] == env.possible_agents
        actions = {
            "player_0": _id_of(infos["player_0"], f"[P0]Bid: {bid_0}"),
            "player_1": _id_of(infos["player_1"], f"[P1]Bid: {bid_1}"),
        }
        _, rewards, terminations, _, infos = env.step(actions)
        for agent, reward in rewards.items():
            paid[agent] += reward
    assert all(terminations.values()) and env.agents == []
    assert paid == {"player_0": 1.0, "player_1": -1.0}
    assert env.aec_env.spiel_state.returns() == [1.0, -1.0]
    assert env.aec_env.spiel_state.history() == [2, 0, 1, 1]  # bids 3:1 and 2:2 (ids: bid - 1)


# X takes the top row while O answers in the middle row: the game ends on X's third move, in
# the middle of a two-seat cycle (which PettingZoo's aec_to_parallel could not play).
TIC_TAC_TOE_LINE = (0, 3, 1, 4, 2)


def test_a_tic_tac_toe_line_played_in_parallel_steps_gives_the_aec_returns() -> None:
    aec = sa.make("tic_tac_toe-v0")
    aec.reset(seed=0)
    for action in TIC_TAC_TOE_LINE:
        aec.step(action)
    assert aec.returns() == [1.0, -1.0]

    env = sa.parallel_env("tic_tac_toe-v0")
    _, infos = env.reset(seed=0)
    paid = {agent: 0.0 for agent in env.possible_agents}
    for move, action in enumerate(TIC_TAC_TOE_LINE):
        mover = env.possible_agents[move % 2]
        assert env.acting_agents() == [mover]
        assert {agent for agent, info in infos.items() if info["to_move"]} == {mover}
        # Every live agent may send an action; the one not to move is ignored.
        observations, rewards, terminations, _, infos = env.step(
            {agent: action if agent == mover else 8 for agent in env.agents}
        )
        for agent, reward in rewards.items():
            paid[agent] += reward
    assert paid == {"player_0": 1.0, "player_1": -1.0}
    assert all(terminations.values()) and env.agents == []
    assert env.aec_env.spiel_state.history() == aec.spiel_state.history()
    for agent in env.possible_agents:
        assert observations[agent]["text"] == aec.observe(agent)["text"]


@pytest.mark.parametrize(
    "env_id", ["tic_tac_toe-v0", "kuhn_poker-v0", "hanabi_3p-v0", BLOTTO, GOOFSPIEL_3]
)
def test_random_games_agree_with_the_aec_env_step_by_step(env_id: str) -> None:
    """The same seed and moves through both APIs: the same observations and returns."""
    for seed in range(5):
        rng = np.random.default_rng(seed)
        aec, env = sa.make(env_id), sa.parallel_env(env_id)
        aec.reset(seed=seed)
        observations, infos = env.reset(seed=seed)
        paid = dict.fromkeys(env.possible_agents, 0.0)
        while env.agents:
            for agent in env.agents:
                expected = aec.observe(agent)
                assert observations[agent]["text"] == expected["text"]
                np.testing.assert_array_equal(
                    observations[agent]["action_mask"], expected["action_mask"]
                )
                legal = np.flatnonzero(expected["action_mask"]).tolist()
                assert sorted(infos[agent]["legal_moves"]) == legal
                assert infos[agent]["to_move"] == bool(legal)
            actions = {
                agent: int(rng.choice(np.flatnonzero(observations[agent]["action_mask"])))
                for agent in env.acting_agents()
            }
            for agent in env.acting_agents():  # the AEC env: the same moves, in seat order
                assert aec.agent_selection == agent
                aec.step(actions[agent])
            observations, rewards, _, _, infos = env.step(actions)
            for agent, reward in rewards.items():
                paid[agent] += reward
        assert aec.spiel_state.is_terminal()
        assert list(paid.values()) == pytest.approx(aec.returns())


def test_reset_with_a_seed_replays_the_same_deals() -> None:
    def deals(seed: int) -> list[str]:
        env = sa.parallel_env("kuhn_poker-v0")
        texts = []
        for _ in range(3):  # the first game from the seed, then the generator goes on
            observations, _ = env.reset(seed=seed) if not texts else env.reset()
            texts += [observations[agent]["text"] for agent in env.possible_agents]
        return texts

    assert deals(7) == deals(7)
    assert any(deals(7) != deals(seed) for seed in range(8, 14))


def test_a_bad_action_is_refused_before_any_move_is_played() -> None:
    env = sa.parallel_env(GOOFSPIEL_3)
    _, infos = env.reset(seed=0)
    first = {agent: _id_of(infos[agent], f"[P{i}]Bid: 3") for i, agent in enumerate(env.agents)}
    *_, infos = env.step(first)
    history = env.aec_env.spiel_state.history()
    legal_0 = _id_of(infos["player_0"], "[P0]Bid: 1")
    legal_1 = _id_of(infos["player_1"], "[P1]Bid: 1")
    with pytest.raises(IllegalActionError, match=r"action 2 is not legal for player_1; legal: "):
        env.step({"player_0": legal_0, "player_1": first["player_1"]})  # bid 3 is spent
    with pytest.raises(ValueError, match=r"no action for \['player_1'\]: "):
        env.step({"player_0": legal_0})
    with pytest.raises(ValueError, match=r"actions for unknown agents \['player_7'\]"):
        env.step({"player_0": legal_0, "player_1": legal_1, "player_7": 0})
    with pytest.raises(IllegalActionError, match=r"action 'bid 1' is not legal for player_0"):
        env.step({"player_0": "bid 1", "player_1": legal_1})
    # Nothing was played: not even player_0's legal move of the refused steps.
    assert env.aec_env.spiel_state.history() == history
    assert env.aec_env.agent_selection == "player_0"
    env.step({"player_0": legal_0, "player_1": legal_1})
    assert len(env.aec_env.spiel_state.history()) == len(history) + 2


def test_a_free_text_game_takes_move_texts() -> None:
    env = sa.parallel_env("debate-v0(agents=2,turns=2)")
    _, infos = env.reset(seed=0)
    assert env.acting_agents() == ["player_0", "player_1"]
    assert infos["player_0"] == {"to_move": True, "legal_moves": {}}  # no menu: a text
    with pytest.raises(IllegalActionError, match=r"takes a move text, not int 3"):
        env.step({"player_0": "The answer is 4.", "player_1": 3})
    for _ in range(2):
        _, rewards, terminations, _, _ = env.step(
            {agent: "The answer is \\boxed{4}." for agent in env.agents}
        )
    assert all(terminations.values()) and env.agents == []
    assert set(rewards) == set(env.possible_agents)


def test_only_simultaneous_games_declare_the_cycle_pettingzoo_converts() -> None:
    for env_id in (BLOTTO, GOOFSPIEL_3):
        assert sa.make(env_id).metadata["is_parallelizable"] is True
    for env_id in ("tic_tac_toe-v0", "kuhn_poker-v0", "hanabi_3p-v0"):
        env = sa.make(env_id)
        assert env.metadata["is_parallelizable"] is False
        with pytest.raises(AssertionError, match="is_parallelizable"):
            aec_to_parallel(env)


def test_pettingzoo_own_conversion_of_blotto_pays_as_parallel_env() -> None:
    converted, ours = aec_to_parallel(sa.make(BLOTTO)), sa.parallel_env(BLOTTO)
    converted.reset(seed=3)
    ours.reset(seed=3)
    actions = {"player_0": 65, "player_1": 33}
    _, their_rewards, their_terminations, _, _ = converted.step(actions)
    _, rewards, terminations, _, _ = ours.step(actions)
    assert dict(their_rewards) == rewards == {"player_0": -1.0, "player_1": 1.0}
    assert their_terminations == terminations
    assert converted.agents == ours.agents == []


def test_parallel_env_is_exported_and_passes_its_parameters() -> None:
    env = sa.parallel_env("openspiel/goofspiel", num_cards=3, points_order="descending")
    assert isinstance(env, sa.TextParallelEnv) and isinstance(env, TextParallelEnv)
    assert env.aec_env.spec.env_id == GOOFSPIEL_3
    assert env.metadata["name"] == GOOFSPIEL_3 and env.metadata["is_parallelizable"]
    with pytest.raises(ValueError, match="render_mode must be one of"):
        sa.parallel_env(BLOTTO, render_mode="rgb_array")


def test_a_textarena_game_passes_pettingzoo_parallel_api_test() -> None:
    pytest.importorskip("textarena", reason="the [textarena] extra is not installed")
    env = sa.parallel_env("spiral_tic_tac_toe-v0")
    parallel_api_test(env, num_cycles=100)  # random texts: TextArena's rules judge each one
    observations, infos = env.reset(seed=0)
    mover = env.acting_agents()[0]
    assert infos[mover] == {"to_move": True, "legal_moves": {}}
    assert observations[mover]["observation"].tolist() == [1.0]
