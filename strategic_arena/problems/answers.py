r"""Reading a model's answer out of its reply and checking it against the gold answer.

* :func:`extract_boxed`: the content of the **last** ``\boxed{...}`` (or ``\fbox{...}``) of a
  reply, nested braces kept -- the reading of Qwen2.5-Math's evaluation scripts and of SPIRAL's
  (``pred.split("boxed")[-1]`` and a brace match). Only the last occurrence is tried, so a
  reply of any length is read in linear time; an unclosed last box reads as no answer.
* :func:`extract_choice`: the letter a multiple-choice reply chose: a boxed letter first
  (``\boxed{B}``, ``\boxed{(B)}``, ``\boxed{\text{B}}``), else the last "answer is (B)" /
  "Answer: B" phrase (MMLU-Pro's and lm-eval's reading); a letter outside the choices is none.
* :func:`answers_equal`: whether two answers are mathematically equal. With ``math-verify``
  installed (the ``transfer`` extra; imported the first time it is needed) it decides the way
  the papers' evaluations do (``\frac12`` equals ``0.5``, ``(1,2)`` equals ``(1, 2)``, ``x=3``
  equals ``3``). Without it, or off the main thread (math-verify's time limit is a
  ``SIGALRM``, which only the main thread can take), the **fallback** decides: both sides
  normalised (spaces, ``$``, ``\text{}``, ``\left``/``\right``, ``\!``, thousands commas, a
  trailing ``.``, degree signs, a leading ``x =`` removed; ``\dfrac``/``\tfrac`` read as
  ``\frac``), then equal as exact rationals when both are numbers (``72``, ``72.0``, ``-3/4``,
  ``\frac{3}{4}``, ``1,000``), else equal as strings ignoring case. The fallback is exact and
  never says equal where math-verify would not; it may say unequal where math-verify would see
  the same value written another way (``\sqrt{4}`` against ``2``).
* :func:`check_answer`: a problem and a reply -> right or wrong.

Endpoints are hostile: every function here takes any value (bytes, ``None``, huge strings,
deep nesting) and answers ``None`` / ``False`` rather than raising. An extracted answer longer
than :data:`MAX_ANSWER_CHARS` is wrong without being parsed (no gold answer of these
benchmarks is near that long, and sympy's time grows with the text), and math-verify runs
under its own time limit of :data:`VERIFY_SECONDS`. math-verify logs the answer it gave up on
(``Timeout during parsing: <the answer>``), escape sequences and all; the first time it is
needed, every log line is made printable (:func:`~strategic_arena.door.guard_logs`), so a
library user's terminal is as safe as the command's.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from strategic_arena.braces import matched_braces
from strategic_arena.door import guard_logs
from strategic_arena.problems.records import Problem

__all__ = [
    "MAX_ANSWER_CHARS",
    "VERIFY_SECONDS",
    "answers_equal",
    "check_answer",
    "extract_boxed",
    "extract_choice",
    "fallback_equal",
]

#: Extracted answers longer than this are wrong without being parsed.
MAX_ANSWER_CHARS = 1000
#: math-verify's time limit for parsing one answer and for comparing two (seconds).
VERIFY_SECONDS = 2

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}")
_DROPPED = re.compile(r"\\left|\\right|\\!|\\,|\\;|\\:|\\ |\$|\s+")
_DEGREES = re.compile(r"\^\s*\{?\\circ\}?|°")
_LEADING_VARIABLE = re.compile(r"^[a-zA-Z]\s*=\s*(?!=)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_FRACTION = re.compile(r"^(-?)\\frac\{(-?\d+)\}\{(-?\d+)\}$")
_NUMBER = re.compile(r"^-?(?:\d+(?:\.\d*)?|\.\d+)(?:/-?\d+)?$")
#: "the answer is (B)", "Answer: B", "answer is B." -- the last one in the reply counts.
_ANSWER_PHRASE = re.compile(
    r"answer\s*(?:is|:)?\s*:?\s*\(?\s*(?:\\text\{)?\s*([A-Z])\s*\}?\s*\)?(?![A-Za-z])",
    re.IGNORECASE,
)
_BOXED_LETTER = re.compile(r"^\(?\s*([A-Z])\s*\)?(?:[.:)]|\s.*)?$", re.DOTALL)


def extract_boxed(text: Any) -> str | None:
    r"""The content of the last ``\boxed{...}`` or ``\fbox{...}`` of ``text``, else ``None``.

    Only the last box command is read: when its braces do not close (a reply cut off by the
    token budget) there is no answer, even if an earlier box closed. ``\boxed 5`` (a box without
    braces, which LaTeX allows for one token) reads as ``5``.
    """
    if not isinstance(text, str):
        return None
    start, command = max((text.rfind(command), command) for command in _BOX_COMMANDS)
    if start < 0:
        return None
    position = start + len(command)
    while position < len(text) and text[position] == " ":
        position += 1
    if position >= len(text):
        return None
    if text[position] != "{":
        token = text[position:].split("$", 1)[0].split(None, 1)
        return token[0] if token else None
    close = matched_braces(text, position + 1)
    if close is None:
        return None
    return text[position + 1 : close - 1].strip()


def extract_choice(text: Any, n_choices: int) -> str | None:
    """The letter (``"A"``...) a reply chose among ``n_choices``, else ``None``."""
    if not isinstance(text, str) or n_choices < 1:
        return None
    letters = {chr(ord("A") + index) for index in range(min(n_choices, 26))}
    boxed = extract_boxed(text)
    if boxed is not None:
        unwrapped = _TEXT_WRAPPERS.sub(r"\1", boxed).strip()
        match = _BOXED_LETTER.match(unwrapped)
        letter = match.group(1) if match else None
        return letter if letter in letters else None
    found = [match.group(1).upper() for match in _ANSWER_PHRASE.finditer(text[-10_000:])]
    return found[-1] if found and found[-1] in letters else None


def normalized_answer(answer: str) -> str:
    """The fallback's normal form of an answer (see the module docstring)."""
    text = answer.strip()
    for _ in range(3):  # \text{\textbf{x}} unwraps in two passes
        text = _TEXT_WRAPPERS.sub(r"\1", text)
    text = _DEGREES.sub("", text)
    text = _DROPPED.sub("", text)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    text = _LEADING_VARIABLE.sub("", text)
    text = _THOUSANDS.sub("", text)
    return text.rstrip(".")


def _as_number(text: str) -> Fraction | None:
    r"""``text`` as an exact rational if it is a plain number, a ratio or a ``\frac``."""
    fraction = _FRACTION.match(text)
    if fraction:
        sign, numerator, denominator = fraction.groups()
        text = f"{sign}{numerator}/{denominator}"
    if not _NUMBER.match(text):
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def fallback_equal(predicted: str, gold: str) -> bool:
    """The exact comparison used without math-verify (see the module docstring)."""
    left, right = normalized_answer(predicted), normalized_answer(gold)
    if not left or not right:
        return False
    left_number, right_number = _as_number(left), _as_number(right)
    if left_number is not None and right_number is not None:
        return left_number == right_number
    return left.casefold() == right.casefold()


_VERIFIER: list[Callable[[str, str], bool] | None] = []


def _math_verify() -> Callable[[str, str], bool] | None:
    """math-verify's check of a predicted answer against a gold one, or ``None`` if missing."""
    if not _VERIFIER:
        try:
            from math_verify import parse, verify
        except ImportError:
            _VERIFIER.append(None)
        else:
            guard_logs()  # math-verify logs the answers it cannot parse, as they came

            def check(predicted: str, gold: str) -> bool:
                parsed_gold = parse(f"\\boxed{{{gold}}}", parsing_timeout=VERIFY_SECONDS)
                parsed = parse(f"\\boxed{{{predicted}}}", parsing_timeout=VERIFY_SECONDS)
                return bool(verify(parsed_gold, parsed, timeout_seconds=VERIFY_SECONDS))

            _VERIFIER.append(check)
    return _VERIFIER[0]


def answers_equal(predicted: Any, gold: Any) -> bool:
    """Whether ``predicted`` is the same answer as ``gold``; never raises (see the module)."""
    if not isinstance(predicted, str) or not isinstance(gold, str):
        return False
    if not predicted.strip() or len(predicted) > MAX_ANSWER_CHARS or "\x00" in predicted:
        return False
    try:
        if fallback_equal(predicted, gold):
            return True
    except Exception:  # a hostile string must not end the evaluation
        return False
    verifier = _math_verify()
    if verifier is None or threading.current_thread() is not threading.main_thread():
        return False
    try:
        return verifier(predicted, gold)
    except BaseException as error:  # sympy raises anything, recursion and timeouts included
        if isinstance(error, KeyboardInterrupt | SystemExit):
            raise
        return False


def check_answer(problem: Problem, reply_text: Any) -> bool:
    r"""Whether ``reply_text`` answers ``problem`` right: its letter, or its last box's content."""
    if problem.multiple_choice:
        return extract_choice(reply_text, len(problem.choices)) == problem.answer
    return answers_equal(extract_boxed(reply_text), problem.answer)
