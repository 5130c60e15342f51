r"""MAPoRL's penalties: a verifier score of -10 for a malformed solution (Appendix G).

MAPoRL replaces the verifier's score of an answer by -10 (``PENALTY``) when the answer is
malformed in one of the ways its training learned to exploit (section G.3.1):

* ``no_box`` -- no ``\boxed{}`` answer ("non-box penalty");
* ``no_eos`` -- the generation did not end by itself: cut at the token budget ("non-EOS
  penalty"; the caller says so with ``ended``: a finish reason of ``length`` is not an end);
* ``after_box`` -- anything but white space after the last ``\boxed{...}`` ("post-boxed token
  generation": models padded their answers with tokens after the box);
* ``repetition`` -- a sequence of 1 to ``max_span`` tokens repeated more than ``max_repeats``
  times in a row (more than three in the paper), numbers excepted (a run of digits may repeat
  legitimately: ``1 1 1 1``);
* ``too_short`` -- fewer than ``min_tokens`` tokens (MAPoRL enforced at least 50; 0 turns the
  check off).

:func:`penalties` lists the ones that apply; :func:`penalized` applies them to a score. Tokens
are the policy's own token ids (or strings) when the caller has them, else the words of the
text (split on white space): the word-level reading is the one a caller without a tokenizer
(the arena) can make.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from strategic_arena.braces import matched_braces
from strategic_arena.problems import extract_boxed

__all__ = [
    "MAPORL_PENALTIES",
    "PENALTY",
    "PENALTY_KINDS",
    "PenaltyConfig",
    "PenaltyKind",
    "penalized",
    "penalties",
    "repeated",
]

PenaltyKind: TypeAlias = Literal["no_box", "no_eos", "after_box", "repetition", "too_short"]
#: Every penalty, in the order :func:`penalties` checks them.
PENALTY_KINDS: tuple[PenaltyKind, ...] = (
    "no_box",
    "no_eos",
    "after_box",
    "repetition",
    "too_short",
)
#: MAPoRL's score of a penalized answer.
PENALTY = -10.0

_BOX_COMMANDS = ("\\boxed", "\\fbox")


@dataclass(frozen=True)
class PenaltyConfig:
    """Which penalties apply and their limits (defaults: MAPoRL's).

    Attributes:
        kinds: the penalties checked (all five by default).
        value: the score of a penalized answer (-10).
        min_tokens: the fewest tokens a solution may have (50).
        max_repeats: the most times a token sequence may repeat in a row (3).
        max_span: the longest token sequence checked for repetition (20 tokens).
    """

    kinds: tuple[PenaltyKind, ...] = PENALTY_KINDS
    value: float = PENALTY
    min_tokens: int = 50
    max_repeats: int = 3
    max_span: int = 20

    def __post_init__(self) -> None:
        unknown = sorted(set(self.kinds) - set(PENALTY_KINDS))
        if unknown:
            raise ValueError(
                f"unknown penalties {', '.join(unknown)}; known: {', '.join(PENALTY_KINDS)}"
            )
        if self.min_tokens < 0 or self.max_repeats < 1 or self.max_span < 1:
            raise ValueError("min_tokens must be >= 0, max_repeats and max_span >= 1")


#: MAPoRL's penalties with its limits (every default of :class:`PenaltyConfig`).
MAPORL_PENALTIES = PenaltyConfig()


def _box_end(text: str) -> int | None:
    r"""Index just past the last ``\boxed{...}`` of ``text`` (``None``: no closed box)."""
    start = max(text.rfind(command) for command in _BOX_COMMANDS)
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0 or text[start:brace].strip() not in _BOX_COMMANDS:
        return None
    return matched_braces(text, brace + 1)


def _numeric(span: Sequence[int | str]) -> bool:
    """Whether a token span is a number (word-level: every token made of digits)."""
    return all(isinstance(token, str) and token.strip().isdigit() for token in span)


def repeated(tokens: Sequence[int | str], max_repeats: int = 3, max_span: int = 20) -> bool:
    """Whether some span of 1..``max_span`` tokens repeats more than ``max_repeats`` times in a row.

    Spans of digits are exempt (word tokens only: token ids carry no text to tell).
    """
    n = len(tokens)
    for length in range(1, min(max_span, n // (max_repeats + 1)) + 1):
        for start in range(n - length * (max_repeats + 1) + 1):
            span = tokens[start : start + length]
            count = 1
            position = start + length
            while position + length <= n and tokens[position : position + length] == span:
                count += 1
                if count > max_repeats:
                    if not _numeric(span):
                        return True
                    break
                position += length
    return False


def penalties(
    text: str,
    *,
    ended: bool = True,
    tokens: Sequence[int | str] | None = None,
    config: PenaltyConfig = MAPORL_PENALTIES,
) -> tuple[PenaltyKind, ...]:
    r"""The penalties that apply to the solution ``text`` (in :data:`PENALTY_KINDS` order).

    Args:
        text: the solution as generated.
        ended: whether the generation ended by itself (an EOS token; ``finish_reason`` ``stop``).
        tokens: the solution's tokens (ids or strings); ``None``: its white-space words.
        config: which penalties and their limits.
    """
    words: Sequence[int | str] = text.split() if tokens is None else tokens
    found: list[PenaltyKind] = []
    end = _box_end(text)
    checks: dict[PenaltyKind, bool] = {
        "no_box": extract_boxed(text) is None,
        "no_eos": not ended,
        "after_box": end is not None and text[end:].strip() != "",
        "repetition": repeated(words, config.max_repeats, config.max_span),
        "too_short": len(words) < config.min_tokens,
    }
    for kind in PENALTY_KINDS:
        if kind in config.kinds and checks[kind]:
            found.append(kind)
    return tuple(found)


def penalized(
    score: float, kinds: Sequence[PenaltyKind], config: PenaltyConfig = MAPORL_PENALTIES
) -> float:
    """``score``, or the penalty value when any penalty applies."""
    return config.value if kinds else float(score)
