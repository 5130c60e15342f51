"""Chat backends: an OpenAI-compatible HTTP endpoint, with retries that never kill a run.

:class:`OpenAIBackend` posts chat requests with ``httpx`` (imported lazily: extra ``[arena]``),
reads every reply within a cap on its size (:mod:`strategic_arena.http_body`) and retries what
is worth retrying:

1. HTTP 429: wait ``Retry-After`` when the server sends it, else back off;
2. HTTP 5xx, timeouts, dropped connections, broken HTTP (bad chunked framing, a flood of
   headers: any exception of the transport), malformed JSON, replies over the size cap
   (``--max-reply-bytes``, decoded: a gzip bomb stops at the cap), replies without choices
   and replies with nothing at all (no content, no reasoning, not cut off by the length
   limit): exponential backoff (``backoff_base_s * 2**attempt``, capped at ``backoff_max_s``)
   with full jitter from the backend's own seeded generator;
3. HTTP 408 (request timeout): retried like a 5xx;
4. any other 4xx: no retry (the request itself is wrong): ``error`` is ``refused``; redirects
   are never followed (a 3xx is refused too: the key must not reach another origin).

Each failed attempt is one line in :attr:`ChatResult.failures` (``"429: slow down"``,
``"connection: RemoteProtocolError: ..."``, ``"too large: ..."``): nothing an endpoint sends
raises past :meth:`OpenAIBackend.complete`.

A request may offer tools (``tools`` / ``tool_choice``, the ``tools`` answer style); the calls
of the reply are written after its content in the Hermes text form
(:func:`strategic_arena.tools.tool_calls_text`), so a tool call is a response text like any other.

Every field of a reply is checked and coerced here, at the boundary, so that nothing downstream
(validation, the store, printing) can raise on a hostile value (:func:`read_reply`):

- text (``content``, ``reasoning_content``) must be a string or absent; any other type (a list,
  a number, an object) is the model's malformed answer: :attr:`ChatResult.malformed` says why,
  and the player scores it as an invalid answer (it is not retried: the same model would say it
  again). Lone surrogates become U+FFFD, so every text encodes as UTF-8; the API key, if a
  server echoes it, is masked;
- ``finish_reason`` must be a short string, else it is dropped; token counts must be integers
  in ``[0, 2**31)``, else they count 0;
- ``timeout_s`` is a deadline for the whole request (connect, queue, every byte of the reply),
  not a per-read timeout: a server that trickles its reply is cut at the deadline, recorded as
  a ``timeout`` failure;
- no redirect is followed (a 3xx is a failed attempt), so the key is never sent to another
  origin.

Credentials: the key (``api_key``, else the variable ``api_key_env`` names) goes as a bearer
token to the base URL's origin and nowhere else; with no key, nothing is sent, or the base
URL's own ``user:password`` as HTTP Basic credentials (:func:`credential_headers`). The key is
never stored in a result; :func:`~strategic_arena.door.shown` is how every message, log line,
stored field and published file shows a base URL.

When every attempt fails, :meth:`OpenAIBackend.complete` still returns: a :class:`ChatResult`
with ``error`` set (``timeout`` or ``endpoint``) and every failure listed, so the caller records
it. These are infrastructure errors: the arena scores no game they stop (see
:mod:`strategic_arena.arena.match`). A server that only ever sends empty replies is therefore
reported as failing, not scored as a model that answers nothing. With ``empty_is_answer`` (the
transfer benchmarks) an empty reply the server says the model ended (``finish_reason: stop``)
is the model's answer: a wrong one, never asked again.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import functools
import http.cookiejar
import json
import os
import re
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from strategic_arena._extras import require
from strategic_arena.asking import Asking, Sampling
from strategic_arena.door import decode, endpoint_url, secrets, shown
from strategic_arena.http_body import (
    ACCEPT_ENCODING,
    DEFAULT_MAX_REPLY_BYTES,
    BadEncoding,
    ReplyTooLarge,
    parse_json,
    read_body,
)
from strategic_arena.tools import tool_calls_text

# Re-exported: TokenTrace lived here before it moved to strategic_arena.traces.
from strategic_arena.traces import TokenTrace as TokenTrace

Messages = Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class ChatResult:
    """One chat completion, or why there is none.

    Attributes:
        content: the reply text ("" when every attempt failed), tool calls included as text.
        reasoning: reasoning the server returned separately (``reasoning_content``), if any.
        finish_reason: the server's finish reason (``length`` means cut off).
        prompt_tokens / completion_tokens: the server's usage counts (0 when unknown).
        latency_s: seconds from the first request to the final answer, retries included.
        attempts: requests sent.
        failures: one line per failed attempt (``"429: ..."``, ``"timeout"``...).
        error: ``None`` on success, else ``"timeout"``, ``"endpoint"`` (failed after the
            retries) or ``"refused"`` (an HTTP 4xx other than 408/429: the request itself is
            wrong, so it is not retried).
        trace: token ids and log-probs of the answer, from backends that return them.
        malformed: why the reply's text is not an answer at all (a field of the wrong type),
            if it is not: the model's invalid answer, never retried.
    """

    content: str = ""
    reasoning: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    failures: tuple[str, ...] = ()
    error: str | None = None
    trace: TokenTrace | None = None
    malformed: str | None = None


class ChatBackend(Protocol):
    """Anything that answers chat messages: an HTTP endpoint or the trainer's engine."""

    model: str

    async def complete(
        self,
        messages: Messages,
        *,
        headers: Mapping[str, str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """Answer ``messages`` (``headers`` travel with the request; ``tools`` are offered)."""
        ...


class _Retry(Exception):
    """A failed attempt worth retrying, after at least ``wait_s`` seconds."""

    def __init__(self, reason: str, wait_s: float | None = None, timeout: bool = False) -> None:
        super().__init__(reason)
        self.wait_s = wait_s
        self.timeout = timeout


class _Refused(Exception):
    """The endpoint refused the request itself (a 3xx or a 4xx other than 408/429)."""


#: The most bytes of an error reply read for its message (the message is cut to 200 chars).
_MAX_ERROR_BYTES = 64 * 1024


def credential_headers(base_url: str, api_key: str | None) -> dict[str, str]:
    """The ``Authorization`` header for ``base_url``'s origin, if any.

    The API key as a bearer token; without a key, the base URL's own ``user:password`` as
    HTTP Basic credentials; else nothing (local servers need none). Either goes only to the
    origin it came with: requests never follow a redirect.
    """
    if api_key:
        return {"Authorization": f"Bearer {api_key}"}
    parts = urllib.parse.urlsplit(base_url)
    if parts.username is None and parts.password is None:
        return {}
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@functools.cache
def _tls_context() -> Any:
    """The TLS settings every client shares (building them reads the CA bundle: ~0.1 s)."""
    return require("httpx", "OpenAI-compatible endpoints").create_ssl_context()


def http_client(timeout_s: float, base_url: str | None = None) -> Any:
    """An ``httpx.AsyncClient`` that follows no redirect and keeps no cookie.

    ``Accept-Encoding`` names only what :mod:`strategic_arena.http_body` decodes with a cap.
    A client for one endpoint (``base_url``) sends its requests through
    :class:`strategic_arena.http_transport.KeepAliveTransport` (a few dozen calls per request,
    where httpx's own pool costs more CPU than the rest of a move: ``benchmarks/README.md``),
    unless an environment proxy applies to it: then httpx's own transport, which speaks to it.
    """
    httpx = require("httpx", "OpenAI-compatible endpoints")
    transport = None
    if base_url is not None:
        from strategic_arena.http_transport import transport_for  # imports httpx

        transport = transport_for(base_url)
    return httpx.AsyncClient(
        transport=transport,
        verify=_tls_context(),
        timeout=httpx.Timeout(timeout_s),
        follow_redirects=False,
        cookies=http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[])),
        headers={"Accept-Encoding": ACCEPT_ENCODING, "User-Agent": "strategic-arena"},
    )


@dataclass(frozen=True)
class HttpReply:
    """A reply read within its cap: status, the headers the caller reads, decoded body.

    Attributes:
        status: the HTTP status.
        location: the ``Location`` header (a redirect's target), or "".
        retry_after: the ``Retry-After`` header (a 429's wait), or "".
        body: the decoded body.
    """

    status: int
    location: str
    retry_after: str
    body: bytes


async def exchange(
    client: Any,
    method: str,
    url: str,
    limit: int,
    *,
    headers: Mapping[str, str],
    content: bytes | None = None,
) -> HttpReply:
    """Send one request and read its reply's body, at most ``limit`` decoded bytes of it.

    An error reply (status 300 and up) is read only up to 64 KiB, for its message: an
    oversized one keeps its status and loses its text.

    Raises:
        ReplyTooLarge / BadEncoding: see :func:`strategic_arena.http_body.read_body`.
        httpx.HTTPError and whatever the transport raises: the caller names them.
    """
    async with client.stream(method, url, headers=dict(headers), content=content) as response:
        status = int(response.status_code)
        encoding = response.headers.get("content-encoding", "")
        if status < 300:
            body = await read_body(response.aiter_raw(), encoding, limit)
        else:
            try:
                body = await read_body(response.aiter_raw(), encoding, _MAX_ERROR_BYTES)
            except (ReplyTooLarge, BadEncoding):
                body = b""
        found = response.headers
        return HttpReply(status, found.get("location", ""), found.get("retry-after", ""), body)


def error_message(body: bytes) -> str:
    """The message of an error reply: OpenAI's ``error.message``, else the text, on one line."""
    try:
        payload = decode(body, "the error reply", finite=False)
    except ValueError:
        return _short(body.decode("utf-8", "replace")) or "(no message)"
    found: object = payload
    if isinstance(payload, dict):
        error = payload.get("error")
        found = error.get("message") if isinstance(error, dict) else error
        found = found or payload.get("message") or payload.get("detail") or payload
    return _short(str(found))


def transport_failure(error: BaseException) -> str:
    """A transport exception as one line: ``connection: <kind>: <message>``."""
    text = _short(str(error))
    return f"connection: {type(error).__name__}" + (f": {text}" if text else "")


async def _close_at_loop_end(client: Any) -> AsyncIterator[None]:
    """An async generator that closes ``client`` when it is finalized.

    Started once in the client's event loop, it is closed by the loop's
    ``shutdown_asyncgens()``, which ``asyncio.run`` calls while the loop still runs. Without
    it, a client left open is closed by its finalizer on whatever loop runs when it is
    garbage collected -- the *next* ``asyncio.run``'s -- against sockets of the closed loop,
    which printed a 25-line "Event loop is closed" traceback.
    """
    try:
        yield
    finally:
        if not client.is_closed:
            await client.aclose()


class OpenAIBackend:
    """An OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, ``strategic-arena serve``).

    Args:
        model: the model name sent with each request.
        base_url: the endpoint's base URL (``http://host:port/v1``).
        api_key: the key; when ``None`` it is read from ``api_key_env``.
        api_key_env: environment variable holding the key; ``None``: no key (nor is one sent
            if the variable is unset: local servers need none).
        sampling: sampling settings (:class:`~strategic_arena.asking.Sampling`; its top-k and
            min-p go in the extra body).
        asking: how the model is asked (:class:`~strategic_arena.asking.Asking`); the backend
            sends its request fields (chat template kwargs, extra body: after the sampling's,
            so they win) and its ``response_prefix`` as a final assistant message that the
            server continues (``continue_final_message``: vLLM, SGLang), the reply's content
            being the prefix plus what the model wrote. A model player over this backend asks
            in the same way (:class:`~strategic_arena.players.LLMPlayer`).
        timeout_s: deadline of each request, from connecting to the reply's last byte.
        max_attempts: requests per completion, the first included.
        backoff_base_s / backoff_max_s: exponential backoff bounds.
        seed: seed of the jitter generator.
        max_reply_bytes: the cap on a reply's decoded body (:mod:`strategic_arena.http_body`).
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        sampling: Sampling | None = None,
        asking: Asking | None = None,
        timeout_s: float = 120.0,
        max_attempts: int = 6,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        seed: int | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
        empty_is_answer: bool = False,
    ) -> None:
        if max_attempts < 1 or timeout_s <= 0 or backoff_base_s < 0 or max_reply_bytes < 1:
            raise ValueError(
                "max_attempts >= 1, timeout_s > 0, backoff_base_s >= 0 and max_reply_bytes >= 1 "
                "required"
            )
        self._httpx = require("httpx", "OpenAI-compatible endpoints")
        self.model = model
        self.base_url = base_url
        self.sampling = sampling or Sampling()
        self.asking = asking or Asking()
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.max_reply_bytes = max_reply_bytes
        self.empty_is_answer = empty_is_answer
        self._rng = np.random.default_rng(seed)
        key = api_key or (os.environ.get(api_key_env) if api_key_env else None) or None
        self._headers = {"Content-Type": "application/json", **credential_headers(base_url, key)}
        self._url = endpoint_url(base_url, "chat/completions")
        # What a reply or an error must never show: the key and the base URL's credentials
        # (short values are left alone: masking "1" everywhere would garble every text).
        self._secrets = sorted(
            {s for s in (key or "", *secrets(base_url)) if len(s) >= 8},
            key=len,
            reverse=True,
        )
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncIterator[None] | None = None
        #: The backend whose HTTP client this one shares (:meth:`with_sampling`); ``None``: its own.
        self._origin: OpenAIBackend | None = None

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={shown(self.base_url)!r})"

    def with_sampling(self, sampling: Sampling) -> OpenAIBackend:
        """This backend with other sampling settings: the same endpoint, key and HTTP client.

        For many requests that differ only in their sampling (the transfer evaluation's seed
        per sample) without one connection pool each; closing the original closes the client
        (closing a copy closes nothing).
        """
        other = copy.copy(self)
        other.sampling = sampling
        other._origin = self._origin or self
        other._client, other._client_loop, other._closer = None, None, None  # the origin's
        return other

    async def _client_for_this_loop(self) -> Any:
        """The async client of the running event loop (httpx clients are bound to one loop).

        The client is closed when its loop shuts down (see :func:`_close_at_loop_end`), so one
        backend can serve several ``asyncio.run`` calls (``play_match_sync`` twice) cleanly.
        """
        if self._origin is not None:
            return await self._origin._client_for_this_loop()
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            client = http_client(self.timeout_s, self.base_url)
            self._client, self._client_loop = client, loop
            self._closer = _close_at_loop_end(client)
            await anext(self._closer)
        return self._client

    async def aclose(self) -> None:
        """Close the client of the running loop now (its connections); the next call opens one.

        Optional: ``asyncio.run`` closes it anyway when its loop ends.
        """
        client, self._client, self._client_loop, self._closer = self._client, None, None, None
        if client is not None:
            await client.aclose()

    async def complete(
        self,
        messages: Messages,
        *,
        headers: Mapping[str, str] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
    ) -> ChatResult:
        """One completion with retries; failures end up in the result, never raised."""
        started = time.perf_counter()
        failures: list[str] = []
        timed_out = refused = False
        offered: dict[str, Any] = {}
        if tools:
            offered["tools"] = [dict(tool) for tool in tools]
            if tool_choice is not None:
                offered["tool_choice"] = tool_choice
        for attempt in range(1, self.max_attempts + 1):
            try:
                result = await self._attempt(messages, headers, offered)
            except _Retry as retry:
                failures.append(self._scrub(str(retry)))
                timed_out = retry.timeout
                if attempt == self.max_attempts:
                    break
                await asyncio.sleep(self._wait(attempt, retry.wait_s))
                continue
            except _Refused as refusal:  # the request itself is wrong: no retry
                failures.append(self._scrub(str(refusal)))
                timed_out, refused = False, True
                break
            return ChatResult(
                **result,
                latency_s=time.perf_counter() - started,
                attempts=attempt,
                failures=tuple(failures),
            )
        return ChatResult(
            latency_s=time.perf_counter() - started,
            attempts=len(failures),
            failures=tuple(failures),
            error="refused" if refused else "timeout" if timed_out else "endpoint",
        )

    async def _attempt(
        self, messages: Messages, headers: Mapping[str, str] | None, offered: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Send one request; raise :class:`_Retry` or :class:`_Refused` when it fails.

        Whatever goes wrong while talking to the endpoint is one of those two, with a
        one-line reason: nothing it sends (or fails to send) raises past this method.
        """
        reply, payload = await self._exchange(self._body(messages, offered), headers)
        if reply.status < 300:
            result = read_reply(payload, self._scrub, empty_is_answer=self.empty_is_answer)
            if self.asking.response_prefix:
                result["content"] = self.asking.response_prefix + result["content"]
            return result
        raise self._failure(reply)

    def _body(self, messages: Messages, offered: Mapping[str, Any]) -> dict[str, Any]:
        """The request's JSON body: the messages as asked, the tools offered, the sampling."""
        sent = with_system_prompt(messages, self.asking.system_prompt)
        prefill: dict[str, Any] = {}
        prefix = self.asking.response_prefix
        if prefix:  # the server continues the answer's start (the trainer's prefix)
            sent.append({"role": "assistant", "content": prefix})
            prefill = {"continue_final_message": True, "add_generation_prompt": False}
        return {
            "model": self.model,
            "messages": sent,
            **offered,
            **self.sampling.request_fields(),
            **self.sampling.extra_fields(),
            **prefill,
            **self.asking.request_fields(),
        }

    async def _exchange(
        self, body: dict[str, Any], headers: Mapping[str, str] | None
    ) -> tuple[HttpReply, Any]:
        """POST ``body``: the reply, and its parsed JSON when it succeeded (else None).

        Raises :class:`_Retry` with a one-line reason when no reply arrives, or it is too
        large or not JSON.
        """
        limit = self.max_reply_bytes
        payload = None
        try:
            client = await self._client_for_this_loop()
            # The deadline covers the whole request: httpx's own timeout is per read, so a
            # server trickling one byte at a time would hold the request for ever.
            reply = await asyncio.wait_for(
                exchange(
                    client,
                    "POST",
                    self._url,
                    limit,
                    headers={**self._headers, **dict(headers or {})},
                    content=json.dumps(body).encode(),
                ),
                self.timeout_s,
            )
            if reply.status < 300:
                payload = parse_json(reply.body, limit)
        except asyncio.TimeoutError:
            raise _Retry(f"timeout: no reply within {self.timeout_s:g} s", timeout=True) from None
        except ReplyTooLarge:
            raise _Retry(
                f"too large: the reply exceeds --max-reply-bytes {limit} (decoded)"
            ) from None
        except BadEncoding as error:
            raise _Retry(f"malformed response: {_short(str(error))}") from None
        except (ValueError, RecursionError) as error:  # not JSON, or nested past the stack
            raise _Retry(f"malformed response: {_short(str(error))}") from None
        except self._httpx.TimeoutException:
            raise _Retry(f"timeout: no reply within {self.timeout_s:g} s", timeout=True) from None
        except Exception as error:  # the transport's: resets, bad framing, 200 headers...
            raise _Retry(transport_failure(error)) from None
        return reply, payload

    @staticmethod
    def _failure(reply: HttpReply) -> _Retry | _Refused:
        """What an unsuccessful status means: a retry (429, 408, 5xx), else a refusal."""
        status = reply.status
        message = error_message(reply.body)
        if status == 429:
            return _Retry(f"429: {message}", _retry_after(reply.retry_after))
        if status >= 500 or status == 408:
            return _Retry(f"{status}: {message}")
        if 300 <= status < 400:  # no redirect: the key and the game header stay here
            target = _short(reply.location) or "?"
            return _Refused(f"{status}: redirect to {target} not followed")
        return _Refused(f"{status}: {message}")

    def _scrub(self, text: str) -> str:
        """``text`` with every secret masked: servers echo keys in error messages and replies."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _wait(self, attempt: int, retry_after: float | None) -> float:
        """Seconds before the next attempt: ``Retry-After`` if given, else jittered backoff."""
        if retry_after is not None:
            return min(retry_after, self.backoff_max_s)
        cap = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
        return float(self._rng.uniform(0.0, cap))


#: Token counts outside ``[0, _MAX_TOKENS)`` are not counts: they count 0 (SQLite's integers
#: and every sum over them stay in range).
_MAX_TOKENS = 2**31

_SURROGATE = re.compile("[\ud800-\udfff]")

#: The longest ``finish_reason`` kept (OpenAI's are a word: ``stop``, ``length``...).
_MAX_FINISH_REASON = 64


def with_system_prompt(messages: Messages, system_prompt: str | None) -> list[dict[str, Any]]:
    """``messages`` (copied) with ``system_prompt`` before the first system message's text.

    A persona (:attr:`~strategic_arena.asking.Asking.system_prompt`) goes first, then a blank
    line, then the game's own system prompt; where the chat has no system message it becomes
    one. ``None`` leaves the messages as they are.
    """
    sent = [dict(message) for message in messages]
    if system_prompt is None:
        return sent
    if sent and sent[0].get("role") == "system":
        sent[0]["content"] = f"{system_prompt}\n\n{sent[0].get('content') or ''}"
    else:
        sent.insert(0, {"role": "system", "content": system_prompt})
    return sent


def valid_text(text: str) -> str:
    """``text`` as valid Unicode: each lone surrogate (which JSON can carry) becomes U+FFFD.

    ``json.loads`` joins the escapes of a valid pair into one character, so any surrogate
    left in a decoded string is a lone one.
    """
    return _SURROGATE.sub("\ufffd", text)


def _token_count(value: object) -> int:
    """A usage count if ``value`` is one (an integer in range), else 0."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _MAX_TOKENS:
        return value
    return 0


def read_reply(
    payload: object, scrub: Callable[[str], str] = str, *, empty_is_answer: bool = False
) -> dict[str, Any]:
    """The fields of a ``chat.completion`` object, checked and coerced (see the module doc).

    Args:
        payload: the decoded JSON body.
        scrub: masks secrets in the texts (the backend's API key).
        empty_is_answer: a reply with empty content that the server says the model ended
            (``finish_reason: stop``) is the model's answer, not retried: for the transfer
            benchmarks, where a weak model that answers nothing answers wrongly. Otherwise
            (the arena) empty content is the server's failure, retried.

    Returns:
        The :class:`ChatResult` fields ``content``, ``reasoning``, ``finish_reason``,
        ``prompt_tokens``, ``completion_tokens`` and ``malformed``.

    Raises:
        _Retry: the body is not a completion at all (no choices, no message object): the
            server's fault, retried like a 5xx.
    """
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if choices == []:
        raise _Retry("no choices in the response")
    choice = choices[0] if isinstance(choices, list) else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise _Retry("malformed response: no choices[0].message object")
    wrong: list[str] = []

    def text_field(*names: str) -> str | None:
        for name in names:
            value = message.get(name)
            if value is None:
                continue
            if isinstance(value, str):
                return scrub(valid_text(value))
            wrong.append(f"{name} is a {type(value).__name__}, not a string")
            return None
        return None

    content = text_field("content") or ""
    reasoning = text_field("reasoning_content", "reasoning")
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        wrong.append(f"tool_calls is a {type(calls).__name__}, not a list")
        calls = None
    content = scrub(valid_text(tool_calls_text(content, calls)))
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    usage = payload.get("usage") if isinstance(payload, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    result: dict[str, Any] = {
        "content": content,
        "reasoning": reasoning or None,
        "finish_reason": valid_text(finish[:_MAX_FINISH_REASON])
        if isinstance(finish, str)
        else None,
        "prompt_tokens": _token_count(usage.get("prompt_tokens")),
        "completion_tokens": _token_count(usage.get("completion_tokens")),
        "malformed": "; ".join(wrong) or None,
    }
    nothing = not content.strip() and not reasoning and not wrong
    ended = result["finish_reason"] == "length" or (
        empty_is_answer and result["finish_reason"] == "stop"
    )
    if nothing and not ended:
        raise _Retry("empty content in the response")
    return result


def _retry_after(value: str) -> float | None:
    """The ``Retry-After`` header in seconds, if present and numeric."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def _short(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
