"""NCCL weight transfer: refused clearly without CUDA; on a GPU, pushed weights are served.

The GPU test needs CUDA, vLLM importable in this environment (the ``[vllm]`` extra, the same
version as the server) and a CUDA vLLM server venv; it skips with the reason otherwise.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from strategic_arena.train.engine import GenerationRequest, Sampling, stop_token_ids
from strategic_arena.train.models import save_full_model
from strategic_arena.train.tiny import build_tiny
from strategic_arena.train.vllm_engine import VLLMServerEngine
from strategic_arena.train.vllm_nccl import NCCLTransport, server_args
from strategic_arena.train.vllm_server import (
    ServerAdmin,
    VLLMServer,
    VLLMServerError,
    vllm_unavailable_reason,
)


def test_nccl_sync_is_refused_on_a_cpu_learner_with_the_way_out() -> None:
    with pytest.raises(VLLMServerError, match="CUDA device; use weight_sync: disk"):
        NCCLTransport(["http://127.0.0.1:1/v1"], torch.device("cpu"))
    assert server_args() == ["--weight-transfer-config", '{"backend": "nccl"}']


def _gpu_reason() -> str | None:
    if not torch.cuda.is_available():
        return "no CUDA device"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not importable in the trainer's environment (the [vllm] extra)"
    return vllm_unavailable_reason()


@pytest.mark.gpu
def test_weights_broadcast_over_nccl_are_what_the_server_samples_with(tmp_path: Path) -> None:
    reason = _gpu_reason()
    if reason is not None:
        pytest.skip(f"needs a GPU, vLLM here and a vLLM server venv: {reason}")
    model, tokenizer = build_tiny(
        ["kuhn_poker-v0"], vocab="answers", style="boxed", hidden_size=128, heads=2, layers=1
    )
    save_full_model(model, tokenizer, dict(model.state_dict()), tmp_path / "tiny")
    model = model.cuda().eval()
    with VLLMServer(
        str(tmp_path / "tiny"),
        served_name="tiny",
        dtype="float32",
        max_model_len=2048,
        gpu_memory_utilization=0.2,
        enforce_eager=True,
        extra_args=server_args(),
        log_path=tmp_path / "server.log",
    ) as server:
        engine = VLLMServerEngine(
            [server.base_url],
            "tiny",
            stop_token_ids(tokenizer, model),
            transport=NCCLTransport([server.base_url], torch.device("cuda")),
        )
        prompt = tokenizer("Your card: Queen (Q).", add_special_tokens=False)["input_ids"]
        request = [GenerationRequest(prompt, seed=3)]
        sampling = Sampling(0.7, max_new_tokens=8)
        before = engine.generate(request, sampling)[0]
        generator = torch.Generator(device="cuda").manual_seed(1)
        changed = {
            name: tensor + 0.2 * torch.randn(tensor.shape, generator=generator, device="cuda")
            for name, tensor in model.state_dict().items()
        }
        engine.load_weights(changed.items(), version=1)
        after = engine.generate(request, sampling)[0]
        assert ServerAdmin(server.base_url).weight_version() == "1"
        assert after.logprobs != before.logprobs
        engine.load_weights(model.state_dict().items(), version=2)
        restored = engine.generate(request, sampling)[0]
        assert restored.token_ids == before.token_ids
        assert restored.logprobs == pytest.approx(before.logprobs, abs=1e-4)
        engine.transport.close()
