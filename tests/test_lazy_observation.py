"""Hanabi's text is built when read: the same observation, whenever and however it is read."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import numpy as np
import pytest

import strategic_arena as sa
from strategic_arena.env import MAX_UNREAD
from strategic_arena.lazy_observation import LazyObservation


def playout(env_id: str, seed: int) -> list[tuple[dict[str, Any], str, str]]:
    """One random game: each observation, unread, beside its text rendered eagerly then."""
    env = sa.make(env_id)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    seen = []
    for agent in env.agent_iter():
        obs, _reward, termination, truncation, _info = env.last()
        player = env.agent_name_mapping[agent]
        seen.append((obs, agent, env.spec.observation_text(env.spiel_state, player)))
        if termination or truncation:
            env.step(None)
        else:
            env.step(int(rng.choice(obs["action_mask"].nonzero()[0])))
    return seen


@pytest.mark.parametrize("env_id", ["hanabi_3p-v0", "mini_hanabi-v0", "hanabi_5p-v0"])
def test_a_text_read_after_the_game_is_the_text_of_its_moment(env_id: str) -> None:
    seen = playout(env_id, seed=3)
    assert len(seen) >= 5
    for obs, _agent, eager in seen:
        assert isinstance(obs, LazyObservation)
        assert obs["text"] == eager


def test_every_way_of_reading_gives_the_eager_values() -> None:
    env = sa.make("hanabi_3p-v0")
    env.reset(seed=0)
    ways = {
        "item": lambda o: o["text"],
        "get": lambda o: o.get("text"),
        "items": lambda o: dict(o.items())["text"],
        "values": lambda o: list(o.values())[2],
        "dict": lambda o: dict(o)["text"],
        "unpack": lambda o: {**o}["text"],
        "copy": lambda o: o.copy()["text"],
        "deepcopy": lambda o: copy.deepcopy(o)["text"],
        "pickle": lambda o: pickle.loads(pickle.dumps(o))["text"],
        "json": lambda o: json.loads(json.dumps(o, default=lambda a: a.tolist()))["text"],
        "or": lambda o: (o | {})["text"],
        "pop": lambda o: o.pop("text"),
    }
    expected = env.spec.observation_text(env.spiel_state, 0)
    for name, read in ways.items():
        obs = env.observe("player_0")
        assert read(obs) == expected, name
    obs = env.observe("player_0")
    assert repr(obs) == repr(dict(obs)) and repr(expected) in repr(obs)
    assert list(obs) == ["observation", "action_mask", "text"] and len(obs) == 3
    assert obs == {**obs}  # the same arrays (dict equality: identity first), the same text
    assert obs != {**obs, "text": "other"}
    assert env.observation_space("player_0").contains(env.observe("player_0"))
    # copies keep the type, text rendered: a deep copy compares with the next observation as
    # gymnasium's check_env does (type included)
    for made in (copy.deepcopy(obs), pickle.loads(pickle.dumps(obs)), copy.copy(obs)):
        assert type(made) is type(env.observe("player_0")) and made["text"] == expected


def test_a_text_set_by_the_caller_is_not_overwritten() -> None:
    env = sa.make("hanabi_3p-v0")
    env.reset(seed=0)
    obs = env.observe("player_0")
    obs["text"] = "mine"
    assert obs["text"] == "mine" and dict(obs)["text"] == "mine"


def test_games_with_cheap_text_keep_the_plain_dict() -> None:
    env = sa.make("connect_four-v0")
    env.reset(seed=0)
    assert type(env.observe("player_0")) is dict


def test_observing_without_stepping_stays_bounded_and_exact() -> None:
    env = sa.make("hanabi_3p-v0")
    env.reset(seed=1)
    expected = env.spec.observation_text(env.spiel_state, 0)
    seen = [env.observe("player_0") for _ in range(3 * MAX_UNREAD)]
    assert env._unread is not None and len(env._unread) <= MAX_UNREAD
    obs, *_ = env.last()
    env.step(int(obs["action_mask"].nonzero()[0][0]))
    assert all(o["text"] == expected for o in seen)
