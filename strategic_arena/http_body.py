"""An endpoint's reply body, read with a cap on its size that no server can get around.

An endpoint decides how many bytes it sends, and with ``Content-Encoding: gzip`` how many
bytes those become: 3 MB of gzip are 3 GB of zeros. So a body is read here, never whole:

1. the raw bytes arrive in the transport's chunks (64 KiB at most);
2. each chunk is decoded -- ``gzip``, ``deflate`` or none, the only encodings asked for in
   ``Accept-Encoding`` -- by :mod:`zlib` with ``max_length`` set, 64 KiB at a time and never
   past what is left of the cap;
3. the decoded bytes are counted against ``limit``; the first byte over it stops the read with
   :class:`ReplyTooLarge` (the connection is closed, the rest is never read).

An endless chunked reply, a gzip bomb and a ``Content-Length`` of 1 TB thus all cost at most
``limit`` bytes of memory. The JSON parse that follows can cost more than the bytes it reads
(``[[],[],...]`` is some 24 bytes of Python objects per 3 bytes of text), so
:func:`parse_json` refuses a body with more JSON values than :func:`max_json_values` allows
before parsing it: a reply in flight holds at most ``limit`` bytes and about as much again
in parsed values.

``limit`` is ``--max-reply-bytes`` (:data:`DEFAULT_MAX_REPLY_BYTES`): far above any real
completion (128k tokens of text are under 1 MiB of JSON), far below what would hurt a machine
running ``--concurrency`` games at once.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import AsyncIterable
from typing import Any

from strategic_arena.door import decode

#: The cap on an endpoint's reply, in decoded bytes (``--max-reply-bytes``).
DEFAULT_MAX_REPLY_BYTES = 4 * 1024 * 1024

#: What ``Accept-Encoding`` asks for: the encodings :class:`Decoder` can bound.
ACCEPT_ENCODING = "gzip, deflate"

#: The largest piece :class:`Decoder` inflates at once.
_PIECE = 64 * 1024

#: A JSON string (escapes included); what :func:`parse_json` does not count values in.
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)


class ReplyTooLarge(Exception):
    """The reply is bigger than the cap: the endpoint's failure (its message says so)."""


class BadEncoding(Exception):
    """The reply's ``Content-Encoding`` is not one asked for, or its data does not decode."""


class Decoder:
    """Decodes one body's content encoding, never producing more than it is allowed to.

    Args:
        encoding: the ``Content-Encoding`` header (``""`` or ``identity``: none).

    Raises:
        BadEncoding: an encoding other than ``gzip``/``deflate``, or more than one.
    """

    def __init__(self, encoding: str) -> None:
        names = [name.strip().lower() for name in encoding.split(",")]
        names = [name for name in names if name not in ("", "identity")]
        if len(names) > 1 or (names and names[0] not in ("gzip", "x-gzip", "deflate")):
            raise BadEncoding(f"content encoding {encoding[:60]!r} was not asked for")
        self._kind = names[0] if names else ""
        self._zlib: Any = self._new()
        self._started = False

    def _new(self) -> Any:
        if self._kind in ("gzip", "x-gzip"):
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        if self._kind == "deflate":  # a zlib stream; raw deflate is tried if it is not one
            return zlib.decompressobj(zlib.MAX_WBITS)
        return None

    def feed(self, data: bytes, room: int) -> list[bytes]:
        """The decoded bytes of ``data``, in pieces of at most 64 KiB.

        Small pieces, joined once at the end: growing one buffer to the cap would hold two
        copies at each reallocation, and leave the allocator's heap fragmented.

        Raises:
            ReplyTooLarge: they would be more than ``room``.
            BadEncoding: ``data`` does not decode.
        """
        if self._zlib is None:
            if len(data) > room:
                raise ReplyTooLarge
            return [data]
        pieces: list[bytes] = []
        produced = 0
        while data:
            try:
                # max_length: zlib stops there, so even a bomb inflates at most a piece at a
                # time; what it has not read yet waits in unconsumed_tail.
                piece = self._zlib.decompress(data, min(room - produced + 1, _PIECE))
            except zlib.error as error:
                if self._kind == "deflate" and not self._started:  # raw deflate, no header
                    self._zlib, self._started = zlib.decompressobj(-zlib.MAX_WBITS), True
                    continue
                raise BadEncoding(f"{self._kind} data does not decode ({error})") from None
            self._started = True
            produced += len(piece)
            if produced > room:
                pieces.clear()  # not kept alive by the traceback (see read_body)
                raise ReplyTooLarge
            pieces.append(piece)
            if self._zlib.eof:
                data = self._zlib.unused_data
                if data:  # a second gzip member follows the first
                    self._zlib = self._new()
            else:
                data = self._zlib.unconsumed_tail
        return pieces


async def read_body(raw: AsyncIterable[bytes], encoding: str, limit: int) -> bytes:
    """The decoded body whose raw chunks ``raw`` yields, at most ``limit`` bytes of it.

    Args:
        raw: the body as sent (``httpx.Response.aiter_raw()``: not decoded).
        encoding: the reply's ``Content-Encoding`` header.
        limit: the cap on the decoded body, in bytes.

    Raises:
        ReplyTooLarge: the decoded body is longer than ``limit``; reading stops there.
        BadEncoding: see :class:`Decoder`.
    """
    decoder = Decoder(encoding)
    pieces: list[bytes] = []
    size = 0
    try:
        async for chunk in raw:
            for piece in decoder.feed(chunk, limit - size):
                pieces.append(piece)
                size += len(piece)
    except BaseException:
        # The exception's traceback holds this frame, and asyncio's tasks put tracebacks in
        # reference cycles that live until the next garbage collection: what was read must
        # not live with them (eight bombs in flight kept ~100 MB until a collection). Any
        # exception: a deadline (``asyncio.wait_for``'s cancellation) cuts an endless reply.
        pieces.clear()
        raise
    return b"".join(pieces)


def max_json_values(limit: int) -> int:
    """How many JSON values a body under ``limit`` bytes may hold: one per 32 bytes.

    A completion holds a few dozen; each value costs at most ~72 bytes parsed (an empty
    dict and its pointer), so a reply's parsed values stay within ~2.25 x ``limit``.
    """
    return max(1024, limit // 32)


def parse_json(body: bytes, limit: int) -> object:
    """``json.loads(body)``, refused when the body holds more values than ``limit`` allows.

    Values are counted by their separators (``,``, ``:``) and openers (``[``, ``{``) outside
    strings; the strings are only taken out when the plain count is already too high, so a
    usual reply costs four ``bytes.count`` calls.

    Raises:
        ReplyTooLarge: too many values (see :func:`max_json_values`).
        ValueError: not JSON (``RecursionError`` too: nested past the stack).
    """
    allowed = max_json_values(limit)
    if _values(body) > allowed and _values(_JSON_STRING.sub(b'""', body)) > allowed:
        raise ReplyTooLarge(f"more than {allowed} JSON values")
    # Bounded in size by the count above: only the parser's own stack bounds its depth.
    return decode(body, "the reply", max_depth=None, finite=False)


def _values(body: bytes) -> int:
    """An upper bound on the JSON values in ``body`` (one per separator or opener, plus one)."""
    return 1 + sum(body.count(mark) for mark in (b",", b":", b"[", b"{"))
