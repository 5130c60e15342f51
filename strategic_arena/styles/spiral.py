r"""``spiral``: SPIRAL's own reading of an answer -- the last ``\boxed{}`` wins.

SPIRAL (Liu et al., 2025) prompts with "Please reason step by step, and put your final answer
within \boxed{}." and reads the move with its ``extract_boxed_answer``:

1. find the **last** occurrence of ``\boxed`` in the response (wherever it is: inside
   ``<think>``, after other boxes, before more text);
2. it must be written ``\boxed{`` exactly (``\boxed {x}`` or ``\fbox{x}`` give no move), and
   its braces must close (nested braces are kept: ``\boxed{{bet}}`` reads ``{bet}``);
3. a content wrapped as a whole in ``\text{...}`` is unwrapped.

No reasoning is required (SPIRAL's "thinking collapse" answers, a bare ``\boxed{bet}``, are
legal moves there) and text after the box is accepted: the style *is* SPIRAL's parser, so
strict and lenient mode read alike. The move text then goes through the game's grammar,
which, like SPIRAL's ``[action]`` convention, ignores brackets and case.

Why a style of its own rather than options of ``boxed``: ``boxed`` reads the text before the
first box as reasoning and, strict, refuses several boxes or text after the box; SPIRAL's
reading differs on each point and on ``\text{}``, and a test checks it against SPIRAL's own
code answer by answer (``tests/test_spiral_parser.py``). One object per parser keeps both
exact.
"""

from __future__ import annotations

from typing import ClassVar

from strategic_arena.actions import ActionError
from strategic_arena.styles.base import AnswerStyle, Extracted, matched_braces

_BOX = "\\boxed"
_TEXT = "\\text{"


class SpiralStyle(AnswerStyle):
    r"""The last ``\boxed{...}`` of the response, as SPIRAL reads it."""

    name: ClassVar[str] = "spiral"
    requires_reasoning: ClassVar[bool] = False
    answer_hint: ClassVar[str] = "no \\boxed{...} answer found; put your final answer in \\boxed{}"
    reasoning_hint: ClassVar[str] = "reason step by step before the \\boxed{} answer"

    def extract(self, text: str, *, strict: bool, need_reasoning: bool) -> Extracted | ActionError:
        r"""The content of the last ``\boxed{...}``; the text before it is the reasoning."""
        start = text.rfind(_BOX)
        if start < 0:
            return Extracted(text, [])
        reasoning = text[:start]
        if not text.startswith(_BOX + "{", start):
            return ActionError("format", "write the last box as \\boxed{MOVE}")
        opening = start + len(_BOX) + 1
        close = matched_braces(text, opening)
        if close is None:
            return ActionError("truncated", "the last \\boxed{ answer is not closed")
        answer = text[opening : close - 1]
        if answer.startswith(_TEXT) and answer.endswith("}"):
            answer = answer[len(_TEXT) : -1]
        return Extracted(reasoning, [answer])

    def answer_block(self, action_text: str) -> str:
        r"""``\boxed{MOVE}``."""
        return f"\\boxed{{{action_text}}}"
