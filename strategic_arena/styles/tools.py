"""``tools``: the move is a call of the ``play(move)`` tool (see :mod:`strategic_arena.tools`).

Each request offers the tool, its ``move`` an enum of the legal actions, and forces its call.
An endpoint's structured ``tool_calls`` and a model's own ``<tool_call>`` text read the same.
The reasoning, the text before the call, is optional by default: a forced call often comes
without text. Strict mode refuses a second call and text after the call.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any, ClassVar

from strategic_arena.actions import ActionError
from strategic_arena.styles.base import AnswerStyle, Extracted
from strategic_arena.tools import (
    MOVE_ARGUMENT,
    PLAY_TOOL,
    play_tool,
    play_tool_choice,
    read_tool_calls,
    tool_call_blocks,
    tool_call_text,
)


class ToolsStyle(AnswerStyle):
    """A call of ``play(move)``."""

    name: ClassVar[str] = "tools"
    requires_reasoning: ClassVar[bool] = False
    answer_hint: ClassVar[str] = "no call of the play tool found; call play with your move"
    reasoning_hint: ClassVar[str] = "think step by step before calling play"

    def extract(self, text: str, *, strict: bool, need_reasoning: bool) -> Extracted | ActionError:
        """The text before the first call, and the moves of the ``play`` calls."""
        answer = read_tool_calls(text, strict=strict)
        if isinstance(answer, ActionError):
            return answer
        return Extracted(answer.reasoning, list(answer.moves))

    def answer_block(self, action_text: str) -> str:
        """The call in the Hermes text form."""
        return tool_call_text(PLAY_TOOL, {MOVE_ARGUMENT: action_text})

    def format_answer(self, reasoning: str, action_text: str) -> str:
        """The reasoning, then the call on its own lines."""
        block = self.answer_block(action_text)
        return f"{reasoning}\n{block}" if reasoning else block

    def request_options(self, legal_texts: Iterable[str]) -> dict[str, Any]:
        """``tools`` with ``play`` (legal moves as its enum) and ``tool_choice`` forcing it."""
        return {"tools": [play_tool(legal_texts)], "tool_choice": play_tool_choice()}

    def history_answer(self, response: str) -> str | None:
        """Every call as written, so that a wrong call stays visible as it was made."""
        return "\n".join(tool_call_blocks(response)) or None

    def reply(self, reasoning: str, action_text: str) -> tuple[dict[str, Any], str]:
        """The reasoning as content and one structured ``play`` call."""
        arguments = json.dumps({MOVE_ARGUMENT: action_text})
        call = {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": PLAY_TOOL, "arguments": arguments},
        }
        return {"content": reasoning, "tool_calls": [call]}, "tool_calls"
