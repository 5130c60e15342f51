r"""What an answer style is: the small object every style module defines.

A style says how a model writes its move and how the arena reads it back:

* :meth:`AnswerStyle.extract` finds the reasoning and the answer block(s) of a response and
  returns the move **texts** in them (never an action id: reading a text against the menu of
  legal actions is the separate step :meth:`AnswerStyle.read_answer`, so a game that validates
  free-text moves itself can plug in there);
* :meth:`AnswerStyle.answer_block` and :meth:`AnswerStyle.format_answer` write an answer the
  style accepts (the embedded solver endpoint answers with them; tests round-trip them);
* :attr:`AnswerStyle.template` names the response-format instructions under
  ``prompts/styles/``, and :meth:`AnswerStyle.action_line` how a legal action is listed;
* :meth:`AnswerStyle.request_options` adds fields to each chat request (``tools`` and
  ``tool_choice`` for the ``tools`` style);
* :meth:`AnswerStyle.history_answer` is what an earlier answer keeps when only its answer is
  sent back to the model (``thinking_in_history="answer"``);
* :attr:`AnswerStyle.requires_reasoning` is the default of ``require_reasoning``, and the
  hints are the error details a model is told.

Nothing here raises on any response: every problem is an :class:`ActionError`.
"""

from __future__ import annotations

import abc
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from strategic_arena.actions import Action, ActionError
from strategic_arena.games import ActionGrammar

#: ``<think>`` markers, which every style may meet in a reasoning model's response.
THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)


class Extracted:
    """What a style found: the reasoning text and the answer blocks' move texts, in order."""

    __slots__ = ("answers", "reasoning")

    def __init__(self, reasoning: str, answers: list[str]) -> None:
        self.reasoning = reasoning
        self.answers = answers

    def __repr__(self) -> str:
        return f"Extracted(reasoning={self.reasoning!r}, answers={self.answers!r})"


class AnswerStyle(abc.ABC):
    """One answer style: a parser, the answer it writes, its prompt template and hints.

    Subclasses set :attr:`name`, :attr:`answer_hint` and :attr:`reasoning_hint`, and implement
    :meth:`extract` and :meth:`answer_block`; the rest has defaults that most styles keep.
    """

    #: The style's name (``--style``, configs, the game header); unique in the registry.
    name: ClassVar[str]
    #: Whether a missing or empty reasoning part is an error unless the caller says otherwise.
    requires_reasoning: ClassVar[bool] = True
    #: Whether answers may name actions by id, which only a menu game has (``spin_bench``):
    #: such a style cannot play a free-text game.
    menu_only: ClassVar[bool] = False
    #: Error detail when no answer is found.
    answer_hint: ClassVar[str]
    #: Error detail when the reasoning is missing.
    reasoning_hint: ClassVar[str] = "reason step by step before your answer"

    @property
    def template(self) -> str:
        """The response-format template file, under ``prompts/styles/`` (or a game folder)."""
        return f"{self.name}.txt"

    @abc.abstractmethod
    def extract(self, text: str, *, strict: bool, need_reasoning: bool) -> Extracted | ActionError:
        """The reasoning and the move texts of the answer blocks of ``text``.

        Args:
            text: the response (non-empty).
            strict: whether the style's exact layout is required (text after the answer block
                is then an error); lenient mode tolerates text around the answer.
            need_reasoning: whether the caller requires reasoning in the response itself (a
                style may use it to name the error precisely; :func:`validate` checks it too).
        """

    @abc.abstractmethod
    def answer_block(self, action_text: str) -> str:
        """The answer part alone of a response that plays ``action_text`` (no reasoning)."""

    def format_answer(self, reasoning: str, action_text: str) -> str:
        """A whole response playing ``action_text`` with ``reasoning`` (what validates)."""
        return f"{reasoning} {self.answer_block(action_text)}".lstrip()

    def read_answer(
        self, answer: str, menu: Mapping[int, str], grammar: ActionGrammar
    ) -> Action | ActionError:
        """Read one answer's move text (as written) against the menu, by the game's grammar."""
        return grammar.parse(answer.strip(), menu)

    def move_text(self, answer: str) -> str:
        """The move a free-text game is sent for one answer's text (as written; stripped here)."""
        return answer.strip()

    def action_line(self, action: int, text: str) -> str:
        """How one legal action is listed in the prompt."""
        return f"- {text}"

    def request_options(self, legal_texts: Iterable[str]) -> dict[str, Any]:
        """Extra fields of each chat request (e.g. ``tools``); none by default."""
        return {}

    def history_answer(self, response: str) -> str | None:
        """The answer blocks of ``response`` without reasoning, or ``None`` if it has none."""
        found = self.extract(response, strict=False, need_reasoning=False)
        if isinstance(found, ActionError) or not found.answers:
            return None
        return "\n".join(self.answer_block(answer) for answer in found.answers)

    def reply(self, reasoning: str, action_text: str) -> tuple[dict[str, Any], str]:
        """An endpoint's assistant message fields playing ``action_text``, and finish reason."""
        return {"content": self.format_answer(reasoning, action_text)}, "stop"

    def vocabulary(self, action_texts: Iterable[str]) -> list[str]:
        """Whole answer pieces a tiny word-level tokenizer needs to write valid answers."""
        return [self.answer_block(text) for text in sorted(set(action_texts))]

    def __repr__(self) -> str:
        return f"<answer style {self.name!r}>"


def json_text(value: object) -> str:
    """``value`` as compact JSON text (used to echo a non-string reasoning field)."""
    return value if isinstance(value, str) else json.dumps(value)
