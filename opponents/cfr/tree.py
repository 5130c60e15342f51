"""The public tree of Kuhn and Leduc poker, enumerated from the numba kernels, for CFR.

The tree holds the betting sequences (and, in Leduc, the public card) that both players see,
flattened in preorder into parallel arrays (:class:`GameTree`); a decision node holds one
information set per private hand class. Hands are cards (the exact tree, on which policies are
evaluated and exported) or ranks (suits merged, the tree the solver iterates on);
:func:`rank_infosets` maps the first onto the second. See :mod:`opponents.cfr` for the
algorithm that runs on it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import ModuleType
from typing import cast

import numpy as np
import numpy.typing as npt

from opponents.kernels import kuhn_poker, leduc_poker

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

#: Node kinds of the public tree (``GameTree.kind``).
DECISION, CHANCE, LEAF = 0, 1, 2


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
        kind.append(DECISION)
        player.append(to_move if to_move >= 0 else -1)
        children.append([-1] * width)
        public.append(public_class)
        node_infoset.append(-1)
        leaf_index.append(-1)
        paths.append(path)
        if to_move == kernel.TERMINAL:
            kind[index] = LEAF
            leaf_index[index] = len(payoffs)
            payoffs.append(leaf_payoff(path, dealt_at, public_class))
            return index
        if to_move == kernel.CHANCE:  # the public card: one child per hand class
            kind[index] = CHANCE
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
def rank_infosets(name: str) -> IntArray:
    """Per info set of the card tree, the info set of the rank tree holding it."""
    cards, ranks = _game_tree(name, False), _game_tree(name, True)
    index = np.full(cards.num_infosets, -1, dtype=np.int64)
    stack = [(0, 0)]
    while stack:
        node, rank_node = stack.pop()
        if cards.kind[node] == DECISION:
            for card in range(cards.num_hands):
                index[cards.node_infoset[node] + card] = (
                    ranks.node_infoset[rank_node] + ranks.hand_of_card[card]
                )
        for slot in range(cards.children.shape[1]):
            child = int(cards.children[node, slot])
            if child < 0:
                continue
            rank_slot = ranks.hand_of_card[slot] if cards.kind[node] == CHANCE else slot
            stack.append((child, int(ranks.children[rank_node, rank_slot])))
    return index
