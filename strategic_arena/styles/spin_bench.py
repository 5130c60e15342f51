"""``spin_bench``: SPIN-Bench's answer object ``{"reason": "...", "action": 3}``.

SPIN-Bench (Yao et al., 2025) asks for "a json object with the key "reason" and the value
string as the detailed reason for your action, and the key "action" and the value as the
index" of the move, and reads ``int(parsed["action"])``. Here the ``action`` is either an
action **id** -- a JSON integer or a string of digits, looked up in the menu of legal actions,
which this style lists as ``- ID: MOVE`` -- or a move text, read by the game's grammar.

Layout as in ``json`` (one object, strict: nothing around it), with ``reason`` as the reasoning
field. Ids are the package's (OpenSpiel's) action ids, shown next to each legal action; they
are not SPIN-Bench's PettingZoo cell numbers, which index Tic-Tac-Toe by columns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import ClassVar

from strategic_arena.actions import Action, ActionError
from strategic_arena.games import ActionGrammar
from strategic_arena.styles.json import JsonStyle


class SpinBenchStyle(JsonStyle):
    """``{"reason": ..., "action": ID or MOVE}``."""

    name: ClassVar[str] = "spin_bench"
    menu_only: ClassVar[bool] = True
    reasoning_field: ClassVar[str] = "reason"
    answer_hint: ClassVar[str] = 'no "action" field found'
    reasoning_hint: ClassVar[str] = 'give your reasoning in the "reason" field'

    def read_answer(
        self, answer: str, menu: Mapping[int, str], grammar: ActionGrammar
    ) -> Action | ActionError:
        """An id (digits) from the menu, else a move text read by the grammar."""
        answer = answer.strip()
        if not _is_id(answer):
            return grammar.parse(answer, menu)
        action = int(answer)
        if action in menu:
            return Action(action, menu[action])
        ids = ", ".join(str(a) for a in menu)
        if action < grammar.num_actions:
            return ActionError(
                "illegal_action", f"action {action} is not legal now; legal action ids: {ids}"
            )
        return ActionError("unknown_action", f"{action} is not an action id; legal ids: {ids}")

    def action_line(self, action: int, text: str) -> str:
        """``- ID: MOVE``, so that the model can answer with the id."""
        return f"- {action}: {text}"

    def answer_block(self, action_text: str) -> str:
        """``{"action": MOVE}`` (an id when the text is one)."""
        return json.dumps({"action": _id_or_text(action_text)})

    def format_answer(self, reasoning: str, action_text: str) -> str:
        """The object with both fields, reasoning first."""
        return json.dumps({"reason": reasoning, "action": _id_or_text(action_text)})


def _id_or_text(action_text: str) -> int | str:
    """A digit string as the integer id SPIN-Bench writes, else the text."""
    return int(action_text) if _is_id(action_text) else action_text


def _is_id(text: str) -> bool:
    """Whether ``text`` is written in ASCII digits only (an action id)."""
    return text.isascii() and text.isdigit()
