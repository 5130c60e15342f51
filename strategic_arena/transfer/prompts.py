r"""The zero-shot prompts of the papers, as chat messages the model's chat template formats.

A prompt is a small object in :data:`PROMPTS` (name -> :class:`Prompt`): a system message (or
none) and a user message built from the problem. The server (or the trainer's engine) applies
the model's own chat template to these messages, as the papers' evaluations did.

* ``qwen25_math_cot`` -- MARSHAL's evaluation (Qwen2.5-Math's evaluation scripts, their
  ``qwen25-math-cot`` template): system "Please reason step by step, and put your final answer
  within \boxed{}.", user the question.
* ``spiral_qwen3`` -- SPIRAL's general-reasoning template (``apply_qwen3_general_template`` of
  ``spiral/core/template.py``): one user message, "Question: {question}" then "Please reason
  step by step, and put your final answer within \boxed{}.".

Multiple-choice problems get their choices after the question as Qwen2.5-Math's scripts write
them for MMLU-STEM and AQuA (``Answer Choices: (A) ... (B) ...``), and the instruction asks for
the letter in the box (our wording; the scripts read the letter from the box or the text, as
:func:`~strategic_arena.problems.extract_choice` does).
"""

from __future__ import annotations

from dataclasses import dataclass

from strategic_arena.problems import Problem

__all__ = ["PROMPTS", "Prompt", "prompt"]

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
CHOICE_INSTRUCTION = (
    "Please reason step by step, and put the letter of your final answer within \\boxed{}."
)


def question_text(problem: Problem) -> str:
    """The question, with its choices appended when it has some."""
    return problem.with_choices("({letter}) {text}", " ", heading="Answer Choices: ")


def instruction(problem: Problem) -> str:
    """The boxed-answer instruction (the letter for multiple choice)."""
    return CHOICE_INSTRUCTION if problem.multiple_choice else BOXED_INSTRUCTION


@dataclass(frozen=True)
class Prompt:
    """A paper's zero-shot prompt.

    Attributes:
        name: the registry name.
        instruction_in_system: the instruction is the system message and the question the
            user's (Qwen2.5-Math); else one user message, question then instruction.
        question_prefix: written before the question (SPIRAL's ``Question: ``).
        source: where the wording comes from.
    """

    name: str
    instruction_in_system: bool
    question_prefix: str
    source: str

    def messages(self, problem: Problem) -> list[dict[str, str]]:
        """The chat messages that ask ``problem``."""
        question = self.question_prefix + question_text(problem)
        if self.instruction_in_system:
            return [
                {"role": "system", "content": instruction(problem)},
                {"role": "user", "content": question},
            ]
        return [{"role": "user", "content": f"{question}\n{instruction(problem)}"}]


#: Every prompt by name.
PROMPTS: dict[str, Prompt] = {
    entry.name: entry
    for entry in (
        Prompt(
            "qwen25_math_cot",
            instruction_in_system=True,
            question_prefix="",
            source="Qwen2.5-Math evaluation scripts, template qwen25-math-cot (MARSHAL)",
        ),
        Prompt(
            "spiral_qwen3",
            instruction_in_system=False,
            question_prefix="Question: ",
            source="SPIRAL, spiral/core/template.py apply_qwen3_general_template",
        ),
    )
}


def prompt(name: str) -> Prompt:
    """The registered prompt ``name`` (``ValueError`` listing the names otherwise)."""
    try:
        return PROMPTS[name]
    except KeyError:
        raise ValueError(f"unknown prompt {name!r}; known: {', '.join(sorted(PROMPTS))}") from None
