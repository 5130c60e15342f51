"""One reasoning problem: its question, its gold answer and, for multiple choice, its choices.

A :class:`Problem` is what every schema loader of :mod:`strategic_arena.problems.schemas`
returns, whatever the benchmark's own file looks like, so that the prompts, the answer checks
and the transfer evaluation read one record.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

__all__ = ["CHOICE_LETTERS", "Problem"]

#: The letters that name the choices of a multiple-choice problem, in order (MMLU-Pro has ten).
CHOICE_LETTERS = string.ascii_uppercase


@dataclass(frozen=True)
class Problem:
    """A question with a gold answer.

    Attributes:
        id: unique within its file (the benchmark's own id where it has one, else
            ``<source>-<line>``); results are stored under it.
        question: the problem statement, as the benchmark writes it (choices not included).
        answer: the gold answer as text: a number or LaTeX expression for open answers, the
            letter of the right choice (``"A"``, ``"B"``...) for multiple choice.
        choices: the texts of the choices, in the order their letters name them; empty for an
            open answer.
        source: where the problem comes from (the schema's name and the file), for reports.
    """

    id: str
    question: str
    answer: str
    choices: tuple[str, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("a problem needs an id")
        if self.choices:
            if len(self.choices) > len(CHOICE_LETTERS):
                raise ValueError(f"problem {self.id!r}: more than 26 choices")
            if self.answer not in self.letters:
                raise ValueError(
                    f"problem {self.id!r}: answer {self.answer!r} is not one of the letters "
                    f"{''.join(self.letters)}"
                )

    @property
    def letters(self) -> tuple[str, ...]:
        """The letters of the choices (``("A", "B", "C", "D")`` for four)."""
        return tuple(CHOICE_LETTERS[: len(self.choices)])

    @property
    def multiple_choice(self) -> bool:
        """Whether the answer is a letter naming one of :attr:`choices`."""
        return bool(self.choices)

    def with_choices(self, choice: str, separator: str, heading: str = "") -> str:
        """The question, then (when it has choices) a line of ``heading`` and its lettered choices.

        Each choice is written as ``choice.format(letter=..., text=...)`` and joined with
        ``separator``: the debate's ``"{letter}. {text}"`` one a line, or the transfer prompts'
        ``"({letter}) {text}"`` after ``Answer Choices:``, as Qwen2.5-Math's evaluation writes
        them. The choice's text is an argument, never part of the template, so braces in it are
        kept as they are.
        """
        if not self.multiple_choice:
            return self.question
        choices = separator.join(
            choice.format(letter=letter, text=text)
            for letter, text in zip(self.letters, self.choices, strict=True)
        )
        return f"{self.question}\n{heading}{choices}"
