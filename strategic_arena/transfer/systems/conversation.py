"""One sample played through a multi-agent system: who asks which endpoint, and the answer.

A :class:`Conversation` is the bookkeeping of one problem's sample in MAD or AutoGen: each
:meth:`~Conversation.ask` sends one role's messages to the backend that plays the role (the
evaluated model's, or the peer's: :class:`Cast`), with the protocol's sampling and a request
seed of its own (derived from the sample's seed, the system, the role and the turn: the same
requests on every rerun), and records the turn. A request that fails after the backend's
retries ends the conversation (:class:`TurnFailed`): the sample stores nothing and a rerun
plays it again from the start. :meth:`~Conversation.answer` checks the system's final text with
the single agent's checker and keeps the whole transcript as the stored response.
:class:`ConversationSystem` is what MAD and AutoGen share: their settings, and one sample
answered as one conversation (:meth:`~ConversationSystem.play`, each system's own).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from strategic_arena.backends import ChatResult
from strategic_arena.door.printable import printable_line
from strategic_arena.problems import Problem, check_answer, extract_boxed, extract_choice
from strategic_arena.seeding import derive_seed
from strategic_arena.transfer.benchmarks import BenchmarkRun
from strategic_arena.transfer.prompts import instruction, question_text
from strategic_arena.transfer.runner import BackendFor, failure_line, sample_seed
from strategic_arena.transfer.store import Answer

__all__ = ["Cast", "Conversation", "ConversationSystem", "Turn", "TurnFailed", "task_text"]

Messages = list[dict[str, str]]


class TurnFailed(Exception):
    """A request of the conversation failed after the backend's retries (one line)."""


def task_text(problem: Problem) -> str:
    """The problem as a system's agents get it: the question (with choices), the instruction."""
    return f"{question_text(problem)}\n{instruction(problem)}"


@dataclass(frozen=True)
class Cast:
    """Who plays each role: the evaluated model, except the roles given to the peer.

    Attributes:
        evaluated: the evaluated model's backend, by sampling.
        peer: the peer endpoint's backend (``None``: the evaluated model plays every role).
        peer_roles: the roles the peer plays.
    """

    evaluated: BackendFor
    peer: BackendFor | None = None
    peer_roles: frozenset[str] = frozenset()

    def backend(self, role: str) -> BackendFor:
        """The backend that plays ``role``."""
        if role in self.peer_roles and self.peer is not None:
            return self.peer
        return self.evaluated


@dataclass(frozen=True)
class Turn:
    """One role's reply in a conversation."""

    role: str
    result: ChatResult


@dataclass
class Conversation:
    """One sample of one problem played through ``system``; see the module docstring."""

    system: str
    run: BenchmarkRun
    problem: Problem
    sample: int
    cast: Cast
    turns: list[Turn] = field(default_factory=list)

    async def ask(self, role: str, messages: Messages) -> str:
        """``role``'s reply to ``messages`` (a malformed reply is ``""``).

        Raises:
            TurnFailed: the request failed after the backend's retries, or the backend raised.
        """
        protocol = self.run.protocol
        base = sample_seed(self.run.seed, self.run.benchmark.name, self.problem.id, self.sample)
        seed = derive_seed(base, self.system, role, len(self.turns)) % (2**31 - 1)
        try:
            result = await self.cast.backend(role)(protocol.sampling(seed)).complete(messages)
        except Exception as error:  # a backend that raises fails this sample only
            raise TurnFailed(f"{type(error).__name__}: {printable_line(error, 200)}") from None
        if result.error is not None:
            raise TurnFailed(f"{role}: {failure_line(result)}")
        self.turns.append(Turn(role, result))
        return result.content if result.malformed is None else ""

    def readable(self, text: str) -> str | None:
        """The answer ``text`` gives (a box, or a letter for multiple choice), else ``None``."""
        if self.problem.multiple_choice:
            return extract_choice(text, len(self.problem.choices))
        return extract_boxed(text)

    def answer(self, final: str) -> Answer:
        """The checked answer whose text is ``final``; the transcript is the stored response."""
        transcript = "\n\n".join(f"[{turn.role}] {turn.result.content}" for turn in self.turns)
        last = self.turns[-1].result if self.turns else ChatResult()
        return Answer(
            problem_id=self.problem.id,
            sample=self.sample,
            correct=check_answer(self.problem, final),
            extracted=self.readable(final),
            response=f"{transcript}\n\n[final answer] {final}",
            reasoning=last.reasoning,
            finish_reason=last.finish_reason,
            malformed=last.malformed,
            prompt_tokens=sum(turn.result.prompt_tokens for turn in self.turns),
            completion_tokens=sum(turn.result.completion_tokens for turn in self.turns),
            latency_s=sum(turn.result.latency_s for turn in self.turns),
        )


@dataclass(frozen=True)
class ConversationSystem:
    """A multi-agent system as an answerer of the transfer runner (MAD, AutoGen).

    Attributes:
        cast: who plays which role.
        rounds: the most rounds (MASLab: 3).
        peer_model: the peer's model name, stored with the run (``None``: no peer).
        name: the system's name (a subclass's).
    """

    cast: Cast
    rounds: int = 3
    peer_model: str | None = None
    name: str = ""

    def settings(self) -> dict[str, Any] | None:
        """The system, its rounds and who plays what (stored with the run)."""
        return {
            "name": self.name,
            "rounds": self.rounds,
            "peer_roles": sorted(self.cast.peer_roles),
            "peer_model": self.peer_model,
        }

    async def answer(
        self, run: BenchmarkRun, problem: Problem, sample: int, backend_for: BackendFor
    ) -> Answer | str:
        """One conversation's checked final answer, or a failure line.

        ``backend_for`` is unused: the cast holds the evaluated model's and the peer's.
        """
        conversation = Conversation(self.name, run, problem, sample, self.cast)
        try:
            final = await self.play(conversation, task_text(problem))
        except TurnFailed as failure:
            return str(failure)
        return conversation.answer(final)

    async def play(self, conversation: Conversation, task: str) -> str:
        """The conversation of one sample; the final answer's text (each system's own)."""
        raise NotImplementedError
