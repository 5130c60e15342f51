"""Connect Four (6 rows x 7 columns) over OpenSpiel's ``connect_four``.

Action id = column 0-6 (left to right); the disc falls to the lowest empty row. Player 0 plays
``x`` and moves first. Canonical action text: the column number (``3``). Accepted besides:
``column 3``, ``col 3``, ``c3``, ``drop in column 3`` and OpenSpiel's ``x3`` / ``o3``.
"""

from __future__ import annotations

import functools
import itertools
import re

import pyspiel

from strategic_arena.actions import ActionError
from strategic_arena.games.base import ActionGrammar, GameSpec, Menu
from strategic_arena.games.listing import Listing, PaperReference

MARKS = ("X", "O")
_COLUMN = re.compile(
    r"^(?:(?:drop|play|put|place|move)(?:\s+(?:a\s+)?(?:disc|piece|token))?\s+)?"
    r"(?:(?:in|into|at|on)\s+)?(?:the\s+)?"
    r"(?:(?P<mark>[xo])\s*)?(?:c|col|column)?\s*#?\s*(?P<col>\d+)$"
)


_HEADER = (
    "Board (top row first; columns 0-6 left to right; . = empty; discs fall to the bottom):\n"
    "  0 1 2 3 4 5 6"
)
#: Every possible row of OpenSpiel's board string (3^7 of them) -> its spaced, upper-case form.
_ROWS = {
    "".join(cells): "  " + " ".join(cells).upper() for cells in itertools.product(".xo", repeat=7)
}


@functools.lru_cache(maxsize=1024)
def _footer(player: int, mover: int, top_row: str) -> str:
    """Whose turn it is and the columns that are not full (read off the top row)."""
    you, to_move = MARKS[player], MARKS[mover]
    whose = "your turn" if player == mover else "your opponent's turn"
    playable = ", ".join(str(c) for c, cell in enumerate(top_row) if cell == ".")
    return (
        f"You are {you}. It is {whose} ({to_move} to move).\nColumns that are not full: {playable}"
    )


class ConnectFourGrammar(ActionGrammar):
    """Columns by number; see the module docstring for the accepted forms."""

    def __init__(self) -> None:
        super().__init__(num_actions=7)

    def text(self, action: int) -> str:
        """The column number."""
        return str(action)

    def interpret(self, key: str, menu: Menu) -> int | ActionError | None:
        """``column 3``, ``c3``, ``x3``, ``drop in column 3``..."""
        match = _COLUMN.match(key)
        if not match:
            return None
        column = int(match["col"])
        if column > 6:
            return None
        return column


class ConnectFour(GameSpec):
    """Connect Four: four in a row (any direction) wins; +1 / -1, full board is a draw (0)."""

    env_id = "connect_four-v0"
    title = "Connect Four"
    openspiel_name = "connect_four"
    openspiel_params: dict[str, int] = {}  # noqa: RUF012 - read-only class default
    prompt_dir = "connect_four"
    # Fewer ladder games: the solver spends up to its budget on each early move.
    listing = Listing(
        opponents=("random", "mcts", "solver"),
        solver="mcts:simulations=400",
        default_opponents=("random", "mcts:simulations=10"),
        protocols={
            "marshal": ("mcts:simulations=10,rollouts=10", "mcts:simulations=100,rollouts=10")
        },
        ladder_games=40,
        marshal_paper=PaperReference((-1.0, -1.0), (1.0, 1.0)),
        move_grader="solver",
    )

    def __init__(self) -> None:
        self.grammar = ConnectFourGrammar()

    def player_name(self, player: int) -> str:
        """``X`` or ``O``."""
        return MARKS[player]

    def role(self, player: int) -> str:
        """Seat, disc and move order."""
        order = "you move first" if player == 0 else "you move second"
        return f"Player {player}, playing {MARKS[player]} discs ({order})"

    def observation_text(self, state: pyspiel.State, player: int) -> str:
        """The 6x7 grid (top row first, columns labelled 0-6), whose turn, playable columns."""
        # OpenSpiel prints 6 rows of 7 cells ('.', 'x', 'o'), each ending in a newline; each row
        # is looked up in a table of all 2,187 rows, by slice (this runs every step: slices
        # and one f-string cost less than split, map and join).
        board = state.observation_string(player)
        rows = _ROWS
        grid = (
            f"{_HEADER}\n{rows[board[0:7]]}\n{rows[board[8:15]]}\n{rows[board[16:23]]}\n"
            f"{rows[board[24:31]]}\n{rows[board[32:39]]}\n{rows[board[40:47]]}\n"
        )
        # No chance and no simultaneous turns: the seat to move is negative only at the end.
        mover = state.current_player()
        if mover < 0:
            return f"{grid}The game is over."
        return grid + _footer(player, mover, board[:7])

    def example_action(self, seat: int) -> str:
        """The centre column."""
        return "3"

    def describe_move(
        self, state: pyspiel.State, player: int, action: int, text: str
    ) -> str | None:
        """``X in column 3``."""
        return f"{MARKS[player]} in column {action}"
