"""PPO with a value head and GAE (``advantage.type: ppo``, MAPoRL's): known answers by hand.

GAE: rewards [1, 0, 2], values [0.5, 1.0, 0.25], gamma 0.5, lambda 0.5 (exact binary fractions):
delta_2 = 2 - 0.25 = 1.75; delta_1 = 0 + 0.5 * 0.25 - 1 = -0.875; delta_0 = 1 + 0.5 * 1 - 0.5 = 1.
A_2 = 1.75; A_1 = -0.875 + 0.25 * 1.75 = -0.4375; A_0 = 1 + 0.25 * -0.4375 = 0.890625.
Returns R = A + V: [1.390625, 0.5625, 2.0].
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from strategic_arena.rl.episode import Episode, Turn  # noqa: E402
from strategic_arena.train.algo.estimators import build, names  # noqa: E402
from strategic_arena.train.algo.estimators.ppo import PPOEstimatorConfig, gae_returns  # noqa: E402
from strategic_arena.train.config.sections import CorrectionConfig, PPOConfig  # noqa: E402
from strategic_arena.train.policy.learner import Learner, ppo_token_loss  # noqa: E402
from strategic_arena.train.policy.value_head import value_loss  # noqa: E402

TTT = "tic_tac_toe-v0"


def test_gae_returns_match_the_hand_computation() -> None:
    advantages, returns = gae_returns([1.0, 0.0, 2.0], [0.5, 1.0, 0.25], gamma=0.5, lam=0.5)
    assert advantages.tolist() == [0.890625, -0.4375, 1.75]
    assert returns.tolist() == [1.390625, 0.5625, 2.0]


def test_gae_with_lambda_one_is_return_to_go_minus_value() -> None:
    # gamma = lambda = 1: A_t = (sum of rewards from t) - V_t = [3 - 0.5, 2 - 1, 2 - 0.25].
    advantages, returns = gae_returns([1.0, 0.0, 2.0], [0.5, 1.0, 0.25], gamma=1.0, lam=1.0)
    assert advantages.tolist() == [2.5, 1.0, 1.75]
    assert returns.tolist() == [3.0, 2.0, 2.0]


def test_ppo_estimator_sets_advantages_and_value_targets_per_seat() -> None:
    assert "ppo" in names()
    turns = []
    for seat, rewards, values in ((0, [1.0, 0.0, 2.0], [0.5, 1.0, 0.25]), (1, [3.0], [1.0])):
        for reward, value in zip(rewards, values, strict=True):
            turn = Turn(TTT, seat, f"player {seat}", [1], [2], [-0.1], "x", None)
            turn.reward, turn.value = reward, value
            turns.append(turn)
    episode = Episode(TTT, 0, (0, 1), "self", (0.0, 0.0), "complete", None, turns)
    build(PPOEstimatorConfig(gamma=0.5, lam=0.5, whiten=False)).assign([episode])
    assert [t.advantage for t in turns] == [0.890625, -0.4375, 1.75, 2.0]  # seat 1: 3 - 1
    assert [t.value_target for t in turns] == [1.390625, 0.5625, 2.0, 3.0]


def test_value_loss_clipped_by_hand() -> None:
    # V = 2, V_old = 1, R = 3, clip 0.5: unclipped 0.5 * 1 = 0.5; clipped V' = 1.5,
    # 0.5 * 1.5^2 = 1.125; the max is 1.125. V = 1.2 (inside the clip): 0.5 * 1.8^2 = 1.62.
    predicted = torch.tensor([2.0, 1.2])
    old, target = torch.tensor([1.0, 1.0]), torch.tensor([3.0, 3.0])
    assert value_loss(predicted, old, target, 0.5).tolist() == pytest.approx([1.125, 1.62])
    assert value_loss(predicted, old, target, None).tolist() == pytest.approx([0.5, 1.62])


def test_clipped_policy_loss_by_hand() -> None:
    # ratio e^0.5 = 1.6487 with A = 1, clip 0.2: min(ratio, 1.2) -> loss -1.2 (clipped);
    # ratio e^-0.5 = 0.6065 with A = -2: max(2 * 0.6065, 2 * 0.8) = 1.6 (clipped).
    logprobs = torch.tensor([[0.0], [0.0]])
    old = torch.tensor([[-0.5], [0.5]])
    loss, parts = ppo_token_loss(
        logprobs, old, torch.tensor([1.0, -2.0]), clip_eps=0.2, clip_eps_high=0.2, dual_clip=None
    )
    assert loss[:, 0].tolist() == pytest.approx([-1.2, 1.6])
    assert parts["clipped"][:, 0].tolist() == [True, True]


def _tiny_learner(epochs: int) -> Learner:
    transformers = pytest.importorskip("transformers")
    config = transformers.Qwen2Config(
        vocab_size=16,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(config).float()
    ppo = PPOConfig(lr=1e-2, epochs=epochs, minibatches=1, micro_batch_size=1, dual_clip=None)
    learner = Learner(ppo, CorrectionConfig(mode="never"), model, pad_id=0)
    learner.attach_value_head(coef=1.0, clip=None, lr=0.05)
    return learner


def test_value_head_starts_at_zero_and_learns_the_returns() -> None:
    learner = _tiny_learner(epochs=4)
    turns = [
        Turn(TTT, 0, "player 0", [3, 4, 5], [6, 7], [-2.0, -2.0], "x", None),
        Turn(TTT, 0, "player 0", [8, 9], [10], [-2.0], "y", None),
    ]
    assert learner.values(turns) == [0.0, 0.0]  # a zero-initialised head
    for turn, target in zip(turns, (1.0, -1.0), strict=True):
        turn.value, turn.value_target, turn.advantage = 0.0, target, 0.0
    first = None
    for _ in range(10):
        turns[0].logprobs = learner.recompute_logprobs(turns)[0]
        turns[1].logprobs = learner.recompute_logprobs(turns)[1]
        metrics = learner.update(turns, __import__("numpy").random.default_rng(0))
        first = metrics["train/value_loss"] if first is None else first
        for turn, value in zip(turns, learner.values(turns), strict=True):
            turn.value = value
    assert metrics["train/value_loss"] < first / 4
    values = learner.values(turns)
    assert values[0] > 0.5 and values[1] < -0.5, values
