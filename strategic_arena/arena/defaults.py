"""The arena's embedded defaults and MARSHAL's evaluation protocol, as data.

* :data:`SOLVER_SUITE` -- the "model" the README's main command evaluates when no endpoint is
  given: a strong solver per game, served over real HTTP by :class:`PlayerServer`, so the whole
  pipeline (client, retries, validation, store, report) runs exactly as against a hosted model.
* :data:`DEFAULT_OPPONENTS` -- a few opponents per game, a weak and a strong one.
* :data:`PROTOCOLS` -- named evaluation protocols. ``marshal`` is MARSHAL's appendix C: MCTS
  with 100 and 1,000 simulations at Tic-Tac-Toe, 10 and 100 at Connect Four, the exact Nash
  equilibrium at Kuhn Poker, the CFR equilibrium at Leduc Hold'em (our shipped CFR+ policy,
  exploitability 2e-7), Hanabi in self-play; both seats; 1,000 games per setting. Its MCTS
  opponents are MARSHAL's own: OpenSpiel's ``MCTSBot`` with ``uct_c`` 2, ``solve`` off and a
  ``RandomRolloutEvaluator`` of 10 rollouts per leaf (``rollout_count: 10`` in the env configs
  of MARSHAL's repository, ``roll/agentic/env/tictactoe/config.py`` and
  ``connect_four/config.py``), so ``rollouts=10`` here.

Each table is derived from the games' specs (:mod:`strategic_arena.games.listing`): a game
says its own solver, default opponents and protocol opponents.

The ladder's :data:`DEFAULT_OPPONENTS` keep one rollout per leaf: the committed ladder was
played against those opponents, and a stronger MCTS under the same name would mix two
opponents in one row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from strategic_arena.games import CURATED
from strategic_arena.games.tables import DerivedTable

#: One solver per curated game: the embedded model of ``strategic-arena eval`` (each spec's
#: ``listing.solver``).
SOLVER_SUITE: Mapping[str, str] = DerivedTable(lambda spec: spec.listing.solver)

#: The embedded model's name in the store and the report.
SOLVER_SUITE_NAME = "solver-suite"

#: Opponents per game when ``--opponents`` is not given (each spec's
#: ``listing.default_opponents``). Hanabi is cooperative: the model plays with the partner bot.
DEFAULT_OPPONENTS: Mapping[str, Sequence[str]] = DerivedTable(
    lambda spec: spec.listing.default_opponents
)

#: Games per matchup (split over both seatings) when ``--num-games`` is not given.
DEFAULT_NUM_GAMES = 20


@dataclass(frozen=True)
class Protocol:
    """A named evaluation protocol: games, opponents per game and games per setting."""

    name: str
    opponents: Mapping[str, Sequence[str]]
    num_games: int
    description: str

    @property
    def env_ids(self) -> tuple[str, ...]:
        """The games, in the curated order."""
        return tuple(env_id for env_id in CURATED if env_id in self.opponents)


def _protocol_opponents(name: str) -> Mapping[str, Sequence[str]]:
    """The opponents of protocol ``name`` per game, from each spec's ``listing.protocols``."""
    return DerivedTable(lambda spec: spec.listing.protocols.get(name))


PROTOCOLS: Mapping[str, Protocol] = {
    "marshal": Protocol(
        "marshal",
        _protocol_opponents("marshal"),
        1000,
        "MARSHAL appendix C: MCTS-100/1000 (Tic-Tac-Toe), MCTS-10/100 (Connect Four), 10 "
        "rollouts per leaf as in MARSHAL's code, Nash (Kuhn), CFR (Leduc), Hanabi self-play; "
        "both seats; 1000 games per setting",
    ),
}

#: Where results go when no database is named (relative to the working directory).
DEFAULT_DB = "results/arena.sqlite"

#: Completion tokens per answer when no --max-tokens is given: room for a short reasoning and
#: the answer block, and a bound on a model that rambles to its context limit (a reasoning
#: model that thinks at length needs more, or thinking turned off: docs/arena.md).
DEFAULT_MAX_TOKENS = 1024
