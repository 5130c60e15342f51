"""A served problem solver for the transfer tests: right on a known subset, over real HTTP.

:class:`ProblemOracle` answers chat requests like ``strategic-arena serve`` answers moves (the
``service`` of :class:`tests.servers.FaultServer`: ``models()`` and ``complete(body)``): it
finds the problem whose question the last user message holds, reads which sample is asked
from the request's seed (the runner's :func:`~strategic_arena.transfer.sample_seed`; a
request without a known seed is sample 0: lm-eval sends 1234 with every request), and
answers right -- the gold answer boxed -- exactly where ``right(problem_id, sample)`` says,
else a wrong one; ``reply`` may replace a reply's content by any JSON value (hostile
replies).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from strategic_arena.problems import Problem
from strategic_arena.transfer import BenchmarkRun, sample_seed

Right = Callable[[str, int], bool]
Reply = Callable[[str, int], Any]


def wrong_answer(problem: Problem) -> str:
    """An answer that is not the gold one."""
    if problem.multiple_choice:
        letters = problem.letters
        return letters[(letters.index(problem.answer) + 1) % len(letters)]
    return f"{problem.answer}1" if problem.answer.isdigit() else "\\text{none}"


def completion(model: str, content: Any, completion_tokens: int) -> dict[str, Any]:
    """A chat completion of ``content`` (10 prompt tokens, ``completion_tokens`` answered)."""
    return {
        "id": "served",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": completion_tokens,
            "total_tokens": 10 + completion_tokens,
        },
    }


class ProblemOracle:
    """Answers the problems of ``runs``; see the module docstring."""

    def __init__(
        self,
        runs: Sequence[BenchmarkRun],
        right: Right,
        reply: Reply | None = None,
        model: str = "oracle",
        gate: threading.Semaphore | None = None,
    ) -> None:
        self.model = model
        self.right = right
        self.reply = reply
        self.gate = gate  # each answer takes one permit: a test holds the server mid-run
        self.problems: dict[str, Problem] = {}
        self.samples: dict[tuple[str, int], int] = {}
        for run in runs:
            for problem in run.problems():
                self.problems[problem.question] = problem
                for sample in range(run.protocol.samples):
                    seed = sample_seed(run.seed, run.benchmark.name, problem.id, sample)
                    self.samples[(problem.id, seed)] = sample
        self.asked: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    def models(self) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": self.model, "object": "model"}]}

    def problem_of(self, text: str) -> Problem:
        found = [q for q in self.problems if q in text]
        return self.problems[max(found, key=len)]

    def complete(self, body: dict[str, Any], header: str | None = None) -> dict[str, Any]:
        if self.gate is not None:
            self.gate.acquire()
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        problem = self.problem_of(user)
        seed = body.get("seed")
        sample = self.samples.get((problem.id, int(seed)), 0) if seed is not None else 0
        with self.lock:
            self.asked.append((problem.id, sample))
        answer = problem.answer if self.right(problem.id, sample) else wrong_answer(problem)
        content: Any = f"Let me think step by step. So the answer is \\boxed{{{answer}}}."
        if self.reply is not None and (hostile := self.reply(problem.id, sample)) is not None:
            content = hostile
        return completion(self.model, content, 12)
