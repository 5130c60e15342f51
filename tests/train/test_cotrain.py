"""Several policies trained together (``policies:``): seat routing, the config check, updates.

The run tests use the tiny model on Kuhn Poker with the transformers engine (CPU, seconds);
the vLLM-served version (one server, a LoRA adapter per policy) is ``test_cotrain_vllm.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.config import load_config
from strategic_arena.train.engines.vllm_lora import lora_server_args
from strategic_arena.train.loop.cotrain import (
    CoTrainer,
    policy_config,
    policy_view,
    shares_lora_server,
)
from tests.train.cotrain_spy import changed, spy_on_updates, trainable

Overrides = Callable[..., list[str]]
KUHN = "kuhn_poker-v0"
TWO = (
    'policies=[{"name": "alice", "seats": [0], "advantage": {"type": "ppo"}}, '
    '{"name": "bob", "seats": [1]}]'
)


def _turn(seat: int) -> Turn:
    return Turn(KUHN, seat, f"player {seat}", [1], [2], [-0.5], "x", None)


def test_policy_view_keeps_only_the_policys_seats_and_the_same_turn_objects() -> None:
    turns = [_turn(0), _turn(1), _turn(0), _turn(1)]
    episode = Episode(KUHN, 3, (0, 1), "self", (1.0, -1.0), "complete", None, turns)
    alice, bob = policy_view(episode, [0]), policy_view(episode, [1])
    assert alice.learner_seats == (0,) and bob.learner_seats == (1,)
    assert alice.turns == [turns[0], turns[2]] and alice.turns[0] is turns[0]
    assert bob.turns == [turns[1], turns[3]]
    assert alice.returns == episode.returns  # the game itself is the same game


def test_policy_config_is_a_single_policy_run_in_its_own_folder(tiny_overrides: Overrides) -> None:
    cfg = load_config(None, tiny_overrides(TWO, "ppo.lr=0.5", "lora.rank=0"))
    alice, bob = (policy_config(cfg, policy) for policy in cfg.policies)
    assert alice.policies == [] and alice.advantage.name == "ppo"
    assert bob.advantage.name == cfg.advantage.name == "marshal"
    assert alice.run.output_dir.endswith("policies/alice") and alice.ppo.lr == 0.5


@pytest.mark.parametrize(
    ("policies", "problem"),
    [
        (
            '[{"name": "a", "seats": [0, 1]}, {"name": "b", "seats": [1]}]',
            "seat 1 belongs to a and b",
        ),
        ('[{"name": "a", "seats": [0]}]', r"the policies play \[0\]"),
        ('[{"name": "a", "seats": [0]}, {"name": "a", "seats": [1]}]', "names must differ"),
    ],
)
def test_the_config_check_refuses_seats_that_do_not_partition_the_game(
    policies: str, problem: str, tiny_overrides: Overrides
) -> None:
    with pytest.raises(ValueError, match=problem):
        load_config(None, tiny_overrides(f"policies={policies}"))


def test_the_config_check_refuses_an_opponent_pool(tiny_overrides: Overrides) -> None:
    with pytest.raises(ValueError, match="does not support an opponent pool"):
        load_config(None, tiny_overrides(TWO, 'games.opponents=["random"]'))


def test_each_policy_trains_only_on_its_own_seats_turns(tiny_overrides: Overrides) -> None:
    cfg = load_config(None, tiny_overrides(TWO, "run.seed=3", "games.episodes_per_game=16"))
    with CoTrainer(cfg) as cotrainer:
        start = {name: trainable(t) for name, t in cotrainer.trainers.items()}
        records = spy_on_updates(cotrainer)
        metrics = [cotrainer.train_step() for _ in range(2)]
        assert records["alice"].seats == [[0], [0]] and records["bob"].seats == [[1], [1]]
        # Step 2 (the policies differ after step 1): each policy's turns were sampled by it.
        for name, record in records.items():
            assert record.own_diff[1] < 1e-4 < 1e-3 < record.other_diff[1], (name, record)
        for name, trainer in cotrainer.trainers.items():
            assert changed(start[name], trainable(trainer)), name
        assert "alice/train/value_loss" in metrics[0] and "bob/train/value_loss" not in metrics[0]
        assert metrics[1]["alice/train/weight_version"] == 1.0


def test_lora_policies_on_one_base_share_one_server_with_enough_adapter_slots(
    tiny_overrides: Overrides,
) -> None:
    assert lora_server_args([8, 12], 2) == [
        "--enable-lora",
        "--max-loras",
        "2",
        "--max-lora-rank",
        "16",
    ]
    with pytest.raises(ValueError, match="exceeds"):
        lora_server_args([1024], 1)
    shared = load_config(None, tiny_overrides(TWO, "lora.rank=8", "rollout.engine=vllm"))
    assert shares_lora_server(shared)
    full = load_config(None, tiny_overrides(TWO, "lora.rank=0", "rollout.engine=vllm"))
    assert not shares_lora_server(full)  # full weights: a server per policy


def test_a_co_trained_run_resumes_every_policy_from_its_checkpoint(
    tiny_overrides: Overrides,
) -> None:
    settings = [TWO, "run.checkpoint_every=1", "run.resume=auto", "games.episodes_per_game=4"]
    cfg = load_config(None, tiny_overrides(*settings, "run.steps=2"))
    with CoTrainer(cfg) as cotrainer:
        assert cotrainer.train() == 2
        saved = {name: trainable(t) for name, t in cotrainer.trainers.items()}
        head = cotrainer.trainers["alice"].learner.value_head
        assert head is not None
        value_weights = head.linear.weight.detach().clone()
    resumed_cfg = load_config(None, tiny_overrides(*settings, "run.steps=3"))
    with CoTrainer(resumed_cfg) as resumed:
        assert resumed.step == 2
        for name, trainer in resumed.trainers.items():
            assert not changed(saved[name], trainable(trainer)), name  # the saved weights
        head = resumed.trainers["alice"].learner.value_head
        assert head is not None and bool((head.linear.weight == value_weights).all())
        assert resumed.train() == 3
    rows = (Path(cfg.run.output_dir) / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(row)["step"] for row in rows] == [1, 2, 3]
