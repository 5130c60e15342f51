"""GPU failures a CPU can catch: the colocated hand-off, a declined cache reset, the sampler.

A stand-in server on 127.0.0.1 answers vLLM 0.32's admin routes and ``/v1/completions`` and
records every call; an allocator recorder (:class:`CudaRecorder`) writes its calls into the
same list, so the order of "empty the cache" and "wake the server" is what the server saw.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("httpx")

from strategic_arena.rl.episode import Turn  # noqa: E402
from strategic_arena.train.config import load_config  # noqa: E402
from strategic_arena.train.engines import vllm_server  # noqa: E402
from strategic_arena.train.engines.colocation import (  # noqa: E402
    ColocatedMemory,
    WakeMemoryError,
    sleep_measured,
)
from strategic_arena.train.engines.engine import BatchSampling, GenerationRequest  # noqa: E402
from strategic_arena.train.engines.vllm_engine import DiskTransport, VLLMServerEngine  # noqa: E402
from strategic_arena.train.engines.vllm_server import PrefixCacheResetError, VLLMServer  # noqa: E402
from strategic_arena.train.memory import GIB  # noqa: E402
from strategic_arena.train.policy.importance import correct  # noqa: E402
from tests.train.conftest import learner_for  # noqa: E402
from tests.train.stub_http import StubServer  # noqa: E402


class VLLMStub(StubServer):
    """vLLM's routes, every call recorded in ``events``; ``/reset_prefix_cache`` answers
    ``{"success": false}`` to its first ``declines`` calls (blocks held), as vLLM does."""

    def __init__(self, events: list[str], *, declines: int = 0) -> None:
        self.bodies: list[dict[str, Any]] = []
        owner = self
        remaining = [declines]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                events.append(self.path)
                payload: dict[str, Any] | None = None
                if self.path == "/v1/completions":
                    owner.bodies.append(body)
                    choice = {
                        "token_ids": [5],
                        "logprobs": {"token_logprobs": [-0.5]},
                        "finish_reason": "stop",
                    }
                    payload = {"choices": [choice]}
                elif self.path.startswith("/reset_prefix_cache"):
                    payload = {"success": remaining[0] <= 0}
                    remaining[0] -= 1
                data = json.dumps(payload).encode() if payload is not None else b""
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)


class CudaRecorder:
    """``torch.cuda``'s allocator calls, recorded; ``free`` bytes of ``total`` reported."""

    def __init__(self, events: list[str], free: int, total: int = 79 * GIB) -> None:
        self.events = events
        self.free = free
        self.total = total

    def empty_cache(self) -> None:
        self.events.append("empty_cache")

    def mem_get_info(self) -> tuple[int, int]:
        self.events.append("mem_get_info")
        return self.free, self.total


@pytest.fixture
def events() -> list[str]:
    return []


@pytest.fixture
def stub(events: list[str]) -> Iterator[VLLMStub]:
    server = VLLMStub(events)
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(autouse=True)
def no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vllm_server, "RESET_WAIT_S", 0.0)


def _random_turns(vocab: int, *, rows: int, prompt: int, response: int) -> list[Turn]:
    rng = np.random.default_rng(0)
    turns = []
    for row in range(rows):
        ids = rng.integers(1, vocab, size=prompt + response).tolist()
        turn = Turn("g", 0, "r", ids[:prompt], ids[prompt:], [-3.0] * response, "", None)
        turn.advantage = 1.0 if row % 2 else -1.0
        turns.append(turn)
    return turns


def _weights() -> list[tuple[str, Any]]:
    return [("model.embed_tokens.weight", torch.ones(2, 2))]


def _engine(url: str, tmp_path: Path, **options: Any) -> VLLMServerEngine:
    return VLLMServerEngine([url], "policy", [0], transport=DiskTransport(tmp_path), **options)


def test_the_cache_is_emptied_before_every_wake(
    stub: VLLMStub, events: list[str], tmp_path: Path
) -> None:
    """The update's cached blocks go back to the driver before the server asks for memory."""
    memory = ColocatedMemory(CudaRecorder(events, 40 * GIB), weights_bytes=8 * GIB, kv_bytes=GIB)
    engine = _engine(stub.url, tmp_path, sleep_level=1, before_wake=memory.check_wake)
    try:
        engine.sleep()
        engine.load_weights(_weights(), version=1)  # asleep: weights woken, push, KV woken
        engine.sleep()
        engine.wake_up()
    finally:
        engine.close()
    wakes = [i for i, event in enumerate(events) if event.startswith("/wake_up")]
    assert [events[i] for i in wakes] == [
        "/wake_up?tags=weights",
        "/wake_up?tags=kv_cache",
        "/wake_up",
    ]
    for i in wakes:  # right before each wake: empty the cache, then look at what is free
        assert events[i - 2 : i] == ["empty_cache", "mem_get_info"], events


def test_a_wake_that_cannot_fit_stops_with_both_numbers(
    stub: VLLMStub, events: list[str], tmp_path: Path
) -> None:
    memory = ColocatedMemory(
        CudaRecorder(events, free=8 * GIB),
        weights_bytes=int(7.5 * GIB),
        kv_bytes=int(15.2 * GIB),
        margin_bytes=GIB,
    )
    engine = _engine(stub.url, tmp_path, sleep_level=1, before_wake=memory.check_wake)
    try:
        engine.sleep()
        with pytest.raises(WakeMemoryError) as raised:
            engine.wake_up()
    finally:
        engine.close()
    message = str(raised.value)
    assert "needs 22.70 GiB (+ 1.00 GiB margin) to wake its weights and KV cache" in message
    assert "only 8.00 GiB of 79.00 GiB is free" in message
    assert not any(event.startswith("/wake_up") for event in events)  # the server was spared


def test_a_sync_into_a_sleeping_server_checks_each_part_as_it_wakes(
    stub: VLLMStub, events: list[str], tmp_path: Path
) -> None:
    """Once the weights are back, only the KV cache's share must still be free."""

    class Shrinking(CudaRecorder):
        def mem_get_info(self) -> tuple[int, int]:
            woken = "/wake_up?tags=weights" in self.events
            super().mem_get_info()
            return (10 - 8 * woken) * GIB, self.total

    memory = ColocatedMemory(
        Shrinking(events, 0), weights_bytes=8 * GIB, kv_bytes=GIB, margin_bytes=GIB // 2
    )
    engine = _engine(stub.url, tmp_path, sleep_level=1, before_wake=memory.check_wake)
    try:
        engine.sleep()
        engine.load_weights(_weights(), version=1)
    finally:
        engine.close()
    assert events[-1] == "/wake_up?tags=kv_cache" and engine.weight_version == 1
    with pytest.raises(WakeMemoryError, match=r"needs 9\.00 GiB"):
        memory.check_wake()  # everything at once would not have fitted in the 2 GiB left


class Card(CudaRecorder):
    """One GPU shared by a learner and a server whose footprint follows its ``/sleep`` and
    ``/wake_up`` calls (as the stand-in server recorded them)."""

    def __init__(self, events: list[str], *, learner: int, awake: int, asleep: int) -> None:
        super().__init__(events, free=0)
        self.learner, self.awake, self.asleep = learner, awake, asleep

    def mem_get_info(self) -> tuple[int, int]:
        super().mem_get_info()
        calls = [e for e in self.events if e.startswith(("/sleep", "/wake_up"))]
        server = self.asleep if calls and calls[-1].startswith("/sleep") else self.awake
        return self.total - self.learner - server, self.total


@pytest.mark.parametrize(
    ("asleep_gib", "fits"),
    [(12.0, True), (3.0, False)],
    ids=["keeps-more-than-estimated", "releases-as-estimated"],
)
def test_the_wake_is_checked_against_what_the_server_released(
    stub: VLLMStub, events: list[str], tmp_path: Path, asleep_gib: float, fits: bool
) -> None:
    """The estimate says a wake takes 22.70 GiB; the server is measured instead.

    A server of 25 GiB that keeps 12 GiB asleep released 13 GiB: with 15 GiB free after the
    update the wake fits (13 + 1 margin), which the estimate would have refused. One that
    keeps 3 GiB released 22 GiB: 15 GiB free cannot take it back, and the error says what was
    measured.
    """
    card = Card(events, learner=30 * GIB, awake=25 * GIB, asleep=int(asleep_gib * GIB))
    memory = ColocatedMemory(
        card, weights_bytes=int(7.5 * GIB), kv_bytes=int(15.2 * GIB), margin_bytes=GIB
    )
    engine = _engine(stub.url, tmp_path, sleep_level=1, before_wake=memory.check_wake)
    try:
        sleep_measured(engine, memory)
        assert memory.released_bytes == 25 * GIB - int(asleep_gib * GIB)
        card.learner = card.total - card.asleep - 15 * GIB  # what the update left: 15 GiB free
        if fits:
            engine.wake_up()
            assert events[-1] == "/wake_up"
        else:
            with pytest.raises(WakeMemoryError, match=r"needs 22\.00 GiB .*released 22\.00 GiB"):
                engine.wake_up()
            assert not any(event.startswith("/wake_up") for event in events)
    finally:
        engine.close()


def test_an_engine_already_asleep_keeps_the_last_measurement(
    stub: VLLMStub, events: list[str], tmp_path: Path
) -> None:
    card = Card(events, learner=30 * GIB, awake=25 * GIB, asleep=5 * GIB)
    memory = ColocatedMemory(card, weights_bytes=GIB, kv_bytes=GIB)
    engine = _engine(stub.url, tmp_path, sleep_level=1)
    try:
        sleep_measured(engine, memory)
        sleep_measured(engine, memory)  # asleep already: no /sleep, nothing new measured
    finally:
        engine.close()
    assert [e for e in events if e.startswith("/sleep")] == ["/sleep?level=1"]
    assert memory.released_bytes == 20 * GIB
    assert memory.wake_bytes(["weights"]) == GIB and memory.wake_bytes(["kv_cache"]) == 19 * GIB


def test_release_empties_the_cache_and_offloads_the_optimizer(events: list[str]) -> None:
    layer = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(layer.parameters(), lr=1e-3)
    layer(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    ColocatedMemory(CudaRecorder(events, GIB), weights_bytes=0, kv_bytes=0).release([optimizer])
    assert events == ["empty_cache"]  # no offload unless asked
    offload = ColocatedMemory(
        CudaRecorder(events, GIB), weights_bytes=0, kv_bytes=0, offload_optimizer=True
    )
    offload.restore([optimizer], "meta")  # "the GPU" here: meta, a device without data
    for state in optimizer.state.values():  # every tensor of the state moved, step included
        assert {value.device.type for value in state.values()} == {"meta"}


def test_a_declined_prefix_cache_reset_is_retried(events: list[str], tmp_path: Path) -> None:
    server = VLLMStub(events, declines=1)
    engine = _engine(server.url, tmp_path)
    try:
        engine.load_weights(_weights(), version=3)
    finally:
        engine.close()
        server.close()
    assert events.count("/reset_prefix_cache") == 2
    assert engine.weight_version == 3 and events[-1] == "/resume"


def test_a_reset_declined_every_time_stops_the_sync(events: list[str], tmp_path: Path) -> None:
    """vLLM's HTTP 200 ``{"success": false}``: the KV of the old weights would be reused."""
    server = VLLMStub(events, declines=10)
    engine = _engine(server.url, tmp_path)
    try:
        with pytest.raises(PrefixCacheResetError, match="success: false 3 times"):
            engine.load_weights(_weights(), version=3)
    finally:
        engine.close()
        server.close()
    assert events.count("/reset_prefix_cache") == vllm_server.RESET_ATTEMPTS == 3
    assert "/update_weight_version" not in events  # the version is not published
    assert engine.weight_version is None and events[-1] == "/resume"


def test_neutral_generation_settings_reach_the_server(stub: VLLMStub, tmp_path: Path) -> None:
    """Not the model's generation_config.json (Qwen2.5-Instruct: repetition_penalty 1.05)."""
    engine = _engine(stub.url, tmp_path)
    try:
        engine.generate([GenerationRequest([1, 2, 3], seed=0)], BatchSampling(1.0, 1.0, 0, 4))
    finally:
        engine.close()
    (body,) = stub.bodies
    assert body["repetition_penalty"] == 1.0 and body["min_p"] == 0.0
    assert body["presence_penalty"] == 0.0 and body["frequency_penalty"] == 0.0
    command = VLLMServer("some/model", python=sys.executable).command()
    at = command.index("--generation-config")
    assert command[at + 1] == "vllm"


@pytest.mark.parametrize("truncation", ["sampling.top_k=100", "sampling.top_p=0.99"])
def test_sequence_level_correction_with_truncated_sampling_is_refused(truncation: str) -> None:
    with pytest.raises(ValueError, match=r"is_level: sequence with sampling\.top_k"):
        load_config(None, ["correction.is_level=sequence", truncation])
    token = load_config(None, ["correction.is_level=token", truncation])
    assert token.correction.is_level == "token"
    sequence = load_config(None, ["correction.is_level=sequence"])
    assert sequence.correction.is_level == "sequence"


def test_importance_weight_outliers_are_masked_by_default() -> None:
    cfg = load_config(None, [])
    # rollouts sample what the learner computes
    assert (cfg.sampling.top_k, cfg.sampling.top_p) == (0, 1.0)
    log_ratio = np.log([0.1, 0.5, 1.0, 4.0, 10.0])
    result = correct(
        [log_ratio.tolist()],
        [[0.0] * 5],
        cap=cfg.correction.tis_cap,
        mask_low=cfg.correction.is_mask_low,
        mask_high=cfg.correction.is_mask_high,
    )
    assert result.weights[0] == pytest.approx([0.0, 0.5, 1.0, 2.0, 0.0])
    assert result.metrics["train/is_masked_frac"] == pytest.approx(2 / 5)


def test_fused_adamw_is_chosen_under_fsdp2_on_gloo() -> None:
    """Before, only one process on a GPU got the fused kernel; FSDP2 ranks got the multi-tensor
    one, whose temporaries are as large as the weights each rank steps."""
    from benchmarks.shaped_model import build_shaped_model
    from strategic_arena.train.dist import DistInfo, shard
    from strategic_arena.train.memory import ModelShape

    shape = ModelShape(32, 64, 2, 4, 2, 8, 64, True)
    cfg = load_config(None, ["ppo.lr=1e-3", "ppo.grad_clip=0", "ppo.micro_batch_size=2"])
    turns = _random_turns(shape.vocab, rows=4, prompt=6, response=5)
    plain = build_shaped_model(shape, device="cpu", dtype=torch.float32, seed=3)
    dist = torch.distributed
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{vllm_server.free_port()}", rank=0, world_size=1
    )
    try:
        sharded = shard(
            build_shaped_model(shape, device="cpu", dtype=torch.float32, seed=3), DistInfo()
        )
        results = []
        for model in (plain, sharded):
            learner = learner_for(cfg, model, pad_id=0)
            assert learner.optimizer.defaults["fused"] is True
            learner.update(turns, np.random.default_rng(0))
            results.append(
                {
                    n: getattr(p, "full_tensor", lambda p=p: p)().detach()
                    for n, p in model.named_parameters()
                }
            )
    finally:
        dist.destroy_process_group()
    for name, value in results[0].items():
        torch.testing.assert_close(results[1][name], value, rtol=1e-5, atol=1e-6)
    assert not torch.equal(results[0]["model.norm.weight"], torch.ones(shape.hidden))  # it moved


def _per_row_reference(logits: Any, targets: Any, temperature: float) -> tuple[Any, Any]:
    """The old computation: a full-vocabulary float32 softmax per row, kept for backward."""
    rows, entropies = [], []
    for row in range(logits.shape[0]):
        scaled = logits[row].float() / temperature
        normalizer = torch.logsumexp(scaled, dim=-1)
        rows.append(scaled.gather(-1, targets[row][:, None])[:, 0] - normalizer)
        entropies.append(normalizer - (torch.softmax(scaled, dim=-1) * scaled).sum(-1))
    return torch.stack(rows), torch.stack(entropies)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("positions", [1, 3, 10, 1000])
def test_chunked_logprobs_and_entropy_equal_the_per_row_softmax(dtype: Any, positions: int) -> None:
    from strategic_arena.train.policy.learner import token_logprobs_and_entropy

    generator = torch.Generator().manual_seed(positions)
    base = (3 * torch.randn(3, 7, 11, generator=generator)).to(dtype)
    targets = torch.randint(0, 11, (3, 7), generator=generator)
    mix = torch.randn(2, 3, 7, generator=generator)  # a loss using both outputs
    outputs, grads = [], []
    for chunked in (False, True):
        logits = base.clone().requires_grad_(True)
        saved: list[tuple[Any, tuple[int, ...]]] = []

        def pack(tensor: Any, saved: list[tuple[Any, tuple[int, ...]]] = saved) -> Any:
            saved.append((tensor.dtype, tuple(tensor.shape)))
            return tensor

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            if chunked:
                logprob, entropy = token_logprobs_and_entropy(
                    logits, targets, 0.7, entropy=True, chunk_bytes=4 * 11 * positions
                )
            else:
                logprob, entropy = _per_row_reference(logits, targets, 0.7)
        assert entropy is not None
        ((logprob * mix[0]).sum() + (entropy * mix[1]).sum()).backward()
        outputs.append((logprob.detach(), entropy.detach()))
        grads.append(logits.grad)
        kept_fp32 = [shape for kind, shape in saved if kind == torch.float32 and shape[-1] == 11]
        if chunked:  # only the logits themselves wait for the backward pass
            assert kept_fp32 == [] or dtype == torch.float32
            assert all(shape[0] <= positions for _, shape in saved if shape[-1:] == (11,))
        else:
            assert kept_fp32  # the old way kept a float32 (positions, vocabulary) tensor per row
    for before, after in zip(outputs[0], outputs[1], strict=True):
        torch.testing.assert_close(after, before, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-5, atol=1e-6)


def test_the_disk_sync_folder_is_sized_for_bf16_pushes(tmp_path: Path) -> None:
    """On a GPU the weights travel in bf16: 2 bytes a parameter (the recipes said 16 GB)."""
    from strategic_arena.train.engines.placement import sync_dir_problems
    from strategic_arena.train.memory import KNOWN_SHAPES, ModelShape

    cfg = load_config(None, ["rollout.engine=vllm", f"vllm.weight_sync_dir={tmp_path / 'sync'}"])
    huge = ModelShape(65536, 1, 1, 1, 1, 1, 10**9, True)
    (problem,) = sync_dir_problems(cfg.rollout, cfg.vllm, cfg.precision, huge, gpu=True)
    assert f"{huge.parameters:,} parameters x 2 bytes" in problem
    recipe = Path(__file__).resolve().parents[2] / "configs" / "gpu1_qwen3_4b_colocated.yaml"
    assert "/dev/shm needs 8 GB free (bf16 weights)" in recipe.read_text(encoding="utf-8")
    assert 2 * KNOWN_SHAPES["Qwen/Qwen3-4B"].parameters / 1e9 == pytest.approx(8.04, abs=0.01)
