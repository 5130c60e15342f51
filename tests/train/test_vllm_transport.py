"""The rollout client's transport: the keep-alive one, unless an environment proxy applies."""

from __future__ import annotations

import pytest

pytest.importorskip("httpx")

from strategic_arena.http_transport import KeepAliveTransport
from strategic_arena.train.engines.vllm_engine import keep_alive

URLS = ["http://127.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]


@pytest.fixture(autouse=True)
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_servers_without_a_proxy_get_the_keep_alive_transport() -> None:
    assert isinstance(keep_alive(URLS), KeepAliveTransport)


def test_a_proxy_for_any_server_leaves_httpx_its_own_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert keep_alive(URLS[:1]) is not None  # bypassed
    assert keep_alive(URLS) is None  # the second server goes through the proxy


async def _client_transport() -> object:
    from strategic_arena.train.engines.vllm_engine import VLLMServerEngine

    engine = VLLMServerEngine(URLS, "m", [0])
    try:
        return engine._client()._transport
    finally:
        await engine.aclose()


def test_the_engine_client_posts_through_it() -> None:
    import asyncio

    assert isinstance(asyncio.run(_client_transport()), KeepAliveTransport)
