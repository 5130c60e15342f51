"""Weight syncs against real HTTP servers that speak vLLM's admin routes (no vLLM needed).

Two stand-in servers on 127.0.0.1 answer ``/pause``, ``/collective_rpc`` (``reload_weights``),
``/reset_prefix_cache``, ``/update_weight_version`` and ``/resume`` as vLLM 0.32 does. Their
reload handlers meet at a two-party barrier: a sync that reloaded the servers one after the
other would leave the first alone at the barrier, which then breaks and fails the request, so
the sync passes only when both reloads are in flight together. Each reload also reads the
safetensors file it was given, which shows the dtype the weights travelled in.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("httpx")

from safetensors import safe_open  # noqa: E402

from strategic_arena.train.engines.vllm_engine import DiskTransport, VLLMServerEngine  # noqa: E402
from strategic_arena.train.engines.vllm_server import VLLMServerError  # noqa: E402
from tests.train.stub_http import StubServer  # noqa: E402


class AdminServer(StubServer):
    """A stand-in for one vLLM server's admin routes; records calls and reloaded dtypes."""

    def __init__(self, barrier: threading.Barrier) -> None:
        self.calls: list[str] = []
        self.dtypes: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                owner.calls.append(self.path)
                status = 200
                if self.path == "/collective_rpc":
                    try:
                        owner.reload(body["kwargs"]["weights_path"], barrier)
                    except threading.BrokenBarrierError:
                        status = 500  # the other server's reload never came
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)

    def reload(self, directory: str, barrier: threading.Barrier) -> None:
        with safe_open(str(Path(directory) / "model.safetensors"), framework="pt") as weights:
            self.dtypes.append({k: str(weights.get_tensor(k).dtype) for k in weights.keys()})  # noqa: SIM118
        barrier.wait()


@pytest.fixture
def servers() -> Iterator[list[AdminServer]]:
    barrier = threading.Barrier(2, timeout=30)
    pair = [AdminServer(barrier), AdminServer(barrier)]
    try:
        yield pair
    finally:
        for server in pair:
            server.close()


def _weights() -> list[tuple[str, Any]]:
    return [
        ("model.embed_tokens.weight", torch.randn(4, 3)),
        ("model.layers.0.mlp.up_proj.weight", torch.randn(3, 3)),
        ("model.rotary.inv_freq_steps", torch.arange(3)),  # integers keep their dtype
    ]


def test_servers_reload_together_in_the_servers_dtype(
    servers: list[AdminServer], tmp_path: Path
) -> None:
    engine = VLLMServerEngine(
        [server.url for server in servers],
        "policy",
        [0],
        transport=DiskTransport(tmp_path),
        weight_dtype=torch.bfloat16,
    )
    try:
        engine.load_weights(_weights(), version=7)
    finally:
        engine.close()
    assert engine.weight_version == 7
    for server in servers:
        assert server.calls == [
            "/pause",
            "/collective_rpc",
            "/reset_prefix_cache",
            "/update_weight_version",
            "/resume",
        ]
        assert server.dtypes == [
            {
                "model.embed_tokens.weight": "torch.bfloat16",
                "model.layers.0.mlp.up_proj.weight": "torch.bfloat16",
                "model.rotary.inv_freq_steps": "torch.int64",
            }
        ]


def test_a_lone_reload_fails_and_the_servers_resume(tmp_path: Path) -> None:
    """The barrier's other party never comes: the failure surfaces; /resume is still sent."""
    lone = AdminServer(threading.Barrier(2, timeout=0.5))
    try:
        engine = VLLMServerEngine([lone.url], "policy", [0], transport=DiskTransport(tmp_path))
        with pytest.raises(VLLMServerError, match="HTTP 500"):
            engine.load_weights(_weights(), version=1)
        engine.close()
        assert lone.calls[-1] == "/resume"
        assert lone.dtypes[0]["model.embed_tokens.weight"] == "torch.float32"  # no weight_dtype
    finally:
        lone.close()
