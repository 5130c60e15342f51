"""What one seat sees at one decision, gathered for prompts and players.

:class:`SeatView` is the unit the prompt renderer and the validator work from: the seat's text,
its legal actions as a menu of canonical texts, the public move history and its role. Building
one never reads information the seat may not have: the text comes from the spec's
``observation_text`` and the history from public moves only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyspiel

# move_history lives with the game contract (games import it); views re-exports it.
from strategic_arena.games.base import GameSpec, move_history
from strategic_arena.games.seats import acting_seats

__all__ = ["SeatView", "move_history", "seat_view"]


@dataclass(frozen=True)
class SeatView:
    """One seat's view of a game state, in words.

    Attributes:
        env_id: the environment id.
        seat: the player index (0 for ``player_0``).
        role: the seat as stated in the system prompt.
        text: what the seat sees, in words.
        legal_actions: the menu: legal action id -> canonical text (empty when not to move).
        history: public move-history lines, oldest first.
        terminal: whether the game is over.
    """

    env_id: str
    seat: int
    role: str
    text: str
    legal_actions: Mapping[int, str] = field(default_factory=dict)
    history: tuple[str, ...] = ()
    terminal: bool = False


def seat_view(spec: GameSpec, state: pyspiel.State, seat: int, *, history: bool = True) -> SeatView:
    """Build the :class:`SeatView` of ``seat`` in ``state``.

    Args:
        spec: the game.
        state: a pyspiel state of ``spec.game`` (not at a chance node).
        seat: player index.
        history: whether to replay the public move history (costs one replay of the game).
    """
    terminal = bool(state.is_terminal())
    to_move = seat in acting_seats(state)
    return SeatView(
        env_id=spec.env_id,
        seat=seat,
        role=spec.role(seat),
        text=spec.observation_text(state, seat),
        legal_actions=spec.menu(state, seat) if to_move else {},
        history=move_history(spec, state) if history else (),
        terminal=terminal,
    )
