"""Opponents: solvers and bots that play the curated games as ``strategic_arena`` players.

Build one from a spec string::

    import opponents
    player = opponents.make("mcts:simulations=1000,seed=0", "tic_tac_toe-v0")

Names (``opponents.describe()`` lists games and parameters): ``random``, ``mcts``, ``minimax``,
``solver``, ``nash``, ``cfr``, ``hanabi_bot``; a layer above adds the opponents it owns with
:func:`register` (``best_response``, once :mod:`strategic_arena.grading` is imported). This
package depends on the core (``strategic_arena``); the core never imports it at import time. The
numba-based opponents need the ``[solvers]`` extra and say so when it is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opponents.base import SolverPlayer
from opponents.registry import KINDS, describe, make, parse_spec, register

if TYPE_CHECKING:
    from open_spiel.python.policy import TabularPolicy

__all__ = [
    "KINDS",
    "SolverPlayer",
    "describe",
    "equilibrium_policy",
    "make",
    "parse_spec",
    "register",
]


def equilibrium_policy(env_id: str) -> TabularPolicy:
    """The shipped equilibrium of ``kuhn_poker-v0`` or ``leduc_holdem-v0`` as a ``TabularPolicy``.

    OpenSpiel's ``exploitability(game, policy)`` measures it directly. Imports numba (the
    ``[solvers]`` extra) on first use.
    """
    from opponents.equilibrium import equilibrium_policy as load

    return load(env_id)
