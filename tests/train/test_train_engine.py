"""The transformers engine: seeded sampling, log-probs equal to the learner's, batching client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from strategic_arena.arena.match import play_match  # noqa: E402
from strategic_arena.asking import Asking  # noqa: E402
from strategic_arena.games import get_spec  # noqa: E402
from strategic_arena.players import LLMPlayer, RandomPlayer  # noqa: E402
from strategic_arena.train.config import load_config  # noqa: E402
from strategic_arena.train.engines.engine import (  # noqa: E402
    BatchSampling,
    EngineClient,
    Generation,
    GenerationRequest,
    TransformersEngine,
    filter_logits,
)
from strategic_arena.train.loop.rollout import EngineBackend, PromptEncoder, learner_turns  # noqa: E402
from strategic_arena.train.policy.learner import collate, sequence_logprobs  # noqa: E402
from strategic_arena.train.policy.tiny import build_tiny  # noqa: E402
from tests.train.conftest import learner_for  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny() -> tuple[Any, Any]:
    return build_tiny(["kuhn_poker-v0"], vocab="prompts", hidden_size=32, layers=2, seed=3)


def _prompts(tokenizer: Any) -> list[list[int]]:
    texts = ["Your card: Queen (Q).", "check bet", "Player 1 (you act second)\n- fold\n- call"]
    return [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]


def _turns(prompts: list[list[int]], generations: list[Generation]) -> list[Any]:
    from strategic_arena.rl.episode import Turn

    return [
        Turn("kuhn_poker-v0", 0, "Player 0", p, g.token_ids, g.logprobs, "", None, advantage=1.0)
        for p, g in zip(prompts, generations, strict=True)
    ]


@pytest.mark.parametrize("sampling", [BatchSampling(1.0), BatchSampling(0.7, top_p=0.9, top_k=20)])
def test_learner_logprobs_equal_the_engines(tiny: tuple[Any, Any], sampling: BatchSampling) -> None:
    model, tokenizer = tiny
    engine = TransformersEngine(model, tokenizer)
    prompts = _prompts(tokenizer)
    sampling = BatchSampling(
        sampling.temperature, sampling.top_p, sampling.top_k, max_new_tokens=12
    )
    generations = engine.generate(
        [GenerationRequest(p, seed=i) for i, p in enumerate(prompts)], sampling
    )
    assert all(len(g.token_ids) == len(g.logprobs) > 0 for g in generations)
    batch = collate(_turns(prompts, generations), pad_id=tokenizer.pad_token_id, device="cpu")
    with torch.no_grad():
        learner = sequence_logprobs(model, batch, sampling.logprob_temperature)
    engine_logprobs = batch.old_logprobs
    mask = batch.response_mask.bool()
    assert torch.allclose(learner[mask], engine_logprobs[mask], atol=1e-5)


def test_first_ppo_ratio_is_one(tiny: tuple[Any, Any]) -> None:
    import numpy as np

    model, tokenizer = tiny
    cfg = load_config(None, ["ppo.lr=1e-9", "ppo.micro_batch_size=2", "sampling.temperature=0.8"])
    learner = learner_for(cfg, model, pad_id=tokenizer.pad_token_id)
    engine = TransformersEngine(model, tokenizer)
    prompts = _prompts(tokenizer)
    generations = engine.generate(
        [GenerationRequest(p, seed=10 + i) for i, p in enumerate(prompts)],
        BatchSampling(0.8, max_new_tokens=10),
    )
    metrics = learner.update(_turns(prompts, generations), np.random.default_rng(0))
    assert metrics["train/logprob_ratio"] == pytest.approx(1.0, abs=1e-5)
    assert metrics["train/logprob_max_abs_diff"] < 1e-4
    assert metrics["train/clip_fraction"] == 0.0


def test_a_requests_sample_depends_on_its_seed_not_its_batch(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    engine = TransformersEngine(model, tokenizer)
    prompts = _prompts(tokenizer)
    sampling = BatchSampling(1.0, max_new_tokens=10)
    together = engine.generate([GenerationRequest(p, seed=5) for p in prompts], sampling)
    alone = [engine.generate([GenerationRequest(p, seed=5)], sampling)[0] for p in prompts]
    assert [g.token_ids for g in together] == [g.token_ids for g in alone]
    again = engine.generate([GenerationRequest(p, seed=5) for p in prompts], sampling)
    assert again == together
    other = engine.generate([GenerationRequest(p, seed=6) for p in prompts], sampling)
    assert [g.token_ids for g in other] != [g.token_ids for g in together]


def test_budgets_and_greedy(tiny: tuple[Any, Any]) -> None:
    model, tokenizer = tiny
    engine = TransformersEngine(model, tokenizer)
    prompt = _prompts(tokenizer)[0]
    short, none = engine.generate(
        [GenerationRequest(prompt, 0, max_new_tokens=3), GenerationRequest(prompt, 0, 0)],
        BatchSampling(1.0, max_new_tokens=50),
    )
    assert len(short.token_ids) <= 3 and none == Generation([], [], "length")
    if len(short.token_ids) == 3 and short.token_ids[-1] not in engine.stop_ids:
        assert short.finish_reason == "length"
    greedy = [
        engine.generate([GenerationRequest(prompt, seed)], BatchSampling(0.0, max_new_tokens=6))[0]
        for seed in (1, 2)
    ]
    assert greedy[0] == greedy[1]
    with torch.no_grad():
        first = model(torch.tensor([prompt])).logits[0, -1]
    assert greedy[0].token_ids[0] == int(first.argmax())


def test_top_k_and_top_p_filters() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(filter_logits(logits, top_k=2, top_p=1.0))
    assert kept.tolist() == [[True, True, False, False]]
    kept = torch.isfinite(filter_logits(logits, top_k=0, top_p=0.7))
    assert kept.tolist() == [[True, True, False, False]]  # 0.5 < 0.7 <= 0.8
    kept = torch.isfinite(filter_logits(logits, top_k=0, top_p=0.1))
    assert kept.tolist() == [[True, False, False, False]]  # the top token always stays


class _CountingEngine:
    """Answers instantly, counting how many requests each call carried."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def generate(self, requests: Any, sampling: BatchSampling) -> list[Generation]:
        self.batches.append(len(requests))
        return [Generation([r.seed], [0.0], "stop") for r in requests]


def test_client_batches_concurrent_requests() -> None:
    engine = _CountingEngine()
    client = EngineClient(engine, BatchSampling(), max_batch_size=5)  # type: ignore[arg-type]

    async def player(seed: int) -> int:
        await asyncio.sleep(0)
        first = await client.generate(GenerationRequest([1], seed))
        second = await client.generate(GenerationRequest([1], seed + 100))
        return first.token_ids[0] + second.token_ids[0]

    async def run() -> list[int]:
        return list(await asyncio.gather(*(player(i) for i in range(8))))

    assert asyncio.run(run()) == [2 * i + 100 for i in range(8)]
    assert sum(engine.batches) == 16 and max(engine.batches) == 5 and len(engine.batches) == 4


def test_the_model_player_over_the_engine_records_turns_through_the_match_loop(
    tiny: tuple[Any, Any],
) -> None:
    model, tokenizer = tiny
    engine = TransformersEngine(model, tokenizer)
    client = EngineClient(engine, BatchSampling(1.0, max_new_tokens=6))
    encoder = PromptEncoder(tokenizer)
    backend = EngineBackend(client, encoder, max_new_tokens=6, max_sequence_tokens=10_000, seed=0)
    policy = LLMPlayer(backend, Asking(style="boxed"), name="policy", seed=0)
    record = asyncio.run(play_match("kuhn_poker-v0", [policy, RandomPlayer(0)], seed=4))
    spec = get_spec(record.env_id)
    turns = learner_turns(record, [0], spec)
    assert len(turns) == sum(1 for move in record.moves if move.seat == 0) >= 1
    turn = turns[0]
    assert turn.seat == 0 and turn.role == spec.player_name(0) == "Player 0"
    assert turn.env_id == "kuhn_poker-v0"
    assert tokenizer.decode(turn.prompt_ids).endswith("<|im_start|>assistant\n")
    assert turn.text == record.moves[0].response and turn.error_kind is not None  # random model
    assert len(turn.logprobs) == len(turn.response_ids) <= 6
    # The decision keeps the same tokens the turn was built from, and the one attempt.
    decision = record.moves[0].decision
    assert decision.trace is not None and list(decision.trace.response_ids) == turn.response_ids
    assert len(decision.tries) == 1 and decision.tries[0].response == turn.text
    assert decision.usage["prompt_tokens"] == len(turn.prompt_ids)


def test_a_stop_string_ends_the_response_with_the_token_that_completes_it(
    tiny: tuple[Any, Any],
) -> None:
    model, tokenizer = tiny
    engine = TransformersEngine(model, tokenizer)
    prompts = _prompts(tokenizer)
    free = engine.generate(
        [GenerationRequest(p, seed=11 + i) for i, p in enumerate(prompts)],
        BatchSampling(1.0, max_new_tokens=24),
    )
    # A word the free responses produce, as the stop string: each then ends right at it.
    word = next(
        tokenizer.decode([token]).strip()
        for g in free
        for token in g.token_ids[2:]
        if tokenizer.decode([token]).strip()
    )
    stopped = engine.generate(
        [GenerationRequest(p, seed=11 + i) for i, p in enumerate(prompts)],
        BatchSampling(1.0, max_new_tokens=24, stop=(word,)),
    )
    hits = 0
    for before, after in zip(free, stopped, strict=True):
        text = tokenizer.decode(after.token_ids, skip_special_tokens=True)
        assert before.token_ids[: len(after.token_ids)] == after.token_ids  # same seeded samples
        if word in tokenizer.decode(before.token_ids, skip_special_tokens=True):
            hits += 1
            assert after.finish_reason == "stop" and text.rstrip().endswith(word)
            assert word not in tokenizer.decode(after.token_ids[:-1], skip_special_tokens=True)
        else:
            assert after.token_ids == before.token_ids
    assert hits >= 1


def test_the_prompt_encoder_puts_a_persona_first_as_an_endpoint_gets_it(
    tiny: tuple[Any, Any],
) -> None:
    _, tokenizer = tiny
    messages = [{"role": "system", "content": "Rules."}, {"role": "user", "content": "Move?"}]
    merged = [{"role": "system", "content": "Be bold.\n\nRules."}, messages[1]]
    persona = PromptEncoder(tokenizer, Asking(system_prompt="Be bold."))
    assert persona.encode(messages) == PromptEncoder(tokenizer).encode(merged)
    assert PromptEncoder(tokenizer).encode(messages) != persona.encode(messages)
