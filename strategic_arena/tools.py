"""Tool-call answers: the ``play(move)`` tool, and reading a tool call back from a response.

In the ``tools`` style the model moves by calling one function, ``play``, whose single
parameter ``move`` is an enum of the legal actions' canonical texts:

* an OpenAI-compatible endpoint receives the tool in ``tools`` with ``tool_choice`` naming it
  (:func:`play_tool`, :func:`play_tool_choice`), and answers with ``message.tool_calls``;
* a model generating raw text (the trainer's engine, a server without a tool parser) writes the
  call the way Qwen-family chat templates do (Hermes format)::

      <tool_call>
      {"name": "play", "arguments": {"move": "X(1,1)"}}
      </tool_call>

Both forms become the same text: :func:`tool_calls_text` writes an endpoint's structured calls
in the Hermes form, so responses are stored, replayed and validated as text like every other
style, and :func:`read_tool_calls` reads them back. What was said outside the calls (and any
``reasoning_content``) is the reasoning. Nothing here raises on any response.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from strategic_arena.actions import ActionError
from strategic_arena.door import decode

#: The one tool offered in the ``tools`` style.
PLAY_TOOL = "play"
#: Its one parameter.
MOVE_ARGUMENT = "move"

_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL | re.IGNORECASE)
_CALL_OPEN = re.compile(r"<tool_call>", re.IGNORECASE)


def play_tool(legal_texts: Iterable[str]) -> dict[str, Any]:
    """The OpenAI function tool ``play(move)``, ``move`` an enum of ``legal_texts``.

    With no legal texts (a free-text game: no menu) ``move`` is any string, written as the
    game's own instructions say.
    """
    texts = list(legal_texts)
    move: dict[str, Any] = {
        "type": "string",
        "enum": texts,
        "description": "the move, written exactly as in the list of legal actions",
    }
    if not texts:
        move = {"type": "string", "description": "the move, written as the game's rules say"}
    return {
        "type": "function",
        "function": {
            "name": PLAY_TOOL,
            "description": "Make your move in the game. Call it exactly once.",
            "parameters": {
                "type": "object",
                "properties": {MOVE_ARGUMENT: move},
                "required": [MOVE_ARGUMENT],
                "additionalProperties": False,
            },
        },
    }


def play_tool_choice() -> dict[str, Any]:
    """``tool_choice`` forcing a call of ``play`` (OpenAI's named-function form)."""
    return {"type": "function", "function": {"name": PLAY_TOOL}}


def tool_call_text(name: str, arguments: Mapping[str, Any] | str) -> str:
    """One call in the Hermes text form (``arguments`` as a mapping, or a raw JSON string)."""
    if isinstance(arguments, str):
        # a string that is not JSON is kept as it is: the validator reports the bad arguments
        with contextlib.suppress(ValueError):
            arguments = decode(arguments, "the tool call's arguments")
    call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"<tool_call>\n{call}\n</tool_call>"


def tool_calls_text(content: str, tool_calls: Sequence[Mapping[str, Any]] | None) -> str:
    """An endpoint's answer (``content`` and ``message.tool_calls``) as one text.

    The content comes first, then each call in the Hermes form; without calls the content is
    returned unchanged. Malformed call entries are kept as far as they go (name ``""``).
    """
    parts = [content] if content else []
    for call in tool_calls or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            function = {}
        name = function.get("name")
        arguments = function.get("arguments")
        parts.append(
            tool_call_text(
                name if isinstance(name, str) else "",
                arguments if isinstance(arguments, str | Mapping) else "",
            )
        )
    return "\n".join(parts)


def tool_call_blocks(text: str) -> list[str]:
    """The ``<tool_call>...</tool_call>`` blocks of ``text`` as written, valid or not."""
    return [match.group(0) for match in _CALL.finditer(text)]


@dataclass(frozen=True)
class ToolAnswer:
    """What a tools-style response said: its reasoning and the moves of its ``play`` calls."""

    reasoning: str
    moves: tuple[str, ...]


def read_tool_calls(text: str, *, strict: bool = True) -> ToolAnswer | ActionError:
    """The ``play`` calls of ``text`` (Hermes form), or why they cannot be read.

    Errors: ``truncated`` (a call is not closed), ``no_action`` (no call), ``format`` (a call
    that is not JSON, names another tool, or whose arguments are not ``{"move": "<text>"}``;
    in strict mode also text after the call), ``multiple_actions`` (more than one call, strict
    mode; lenient mode reads the last).
    """
    calls = list(_CALL.finditer(text))
    reasoning = _CALL.sub("", text)
    if _CALL_OPEN.search(reasoning):
        return ActionError("truncated", "a <tool_call> is not closed")
    if not calls:
        return ToolAnswer(text, ())
    if strict and text[calls[-1].end() :].strip():
        return ActionError("format", "write nothing after the call of play")
    moves: list[str] = []
    for call in calls if strict else calls[-1:]:
        move = _read_call(call.group(1))
        if isinstance(move, ActionError):
            return move
        moves.append(move)
    return ToolAnswer(text[: calls[0].start()], tuple(moves))


def _read_call(body: str) -> str | ActionError:
    """The ``move`` of one call's JSON body."""
    try:
        call = decode(body, "the tool call")
    except ValueError:
        return ActionError("format", "the tool call is not JSON")
    if not isinstance(call, dict):
        return ActionError("format", "the tool call must be a JSON object")
    name = call.get("name")
    if name != PLAY_TOOL:
        return ActionError("format", f"called tool {name!r}; the only tool is {PLAY_TOOL!r}")
    arguments = call.get("arguments", call.get("parameters"))
    if isinstance(arguments, str):
        try:
            arguments = decode(arguments, "the tool call's arguments")
        except ValueError:
            return ActionError("format", f"the arguments of {PLAY_TOOL} are not JSON")
    if not isinstance(arguments, dict) or MOVE_ARGUMENT not in arguments:
        return ActionError("format", f'call {PLAY_TOOL} with arguments {{"{MOVE_ARGUMENT}": ...}}')
    extra = sorted(set(arguments) - {MOVE_ARGUMENT})
    if extra:
        return ActionError("format", f"{PLAY_TOOL} takes only {MOVE_ARGUMENT!r}, not {extra}")
    move = arguments[MOVE_ARGUMENT]
    if isinstance(move, bool) or not isinstance(move, str | int):
        return ActionError("format", f"{MOVE_ARGUMENT!r} must be a string")
    return str(move)
