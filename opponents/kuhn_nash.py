"""The exact Nash equilibria of Kuhn poker in closed form (Kuhn 1950).

Player 0 (first to act) has a one-parameter family of equilibrium strategies, ``alpha`` in
``[0, 1/3]``; player 1's equilibrium strategy is unique. Cards: J (0) < Q (1) < K (2).

Player 0:

- first decision: bet J with probability ``alpha``, never bet Q, bet K with ``3 * alpha``;
- after pass-bet: fold J, call Q with ``alpha + 1/3``, call K.

Player 1:

- after a pass: bet J with probability 1/3 (a bluff), check Q, bet K;
- facing a bet: fold J, call Q with 1/3, call K.

Every member gives player 0 the game value -1/18 chips per hand. OpenSpiel's information
state strings are the card digit followed by the betting (``p`` / ``b``), e.g. ``"1pb"``:
player 0 holding the Queen after pass-bet.
"""

from __future__ import annotations

import pyspiel
from open_spiel.python import policy as openspiel_policy

#: Player 0's equilibrium value in chips per hand.
KUHN_VALUE = -1.0 / 18.0
#: The largest bluffing parameter of player 0's equilibrium family.
MAX_ALPHA = 1.0 / 3.0


def bet_probabilities(alpha: float = 1.0 / 6.0) -> dict[str, float]:
    """Probability of action 1 (bet / call) at every information state of the equilibrium.

    Args:
        alpha: player 0's parameter, in ``[0, 1/3]``.

    Raises:
        ValueError: ``alpha`` outside ``[0, 1/3]``.
    """
    if not 0.0 <= alpha <= MAX_ALPHA:
        raise ValueError(f"alpha must lie in [0, 1/3], got {alpha}")
    third = 1.0 / 3.0
    return {
        # player 0, first decision
        "0": alpha,
        "1": 0.0,
        "2": 3.0 * alpha,
        # player 0 after pass-bet
        "0pb": 0.0,
        "1pb": alpha + third,
        "2pb": 1.0,
        # player 1 after a pass
        "0p": third,
        "1p": 0.0,
        "2p": 1.0,
        # player 1 facing a bet
        "0b": 0.0,
        "1b": third,
        "2b": 1.0,
    }


def kuhn_equilibrium(alpha: float = 1.0 / 6.0) -> openspiel_policy.TabularPolicy:
    """The equilibrium with parameter ``alpha`` as an OpenSpiel ``TabularPolicy`` (both seats)."""
    tabular = openspiel_policy.TabularPolicy(pyspiel.load_game("kuhn_poker"))
    for name, bet in bet_probabilities(alpha).items():
        row = tabular.state_lookup[name]
        tabular.action_probability_array[row] = (1.0 - bet, bet)
    return tabular
