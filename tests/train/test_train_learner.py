"""The PPO learner: loss terms by hand, exact gradient accumulation, schedules, a bandit."""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.rl.episode import Turn  # noqa: E402
from strategic_arena.train.config import PPOConfig, load_config  # noqa: E402
from strategic_arena.train.engines.engine import (  # noqa: E402
    BatchSampling,
    GenerationRequest,
    TransformersEngine,
)
from strategic_arena.train.policy.learner import (  # noqa: E402
    Learner,
    collate,
    k3_kl,
    lr_factor,
    ppo_token_loss,
    sequence_logprobs_and_entropy,
    token_weights,
)
from strategic_arena.train.policy.tiny import build_tiny  # noqa: E402
from tests.train.conftest import learner_for  # noqa: E402

torch.set_num_threads(1)


def _loss(ratio: float, advantage: float, dual_clip: float | None = 3.0) -> tuple[float, bool]:
    logprobs = torch.tensor([[math.log(ratio)]])
    loss, parts = ppo_token_loss(
        logprobs,
        torch.zeros(1, 1),
        torch.tensor([advantage]),
        clip_eps=0.2,
        clip_eps_high=0.28,
        dual_clip=dual_clip,
    )
    return float(loss), bool(parts["clipped"] | parts["dual_clipped"])


def test_ppo_clip_and_dual_clip_by_hand() -> None:
    assert _loss(1.0, 2.0) == (pytest.approx(-2.0), False)
    assert _loss(1.5, 1.0) == (pytest.approx(-1.28), True)  # clipped above at 1 + 0.28
    assert _loss(0.5, 1.0) == (pytest.approx(-0.5), False)  # pessimistic: unclipped is lower
    assert _loss(0.5, -1.0) == (pytest.approx(0.8), True)  # clipped below at 1 - 0.2
    assert _loss(1.1, -1.0) == (pytest.approx(1.1), False)
    assert _loss(10.0, -1.0) == (pytest.approx(3.0), True)  # dual clip bounds -A * ratio by 3
    assert _loss(10.0, -1.0, dual_clip=None) == (pytest.approx(10.0), False)


def test_k3_kl() -> None:
    same = torch.tensor([-1.0, -2.0])
    assert torch.equal(k3_kl(same, same), torch.zeros(2))
    ref = torch.tensor([-1.5, -1.0])
    expected = torch.exp(ref - same) - (ref - same) - 1
    assert torch.allclose(k3_kl(same, ref), expected) and bool((expected > 0).all())


def _turn(response: int, advantage: float = 1.0) -> Turn:
    return Turn(
        "g", 0, "r", [1, 2], [3] * response, [-1.0] * response, "", None, advantage=advantage
    )


def test_loss_aggregation_weights() -> None:
    turns = [_turn(2), _turn(6)]
    per_seq = token_weights(turns, PPOConfig(loss_aggregation="seq-mean-token-mean"))
    assert per_seq == pytest.approx([1 / 4, 1 / 12])  # each response sums to 1/2
    per_token = token_weights(turns, PPOConfig(loss_aggregation="token-mean"))
    assert per_token == pytest.approx([1 / 8, 1 / 8])
    summed = PPOConfig(loss_aggregation="seq-mean-token-sum-norm", loss_norm_tokens=100)
    assert token_weights(turns, summed) == pytest.approx([1 / 200, 1 / 200])
    # unset loss_norm_tokens: the response budget
    budget = PPOConfig(loss_aggregation="seq-mean-token-sum-norm")
    assert token_weights(turns, budget, response_tokens=50) == pytest.approx([1 / 100, 1 / 100])
    assert token_weights(turns, PPOConfig(), world_size=4) == pytest.approx([1, 1 / 3])


def test_learning_rate_schedules() -> None:
    cosine = PPOConfig(warmup_steps=2, min_lr_ratio=0.1)
    factors = [lr_factor(step, cosine, steps=10, steps_per_update=1) for step in range(10)]
    assert factors[:2] == pytest.approx([0.5, 1.0])
    assert factors[2] == pytest.approx(1.0) and factors[-1] > 0.1
    assert all(a >= b for a, b in itertools.pairwise(factors[1:]))
    assert lr_factor(10, cosine, 10, 1) == pytest.approx(0.1)
    constant = PPOConfig(lr_schedule="constant", warmup_steps=1)
    assert [lr_factor(s, constant, 200, 2) for s in range(4)] == pytest.approx([0.5, 1, 1, 1])


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    return build_tiny(["kuhn_poker-v0"], vocab="answers", style="boxed", hidden_size=32, layers=1)


def _rollout(model: Any, tokenizer: Any, count: int, seed: int) -> list[Turn]:
    engine = TransformersEngine(model, tokenizer)
    prompt = tokenizer("check bet Queen", add_special_tokens=False)["input_ids"]
    generations = engine.generate(
        [GenerationRequest(prompt[: 1 + i % 3], seed + i) for i in range(count)],
        BatchSampling(1.0, max_new_tokens=5),
    )
    rng = np.random.default_rng(seed)
    return [
        Turn(
            "g",
            0,
            "r",
            prompt[: 1 + i % 3],
            g.token_ids,
            g.logprobs,
            "",
            None,
            advantage=float(rng.normal()),
        )
        for i, g in enumerate(generations)
    ]


@pytest.mark.parametrize(
    "aggregation", ["seq-mean-token-mean", "token-mean", "seq-mean-token-sum-norm"]
)
def test_gradient_accumulation_matches_one_big_batch(
    tiny: tuple[Any, Any], aggregation: str
) -> None:
    model, tokenizer = tiny
    turns = _rollout(model, tokenizer, 6, seed=1)
    results = []
    # one sequence a pass; all six in one; a token budget that packs two or three short ones
    for micro in ("ppo.micro_batch_size=1", "ppo.micro_batch_size=6", "ppo.micro_batch_tokens=24"):
        copy_ = copy.deepcopy(model)
        cfg = load_config(
            None,
            [
                "ppo.lr=1e-2",
                "ppo.micro_batch_size=6",
                micro,
                f"ppo.loss_aggregation={aggregation}",
                "ppo.kl_coef=0.0",
                "ppo.grad_clip=0",
            ],
        )
        learner = learner_for(cfg, copy_, pad_id=tokenizer.pad_token_id)
        metrics = learner.update(turns, np.random.default_rng(0))
        results.append(
            (metrics["train/grad_norm"], [p.detach().clone() for p in copy_.parameters()])
        )
    (norm_a, params_a), *others = results
    for norm_b, params_b in others:
        assert norm_a == pytest.approx(norm_b, rel=1e-4)
        assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(params_a, params_b, strict=True))


def test_kl_to_the_reference_starts_at_zero_and_grows(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    policy = copy.deepcopy(model)
    reference = copy.deepcopy(model).requires_grad_(False)
    cfg = load_config(
        None, ["ppo.lr=5e-2", "ppo.kl_coef=0.5", "ppo.epochs=3", "ppo.micro_batch_size=4"]
    )
    learner = learner_for(cfg, policy, pad_id=tokenizer.pad_token_id, reference=reference)
    turns = _rollout(model, tokenizer, 8, seed=2)
    first = learner.update(turns, np.random.default_rng(0))
    second = learner.update(turns, np.random.default_rng(1))
    assert 0.0 < first["train/kl_ref"] < second["train/kl_ref"]
    assert second["train/approx_kl"] > 0 and second["train/optimizer_steps"] == 3


def test_policy_gradient_raises_a_rewarded_tokens_probability(tiny: tuple[Any, Any]) -> None:
    """A one-token bandit: reward 1 for one answer token, group-normalized advantages."""
    model, tokenizer = tiny
    model = copy.deepcopy(model)
    cfg = load_config(None, ["ppo.lr=1e-2", "ppo.micro_batch_size=32", "sampling.max_tokens=1"])
    learner = learner_for(cfg, model, pad_id=tokenizer.pad_token_id)
    engine = TransformersEngine(model, tokenizer)
    target = tokenizer.convert_tokens_to_ids("\\boxed{bet}")
    prompt = tokenizer("check bet", add_special_tokens=False)["input_ids"]

    def probability() -> float:
        with torch.no_grad():
            return float(torch.softmax(model(torch.tensor([prompt])).logits[0, -1], -1)[target])

    before = probability()
    for step in range(12):
        generations = engine.generate(
            [GenerationRequest(prompt, 100 * step + i) for i in range(32)],
            BatchSampling(1.0, max_new_tokens=1),
        )
        rewards = np.array([float(g.token_ids[0] == target) for g in generations])
        advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
        turns = [
            Turn("g", 0, "r", prompt, g.token_ids, g.logprobs, "", None, advantage=float(a))
            for g, a in zip(generations, advantages, strict=True)
        ]
        learner.update(turns, np.random.default_rng(step))
    assert before < 0.1 and probability() > 0.5


def test_entropy_bonus_raises_the_entropy_and_matches_its_definition(
    tiny: tuple[Any, Any],
) -> None:
    """With zero advantages only the bonus moves the policy: H grows; H is -sum p log p."""
    model, tokenizer = tiny
    turns = [replace(turn, advantage=0.0) for turn in _rollout(model, tokenizer, 8, seed=3)]
    batch = collate(
        turns[:1],
        pad_id=tokenizer.pad_token_id,
        device=torch.device("cpu"),
        old_logprobs=[turns[0].logprobs],
        weights=[1.0],
    )
    with torch.no_grad():
        _, entropy = sequence_logprobs_and_entropy(model, batch, 0.7)
        logits = model(batch.input_ids, attention_mask=batch.attention_mask).logits[0] / 0.7
        probs = torch.softmax(logits.float(), -1)
        by_hand = -(probs * torch.log(probs)).sum(-1)[-len(turns[0].response_ids) - 1 : -1]
    assert entropy is not None
    torch.testing.assert_close(entropy[0, -len(by_hand) :], by_hand, atol=1e-4, rtol=1e-4)

    entropies = {}
    for coef in (0.0, 1.0):
        cfg = load_config(None, ["ppo.lr=5e-2", f"ppo.entropy_coef={coef}", "ppo.epochs=3"])
        learner = learner_for(cfg, copy.deepcopy(model), pad_id=tokenizer.pad_token_id)
        first = learner.update(turns, np.random.default_rng(0))["train/entropy"]
        entropies[coef] = (first, learner.update(turns, np.random.default_rng(1))["train/entropy"])
    assert entropies[0.0][0] == pytest.approx(entropies[0.0][1], rel=1e-5)  # nothing to learn
    assert entropies[1.0][1] > entropies[1.0][0] + 1e-3
    with pytest.raises(ValueError, match="entropy_coef"):
        load_config(None, ["ppo.entropy_coef=-1"])


def _moved_fraction(tiny: tuple[Any, Any], dtype: Any, compute: Any) -> tuple[float, Learner]:
    """One AdamW step at lr 1e-6: the fraction of the decoder layer's weights that changed."""
    model, tokenizer = tiny
    policy = copy.deepcopy(model).to(dtype)
    cfg = load_config(None, ["ppo.lr=1e-6", "ppo.lr_schedule=constant", "ppo.grad_clip=0"])
    learner = learner_for(cfg, policy, pad_id=tokenizer.pad_token_id, compute_dtype=compute)
    layer = {n: p for n, p in policy.named_parameters() if ".layers." in n and p.dim() == 2}
    before = {name: p.detach().clone() for name, p in layer.items()}
    learner.update(_rollout(model, tokenizer, 8, seed=4), np.random.default_rng(0))
    changed = sum(int((layer[n] != before[n]).sum()) for n in layer)
    return changed / sum(p.numel() for p in layer.values()), learner


def test_bfloat16_compute_over_float32_masters_learns_at_lr_1e_6(tiny: tuple[Any, Any]) -> None:
    """Adam moves each weight by ~lr; a bfloat16 weight of size 0.02 cannot hold 1e-6."""
    fp32, _ = _moved_fraction(tiny, torch.float32, torch.float32)
    mixed, learner = _moved_fraction(tiny, torch.float32, torch.bfloat16)
    pure_bf16, _ = _moved_fraction(tiny, torch.bfloat16, torch.bfloat16)
    assert fp32 > 0.99 and mixed > 0.99
    assert pure_bf16 < 0.05
    # masters and AdamW state stay float32; the forward pass really ran in bfloat16
    state = next(iter(learner.optimizer.state.values()))
    assert learner.master_dtype == torch.float32 and state["exp_avg"].dtype == torch.float32
    turns = _rollout(tiny[0], tiny[1], 4, seed=5)
    reference = learner_for(
        load_config(None, []), copy.deepcopy(tiny[0]), pad_id=tiny[1].pad_token_id
    ).recompute_logprobs(turns)
    bf16 = learner_for(
        load_config(None, ["precision.compute_dtype=bfloat16"]),
        copy.deepcopy(tiny[0]),
        pad_id=tiny[1].pad_token_id,
    ).recompute_logprobs(turns)
    gaps = np.abs(np.concatenate(bf16) - np.concatenate(reference))
    assert 1e-5 < gaps.max() < 0.1


def test_precision_defaults() -> None:
    from strategic_arena.train.policy.models import (
        compute_context,
        resolve_compute_dtype,
        resolve_dtype,
        resolve_policy_dtype,
        resolve_server_dtype,
    )

    cfg = load_config(None, [])
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    # masters: float32 on every device
    assert resolve_dtype(cfg.precision, cfg.ppo.lr) == torch.float32
    assert resolve_compute_dtype(cfg.precision.compute_dtype, cpu) == torch.float32
    assert resolve_compute_dtype(cfg.precision.compute_dtype, cuda) == torch.bfloat16
    assert resolve_server_dtype(cfg.precision, torch.bfloat16) == torch.bfloat16
    pinned = load_config(
        None, ["precision.server_dtype=float16", "precision.compute_dtype=bfloat16"]
    )
    assert resolve_server_dtype(pinned.precision, torch.float32) == torch.float16
    assert resolve_compute_dtype(pinned.precision.compute_dtype, cpu) == torch.bfloat16
    # a LoRA model's frozen base only computes; its float32 adapters are peft's
    lora = load_config(None, ["lora.rank=4"])
    assert (
        resolve_policy_dtype(lora.precision, lora.lora, torch.float32, torch.bfloat16)
        == torch.bfloat16
    )
    assert (
        resolve_policy_dtype(cfg.precision, cfg.lora, torch.float32, torch.bfloat16)
        == torch.float32
    )
    # autocast only lowers precision; float32 "compute" over bfloat16 weights is no autocast
    with compute_context(cpu, torch.bfloat16, torch.float32):
        assert torch.is_autocast_enabled("cpu")
    with compute_context(cpu, torch.float32, torch.bfloat16):
        assert not torch.is_autocast_enabled("cpu")


def test_a_16_bit_master_dtype_warns(caplog: pytest.LogCaptureFixture) -> None:
    from strategic_arena.train.policy.models import resolve_dtype

    with caplog.at_level("WARNING", logger="strategic_arena.train"):
        assert (
            resolve_dtype(load_config(None, ["precision.master_dtype=bfloat16"]).precision, 1e-6)
            == torch.bfloat16
        )
    assert "round away" in caplog.text


def test_importance_correction_scales_the_policy_gradient(tiny: tuple[Any, Any]) -> None:
    """Every token's engine log-prob log(2) above the learner's: ratio 1/2 halves the pg."""
    model, tokenizer = tiny
    turns = _rollout(model, tokenizer, 6, seed=6)
    base = ["ppo.lr=1e-2", "ppo.grad_clip=0", "ppo.micro_batch_size=2"]
    learner = learner_for(
        load_config(None, base), copy.deepcopy(model), pad_id=tokenizer.pad_token_id
    )
    old = learner.recompute_logprobs(turns)
    shifted = [
        replace(t, logprobs=[v + math.log(2.0) for v in lp])
        for t, lp in zip(turns, old, strict=True)
    ]
    plain = learner.update(turns, np.random.default_rng(0), old_logprobs=old)
    norms = {}
    for cap in ("null", "0.25"):
        learner = learner_for(
            load_config(None, [*base, f"correction.tis_cap={cap}"]),
            copy.deepcopy(model),
            pad_id=tokenizer.pad_token_id,
        )
        metrics = learner.update(
            shifted, np.random.default_rng(0), old_logprobs=old, correct_behaviour=True
        )
        norms[cap] = metrics["train/grad_norm"]
        assert metrics["train/is_ratio_mean"] == pytest.approx(0.5, rel=1e-6)
        assert metrics["train/is_masked_frac"] == 0.0
    assert metrics["train/is_truncated_frac"] == 1.0  # 0.5 > cap 0.25
    assert norms["null"] == pytest.approx(plain["train/grad_norm"] / 2, rel=1e-4)
    assert norms["0.25"] == pytest.approx(plain["train/grad_norm"] / 4, rel=1e-4)
    masked = learner_for(
        load_config(None, [*base, "correction.is_mask_low=0.6"]),
        copy.deepcopy(model),
        pad_id=tokenizer.pad_token_id,
    ).update(shifted, np.random.default_rng(0), old_logprobs=old, correct_behaviour=True)
    assert masked["train/is_masked_frac"] == 1.0 and masked["train/grad_norm"] == 0.0
    with pytest.raises(ValueError, match="old log-probs"):
        learner.update(turns, np.random.default_rng(0), correct_behaviour=True)
