"""Leduc Hold'em rules as numba kernels over a small int64 state array.

The rules and ids are OpenSpiel's ``leduc_poker`` (two players): six cards, card id ``c`` has
rank ``c // 2`` (0 = Jack, 1 = Queen, 2 = King) and suit ``c % 2``. Each player antes 1 and
is dealt one private card (player 0 first); a betting round follows, then chance reveals one
public card and a second betting round follows. Player 0 acts first in both rounds.

Betting actions: 0 = Fold (legal only facing a bet), 1 = Call (a check with nothing to call),
2 = Raise (a bet with nothing to call). At most two raises per round, the opening bet
included; a raise puts in what is owed plus 2 chips in round 1 and 4 chips in round 2. A round
ends with a call that is not its first action (check-check, or any call of a bet). A fold
forfeits the folder's chips; at showdown a pair (private rank = public rank) beats no pair,
else the higher rank wins, equal ranks split (both get 0).

State encoding (``int64[STATE_SIZE]``, built by :func:`new_state`)::

    [0]  player 0's card     (-1 before the deal)
    [1]  player 1's card     (-1 before the deal)
    [2]  public card          (-1 until revealed)
    [3]  betting round        (0 or 1)
    [4]  raises made in the current round
    [5]  actions made in the current round
    [6]  chips player 0 put in the pot (ante included)
    [7]  chips player 1 put in the pot
    [8]  the player who folded (-1 if none)
    [9]  the player to act: 0, 1, CHANCE (-1) or TERMINAL (-4), as OpenSpiel numbers them
    [10] length of the history
    [11:22] the history: OpenSpiel action ids in order, deal outcomes (card ids) included

Every kernel is a small pure function (``apply_action`` mutates the array it is given);
:func:`state_from_history` replays an OpenSpiel history.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from opponents.kernels.jit import jit as _jit

IntArray = npt.NDArray[np.int64]

NUM_CARDS = 6
NUM_ACTIONS = 3
NUM_PLAYERS = 2
FOLD, CALL, RAISE = 0, 1, 2
CHANCE = -1  # OpenSpiel's kChancePlayerId
TERMINAL = -4  # OpenSpiel's kTerminalPlayerId
ANTE = 1
MAX_RAISES = 2
RAISE_SIZE_ROUND1 = 2
RAISE_SIZE_ROUND2 = 4
MAX_HISTORY = 11  # two private deals, four moves, the public deal, four moves
STATE_SIZE = 11 + MAX_HISTORY

_CARD0, _CARD1, _PUBLIC, _ROUND, _RAISES, _ACTIONS = 0, 1, 2, 3, 4, 5
_POT0, _FOLDED, _PLAYER, _LENGTH, _HISTORY = 6, 8, 9, 10, 11


@_jit
def new_state() -> IntArray:
    """The initial state: antes in, no card dealt, chance to act."""
    state = np.zeros(STATE_SIZE, dtype=np.int64)
    state[_CARD0] = -1
    state[_CARD1] = -1
    state[_PUBLIC] = -1
    state[_POT0] = ANTE
    state[_POT0 + 1] = ANTE
    state[_FOLDED] = -1
    state[_PLAYER] = CHANCE
    return state


@_jit
def current_player(state: IntArray) -> int:
    """0 or 1 to act, :data:`CHANCE` while dealing, :data:`TERMINAL` when the hand is over."""
    return int(state[_PLAYER])


@_jit
def is_terminal(state: IntArray) -> bool:
    """Whether the hand is over (a fold, or the end of the second round)."""
    return bool(state[_PLAYER] == TERMINAL)


@_jit
def _card_used(state: IntArray, card: int) -> bool:
    """Whether ``card`` was already dealt (privately or publicly)."""
    return bool(state[_CARD0] == card or state[_CARD1] == card or state[_PUBLIC] == card)


@_jit
def legal_actions(state: IntArray, out: IntArray) -> int:
    """Write the legal actions (ascending) into ``out``; return how many there are.

    At a chance node these are the cards still in the deck (OpenSpiel's chance outcomes); at
    a terminal state there are none. ``out`` needs room for ``max(NUM_CARDS, NUM_ACTIONS)``.
    """
    player = state[_PLAYER]
    if player == TERMINAL:
        return 0
    count = 0
    if player == CHANCE:
        for card in range(NUM_CARDS):
            if not _card_used(state, card):
                out[count] = card
                count += 1
        return count
    if state[_POT0 + player] < state[_POT0 + 1 - player]:  # facing a bet
        out[count] = FOLD
        count += 1
    out[count] = CALL
    count += 1
    if state[_RAISES] < MAX_RAISES:
        out[count] = RAISE
        count += 1
    return count


@_jit
def apply_action(state: IntArray, action: int) -> None:
    """Apply a deal (card id) at a chance node or a betting action (0, 1, 2) otherwise."""
    state[_HISTORY + state[_LENGTH]] = action
    state[_LENGTH] += 1
    player = state[_PLAYER]
    if player == CHANCE:
        if state[_CARD0] < 0:
            state[_CARD0] = action
        elif state[_CARD1] < 0:
            state[_CARD1] = action
            state[_PLAYER] = 0
        else:
            state[_PUBLIC] = action
            state[_ROUND] = 1
            state[_RAISES] = 0
            state[_ACTIONS] = 0
            state[_PLAYER] = 0
        return
    other = 1 - player
    if action == FOLD:
        state[_FOLDED] = player
        state[_PLAYER] = TERMINAL
        return
    owed = state[_POT0 + other] - state[_POT0 + player]
    state[_ACTIONS] += 1
    if action == CALL:
        state[_POT0 + player] += owed
        if state[_ACTIONS] >= 2:  # a call that is not the round's first action ends it
            state[_PLAYER] = CHANCE if state[_ROUND] == 0 else TERMINAL
            return
    else:
        size = RAISE_SIZE_ROUND1 if state[_ROUND] == 0 else RAISE_SIZE_ROUND2
        state[_POT0 + player] += owed + size
        state[_RAISES] += 1
    state[_PLAYER] = other


@_jit
def chance_outcome(state: IntArray, u: float) -> int:
    """The card dealt at a chance node for a uniform draw ``u`` in [0, 1)."""
    remaining = 0
    for card in range(NUM_CARDS):
        if not _card_used(state, card):
            remaining += 1
    index = min(int(u * remaining), remaining - 1)
    for card in range(NUM_CARDS):
        if _card_used(state, card):
            continue
        if index == 0:
            return card
        index -= 1
    return -1


@_jit
def deal(state: IntArray, u: float) -> int:
    """Apply the chance outcome that ``u`` (uniform in [0, 1)) selects; return the card."""
    card = chance_outcome(state, u)
    apply_action(state, card)
    return card


@_jit
def hand_strength(card: int, public: int) -> int:
    """Showdown strength of a private card given the public card (pairs beat any rank)."""
    rank = card // 2
    return rank + 3 if rank == public // 2 else rank


@_jit
def returns(state: IntArray) -> tuple[float, float]:
    """Chips won by player 0 and player 1 (zero before the hand is over)."""
    if state[_PLAYER] != TERMINAL:
        return 0.0, 0.0
    folder = state[_FOLDED]
    if folder >= 0:
        won = float(state[_POT0 + folder])
        return (won, -won) if folder == 1 else (-won, won)
    strength0 = hand_strength(state[_CARD0], state[_PUBLIC])
    strength1 = hand_strength(state[_CARD1], state[_PUBLIC])
    won = float(state[_POT0])  # both put in the same at a showdown
    if strength0 > strength1:
        return won, -won
    if strength0 < strength1:
        return -won, won
    return 0.0, 0.0


@_jit
def history(state: IntArray, out: IntArray) -> int:
    """Write the OpenSpiel history into ``out``; return its length."""
    length = state[_LENGTH]
    for index in range(length):
        out[index] = state[_HISTORY + index]
    return int(length)


@_jit
def state_from_actions(actions: IntArray) -> IntArray:
    """Replay an OpenSpiel action history (deal outcomes included) from the start."""
    state = new_state()
    for action in actions:
        apply_action(state, action)
    return state


def state_from_history(actions: Sequence[int]) -> IntArray:
    """The kernel state after OpenSpiel's ``history()`` ``actions`` (deals included)."""
    return state_from_actions(np.asarray(list(actions), dtype=np.int64).reshape(-1))
