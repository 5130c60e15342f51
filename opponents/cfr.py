"""Vectorized CFR+ and discounted CFR over the full Kuhn and Leduc game trees, in numba.

The solver works on the *public* tree: the betting sequences (and, in Leduc, the public card)
that both players see. A node of that tree holds, for every private hand class ``h``, one
information set of the player to act, so regrets and average strategies are
``(num_infosets, num_actions)`` float64 arrays with the info sets of a node in one block
(``node_infoset[node] + h``). Each half-iteration handles every chance outcome at once with
vectors over hands. A hand class is a card (the exact tree, used to evaluate any policy) or,
for solving, a rank: Leduc's two suits are strategically identical, so CFR's iterates are
suit-symmetric and the solver runs on ranks (3 hands and 3 public cards instead of 6 and 6)
with card-removal counts folded into the chance weights; this changes no iterate.

One iteration ``t`` (1, 2, ...) of CFR+ (Tammelin 2014, "Solving Large Imperfect Information
Games Using CFR+", arXiv:1407.5042), with alternating updates exactly as OpenSpiel's
``CFRPlusSolver`` does them, so that both produce the same iterates (up to floating-point
rounding, which CFR+ amplifies after a hundred or so iterations on Leduc):

1. For the updating player ``p`` = 0, then ``p`` = 1:
2. Forward pass, root to leaves: the reach probability of every node for every hand of each
   player, ``reach[child, q, h] = reach[node, q, h] * sigma_q(I(node, h), a)`` for the acting
   player ``q`` (the other player's reach is copied; chance nodes copy both).
3. Backward pass, leaves to root: the counterfactual value of ``p`` for each hand ``h``. A
   leaf is worth ``v_0 = W r_1`` to player 0 and ``v_1 = -W^T r_0`` to player 1, where
   ``r_q`` is player ``q``'s reach and ``W[h0, h1]`` is player 0's payoff summed over the
   deals of hands ``h0``, ``h1`` (and the public card of the leaf's subtree) times the
   probability of one deal (1/6 in Kuhn; 1/30 before and 1/120 after Leduc's public card);
   impossible deals (shared cards) weigh 0. A chance node sums its children; a node of the
   opponent sums its children; a node of ``p`` averages them under ``sigma_p``.
4. At each node of ``p``, for every hand ``h`` and action ``a``: add the instantaneous
   counterfactual regret ``v(child_a, h) - v(node, h)`` to the cumulative regret, and add
   ``t * reach_p(node, h) * sigma_p(I, a)`` to the cumulative (linearly weighted) strategy.
5. Regret matching+: clip the cumulative regrets of ``p`` at zero, then set ``sigma_p`` to
   the positive regrets normalized (uniform over the legal actions when none is positive).
6. The output is the average strategy: the cumulative strategy normalized per info set
   (uniform where it sums to zero).

Discounted CFR (Brown & Sandholm 2019, "Solving Imperfect-Information Games via Discounted
Regret Minimization", AAAI) replaces steps 4 and 5, as OpenSpiel's ``DCFRSolver`` does:
the strategy weight is ``t**gamma``; after ``p``'s pass its positive cumulative regrets are
multiplied by ``t**alpha / (t**alpha + 1)`` and its negative ones by
``t**beta / (t**beta + 1)``, and ``sigma_p`` is regret matching of the result (defaults
alpha = 1.5, beta = 0, gamma = 2). ``algorithm="cfr"`` is vanilla CFR with alternating
updates (uniform weights, no clipping), as OpenSpiel's ``CFRSolver``.

Exploitability (:func:`exploitability`) runs the same passes on the exact (card) tree with a
fixed policy and a max instead of the average at the best responder's nodes; it is
OpenSpiel's measure, ``(BR_0 + BR_1) / 2`` chips per hand. Policies go to and from OpenSpiel's
:class:`~open_spiel.python.policy.TabularPolicy` keyed by ``information_state_string``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType
from typing import cast

import numpy as np
import numpy.typing as npt
import pyspiel
from open_spiel.python import policy as openspiel_policy

from opponents.kernels import kuhn_poker, leduc_poker
from opponents.kernels.jit import jit as _jit

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Env ids of the arena and the OpenSpiel games they run.
ENV_GAMES: dict[str, str] = {"kuhn_poker-v0": "kuhn_poker", "leduc_holdem-v0": "leduc_poker"}
_KERNELS: dict[str, ModuleType] = {"kuhn_poker": kuhn_poker, "leduc_poker": leduc_poker}
#: Per game, the rank of each card id: cards of one rank are interchangeable (suits).
RANKS: dict[str, tuple[int, ...]] = {
    "kuhn_poker": (0, 1, 2),
    "leduc_poker": (0, 0, 1, 1, 2, 2),
}

#: Algorithms :class:`CFRSolver` runs.
ALGORITHMS = ("cfr+", "dcfr", "cfr")
_ALGORITHM_CODES = {"cfr+": 0, "dcfr": 1, "cfr": 2}

# Node kinds of the public tree.
_DECISION, _CHANCE, _LEAF = 0, 1, 2


def game_name(game: str) -> str:
    """The OpenSpiel game name for an env id (``leduc_holdem-v0``) or a game name."""
    name = ENV_GAMES.get(game, game)
    if name not in _KERNELS:
        known = ", ".join([*ENV_GAMES, *_KERNELS])
        raise ValueError(f"no CFR game tree for {game!r}; known: {known}")
    return name


@dataclass(frozen=True, eq=False, repr=False)
class GameTree:
    """The public tree of a poker game, flattened in preorder (parents before children).

    Attributes:
        name: OpenSpiel game name.
        hand_of_card: the hand class of each card id (the card itself, or its rank).
        num_hands: hand classes (``max(hand_of_card) + 1``).
        num_actions: OpenSpiel's number of distinct actions.
        kind: per node, decision (0), public-card chance (1) or leaf (2).
        player: per node, the player to act (-1 elsewhere).
        children: per node, the child for each action id (decision) or public hand class
            (chance); -1 where there is none.
        public: per node, the class of the public card revealed on its path (-1 before).
        node_infoset: per decision node, the first of its ``num_hands`` info sets (-1 else).
        leaf_index: per leaf, its row in ``payoff`` (-1 else).
        payoff: per leaf, player 0's payoff ``[h0, h1]`` summed over the deals of those hand
            classes and weighted by their chance probability (0 for impossible deals).
        legal: per info set, its legal actions.
        infoset_player: per info set, its player.
        infoset_valid: per info set, whether it exists (some card of its class is not the
            public card).
        paths: per node, the actions from the root (after the private deal) to it, with a
            representative public card of its class.
    """

    name: str
    hand_of_card: tuple[int, ...]
    num_hands: int
    num_actions: int
    kind: IntArray
    player: IntArray
    children: IntArray
    public: IntArray
    node_infoset: IntArray
    leaf_index: IntArray
    payoff: FloatArray
    legal: BoolArray
    infoset_player: IntArray
    infoset_valid: BoolArray
    paths: tuple[tuple[int, ...], ...]

    def __repr__(self) -> str:
        return f"GameTree({self.name}: {self.num_nodes} nodes, {self.num_infosets} info sets)"

    @property
    def num_nodes(self) -> int:
        """Nodes of the public tree."""
        return int(self.kind.shape[0])

    @property
    def num_infosets(self) -> int:
        """Info set slots (``num_hands`` per decision node, impossible ones included)."""
        return int(self.legal.shape[0])

    def uniform_strategy(self) -> FloatArray:
        """The uniform random strategy over the legal actions of every info set."""
        legal = self.legal.astype(np.float64)
        return cast(FloatArray, legal / legal.sum(axis=1, keepdims=True))


def game_tree(game: str, by_rank: bool = False) -> GameTree:
    """The public tree of ``game`` (env id or OpenSpiel name), enumerated with its kernel.

    Args:
        game: env id or OpenSpiel game name.
        by_rank: hands are ranks (suits merged, for solving) instead of cards (exact).
    """
    return _game_tree(game_name(game), by_rank)


@functools.cache
def _game_tree(name: str, by_rank: bool) -> GameTree:
    """:func:`game_tree` of an OpenSpiel game name (cached)."""
    kernel = _KERNELS[name]
    cards, actions = int(kernel.NUM_CARDS), int(kernel.NUM_ACTIONS)
    hand_of_card = RANKS[name] if by_rank else tuple(range(cards))
    hands = max(hand_of_card) + 1
    members = [[card for card in range(cards) if hand_of_card[card] == h] for h in range(hands)]
    width = max(hands, actions)
    kind: list[int] = []
    player: list[int] = []
    children: list[list[int]] = []
    public: list[int] = []
    node_infoset: list[int] = []
    leaf_index: list[int] = []
    payoffs: list[FloatArray] = []
    legal: list[list[bool]] = []
    infoset_player: list[int] = []
    infoset_valid: list[bool] = []
    paths: list[tuple[int, ...]] = []
    buffer = np.zeros(max(cards, actions), dtype=np.int64)

    def leaf_payoff(path: tuple[int, ...], dealt_at: int, public_class: int) -> FloatArray:
        """Player 0's chance-weighted payoffs by hand class, from the kernel's returns."""
        publics = members[public_class] if dealt_at >= 0 else [-1]
        deals = cards * (cards - 1) * (cards - 2 if dealt_at >= 0 else 1)
        payoff = np.zeros((hands, hands))
        actions_ = list(path)
        for card in publics:
            if dealt_at >= 0:
                actions_[dealt_at] = card
            for card0 in range(cards):
                for card1 in range(cards):
                    if card0 == card1 or card in (card0, card1):
                        continue
                    state = kernel.state_from_history((card0, card1, *actions_))
                    payoff[hand_of_card[card0], hand_of_card[card1]] += (
                        kernel.returns(state)[0] / deals
                    )
        return payoff

    def visit(state: IntArray, path: tuple[int, ...], dealt_at: int, public_class: int) -> int:
        """Append the node of ``state`` and its subtree; return its index."""
        index = len(kind)
        to_move = int(kernel.current_player(state))
        kind.append(_DECISION)
        player.append(to_move if to_move >= 0 else -1)
        children.append([-1] * width)
        public.append(public_class)
        node_infoset.append(-1)
        leaf_index.append(-1)
        paths.append(path)
        if to_move == kernel.TERMINAL:
            kind[index] = _LEAF
            leaf_index[index] = len(payoffs)
            payoffs.append(leaf_payoff(path, dealt_at, public_class))
            return index
        if to_move == kernel.CHANCE:  # the public card: one child per hand class
            kind[index] = _CHANCE
            for dealt in range(hands):
                child = state.copy()
                kernel.apply_action(child, members[dealt][0])
                children[index][dealt] = visit(child, (*path, members[dealt][0]), len(path), dealt)
            return index
        count = int(kernel.legal_actions(state, buffer))
        moves = [int(action) for action in buffer[:count]]
        node_infoset[index] = len(infoset_player)
        for hand in range(hands):
            legal.append([action in moves for action in range(actions)])
            infoset_player.append(to_move)
            infoset_valid.append(len(members[hand]) > (1 if hand == public_class else 0))
        for action in moves:
            child = state.copy()
            kernel.apply_action(child, action)
            children[index][action] = visit(child, (*path, action), dealt_at, public_class)
        return index

    root = kernel.new_state()
    kernel.apply_action(root, 0)  # any private deal: the betting does not depend on it
    kernel.apply_action(root, 1)
    visit(root, (), -1, -1)
    return GameTree(
        name=name,
        hand_of_card=hand_of_card,
        num_hands=hands,
        num_actions=actions,
        kind=np.asarray(kind, dtype=np.int64),
        player=np.asarray(player, dtype=np.int64),
        children=np.asarray(children, dtype=np.int64),
        public=np.asarray(public, dtype=np.int64),
        node_infoset=np.asarray(node_infoset, dtype=np.int64),
        leaf_index=np.asarray(leaf_index, dtype=np.int64),
        payoff=np.asarray(payoffs, dtype=np.float64).reshape(-1, hands, hands),
        legal=np.asarray(legal, dtype=np.bool_),
        infoset_player=np.asarray(infoset_player, dtype=np.int64),
        infoset_valid=np.asarray(infoset_valid, dtype=np.bool_),
        paths=tuple(paths),
    )


@functools.cache
def _rank_infosets(name: str) -> IntArray:
    """Per info set of the card tree, the info set of the rank tree holding it."""
    cards, ranks = _game_tree(name, False), _game_tree(name, True)
    index = np.full(cards.num_infosets, -1, dtype=np.int64)
    stack = [(0, 0)]
    while stack:
        node, rank_node = stack.pop()
        if cards.kind[node] == _DECISION:
            for card in range(cards.num_hands):
                index[cards.node_infoset[node] + card] = (
                    ranks.node_infoset[rank_node] + ranks.hand_of_card[card]
                )
        for slot in range(cards.children.shape[1]):
            child = int(cards.children[node, slot])
            if child < 0:
                continue
            rank_slot = ranks.hand_of_card[slot] if cards.kind[node] == _CHANCE else slot
            stack.append((child, int(ranks.children[rank_node, rank_slot])))
    return index


# ---------------------------------------------------------------------------------------------
# numba passes


@_jit
def _forward(
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
        node_kind = kind[node]
        if node_kind == _DECISION:
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
        elif node_kind == _CHANCE:
            for slot in range(children.shape[1]):
                child = children[node, slot]
                if child < 0:
                    continue
                for hand in range(hands):
                    reach[child, 0, hand] = reach[node, 0, hand]
                    reach[child, 1, hand] = reach[node, 1, hand]


@_jit
def _backward(
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

    ``mode`` 0 also updates regrets and the cumulative strategy (steps 3 and 4); mode 1 only
    evaluates ``strategy``; mode 2 plays a best response for ``updater`` (max over actions).
    """
    hands = values.shape[1]
    width = children.shape[1]
    for node in range(kind.shape[0] - 1, -1, -1):
        node_kind = kind[node]
        if node_kind == _LEAF:
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
        elif node_kind == _CHANCE or player[node] != updater:
            for hand in range(hands):
                total = 0.0
                for slot in range(width):
                    child = children[node, slot]
                    if child >= 0:
                        total += values[child, hand]
                values[node, hand] = total
        else:
            base = node_infoset[node]
            for hand in range(hands):
                infoset = base + hand
                if mode == 2:
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
                if mode == 0:
                    own = weight * reach[node, updater, hand]
                    for action in range(width):
                        child = children[node, action]
                        if child >= 0:
                            regrets[infoset, action] += values[child, hand] - total
                            cumulative[infoset, action] += own * strategy[infoset, action]
    root = 0.0
    for hand in range(hands):
        root += values[0, hand]
    return root


@_jit
def _regret_matching(
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


@_jit
def _iterate(
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
    for t in range(first, first + iterations):
        if algorithm == 0:
            weight = float(t)
        elif algorithm == 1:
            weight = float(t) ** gamma
        else:
            weight = 1.0
        for updater in range(2):
            _forward(kind, player, children, node_infoset, strategy, reach)
            _backward(
                kind, player, children, node_infoset, leaf_index, payoff, strategy, reach,
                values, updater, 0, regrets, cumulative, weight,
            )  # fmt: skip
            if algorithm == 0:  # regret matching+: clip at zero
                for infoset in range(regrets.shape[0]):
                    if infoset_player[infoset] == updater:
                        for action in range(regrets.shape[1]):
                            regrets[infoset, action] = max(regrets[infoset, action], 0.0)
            elif algorithm == 1:  # discounting
                positive = float(t) ** alpha
                positive = positive / (positive + 1.0)
                negative = float(t) ** beta
                negative = negative / (negative + 1.0)
                for infoset in range(regrets.shape[0]):
                    if infoset_player[infoset] == updater:
                        for action in range(regrets.shape[1]):
                            if regrets[infoset, action] >= 0.0:
                                regrets[infoset, action] *= positive
                            else:
                                regrets[infoset, action] *= negative
            _regret_matching(regrets, legal, infoset_player, updater, strategy)


@_jit
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
    best_response: bool,
) -> tuple[float, float]:
    """Each player's value: on-policy, or of a best response to the other's ``strategy``."""
    _forward(kind, player, children, node_infoset, strategy, reach)
    dummy = np.zeros((1, 1))
    mode = 2 if best_response else 1
    first = _backward(
        kind, player, children, node_infoset, leaf_index, payoff, strategy, reach, values,
        0, mode, dummy, dummy, 0.0,
    )  # fmt: skip
    second = _backward(
        kind, player, children, node_infoset, leaf_index, payoff, strategy, reach, values,
        1, mode, dummy, dummy, 0.0,
    )  # fmt: skip
    return first, second


def _normalized(tree: GameTree, cumulative: FloatArray) -> FloatArray:
    """``cumulative`` normalized per info set; uniform over legal actions where it sums to 0."""
    totals = cumulative.sum(axis=1, keepdims=True)
    uniform = tree.uniform_strategy()
    safe = np.where(totals > 0.0, totals, 1.0)
    return cast(FloatArray, np.where(totals > 0.0, cumulative / safe, uniform))


def _scratch(tree: GameTree) -> tuple[FloatArray, FloatArray]:
    """Reach and value buffers for the passes."""
    reach = np.zeros((tree.num_nodes, 2, tree.num_hands))
    values = np.zeros((tree.num_nodes, tree.num_hands))
    return reach, values


def _values(tree: GameTree, strategy: FloatArray, best_response: bool) -> tuple[float, float]:
    """:func:`_evaluate` on ``tree``."""
    reach, values = _scratch(tree)
    return _evaluate(
        tree.kind, tree.player, tree.children, tree.node_infoset, tree.leaf_index,
        tree.payoff, np.ascontiguousarray(strategy, dtype=np.float64), reach, values,
        best_response,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# OpenSpiel policies


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
    for node in np.flatnonzero(tree.kind == _DECISION):
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
    tree = game_tree(game)
    first, second = _values(tree, _strategy(game, policy), best_response=True)
    return (first + second) / 2.0


def policy_value(game: str, policy: openspiel_policy.TabularPolicy | FloatArray) -> float:
    """Player 0's expected chips per hand when both seats play ``policy``."""
    tree = game_tree(game)
    first, _ = _values(tree, _strategy(game, policy), best_response=False)
    return first


# ---------------------------------------------------------------------------------------------
# the solver


class CFRSolver:
    """CFR+ (default), DCFR or vanilla CFR on the full public tree of Kuhn or Leduc poker.

    Iterates equal OpenSpiel's ``CFRPlusSolver``, ``DCFRSolver`` and ``CFRSolver`` (up to
    floating-point rounding). The solver runs on the rank tree (``game_tree(game, True)``:
    ``regrets``, ``cumulative`` and ``strategy`` are indexed by its info sets); strategies it
    returns are over the card tree's info sets (``game_tree(game)``), as every other function
    of this module takes them.

    Args:
        game: env id (``leduc_holdem-v0``) or OpenSpiel name (``leduc_poker``).
        algorithm: ``"cfr+"``, ``"dcfr"`` or ``"cfr"``.
        alpha: DCFR discount exponent of positive regrets.
        beta: DCFR discount exponent of negative regrets.
        gamma: DCFR exponent of the average strategy weights.
    """

    def __init__(
        self,
        game: str,
        algorithm: str = "cfr+",
        *,
        alpha: float = 1.5,
        beta: float = 0.0,
        gamma: float = 2.0,
    ) -> None:
        if algorithm not in _ALGORITHM_CODES:
            raise ValueError(f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
        self.game = game_name(game)
        self.algorithm = algorithm
        self.alpha, self.beta, self.gamma = alpha, beta, gamma
        self.tree = game_tree(self.game, by_rank=True)
        self._expand = _rank_infosets(self.game)
        shape = (self.tree.num_infosets, self.tree.num_actions)
        self.regrets: FloatArray = np.zeros(shape)
        self.cumulative: FloatArray = np.zeros(shape)
        self.strategy: FloatArray = self.tree.uniform_strategy()
        self.iteration = 0
        self._reach, self._values = _scratch(self.tree)

    def iterate(self, iterations: int = 1) -> None:
        """Run ``iterations`` more iterations."""
        tree = self.tree
        _iterate(
            tree.kind, tree.player, tree.children, tree.node_infoset, tree.leaf_index,
            tree.payoff, tree.legal, tree.infoset_player, self.strategy, self.regrets,
            self.cumulative, self._reach, self._values, self.iteration + 1, iterations,
            _ALGORITHM_CODES[self.algorithm], self.alpha, self.beta, self.gamma,
        )  # fmt: skip
        self.iteration += iterations

    def average_strategy(self) -> FloatArray:
        """The average strategy (the solver's output) over the card tree's info sets."""
        return _normalized(self.tree, self.cumulative)[self._expand]

    def current_strategy(self) -> FloatArray:
        """The current (last-iterate) strategy over the card tree's info sets."""
        strategy: FloatArray = self.strategy[self._expand]
        return strategy

    def exploitability(self) -> float:
        """Exploitability of the average strategy (OpenSpiel's measure)."""
        return exploitability(self.game, self.average_strategy())

    def average_policy(self) -> openspiel_policy.TabularPolicy:
        """The average strategy as an OpenSpiel ``TabularPolicy``."""
        return to_tabular_policy(self.game, self.average_strategy())

    def solve(
        self,
        max_iterations: int,
        target_exploitability: float | None = None,
        check_every: int = 100,
    ) -> float:
        """Iterate until ``max_iterations`` in all or the target exploitability is reached.

        Args:
            max_iterations: stop when the solver's iteration count reaches this.
            target_exploitability: stop at the first check whose exploitability is at most
                this (``None``: run all iterations).
            check_every: iterations between exploitability checks.

        Returns:
            The exploitability of the average strategy at the end.
        """
        while self.iteration < max_iterations:
            self.iterate(min(check_every, max_iterations - self.iteration))
            if target_exploitability is not None and self.exploitability() <= target_exploitability:
                break
        return self.exploitability()


def solve(
    game: str,
    iterations: int,
    algorithm: str = "cfr+",
    target_exploitability: float | None = None,
) -> openspiel_policy.TabularPolicy:
    """The average policy of ``algorithm`` after ``iterations`` (or the target is reached)."""
    solver = CFRSolver(game, algorithm)
    solver.solve(iterations, target_exploitability)
    return solver.average_policy()
