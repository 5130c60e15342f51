"""Tic-Tac-Toe over OpenSpiel's ``tic_tac_toe``.

Action ids: cell = row * 3 + column (row 0 at the top), as in OpenSpiel. Player 0 plays X and
moves first. Canonical action text: ``X(r,c)`` (the mover's mark, row, column), MARSHAL's notation
and OpenSpiel's own string up to case. Accepted besides: ``(r,c)``, ``r,c``, ``row r col c``,
``r1c2`` and named cells (``center``, ``top left``, ``bottom middle``...).
"""

from __future__ import annotations

import re

import pyspiel

from strategic_arena.actions import ActionError
from strategic_arena.games.base import ActionGrammar, GameSpec, Menu
from strategic_arena.games.listing import Listing, PaperReference

MARKS = ("X", "O")
_COORDS = re.compile(
    r"^(?:(?P<mark>[xo])\s*)?(?:cell\s*)?\(?\s*(?P<row>\d)\s*[, ]\s*(?P<col>\d)\s*\)?$"
)
_ROW_COL = re.compile(
    r"^(?:(?P<mark>[xo])\s*)?(?:at\s+)?r(?:ow)?\s*(?P<row>\d)\s*,?\s*(?:and\s+)?"
    r"c(?:ol(?:umn)?)?\s*(?P<col>\d)$"
)
_ROW_NAMES = {"top": 0, "upper": 0, "middle": 1, "center": 1, "centre": 1, "bottom": 2, "lower": 2}
_COL_NAMES = {"left": 0, "middle": 1, "center": 1, "centre": 1, "right": 2}


class TicTacToeGrammar(ActionGrammar):
    """Cells as ``X(r,c)``; see the module docstring for the accepted forms."""

    def __init__(self) -> None:
        super().__init__(num_actions=9)

    def text(self, action: int) -> str:
        """``(r,c)`` without a mark: the mark depends on whose turn it is."""
        row, col = divmod(action, 3)
        return f"({row},{col})"

    def texts(self, state: pyspiel.State, player: int) -> dict[int, str]:
        """``X(r,c)`` or ``O(r,c)`` for each empty cell."""
        mark = MARKS[player]
        return {a: f"{mark}({a // 3},{a % 3})" for a in state.legal_actions(player)}

    def interpret(self, key: str, menu: Menu) -> int | ActionError | None:
        """Coordinates in several spellings, or a named cell such as ``top left``."""
        match = _COORDS.match(key) or _ROW_COL.match(key)
        if match:
            row, col = int(match["row"]), int(match["col"])
            if row > 2 or col > 2:
                return None
            mark = match["mark"]
            mover = _mover(menu)
            if mark and mover and mark.upper() != mover:
                return ActionError(
                    "illegal_action", f"it is {mover}'s turn; you cannot place {mark.upper()}"
                )
            return row * 3 + col
        return _named_cell(key)


def _mover(menu: Menu) -> str | None:
    """The mark named by the menu's canonical texts (``X(0,0)`` -> ``X``), if any."""
    for text in menu.values():
        if text[:1] in MARKS:
            return text[0]
    return None


def _named_cell(key: str) -> int | None:
    """``center``, ``top left``, ``bottom-middle``, ``middle right``... -> cell id."""
    words = re.sub(r"[-_]", " ", key).replace("cell", "").replace("square", "").split()
    words = [w for w in words if w not in {"the", "x", "o"}]
    if words in (["center"], ["centre"], ["middle"]):
        return 4
    if len(words) != 2:
        return None
    first, second = words
    if first in _ROW_NAMES and second in _COL_NAMES:
        return _ROW_NAMES[first] * 3 + _COL_NAMES[second]
    if second in _ROW_NAMES and first in _COL_NAMES:  # "left top"
        return _ROW_NAMES[second] * 3 + _COL_NAMES[first]
    return None


class TicTacToe(GameSpec):
    """Tic-Tac-Toe: three in a row wins; +1 / -1, draw 0."""

    env_id = "tic_tac_toe-v0"
    title = "Tic-Tac-Toe"
    openspiel_name = "tic_tac_toe"
    openspiel_params: dict[str, int] = {}  # noqa: RUF012 - read-only class default
    prompt_dir = "tic_tac_toe"
    listing = Listing(
        opponents=("random", "mcts", "minimax"),
        solver="minimax",
        default_opponents=("random", "mcts:simulations=100"),
        protocols={
            "marshal": ("mcts:simulations=100,rollouts=10", "mcts:simulations=1000,rollouts=10")
        },
        ladder_games=100,
        marshal_paper=PaperReference((-1.0, -1.0), (1.0, 1.0)),
        move_grader="minimax",
    )
    memoize_observations = True  # 5,478 positions: the board string is the whole state
    optimum = 1.0
    worst = -1.0

    def __init__(self) -> None:
        self.grammar = TicTacToeGrammar()

    def player_name(self, player: int) -> str:
        """``X`` or ``O``."""
        return MARKS[player]

    def role(self, player: int) -> str:
        """Seat, mark and move order."""
        order = "you move first" if player == 0 else "you move second"
        return f"Player {player}, playing {MARKS[player]} ({order})"

    def observation_text(self, state: pyspiel.State, player: int) -> str:
        """A labelled 3x3 grid, whose turn it is, and the empty cells."""
        rows = state.observation_string(player).upper().split("\n")
        lines = [
            "Board (rows 0-2 top to bottom, columns 0-2 left to right; . = empty):",
            "    0 1 2",
        ]
        lines += [f"{r}   {' '.join(rows[r])}" for r in range(3)]
        if state.is_terminal():
            lines.append("The game is over.")
        else:
            mover = MARKS[state.current_player()]
            you = MARKS[player]
            whose = "your turn" if mover == you else "your opponent's turn"
            empty = ", ".join(f"({a // 3},{a % 3})" for a in state.legal_actions())
            lines.append(f"You are {you}. It is {whose} ({mover} to move).")
            lines.append(f"Empty cells (row,column): {empty}")
        return "\n".join(lines)

    def example_action(self, seat: int) -> str:
        """The centre cell, with the seat's mark."""
        return f"{MARKS[seat]}(1,1)"

    def describe_move(
        self, state: pyspiel.State, player: int, action: int, text: str
    ) -> str | None:
        """``X at (1,1)``."""
        return f"{MARKS[player]} at ({action // 3},{action % 3})"
