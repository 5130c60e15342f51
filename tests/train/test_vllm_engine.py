"""The vLLM engine. Everything but the version check needs a CUDA GPU and vLLM (marked ``gpu``).

On a GPU: the engine's log-probs equal the learner's, weights pushed in place change what it
samples (the ratio stays 1 after a sync), sleep and wake-up keep it working, and the trainer
runs with it end to end.
"""

from __future__ import annotations

import copy
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("packaging")

from strategic_arena.train.vllm_engine import check_version

Overrides = Callable[..., list[str]]


def test_version_window() -> None:
    for version in ("0.8.5", "0.9.2", "0.10.1.1", "0.10.2"):
        check_version(version)
    for version in ("0.8.4", "0.11.0", "1.0.0"):
        with pytest.raises(RuntimeError, match="outside the tested window"):
            check_version(version)


def _gpu_and_vllm() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return "torch is not installed"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install 'strategic-arena[vllm]')"
    return None


_REASON = _gpu_and_vllm()
gpu = pytest.mark.skipif(_REASON is not None, reason=f"needs a CUDA GPU and vLLM: {_REASON}")


@pytest.fixture(scope="module")
def tiny_on_gpu(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Path]:
    from strategic_arena.train.models import save_full_model
    from strategic_arena.train.tiny import build_tiny

    model, tokenizer = build_tiny(["kuhn_poker-v0"], vocab="prompts", hidden_size=64, layers=2)
    path = tmp_path_factory.mktemp("tiny")
    save_full_model(model, tokenizer, dict(model.state_dict()), path)
    return model.cuda(), tokenizer, path


def _engine(path: Path, tokenizer: Any) -> Any:
    from strategic_arena.train.vllm_engine import VLLMEngine

    return VLLMEngine(
        str(path),
        tokenizer,
        gpu_memory_utilization=0.2,
        max_model_len=4096,
        enforce_eager=True,
        dtype="float32",
    )


def _max_logprob_gap(model: Any, tokenizer: Any, engine: Any, seed: int) -> float:
    import torch

    from strategic_arena.train.engine import GenerationRequest, Sampling
    from strategic_arena.train.episode import Turn
    from strategic_arena.train.learner import collate, sequence_logprobs

    prompts = [
        tokenizer(text, add_special_tokens=False)["input_ids"]
        for text in ("Your card: Queen (Q).", "check bet", "- fold\n- call")
    ]
    sampling = Sampling(1.0, max_new_tokens=16)
    generations = engine.generate(
        [GenerationRequest(p, seed + i) for i, p in enumerate(prompts)], sampling
    )
    turns = [
        Turn("kuhn_poker-v0", 0, "r", p, g.token_ids, g.logprobs, "", None)
        for p, g in zip(prompts, generations, strict=True)
    ]
    batch = collate(turns, pad_id=tokenizer.pad_token_id, device=torch.device("cuda"))
    with torch.no_grad():
        learner = sequence_logprobs(model, batch, 1.0)
    mask = batch.response_mask.bool()
    return float((learner[mask] - batch.old_logprobs[mask]).abs().max())


@pytest.mark.gpu
@gpu
def test_vllm_logprobs_match_and_weights_update_in_place(
    tiny_on_gpu: tuple[Any, Any, Path],
) -> None:
    import torch

    model, tokenizer, path = tiny_on_gpu
    engine = _engine(path, tokenizer)
    assert _max_logprob_gap(model, tokenizer, engine, seed=0) < 1e-3

    changed = copy.deepcopy(model)
    with torch.no_grad():
        for parameter in changed.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    assert _max_logprob_gap(changed, tokenizer, engine, seed=1) > 1e-2  # engine still old
    engine.sleep()
    engine.load_weights(changed.state_dict().items())  # wakes, pushes, resets the prefix cache
    assert not engine.sleeping
    assert _max_logprob_gap(changed, tokenizer, engine, seed=2) < 1e-3
    engine.sleep()
    engine.wake_up()
    assert _max_logprob_gap(changed, tokenizer, engine, seed=3) < 1e-3


@pytest.mark.gpu
@gpu
def test_trainer_with_the_vllm_engine(tiny_overrides: Overrides) -> None:
    from strategic_arena.train.config import load_config
    from strategic_arena.train.trainer import Trainer

    cfg = load_config(
        None,
        tiny_overrides(
            "engine=vllm",
            "device=cuda",
            "dtype=float32",
            "vllm_gpu_memory_utilization=0.2",
            "vllm_enforce_eager=true",
            "vllm_max_model_len=4096",
            "max_sequence_tokens=4096",
            "steps=2",
        ),
    )
    trainer = Trainer(cfg)
    for _ in range(2):
        metrics = trainer.train_step()
        assert metrics["train/logprob_ratio"] == pytest.approx(1.0, abs=1e-3)
