r"""Brace matching, the one reading of ``{...}`` spans that answer styles and answer checks share.

Its own module at the bottom of the core: the answer styles (:mod:`strategic_arena.styles`) and
the reasoning problems' answer checks (:mod:`strategic_arena.problems`) both read ``\boxed{...}``
spans, and neither may import the other (the styles import the games, which import the problems).
"""

from __future__ import annotations

__all__ = ["matched_braces"]


def matched_braces(text: str, start: int) -> int | None:
    """Index just past the ``}`` closing the ``{`` at ``text[start - 1]``, or ``None``."""
    depth, index = 1, start
    while index < len(text) and depth:
        char = text[index]
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        index += 1
    return None if depth else index
