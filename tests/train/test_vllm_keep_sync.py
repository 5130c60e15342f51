"""Weight syncs of the asynchronous loop against a real HTTP server speaking vLLM's routes.

A stand-in server on 127.0.0.1 answers ``/v1/completions`` and the admin routes as vLLM 0.32
does. A completion request is held open until the test lets it finish, so a weight sync lands
while it is in flight: with ``keep_requests`` the sync pauses with ``mode=keep`` (the request is
not aborted) and the generation records the version it was sent with. A server that refuses
``mode=keep`` (FastAPI's 422, as a vLLM without the mode answers) gets ``mode=wait``, then and
at every later sync.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("httpx")

from strategic_arena.train.engines.engine import BatchSampling, GenerationRequest  # noqa: E402
from strategic_arena.train.engines.vllm_engine import DiskTransport, VLLMServerEngine  # noqa: E402
from tests.train.stub_http import StubServer  # noqa: E402

#: The calls that end every sync: tag the version, schedule again.
PUBLISH = ("/update_weight_version", "/resume")


class KeepServer(StubServer):
    """Completions held until ``release`` is set; admin calls recorded; ``keep`` optional."""

    def __init__(self, *, knows_keep: bool) -> None:
        self.calls: list[str] = []
        self.release = threading.Event()
        self.received = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                status, payload = 200, b""
                if self.path == "/v1/completions":
                    owner.received.set()
                    owner.release.wait(timeout=30)
                    choice = {
                        "token_ids": [5, 6],
                        "logprobs": {"token_logprobs": [-0.5, -0.25]},
                        "finish_reason": "stop",
                    }
                    payload = json.dumps({"choices": [choice]}).encode()
                else:
                    owner.calls.append(self.path)
                    if self.path == "/pause?mode=keep" and not knows_keep:
                        status, payload = 422, b'{"detail": "mode: unknown literal"}'
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(Handler)


def _weights() -> list[tuple[str, Any]]:
    return [("model.embed_tokens.weight", torch.ones(2, 2))]


def _in_flight(engine: VLLMServerEngine) -> tuple[threading.Thread, list[Any]]:
    """One request sent from a thread of its own (as the rollout worker sends them)."""
    out: list[Any] = []

    def send() -> None:
        request = GenerationRequest([1, 2, 3], seed=0, max_new_tokens=4)
        out.append(asyncio.run(engine.agenerate(request, BatchSampling())))

    thread = threading.Thread(target=send)
    thread.start()
    return thread, out


@pytest.mark.parametrize("knows_keep", [True, False])
def test_a_sync_mid_request_keeps_it_and_it_keeps_its_version(
    knows_keep: bool, tmp_path: Path
) -> None:
    server = KeepServer(knows_keep=knows_keep)
    engine = VLLMServerEngine(
        [server.url], "policy", [0], transport=DiskTransport(tmp_path), keep_requests=True
    )
    try:
        engine.load_weights(_weights(), version=0)
        thread, out = _in_flight(engine)
        assert server.received.wait(timeout=30)
        if knows_keep:  # keep: the sync lands while the request waits
            engine.load_weights(_weights(), version=1)
            server.release.set()
        else:  # wait: the server would hold the pause until the request ends
            server.release.set()
            engine.load_weights(_weights(), version=1)
        thread.join(timeout=30)
        engine.load_weights(_weights(), version=2)
    finally:
        server.release.set()
        engine.close()
        server.close()
    generation = out[0]
    assert generation.token_ids == [5, 6]
    assert generation.weight_version == 0  # the version the request was sent with
    assert engine.weight_version == 2
    after = ["/pause?mode=keep"] if knows_keep else ["/pause?mode=wait"]
    pause = after if knows_keep else ["/pause?mode=keep", *after]  # refused once, then wait
    reset = "/reset_prefix_cache" + ("?reset_running_requests=true" if knows_keep else "")
    rest = ["/collective_rpc", reset, *PUBLISH]
    assert server.calls == [*pause, *rest, *after, *rest, *after, *rest]
    assert engine.pause_mode == ("keep" if knows_keep else "wait")


def test_the_synchronous_loop_keeps_the_plain_pause(tmp_path: Path) -> None:
    server = KeepServer(knows_keep=True)
    engine = VLLMServerEngine([server.url], "policy", [0], transport=DiskTransport(tmp_path))
    try:
        engine.load_weights(_weights(), version=3)
    finally:
        engine.close()
        server.close()
    assert server.calls == ["/pause", "/collective_rpc", "/reset_prefix_cache", *PUBLISH]
