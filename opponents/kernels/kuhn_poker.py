"""Kuhn poker rules as numba kernels over a small int64 state array.

The rules and ids are OpenSpiel's ``kuhn_poker``: a deck of three cards (0 = Jack, 1 = Queen,
2 = King), ante 1, one bet size of 1. Chance deals player 0's card, then player 1's; player 0
acts first. Betting actions: 0 = Pass (check, or fold facing a bet), 1 = Bet (bet, or call
facing a bet). The hand ends after ``pp`` and ``bp`` / ``bb`` or, after ``pb``, the third
move; a fold forfeits the folder's chips in the pot, a showdown gives the higher card the
other player's chips.

State encoding (``int64[STATE_SIZE]``, built by :func:`new_state`)::

    [0] player 0's card  (-1 before the deal)
    [1] player 1's card  (-1 before the deal)
    [2] number of betting moves made (0..3)
    [3], [4], [5]  the betting moves in order (0 pass, 1 bet; -1 unused)

Every kernel is a small pure function (``apply_action`` mutates the array it is given);
:func:`state_from_history` replays an OpenSpiel history (deal outcomes included).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from opponents.kernels.jit import jit as _jit

IntArray = npt.NDArray[np.int64]

NUM_CARDS = 3
NUM_ACTIONS = 2
NUM_PLAYERS = 2
PASS, BET = 0, 1
CHANCE = -1  # OpenSpiel's kChancePlayerId
TERMINAL = -4  # OpenSpiel's kTerminalPlayerId
STATE_SIZE = 6
MAX_MOVES = 3
MAX_HISTORY = 2 + MAX_MOVES

_CARD0, _CARD1, _NUM_MOVES, _MOVES = 0, 1, 2, 3


@_jit
def new_state() -> IntArray:
    """The initial state: no card dealt, no move made."""
    state = np.full(STATE_SIZE, -1, dtype=np.int64)
    state[_NUM_MOVES] = 0
    return state


@_jit
def is_terminal(state: IntArray) -> bool:
    """Whether the hand is over (``pp``, ``bp``, ``bb``, ``pbp``, ``pbb``)."""
    moves = state[_NUM_MOVES]
    if moves == 3:
        return True
    # After two moves only ``pb`` (pass, then bet) leaves player 0 a decision.
    return moves == 2 and not (state[_MOVES] == PASS and state[_MOVES + 1] == BET)


@_jit
def current_player(state: IntArray) -> int:
    """0 or 1 to act, :data:`CHANCE` while dealing, :data:`TERMINAL` when the hand is over."""
    if state[_CARD1] < 0:
        return CHANCE
    if is_terminal(state):
        return TERMINAL
    return int(state[_NUM_MOVES] % 2)


@_jit
def legal_actions(state: IntArray, out: IntArray) -> int:
    """Write the legal actions (ascending) into ``out``; return how many there are.

    At a chance node these are the cards still in the deck (OpenSpiel's chance outcomes); at
    a terminal state there are none. ``out`` needs room for ``max(NUM_CARDS, NUM_ACTIONS)``.
    """
    player = current_player(state)
    if player == TERMINAL:
        return 0
    if player == CHANCE:
        count = 0
        for card in range(NUM_CARDS):
            if card != state[_CARD0]:
                out[count] = card
                count += 1
        return count
    out[0] = PASS
    out[1] = BET
    return 2


@_jit
def apply_action(state: IntArray, action: int) -> None:
    """Deal ``action`` (a card) at a chance node, else append the betting move ``action``."""
    if state[_CARD0] < 0:
        state[_CARD0] = action
    elif state[_CARD1] < 0:
        state[_CARD1] = action
    else:
        state[_MOVES + state[_NUM_MOVES]] = action
        state[_NUM_MOVES] += 1


@_jit
def chance_outcome(state: IntArray, u: float) -> int:
    """The card dealt at a chance node for a uniform draw ``u`` in [0, 1)."""
    remaining = NUM_CARDS - 1 if state[_CARD0] >= 0 else NUM_CARDS
    index = min(int(u * remaining), remaining - 1)
    for card in range(NUM_CARDS):
        if card == state[_CARD0]:
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
def returns(state: IntArray) -> tuple[float, float]:
    """Chips won by player 0 and player 1 (zero before the hand is over)."""
    if not is_terminal(state):
        return 0.0, 0.0
    moves = state[_NUM_MOVES]
    pot = np.ones(NUM_PLAYERS, dtype=np.int64)  # the antes
    bet_seen = False
    for index in range(moves):
        if state[_MOVES + index] == BET:
            pot[index % 2] += 1
            bet_seen = True
    last = state[_MOVES + moves - 1]
    if last == PASS and bet_seen:  # the last mover folded
        folder = (moves - 1) % 2
        won = float(pot[folder])
        return (won, -won) if folder == 1 else (-won, won)
    won = float(pot[0])  # showdown: both put in the same
    return (won, -won) if state[_CARD0] > state[_CARD1] else (-won, won)


@_jit
def history(state: IntArray, out: IntArray) -> int:
    """Write the OpenSpiel history (deals, then moves) into ``out``; return its length."""
    length = 0
    for slot in (_CARD0, _CARD1):
        if state[slot] >= 0:
            out[length] = state[slot]
            length += 1
    for index in range(state[_NUM_MOVES]):
        out[length] = state[_MOVES + index]
        length += 1
    return length


@_jit
def state_from_actions(actions: IntArray) -> IntArray:
    """Replay an OpenSpiel action history (deal outcomes, then moves) from the start."""
    state = new_state()
    for action in actions:
        apply_action(state, action)
    return state


def state_from_history(actions: Sequence[int]) -> IntArray:
    """The kernel state after OpenSpiel's ``history()`` ``actions`` (deals included)."""
    return state_from_actions(np.asarray(list(actions), dtype=np.int64).reshape(-1))
