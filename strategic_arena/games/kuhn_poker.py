"""Kuhn poker over OpenSpiel's ``kuhn_poker`` (two players, deck J Q K, ante 1, one bet of 1).

Action ids, as in OpenSpiel: 0 = Pass, 1 = Bet. Canonical action texts depend on the betting:
with no bet outstanding the menu is ``{0: "check", 1: "bet"}``, facing a bet it is
``{0: "fold", 1: "call"}``. Without context (:meth:`KuhnPokerGrammar.text`) they read
``pass`` / ``bet``, OpenSpiel's strings lowercased.

Accepted besides, resolved against the menu: ``pass`` (0); ``check`` (0, illegal facing a bet);
``fold`` (0: folding with nothing to call is a check); ``call`` (1 facing a bet, 0 with nothing
to call); ``bet`` (1: facing a bet it can only mean a call, there is one bet size); ``raise``
(1 as a bet, illegal facing a bet). Each verb may take an ``-s`` or ``-ing`` form and a leading
``I`` / ``I will`` / ``I'll`` (``I'll call``, ``checks``, ``folding``).

Card ids (OpenSpiel's deal outcomes and the digit of the information state): 0 = Jack,
1 = Queen, 2 = King.
"""

from __future__ import annotations

import re

import pyspiel

from strategic_arena.actions import ActionError
from strategic_arena.games.base import ActionGrammar, GameSpec, Menu, compact
from strategic_arena.games.listing import Listing, PaperReference

PASS, BET = 0, 1
CARD_NAMES = ("Jack", "Queen", "King")
CARD_LETTERS = ("J", "Q", "K")
ANTE = 1
BET_SIZE = 1

_VERBS = ("pass", "check", "fold", "call", "bet", "raise")
_SUBJECT = re.compile(r"^i(?:\s+will|['’]ll)?\s+")


def _verb_forms() -> dict[str, str]:
    """Each verb's base, ``-s`` and ``-ing`` form -> base form (``betting`` -> ``bet``)."""
    forms: dict[str, str] = {}
    for verb in _VERBS:
        stem = verb[:-1] if verb.endswith("e") else verb
        forms[verb] = verb
        forms[verb + ("es" if verb.endswith("s") else "s")] = verb
        forms[stem + ("ting" if verb == "bet" else "ing")] = verb
    return forms


_FORMS = _verb_forms()


def poker_verb(key: str) -> str | None:
    """The betting verb a normalized answer names, in base form, or ``None``.

    Accepts ``pass``, ``check``, ``fold``, ``call``, ``bet`` and ``raise`` with an optional
    ``-s`` / ``-ing`` ending and an optional leading ``I``, ``I will`` or ``I'll``:
    ``"i'll call"`` -> ``"call"``, ``"checks"`` -> ``"check"``, ``"betting"`` -> ``"bet"``.
    """
    return _FORMS.get(_SUBJECT.sub("", key.strip(), count=1).strip())


def _facing_bet(menu: Menu) -> bool | None:
    """Whether the menu's decision faces a bet; ``None`` when its texts carry no context."""
    texts = {compact(text) for text in menu.values()}
    if "check" in texts:
        return False
    if texts & {"fold", "call"}:
        return True
    return None


class KuhnPokerGrammar(ActionGrammar):
    """``check`` / ``bet`` or ``fold`` / ``call``; see the module docstring for synonyms."""

    def __init__(self) -> None:
        super().__init__(num_actions=2)

    def text(self, action: int) -> str:
        """``pass`` or ``bet`` (OpenSpiel's strings, lowercased)."""
        return "pass" if action == PASS else "bet"

    def texts(self, state: pyspiel.State, player: int) -> dict[int, str]:
        """``check`` / ``bet`` with no bet outstanding, ``fold`` / ``call`` facing one."""
        facing = "b" in state.information_state_string(player)[1:]
        names = ("fold", "call") if facing else ("check", "bet")
        return {action: names[action] for action in state.legal_actions(player)}

    def interpret(self, key: str, menu: Menu) -> int | ActionError | None:
        """Poker verbs resolved against the betting context the menu shows."""
        verb = poker_verb(key)
        if verb is None:
            return None
        facing = _facing_bet(menu)
        if verb in ("pass", "fold"):
            return PASS
        if verb == "check":
            if facing:
                return ActionError("illegal_action", "you cannot check facing a bet; fold or call")
            return PASS
        if verb == "call":
            return PASS if facing is False else BET
        if verb == "raise" and facing:
            return ActionError("illegal_action", "Kuhn poker allows no raise; fold or call")
        return BET  # bet (a call when facing a bet: there is one bet size), or raise as a bet


def _card(digit: str) -> str:
    """``King (K)`` for OpenSpiel's card digit ``2``."""
    card = int(digit)
    return f"{CARD_NAMES[card]} ({CARD_LETTERS[card]})"


def _betting(moves: str) -> tuple[list[str], list[int], str | None]:
    """Replay a ``p``/``b`` betting string.

    Returns:
        the moves in words (``Player 0 checked``), each player's chips in the pot, and how the
        hand ended (``None`` while it goes on).
    """
    words: list[str] = []
    chips = [ANTE, ANTE]
    facing = False
    for index, move in enumerate(moves):
        player = index % 2
        if move == "p":
            words.append(f"Player {player} {'folded' if facing else 'checked'}")
            if facing:
                return words, chips, f"Player {player} folded"
        else:
            chips[player] += BET_SIZE
            words.append(f"Player {player} {'called' if facing else 'bet'} {BET_SIZE}")
            if facing:
                return words, chips, "showdown: the higher card wins the pot"
            facing = True
    if moves == "pp":
        return words, chips, "showdown: the higher card wins the pot"
    return words, chips, None


def poker_listing(marshal_paper: PaperReference) -> Listing:
    """The arena's use of a poker game: equilibrium opponents, ladder hands, graded strategies."""
    return Listing(
        opponents=("random", "nash", "cfr", "best_response"),
        solver="nash",
        default_opponents=("random", "nash"),
        protocols={"marshal": ("nash",)},
        ladder_games=400,
        marshal_paper=marshal_paper,
        strategy_graded=True,
    )


class KuhnPoker(GameSpec):
    """Kuhn poker: one private card each from J Q K; the higher card wins at showdown."""

    env_id = "kuhn_poker-v0"
    title = "Kuhn Poker"
    openspiel_name = "kuhn_poker"
    openspiel_params: dict[str, int] = {}  # noqa: RUF012 - read-only class default
    prompt_dir = "kuhn_poker"
    # Many ladder games: one hand's chips vary far more than a board game's result.
    listing = poker_listing(PaperReference((-0.301, -0.149), (-1 / 18, 1 / 18), ("nash",)))
    optimum = 2.0
    worst = -2.0
    tensor_bounds = (0.0, 2.0)

    def __init__(self) -> None:
        self.grammar = KuhnPokerGrammar()

    def role(self, player: int) -> str:
        """Seat and betting order."""
        order = "first" if player == 0 else "second"
        return f"Player {player} (you act {order} in the betting)"

    def example_action(self, seat: int) -> str:
        """``check``, canonical whenever no bet is outstanding."""
        return "check"

    def observation_text(self, state: pyspiel.State, player: int) -> str:
        """Own card, pot, contributions, betting so far and whose turn it is.

        Built only from the seat's information state string (own card digit, then ``p`` / ``b``
        per move), so the opponent's card never shows.
        """
        info = state.information_state_string(player)
        if not info:
            return "The cards are being dealt."
        words, chips, ending = _betting(info[1:])
        you = player
        lines = [
            f"Your card: {_card(info[0])}.",
            f"Ante: {ANTE} chip each. Pot: {sum(chips)} chips "
            f"(Player 0 put in {chips[0]}, Player 1 put in {chips[1]}; you are Player {you}).",
            f"Betting so far: {', '.join(words)}." if words else "Betting so far: none.",
        ]
        if ending is not None:
            lines.append(f"The hand is over ({ending}).")
            return "\n".join(lines)
        mover = len(info[1:]) % 2
        whose = "your turn" if mover == you else "your opponent's turn"
        to_call = chips[1 - mover] - chips[mover]
        if to_call:
            situation = f"facing a bet: call {to_call} more chip or fold"
        else:
            situation = f"no bet outstanding: check or bet {BET_SIZE}"
        lines.append(f"It is {whose} (Player {mover} to act, {situation}).")
        return "\n".join(lines)
