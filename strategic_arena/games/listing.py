"""What the arena knows about a game, kept in the game's spec, and the tables derived from it.

A game's :class:`~strategic_arena.games.base.GameSpec` says what the game is (rules, seats,
grammar, reward range); its :class:`Listing` says how the product uses it: which opponents
play it, its entrant in the embedded solver suite, the default opponents of ``eval``, the
opponents of each named evaluation protocol, how many games each pair plays in the baseline
ladder, and the paper's reference scores. Every table that used to repeat these facts per
module -- ``arena.defaults.SOLVER_SUITE`` / ``DEFAULT_OPPONENTS`` / ``PROTOCOLS``,
``leaderboard.ladder.NUM_GAMES``, ``arena.metrics.MARSHAL_PAPER`` and the games each opponent
of ``opponents.registry`` plays -- is a ``DerivedTable`` over the registered specs, so
adding a game is its spec, its prompt files and its tests. The tables are built in
:mod:`strategic_arena.games.tables`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PaperReference:
    """The references of MARSHAL's Table 3 for one game (0% and 100% of ``marshal_paper``).

    Attributes:
        worst: per seat, the lowest mean return MARSHAL's appendix J lists for that seat over
            every model it evaluated (Kuhn: SPIRAL's -0.301 and -0.149; Leduc: the Kuhn
            fixed-opponent model's -1.124 and -1.003; Tic-Tac-Toe and Connect Four: that model's
            -1.000; Hanabi: 0).
        optimum: per seat, the best mean return against the evaluation opponent.
        opponents: the opponents the references hold against (``None``: any, self-play too).
    """

    worst: tuple[float, ...]
    optimum: tuple[float, ...]
    opponents: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Listing:
    """How the arena uses one game (the part of its spec beyond the rules).

    Attributes:
        opponents: names of the opponent kinds (``opponents.registry.KINDS``) that play the
            game; the registry's list of games per opponent derives from these.
        solver: the opponent spec that plays the game in the embedded solver suite (the model
            ``strategic-arena eval`` evaluates when no ``--base-url`` is given); ``None`` leaves
            the game out of the suite, which a registered game may do only when
            ``no_solver`` says why (tests check it).
        no_solver: why no solver-suite entrant plays the game (``solver`` is ``None``); ``eval``
            without ``--base-url`` refuses the game with this reason.
        default_opponents: the opponents of ``eval`` when ``--opponents`` is not given.
        protocols: opponents per named evaluation protocol (``marshal``); a game absent from a
            protocol is not part of it, an empty tuple means self-play only.
        ladder_games: games per pair of entrants in the baseline ladder (both seatings);
            ``None`` keeps the game out of the ladder.
        marshal_paper: MARSHAL's Table 3 references, when the paper scores the game.
        move_grader: the opponent kind (``opponents.registry``) whose exact position values
            grade every stored move of the game (``strategic-arena grade``; the graders are
            ``strategic_arena.grading.moves.POSITION_VALUES``): ``minimax`` (Tic-Tac-Toe's
            table), ``solver`` (Connect Four's); ``None``: its moves are not graded.
        strategy_graded: whether ``grade`` measures a player's behavioural strategy at every
            information set of the game, and that strategy's exploitability (OpenSpiel's exact
            best response: small poker games).
    """

    opponents: tuple[str, ...] = ("random",)
    solver: str | None = None
    no_solver: str = ""
    default_opponents: tuple[str, ...] = ("random",)
    protocols: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    ladder_games: int | None = 100
    marshal_paper: PaperReference | None = None
    move_grader: str | None = None
    strategy_graded: bool = False
