"""The game header: what each model request says about the game, within a fixed size.

Every request of :class:`~strategic_arena.players.LLMPlayer` carries the seat's information
(:class:`~strategic_arena.turn.SeatInformation`) and the answer style in the
:data:`GAME_HEADER` header, which ``strategic-arena serve`` answers from and real model servers
ignore. A header is no body: a front server (nginx, uvicorn: 8 KiB per header line by default)
answers 431 to a longer one before any model sees it, and the arena then stops the game as
incomplete. The seat's information grows with the game (TextArena's whole-conversation
observations, legal moves that are whole answers), so a seat writing long moves could make
every game of its opponent unscored. The header therefore never exceeds
:data:`GAME_HEADER_CAP` bytes, in the first of three forms that fits:

* **full** -- the seat's information and ``style``, as compact JSON (no ``form`` field): what
  every curated menu game sends at every turn.
* **compact** (``"form": "compact"``) -- the same fields with the two strings that grow,
  ``observation`` and ``information_state``, left out (``null``); in a perfect-information
  game also the public moves and legal actions (``[]``, ``{}``), which ``serve`` rebuilds from
  the ``history``. ``serve`` plays from it whatever game its player needs no left-out string
  for: every perfect-information game, and a free-text game whose player writes its own move.
* **identity** (``"form": "id"``) -- ``env_id``, ``seat``, ``style``, ``moves`` and
  ``digest`` alone: enough for an endpoint to recognise the game and the turn, never enough to
  grow with it. ``serve`` answers it with a 400 that asks for the information in the body.

The compact and identity forms both carry ``moves`` (the moves the seat has seen: the history's
length in a perfect-information game, else the public moves'; 0 in a game of text moves, which
lists none) and ``digest`` (the SHA-256 of the full form's JSON text, which changes at every
turn). Each form holds only what the seat may know: it is made from the seat's information
alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from strategic_arena.styles import AnswerStyle, get_style
from strategic_arena.turn import SeatInformation

__all__ = [
    "COMPACT",
    "GAME_HEADER",
    "GAME_HEADER_CAP",
    "IDENTITY",
    "MIN_GAME_HEADER_CAP",
    "Form",
    "game_header",
    "header_form",
]

#: Header carrying the seat's information and the answer style, which ``strategic-arena
#: serve`` needs to answer. It holds only what the seat may know (:class:`SeatInformation`:
#: nothing the prompt does not already tell the model), so it goes to every endpoint; real
#: model servers ignore it.
GAME_HEADER = "X-Strategic-Arena-Game"

#: The longest :data:`GAME_HEADER` value sent, in bytes (the JSON is ASCII): half of the 8 KiB
#: header line that nginx and uvicorn accept by default, leaving room for the other headers.
GAME_HEADER_CAP = 4096

#: The smallest cap :func:`game_header` takes: the identity form of a curated game fits it.
MIN_GAME_HEADER_CAP = 512

Form = Literal["full", "compact", "id"]
"""A header's form: the full information, the compact form, or the game's identity alone."""

#: The ``form`` value of the compact form.
COMPACT: Form = "compact"

#: The ``form`` value of the identity form.
IDENTITY: Form = "id"


def game_header(
    information: SeatInformation, style: str | AnswerStyle, *, cap: int = GAME_HEADER_CAP
) -> str:
    """The :data:`GAME_HEADER` value: the first form of the seat's information within ``cap``.

    Args:
        information: what the seat to move may know.
        style: the answer style (its registered name is sent).
        cap: the longest value allowed, in bytes (at least :data:`MIN_GAME_HEADER_CAP`).

    Raises:
        ValueError: ``cap`` is below :data:`MIN_GAME_HEADER_CAP`.
    """
    if cap < MIN_GAME_HEADER_CAP:
        raise ValueError(f"the game header's cap must be at least {MIN_GAME_HEADER_CAP} bytes")
    name = get_style(style).name
    full = _json({**information.payload(), "style": name})
    if len(full) <= cap:
        return full
    moves = information.history if information.history is not None else information.public_moves
    identity: dict[str, Any] = {
        "form": IDENTITY,
        "env_id": information.env_id,
        "seat": information.seat,
        "style": name,
        "moves": len(moves),
        "digest": hashlib.sha256(full.encode("ascii")).hexdigest(),
    }
    compact = _json({**_compact_payload(information), **identity, "form": COMPACT})
    return compact if len(compact) <= cap else _json(identity)


def _compact_payload(information: SeatInformation) -> dict[str, Any]:
    """The seat's information without its growing strings (and, where rebuilt, its menu)."""
    payload = information.payload()
    payload["observation"] = payload["information_state"] = None
    if information.history is not None:  # perfect information: serve replays the history
        payload["public_moves"], payload["legal_actions"] = [], {}
    return payload


def _json(value: Mapping[str, Any]) -> str:
    """Compact, key-sorted, ASCII-only JSON (a header value must be ASCII)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def header_form(field: Mapping[str, Any]) -> Form:
    """The form of a decoded game header (or body field): ``full`` where it names none.

    Raises:
        ValueError: a ``form`` other than ``compact`` or ``id``.
    """
    form = field.get("form")
    if form is None:
        return "full"
    if form == COMPACT:
        return COMPACT
    if form == IDENTITY:
        return IDENTITY
    raise ValueError(f"form must be {COMPACT!r}, {IDENTITY!r} or absent (the full information)")
