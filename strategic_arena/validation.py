r"""Response text -> a legal action id, or a typed :class:`ActionError`.

A response is read in two layers:

1. the *style* finds the reasoning and the answer block(s):

   * ``marshal``: ``<think>REASONING</think> <answer>ACTION</answer>`` (the opening ``<think>``
     may be missing when the prompt pre-filled it, as in MARSHAL's generation);
   * ``boxed``: ``REASONING ... \boxed{ACTION}`` (SPIRAL);
   * ``json``: ``{"reasoning": "...", "action": "..."}``, optionally in a ```json fence;
   * ``tools``: a call of the ``play(move)`` tool, as an endpoint's ``tool_calls`` written in
     text or as a model writes it (``<tool_call>{"name": "play", ...}</tool_call>``; see
     :mod:`strategic_arena.tools`); the reasoning, optional here, is the text before the call;

2. the game's :class:`~strategic_arena.games.ActionGrammar` reads the answer against the menu of
   legal actions (canonical text, OpenSpiel's string, or a synonym).

Strict mode (the default, as MARSHAL) requires exactly one answer block and the exact layout of
the style; lenient mode takes the last answer block and tolerates text around it. Neither mode
ever looks for a move in the reasoning: only answer blocks are read. ``validate`` never raises on
any response string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias, get_args

from strategic_arena.actions import Action, ActionError
from strategic_arena.games import GameSpec, get_spec
from strategic_arena.tools import (
    MOVE_ARGUMENT,
    PLAY_TOOL,
    read_tool_calls,
    tool_call_blocks,
    tool_call_text,
)

Style: TypeAlias = Literal["marshal", "boxed", "json", "tools"]
#: The prompt/response styles.
STYLES: tuple[Style, ...] = ("marshal", "boxed", "json", "tools")

ThinkingInHistory: TypeAlias = Literal["keep", "strip", "answer"]
#: What earlier answers of a conversation keep of their reasoning (:func:`history_text`).
THINKING_IN_HISTORY: tuple[ThinkingInHistory, ...] = get_args(ThinkingInHistory)

#: Longest answer block read as an action; longer ones cannot be a move.
MAX_ANSWER_CHARS = 200
#: At most this many ``{`` positions are tried when looking for JSON objects in lenient mode.
MAX_JSON_CANDIDATES = 64

_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\s*\{")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


class _Extracted:
    """What a style found: the reasoning text and the answer blocks, in order."""

    __slots__ = ("answers", "reasoning")

    def __init__(self, reasoning: str, answers: list[str]) -> None:
        self.reasoning = reasoning
        self.answers = answers


def validate(
    env_id: str | GameSpec,
    response: str | bytes | None,
    legal_actions: Mapping[int, str] | Sequence[int],
    style: Style = "marshal",
    *,
    strict: bool = True,
    finish_reason: str | None = None,
    reasoning: str | None = None,
    require_reasoning: bool = True,
) -> Action | ActionError:
    """Read a model's response as one legal action.

    Args:
        env_id: the game (curated id or ``openspiel/<name>``), or its spec (needed for
            ``openspiel/<name>`` games made with parameters).
        response: the model's text (bytes are decoded as UTF-8 with replacement).
        legal_actions: the menu the prompt listed (``SeatView.legal_actions``), or bare legal
            action ids (then the game's context-free texts are used).
        style: ``"marshal"``, ``"boxed"``, ``"json"`` or ``"tools"``.
        strict: exactly one answer block in the style's exact layout (default); ``False`` takes
            the last answer block and ignores text around it.
        finish_reason: the server's ``finish_reason``; ``"length"`` means the response was cut
            off, reported as ``truncated``.
        reasoning: reasoning the server returned separately (``reasoning_content``); when given
            and non-empty, the response itself needs no reasoning part.
        require_reasoning: whether a missing or empty reasoning part is an error (never in
            the ``tools`` style: a forced tool call often comes without text).

    Returns:
        :class:`Action` with the action id and its canonical text, or :class:`ActionError`
        with one of the kinds ``empty``, ``truncated``, ``missing_reasoning``, ``no_action``,
        ``multiple_actions``, ``format``, ``unknown_action``, ``illegal_action``.
    """
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; choose one of {', '.join(STYLES)}")
    spec = env_id if isinstance(env_id, GameSpec) else get_spec(env_id)
    menu = spec.grammar.menu_for(legal_actions)
    text = _as_text(response)
    if not text.strip():
        return ActionError("empty", "the response is empty")
    if finish_reason == "length":
        return ActionError("truncated", "the response was cut off at the length limit")
    has_outside_reasoning = bool(reasoning and reasoning.strip())
    if style == "marshal":
        found = _extract_marshal(text, strict, need_think=not has_outside_reasoning)
    elif style == "boxed":
        found = _extract_boxed(text)
    elif style == "json":
        found = _extract_json(text, strict)
    else:
        found = _extract_tools(text, strict)
    if isinstance(found, ActionError):
        return found
    require_reasoning = require_reasoning and style != "tools"  # a forced call often has no text
    no_reasoning = require_reasoning and not has_outside_reasoning and not found.reasoning.strip()
    if not found.answers:
        # The kind names the answer, the part that matters; the detail names all that is missing.
        if no_reasoning:
            return ActionError("no_action", f"{_ANSWER_HINT[style]}, and no reasoning either")
        return ActionError("no_action", _ANSWER_HINT[style])
    if no_reasoning:
        return ActionError("missing_reasoning", _REASONING_HINT[style])
    if strict and len(found.answers) > 1:
        return ActionError(
            "multiple_actions", f"found {len(found.answers)} answers; give exactly one"
        )
    answer = found.answers[-1].strip()
    if not answer:
        return ActionError("no_action", "the answer block is empty")
    if len(answer) > MAX_ANSWER_CHARS:
        return ActionError(
            "unknown_action",
            f"the answer is {len(answer)} characters long; give only the action",
        )
    return spec.grammar.parse(answer, menu)


def answer_block(style: Style, action_text: str) -> str:
    """The answer part alone of a response in ``style`` (no reasoning)."""
    if style == "marshal":
        return f"<answer>{action_text}</answer>"
    if style == "boxed":
        return f"\\boxed{{{action_text}}}"
    if style == "json":
        return json.dumps({"action": action_text})
    return tool_call_text(PLAY_TOOL, {MOVE_ARGUMENT: action_text})


def format_answer(style: Style, reasoning: str, action_text: str) -> str:
    """``action_text`` with ``reasoning`` in the answer format of ``style`` (what validates)."""
    if style == "json":
        return json.dumps({"reasoning": reasoning, "action": action_text})
    block = answer_block(style, action_text)
    if style == "marshal":
        return f"<think>{reasoning}</think>\n{block}"
    if style == "boxed":
        return f"{reasoning} {block}".lstrip()
    return f"{reasoning}\n{block}" if reasoning else block


def history_text(response: str, style: Style, keep: ThinkingInHistory = "keep") -> str:
    """What an earlier answer of a conversation keeps when it is sent back to the model.

    Reasoning models are trained with the reasoning of earlier turns removed, so a caller that
    replays a model's past answers chooses: ``keep`` the whole response (the default),
    ``strip`` every ``<think>...</think>`` block (and a reasoning whose ``<think>`` the prompt
    pre-filled), or keep only the ``answer``: the answer blocks the style reads (tool calls as
    they were written), with no reasoning; a response with no answer keeps its stripped text.
    """
    if keep == "keep":
        return response
    stripped = _strip_think(response)
    if keep == "strip":
        return stripped
    if style == "marshal":
        found = _extract_marshal(response, False, need_think=False)
    elif style == "boxed":
        found = _extract_boxed(response)
    elif style == "json":
        found = _extract_json(response, False)
    else:  # every call as written, so that a wrong call stays visible as it was made
        return "\n".join(tool_call_blocks(response)) or stripped
    if isinstance(found, ActionError) or not found.answers:
        return stripped
    return "\n".join(answer_block(style, answer) for answer in found.answers)


def _strip_think(text: str) -> str:
    """``text`` without ``<think>...</think>`` blocks (or everything before a lone ``</think>``)."""
    without = re.sub(r"<think>.*?</think>", "", text, flags=re.IGNORECASE | re.DOTALL)
    close = _THINK_CLOSE.search(without)
    if close is not None:
        without = without[close.end() :]
    return without.strip()


_REASONING_HINT: dict[Style, str] = {
    "marshal": "reason inside <think>...</think> before the <answer> block",
    "boxed": "reason step by step before the \\boxed{} answer",
    "json": 'give your reasoning in the "reasoning" field',
}
_ANSWER_HINT: dict[Style, str] = {
    "marshal": "no <answer>...</answer> block found",
    "boxed": "no \\boxed{...} answer found",
    "json": 'no "action" field found',
    "tools": "no call of the play tool found; call play with your move",
}


def _as_text(response: str | bytes | None) -> str:
    """The response as ``str`` (``None`` -> empty; bytes decoded leniently)."""
    if response is None:
        return ""
    if isinstance(response, bytes | bytearray):
        return bytes(response).decode("utf-8", errors="replace")
    return str(response)


def _extract_marshal(text: str, strict: bool, need_think: bool) -> _Extracted | ActionError:
    """Split ``<think>...</think>`` reasoning from the ``<answer>`` blocks after it."""
    closes = list(_THINK_CLOSE.finditer(text))
    if not closes:
        if _THINK_OPEN.search(text) and not _ANSWER_OPEN.search(text):
            return ActionError("truncated", "the response ended inside <think>")
        if need_think and _ANSWER_OPEN.search(text):
            return ActionError("missing_reasoning", _REASONING_HINT["marshal"])
        head, tail = "", text
    else:
        if strict and len(closes) > 1:
            return ActionError("format", "more than one </think>; write one reasoning block")
        close = closes[-1]
        head, tail = text[: close.start()], text[close.end() :]
        opens = list(_THINK_OPEN.finditer(head))
        if strict and (len(opens) > 1 or (opens and head[: opens[0].start()].strip())):
            return ActionError("format", "the response must start with <think>")
        if opens:
            head = head[opens[-1].end() :]
    answers = [m.group(1) for m in _ANSWER.finditer(tail)]
    if not answers:
        if _ANSWER_OPEN.search(tail):
            return ActionError("truncated", "the <answer> block is not closed")
        return _Extracted(head, [])
    if strict:
        layout = _ANSWER.sub("", tail).strip()
        if layout and len(answers) == 1:
            return ActionError("format", "write nothing but the <answer> block after </think>")
    return _Extracted(head, answers)


def _extract_boxed(text: str) -> _Extracted | ActionError:
    r"""Find every ``\boxed{...}`` (braces balanced); the text before the first is reasoning."""
    answers: list[str] = []
    first_start: int | None = None
    position = 0
    while True:
        match = _BOXED.search(text, position)
        if match is None:
            break
        depth, index = 1, match.end()
        while index < len(text) and depth:
            char = text[index]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
            index += 1
        if depth:
            if not answers:
                return ActionError("truncated", "the \\boxed{ answer is not closed")
            break
        if first_start is None:
            first_start = match.start()
        answers.append(text[match.end() : index - 1])
        position = index
    reasoning = text[:first_start] if first_start is not None else text
    return _Extracted(reasoning, answers)


def _extract_json(text: str, strict: bool) -> _Extracted | ActionError:
    """Read ``{"reasoning": ..., "action": ...}`` (the whole response when strict)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    objects: list[dict[str, object]] = []
    if strict:
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            if body.count("{") > body.count("}"):
                return ActionError("truncated", "the JSON object is not closed")
            return ActionError("format", "the response must be one JSON object")
        if not isinstance(value, dict):
            return ActionError("format", "the response must be one JSON object")
        objects.append(value)
    else:
        try:
            whole = json.loads(body)
        except (ValueError, RecursionError):
            whole = None
        objects = [whole] if isinstance(whole, dict) else _json_objects(body)
        if not objects and body.count("{") > body.count("}"):
            return ActionError("truncated", "the JSON object is not closed")
    with_action = [obj for obj in objects if "action" in obj]
    if not with_action:
        reasoning = next((str(o.get("reasoning", "")) for o in objects), "")
        return _Extracted(reasoning, [])
    chosen = with_action[-1]
    reasoning_value = chosen.get("reasoning", "")
    reasoning = reasoning_value if isinstance(reasoning_value, str) else json.dumps(reasoning_value)
    action = chosen["action"]
    if isinstance(action, list):
        if len(action) != 1:
            return ActionError("multiple_actions", '"action" must be a single action, not a list')
        action = action[0]
    if isinstance(action, bool) or not isinstance(action, str | int):
        return ActionError("no_action", '"action" must be a string')
    return _Extracted(reasoning, [str(action)])


def _extract_tools(text: str, strict: bool) -> _Extracted | ActionError:
    """The reasoning and the moves of the ``play`` calls (see :mod:`strategic_arena.tools`)."""
    answer = read_tool_calls(text, strict=strict)
    if isinstance(answer, ActionError):
        return answer
    return _Extracted(answer.reasoning, list(answer.moves))


def _json_objects(text: str) -> list[dict[str, object]]:
    """Top-level JSON objects among the last ``MAX_JSON_CANDIDATES`` ``{`` of ``text``."""
    decoder = json.JSONDecoder()
    found: list[dict[str, object]] = []
    starts = [m.start() for m in re.finditer(r"\{", text)][-MAX_JSON_CANDIDATES:]
    resume = 0
    for start in starts:
        if start < resume:  # inside an object already read
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            found.append(value)
            resume = end
    return found
