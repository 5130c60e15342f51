r"""``spiral``: SPIRAL's own reading of an answer -- the last ``\boxed{}`` wins.

SPIRAL (Liu et al., 2025) prompts with "Please reason step by step, and put your final answer
within \boxed{}." and reads the move with its actor's ``extract_action`` (``train_spiral.py``,
the OAT runs of the paper, Qwen3 template), which this style follows step by step:

1. **Extract** (``extract_boxed_answer`` of ``spiral/core/utils.py``): the **last** occurrence
   of ``\boxed`` in the response, wherever it is (inside ``<think>``, after other boxes, before
   more text); it must be written ``\boxed{`` exactly and its braces must close (nested braces
   are kept); a content wrapped as a whole in ``\text{...}`` is unwrapped. When there is no
   such box, the **whole response** (stripped) is the candidate: an answer that is just the
   move (``bet``, ``[bet]``) is one.
2. **Format**: a ``\boxed{x}`` left inside the candidate becomes ``[x]``; a candidate with no
   bracket and at most five words is put in brackets; runs of whitespace become one space.
3. **Check**: the result must equal one legal action written ``[MOVE]`` -- exactly: case and
   inner spaces count (``\boxed{BET}`` and ``\boxed{ bet }`` are invalid there, so here).

No reasoning is required (SPIRAL's "thinking collapse" answers, a bare ``\boxed{bet}``, are
legal moves there), text after the box is accepted, and strict and lenient mode read alike:
the style *is* SPIRAL's parser. SPIRAL's actions are TextArena's (``[check]``, ``[4]``), ours
the package's canonical texts (``[check]``, ``[X(1,1)]``); step 3 compares with the latter.
An answer refused in step 3 gets the grammar's error where the grammar refuses it too, else a
``format`` error naming the exact form.

Why a style of its own rather than options of ``boxed``: ``boxed`` reads the text before the
first box as reasoning, refuses (strict) several boxes or text after the box, and reads the move
with the game's forgiving grammar; SPIRAL's reading differs on each point, and
``tests/test_spiral_parser.py`` checks it against SPIRAL's code answer by answer. One object
per parser keeps both exact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import ClassVar

from strategic_arena.actions import Action, ActionError
from strategic_arena.braces import matched_braces
from strategic_arena.games import ActionGrammar
from strategic_arena.styles.base import AnswerStyle, Extracted

_BOX = "\\boxed"
_TEXT = "\\text{"
#: A box left inside the candidate: SPIRAL turns ``\boxed{x}`` (no nested brace) into ``[x]``.
_INNER_BOX = re.compile(r"\\boxed\{([^}]*)\}")
_SPACES = re.compile(r"\s+")
#: SPIRAL brackets a candidate without brackets of at most this many words.
_MAX_BRACKETED_WORDS = 5


def last_box(text: str) -> tuple[int, str] | None:
    r"""Where the last ``\boxed`` starts and its content, if it is a readable ``\boxed{...}``."""
    start = text.rfind(_BOX)
    if start < 0 or not text.startswith(_BOX + "{", start):
        return None
    opening = start + len(_BOX) + 1
    close = matched_braces(text, opening)
    if close is None:
        return None
    content = text[opening : close - 1]
    if content.startswith(_TEXT) and content.endswith("}"):
        content = content[len(_TEXT) : -1]
    return start, content


def bracketed(candidate: str) -> str:
    """SPIRAL's formatting of a candidate move: inner boxes to brackets, brackets added."""
    formatted = _INNER_BOX.sub(r"[\1]", candidate)
    no_brackets = "[" not in formatted and "]" not in formatted
    if no_brackets and len(formatted.split()) <= _MAX_BRACKETED_WORDS:
        formatted = f"[{formatted}]"
    return _SPACES.sub(" ", formatted).strip()


class SpiralStyle(AnswerStyle):
    r"""The last ``\boxed{...}`` of the response (else the response), as SPIRAL reads it."""

    name: ClassVar[str] = "spiral"
    requires_reasoning: ClassVar[bool] = False
    answer_hint: ClassVar[str] = "no \\boxed{...} answer found; put your final answer in \\boxed{}"
    reasoning_hint: ClassVar[str] = "reason step by step before the \\boxed{} answer"

    def extract(self, text: str, *, strict: bool, need_reasoning: bool) -> Extracted | ActionError:
        r"""The content of the last ``\boxed{...}`` (before it: the reasoning), else the text."""
        found = last_box(text)
        if found is None:
            return Extracted("", [text.strip()])
        start, content = found
        return Extracted(text[:start], [content])

    def read_answer(
        self, answer: str, menu: Mapping[int, str], grammar: ActionGrammar
    ) -> Action | ActionError:
        """SPIRAL's check: the formatted answer equals one legal ``[MOVE]`` exactly."""
        formatted = bracketed(answer)
        for action, text in menu.items():
            if formatted == f"[{text}]":
                return Action(action, text)
        parsed = grammar.parse(answer.strip(), menu)
        if isinstance(parsed, ActionError):
            return parsed
        return ActionError(
            "format", f"write the move exactly as listed, as in \\boxed{{{parsed.text}}}"
        )

    def move_text(self, answer: str) -> str:
        """SPIRAL sends a free-text game the formatted candidate (``Accept`` -> ``[Accept]``)."""
        return bracketed(answer)

    def history_answer(self, response: str) -> str | None:
        """The last box alone (a response without one keeps its text)."""
        found = last_box(response)
        return None if found is None else self.answer_block(found[1])

    def answer_block(self, action_text: str) -> str:
        r"""``\boxed{MOVE}``."""
        return f"\\boxed{{{action_text}}}"
