"""The numba passes of CFR over a public tree: reach forward, values backward, regret updates.

Every function takes the flat arrays of a :class:`~opponents.cfr.tree.GameTree` (``kind``,
``player``, ``children``, ``node_infoset``, ``leaf_index``, ``payoff``, ``legal``,
``infoset_player``) and works in place on ``(num_infosets, num_actions)`` regrets, cumulative
strategy and current strategy, with scratch buffers ``reach[node, player, hand]`` and
``values[node, hand]`` (:func:`scratch`). Step numbers are those of :mod:`opponents.cfr`'s
docstring.
"""

from __future__ import annotations

import math

import numpy as np

from opponents.cfr.tree import CHANCE, DECISION, LEAF, BoolArray, FloatArray, GameTree, IntArray
from opponents.kernels.jit import jit

#: Algorithm codes of :func:`iterate`.
CFR_PLUS, DCFR, VANILLA, PCFR_PLUS = 0, 1, 2, 3
#: Modes of :func:`backward`: update regrets, evaluate a strategy, play a best response.
UPDATE, EVALUATE, BEST_RESPONSE = 0, 1, 2


def scratch(tree: GameTree) -> tuple[FloatArray, FloatArray]:
    """Reach and value buffers for the passes over ``tree``."""
    reach = np.zeros((tree.num_nodes, 2, tree.num_hands))
    values = np.zeros((tree.num_nodes, tree.num_hands))
    return reach, values


# --- step 2: forward ---------------------------------------------------------------------------


@jit
def forward(
    kind: IntArray,
    player: IntArray,
    children: IntArray,
    node_infoset: IntArray,
    strategy: FloatArray,
    reach: FloatArray,
) -> None:
    """Reach probabilities ``reach[node, player, hand]`` under ``strategy`` (step 2)."""
    hands = reach.shape[2]
    reach[0, :, :] = 1.0
    for node in range(kind.shape[0]):
        if kind[node] == DECISION:
            mover = player[node]
            other = 1 - mover
            base = node_infoset[node]
            for action in range(children.shape[1]):
                child = children[node, action]
                if child < 0:
                    continue
                for hand in range(hands):
                    reach[child, mover, hand] = (
                        reach[node, mover, hand] * strategy[base + hand, action]
                    )
                    reach[child, other, hand] = reach[node, other, hand]
        elif kind[node] == CHANCE:
            for slot in range(children.shape[1]):
                child = children[node, slot]
                if child < 0:
                    continue
                for hand in range(hands):
                    reach[child, 0, hand] = reach[node, 0, hand]
                    reach[child, 1, hand] = reach[node, 1, hand]


# --- steps 3 and 4: backward ------------------------------------------------------------------


@jit
def backward(
    kind: IntArray,
    player: IntArray,
    children: IntArray,
    node_infoset: IntArray,
    leaf_index: IntArray,
    payoff: FloatArray,
    strategy: FloatArray,
    reach: FloatArray,
    values: FloatArray,
    updater: int,
    mode: int,
    regrets: FloatArray,
    cumulative: FloatArray,
    weight: float,
) -> float:
    """Counterfactual values of ``updater``, leaves to root; return the root's total.

    ``mode`` :data:`UPDATE` also updates regrets and the cumulative strategy (steps 3 and 4);
    :data:`EVALUATE` only evaluates ``strategy``; :data:`BEST_RESPONSE` plays a best response
    for ``updater`` (max over actions).
    """
    # One loop body on purpose: per-node helper functions cost half again the time here.
    hands = values.shape[1]
    width = children.shape[1]
    for node in range(kind.shape[0] - 1, -1, -1):
        if kind[node] == LEAF:  # step 3: W r_1 for player 0, -W^T r_0 for player 1
            matrix = payoff[leaf_index[node]]
            for hand in range(hands):
                total = 0.0
                if updater == 0:
                    for other in range(hands):
                        total += matrix[hand, other] * reach[node, 1, other]
                else:
                    for other in range(hands):
                        total -= matrix[other, hand] * reach[node, 0, other]
                values[node, hand] = total
            continue
        if kind[node] == CHANCE or player[node] != updater:  # the sum of the children
            for hand in range(hands):
                total = 0.0
                for slot in range(width):
                    child = children[node, slot]
                    if child >= 0:
                        total += values[child, hand]
                values[node, hand] = total
            continue
        base = node_infoset[node]
        for hand in range(hands):
            infoset = base + hand
            if mode == BEST_RESPONSE:
                best = -np.inf
                for action in range(width):
                    child = children[node, action]
                    if child >= 0 and values[child, hand] > best:
                        best = values[child, hand]
                values[node, hand] = best
                continue
            total = 0.0
            for action in range(width):
                child = children[node, action]
                if child >= 0:
                    total += strategy[infoset, action] * values[child, hand]
            values[node, hand] = total
            if mode != UPDATE:
                continue
            own = weight * reach[node, updater, hand]  # step 4
            for action in range(width):
                child = children[node, action]
                if child >= 0:
                    regrets[infoset, action] += values[child, hand] - total
                    cumulative[infoset, action] += own * strategy[infoset, action]
    root = 0.0
    for hand in range(hands):
        root += values[0, hand]
    return root


# --- step 5: regret matching -------------------------------------------------------------------


@jit
def regret_matching(
    regrets: FloatArray,
    legal: BoolArray,
    infoset_player: IntArray,
    updater: int,
    strategy: FloatArray,
) -> None:
    """``strategy`` of ``updater``'s info sets from the positive part of ``regrets``."""
    for infoset in range(regrets.shape[0]):
        if infoset_player[infoset] != updater:
            continue
        positive = 0.0
        count = 0
        for action in range(regrets.shape[1]):
            if legal[infoset, action]:
                count += 1
                if regrets[infoset, action] > 0.0:
                    positive += regrets[infoset, action]
        for action in range(regrets.shape[1]):
            if not legal[infoset, action]:
                strategy[infoset, action] = 0.0
            elif positive > 0.0:
                strategy[infoset, action] = max(regrets[infoset, action], 0.0) / positive
            else:
                strategy[infoset, action] = 1.0 / count


@jit
def _clip_regrets(regrets: FloatArray, infoset_player: IntArray, updater: int) -> None:
    """Regret matching+: ``updater``'s cumulative regrets clipped at zero."""
    for infoset in range(regrets.shape[0]):
        if infoset_player[infoset] != updater:
            continue
        for action in range(regrets.shape[1]):
            regrets[infoset, action] = max(regrets[infoset, action], 0.0)


@jit
def _discount_regrets(
    regrets: FloatArray, infoset_player: IntArray, updater: int, positive: float, negative: float
) -> None:
    """DCFR: ``updater``'s positive regrets times ``positive``, negative ones times ``negative``."""
    for infoset in range(regrets.shape[0]):
        if infoset_player[infoset] != updater:
            continue
        for action in range(regrets.shape[1]):
            if regrets[infoset, action] >= 0.0:
                regrets[infoset, action] *= positive
            else:
                regrets[infoset, action] *= negative


@jit
def _predictive_matching(
    regrets: FloatArray,
    previous: FloatArray,
    legal: BoolArray,
    infoset_player: IntArray,
    updater: int,
    strategy: FloatArray,
) -> None:
    """PCFR+: clip ``updater``'s regrets at zero, then match on them plus the last regret.

    ``previous`` holds the regrets before this iteration's update, so ``regrets - previous``
    is the instantaneous regret, the prediction of the next one; the strategy is regret
    matching on the clipped cumulative regret plus that prediction (``previous`` is reused to
    hold the sum).
    """
    for infoset in range(regrets.shape[0]):
        if infoset_player[infoset] != updater:
            continue
        for action in range(regrets.shape[1]):
            instant = regrets[infoset, action] - previous[infoset, action]
            clipped = max(regrets[infoset, action], 0.0)
            regrets[infoset, action] = clipped
            previous[infoset, action] = clipped + instant
    regret_matching(previous, legal, infoset_player, updater, strategy)


@jit
def _discount(t: int, exponent: float) -> float:
    """DCFR's discount factor ``t**exponent / (t**exponent + 1)``."""
    scaled = math.pow(t, exponent)
    return scaled / (scaled + 1.0)


@jit
def _strategy_weight(algorithm: int, t: int, gamma: float) -> float:
    """The weight of iteration ``t`` in the average strategy: ``t``, ``t**gamma`` or 1."""
    if algorithm == CFR_PLUS:
        return float(t)
    if algorithm in (DCFR, PCFR_PLUS):
        return math.pow(t, gamma)
    return 1.0


# --- iterations and evaluation -----------------------------------------------------------------


@jit
def iterate(
    kind: IntArray,
    player: IntArray,
    children: IntArray,
    node_infoset: IntArray,
    leaf_index: IntArray,
    payoff: FloatArray,
    legal: BoolArray,
    infoset_player: IntArray,
    strategy: FloatArray,
    regrets: FloatArray,
    cumulative: FloatArray,
    reach: FloatArray,
    values: FloatArray,
    first: int,
    iterations: int,
    algorithm: int,
    alpha: float,
    beta: float,
    gamma: float,
) -> None:
    """Run iterations ``first .. first + iterations - 1`` (1-based) in place (steps 1-5)."""
    previous = np.empty_like(regrets) if algorithm == PCFR_PLUS else np.empty((0, 0))
    for t in range(first, first + iterations):
        weight = _strategy_weight(algorithm, t, gamma)
        for updater in range(2):
            forward(kind, player, children, node_infoset, strategy, reach)
            if algorithm == PCFR_PLUS:
                previous[:, :] = regrets
            backward(
                kind, player, children, node_infoset, leaf_index, payoff, strategy, reach,
                values, updater, UPDATE, regrets, cumulative, weight,
            )  # fmt: skip
            if algorithm == PCFR_PLUS:
                _predictive_matching(regrets, previous, legal, infoset_player, updater, strategy)
                continue
            if algorithm == CFR_PLUS:
                _clip_regrets(regrets, infoset_player, updater)
            elif algorithm == DCFR:
                _discount_regrets(
                    regrets, infoset_player, updater, _discount(t, alpha), _discount(t, beta)
                )
            regret_matching(regrets, legal, infoset_player, updater, strategy)


@jit
def _evaluate(
    kind: IntArray,
    player: IntArray,
    children: IntArray,
    node_infoset: IntArray,
    leaf_index: IntArray,
    payoff: FloatArray,
    strategy: FloatArray,
    reach: FloatArray,
    values: FloatArray,
    mode: int,
) -> tuple[float, float]:
    """Each player's value under ``mode`` (:data:`EVALUATE` or :data:`BEST_RESPONSE`)."""
    forward(kind, player, children, node_infoset, strategy, reach)
    dummy = np.zeros((1, 1))
    first = backward(
        kind, player, children, node_infoset, leaf_index, payoff, strategy, reach, values,
        0, mode, dummy, dummy, 0.0,
    )  # fmt: skip
    second = backward(
        kind, player, children, node_infoset, leaf_index, payoff, strategy, reach, values,
        1, mode, dummy, dummy, 0.0,
    )  # fmt: skip
    return first, second


def evaluate(tree: GameTree, strategy: FloatArray, best_response: bool) -> tuple[float, float]:
    """Each player's value on ``tree``: on-policy, or of a best response to the other's."""
    reach, values = scratch(tree)
    return _evaluate(
        tree.kind, tree.player, tree.children, tree.node_infoset, tree.leaf_index,
        tree.payoff, np.ascontiguousarray(strategy, dtype=np.float64), reach, values,
        BEST_RESPONSE if best_response else EVALUATE,
    )  # fmt: skip
