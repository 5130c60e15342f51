"""A served player for the multi-agent transfer tests: each role of MAD and AutoGen scripted.

:class:`ScriptedPlayer` answers chat requests over real HTTP (the ``service`` of
:class:`tests.servers.FaultServer`). It tells the role from the messages (the system message's
first words, the judge's and moderator's last instruction, the user proxy's view that starts
with the task as the assistant's), the problem from the question the messages hold (its index
``i`` in its benchmark file: each file's problems are one of ``files``), and the round from
how many user messages the role has seen, and answers by the rules below, so that each
system's accuracy is known by hand.

* single agent (no system's prompt): right iff ``i < 3``.
* MAD: the affirmative is right iff ``i`` is even; the negative, in the first round, iff
  ``i % 3 == 0``, and right from the second round on. The moderator prefers the negative and
  gives its boxed answer (unboxed, as text) when ``i % 4`` is 0 or 2; when ``i % 4 == 1`` only
  from the second round; when ``i % 4 == 3`` never (``i == 7``: not even JSON). The judge lists
  the candidates, then gives the affirmative's first answer (as JSON for ``i == 3``, as a bare
  reply for ``i == 7``).
* AutoGen: the assistant's first reply is right iff ``i`` is even, its later ones right; it
  says TERMINATE first iff ``i % 3 == 0``. The user proxy says TERMINATE at once when
  ``i % 3 == 1``; when ``i % 3 == 2`` it asks to check again, and says TERMINATE at its second
  turn only when ``i >= 5``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from strategic_arena.problems import Problem, extract_boxed
from tests.transfer.oracle import completion, wrong_answer

Messages = list[dict[str, str]]


def between(text: str, start: str, end: str | None = None) -> str:
    """The part of ``text`` after ``start`` (and before ``end``)."""
    tail = text.split(start, 1)[1]
    return tail.split(end, 1)[0] if end else tail


class ScriptedPlayer:
    """Plays every role of MAD and AutoGen by the module's rules; records who was asked."""

    def __init__(
        self,
        files: Sequence[Sequence[Problem]],
        model: str = "player",
        gate: threading.Semaphore | None = None,
    ) -> None:
        self.model = model
        self.gate = gate  # each reply takes one permit: a test holds the server mid-run
        self.problems = [problem for problems in files for problem in problems]
        self.index = [i for problems in files for i in range(len(problems))]
        self.asked: list[tuple[str, int]] = []  # (role, problem index) of every request
        self.lock = threading.Lock()

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model, "object": "model"}]}

    def position_of(self, messages: Messages) -> int:
        """The asked problem's position in ``self.problems`` (the longest question held)."""
        text = "\n".join(m["content"] for m in messages)
        found = [k for k, p in enumerate(self.problems) if p.question in text]
        return max(found, key=lambda k: len(self.problems[k].question))

    @staticmethod
    def role_of(messages: Messages) -> str:
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        last = messages[-1]["content"]
        if system.startswith("You are a debater"):
            return (
                "negative"
                if "You disagree with my answer" in messages[1]["content"]
                else ("affirmative")
            )
        if system.startswith("You are a moderator"):
            if last.startswith("Now, what answer") or "what answer candidates" in last:
                return "judge"
            return "judge" if last.startswith("Therefore,") else "moderator"
        if system.startswith("You are a helpful AI assistant"):
            return "assistant"
        return "user_proxy" if messages[0]["role"] == "assistant" else "single"

    def boxed(self, position: int, right: bool) -> str:
        problem = self.problems[position]
        return problem.answer if right else wrong_answer(problem)

    def reply(self, role: str, position: int, messages: Messages) -> str:
        i, turn = self.index[position], sum(m["role"] == "user" for m in messages)
        if role == "single":
            return f"So \\boxed{{{self.boxed(position, i < 3)}}}."
        if role == "affirmative":
            return f"I hold \\boxed{{{self.boxed(position, i % 2 == 0)}}}."
        if role == "negative":
            return f"I hold \\boxed{{{self.boxed(position, turn > 1 or i % 3 == 0)}}}."
        if role == "moderator":
            return self.moderate(i, turn, messages[-1]["content"])
        if role == "judge":
            return self.judge(i, messages)
        if role == "assistant":
            done = " TERMINATE" if turn == 1 and i % 3 == 0 else ""
            right = turn > 1 or i % 2 == 0
            return f"The final answer is \\boxed{{{self.boxed(position, right)}}}.{done}"
        ends = i % 3 == 1 or (i % 3 == 2 and i >= 5 and turn == 2)
        return "TERMINATE" if ends else "Please check again."

    @staticmethod
    def moderate(i: int, turn: int, told: str) -> str:
        if i == 7:
            return "I cannot decide yet."
        negative = extract_boxed(between(told, "Negative side arguing:", "You, as the moderator"))
        prefers = i % 4 in (0, 2) or (i % 4 == 1 and turn >= 2)
        verdict = {
            "Whether there is a preference": "Yes" if prefers else "No",
            "Supported Side": "Negative" if prefers else "",
            "Reason": "",
            "debate_answer": negative if prefers else "",
        }
        return f"```json\n{json.dumps(verdict)}\n```"

    @staticmethod
    def judge(i: int, messages: Messages) -> str:
        if messages[-1]["content"].startswith("Affirmative side arguing"):
            return "The candidates are the two boxed answers."
        first = extract_boxed(
            between(messages[1]["content"], "Affirmative side arguing:", "Negative")
        )
        if i == 7:
            return f"The affirmative is right: \\boxed{{{first}}}"
        return json.dumps({"Reason": "the affirmative", "debate_answer": f"\\boxed{{{first}}}"})

    def complete(self, body: dict[str, Any], header: str | None = None) -> dict[str, Any]:
        if self.gate is not None:
            self.gate.acquire()
        messages: Messages = body["messages"]
        role, position = self.role_of(messages), self.position_of(messages)
        with self.lock:
            self.asked.append((role, self.index[position]))
        return completion(self.model, self.reply(role, position, messages), 7)
