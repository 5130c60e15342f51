"""Vectorized CFR+, discounted and predictive CFR over the full Kuhn and Leduc game trees, in numba.

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

Predictive CFR+ (``algorithm="pcfr+"``; Farina, Kroer & Sandholm 2021, "Faster Game Solving
via Predictive Blackwell Approachability", AAAI) keeps CFR+'s clipped cumulative regrets and
alternating updates but plays regret matching on the cumulative regret *plus a prediction of
the next instantaneous regret*, the last one: after ``p``'s pass (step 4, whose instantaneous
regret ``r`` is the change of the cumulative regret), the regrets are clipped at zero,
``R <- max(R, 0)``, and ``sigma_p`` is ``max(R + r, 0)`` normalized. Its average strategy
weighs iteration ``t`` by ``t**gamma``, with gamma = 10 by default: PCFR+'s iterates settle,
so weighing recent ones most reaches a tight exploitability sooner (on Leduc, iterations to
1e-6: about 26,000 with the paper's gamma = 2, 14,000 with 5, 11,250 with 10, 12 or 20;
CFR+ needs 64,000). It is slower than CFR+ to loose targets (about 4,000 iterations to 1e-4
against 1,600), faster to tight ones.

Exploitability (:func:`exploitability`) runs the same passes on the exact (card) tree with a
fixed policy and a max instead of the average at the best responder's nodes; it is
OpenSpiel's measure, ``(BR_0 + BR_1) / 2`` chips per hand. Policies go to and from OpenSpiel's
:class:`~open_spiel.python.policy.TabularPolicy` keyed by ``information_state_string``.

Modules: :mod:`~opponents.cfr.tree` enumerates the public tree, :mod:`~opponents.cfr.passes`
holds the numba passes (steps 2-5), :mod:`~opponents.cfr.policy` converts and evaluates
policies, :mod:`~opponents.cfr.solver` runs the iterations (:class:`CFRSolver`).
"""

from __future__ import annotations

from opponents.cfr.policy import (
    exploitability,
    from_tabular_policy,
    openspiel_infosets,
    policy_value,
    to_tabular_policy,
)
from opponents.cfr.solver import ALGORITHMS, CFRSolver, solve
from opponents.cfr.tree import ENV_GAMES, RANKS, GameTree, game_name, game_tree

__all__ = [
    "ALGORITHMS",
    "ENV_GAMES",
    "RANKS",
    "CFRSolver",
    "GameTree",
    "exploitability",
    "from_tabular_policy",
    "game_name",
    "game_tree",
    "openspiel_infosets",
    "policy_value",
    "solve",
    "to_tabular_policy",
]
