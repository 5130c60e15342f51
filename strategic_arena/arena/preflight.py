"""Check a model endpoint before anything is stored, and name the likely cause when it fails.

A configuration mistake (a base URL without ``/v1``, a server that is not running, a model name
the server does not serve, a vLLM server started without a tool-call parser for ``--style
tools``, a wrong API key) is not a server failure: stored as incomplete games it would damage
the run for good, and rerunning cannot fix it. So ``evaluate`` and ``grade`` first

1. read ``/models`` (one request, no redirects: credentials never go to another origin; the
   reply read within ``--max-reply-bytes``, like every reply);
2. check that it lists the model (or exactly one model, when none is named);
3. send one real request in the requested style: the first decision of a game, exactly as the
   arena will send it (prompt, game header, tools, sampling and extra body fields), with a
   fixed deal unrelated to the run's seed.

Any failure raises :class:`PreflightError`, whose message names the likely cause and its fix on
one line, whatever the endpoint sent (broken HTTP included), with the base URL masked
(:func:`~strategic_arena.door.shown`) and the key named by its variable only.
"""

from __future__ import annotations

import asyncio
import os
import re
from urllib.parse import urlsplit

from strategic_arena._extras import require
from strategic_arena.actions import INFRASTRUCTURE_ERROR_KINDS
from strategic_arena.arena.runner import Entrant
from strategic_arena.backends import (
    HttpReply,
    credential_headers,
    error_message,
    exchange,
    http_client,
    transport_failure,
)
from strategic_arena.door import endpoint_url, shown
from strategic_arena.door.printable import printable_line
from strategic_arena.env import make
from strategic_arena.http_body import (
    DEFAULT_MAX_REPLY_BYTES,
    BadEncoding,
    ReplyTooLarge,
    parse_json,
)
from strategic_arena.turn import GameState

#: The deal of the preflight request: fixed, so that it reveals nothing about the run's deals.
PREFLIGHT_SEED = 0


class PreflightError(ValueError):
    """The endpoint cannot serve the run; nothing was stored. The message says why."""


def _with_v1(base_url: str) -> str | None:
    """``base_url`` with ``/v1`` appended when its path lacks it (the usual typo), else None.

    Shown masked (:func:`~strategic_arena.door.shown`): a hint must not print the URL's credentials.
    """
    path = urlsplit(base_url).path.rstrip("/")
    if path.endswith("/v1"):
        return None
    return shown(endpoint_url(base_url, "v1"))


def _v1_hint(base_url: str) -> str:
    fixed = _with_v1(base_url)
    return f"; the base URL probably lacks /v1 (try --base-url {fixed})" if fixed else ""


def _unreachable(base_url: str, reason: object) -> PreflightError:
    where = urlsplit(shown(base_url)).netloc or shown(base_url)
    return PreflightError(
        f"nothing answers at {where} ({printable_line(reason, 200)}): is the server running, "
        "and are the host and port right?"
    )


def key_source(api_key_env: str | None) -> str:
    """Which key a request carries, by the variable's name: what messages say about it."""
    if not api_key_env:
        return "no API key (none named for it)"
    if not os.environ.get(api_key_env):
        return f"no API key (${api_key_env} is not set)"
    return f"the API key in ${api_key_env}"


def _auth(base_url: str, status: int, api_key_env: str | None) -> PreflightError:
    return PreflightError(
        f"the endpoint at {shown(base_url)} refused the credentials (HTTP {status}): it was "
        f"sent {key_source(api_key_env)}; --api-key-env (--opponent-api-key-env for a model "
        "opponent) names the variable"
    )


def list_served_models(
    base_url: str,
    api_key_env: str | None,
    timeout_s: float,
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
) -> list[str]:
    """The model ids ``base_url/models`` lists.

    One GET with the key of ``api_key_env`` (if set) to the base URL's origin, no redirect
    followed, the whole request within ``timeout_s`` and the reply read within
    ``max_reply_bytes`` decoded bytes (:mod:`strategic_arena.http_body`).

    Raises:
        PreflightError: the listing cannot be read; the message (one line, the URL masked)
            names the likely cause.
    """
    return list(served_models(base_url, api_key_env, timeout_s, max_reply_bytes))


def served_models(
    base_url: str,
    api_key_env: str | None,
    timeout_s: float,
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
) -> dict[str, int | None]:
    """The model ids ``base_url/models`` lists, each with its context length where listed.

    vLLM lists each served model's ``max_model_len`` (prompt and answer together); other
    servers may not (``None``). One request, as :func:`list_served_models`.

    Raises:
        PreflightError: the listing cannot be read (see :func:`list_served_models`).
    """
    key = os.environ.get(api_key_env) if api_key_env else None
    reply = _get_models(base_url, key, timeout_s, max_reply_bytes)
    if reply.status >= 300:
        raise _status_error(reply, base_url, api_key_env)
    return _model_cards(reply, base_url, max_reply_bytes)


def _get_models(
    base_url: str, key: str | None, timeout_s: float, max_reply_bytes: int
) -> HttpReply:
    """The reply to GET ``base_url/models``, whatever its status.

    Raises:
        PreflightError: no reply came (timeout, unreachable, too large, broken HTTP).
    """
    url = endpoint_url(base_url, "models")
    public = shown(url)

    async def get() -> HttpReply:
        async with http_client(timeout_s) as client:  # made before the deadline starts
            headers = credential_headers(base_url, key)
            request = exchange(client, "GET", url, max_reply_bytes, headers=headers)
            return await asyncio.wait_for(request, timeout_s)

    httpx = require("httpx", "OpenAI-compatible endpoints")
    try:
        return asyncio.run(get())
    except (TimeoutError, httpx.TimeoutException):
        raise PreflightError(
            f"no answer from {public} within {timeout_s:g} s (--timeout)"
        ) from None
    except ReplyTooLarge:
        raise PreflightError(
            f"the reply of {public} exceeds --max-reply-bytes {max_reply_bytes} (decoded): the "
            "endpoint's failure"
        ) from None
    except BadEncoding as error:
        raise PreflightError(f"{public} sent an unreadable reply ({error})") from None
    except (httpx.ConnectError, OSError) as error:
        raise _unreachable(base_url, error) from None
    except Exception as error:  # broken HTTP: bad framing, too many headers, a bad URL...
        raise PreflightError(
            f"{public} did not answer with valid HTTP ({transport_failure(error)})"
        ) from None


def _status_error(reply: HttpReply, base_url: str, api_key_env: str | None) -> PreflightError:
    """What an unsuccessful status (300 or over) of the model listing most likely means."""
    public = shown(endpoint_url(base_url, "models"))
    if reply.status in (401, 403):
        return _auth(base_url, reply.status, api_key_env)
    if 300 <= reply.status < 400:
        target = printable_line(reply.location or "?", 200)
        return PreflightError(
            f"{public} redirects (HTTP {reply.status} to {target}): "
            "give the final URL as --base-url"
        )
    if reply.status == 404:
        return PreflightError(f"HTTP 404 from {public}{_v1_hint(base_url)}")
    message = printable_line(error_message(reply.body), 200)
    return PreflightError(f"HTTP {reply.status} from {public}: {message}")


def _context(card: object) -> int | None:
    """A model card's ``max_model_len`` if it is a positive integer (endpoint data)."""
    value = card.get("max_model_len") if isinstance(card, dict) else None
    valid = isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**31
    return value if valid else None


def _model_cards(reply: HttpReply, base_url: str, max_reply_bytes: int) -> dict[str, int | None]:
    """Model id -> context length of a successful listing; :class:`PreflightError` otherwise."""
    public = shown(endpoint_url(base_url, "models"))
    try:
        data = parse_json(reply.body, max_reply_bytes)["data"]  # type: ignore[index]
        return {str(model["id"]): _context(model) for model in data}
    except ReplyTooLarge as error:
        raise PreflightError(f"{public} lists too much ({error})") from None
    except (ValueError, KeyError, TypeError, IndexError, RecursionError) as error:
        raise PreflightError(
            f"{public} does not answer with an OpenAI model list ({type(error).__name__})"
            f"{_v1_hint(base_url)}"
        ) from None


def choose_model(models: list[str], model: str | None) -> str:
    """``model`` if the endpoint lists it; with ``None``, the only model listed.

    Raises:
        PreflightError: the model is not served, or ``None`` and not exactly one is listed.
    """
    listed = ", ".join(printable_line(m, 80) for m in models[:10]) or "none"
    if model is None:
        if len(models) != 1:
            raise PreflightError(
                f"the endpoint lists {len(models)} models ({listed}); choose one with --model"
            )
        return models[0]
    if model not in models:
        raise PreflightError(
            f"the endpoint does not serve model {printable_line(model, 80)!r} (it lists: "
            f"{listed}); check --model (vLLM serves the name given to --served-model-name, "
            "else the --model path)"
        )
    return model


_STATUS = re.compile(r"^(\d{3}): (.*)$")


def diagnose(failure: str, base_url: str, style: str, api_key_env: str | None) -> PreflightError:
    """The likely cause of a failed chat request, from the backend's failure line."""
    match = _STATUS.match(failure)
    public = shown(base_url)
    if failure.startswith("connection: Connect"):  # ConnectError, ConnectTimeout
        return _unreachable(base_url, failure.removeprefix("connection: "))
    if failure.startswith("connection"):
        return PreflightError(
            f"{public} did not answer the first request with valid HTTP ({failure})"
        )
    if failure.startswith("timeout"):
        return PreflightError(f"no answer from {public} within --timeout")
    if match is None:
        return PreflightError(f"the endpoint's first reply was unusable: {printable_line(failure)}")
    status, message = int(match[1]), printable_line(match[2], 300)
    if status in (401, 403):
        return _auth(base_url, status, api_key_env)
    if 300 <= status < 400:
        return PreflightError(
            f"{public} redirects the request ({message}): give the final URL as --base-url"
        )
    if status == 404:
        return PreflightError(
            f"HTTP 404 from {shown(endpoint_url(base_url, 'chat/completions'))} "
            f"({message}){_v1_hint(base_url)}"
        )
    if style == "tools" and status == 400 and "tool" in message.lower():
        return PreflightError(
            f"the server refused the tool call (HTTP 400: {message}): --style tools needs "
            "tool calling; start vLLM with --enable-auto-tool-choice --tool-call-parser NAME "
            "(e.g. hermes for Qwen), or choose another --style"
        )
    if 400 <= status < 500:
        return PreflightError(
            f"the endpoint refused the request (HTTP {status}: {message}): check the sampling "
            "options, --chat-template-kwargs and --extra-body"
        )
    return PreflightError(
        f"the endpoint failed the first request after its retries: {printable_line(failure)}"
    )


def check_request(entrant: Entrant, env_id: str, base_url: str, api_key_env: str | None) -> None:
    """Send the first decision of a ``env_id`` game, as the arena will, and check it went through.

    The answer's content does not matter (an invalid move is the model's business); only a
    request the server refuses or fails is an error.

    Raises:
        PreflightError: the request failed; the message names the likely cause.
    """
    env = make(env_id)
    env.reset(seed=PREFLIGHT_SEED)
    seat = env.agent_name_mapping[env.agent_selection]
    player = entrant.build(env_id, PREFLIGHT_SEED)
    state = GameState(env_id, env.spiel_state.clone(), env.spec)
    decision = asyncio.run(player.act(state, seat))
    for error in decision.errors:
        if error.kind in INFRASTRUCTURE_ERROR_KINDS:
            failures = decision.failures or (error.detail,)
            style = str(entrant.params.get("style", ""))
            raise diagnose(failures[-1], base_url, style, api_key_env)
