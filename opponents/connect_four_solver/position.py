"""Connect Four positions as bitboards, replayed from OpenSpiel histories."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from opponents.connect_four_solver.negamax import BOARD_MASK, COLUMN_MASK, H1, HEIGHT, WIDTH


@dataclass(frozen=True)
class Position:
    """A Connect Four position as bitboards (see :mod:`opponents.connect_four_solver`).

    Attributes:
        position: stones of the player to move.
        mask: all stones.
        moves: number of stones (the player to move is ``moves % 2``).
        over: whether the game has ended (the last move won, or the board is full).
    """

    position: int
    mask: int
    moves: int
    over: bool = False

    @property
    def last_move_won(self) -> bool:
        """Whether the previous player has four in a row."""
        return has_four(self.position ^ self.mask)

    def legal_columns(self) -> list[int]:
        """Columns that are not full (none once the game is over)."""
        if self.over:
            return []
        top = 1 << (HEIGHT - 1)
        return [c for c in range(WIDTH) if not self.mask & (top << (c * H1))]

    def column_bit(self, column: int) -> int:
        """The cell a stone dropped in ``column`` would take."""
        return (self.mask + (1 << (column * H1))) & (COLUMN_MASK << (column * H1))

    def wins(self, column: int) -> bool:
        """Whether dropping in ``column`` gives the mover four in a row."""
        return has_four(self.position | self.column_bit(column))

    def play(self, column: int) -> Position:
        """The position after the mover drops a stone in ``column`` (legal: see callers)."""
        won = self.wins(column)
        mask = self.mask | self.column_bit(column)
        return Position(self.position ^ self.mask, mask, self.moves + 1, won or mask == BOARD_MASK)


def has_four(stones: int) -> bool:
    """Whether ``stones`` holds four in a row (Pons' ``alignment``)."""
    for shift in (H1, HEIGHT, HEIGHT + 2, 1):
        pairs = stones & (stones >> shift)
        if pairs & (pairs >> (2 * shift)):
            return True
    return False


def position_from_history(history: Sequence[int]) -> Position:
    """Replay OpenSpiel action ids (columns 0..6) from the empty board.

    Raises:
        ValueError: a column outside 0..6, a full column, or a move after the game ended.
    """
    pos = Position(0, 0, 0)
    for index, action in enumerate(history):
        column = int(action)
        if pos.over:
            raise ValueError(f"move {index} ({column}) comes after the end of the game")
        if not 0 <= column < WIDTH:
            raise ValueError(f"move {index}: column {column} is not in 0..6")
        if column not in pos.legal_columns():
            raise ValueError(f"move {index}: column {column} is full")
        pos = pos.play(column)
    return pos
