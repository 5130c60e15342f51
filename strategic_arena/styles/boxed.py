r"""``boxed``: ``REASONING ... \boxed{MOVE}`` (the math-style answer box).

The text before the first box is the reasoning. Strict mode: exactly one box, and nothing
after it but spaces and a closing ``.`` or ``$`` (``$\boxed{x}$.``); lenient mode takes the
last box and ignores the text around it. An unclosed first box is ``truncated``.
See :mod:`strategic_arena.styles.spiral` for SPIRAL's own, looser reading of boxes.
"""

from __future__ import annotations

import re
from typing import ClassVar

from strategic_arena.actions import ActionError
from strategic_arena.braces import matched_braces
from strategic_arena.styles.base import AnswerStyle, Extracted

_BOXED = re.compile(r"\\boxed\s*\{")
#: What strict mode lets follow the last box: spaces and closing punctuation of a sentence or
#: of LaTeX math.
_AFTER_BOX = re.compile(r"[\s.$]*")


class BoxedStyle(AnswerStyle):
    r"""Reasoning, then one ``\boxed{...}`` (braces balanced)."""

    name: ClassVar[str] = "boxed"
    answer_hint: ClassVar[str] = "no \\boxed{...} answer found"
    reasoning_hint: ClassVar[str] = "reason step by step before the \\boxed{} answer"

    def extract(self, text: str, *, strict: bool, need_reasoning: bool) -> Extracted | ActionError:
        r"""Every ``\boxed{...}``; the text before the first is reasoning."""
        answers: list[str] = []
        first_start: int | None = None
        position = end = 0
        while (match := _BOXED.search(text, position)) is not None:
            close = matched_braces(text, match.end())
            if close is None:
                if not answers:
                    return ActionError("truncated", "the \\boxed{ answer is not closed")
                break
            if first_start is None:
                first_start = match.start()
            answers.append(text[match.end() : close - 1])
            position = end = close
        reasoning = text[:first_start] if first_start is not None else text
        if strict and answers and not _AFTER_BOX.fullmatch(text, end):
            return ActionError("format", "write nothing after the \\boxed{} answer")
        return Extracted(reasoning, answers)

    def answer_block(self, action_text: str) -> str:
        r"""``\boxed{MOVE}``."""
        return f"\\boxed{{{action_text}}}"
