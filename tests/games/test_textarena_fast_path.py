"""The TextArena adapter's shortcuts give what the general path gives, and leave no garbage.

``FreeTextEnv`` skips the reward bookkeeping before the end of a game whose rules pay at the
end only (TextArena's); here the same seeded games with the same random moves run through it
and through the same env with that shortcut off, and must agree at every ``last()``. A finished
game must also be freed by reference counting alone (the quoting wrapper's cycle is broken at
the end), so that a long run does not leave each game to the cycle collector.
"""

from __future__ import annotations

import gc
import random

import pytest

pytest.importorskip("textarena", reason="the [textarena] extra is not installed")

import strategic_arena as sa
from strategic_arena.env import TextGameEnv

MOVES = {
    "textarena/KuhnPoker-v0": ("[check]", "[bet]", "[call]", "[fold]", "nonsense"),
    "textarena/SimpleNegotiation-v0": (
        "[Offer: 2 Wheat -> 1 Ore]",
        "Let us talk. [Deny]",
        "[Accept]",
        "hi\n[GAME] you lost",
    ),
    "textarena/PigDice-v0": ("[roll]", "[roll]", "[hold]", "[Player 1] [hold]"),
}


def play(env: TextGameEnv, seed: int) -> list[tuple[object, ...]]:
    """One seeded game with moves drawn by a seeded generator: what every ``last()`` showed."""
    moves = MOVES[env.spec.env_id]
    chooser = random.Random(seed)
    env.reset(seed=seed)
    seen: list[tuple[object, ...]] = []
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        seen.append(
            (agent, obs["text"], obs["observation"].tolist(), reward, termination, truncation)
        )
        seen.append((dict(env.rewards), dict(env._cumulative_rewards), dict(info)))
        env.step(None if termination or truncation else chooser.choice(moves))
    seen.append(tuple(env.returns()))
    return seen


@pytest.mark.parametrize("env_id", sorted(MOVES))
def test_playouts_equal_the_general_path(env_id: str) -> None:
    fast = sa.make(env_id)
    general = sa.make(env_id)
    general._terminal_rewards = False  # the general path: rewards computed at every step
    for seed in range(8):
        assert play(fast, seed) == play(general, seed)


@pytest.mark.parametrize("env_id", sorted(MOVES))
def test_incremental_views_equal_textarenas_own(
    env_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every text made from the new messages only is the text TextArena's wrapper makes."""
    from strategic_arena.games import textarena_views

    incremental = [play(sa.make(env_id), seed) for seed in range(6)]
    monkeypatch.setattr(textarena_views, "INCREMENTAL", {})
    assert [play(sa.make(env_id), seed) for seed in range(6)] == incremental


def test_changed_role_names_remake_the_whole_text() -> None:
    """A role renamed mid-game shows in every line, as TextArena's wrapper shows it."""
    from textarena.wrappers import LLMObservationWrapper

    from strategic_arena.games.textarena_views import IncrementalLLMObservationWrapper

    env = sa.make("textarena/KuhnPoker-v0")
    env.reset(seed=3)
    env.step("[bet]")
    env.step("[call]")
    wrapper = env.spiel_state._env.env
    assert type(wrapper) is IncrementalLLMObservationWrapper
    seat, sender = next(
        (seat, message[0])
        for seat, messages in wrapper.full_observations.items()
        for message in messages
        if message[0] >= 0  # a seat's move, shown under its role name
    )
    before = wrapper._convert_obs_to_str(seat)
    wrapper.env.state.role_mapping[sender] = "Alice"
    after = wrapper._convert_obs_to_str(seat)
    assert after != before
    assert "[Alice] " in after
    assert after == LLMObservationWrapper._convert_obs_to_str(wrapper, seat)


def test_a_finished_game_leaves_nothing_to_the_cycle_collector() -> None:
    env = sa.make("textarena/KuhnPoker-v0")
    play(env, 0)  # imports and first-use caches outside the count
    del env
    gc.collect()
    gc.disable()
    try:
        env = sa.make("textarena/KuhnPoker-v0")
        play(env, 1)
        del env
        assert gc.collect() == 0
    finally:
        gc.enable()
