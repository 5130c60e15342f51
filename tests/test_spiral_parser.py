r"""The ``spiral`` style against SPIRAL's own answer extraction, answer by answer.

SPIRAL's package (``spiral-rl``) reads a move with ``extract_boxed_answer`` in
``spiral/core/utils.py``: the last ``\boxed{...}``, ``\text{}`` unwrapped. The corpus below is
built from that code's cases -- a bare box, several boxes, nested braces, ``\boxed{[bet]}``,
whitespace, no box, text after the box, think tags, ``\boxed {x}``, ``\fbox``, an unclosed last
box -- and each answer must give the same move text in both, or no move in both. SPIRAL's
environments then match that text with TextArena's regexes, ours with the game's grammar; the
test reads SPIRAL's text with our grammar, so "the same move" means: accepted by ``spiral``
exactly when SPIRAL extracts a move, and then as the move SPIRAL's text names.

Only ``spiral/core/utils.py`` is loaded (the package's ``__init__`` imports its training
stacks); the test skips, saying why, where ``spiral-rl`` is not installed
(``pip install --no-deps spiral-rl``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import strategic_arena as sa
from strategic_arena.actions import Action, ActionError
from strategic_arena.styles import get_style


def _spiral_extract() -> Callable[[str], str | None]:
    """SPIRAL's ``extract_boxed_answer``, loaded from its file alone."""
    spec = importlib.util.find_spec("spiral")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("spiral-rl is not installed (pip install --no-deps spiral-rl)")
    path = Path(next(iter(spec.submodule_search_locations))) / "core" / "utils.py"
    module_spec = importlib.util.spec_from_file_location("_spiral_core_utils", path)
    if module_spec is None or module_spec.loader is None or not path.is_file():
        pytest.skip(f"spiral-rl has no {path}: a version without extract_boxed_answer")
    module: Any = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    extract: Callable[[str], str | None] = module.extract_boxed_answer
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
    "\\boxed{\\text{[call]}}",
    "\\boxed{\\textbf{bet}}",
    # whitespace and case
    "\\boxed{ bet }",
    "\\boxed{\n  fold\n}",
    "\\boxed{BET}",
    # text after the box
    "\\boxed{bet} because the King wins every showdown.",
    "\\boxed{bet}.",
    # think tags: SPIRAL does not look at them
    "<think>check or bet? \\boxed{check}</think> \\boxed{bet}",
    "<think>I will bet: \\boxed{bet}</think>",
    "<think>hmm</think>",
    # no box, or not one SPIRAL reads
    "I bet.",
    "bet",
    "\\boxed {bet}",
    "\\fbox{bet}",
    "\\boxedbet",
    "\\boxed{}",
    "\\boxed{   }",
    "\\boxed{bet",
    "\\boxed{bet} and then \\boxed{call",
    "\\boxed{call} \\boxed",
    "\\\\boxed{bet}",
    # a move that is no action, or not legal now
    "\\boxed{raise}",
    "\\boxed{call}",
    "\\boxed{bet call}",
]

KUHN = "kuhn_poker-v0"
#: Player 0's first decision in Kuhn poker: check (0) or bet (1).
MENU = {0: "check", 1: "bet"}


def _ours(answer: str) -> str | None:
    """The move text the ``spiral`` style extracts, or ``None``."""
    found = get_style("spiral").extract(answer, strict=True, need_reasoning=False)
    if isinstance(found, ActionError) or not found.answers:
        return None
    return found.answers[-1]


@pytest.mark.parametrize("answer", CORPUS)
def test_spiral_style_extracts_what_spirals_code_extracts(answer: str) -> None:
    theirs = _spiral_extract()(answer)
    assert _ours(answer) == theirs


@pytest.mark.parametrize("answer", CORPUS)
def test_spiral_style_accepts_exactly_what_spiral_accepts(answer: str) -> None:
    theirs = _spiral_extract()(answer)
    grammar = sa.get_spec(KUHN).grammar
    expected = (
        grammar.parse(theirs.strip(), MENU)
        if theirs is not None and theirs.strip()
        else ActionError("no_action", "")
    )
    for strict in (True, False):
        outcome = sa.validate(KUHN, answer, MENU, "spiral", strict=strict)
        if isinstance(expected, Action):
            assert outcome == expected, (answer, theirs, outcome)
        else:
            assert isinstance(outcome, ActionError), (answer, theirs, outcome)


def test_the_corpus_covers_accepted_and_refused_answers() -> None:
    extract = _spiral_extract()
    accepted = [answer for answer in CORPUS if (extract(answer) or "").strip()]
    assert 10 < len(accepted) < len(CORPUS) - 8
