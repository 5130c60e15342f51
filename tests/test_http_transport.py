"""KeepAliveTransport against scripted HTTP/1.1 servers: framing, reuse, limits, failures."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

httpx = pytest.importorskip("httpx", reason="the [arena] extra (httpx) is not installed")

from strategic_arena.http_transport import KeepAliveTransport, transport_for  # noqa: E402

Reply = Callable[[bytes], bytes]


async def exchange(
    replies: list[Reply], requests: int = 1, **options: object
) -> tuple[list[object], int]:
    """``requests`` GETs through one client to a server answering each with the next reply.

    Returns each outcome (the body, or the exception raised) and how many connections the
    server accepted.
    """
    queue = list(replies)
    accepted = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        try:
            while queue:
                head = await reader.readuntil(b"\r\n\r\n")
                writer.write(queue.pop(0)(head))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    outcomes: list[object] = []
    transport = KeepAliveTransport(**options)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, timeout=1.0) as client:
        for _ in range(requests):
            try:
                response = await client.get(f"http://127.0.0.1:{port}/v1/x?q=1")
                outcomes.append((response.status_code, response.content))
            except httpx.HTTPError as error:
                outcomes.append(error)
    server.close()
    await server.wait_closed()
    return outcomes, accepted


def run(coroutine: Awaitable[tuple[list[object], int]]) -> tuple[list[object], int]:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def fixed(raw: bytes) -> Reply:
    return lambda head: raw


def test_content_length_bodies_reuse_one_connection() -> None:
    ok = fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
    outcomes, accepted = run(exchange([ok, ok, ok], requests=3))
    assert outcomes == [(200, b"hello")] * 3 and accepted == 1


def test_the_request_line_and_headers_reach_the_server() -> None:
    seen: list[bytes] = []

    def echo(head: bytes) -> bytes:
        seen.append(head)
        return b"HTTP/1.1 204 No Content\r\n\r\n"

    outcomes, _ = run(exchange([echo]))
    assert outcomes == [(204, b"")]
    assert seen[0].startswith(b"GET /v1/x?q=1 HTTP/1.1\r\n")
    assert b"\r\nhost: 127.0.0.1:" in seen[0].lower()


def test_chunked_bodies_with_extensions_and_trailers() -> None:
    body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    body += b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n"
    outcomes, accepted = run(exchange([fixed(body), fixed(body)], requests=2))
    assert outcomes == [(200, b"abcde")] * 2 and accepted == 1


def test_interim_responses_are_skipped() -> None:
    reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    assert run(exchange([fixed(reply)]))[0] == [(200, b"ok")]


def test_connection_close_and_bodies_to_the_end_are_not_reused() -> None:
    closing = fixed(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na")
    outcomes, accepted = run(exchange([closing, closing], requests=2))
    assert outcomes == [(200, b"a")] * 2 and accepted == 2
    to_the_end = fixed(b"HTTP/1.0 200 OK\r\n\r\nrest of the stream")
    outcomes, _ = run(exchange([to_the_end]))
    assert outcomes == [(200, b"rest of the stream")]


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"SPDY/3 200 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
    ],
)
def test_broken_http_is_a_remote_protocol_error(raw: bytes) -> None:
    (outcome,), _ = run(exchange([fixed(raw)]))
    assert isinstance(outcome, httpx.RemoteProtocolError), outcome


def test_a_flood_of_headers_stops_at_the_cap() -> None:
    flood = b"HTTP/1.1 200 OK\r\n" + b"X-Flood: 0123456789\r\n" * 1000 + b"\r\n"
    (outcome,), _ = run(exchange([fixed(flood)], max_header_bytes=4096))
    assert isinstance(outcome, httpx.RemoteProtocolError) and "4096" in str(outcome)


def test_a_silent_server_is_a_read_timeout() -> None:
    async def silent() -> list[object]:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await asyncio.sleep(5)

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with httpx.AsyncClient(transport=KeepAliveTransport(), timeout=0.2) as client:
            try:
                await client.get(f"http://127.0.0.1:{port}/")
                outcome: object = None
            except httpx.HTTPError as error:
                outcome = error
        server.close()
        return [outcome]

    (outcome,) = asyncio.run(silent())
    assert isinstance(outcome, httpx.ReadTimeout)


def test_nothing_listening_is_a_connect_error() -> None:
    async def refused() -> object:
        async with httpx.AsyncClient(transport=KeepAliveTransport()) as client:
            try:
                return await client.get("http://127.0.0.1:9/")
            except httpx.HTTPError as error:
                return error

    assert isinstance(asyncio.run(refused()), httpx.ConnectError)


def test_an_environment_proxy_leaves_the_url_to_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    assert isinstance(transport_for("http://example.com/v1"), KeepAliveTransport)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    assert transport_for("https://example.com/v1") is None
    monkeypatch.setenv("NO_PROXY", "example.com")
    assert isinstance(transport_for("https://example.com/v1"), KeepAliveTransport)
