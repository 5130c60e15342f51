"""An httpx transport for many small requests to one endpoint: HTTP/1.1 over asyncio streams.

The arena posts one small JSON request per move, up to ``--concurrency`` at once, to one
origin. httpx's default transport (httpcore over anyio) spends more CPU on each of them than
the rest of the arena's work per move, and more the more connections it holds: every request
scans the whole pool and probes each idle connection's socket. :class:`KeepAliveTransport`
does the same job in a few dozen Python calls per request:

1. **a connection**: the most recently used idle connection to the request's origin (a stack
   per origin, so a burst reuses warm connections), skipping those the server has closed or
   that sat idle longer than ``keepalive_expiry``; else a new one (TLS with httpx's default
   SSL context for ``https``), within the request's ``connect`` timeout;
2. **the request**: the request line, the headers exactly as httpx built them and the body, in
   one write;
3. **the head**: the status line and headers, at most ``max_header_bytes`` together (a flood
   of headers, a line without an end, a malformed status line or header: a
   ``RemoteProtocolError``); ``1xx`` interim responses are skipped;
4. **the body**, streamed in chunks of at most 64 KiB as the caller reads it: by
   ``Content-Length``, by chunked framing (each size line and the trailers within
   ``max_header_bytes``; a bad size or a missing CRLF is a ``RemoteProtocolError``) or, with
   neither, up to the end of the connection. The connection goes back to the stack only when
   its body was read to the end and neither side asked to close it.

Every read waits at most the request's ``read`` timeout (``ReadTimeout``), and every failure
is one of httpx's own exceptions (``ConnectError``, ``ConnectTimeout``, ``WriteError``,
``ReadError``, ``ReadTimeout``, ``RemoteProtocolError``), as with httpx's transport: callers
catch the same things. The body is handed over as sent (no decoding: ``Content-Encoding`` is
the caller's to undo, within its own cap). Redirects and cookies are the client's business,
as always in httpx.

This module imports httpx (extra ``[arena]``): import it only where a client is built.

Not here: proxies and HTTP/2. :func:`transport_for` returns ``None`` -- httpx's own transport
-- for a URL that an environment proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, not
bypassed by ``NO_PROXY``) applies to.
"""

from __future__ import annotations

import asyncio
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import httpx

#: Largest body piece handed over at once.
_CHUNK = 64 * 1024

#: The longest status line plus headers (and the longest chunk-size line plus trailers).
DEFAULT_MAX_HEADER_BYTES = 64 * 1024

#: Seconds an idle connection is kept (servers close theirs after 5 s or more: uvicorn's 5).
DEFAULT_KEEPALIVE_EXPIRY = 4.0

#: Idle connections kept per origin.
DEFAULT_MAX_IDLE = 256

_NO_BODY_STATUS = frozenset({204, 304})
_HEX = frozenset(b"0123456789abcdefABCDEF")

Origin = tuple[str, str, int]


def transport_for(url: str, **options: Any) -> KeepAliveTransport | None:
    """A :class:`KeepAliveTransport` for requests to ``url``, or ``None`` if a proxy applies.

    ``None`` tells the caller to build its httpx client without a transport, so httpx's own
    transport and its environment proxies serve it. ``options`` go to the transport.
    """
    parsed = httpx.URL(url)
    proxies = urllib.request.getproxies()
    if (parsed.scheme in proxies or "all" in proxies) and not urllib.request.proxy_bypass(
        parsed.host
    ):
        return None
    return KeepAliveTransport(**options)


class _Connection:
    """One HTTP/1.1 connection: its streams, when it went idle, and a read deadline flag."""

    __slots__ = ("idle_since", "reader", "timed_out", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0
        self.timed_out = False

    def usable(self, now: float, expiry: float) -> bool:
        """Whether it can carry another request: open, nothing unread, not idle too long."""
        return (
            now - self.idle_since < expiry
            and not self.reader.at_eof()
            and not self.writer.is_closing()
            and not self.reader._buffer  # type: ignore[attr-defined]  # bytes nobody asked for
        )

    def close(self) -> None:
        """Drop the connection at once (no goodbye: there is nothing left to say)."""
        self.writer.transport.abort()

    async def read(self, what: Any, timeout: float | None) -> Any:
        """Await ``what`` (a read of this connection) within ``timeout`` seconds.

        The deadline aborts the connection (a timer, cheaper than a task per read); the read
        then fails and :attr:`timed_out` says why.
        """
        if timeout is None:
            return await what
        timer = asyncio.get_running_loop().call_later(timeout, self._expire)
        try:
            return await what
        finally:
            timer.cancel()

    def _expire(self) -> None:
        self.timed_out = True
        self.close()


class KeepAliveTransport(httpx.AsyncBaseTransport):
    """An ``httpx.AsyncBaseTransport``: HTTP/1.1 with a stack of keep-alive connections per origin.

    Args:
        max_header_bytes: the cap on a response's status line and headers (and on a chunk-size
            line and the trailers).
        keepalive_expiry: seconds an idle connection is kept.
        max_idle: idle connections kept per origin.
    """

    def __init__(
        self,
        *,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
        keepalive_expiry: float = DEFAULT_KEEPALIVE_EXPIRY,
        max_idle: int = DEFAULT_MAX_IDLE,
    ) -> None:
        self.max_header_bytes = max_header_bytes
        self.keepalive_expiry = keepalive_expiry
        self.max_idle = max_idle
        self._idle: dict[Origin, list[_Connection]] = {}
        self._ssl: ssl.SSLContext | None = None

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return its response, the body still to be read."""
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"unsupported scheme {url.scheme!r}", request=request)
        origin: Origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        timeouts = request.extensions.get("timeout", {})
        read_timeout = timeouts.get("read")
        connection = self._reusable(origin) or await self._connect(
            origin, timeouts.get("connect"), request
        )
        head = [b"%s %s HTTP/1.1\r\n" % (request.method.encode("ascii"), url.raw_path)]
        head += [b"%s: %s\r\n" % pair for pair in request.headers.raw]
        head.append(b"\r\n")
        try:
            connection.writer.write(b"".join(head) + await request.aread())
        except (OSError, RuntimeError) as error:
            connection.close()
            raise httpx.WriteError(_said(error), request=request) from None
        try:
            status, reason, headers = await self._head(connection, read_timeout)
            stream = _Body(self, origin, connection, request, headers, status, read_timeout)
        except BaseException as error:
            connection.close()
            raise self._failure(error, connection, request) from None
        return httpx.Response(
            status,
            headers=headers,
            stream=stream,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason},
        )

    def _reusable(self, origin: Origin) -> _Connection | None:
        """The most recently used live idle connection to ``origin``; dead ones are closed."""
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if connection.usable(now, self.keepalive_expiry):
                return connection
            connection.close()
        return None

    def release(self, origin: Origin, connection: _Connection) -> None:
        """Put a connection whose response was read to the end back on its origin's stack."""
        idle = self._idle.setdefault(origin, [])
        now = time.monotonic()
        if idle and now - idle[0].idle_since >= self.keepalive_expiry:  # the oldest first
            idle.pop(0).close()
        if len(idle) >= self.max_idle:
            connection.close()
            return
        connection.idle_since = now
        idle.append(connection)

    async def _connect(
        self, origin: Origin, timeout: float | None, request: httpx.Request
    ) -> _Connection:
        scheme, host, port = origin
        context = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = httpx.create_ssl_context()
            context = self._ssl
        opening = asyncio.open_connection(
            host,
            port,
            ssl=context,
            server_hostname=host if context is not None else None,
            limit=self.max_header_bytes,
        )
        try:
            reader, writer = await asyncio.wait_for(opening, timeout)
        except asyncio.TimeoutError:
            raise httpx.ConnectTimeout(
                f"no connection within {timeout} s", request=request
            ) from None
        except (OSError, ssl.SSLError) as error:
            raise httpx.ConnectError(_said(error), request=request) from None
        return _Connection(reader, writer)

    async def _head(
        self, connection: _Connection, timeout: float | None
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        """The status, reason and headers of the response (after any ``1xx``)."""
        while True:
            block = await connection.read(connection.reader.readuntil(b"\r\n\r\n"), timeout)
            if len(block) > self.max_header_bytes:
                raise _Broken("the response's headers are too long")
            lines = block[:-4].split(b"\r\n")
            status, reason = _status_line(lines[0])
            headers = [_header(line) for line in lines[1:]]
            if not 100 <= status < 200 or status == 101:
                return status, reason, headers

    def _failure(
        self, error: BaseException, connection: _Connection, request: httpx.Request
    ) -> BaseException:
        """The httpx exception for a failed read of ``connection`` (others pass unchanged)."""
        if connection.timed_out:
            return httpx.ReadTimeout("no data within the read timeout", request=request)
        if isinstance(error, _Broken):
            return httpx.RemoteProtocolError(str(error), request=request)
        if isinstance(error, asyncio.LimitOverrunError):
            message = f"a header or size line longer than {self.max_header_bytes} bytes"
            return httpx.RemoteProtocolError(message, request=request)
        if isinstance(error, asyncio.IncompleteReadError):
            message = "the server closed the connection mid-response"
            return httpx.RemoteProtocolError(message, request=request)
        if isinstance(error, (OSError, ValueError)):
            return httpx.ReadError(_said(error), request=request)
        return error  # ours already, or a cancellation: passed on as it is


class _Broken(Exception):
    """The server broke HTTP/1.1 (its message says how)."""


def _said(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _status_line(line: bytes) -> tuple[int, bytes]:
    """``(status, reason)`` of ``HTTP/1.x NNN reason``."""
    parts = line.split(b" ", 2)
    if len(parts) < 2 or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0"):
        raise _Broken(f"not an HTTP/1.1 status line: {line[:60]!r}")
    code = parts[1]
    if len(code) != 3 or not code.isdigit():
        raise _Broken(f"bad status code: {code[:10]!r}")
    return int(code), parts[2] if len(parts) == 3 else b""


def _header(line: bytes) -> tuple[bytes, bytes]:
    """``(name, value)`` of ``name: value`` (no folding, no space before the colon)."""
    name, colon, value = line.partition(b":")
    if not colon or not name or name != name.strip() or b" " in name or b"\t" in name:
        raise _Broken(f"malformed header line: {line[:60]!r}")
    return name, value.strip(b" \t")


def _wants_close(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(
        name.lower() == b"connection" and b"close" in value.lower() for name, value in headers
    )


class _Body(httpx.AsyncByteStream):
    """A response body, read from the connection as the caller asks for it."""

    def __init__(
        self,
        transport: KeepAliveTransport,
        origin: Origin,
        connection: _Connection,
        request: httpx.Request,
        headers: list[tuple[bytes, bytes]],
        status: int,
        timeout: float | None,
    ) -> None:
        self._transport = transport
        self._origin = origin
        self._connection: _Connection | None = connection
        self._request = request
        self._timeout = timeout
        self._length: int | None = None
        self._chunked = False
        self._reusable = not _wants_close(headers) and not _wants_close(request.headers.raw)
        for name, value in headers:
            lowered = name.lower()
            if lowered == b"transfer-encoding":
                self._chunked = value.strip().lower() == b"chunked"
                if not self._chunked:  # some other coding: only the end of the connection ends it
                    self._reusable = False
            elif lowered == b"content-length":
                if not value.isdigit() or (self._length is not None and self._length != int(value)):
                    raise _Broken(f"bad Content-Length: {value[:30]!r}")
                self._length = int(value)
        if status in _NO_BODY_STATUS or request.method == "HEAD":
            self._chunked, self._length = False, 0
        elif self._chunked:
            self._length = None
        elif self._length is None:  # read to the end of the connection
            self._reusable = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            return
        try:
            if self._chunked:
                async for piece in self._chunks(connection):
                    yield piece
            elif self._length is not None:
                left = self._length
                while left:
                    piece = await connection.read(
                        connection.reader.read(min(left, _CHUNK)), self._timeout
                    )
                    if not piece:
                        raise asyncio.IncompleteReadError(b"", left)
                    left -= len(piece)
                    yield piece
            else:
                while piece := await connection.read(connection.reader.read(_CHUNK), self._timeout):
                    yield piece
        except BaseException as error:
            self._connection = None
            connection.close()
            raise self._transport._failure(error, connection, self._request) from None
        self._connection = None
        if self._reusable:
            self._transport.release(self._origin, connection)
        else:
            connection.close()

    async def _chunks(self, connection: _Connection) -> AsyncIterator[bytes]:
        """The data of a chunked body; the trailers are read and dropped."""
        reader, timeout = connection.reader, self._timeout
        while True:
            line = await connection.read(reader.readuntil(b"\r\n"), timeout)
            size_text = line[:-2].split(b";", 1)[0].strip()
            if not size_text or len(size_text) > 16 or not set(size_text) <= _HEX:
                raise _Broken(f"bad chunk size line: {line[:40]!r}")
            left = int(size_text, 16)
            if left == 0:
                break
            while left:
                piece = await connection.read(reader.read(min(left, _CHUNK)), timeout)
                if not piece:
                    raise asyncio.IncompleteReadError(b"", left)
                left -= len(piece)
                yield piece
            if await connection.read(reader.readexactly(2), timeout) != b"\r\n":
                raise _Broken("a chunk does not end with CRLF")
        trailers = 0
        while (line := await connection.read(reader.readuntil(b"\r\n"), timeout)) != b"\r\n":
            trailers += len(line)
            if trailers > self._transport.max_header_bytes:
                raise _Broken("the trailers are too long")

    async def aclose(self) -> None:
        """Close the connection if the body was not read to the end (it cannot be reused)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
