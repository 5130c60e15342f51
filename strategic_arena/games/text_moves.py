"""What every game of text moves answers alike through OpenSpiel's ``Game`` and ``State``.

A game whose moves are texts (TextArena's games, MAPoRL's debate) has no action ids, no chance
nodes of its own (its seed draws what chance decides) and no observation tensor: these bases
answer that part of OpenSpiel's interface once, for every such adapter.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TextMovesGame", "TextMovesState"]


class TextMovesGame:
    """The part of OpenSpiel's ``Game`` interface that every game of text moves answers alike."""

    def num_distinct_actions(self) -> int:
        """No action ids: moves are texts."""
        return 0

    def max_game_length(self) -> int:
        """No public action ids are ever listed: a bound for the seat checks of ``serve``."""
        return 0

    def observation_tensor_shape(self) -> list[int]:
        """No tensor: a seat's observation is text."""
        return [0]


class TextMovesState:
    """The part of OpenSpiel's ``State`` interface that every game of text moves answers alike."""

    def is_chance_node(self) -> bool:
        """Chance is drawn from the game's seed when it starts, never at a chance node."""
        return False

    def legal_actions(self, player: int | None = None) -> list[int]:
        """No action ids: a move is a text the game judges."""
        return []

    def history(self) -> list[int]:
        """No action ids (the game keeps its move texts itself)."""
        return []

    def full_history(self) -> list[Any]:
        """No action ids (see :meth:`history`)."""
        return []

    def observation_tensor(self, player: int) -> list[float]:
        """No tensor."""
        return []
