"""Opponents: solvers and bots that play the curated games as ``strategic_arena`` players.

Build one from a spec string::

    import opponents
    player = opponents.make("mcts:simulations=1000,seed=0", "tic_tac_toe-v0")

Names (``opponents.describe()`` lists games and parameters): ``random``, ``mcts``, ``minimax``,
``solver``, ``nash``, ``cfr``, ``hanabi_bot``. This package depends on the core
(``strategic_arena``); the core never imports it at import time. The numba-based opponents
need the ``[solvers]`` extra and say so when it is missing.
"""

from __future__ import annotations

from opponents.base import SolverPlayer
from opponents.registry import KINDS, describe, make, parse_spec

__all__ = ["KINDS", "SolverPlayer", "describe", "make", "parse_spec"]
