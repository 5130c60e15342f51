"""Strategies of the CFR tree as OpenSpiel policies, and their exploitability and value.

A strategy array has one row per info set of the card tree (``game_tree(game)``); OpenSpiel's
:class:`~open_spiel.python.policy.TabularPolicy` keys the same info sets by
``information_state_string``. Exploitability and values run the numba passes of
:mod:`opponents.cfr.passes` on the card tree.
"""

from __future__ import annotations

import functools

import numpy as np
import pyspiel
from open_spiel.python import policy as openspiel_policy

from opponents.cfr.passes import evaluate
from opponents.cfr.tree import DECISION, FloatArray, IntArray, game_name, game_tree


def openspiel_infosets(game: str) -> tuple[tuple[str, ...], IntArray]:
    """OpenSpiel's information state strings of ``game`` and the info set of each.

    Each valid info set ``(node, card)`` is replayed in OpenSpiel with some compatible
    opponent card and named by ``information_state_string`` of the player to act.
    """
    return _openspiel_infosets(game_name(game))


@functools.cache
def _openspiel_infosets(name: str) -> tuple[tuple[str, ...], IntArray]:
    """:func:`openspiel_infosets` of an OpenSpiel game name (cached)."""
    tree = game_tree(name)  # hands are cards, public[node] is the public card
    openspiel_game = pyspiel.load_game(tree.name)
    names: list[str] = []
    indices: list[int] = []
    for node in np.flatnonzero(tree.kind == DECISION):
        mover = int(tree.player[node])
        card = int(tree.public[node])
        for hand in range(tree.num_hands):
            if hand == card:
                continue
            other = min(c for c in range(tree.num_hands) if c not in (hand, card))
            deal = (hand, other) if mover == 0 else (other, hand)
            state = openspiel_game.new_initial_state()
            for action in (*deal, *tree.paths[node]):
                state.apply_action(action)
            names.append(state.information_state_string(mover))
            indices.append(int(tree.node_infoset[node]) + hand)
    return tuple(names), np.asarray(indices, dtype=np.int64)


def to_tabular_policy(game: str, strategy: FloatArray) -> openspiel_policy.TabularPolicy:
    """A strategy array of :func:`game_tree`'s info sets as an OpenSpiel ``TabularPolicy``."""
    tree = game_tree(game)
    names, indices = openspiel_infosets(game)
    tabular = openspiel_policy.TabularPolicy(pyspiel.load_game(tree.name))
    rows = np.asarray([tabular.state_lookup[name] for name in names], dtype=np.int64)
    tabular.action_probability_array[rows] = strategy[indices]
    return tabular


def from_tabular_policy(game: str, policy: openspiel_policy.TabularPolicy) -> FloatArray:
    """An OpenSpiel ``TabularPolicy`` as a strategy array over :func:`game_tree`'s info sets."""
    tree = game_tree(game)
    names, indices = openspiel_infosets(game)
    strategy = tree.uniform_strategy()
    rows = np.asarray([policy.state_lookup[name] for name in names], dtype=np.int64)
    strategy[indices] = policy.action_probability_array[rows]
    return strategy


def _strategy(game: str, policy: openspiel_policy.TabularPolicy | FloatArray) -> FloatArray:
    """A strategy array from either representation."""
    if isinstance(policy, openspiel_policy.TabularPolicy):
        return from_tabular_policy(game, policy)
    return np.asarray(policy, dtype=np.float64)


def exploitability(game: str, policy: openspiel_policy.TabularPolicy | FloatArray) -> float:
    """OpenSpiel's exploitability, ``(BR_0 + BR_1) / 2`` in chips per hand, computed in numba.

    Args:
        game: env id or OpenSpiel game name.
        policy: a ``TabularPolicy`` of the game or a strategy array over its info sets.
    """
    first, second = evaluate(game_tree(game), _strategy(game, policy), best_response=True)
    return (first + second) / 2.0


def policy_value(game: str, policy: openspiel_policy.TabularPolicy | FloatArray) -> float:
    """Player 0's expected chips per hand when both seats play ``policy``."""
    first, _ = evaluate(game_tree(game), _strategy(game, policy), best_response=False)
    return first
