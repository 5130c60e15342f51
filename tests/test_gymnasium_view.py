"""The single-agent gymnasium view for RL libraries: ``text=False``, action masks, the ids
registered with ``gymnasium.make``, and a maintained RL library (sb3-contrib's MaskablePPO)
learning to beat a random player at Tic-Tac-Toe."""

from __future__ import annotations

import gc
import os
import warnings
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import strategic_arena as sa
from strategic_arena.games import CURATED


def test_every_curated_game_is_registered_with_gymnasium_make() -> None:
    ids = [f"strategic_arena/{env_id}" for env_id in CURATED]
    assert sa.register_envs() == ids
    assert all(gym_id in gymnasium.registry for gym_id in ids)
    env = gymnasium.make("strategic_arena/kuhn_poker-v0", opponent="nash", seat=1)
    inner = env.unwrapped
    assert isinstance(inner, sa.wrappers.SingleAgentEnv)
    assert (inner.env_id, inner.seat, inner.text) == ("kuhn_poker-v0", 1, True)
    observation, _ = env.reset(seed=4)
    assert set(observation) == {"observation", "action_mask", "text"}  # the default keeps it
    env.close()


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_views_dropped_without_close_release_their_event_loops_silently() -> None:
    gc.collect()
    start = _open_descriptors()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Seat 1: the opponent moves first, so every view runs its private event loop.
        views = [sa.single_agent("tic_tac_toe-v0", seat=1) for _ in range(300)]
        for seed, view in enumerate(views):
            view.reset(seed=seed)
        assert _open_descriptors() >= start + 300  # the loops are open while the views are
        del views, view
        gc.collect()
    assert _open_descriptors() <= start + 3
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_close_releases_the_event_loop_and_a_closed_view_plays_on() -> None:
    view = sa.single_agent("tic_tac_toe-v0", seat=1)
    before = _open_descriptors()
    observation, _ = view.reset(seed=0)
    assert _open_descriptors() > before
    view.close()
    view.close()  # twice is fine
    assert _open_descriptors() <= before  # at once, not at collection
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a closed loop used again would raise
        observation, _ = view.reset(seed=0)
        action = int(np.flatnonzero(observation["action_mask"])[0])
        view.step(action)  # the opponent answers on a new loop
    assert _open_descriptors() > before
    view.close()
    assert _open_descriptors() <= before


def test_text_false_drops_the_text_and_keeps_the_arrays() -> None:
    """Without the option every observation held a 16,384-character Text space."""
    with_text = sa.single_agent("tic_tac_toe-v0")
    arrays = sa.single_agent("tic_tac_toe-v0", text=False)
    assert isinstance(with_text.observation_space["text"], gymnasium.spaces.Text)
    assert set(arrays.observation_space.spaces) == {"observation", "action_mask"}
    first, _ = with_text.reset(seed=7)
    second, _ = arrays.reset(seed=7)
    for action in (4, 0, 8):  # the same game in both views (same seed: same random replies)
        assert set(second) == {"observation", "action_mask"}
        assert arrays.observation_space.contains(second)
        np.testing.assert_array_equal(first["observation"], second["observation"])
        np.testing.assert_array_equal(first["action_mask"], second["action_mask"])
        np.testing.assert_array_equal(arrays.action_masks(), second["action_mask"] == 1)
        legal = np.flatnonzero(arrays.action_masks())
        move = action if action in legal else int(legal[0])
        first, *_ = with_text.step(move)
        second, *_ = arrays.step(move)
    assert arrays.action_masks().dtype == np.bool_
    check_env(sa.single_agent("kuhn_poker-v0", text=False), skip_render_check=True)


def test_stable_baselines3_refuses_the_text_but_takes_the_arrays() -> None:
    """The TypeError a user met, and the option that avoids it."""
    pytest.importorskip("stable_baselines3", reason="stable-baselines3 is not installed (.[rl])")
    from stable_baselines3 import PPO

    with pytest.raises(TypeError):
        PPO("MultiInputPolicy", sa.single_agent("kuhn_poker-v0"), device="cpu")
    PPO("MultiInputPolicy", sa.single_agent("kuhn_poker-v0", text=False), device="cpu")


def _wins(model: Any, games: int = 200) -> float:
    """Share of ``games`` won against the random player, greedy actions, seeds 10000+."""
    env = gymnasium.make("strategic_arena/tic_tac_toe-v0", text=False)
    wins = 0
    for game in range(games):
        observation, _ = env.reset(seed=10_000 + game)
        done, total = False, 0.0
        while not done:
            masks = env.unwrapped.action_masks()
            action, _ = model.predict(observation, deterministic=True, action_masks=masks)
            observation, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        wins += total > 0
    env.close()
    return wins / games


@pytest.mark.slow
def test_maskable_ppo_learns_to_beat_random_at_tic_tac_toe() -> None:
    """4,096 steps of sb3-contrib's MaskablePPO (about 20 s on one core) lift the win rate
    against a random player from 49.5% (the untrained policy) to 85.5%; seeded, so exact."""
    pytest.importorskip("sb3_contrib", reason="sb3-contrib is not installed (.[rl])")
    import torch
    from sb3_contrib import MaskablePPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same floating-point sums on every machine
    try:
        env = gymnasium.make("strategic_arena/tic_tac_toe-v0", text=False)
        model = MaskablePPO(
            "MultiInputPolicy", env, seed=0, n_steps=512, batch_size=64, device="cpu"
        )
        untrained = _wins(model)
        model.learn(4096)
        trained = _wins(model)
    finally:
        torch.set_num_threads(threads)
    assert untrained < 0.6
    assert trained > untrained + 0.2, (untrained, trained)
