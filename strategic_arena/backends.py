"""Chat backends: an OpenAI-compatible HTTP endpoint, with retries that never kill a run.

:class:`OpenAIBackend` sends chat requests with ``openai.AsyncOpenAI`` (imported lazily: extra
``[arena]``) and retries what is worth retrying:

1. HTTP 429: wait ``Retry-After`` when the server sends it, else back off;
2. HTTP 5xx, timeouts, dropped connections, malformed JSON, replies without choices and
   replies with nothing at all (no content, no reasoning, not cut off by the length limit):
   exponential backoff (``backoff_base_s * 2**attempt``, capped at ``backoff_max_s``) with
   full jitter from the backend's own seeded generator;
3. HTTP 408 (request timeout): retried like a 5xx;
4. any other 4xx: no retry (the request itself is wrong): ``error`` is ``refused``; redirects
   are never followed (the key must not reach another origin).

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

When every attempt fails, :meth:`OpenAIBackend.complete` still returns: a :class:`ChatResult`
with ``error`` set (``timeout`` or ``endpoint``) and every failure listed, so the caller records
it. These are infrastructure errors: the arena scores no game they stop (see
:mod:`strategic_arena.arena.match`). A server that only ever sends empty replies is therefore
reported as failing, not scored as a model that answers nothing. The API key comes from an
argument or an environment variable and is never stored in the result.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from strategic_arena._extras import require
from strategic_arena.tools import tool_calls_text

# Re-exported: TokenTrace lived here before it moved to strategic_arena.traces.
from strategic_arena.traces import TokenTrace as TokenTrace

Messages = Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings sent with every request (``None``: the server's default).

    ``extra_body`` carries server-specific fields such as vLLM's ``top_k`` and ``min_p``.
    """

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def request_fields(self) -> dict[str, Any]:
        """The fields of ``chat.completions.create`` that are set."""
        fields = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }
        return {key: value for key, value in fields.items() if value is not None}


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
        if not client.is_closed():
            await client.close()


def _http_client(base_url: str, timeout_s: float) -> Any:
    """The httpx client under the chat client: no redirect, keep-alive connections reused.

    Its transport is :class:`strategic_arena.http_transport.KeepAliveTransport` (a few dozen
    calls per request, where httpx's own costs more CPU than the rest of a move), unless an
    environment proxy applies to ``base_url``: then httpx's own transport, which speaks to it.
    """
    httpx = require("httpx", "OpenAI-compatible endpoints")
    from strategic_arena.http_transport import transport_for  # imports httpx

    return httpx.AsyncClient(
        transport=transport_for(base_url), timeout=timeout_s, follow_redirects=False
    )


class OpenAIBackend:
    """An OpenAI-compatible chat endpoint (OpenAI, vLLM, SGLang, ``strategic-arena serve``).

    Args:
        model: the model name sent with each request.
        base_url: the endpoint's base URL (``http://host:port/v1``).
        api_key: the key; when ``None`` it is read from ``api_key_env`` (a placeholder is sent
            if that is unset, as local servers need none).
        api_key_env: environment variable holding the key.
        sampling: sampling settings.
        timeout_s: deadline of each request, from connecting to the reply's last byte.
        max_attempts: requests per completion, the first included.
        backoff_base_s / backoff_max_s: exponential backoff bounds.
        seed: seed of the jitter generator.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        sampling: SamplingParams | None = None,
        timeout_s: float = 120.0,
        max_attempts: int = 6,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        seed: int | None = None,
    ) -> None:
        if max_attempts < 1 or timeout_s <= 0 or backoff_base_s < 0:
            raise ValueError("max_attempts >= 1, timeout_s > 0 and backoff_base_s >= 0 required")
        openai = require("openai", "OpenAI-compatible endpoints")
        self.model = model
        self.base_url = base_url
        self.sampling = sampling or SamplingParams()
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._rng = np.random.default_rng(seed)
        self._openai = openai
        self._api_key = api_key or os.environ.get(api_key_env) or "unused"
        # What a reply or an error must never show: the key and the base URL's credentials
        # (short values are left alone: masking "1" everywhere would garble every text).
        self._secrets = sorted(
            {s for s in (self._api_key, *url_secrets(base_url)) if len(s) >= 8},
            key=len,
            reverse=True,
        )
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncIterator[None] | None = None

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={public_url(self.base_url)!r})"

    async def _client_for_this_loop(self) -> Any:
        """The async client of the running event loop (httpx clients are bound to one loop).

        The client is closed when its loop shuts down (see :func:`_close_at_loop_end`), so one
        backend can serve several ``asyncio.run`` calls (``play_match_sync`` twice) cleanly.
        """
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            # Retries are ours (they must be recorded), so the client makes exactly one attempt.
            client = self._openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=self._api_key,
                max_retries=0,
                timeout=self.timeout_s,
                http_client=_http_client(self.base_url, self.timeout_s),
            )
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
            await client.close()

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
            except self._openai.APIStatusError as error:  # 4xx other than 408/429: no retry
                failures.append(self._scrub(f"{error.status_code}: {_short(error.message)}"))
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
        """Send one request; raise :class:`_Retry` for a retryable failure."""
        openai = self._openai
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(message) for message in messages],
            **offered,
            **self.sampling.request_fields(),
            **dict(self.sampling.extra_body),
        }
        try:
            # The client's generic ``post`` (OpenAI's documented way to reach any endpoint)
            # instead of ``chat.completions.create``: the same transport, auth, timeout and
            # status errors, without re-validating the request and response through typed
            # models, which costs more than the rest of the arena's work per move. The
            # deadline covers the whole request: httpx's own timeout is per read, so a server
            # trickling one byte at a time would hold the request for ever.
            client = await self._client_for_this_loop()
            request = client.post(
                "/chat/completions",
                cast_to=str,
                body=body,
                # No redirect: the key and the game header must not reach another origin.
                options={"headers": dict(headers or {}), "follow_redirects": False},
            )
            response = await asyncio.wait_for(request, self.timeout_s)
            payload = json.loads(response)
        except (asyncio.TimeoutError, openai.APITimeoutError):
            raise _Retry(f"timeout: no reply within {self.timeout_s:g} s", timeout=True) from None
        except openai.RateLimitError as error:
            raise _Retry(f"429: {_short(error.message)}", _retry_after(error.response)) from None
        except openai.APIConnectionError as error:
            raise _Retry(f"connection: {_short(str(error))}") from None
        except openai.InternalServerError as error:
            raise _Retry(f"{error.status_code}: {_short(error.message)}") from None
        except openai.APIStatusError as error:
            if error.status_code != 408:  # the request itself is wrong: complete() stops
                raise
            raise _Retry(f"408: {_short(error.message)}") from None
        except (ValueError, RecursionError) as error:  # not JSON, or nested past the stack
            raise _Retry(f"malformed response: {_short(str(error))}") from None
        return read_reply(payload, self._scrub)

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


def public_url(url: str) -> str:
    """``url`` without secrets, for storing, printing and publishing.

    Userinfo goes (``http://user:key@host`` -> ``http://host``) and the value of every
    query parameter goes (``?api-key=...`` -> ``?api-key=***``), as does a fragment: a query
    names what it sets, but its values are where keys travel.
    """
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if parts.username is not None or parts.password is not None:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port is not None else host
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    masked = "&".join(f"{urllib.parse.quote(name, safe='-_.')}=***" for name, _ in query)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=masked, fragment=""))


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries: its userinfo password and its query values."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    return [value for value in (parts.password, *(v for _, v in query)) if value]


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


def read_reply(payload: object, scrub: Callable[[str], str] = str) -> dict[str, Any]:
    """The fields of a ``chat.completion`` object, checked and coerced (see the module doc).

    Args:
        payload: the decoded JSON body.
        scrub: masks secrets in the texts (the backend's API key).

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
    if nothing and result["finish_reason"] != "length":
        raise _Retry("empty content in the response")
    return result


def _retry_after(response: Any) -> float | None:
    """The ``Retry-After`` header in seconds, if present and numeric."""
    value = getattr(response, "headers", {}).get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _short(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
