r"""Few-shot prompts: K worked exemplars before the problem, for base models.

SPIRAL evaluates its trained models zero-shot "except for the base model, for which we provide
few-shot examples". ``transfer run --shots K`` asks every problem after K exemplars
(:mod:`.exemplars`), as a chat: the paper's prompt (:mod:`.prompts`) asks each exemplar's
question in a user turn and an assistant turn answers it with the exemplar's reasoning and its
answer boxed, ``The answer is \boxed{6}.``; the problem itself is the last user turn, asked
exactly as zero-shot. A system message (Qwen2.5-Math's instruction) is sent once, first.

An exemplar whose question is the problem's own (compared without case and spacing) is never
shown, since it would hand the model the answer: the next exemplar takes its place. With too few
exemplars left for K, :func:`check_shots` refuses the run before any request.
"""

from __future__ import annotations

from collections.abc import Sequence

from strategic_arena.problems import Problem
from strategic_arena.transfer.exemplars import GSM8K_COT, Exemplar
from strategic_arena.transfer.prompts import Prompt

__all__ = ["MAX_SHOTS", "check_shots", "exemplars_for", "fewshot_messages"]

#: The most exemplars a prompt can hold.
MAX_SHOTS = len(GSM8K_COT)


def _key(text: str) -> str:
    """``text``'s letters and digits, case folded: what "the same question" means.

    Case, spacing and punctuation are left out, so a problem that differs from an exemplar
    only in a question mark or a comma still counts as that exemplar (its answer is never
    shown before it).
    """
    return "".join(char for char in text.casefold() if char.isalnum())


def exemplars_for(problem: Problem, shots: int) -> list[Exemplar]:
    """The first ``shots`` exemplars whose question is not ``problem``'s.

    Raises:
        ValueError: fewer than ``shots`` such exemplars.
    """
    own = _key(problem.question)
    chosen = [e for e in GSM8K_COT if _key(e.question) != own][:shots]
    if len(chosen) < shots:
        raise ValueError(
            f"problem {problem.id}: {shots} shots asked, but only {len(chosen)} exemplars differ "
            f"from the problem (there are {MAX_SHOTS}); ask for fewer shots"
        )
    return chosen


def check_shots(problems: Sequence[Problem], shots: int) -> None:
    """Refuse ``shots`` outside 0..MAX_SHOTS or too many for one of ``problems``.

    Raises:
        ValueError: one line naming the problem or the bound.
    """
    if not 0 <= shots <= MAX_SHOTS:
        raise ValueError(f"shots must be between 0 and {MAX_SHOTS}, not {shots}")
    if shots:
        for problem in problems:
            exemplars_for(problem, shots)


def _asked(prompt: Prompt, problem: Problem) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """``prompt``'s zero-shot messages for ``problem``: (system messages, the others)."""
    messages = prompt.messages(problem)
    return (
        [m for m in messages if m["role"] == "system"],
        [m for m in messages if m["role"] != "system"],
    )


def fewshot_messages(prompt: Prompt, problem: Problem, shots: int) -> list[dict[str, str]]:
    """The chat that asks ``problem`` after ``shots`` exemplars (zero-shot when 0)."""
    if shots == 0:
        return prompt.messages(problem)
    system, question = _asked(prompt, problem)
    turns: list[dict[str, str]] = []
    for number, exemplar in enumerate(exemplars_for(problem, shots)):
        worked = Problem(f"exemplar-{number}", exemplar.question, exemplar.answer)
        answer = f"{exemplar.reasoning} The answer is \\boxed{{{exemplar.answer}}}."
        turns += [*_asked(prompt, worked)[1], {"role": "assistant", "content": answer}]
    return [*system, *turns, *question]
