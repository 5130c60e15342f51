"""Several policies trained together (``policies:``): seat routing, the config check, updates.

The run tests use the tiny model on Kuhn Poker with the transformers engine (CPU, seconds);
the vLLM-served version (one server, a LoRA adapter per policy) is ``test_cotrain_vllm.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.rl.episode import Episode, Turn
from strategic_arena.train.config import load_config
from strategic_arena.train.cotrain import CoTrainer, policy_config, policy_view

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


def _weights(trainer: Any) -> dict[str, Any]:
    return {k: v.detach().clone() for k, v in trainer.learner.model.state_dict().items()}


def test_each_policy_trains_only_on_its_own_seats_turns(tiny_overrides: Overrides) -> None:
    cfg = load_config(None, tiny_overrides(TWO, "run.seed=3", "games.episodes_per_game=16"))
    with CoTrainer(cfg) as cotrainer:
        alice, bob = cotrainer.trainers["alice"], cotrainer.trainers["bob"]
        start = {name: _weights(t) for name, t in cotrainer.trainers.items()}
        seen: dict[str, list[list[int]]] = {"alice": [], "bob": []}
        checks: dict[str, list[tuple[float, float]]] = {"alice": [], "bob": []}
        for name, trainer in cotrainer.trainers.items():
            other = bob if trainer is alice else alice
            update = trainer.learner.update

            def spy(
                turns: list[Turn],
                rng: np.random.Generator,
                *,
                _n: str = name,
                _u: Any = update,
                _me: Any = trainer,
                _other: Any = other,
                **kw: Any,
            ) -> dict[str, float]:
                seen[_n].append(sorted({t.seat for t in turns}))
                # The turns were sampled by this policy: its own learner gives back the
                # engine's log-probs; the other policy's (different weights) does not.
                mine = _me.learner.recompute_logprobs(turns)
                theirs = _other.learner.recompute_logprobs(turns)
                engine = np.concatenate([t.logprobs for t in turns])
                checks[_n].append(
                    (
                        float(np.max(np.abs(np.concatenate(mine) - engine))),
                        float(np.max(np.abs(np.concatenate(theirs) - engine))),
                    )
                )
                return dict(_u(turns, rng, **kw))

            trainer.learner.update = spy  # type: ignore[method-assign]
        metrics = [cotrainer.train_step() for _ in range(2)]
        assert seen == {"alice": [[0], [0]], "bob": [[1], [1]]}
        # Step 2 (the policies differ after step 1): own log-probs match, the other's do not.
        for name in ("alice", "bob"):
            own, other = checks[name][1]
            assert own < 1e-4 and other > 1e-3, (name, own, other)
        for name, trainer in cotrainer.trainers.items():
            now = _weights(trainer)
            assert any(not (now[k] == start[name][k]).all() for k in now), name
        assert "alice/train/value_loss" in metrics[0] and "bob/train/value_loss" not in metrics[0]
        assert metrics[1]["alice/train/weight_version"] == 1.0
