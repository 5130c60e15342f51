r"""The ``spiral`` style against SPIRAL's own answer reading, answer by answer.

SPIRAL's actor reads a move with ``extract_action`` (``train_spiral.py`` in SPIRAL's repository,
the Qwen3-template path of the paper's runs): ``extract_boxed_answer`` (``spiral/core/utils.py``
of the ``spiral-rl`` package: the last ``\boxed{...}``, ``\text{}`` unwrapped), the whole
stripped response when that finds nothing, then brackets and spaces formatted, then an exact
match against the legal actions written ``[MOVE]``. ``extract_boxed_answer`` is SPIRAL's own
function, loaded from the installed package; the three formatting steps after it, which live in
the training script (not in the package), are restated in :func:`spiral_extract_action`.

The corpus is built from that code's cases -- a bare box, several boxes, nested braces,
``\boxed{[bet]}``, whitespace inside the box, case, no box, a bare move, text after the box,
think tags, ``\boxed {x}``, ``\fbox``, an unclosed last box -- and each answer must be accepted
by both as the same move, or refused by both.

``spiral-rl`` is the ``spiral`` extra's pin, loaded file by file (:mod:`tests.spiral_code`: only
``spiral/core/utils.py``; the package's ``__init__`` imports its training stacks); the test skips,
saying why, where it is missing, and fails instead under ``make test``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

import strategic_arena as sa
from strategic_arena.actions import Action, ActionError
from strategic_arena.styles import get_style
from tests.spiral_code import spiral_file


def _spiral_extract() -> Callable[[str], str | None]:
    """SPIRAL's ``extract_boxed_answer``, loaded from its file alone (:mod:`tests.spiral_code`)."""
    extract: Callable[[str], str | None] = spiral_file("core/utils.py").extract_boxed_answer
    return extract


CORPUS = [
    # a bare box: SPIRAL's "thinking collapse" answer
    "\\boxed{bet}",
    "\\boxed{check}",
    # reasoning, then the box
    "I hold the King, so I bet. \\boxed{bet}",
    # several boxes: the last wins
    "First \\boxed{check} but no: \\boxed{bet}",
    "\\boxed{bet} \\boxed{fold} \\boxed{call}",
    # brackets, TextArena's action notation
    "\\boxed{[bet]}",
    "\\boxed{[Check]}",
    # nested braces
    "\\boxed{{bet}}",
    "\\boxed{\\boxed{bet}}",
    "\\boxed{\\text{bet}}",
    "\\boxed{\\text{[check]}}",
    "\\boxed{\\textbf{bet}}",
    # whitespace and case: SPIRAL's match is exact
    "\\boxed{ bet }",
    "\\boxed{\n  fold\n}",
    "\\boxed{BET}",
    "\\boxed{Bet}",
    # text after the box
    "\\boxed{bet} because the King wins every showdown.",
    "\\boxed{bet}.",
    # think tags: SPIRAL does not look at them
    "<think>check or bet? \\boxed{check}</think> \\boxed{bet}",
    "<think>I will bet: \\boxed{bet}</think>",
    "<think>hmm</think>",
    "<think>hmm</think> bet",
    # no readable box: the whole response is the candidate
    "bet",
    "  check \n",
    "[bet]",
    "I bet.",
    "I bet",
    "my final answer is bet",
    "\\boxed {bet}",
    "\\fbox{bet}",
    "\\boxedbet",
    "\\boxed{bet",
    "\\boxed{bet} and then \\boxed{call",
    "\\boxed{call} \\boxed",
    "\\\\boxed{bet}",
    # an empty box
    "\\boxed{}",
    "\\boxed{   }",
    # a move that is no action, or not legal now
    "\\boxed{raise}",
    "\\boxed{call}",
    "\\boxed{fold}",
    "\\boxed{bet call}",
]

KUHN = "kuhn_poker-v0"
#: Player 0's first decision in Kuhn poker: check (0) or bet (1).
MENU = {0: "check", 1: "bet"}


def spiral_extract_action(
    extract_boxed_answer: Callable[[str], str | None], text: str, action_space: list[str]
) -> str | None:
    """SPIRAL's ``extract_action`` (Qwen3 template): the valid action, or ``None`` if invalid.

    Restated from ``train_spiral.py`` around SPIRAL's own ``extract_boxed_answer``.
    """
    if not text:
        return None
    raw = extract_boxed_answer(text)
    if raw is None:
        raw = text.strip()
    formatted = re.sub(r"\\boxed\{([^}]*)\}", r"[\1]", raw)
    if "[" not in formatted and "]" not in formatted and len(formatted.split()) <= 5:
        formatted = f"[{formatted}]"
    formatted = re.sub(r"\s+", " ", formatted).strip()
    return formatted if formatted in action_space else None


@pytest.mark.parametrize("answer", CORPUS)
def test_spiral_style_finds_the_box_spirals_code_finds(answer: str) -> None:
    theirs = _spiral_extract()(answer)
    found = get_style("spiral").extract(answer, strict=True, need_reasoning=False)
    assert not isinstance(found, ActionError)
    assert found.answers == [theirs if theirs is not None else answer.strip()]


@pytest.mark.parametrize("answer", CORPUS)
def test_spiral_style_accepts_exactly_what_spiral_accepts(answer: str) -> None:
    action_space = [f"[{text}]" for text in MENU.values()]
    theirs = spiral_extract_action(_spiral_extract(), answer, action_space)
    for strict in (True, False):
        outcome = sa.validate(KUHN, answer, MENU, "spiral", strict=strict)
        if theirs is None:
            assert isinstance(outcome, ActionError), (answer, outcome)
        else:
            assert isinstance(outcome, Action), (answer, theirs, outcome)
            assert f"[{outcome.text}]" == theirs


def test_the_corpus_covers_accepted_and_refused_answers() -> None:
    action_space = [f"[{text}]" for text in MENU.values()]
    extract = _spiral_extract()
    verdicts = [spiral_extract_action(extract, answer, action_space) for answer in CORPUS]
    accepted = [verdict for verdict in verdicts if verdict is not None]
    assert set(accepted) == {"[check]", "[bet]"}
    assert 10 < len(accepted) < len(CORPUS) - 15
