"""``marshal``: ``<think>REASONING</think> <answer>MOVE</answer>`` (MARSHAL's format).

The opening ``<think>`` may be missing when the prompt pre-filled it, as in MARSHAL's
generation. Strict mode: one reasoning block at the start, exactly one answer block after
``</think>`` and nothing else; lenient mode takes every answer block after the last
``</think>`` (the last one wins).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import ClassVar

from strategic_arena.actions import ActionError
from strategic_arena.styles.base import THINK_CLOSE, THINK_OPEN, AnswerStyle, Extracted

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)


class MarshalStyle(AnswerStyle):
    """``<think>...</think>`` then one ``<answer>...</answer>``."""

    name: ClassVar[str] = "marshal"
    answer_hint: ClassVar[str] = "no <answer>...</answer> block found"
    reasoning_hint: ClassVar[str] = "reason inside <think>...</think> before the <answer> block"

    def extract(self, text: str, *, strict: bool, need_reasoning: bool) -> Extracted | ActionError:
        """Split ``<think>...</think>`` reasoning from the ``<answer>`` blocks after it."""
        closes = list(THINK_CLOSE.finditer(text))
        if not closes:
            if THINK_OPEN.search(text) and not _ANSWER_OPEN.search(text):
                return ActionError("truncated", "the response ended inside <think>")
            if need_reasoning and _ANSWER_OPEN.search(text):
                return ActionError("missing_reasoning", self.reasoning_hint)
            head, tail = "", text
        else:
            if strict and len(closes) > 1:
                return ActionError("format", "more than one </think>; write one reasoning block")
            close = closes[-1]
            head, tail = text[: close.start()], text[close.end() :]
            opens = list(THINK_OPEN.finditer(head))
            if strict and (len(opens) > 1 or (opens and head[: opens[0].start()].strip())):
                return ActionError("format", "the response must start with <think>")
            if opens:
                head = head[opens[-1].end() :]
        answers = [m.group(1) for m in _ANSWER.finditer(tail)]
        if not answers:
            if _ANSWER_OPEN.search(tail):
                return ActionError("truncated", "the <answer> block is not closed")
            return Extracted(head, [])
        if strict and len(answers) == 1 and _ANSWER.sub("", tail).strip():
            return ActionError("format", "write nothing but the <answer> block after </think>")
        return Extracted(head, answers)

    def answer_block(self, action_text: str) -> str:
        """``<answer>MOVE</answer>``."""
        return f"<answer>{action_text}</answer>"

    def format_answer(self, reasoning: str, action_text: str) -> str:
        """``<think>REASONING</think>`` and the answer block on the next line."""
        return f"<think>{reasoning}</think>\n{self.answer_block(action_text)}"

    def vocabulary(self, action_texts: Iterable[str]) -> list[str]:
        """The think markers and one answer block per action."""
        return ["<think>", "</think>", *super().vocabulary(action_texts)]
