"""Predictive CFR+ (``algorithm="pcfr+"``): its iterates against an independent reference, and
the exploitability it reaches on Leduc measured by OpenSpiel itself."""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import discounted_cfr
from open_spiel.python.algorithms import exploitability as openspiel_exploitability

from opponents import cfr


class ReferencePCFRPlus(discounted_cfr._DCFRSolver):  # type: ignore[misc]
    """PCFR+ written over OpenSpiel's Python CFR (history by history, info set dictionaries).

    Alternating updates; after a player's pass its cumulative regrets are clipped at zero and
    its strategy is the positive part of the clipped regret plus that pass's instantaneous
    regret, normalized; the average weighs iteration ``t`` by ``t**gamma``.
    """

    def __init__(self, game: pyspiel.Game, gamma: float) -> None:
        super().__init__(
            game,
            regret_matching_plus=False,
            alternating_updates=True,
            linear_averaging=True,
            alpha=1,
            beta=1,
            gamma=gamma,
        )

    def evaluate_and_update_policy(self) -> None:
        self._iteration += 1
        for player in range(self._game.num_players()):
            nodes = self._player_nodes[player]
            before = [dict(node.cumulative_regret) for node in nodes]
            self._compute_counterfactual_regret_for_player(
                self._root_node,
                policies=None,
                reach_probabilities=np.ones(self._game.num_players() + 1),
                player=player,
            )
            for node, previous in zip(nodes, before, strict=True):
                predicted = {}
                for action in node.legal_actions:
                    instant = node.cumulative_regret[action] - previous.get(action, 0.0)
                    node.cumulative_regret[action] = max(node.cumulative_regret[action], 0.0)
                    predicted[action] = max(node.cumulative_regret[action] + instant, 0.0)
                total = sum(predicted.values())
                row = self._current_policy.action_probability_array[node.index_in_tabular_policy]
                for action in node.legal_actions:
                    row[action] = (
                        predicted[action] / total if total > 0 else 1 / len(node.legal_actions)
                    )


@pytest.mark.parametrize("gamma", [2.0, 10.0])
def test_pcfr_plus_iterates_equal_the_reference(gamma: float) -> None:
    reference = ReferencePCFRPlus(pyspiel.load_game("kuhn_poker"), gamma)
    solver = cfr.CFRSolver("kuhn_poker", "pcfr+", gamma=gamma)
    for checkpoint in (1, 11, 61):
        while reference._iteration < checkpoint:
            reference.evaluate_and_update_policy()
        solver.iterate(checkpoint - solver.iteration)
        ours = solver.average_policy().action_probability_array
        theirs = reference.average_policy().action_probability_array
        np.testing.assert_allclose(ours, theirs, atol=1e-9)


def test_pcfr_plus_defaults_to_recent_weighting() -> None:
    assert cfr.CFRSolver("kuhn_poker", "pcfr+").gamma == 10.0
    assert cfr.CFRSolver("kuhn_poker", "dcfr").gamma == 2.0


def test_pcfr_plus_reaches_1e_minus_6_on_leduc_by_openspiel_measure() -> None:
    """12,000 iterations: below 1e-6 by OpenSpiel's own exploitability; CFR+ is not, yet."""
    game = pyspiel.load_game("leduc_poker")
    solver = cfr.CFRSolver("leduc_poker", "pcfr+")
    solver.iterate(12_000)
    exact = float(openspiel_exploitability.exploitability(game, solver.average_policy()))
    assert exact <= 1e-6
    assert solver.exploitability() == pytest.approx(exact, abs=1e-12)
    plus = cfr.CFRSolver("leduc_poker", "cfr+")
    plus.iterate(12_000)
    assert plus.exploitability() > 2e-6
