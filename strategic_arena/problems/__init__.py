r"""Reasoning problems: records, schema loaders, answer extraction and checks, a generated set.

The core that the transfer evaluation (:mod:`strategic_arena.transfer`) and the debate game
build on; no heavy import (``math-verify``, the ``transfer`` extra, loads the first time two
answers are compared, and its absence leaves an exact fallback; see
:mod:`strategic_arena.problems.answers`).

* :class:`Problem`: id, question, gold answer (text; a letter for multiple choice), choices,
  source.
* :func:`load_problems`: a benchmark file (JSON Lines, JSON or CSV) in a registered schema
  (:data:`SCHEMAS`: ``gsm8k``, ``math``/``math500``/``minerva``, ``competition``/``aime``/``amc``,
  ``olympiadbench``, ``gpqa``/``gpqa_diamond``, ``mmlu_pro``, ``mmlu``, ``mmlu_stem``,
  ``aqua_rat``, ``tinygsm``, ``anli``); a bad file is one :class:`ProblemFileError` line.
* :func:`extract_boxed`, :func:`extract_choice`, :func:`answers_equal`, :func:`check_answer`:
  reading and checking an answer; none of them raises on any input.
* :func:`generate_arithmetic`: arithmetic word problems with exact answers from a seed, also
  written as a GSM8K-schema file (:func:`write_gsm8k_jsonl`).
"""

from __future__ import annotations

from strategic_arena.problems.answers import (
    MAX_ANSWER_CHARS,
    answers_equal,
    check_answer,
    extract_boxed,
    extract_choice,
    fallback_equal,
)
from strategic_arena.problems.arithmetic import (
    arithmetic_rows,
    generate_arithmetic,
    write_gsm8k_jsonl,
)
from strategic_arena.problems.files import ProblemFileError, read_rows
from strategic_arena.problems.records import CHOICE_LETTERS, Problem
from strategic_arena.problems.schemas import SCHEMAS, ProblemSchema, load_problems, schema

__all__ = [
    "CHOICE_LETTERS",
    "MAX_ANSWER_CHARS",
    "SCHEMAS",
    "Problem",
    "ProblemFileError",
    "ProblemSchema",
    "answers_equal",
    "arithmetic_rows",
    "check_answer",
    "extract_boxed",
    "extract_choice",
    "fallback_equal",
    "generate_arithmetic",
    "load_problems",
    "read_rows",
    "schema",
    "write_gsm8k_jsonl",
]
