"""Grades against exact solvers: every move of the solved games, and poker strategies.

* :mod:`.moves` -- the game-theoretic value before and after each stored move of Tic-Tac-Toe
  (the minimax table) and Connect Four (the position solver, with a node budget);
* :mod:`.strategy` -- a player's behavioural strategy at every information set of Kuhn poker
  or Leduc Hold'em, queried K times each, and its exploitability (OpenSpiel);
* :mod:`.tables` -- where both are stored: the grading tables of the arena's SQLite file;
* :mod:`.summary` -- the figures per player, game and opponent, with 95% intervals;
* :mod:`.grade` -- the ``grade`` use case (moves and strategies, resumable);
* :mod:`.report` -- the arena's report with the stored grades (``strategic-arena report``).

The definitions (with formulas) are in ``docs/grading.md``.
"""

#: The poker envs whose strategies are measured (here so the CLI lists them without importing
#: OpenSpiel's Python algorithms).
POKER_ENVS = ("kuhn_poker-v0", "leduc_holdem-v0")
