"""Grades against exact solvers: every move of the solved games, and poker strategies.

Which games are graded, and how, is in each game's listing (``move_grader``,
``strategy_graded``: :class:`strategic_arena.games.listing.Listing`).

* :mod:`.moves` -- the game-theoretic value before and after each stored move of Tic-Tac-Toe
  (the minimax table) and Connect Four (the position solver, with a node budget);
* :mod:`.strategy` -- a player's behavioural strategy at every information set of Kuhn poker
  or Leduc Hold'em, queried K times each, and its exploitability (OpenSpiel);
* :mod:`.tables` -- where both are stored: the grading tables of the arena's SQLite file;
* :mod:`.summary` -- the figures per player, game and opponent, with 95% intervals;
* :mod:`.grade` -- the ``grade`` use case (moves and strategies, resumable);
* :mod:`.report` -- the arena's report with the stored grades (``strategic-arena report``).

Importing this package registers the ``best_response`` opponent (:mod:`.exploiter`) with
:func:`opponents.registry.register`.

The definitions (with formulas) are in ``docs/grading.md``.
"""

from opponents.registry import OpponentKind, register
from strategic_arena.games import get_spec, list_envs

#: The exploiter opponent, registered here (its factory lives in :mod:`.exploiter`) so that the
#: opponents' registry, a layer below, never names this package.
register(
    OpponentKind(
        "best_response",
        {"of": str, "db": str, "seed": int},
        "strategic_arena.grading.exploiter:best_response_player",
        "the exact best response to player OF's strategy measured by 'grade' in DB",
    )
)


def strategy_envs() -> tuple[str, ...]:
    """The games whose strategies are measured: their listing says ``strategy_graded``.

    Kuhn poker and Leduc Hold'em, in registry order (here so the CLI lists them without
    importing OpenSpiel's Python algorithms).
    """
    return tuple(env_id for env_id in list_envs() if get_spec(env_id).listing.strategy_graded)
