"""The env's fast paths give exactly what the general path gives, on random playouts.

``TextGameEnv`` takes shortcuts on its hot path: memoized observations (tic-tac-toe), the
legality check against the legal actions of the observation just made, a turn-taking seat
lookup with one call, OpenSpiel's observer called without its wrapper, no chance resolution in
deterministic games, PettingZoo's dead step in fewer calls. Each playout here is checked step
by step against OpenSpiel read directly (a clone of the state taken before each observation)
and against the same env with the memo switched off and PettingZoo's own dead step.
"""

from __future__ import annotations

from types import MethodType

import numpy as np
import pytest
from pettingzoo import AECEnv

import strategic_arena as sa
from strategic_arena.env import IllegalActionError, TextGameEnv

GAMES = ["tic_tac_toe-v0", "connect_four-v0", "kuhn_poker-v0", "leduc_holdem-v0"]


def expected_observation(env: TextGameEnv, player: int) -> tuple[str, list[float], list[int]]:
    """Text, tensor and legal moves of ``player``, read from a clone of OpenSpiel's state."""
    state = env.spiel_state.clone()
    legal = state.legal_actions(player) if state.current_player() == player else []
    return env.spec.observation_text(state, player), state.observation_tensor(player), legal


def play(env: TextGameEnv, seed: int, rng: np.random.Generator) -> list[tuple[object, ...]]:
    """One random playout through the AEC loop, every step checked against OpenSpiel."""
    env.reset(seed=seed)
    seen: list[tuple[object, ...]] = []
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        player = env.agent_name_mapping[agent]
        text, tensor, legal = expected_observation(env, player)
        # The other seat first: its observation must not stand in for the mover's at step.
        other = env.possible_agents[1 - player]
        other_obs = env.observe(other)
        assert other_obs["text"] == expected_observation(env, 1 - player)[0]
        assert not other_obs["action_mask"].any()
        obs, reward, termination, truncation, _ = env.last()
        totals[agent] += reward
        assert obs["text"] == text
        np.testing.assert_array_equal(obs["observation"], np.asarray(tensor, np.float32))
        assert obs["observation"].dtype == np.float32
        assert obs["action_mask"].tolist() == [
            int(a in legal) for a in range(len(obs["action_mask"]))
        ]
        # Callers own their arrays: scribbling on them changes no later observation.
        obs["observation"][:] = 7
        obs["action_mask"][:] = 1
        again = env.observe(agent)
        np.testing.assert_array_equal(again["observation"], np.asarray(tensor, np.float32))
        assert again["action_mask"].tolist() == [
            int(a in legal) for a in range(len(obs["action_mask"]))
        ]
        assert termination == env.spiel_state.is_terminal() and not truncation
        if termination:
            seen.append((agent, text, reward, termination))
            env.step(None)
            continue
        illegal = next((a for a in range(env.action_space(agent).n) if a not in legal), None)
        if illegal is not None:
            before = env.spiel_state.history()
            with pytest.raises(IllegalActionError):
                env.step(illegal)
            assert env.spiel_state.history() == before
        returns_before = env.spiel_state.returns()
        action = int(rng.choice(legal))
        env.step(action)
        paid = [b - a for a, b in zip(returns_before, env.spiel_state.returns(), strict=True)]
        assert [env.rewards[name] for name in env.possible_agents] == paid
        seen.append((agent, text, reward, termination, action))
    returns = env.spiel_state.returns()
    assert [totals[name] for name in env.possible_agents] == pytest.approx(returns)
    return seen


@pytest.mark.parametrize("env_id", GAMES)
def test_playouts_match_openspiel_and_the_unmemoized_env(env_id: str) -> None:
    fast = sa.make(env_id)
    general = sa.make(env_id)
    general._memo = None  # the general path: every observation built from the state
    general._was_dead_step = MethodType(AECEnv._was_dead_step, general)  # PettingZoo's own
    for seed in range(40):
        moves = play(fast, seed, np.random.default_rng(seed))
        assert play(general, seed, np.random.default_rng(seed)) == moves


def test_a_step_after_the_state_changed_elsewhere_asks_openspiel() -> None:
    """The legality shortcut never answers for a state other than the one observed."""
    env = sa.make("tic_tac_toe-v0")
    env.reset(seed=0)
    env.last()  # player_0 observes the empty board: every cell legal
    env.step(4)
    # player_1 has not observed since; the centre is taken, so it is refused.
    with pytest.raises(IllegalActionError):
        env.step(4)
    env.reset(seed=0)
    env.last()
    env.reset(seed=0)  # a new state object: the old observation does not answer for it
    env.step(0)
    assert env.spiel_state.history() == [0]
