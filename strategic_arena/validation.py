r"""Response text -> a legal action id, or a typed :class:`ActionError`.

A response is read in two layers:

1. the *style* (:mod:`strategic_arena.styles`, one object per style in a registry) finds the
   reasoning and the answer block(s) and returns the move texts in them: ``marshal``
   (``<think>...</think><answer>MOVE</answer>``), ``boxed`` (``\boxed{MOVE}``), ``json``,
   ``tools`` (a call of ``play(move)``), ``spiral`` (SPIRAL's parser: the last box wins) and
   ``spin_bench`` (``{"reason": ..., "action": ID}``);
2. the style reads the move text against the menu of legal actions, through the game's
   :class:`~strategic_arena.games.ActionGrammar` (canonical text, OpenSpiel's string, or a
   synonym; ``spin_bench`` also takes action ids).

Strict mode (the default, as MARSHAL) requires exactly one answer block in the exact layout of
the style, with nothing after it; lenient mode takes the last answer block and tolerates text
around it (``spiral`` reads alike in both: it is SPIRAL's own rule). Whether a reasoning part
is required is ``require_reasoning``; unset, the style decides (``marshal``, ``boxed``,
``json`` and ``spin_bench`` require one; ``tools`` and ``spiral`` do not). No mode ever looks
for a move in the reasoning: only answer blocks are read. ``validate`` never raises on any
response string.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, TypeAlias, get_args

from strategic_arena.actions import Action, ActionError
from strategic_arena.games import GameSpec, get_spec
from strategic_arena.games.base import MoveKind
from strategic_arena.styles import STYLES, AnswerStyle, get_style, style_names
from strategic_arena.styles.base import THINK_CLOSE

__all__ = [
    "MAX_ANSWER_CHARS",
    "STYLES",
    "THINKING_IN_HISTORY",
    "Style",
    "ThinkingInHistory",
    "answer_block",
    "format_answer",
    "history_text",
    "style_names",
    "validate",
]

Style: TypeAlias = str
"""A registered answer style's name (:func:`strategic_arena.styles.style_names`)."""

ThinkingInHistory: TypeAlias = Literal["keep", "strip", "answer"]
#: What earlier answers of a conversation keep of their reasoning (:func:`history_text`).
THINKING_IN_HISTORY: tuple[ThinkingInHistory, ...] = get_args(ThinkingInHistory)

#: Longest answer block read as a menu action; longer ones cannot be a move (a game sets its own
#: limit in ``GameSpec.max_move_chars``: free-text moves may be whole messages).
MAX_ANSWER_CHARS = 200


def validate(
    env_id: str | GameSpec,
    response: str | bytes | None,
    legal_actions: Mapping[int, str] | Sequence[int],
    style: Style | AnswerStyle = "marshal",
    *,
    strict: bool = True,
    finish_reason: str | None = None,
    reasoning: str | None = None,
    require_reasoning: bool | None = None,
) -> Action | ActionError:
    """Read a model's response as one legal action.

    Args:
        env_id: the game (curated id or ``openspiel/<name>``), or its spec (needed for
            ``openspiel/<name>`` games made with parameters).
        response: the model's text (bytes are decoded as UTF-8 with replacement).
        legal_actions: the menu the prompt listed (``SeatView.legal_actions``), or bare legal
            action ids (then the game's context-free texts are used).
        style: a registered style's name (``marshal``, ``boxed``, ``json``, ``tools``,
            ``spiral``, ``spin_bench``...) or a style object.
        strict: exactly one answer block in the style's exact layout, nothing after it
            (default); ``False`` takes the last answer block and ignores text around it.
        finish_reason: the server's ``finish_reason``; ``"length"`` means the response was cut
            off, reported as ``truncated``.
        reasoning: reasoning the server returned separately (``reasoning_content``); when given
            and non-empty, the response itself needs no reasoning part.
        require_reasoning: whether a missing or empty reasoning part is an error; ``None``
            (default): the style's own default (:attr:`AnswerStyle.requires_reasoning`).

    Returns:
        :class:`Action` with the action id and its canonical text, or :class:`ActionError`
        with one of the kinds ``empty``, ``truncated``, ``missing_reasoning``, ``no_action``,
        ``multiple_actions``, ``format``, ``unknown_action``, ``illegal_action``.
    """
    answer_style = get_style(style)
    spec = env_id if isinstance(env_id, GameSpec) else get_spec(env_id)
    menu = spec.grammar.menu_for(legal_actions)
    text = _as_text(response)
    if not text.strip():
        return ActionError("empty", "the response is empty")
    if finish_reason == "length":
        return ActionError("truncated", "the response was cut off at the length limit")
    has_outside_reasoning = bool(reasoning and reasoning.strip())
    required = answer_style.requires_reasoning if require_reasoning is None else require_reasoning
    need_reasoning = required and not has_outside_reasoning
    found = answer_style.extract(text, strict=strict, need_reasoning=need_reasoning)
    if isinstance(found, ActionError):
        return found
    no_reasoning = need_reasoning and not found.reasoning.strip()
    if not found.answers:
        # The kind names the answer, the part that matters; the detail names all that is missing.
        if no_reasoning:
            return ActionError("no_action", f"{answer_style.answer_hint}, and no reasoning either")
        return ActionError("no_action", answer_style.answer_hint)
    if no_reasoning:
        return ActionError("missing_reasoning", answer_style.reasoning_hint)
    if strict and len(found.answers) > 1:
        return ActionError(
            "multiple_actions", f"found {len(found.answers)} answers; give exactly one"
        )
    raw_answer = found.answers[-1]  # the style reads it as written (SPIRAL's spaces count)
    answer = raw_answer.strip()
    if not answer:
        return ActionError("no_action", "the answer block is empty")
    if len(answer) > spec.max_move_chars:
        return ActionError(
            "unknown_action",
            f"the answer is {len(answer)} characters long; give only the action",
        )
    return _READERS[spec.move_kind](answer_style, raw_answer, menu, spec)


def _read_menu_move(
    style: AnswerStyle, answer: str, menu: Mapping[int, str], spec: GameSpec
) -> Action | ActionError:
    """A menu game: the style reads the answer against the menu, by the game's grammar."""
    return style.read_answer(answer, menu, spec.grammar)


def _read_text_move(
    style: AnswerStyle, answer: str, menu: Mapping[int, str], spec: GameSpec
) -> Action | ActionError:
    """A free-text game: the style's move text, checked by the game's free-text grammar."""
    return spec.grammar.parse(style.move_text(answer), menu)


#: How an answer's move text is read, by the game's move kind (:data:`MoveKind`).
_READERS: dict[
    MoveKind, Callable[[AnswerStyle, str, Mapping[int, str], GameSpec], Action | ActionError]
] = {
    "menu": _read_menu_move,
    "text": _read_text_move,
}


def answer_block(style: Style | AnswerStyle, action_text: str) -> str:
    """The answer part alone of a response in ``style`` (no reasoning)."""
    return get_style(style).answer_block(action_text)


def format_answer(style: Style | AnswerStyle, reasoning: str, action_text: str) -> str:
    """``action_text`` with ``reasoning`` in the answer format of ``style`` (what validates)."""
    return get_style(style).format_answer(reasoning, action_text)


def history_text(
    response: str, style: Style | AnswerStyle, keep: ThinkingInHistory = "keep"
) -> str:
    """What an earlier answer of a conversation keeps when it is sent back to the model.

    Reasoning models are trained with the reasoning of earlier turns removed, so a caller that
    replays a model's past answers chooses: ``keep`` the whole response (the default),
    ``strip`` every ``<think>...</think>`` block (and a reasoning whose ``<think>`` the prompt
    pre-filled), or keep only the ``answer``: the answer blocks the style reads
    (:meth:`AnswerStyle.history_answer`; tool calls as they were written), with no reasoning;
    a response with no answer keeps its stripped text.
    """
    if keep == "keep":
        return response
    stripped = _strip_think(response)
    if keep == "strip":
        return stripped
    return get_style(style).history_answer(response) or stripped


def _strip_think(text: str) -> str:
    """``text`` without ``<think>...</think>`` blocks (or everything before a lone ``</think>``)."""
    without = re.sub(r"<think>.*?</think>", "", text, flags=re.IGNORECASE | re.DOTALL)
    close = THINK_CLOSE.search(without)
    if close is not None:
        without = without[close.end() :]
    return without.strip()


def _as_text(response: str | bytes | None) -> str:
    """The response as ``str`` (``None`` -> empty; bytes decoded leniently)."""
    if response is None:
        return ""
    if isinstance(response, bytes | bytearray):
        return bytes(response).decode("utf-8", errors="replace")
    return str(response)
