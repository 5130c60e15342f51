"""Typed outcomes of reading a model's answer: a legal :class:`Action` or an :class:`ActionError`.

Errors are data, never exceptions: every way an answer can fail has a ``kind`` from
:data:`ERROR_KINDS`, so the arena can count them and the trainer can penalise them:

* ``empty`` -- nothing but whitespace;
* ``truncated`` -- cut off (``finish_reason == "length"``, or it ends inside an open block);
* ``missing_reasoning`` -- no (or empty) reasoning part where the style requires one;
* ``no_action`` -- no answer block, or an empty one;
* ``multiple_actions`` -- more than one answer block (strict mode);
* ``format`` -- the style's layout is broken (text outside the blocks in strict mode, not JSON);
* ``unknown_action`` -- the answer names no move of this game;
* ``illegal_action`` -- the answer names a move that is not legal now;
* ``timeout`` / ``endpoint`` -- no usable response from the model's server (set by players);
* ``refused`` -- the server refused the request itself (an HTTP 4xx other than 408 and 429:
  a wrong URL, key, model, parameter or a missing tool parser), which no retry can fix.

The last three are *infrastructure* errors (:data:`INFRASTRUCTURE_ERROR_KINDS`): what failed is
the server, the network or the request, not the model's answer. They are never subject to the
illegal-move policy: the match stops at once. A game stopped by ``timeout`` or ``endpoint`` is
stored as ``incomplete``, excluded from every score and replayed by the next run; one stopped
by ``refused`` is not stored at all, and the run stops (:mod:`strategic_arena.arena.runner`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

ErrorKind: TypeAlias = Literal[
    "empty",
    "truncated",
    "missing_reasoning",
    "no_action",
    "multiple_actions",
    "format",
    "unknown_action",
    "illegal_action",
    "timeout",
    "endpoint",
    "refused",
]

#: Every error kind, in the order a response is checked.
ERROR_KINDS: tuple[ErrorKind, ...] = (
    "empty",
    "truncated",
    "missing_reasoning",
    "no_action",
    "multiple_actions",
    "format",
    "unknown_action",
    "illegal_action",
    "timeout",
    "endpoint",
    "refused",
)


#: Error kinds that are the server's or the network's, not the model's (see the module doc).
INFRASTRUCTURE_ERROR_KINDS: frozenset[str] = frozenset({"endpoint", "timeout", "refused"})


#: The action id of every move of a free-text game (``GameSpec.move_kind == "text"``): such a
#: move has no id, it *is* its text (:attr:`Action.text`, stored exactly as the ``action_text``
#: of the move). OpenSpiel's own ids are never negative, so the two cannot be confused.
TEXT_MOVE = -1


@dataclass(frozen=True)
class Action:
    """A move read from a response: the action id and its text.

    In a menu game ``id`` is the OpenSpiel action id and ``text`` its canonical text; in a
    free-text game ``id`` is :data:`TEXT_MOVE` and ``text`` the move exactly as the game gets it.
    """

    id: int
    text: str


@dataclass(frozen=True)
class ActionError:
    """Why a response did not yield a legal action.

    Attributes:
        kind: one of :data:`ERROR_KINDS`.
        detail: a short human-readable explanation, fit to show the model as feedback.
    """

    kind: ErrorKind
    detail: str


@dataclass(frozen=True)
class Attempt:
    """One answer of a decision: what came back and what was said about it."""

    response: str
    error: ActionError | None = None
    feedback: str | None = None  # the message sent back to the model after it, if any
    reasoning: str | None = None
    finish_reason: str | None = None
    failures: tuple[str, ...] = ()  # failed requests before this answer
