"""Check a model endpoint before anything is stored, and name the likely cause when it fails.

A configuration mistake (a base URL without ``/v1``, a server that is not running, a model name
the server does not serve, a vLLM server started without a tool-call parser for ``--style
tools``, a wrong API key) is not a server failure: stored as incomplete games it would damage
the run for good, and rerunning cannot fix it. So ``evaluate`` and ``grade`` first

1. read ``/models`` (one request, no redirects: credentials never go to another origin);
2. check that it lists the model (or exactly one model, when none is named);
3. send one real request in the requested style: the first decision of a game, exactly as the
   arena will send it (prompt, game header, tools, sampling and extra body fields), with a
   fixed deal unrelated to the run's seed.

Any failure raises :class:`PreflightError`, whose message names the likely cause and its fix.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from strategic_arena.actions import INFRASTRUCTURE_ERROR_KINDS
from strategic_arena.arena.runner import Entrant
from strategic_arena.env import make
from strategic_arena.printable import printable_line
from strategic_arena.turn import GameState

#: The deal of the preflight request: fixed, so that it reveals nothing about the run's deals.
PREFLIGHT_SEED = 0


class PreflightError(ValueError):
    """The endpoint cannot serve the run; nothing was stored. The message says why."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuses redirects: the probe's credentials never go to another origin."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _with_v1(base_url: str) -> str | None:
    """``base_url`` with ``/v1`` appended when its path lacks it (the usual typo), else None."""
    path = urlsplit(base_url).path.rstrip("/")
    if path.endswith("/v1"):
        return None
    return base_url.rstrip("/") + "/v1"


def _v1_hint(base_url: str) -> str:
    fixed = _with_v1(base_url)
    return f"; the base URL probably lacks /v1 (try --base-url {fixed})" if fixed else ""


def _unreachable(base_url: str, reason: object) -> PreflightError:
    where = urlsplit(base_url).netloc or base_url
    return PreflightError(
        f"nothing answers at {where} ({printable_line(reason, 200)}): is the server running, "
        "and are the host and port right?"
    )


def _auth(base_url: str, status: int, api_key_env: str) -> PreflightError:
    has_key = "set" if os.environ.get(api_key_env) else "not set"
    return PreflightError(
        f"the endpoint at {base_url} refused the credentials (HTTP {status}): check the API key "
        f"in ${api_key_env} ({has_key}; --api-key-env names another variable)"
    )


def list_served_models(base_url: str, api_key_env: str, timeout_s: float) -> list[str]:
    """The model ids ``base_url/models`` lists.

    Raises:
        PreflightError: the listing cannot be read; the message names the likely cause.
    """
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url)
    key = os.environ.get(api_key_env)
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        body = _read_within(opener, request, timeout_s)
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            raise _auth(base_url, error.code, api_key_env) from None
        if 300 <= error.code < 400:
            target = printable_line(error.headers.get("Location", "?"), 200)
            raise PreflightError(
                f"{url} redirects (HTTP {error.code} to {target}): give the final URL as --base-url"
            ) from None
        raise PreflightError(
            f"HTTP {error.code} from {url}{_v1_hint(base_url)}"
            if error.code == 404
            else f"HTTP {error.code} from {url}: {printable_line(error.reason, 200)}"
        ) from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        if isinstance(error, TimeoutError) or isinstance(reason, TimeoutError):
            raise PreflightError(
                f"no answer from {url} within {timeout_s:g} s (--timeout)"
            ) from None
        raise _unreachable(base_url, reason) from None
    try:
        data = json.loads(body)["data"]
        return [str(model["id"]) for model in data]
    except (ValueError, KeyError, TypeError) as error:
        raise PreflightError(
            f"{url} does not answer with an OpenAI model list ({type(error).__name__})"
            f"{_v1_hint(base_url)}"
        ) from None


def _read_within(
    opener: urllib.request.OpenerDirector, request: urllib.request.Request, timeout_s: float
) -> bytes:
    """The body of ``request`` read within ``timeout_s`` in all (a deadline, not per read).

    urllib's timeout bounds each socket read, so a server trickling a byte at a time could hold
    the probe for ever: the read runs in a daemon thread that is abandoned at the deadline.
    """
    outcome: dict[str, Any] = {}

    def read() -> None:
        try:
            with opener.open(request, timeout=timeout_s) as response:
                outcome["body"] = response.read()
        except BaseException as error:  # handed to the caller's thread below
            outcome["error"] = error

    thread = threading.Thread(target=read, name="preflight-models", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {timeout_s:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return bytes(outcome["body"])


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


def diagnose(failure: str, base_url: str, style: str, api_key_env: str) -> PreflightError:
    """The likely cause of a failed chat request, from the backend's failure line."""
    match = _STATUS.match(failure)
    if failure.startswith("connection"):
        return _unreachable(base_url, failure.removeprefix("connection: "))
    if failure == "timeout":
        return PreflightError(f"no answer from {base_url} within --timeout")
    if match is None:
        return PreflightError(f"the endpoint's first reply was unusable: {failure}")
    status, message = int(match[1]), printable_line(match[2], 300)
    if status in (401, 403):
        return _auth(base_url, status, api_key_env)
    if status == 404:
        return PreflightError(
            f"HTTP 404 from {base_url}/chat/completions ({message}){_v1_hint(base_url)}"
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
    return PreflightError(f"the endpoint failed the first request after its retries: {failure}")


def check_request(entrant: Entrant, env_id: str, base_url: str, api_key_env: str) -> None:
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
