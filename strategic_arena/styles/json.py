"""``json``: one object ``{"reasoning": "...", "action": "MOVE"}``, optionally in a fence.

Strict mode: the whole response (or the whole fenced block) is that one object, so text
around it is an error; lenient mode reads the last object with an ``action`` field among the
response's top-level objects. :class:`JsonStyle` is also the base of SPIN-Bench's form
(:mod:`strategic_arena.styles.spin_bench`), which only renames the reasoning field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import ClassVar

from strategic_arena.actions import ActionError
from strategic_arena.door import decode
from strategic_arena.styles.base import AnswerStyle, Extracted, json_text

#: At most this many ``{`` positions are tried when looking for JSON objects in lenient mode.
MAX_JSON_CANDIDATES = 64

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


class JsonStyle(AnswerStyle):
    """A JSON object with a reasoning field and an ``action`` field."""

    name: ClassVar[str] = "json"
    #: The field holding the reasoning.
    reasoning_field: ClassVar[str] = "reasoning"
    answer_hint: ClassVar[str] = 'no "action" field found'
    reasoning_hint: ClassVar[str] = 'give your reasoning in the "reasoning" field'

    def extract(self, text: str, *, strict: bool, need_reasoning: bool) -> Extracted | ActionError:
        """Read the object (the whole response when strict)."""
        body = text.strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1)
        objects: list[dict[str, object]] = []
        if strict:
            try:
                value = decode(body, "the answer")
            except ValueError:
                if body.count("{") > body.count("}"):
                    return ActionError("truncated", "the JSON object is not closed")
                return ActionError("format", "the response must be one JSON object")
            if not isinstance(value, dict):
                return ActionError("format", "the response must be one JSON object")
            objects.append(value)
        else:
            try:
                whole = decode(body, "the answer")
            except ValueError:
                whole = None
            objects = [whole] if isinstance(whole, dict) else json_objects(body)
            if not objects and body.count("{") > body.count("}"):
                return ActionError("truncated", "the JSON object is not closed")
        with_action = [obj for obj in objects if "action" in obj]
        if not with_action:
            reasoning = next((str(o.get(self.reasoning_field, "")) for o in objects), "")
            return Extracted(reasoning, [])
        chosen = with_action[-1]
        reasoning = json_text(chosen.get(self.reasoning_field, ""))
        action = chosen["action"]
        if isinstance(action, list):
            if len(action) != 1:
                return ActionError(
                    "multiple_actions", '"action" must be a single action, not a list'
                )
            action = action[0]
        if isinstance(action, bool) or not isinstance(action, str | int):
            return ActionError("no_action", '"action" must be a string')
        return Extracted(reasoning, [str(action)])

    def answer_block(self, action_text: str) -> str:
        """``{"action": "MOVE"}``."""
        return json.dumps({"action": action_text})

    def format_answer(self, reasoning: str, action_text: str) -> str:
        """The object with both fields, reasoning first."""
        return json.dumps({self.reasoning_field: reasoning, "action": action_text})

    def vocabulary(self, action_texts: Iterable[str]) -> list[str]:
        """The reasoning field opens the object; each action closes it."""
        texts = sorted(set(action_texts))
        opening = json.dumps({self.reasoning_field: ""})[:-2]  # '{"reasoning": "'
        return [opening, *(f'", "action": "{text}"}}' for text in texts)]


def json_objects(text: str) -> list[dict[str, object]]:
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
