"""The fields of an OpenAI chat request, read and checked as vLLM's server reads them.

``strategic-arena serve`` answers as a model endpoint, so a client written for vLLM or OpenAI
must meet the same contract: every field it may send is either honoured or refused with a 400
whose body names the field, never silently ignored. :func:`read_chat_request` reads one body
into a :class:`ChatRequest`; each field's reader is a small function, so a new field is one
more entry of :data:`_READERS`.

What is honoured (``serve``'s answers, :mod:`strategic_arena.serve`):

* ``messages`` (required, as vLLM requires it), ``model`` (an unknown name is a 404),
  ``stream`` and ``stream_options.include_usage``;
* ``n`` (1 to :data:`MAX_N` choices, each its own decision of the player), ``seed`` (a player
  built from that seed answers: the same seed and position give the same move);
* ``max_tokens`` / ``max_completion_tokens`` (the answer cut to that many tokens -- the
  endpoint's tokens are words -- with ``finish_reason: length``), ``stop`` (the answer ends
  before the first stop string, which is not returned, as OpenAI and vLLM do);
* ``tools`` and ``tool_choice`` (``none``: a text answer even when ``play`` is offered;
  ``required`` or the named ``play`` function: a call), ``response_format``
  (``text``; ``json_object``: the answer as one JSON object, the ``json`` style's);
* ``temperature``, ``top_p`` and the other sampling fields are checked for type and range
  and otherwise have no effect: a solver's play does not depend on them (documented, as vLLM
  documents the fields its samplers ignore).

What is refused (400, the field named): ``logprobs`` / ``top_logprobs`` (a solver has no
token distribution to report), ``response_format`` ``json_schema``, ``n`` out of range, and
any field of the wrong type.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The most choices one request may ask for.
MAX_N = 16
#: The largest token count or seed accepted (what vLLM's request model accepts).
MAX_TOKENS = 2**31 - 1
#: One token of the endpoint's answers (its usage counts whitespace-separated words).
_TOKEN = re.compile(r"\S+")
#: The most stop strings (OpenAI allows 4; vLLM more).
MAX_STOPS = 16


class ChatFieldError(ValueError):
    """A field the endpoint cannot honour: ``param`` names it (vLLM's 400 body does too)."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(f"{param}: {message}")
        self.param = param


@dataclass(frozen=True)
class ChatRequest:
    """One chat request's fields, checked (see the module docstring)."""

    messages: list[dict[str, Any]]
    model: str | None = None
    stream: bool = False
    include_usage: bool = False
    n: int = 1
    seed: int | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    tools: list[Any] | None = None
    tool_choice: str | dict[str, Any] | None = None
    json_answer: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _messages(value: object) -> dict[str, Any]:
    if value is None:
        raise ChatFieldError("messages", "field required")
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        raise ChatFieldError("messages", "must be a list of message objects")
    return {"messages": value}


def _model(value: object) -> dict[str, Any]:
    if value is not None and not isinstance(value, str):
        raise ChatFieldError("model", "must be a string")
    return {"model": value}


def _flag(name: str) -> Callable[[object], dict[str, Any]]:
    def read(value: object) -> dict[str, Any]:
        if value is not None and not isinstance(value, bool):
            raise ChatFieldError(name, "must be true or false")
        return {name: bool(value)}

    return read


def _stream_options(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ChatFieldError("stream_options", "must be an object")
    usage = value.get("include_usage", False)
    if not isinstance(usage, bool):
        raise ChatFieldError("stream_options.include_usage", "must be true or false")
    return {"include_usage": usage}


def _n(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not _is_int(value) or not 1 <= value <= MAX_N:  # type: ignore[operator]
        raise ChatFieldError("n", f"must be an integer from 1 to {MAX_N}")
    return {"n": value}


def _seed(value: object) -> dict[str, Any]:
    if value is not None and (not _is_int(value) or not -(2**63) <= value < 2**63):  # type: ignore[operator]
        raise ChatFieldError("seed", "must be an integer that fits in 64 bits")
    return {"seed": value}


def _token_count(name: str) -> Callable[[object], dict[str, Any]]:
    def read(value: object) -> dict[str, Any]:
        if value is None:
            return {}
        if not _is_int(value) or not 1 <= value <= MAX_TOKENS:  # type: ignore[operator]
            raise ChatFieldError(name, f"must be an integer from 1 to {MAX_TOKENS}")
        return {"max_tokens": value}

    return read


def _stop(value: object) -> dict[str, Any]:
    stops = [value] if isinstance(value, str) else value
    if value is None:
        return {}
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise ChatFieldError("stop", "must be a non-empty string or a list of them")
    if len(stops) > MAX_STOPS:
        raise ChatFieldError("stop", f"at most {MAX_STOPS} stop strings")
    return {"stop": tuple(stops)}


def _tools(value: object) -> dict[str, Any]:
    if value is not None and not isinstance(value, list):
        raise ChatFieldError("tools", "must be a list")
    return {"tools": value}


def _tool_choice(value: object) -> dict[str, Any]:
    if value is None or value in ("none", "auto", "required"):
        return {"tool_choice": value}
    function = value.get("function") if isinstance(value, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ChatFieldError(
            "tool_choice", "must be none, auto, required or {type: function, function: {name}}"
        )
    return {"tool_choice": value}


def _response_format(value: object) -> dict[str, Any]:
    kind = value.get("type") if isinstance(value, dict) else None
    if value is None or kind == "text":
        return {}
    if kind == "json_object":
        return {"json_answer": True}
    if kind == "json_schema":
        raise ChatFieldError(
            "response_format", "json_schema is not supported: ask for json_object or text"
        )
    raise ChatFieldError("response_format", "type must be text, json_object or json_schema")


def _no_logprobs(name: str) -> Callable[[object], dict[str, Any]]:
    def read(value: object) -> dict[str, Any]:
        if value in (None, False, 0):
            return {}
        raise ChatFieldError(
            name, "this endpoint plays a solver, which has no token log-probabilities to return"
        )

    return read


def _number(name: str, low: float, high: float) -> Callable[[object], dict[str, Any]]:
    def read(value: object) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ChatFieldError(name, "must be a number")
        if not math.isfinite(value) or not low <= value <= high:
            raise ChatFieldError(name, f"must lie in [{low:g}, {high:g}]")
        return {}

    return read


#: Each field a client may send, and its reader (returning the ChatRequest fields it sets).
_READERS: Mapping[str, Callable[[object], dict[str, Any]]] = {
    "messages": _messages,
    "model": _model,
    "stream": _flag("stream"),
    "stream_options": _stream_options,
    "n": _n,
    "seed": _seed,
    "max_tokens": _token_count("max_tokens"),
    "max_completion_tokens": _token_count("max_completion_tokens"),
    "stop": _stop,
    "tools": _tools,
    "tool_choice": _tool_choice,
    "response_format": _response_format,
    "logprobs": _no_logprobs("logprobs"),
    "top_logprobs": _no_logprobs("top_logprobs"),
    "temperature": _number("temperature", 0.0, 100.0),
    "top_p": _number("top_p", 0.0, 1.0),
    "min_p": _number("min_p", 0.0, 1.0),
    "presence_penalty": _number("presence_penalty", -2.0, 2.0),
    "frequency_penalty": _number("frequency_penalty", -2.0, 2.0),
}


def read_chat_request(body: Mapping[str, Any]) -> ChatRequest:
    """The checked fields of a chat request body (the messages field is required).

    Fields this endpoint has no reader for (``user``, the game field, vLLM's extra sampling
    fields) are kept in :attr:`ChatRequest.extra` for the caller.

    Raises:
        ChatFieldError: a field that cannot be honoured, naming it.
    """
    values: dict[str, Any] = {}
    for name, reader in _READERS.items():
        if name == "messages" or name in body:
            values.update(reader(body.get(name)))
    if "max_tokens" in body and "max_completion_tokens" in body:
        values["max_tokens"] = min(body["max_tokens"], body["max_completion_tokens"])
    values["extra"] = {key: value for key, value in body.items() if key not in _READERS}
    return ChatRequest(**values)


def cut_at_stop(text: str, stops: tuple[str, ...]) -> tuple[str, bool]:
    """``text`` up to the first stop string (not included), and whether one was found."""
    ends = [index for stop in stops if (index := text.find(stop)) >= 0]
    return (text[: min(ends)], True) if ends else (text, False)


def cut_to_tokens(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut after its ``limit``-th token, and whether it was cut.

    A token is a run of non-space characters: the endpoint's tokens, as its usage counts them.
    """
    ends = [match.end() for match in _TOKEN.finditer(text)]
    if len(ends) <= limit:
        return text, False
    return text[: ends[limit - 1]], True
