"""Leduc Hold'em over OpenSpiel's ``leduc_poker`` (two players, six cards, two betting rounds).

Action ids, as in OpenSpiel: 0 = Fold, 1 = Call, 2 = Raise. Fold is legal only facing a bet;
raise only while fewer than two raises were made in the round. Canonical action texts depend on
the betting: with nothing to call the menu is ``{1: "check", 2: "bet"}``, facing a bet it is
``{0: "fold", 1: "call", 2: "raise"}`` (``raise`` / ``bet`` left out once the round's two raises
are made). Without context (:meth:`LeducPokerGrammar.text`) they read ``fold`` / ``call`` /
``raise``, OpenSpiel's strings lowercased.

Accepted besides, resolved against the menu: ``check`` (1, illegal facing a bet); ``call`` (1);
``bet`` and ``raise`` (2: a raise facing a bet, a bet otherwise); ``fold`` (0, illegal with
nothing to call); ``pass`` (1 with nothing to call, 0 facing a bet). Verbs may take an ``-s`` or
``-ing`` form and a leading ``I`` / ``I will`` / ``I'll``, as in Kuhn poker.

Card ids (OpenSpiel's deal outcomes and the ``Private`` / ``Public`` fields of the information
state): rank = id // 2 (0 = Jack, 1 = Queen, 2 = King), suit = id % 2; so 0 J, 1 J, 2 Q, 3 Q,
4 K, 5 K. A private card with the same rank as the public card is a pair.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pyspiel

from strategic_arena.actions import ActionError
from strategic_arena.games.base import ActionGrammar, GameSpec, Menu
from strategic_arena.games.kuhn_poker import poker_listing, poker_verb
from strategic_arena.games.listing import PaperReference

FOLD, CALL, RAISE = 0, 1, 2
RANK_NAMES = ("Jack", "Queen", "King")
RANK_PLURALS = ("Jacks", "Queens", "Kings")
RANK_LETTERS = ("J", "Q", "K")
ANTE = 1
RAISE_SIZES = (2, 4)
MAX_RAISES = 2
_FIELD = re.compile(r"\[([A-Za-z]+\d?):?\s*([^\]]*)\]")


class LeducPokerGrammar(ActionGrammar):
    """``check`` / ``bet`` or ``fold`` / ``call`` / ``raise``; see the module docstring."""

    def __init__(self) -> None:
        super().__init__(num_actions=3)

    def text(self, action: int) -> str:
        """``fold``, ``call`` or ``raise`` (OpenSpiel's strings, lowercased)."""
        return ("fold", "call", "raise")[action]

    def texts(self, state: pyspiel.State, player: int) -> dict[int, str]:
        """``check`` / ``bet`` with nothing to call; ``fold`` / ``call`` / ``raise`` facing one."""
        legal = state.legal_actions(player)
        names = ("fold", "call", "raise") if FOLD in legal else ("fold", "check", "bet")
        return {action: names[action] for action in legal}

    def interpret(self, key: str, menu: Menu) -> int | ActionError | None:
        """Poker verbs resolved against the betting context (fold is legal only facing a bet)."""
        verb = poker_verb(key)
        if verb is None:
            return None
        facing = FOLD in menu
        choices = _choices(menu)
        if verb == "check":
            if facing:
                return ActionError("illegal_action", f"you cannot check facing a bet; {choices}")
            return CALL
        if verb == "fold":
            if not facing:
                return ActionError(
                    "illegal_action",
                    f"there is nothing to fold against; {choices}",
                )
            return FOLD
        if verb == "pass":
            return FOLD if facing else CALL
        if verb == "call":
            return CALL
        return RAISE  # bet or raise; past the raise cap the base class reports it illegal


def _choices(menu: Menu) -> str:
    """The menu's texts as a choice: ``fold, call or raise``."""
    texts = list(menu.values())
    if not texts:
        return "no action (it is not your turn)"
    return texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} or {texts[-1]}"


def card_name(card: int) -> str:
    """``Queen (Q, suit 1)`` for OpenSpiel's card id 3."""
    rank, suit = divmod(card, 2)
    return f"{RANK_NAMES[rank]} ({RANK_LETTERS[rank]}, suit {suit})"


@dataclass
class _Betting:
    """The public betting replayed from an information state."""

    chips: list[int] = field(default_factory=lambda: [ANTE, ANTE])
    rounds: list[list[str]] = field(default_factory=lambda: [[], []])
    raises: list[int] = field(default_factory=lambda: [0, 0])
    ending: str | None = None
    closed: list[bool] = field(default_factory=lambda: [False, False])


def _replay(sequences: list[list[int]]) -> _Betting:
    """Replay both rounds' action ids: words per move, chips per player and how the hand ended.

    Both rounds start with Player 0 and the players alternate; a call after the round's first
    move closes the round, a fold ends the hand.
    """
    betting = _Betting()
    for number, moves in enumerate(sequences):
        for index, move in enumerate(moves):
            player = index % 2
            to_call = max(betting.chips) - betting.chips[player]
            if move == FOLD:
                word = "folded"
                betting.ending = f"Player {player} folded; Player {1 - player} wins the pot"
            elif move == CALL:
                betting.chips[player] += to_call
                word = f"called {to_call}" if to_call else "checked"
                betting.closed[number] = index >= 1
            else:
                size = RAISE_SIZES[number]
                betting.chips[player] += to_call + size
                betting.raises[number] += 1
                word = f"raised by {size} (put in {to_call + size})" if to_call else f"bet {size}"
            betting.rounds[number].append(f"Player {player} {word}")
    if betting.ending is None and betting.closed[1]:
        betting.ending = "showdown: pairing the public card wins, else the higher private card"
    return betting


def _fields(info: str) -> dict[str, str]:
    """The ``[Key: value]`` fields of an information state string (``[Round 1]`` -> ``Round``)."""
    return {key: value.strip() for key, value in _FIELD.findall(info)}


def _ids(value: str) -> list[int]:
    """``"1 2"`` -> ``[1, 2]``."""
    return [int(token) for token in value.split()]


class LeducPoker(GameSpec):
    """Leduc Hold'em: a private card each, one public card, two rounds of limit betting."""

    env_id = "leduc_holdem-v0"
    title = "Leduc Hold'em"
    openspiel_name = "leduc_poker"
    openspiel_params: dict[str, int] = {}  # noqa: RUF012 - read-only class default
    prompt_dir = "leduc_poker"
    # Leduc's seat values are the paper's four-decimal -0.0856 / +0.0856: with OpenSpiel's
    # -0.0856064 the generalist's main-text Leduc score would round to 54.57, not its 54.56.
    listing = poker_listing(PaperReference((-1.124, -1.003), (-0.0856, 0.0856), ("nash",)))
    optimum = 13.0
    worst = -13.0
    tensor_bounds = (0.0, 13.0)

    def __init__(self) -> None:
        self.grammar = LeducPokerGrammar()

    def role(self, player: int) -> str:
        """Seat and betting order."""
        order = "first" if player == 0 else "second"
        return f"Player {player} (you act {order} in each betting round)"

    def example_action(self, seat: int) -> str:
        """``check``, canonical whenever nothing is to call."""
        return "check"

    def observation_text(self, state: pyspiel.State, player: int) -> str:
        """Own card, public card, round, pot, contributions, betting by round, whose turn.

        Built only from the seat's information state string, so the opponent's card never
        shows (nor does it at showdown: the env reports the returns).
        """
        info = _fields(state.information_state_string(player))
        private = int(info["Private"])
        if private < 0:
            return "The cards are being dealt."
        round_number = int(info["Round"])
        betting = _replay([_ids(info["Round1"]), _ids(info["Round2"])])
        lines = [f"Your private card: {card_name(private)}."]
        if "Public" in info:
            public = int(info["Public"])
            lines.append(f"Public card: {card_name(public)}.")
            rank = private // 2
            if public // 2 == rank:
                lines.append(f"Your hand: a pair of {RANK_PLURALS[rank]}.")
            else:
                lines.append(f"Your hand: no pair (your {RANK_NAMES[rank]} does not match it).")
        else:
            lines.append("Public card: not yet revealed (it is dealt after round 1's betting).")
        chips = betting.chips
        lines.append(
            f"Round {round_number} of 2 (bets and raises are {RAISE_SIZES[0]} chips in round 1, "
            f"{RAISE_SIZES[1]} in round 2; ante {ANTE} chip each)."
        )
        lines.append(
            f"Pot: {sum(chips)} chips (Player 0 put in {chips[0]}, Player 1 put in {chips[1]}; "
            f"you are Player {player})."
        )
        for number in (1, 2):
            moves = betting.rounds[number - 1]
            if moves or number <= round_number:
                said = ", ".join(moves) if moves else "none yet"
                lines.append(f"Round {number} betting: {said}.")
        if betting.ending is not None:
            lines.append(f"The hand is over ({betting.ending}).")
            return "\n".join(lines)
        mover = int(info["Player"])
        if mover < 0:
            lines.append("Round 1 is over; the public card is being dealt.")
            return "\n".join(lines)
        whose = "your turn" if mover == player else "your opponent's turn"
        to_call = max(chips) - chips[mover]
        left = MAX_RAISES - betting.raises[round_number - 1]
        size = RAISE_SIZES[round_number - 1]
        if to_call:
            options = f"{to_call} chips to call; raises left this round: {left}"
            if left:
                options += f" (a raise puts in {to_call + size})"
        else:
            options = f"nothing to call; a bet is {size} chips"
        lines.append(f"It is {whose} (Player {mover} to act): {options}.")
        return "\n".join(lines)
