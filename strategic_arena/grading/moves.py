"""Grade every stored move of Tic-Tac-Toe and Connect Four against the exact solvers.

For the move played at position ``h`` (the action history before it) by the player to move,
the value ``V(h)`` of the position and the value ``V(h + a)`` after the move, both for the
mover, come from:

* Tic-Tac-Toe: the minimax table of :mod:`opponents.minimax` (+1 win, 0 draw, -1 loss);
* Connect Four: the exact score of :mod:`opponents.connect_four_solver` (positive: the mover
  wins, ``22 - k`` when winning with its k-th stone; 0 draw; negative: it loses), searched
  within a node budget per position. A position whose search exceeds the budget is
  ``unknown`` and so is every move touching it: never a guess counted as exact.

Scores are cached by history in memory and in the ``c4_scores`` table, so positions that
repeat across games (openings, above all) are solved once.

A move that keeps the position's value is a *top move* (:func:`is_top_move`): SPIN-Bench's
per-move measure of competitive games, one definition for the grades, the report and the page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from strategic_arena.arena.records import StoredGame, StoredMove
from strategic_arena.arena.store import ResultsStore
from strategic_arena.games.tables import DerivedTable
from strategic_arena.grading.tables import GradeTables, MoveGrade
from strategic_arena.turn import final_answer_invalid

#: The games whose moves are graded, with the opponent kind whose exact values grade them (each
#: game's ``Listing.move_grader``: Tic-Tac-Toe's ``minimax``, Connect Four's ``solver``).
GRADED_ENVS: DerivedTable[str] = DerivedTable(lambda spec: spec.listing.move_grader)
#: Game statuses whose moves are graded (an ``incomplete`` game stopped on an infrastructure
#: failure: its last decision was not the player's).
GRADED_STATUSES = frozenset({"complete", "forfeit"})
#: The default node budget of one Connect Four position.
DEFAULT_MAX_NODES = 1_000_000


class PositionValues:
    """The exact value of positions for the player to move, with a Connect Four cache.

    Args:
        tables: where solved Connect Four positions are kept across runs (``None``: memory).
        max_nodes: the most solver nodes per Connect Four position.
    """

    def __init__(self, tables: GradeTables | None, max_nodes: int = DEFAULT_MAX_NODES) -> None:
        if max_nodes < 1:
            raise ValueError(f"the node budget must be at least 1, got {max_nodes}")
        self.tables, self.max_nodes = tables, max_nodes
        self._c4: dict[str, tuple[int | None, int]] = tables.c4_scores() if tables else {}
        self._new: dict[str, tuple[int | None, int]] = {}

    def value(self, env_id: str, history: Sequence[int]) -> int | None:
        """The value of the position after ``history`` for the player to move there.

        ``None`` when the Connect Four search exceeds the node budget. A finished game is
        valued for the player who would move next (a loss, or 0 for a draw).
        """
        grader = GRADED_ENVS.get(env_id)
        if grader is None or grader not in POSITION_VALUES:
            raise ValueError(
                f"no exact solver for {env_id}; graded games: {', '.join(GRADED_ENVS)}"
            )
        return POSITION_VALUES[grader](self, history)

    def _ttt_value(self, history: Sequence[int]) -> int:
        from opponents.minimax import ttt_value

        for_first = ttt_value(history)
        return for_first if len(history) % 2 == 0 else -for_first

    def _c4_score(self, history: Sequence[int]) -> int | None:
        from opponents.connect_four_solver import BudgetExceeded, solve

        key = ",".join(str(int(a)) for a in history)
        known = self._c4.get(key)
        if known is not None and (known[0] is not None or known[1] >= self.max_nodes):
            return known[0]
        try:
            score: int | None = solve(history, max_nodes=self.max_nodes)
        except BudgetExceeded:
            score = None
        self._c4[key] = self._new[key] = (score, self.max_nodes)
        return score

    def flush(self) -> None:
        """Write the Connect Four positions solved since the last flush to the tables."""
        if self.tables is not None and self._new:
            self.tables.add_c4_scores(self._new)
        self._new = {}


#: Opponent kind -> the exact value of a position for the player to move (``None``: unknown);
#: a game's ``Listing.move_grader`` names one of them.
POSITION_VALUES: dict[str, Callable[[PositionValues, Sequence[int]], int | None]] = {
    "minimax": PositionValues._ttt_value,
    "solver": PositionValues._c4_score,
}
#: The graders whose values are a table lookup (Tic-Tac-Toe's whole game tree is solved once):
#: a report grades their stored games itself, in memory, where ``grade`` has not stored
#: grades. Connect Four's search is budgeted and can take long: its grades come from ``grade``.
INSTANT_GRADERS = frozenset({"minimax"})


def is_top_move(grade: MoveGrade) -> bool:
    """Whether a graded move is a *top move*: SPIN-Bench's per-move measure, and ours.

    SPIN-Bench scores a competitive game move by move against a solver: the share of the
    model's moves that are among the moves the solver ranks best. With an exact solver the
    value of a position for its mover is the best value any legal move reaches (negamax:
    ``V(h) = max_a -V(h + a)``), so a move is among the best exactly when it keeps the
    position's value, ``V_after == V_before`` -- in Connect Four's exact scores that also
    means the fastest win or the slowest loss. The report's and the page's "top-move share"
    (the grades' ``optimal`` figure) count these moves among the graded ones.
    """
    return grade.category == "graded" and grade.after == grade.before


def is_blunder(grade: MoveGrade) -> bool:
    """Whether a graded move is a *blunder*: it lowers the mover's outcome class.

    Win > draw > loss, by the sign of the exact values: a move from a won position to a drawn
    or lost one, or from a drawn position to a lost one. A slower win or a faster loss (Connect
    Four's scores) keeps the class and is no blunder.
    """
    if grade.category != "graded" or grade.before is None or grade.after is None:
        return False
    return _sign(grade.after) < _sign(grade.before)


def _sign(value: int) -> int:
    return (value > 0) - (value < 0)


def instant_grades(
    store: ResultsStore, games: Sequence[StoredGame], values: PositionValues | None = None
) -> list[MoveGrade]:
    """Grades of ``games`` whose grader is instant (:data:`INSTANT_GRADERS`), in memory.

    Nothing is stored: a report grades the Tic-Tac-Toe games ``grade`` has not graded.
    """
    values = values or PositionValues(None)
    grades: list[MoveGrade] = []
    for game in games:
        if GRADED_ENVS.get(game.env_id) in INSTANT_GRADERS and game.status in GRADED_STATUSES:
            grades += grade_game(game, store.moves(game.id), values)
    return grades


def grade_game(
    game: StoredGame, moves: Sequence[StoredMove], values: PositionValues
) -> list[MoveGrade]:
    """Grade every decision of one stored two-player game (a row of ``ResultsStore.games``).

    A decision whose final answer was not a legal move (forfeited, or replaced by the run's
    random policy: its ``error_kind`` is set) is ``invalid``, whatever was then played.

    Raises:
        ValueError: the game is not a graded game, or its moves do not replay its history.
    """
    env_id = game.env_id
    if env_id not in GRADED_ENVS:
        raise ValueError(f"no exact solver for {env_id}")
    names = game.players
    history: list[int] = []
    grades = []
    for move in moves:
        seat = int(move.seat)
        common = (int(game.id), int(move.ply), seat, names[seat], names[1 - seat], env_id)
        action = move.action
        if action is None or final_answer_invalid(move.attempts, move.errors):
            grades.append(MoveGrade(*common, "invalid"))
        else:
            before = values.value(env_id, history)
            after_next = values.value(env_id, [*history, int(action)])
            if before is None or after_next is None:
                grades.append(MoveGrade(*common, "unknown"))
            else:
                grades.append(MoveGrade(*common, "graded", before, -after_next))
        if action is not None:
            history.append(int(action))
    if history != [int(a) for a in game.history][: len(history)]:
        raise ValueError(f"game {game.id}: its moves do not replay its stored history")
    return grades
