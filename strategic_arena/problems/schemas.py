r"""Schema loaders: each benchmark's published file layout read into :class:`Problem` records.

A schema is a small object in :data:`SCHEMAS` (name -> :class:`ProblemSchema`): its fields, in
words, and how one row becomes a problem. :func:`load_problems` reads a file (JSON Lines, a JSON
array or CSV; :mod:`strategic_arena.problems.files`) with one of them. To add a schema, subclass
:class:`ProblemSchema`, implement :meth:`~ProblemSchema.problem` and add an instance to
:data:`SCHEMAS` (its ``aliases`` too); ``docs/transfer.md`` lists them.

Ids: a row's own id (``id``, ``unique_id``, ``idx``, ``question_id``, ``uid``, ``Record ID``)
where it has one, else ``<schema>-<line>``; ids must be unique in a file, since results are
stored under them. Multiple-choice schemas give letters (``A``...) as answers. GPQA's file
lists the correct answer first, so its four choices are put in an order drawn from a seed
derived from the question (the same order on every machine and every run).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from strategic_arena.door import Refused, decode
from strategic_arena.problems.answers import extract_boxed
from strategic_arena.problems.files import ProblemFileError, read_rows
from strategic_arena.problems.records import CHOICE_LETTERS, Problem

__all__ = ["SCHEMAS", "ProblemSchema", "RowError", "load_problems", "schema"]

_ID_FIELDS = ("id", "unique_id", "idx", "question_id", "uid", "Record ID")
_GSM8K_ANSWER = re.compile(r"####\s*(.+?)\s*$", re.DOTALL)
_AQUA_OPTION = re.compile(r"^\s*\(?([A-Z])\s*\)\s*")

#: MMLU's STEM subjects (its "STEM" category: mathematics, physics, chemistry, biology,
#: computer science, engineering), the MMLU-STEM of Qwen2.5-Math's evaluation (3,018 problems).
#: Anatomy is not one: MMLU files it under health, in its "other" category (with it, 3,153).
MMLU_STEM_SUBJECTS = frozenset(
    {
        "abstract_algebra",
        "astronomy",
        "college_biology",
        "college_chemistry",
        "college_computer_science",
        "college_mathematics",
        "college_physics",
        "computer_security",
        "conceptual_physics",
        "electrical_engineering",
        "elementary_mathematics",
        "high_school_biology",
        "high_school_chemistry",
        "high_school_computer_science",
        "high_school_mathematics",
        "high_school_physics",
        "high_school_statistics",
        "machine_learning",
    }
)

#: ANLI's labels in the order of their numbers.
ANLI_LABELS = ("entailment", "neutral", "contradiction")


class RowError(ValueError):
    """What is wrong with one row (the loader adds the file and the line)."""


class ProblemSchema:
    """One benchmark file layout: its name, its fields in words, and a row -> problem reader."""

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    fields: ClassVar[str]
    """The row's fields, in words (``docs/transfer.md`` and ``--help`` quote it)."""

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem | None:
        """The problem of one row (``None``: the row is not part of the benchmark)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<problem schema {self.name!r}>"


def _field(row: Mapping[str, Any], *names: str) -> Any:
    """The value of the first of ``names`` present in ``row``."""
    for name in names:
        if name in row and row[name] is not None:
            return row[name]
    raise RowError(f"missing field {' or '.join(repr(name) for name in names)}")


def _text(row: Mapping[str, Any], *names: str) -> str:
    """A non-empty text field (numbers written as text)."""
    value = _field(row, *names)
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RowError(f"field {names[0]!r} must be text, not {type(value).__name__}")
    text = str(value).strip()
    if isinstance(value, float) and value.is_integer():
        text = str(int(value))
    if not text:
        raise RowError(f"field {names[0]!r} is empty")
    return text


def _row_id(row: Mapping[str, Any], default_id: str) -> str:
    for name in _ID_FIELDS:
        value = row.get(name)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return default_id


def _choice_list(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str):  # a CSV or a stringified list
        try:
            value = decode(value, f"field {name!r}")
        except Refused:
            raise RowError(f"field {name!r} must be a list of choices") from None
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise RowError(f"field {name!r} must be a non-empty list of choices")
    if len(value) > len(CHOICE_LETTERS):
        raise RowError(f"field {name!r} has more than {len(CHOICE_LETTERS)} choices")
    if not all(isinstance(choice, str | int | float) for choice in value):
        raise RowError(f"field {name!r} must hold texts")
    return tuple(str(choice).strip() for choice in value)


def _letter(value: Any, n_choices: int, name: str) -> str:
    """A gold choice given as a letter (``"B"``, ``"(B)"``) or a 0-based index."""
    if isinstance(value, int) and not isinstance(value, bool):
        index = value
    elif isinstance(value, str) and value.strip().isdigit():
        index = int(value.strip())
    elif isinstance(value, str) and len(value.strip(" ()")) == 1:
        index = CHOICE_LETTERS.find(value.strip(" ()").upper())
    else:
        raise RowError(f"field {name!r} must be a letter or a 0-based index, not {value!r}")
    if not 0 <= index < n_choices:
        raise RowError(f"field {name!r} ({value!r}) names no choice of {n_choices}")
    return CHOICE_LETTERS[index]


def _boxed_gold(solution: str, name: str) -> str:
    answer = extract_boxed(solution)
    if not answer:
        raise RowError(f"field {name!r} has no \\boxed{{}} answer and the row no 'answer'")
    return answer


class GSM8K(ProblemSchema):
    """GSM8K (openai/gsm8k): ``question``, ``answer`` (worked solution ending ``#### N``)."""

    name = "gsm8k"
    fields = "question; answer: the worked solution, ending '#### N' (N the gold number)"

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem:
        solution = _text(row, "answer")
        match = _GSM8K_ANSWER.search(solution)
        if match is None:
            raise RowError("field 'answer' has no '#### N' final answer")
        gold = match.group(1).replace(",", "").strip()
        return Problem(_row_id(row, default_id), _text(row, "question"), gold, source=source)


class MATH(ProblemSchema):
    r"""MATH / MATH500: ``problem``, ``answer`` (else the ``solution``'s last ``\boxed{}``)."""

    name = "math"
    aliases = ("math500", "minerva")
    fields = (
        "problem (or question); answer, else solution with the answer in its last \\boxed{} "
        "(Minerva's minerva_math rows: problem, solution); optional unique_id / id"
    )

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem:
        if row.get("answer") not in (None, ""):
            gold = _text(row, "answer")
        else:
            gold = _boxed_gold(_text(row, "solution"), "solution")
        return Problem(
            _row_id(row, default_id), _text(row, "problem", "question"), gold, source=source
        )


class Competition(ProblemSchema):
    """AIME / AMC: ``problem`` or ``question``, and ``answer`` (a number)."""

    name = "competition"
    aliases = ("aime", "amc", "aime24", "aime25", "amc23")
    fields = "problem (or question); answer: the final number; optional id"

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem:
        return Problem(
            _row_id(row, default_id),
            _text(row, "problem", "question"),
            _text(row, "answer"),
            source=source,
        )


class OlympiadBench(ProblemSchema):
    """OlympiadBench: ``question``, ``final_answer`` (a list; several answers joined by ``,``)."""

    name = "olympiadbench"
    fields = (
        "question; final_answer: a list of answer texts (or one text), several joined by ', '; "
        "optional context (prepended) and id"
    )

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem:
        answers = _field(row, "final_answer", "answer")
        if isinstance(answers, str):
            try:
                decoded = decode(answers, "field 'final_answer'")
            except Refused:  # not JSON (or a bomb): the text itself
                decoded = answers
            answers = decoded
        if isinstance(answers, list):
            if not answers or not all(isinstance(answer, str | int | float) for answer in answers):
                raise RowError("field 'final_answer' must be a non-empty list of texts")
            gold = ", ".join(str(answer).strip().strip("$") for answer in answers)
        else:
            gold = _text(row, "final_answer", "answer").strip("$")
        question = _text(row, "question", "problem")
        context = row.get("context")
        if isinstance(context, str) and context.strip():
            question = f"{context.strip()}\n\n{question}"
        return Problem(_row_id(row, default_id), question, gold, source=source)


class GPQA(ProblemSchema):
    """GPQA (Diamond): ``Question``, ``Correct Answer``, ``Incorrect Answer 1..3``."""

    name = "gpqa"
    aliases = ("gpqa_diamond",)
    fields = (
        "Question, Correct Answer, Incorrect Answer 1, Incorrect Answer 2, Incorrect Answer 3 "
        "(GPQA's CSV columns); the four choices are put in an order seeded by the question"
    )

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem:
        question = _text(row, "Question", "question")
        correct = _text(row, "Correct Answer")
        options = [correct, *(_text(row, f"Incorrect Answer {n}") for n in (1, 2, 3))]
        seed = int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "little")
        order = np.random.default_rng(seed).permutation(len(options))
        choices = tuple(options[index] for index in order)
        letter = CHOICE_LETTERS[int(np.flatnonzero(order == 0)[0])]
        return Problem(_row_id(row, default_id), question, letter, choices, source)


class MMLUPro(ProblemSchema):
    """MMLU-Pro (TIGER-Lab/MMLU-Pro): ``question``, ``options`` (up to 10), ``answer`` letter."""

    name = "mmlu_pro"
    fields = (
        "question_id, question, options (a list of up to 10), answer (a letter) or answer_index"
    )

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem:
        choices = _choice_list(_field(row, "options"), "options")
        gold = _letter(_field(row, "answer", "answer_index"), len(choices), "answer")
        return Problem(_row_id(row, default_id), _text(row, "question"), gold, choices, source)


class MMLU(ProblemSchema):
    """MMLU (cais/mmlu): ``question``, ``choices`` (4), ``answer`` (0-based index or letter)."""

    name = "mmlu"
    fields = "question, choices (a list of 4), answer (0-based index or letter); optional subject"

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem | None:
        choices = _choice_list(_field(row, "choices", "options"), "choices")
        gold = _letter(_field(row, "answer"), len(choices), "answer")
        return Problem(_row_id(row, default_id), _text(row, "question"), gold, choices, source)


class MMLUSTEM(MMLU):
    """MMLU's STEM subjects only (other subjects skipped; rows without a subject kept)."""

    name = "mmlu_stem"
    fields = MMLU.fields + "; rows whose subject is not one of MMLU's 18 STEM subjects are skipped"

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem | None:
        subject = row.get("subject")
        if isinstance(subject, str) and subject and subject not in MMLU_STEM_SUBJECTS:
            return None
        return super().problem(row, default_id, source)


class AQuARAT(ProblemSchema):
    """AQuA-RAT (deepmind/aqua_rat): ``question``, ``options`` (``"A)21"``...), ``correct``."""

    name = "aqua_rat"
    aliases = ("aqua",)
    fields = "question, options (a list of 'A)text'), correct (a letter); rationale unused"

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem:
        options = _choice_list(_field(row, "options"), "options")
        choices = tuple(_AQUA_OPTION.sub("", option, count=1) for option in options)
        gold = _letter(_field(row, "correct", "answer"), len(choices), "correct")
        return Problem(_row_id(row, default_id), _text(row, "question"), gold, choices, source)


class TinyGSM(ProblemSchema):
    """TinyGSM: ``question`` and ``code`` (a Python program); its answer is taken, never run."""

    name = "tinygsm"
    fields = (
        "question, code (a Python function whose result is the answer), and an 'answer' field: "
        "the program is never run (running a dataset's code is not safe), so a row without "
        "'answer' is refused -- compute the answers in a sandbox and add them"
    )

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem:
        if row.get("answer") in (None, ""):
            raise RowError(
                "TinyGSM rows carry a program ('code'), not an answer, and programs are never "
                "run here: add an 'answer' field computed in a sandbox"
            )
        return Problem(
            _row_id(row, default_id), _text(row, "question"), _text(row, "answer"), source=source
        )


class ANLI(ProblemSchema):
    """ANLI (facebook/anli): ``premise``, ``hypothesis``, ``label`` (0/1/2) -> a 3-way choice."""

    name = "anli"
    fields = "premise, hypothesis, label (0 entailment, 1 neutral, 2 contradiction); uid"

    def problem(self, row: Mapping[str, Any], default_id: str, source: str) -> Problem:
        premise, hypothesis = _text(row, "premise"), _text(row, "hypothesis")
        gold = _letter(_field(row, "label"), len(ANLI_LABELS), "label")
        question = (
            f"Premise: {premise}\nHypothesis: {hypothesis}\n"
            "Does the premise entail the hypothesis, is it neutral, or does it contradict it?"
        )
        return Problem(_row_id(row, default_id), question, gold, ANLI_LABELS, source)


def _registry(*schemas: ProblemSchema) -> dict[str, ProblemSchema]:
    table: dict[str, ProblemSchema] = {}
    for entry in schemas:
        for name in (entry.name, *entry.aliases):
            if name in table:
                raise ValueError(f"problem schema {name!r} registered twice")
            table[name] = entry
    return table


#: Every schema by name and alias.
SCHEMAS: dict[str, ProblemSchema] = _registry(
    GSM8K(),
    MATH(),
    Competition(),
    OlympiadBench(),
    GPQA(),
    MMLUPro(),
    MMLU(),
    MMLUSTEM(),
    AQuARAT(),
    TinyGSM(),
    ANLI(),
)


def schema(name: str) -> ProblemSchema:
    """The registered schema called ``name`` (``ValueError`` listing the names otherwise)."""
    try:
        return SCHEMAS[name]
    except KeyError:
        raise ValueError(
            f"unknown problem schema {name!r}; known: {', '.join(sorted(SCHEMAS))}"
        ) from None


def load_problems(path: str | Path, schema_name: str) -> list[Problem]:
    """Every problem of the file at ``path``, read with the schema ``schema_name``.

    Raises:
        ValueError: an unknown schema.
        ProblemFileError: a missing or unreadable file, or a bad row (one line: the file, the
            line number and what is wrong), or an id used twice.
    """
    reader = schema(schema_name)
    source = f"{reader.name}:{Path(path).name}"
    problems: list[Problem] = []
    lines: dict[str, int] = {}
    for line, row in read_rows(path):
        try:
            problem = reader.problem(row, f"{reader.name}-{line}", source)
        except (RowError, ValueError) as error:
            raise ProblemFileError(path, line, str(error)) from None
        if problem is None:
            continue
        if problem.id in lines:
            raise ProblemFileError(
                path, line, f"id {problem.id!r} is used again (first on line {lines[problem.id]})"
            )
        lines[problem.id] = line
        problems.append(problem)
    if not problems:
        raise ProblemFileError(path, None, f"no problems in the file (schema {reader.name})")
    return problems
