"""Reading a reply within a cap: decoding, the cap on decoded bytes, the JSON value count."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import AsyncIterator

import pytest

from strategic_arena.http_body import (
    BadEncoding,
    ReplyTooLarge,
    max_json_values,
    parse_json,
    read_body,
)

TEXT = json.dumps({"choices": [{"message": {"content": "héllo " * 5000}}]}).encode()


async def chunks(data: bytes, size: int = 1000) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def read(data: bytes, encoding: str, limit: int) -> bytes:
    return asyncio.run(read_body(chunks(data), encoding, limit))


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("encoding", "packed"),
    [
        ("", TEXT),
        ("identity", TEXT),
        ("gzip", gzip.compress(TEXT)),
        ("GZIP ", gzip.compress(TEXT)),
        ("gzip", gzip.compress(TEXT[:100]) + gzip.compress(TEXT[100:])),  # two members
        ("deflate", zlib.compress(TEXT)),
        ("deflate", raw_deflate(TEXT)),  # some servers send deflate without the zlib header
    ],
)
def test_every_encoding_asked_for_decodes_exactly(encoding: str, packed: bytes) -> None:
    assert read(packed, encoding, len(TEXT)) == TEXT


@pytest.mark.parametrize("encoding", ["", "gzip", "deflate"])
def test_one_byte_over_the_cap_is_refused(encoding: str) -> None:
    packed = {"": TEXT, "gzip": gzip.compress(TEXT), "deflate": zlib.compress(TEXT)}[encoding]
    with pytest.raises(ReplyTooLarge):
        read(packed, encoding, len(TEXT) - 1)


def test_a_bomb_stops_at_the_cap() -> None:
    # 64 MiB of zeros in ~64 KiB: the cap (1 MiB) is hit in the first chunks.
    bomb = gzip.compress(bytes(64 * 1024 * 1024), compresslevel=9)
    with pytest.raises(ReplyTooLarge):
        read(bomb, "gzip", 1024 * 1024)


@pytest.mark.parametrize("encoding", ["br", "zstd", "gzip, gzip", "compress"])
def test_encodings_not_asked_for_are_refused(encoding: str) -> None:
    with pytest.raises(BadEncoding):
        read(TEXT, encoding, len(TEXT))


def test_data_that_does_not_decode_is_refused() -> None:
    with pytest.raises(BadEncoding, match="gzip data does not decode"):
        read(b"not gzip at all", "gzip", 1000)


def test_json_with_too_many_values_is_refused_before_parsing() -> None:
    limit = 64 * 1024
    allowed = max_json_values(limit)
    many = b"[" + b"[]," * allowed + b"[]]"
    with pytest.raises(ReplyTooLarge, match="JSON values"):
        parse_json(many, limit)
    # Separators inside strings are not values: a long reasoning with commas is fine.
    text = json.dumps({"content": "a, b: [c] {d}" * allowed}).encode()
    assert parse_json(text, len(text)) == json.loads(text)
