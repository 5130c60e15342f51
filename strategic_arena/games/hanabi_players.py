"""Hanabi with 3 to 5 players: the full game over OpenSpiel's ``hanabi``, as SPIN-Bench plays it.

One class, :class:`HanabiPlayers`, parameterized by the number of players, gives the curated ids
``hanabi_3p-v0``, ``hanabi_4p-v0`` and ``hanabi_5p-v0``. The rules are the standard full game
(the Hanabi Learning Environment's defaults, which SPIN-Bench's Hanabi uses): 5 colours, ranks 1
to 5, 8 information tokens, 3 life tokens, and 5 cards per hand with 3 players, 4 with 4 or 5.

With more than one other player a hint needs a target. OpenSpiel names it by *relative seat*:
``player +k`` is the k-th player after the one acting, in turn order. Action ids, with ``H``
cards per hand, ``N`` players, ``C`` colours and ``R`` ranks: ``0 .. H-1`` discard card ``i``;
``H .. 2H-1`` play card ``i - H``; ``2H + (k-1)C + c`` hint colour ``c`` to player ``+k``;
``2H + (N-1)C + (k-1)R + r - 1`` hint rank ``r`` to player ``+k``.

Canonical action texts: ``play 0``, ``discard 2``, ``hint player +2 red``,
``hint player +1 rank 3``. Accepted besides, in any case and spacing: OpenSpiel's own strings
(``(Reveal player +2 color R)``, ``(Reveal player +1 rank 3)``) and the two-player grammar's
phrasings with a ``+k`` target anywhere after the verb (``clue +2 reds``, ``tell player +1 about
the 3s``). A hint without a ``+k`` target, or with an absolute seat (``player 2``), names no
action: with three or more players it would be ambiguous.
"""

from __future__ import annotations

import re

import pyspiel

from strategic_arena.actions import ActionError
from strategic_arena.games.base import Menu
from strategic_arena.games.hanabi import (
    COLOR_LETTERS,
    COLOR_NAMES,
    HanabiGrammar,
    HanabiSpec,
    Observation,
    _both,
    parse_observation,
)
from strategic_arena.games.listing import Listing

_OFFSET = re.compile(r"(?:\bplayer\s*)?\+(\d+)\b")
_ORDINALS = ("first", "second", "third", "fourth", "fifth")


class HanabiPlayersGrammar(HanabiGrammar):
    """Hints with a relative target, ``hint player +k <colour or rank>``; see the module docstring.

    Args:
        players: the number of players (a hint can target ``+1`` to ``+(players - 1)``).
        colors / ranks / hand_size: the variant's numbers.
    """

    def __init__(self, players: int, colors: int, ranks: int, hand_size: int) -> None:
        super().__init__(colors, ranks, hand_size)
        self.players = players
        self.num_actions = 2 * hand_size + (players - 1) * (colors + ranks)

    def decode_target(self, action: int) -> tuple[str, int, int]:
        """``(kind, value, offset)``: the move, and the hint's target (0 for a play or discard).

        ``kind`` is ``discard``, ``play``, ``colour`` (value: colour index) or ``rank`` (value:
        rank from 1); ``offset`` is ``k`` of ``player +k``.
        """
        size, colours, ranks = self.hand_size, self.colors, self.ranks
        if action < 2 * size:
            return ("discard", action, 0) if action < size else ("play", action - size, 0)
        offset = action - 2 * size
        colour_hints = (self.players - 1) * colours
        if offset < colour_hints:
            return "colour", offset % colours, offset // colours + 1
        offset -= colour_hints
        return "rank", offset % ranks + 1, offset // ranks + 1

    def encode_target(self, kind: str, value: int, target: int) -> int:
        """Inverse of :meth:`decode_target`."""
        size = self.hand_size
        if kind in ("discard", "play"):
            return value + (size if kind == "play" else 0)
        if kind == "colour":
            return 2 * size + (target - 1) * self.colors + value
        return 2 * size + (self.players - 1) * self.colors + (target - 1) * self.ranks + value - 1

    def decode(self, action: int) -> tuple[str, int]:
        """``(kind, value)`` without the target (as :class:`HanabiGrammar` answers)."""
        kind, value, _ = self.decode_target(action)
        return kind, value

    def text(self, action: int) -> str:
        """``discard 0``, ``play 1``, ``hint player +2 red`` or ``hint player +1 rank 3``."""
        kind, value, target = self.decode_target(action)
        if kind == "colour":
            return f"hint player +{target} {COLOR_NAMES[value]}"
        if kind == "rank":
            return f"hint player +{target} rank {value}"
        return f"{kind} {value}"

    def interpret(self, key: str, menu: Menu) -> int | ActionError | None:
        """Plays and discards as in two-player Hanabi; hints need a ``+k`` target."""
        target = _OFFSET.search(key)
        if target is None:
            return super().interpret(key, menu) if _is_card_move(key) else None
        offset = int(target[1])
        if not 1 <= offset < self.players:
            return None
        rest = f"{key[: target.start()]} {key[target.end() :]}"
        if re.search(r"\bplayer\s+\d", rest):  # a second target: which one is meant?
            return None
        plain = HanabiGrammar(self.colors, self.ranks, self.hand_size)
        found = plain.interpret(rest, {})
        if not isinstance(found, int):
            return None
        kind, value = plain.decode(found)
        if kind not in ("colour", "rank"):
            return None
        return self._explain(self.encode_target(kind, value, offset), menu)

    def _explain(self, action: int, menu: Menu) -> int | ActionError:
        """``action``, or why it is illegal when the menu shows the reason."""
        if action in menu or not menu:
            return action
        kinds = [self.decode(legal)[0] for legal in menu]
        plays = kinds.count("play")
        if not plays:
            return action
        kind, value, target = self.decode_target(action)
        reason: str | None = None
        if kind in ("play", "discard") and value >= plays:
            reason = f"your hand has only {plays} cards (positions 0 to {plays - 1})"
        elif kind == "discard" and "discard" not in kinds:
            reason = "you cannot discard while all information tokens are available"
        elif kind in ("colour", "rank") and not {"colour", "rank"} & set(kinds):
            reason = "no information token is left to give a hint"
        elif kind in ("colour", "rank"):
            what = "colour" if kind == "colour" else "rank"
            reason = f"player +{target} holds no card of that {what}: a hint must touch a card"
        if reason is None:
            return action
        listing = ", ".join(menu.values())
        detail = f"{self.text(action)} is not legal now: {reason}; legal actions: {listing}"
        return ActionError("illegal_action", detail)


def _is_card_move(key: str) -> bool:
    """Whether ``key`` starts like a play or discard (the only moves without a target)."""
    return re.match(r"^(?:(?:i|we)\b.*?\s)?(?:play|discard)", key) is not None


#: The most move lines a spec remembers (then it forgets them all): far more than one game's.
DESCRIBED_SIZE = 4096

#: The most replayed states a spec keeps (then it forgets them all): a few games' worth.
REPLAYS_SIZE = 256


class HanabiPlayers(HanabiSpec):
    """Full Hanabi with ``players`` seats (3 to 5), every seat on one team.

    Args:
        players: the number of players.
    """

    #: Only the random player plays these games: the rule bot of ``hanabi_bot`` is written for
    #: two players and small decks (it enumerates the hidden hand, exponential in its size).
    listing = Listing(
        opponents=("random",),
        solver=None,
        no_solver=(
            "no built-in player plays Hanabi with more than two players (the hanabi_bot "
            "partner is two-player); evaluate a model with --base-url"
        ),
        default_opponents=("random",),
        ladder_games=None,
    )

    def __init__(self, players: int) -> None:
        hand_size = 5 if players <= 3 else 4
        super().__init__(
            env_id=f"hanabi_{players}p-v0",
            title=f"Hanabi ({players} players)",
            colors=5,
            ranks=5,
            hand_size=hand_size,
            max_information_tokens=8,
            max_life_tokens=3,
            players=players,
        )
        self.prompt_dir = "hanabi_players"
        self.grammar: HanabiPlayersGrammar = HanabiPlayersGrammar(players, 5, 5, hand_size)
        #: Each move's line of the last round, by the history up to it (:meth:`last_moves`).
        self._described: dict[tuple[int, ...], str | None] = {}
        #: The state before a described move, by the history before it (never changed once
        #: kept: the next move's replay starts from a clone).
        self._replays: dict[tuple[int, ...], pyspiel.State] = {}

    def seat(self, player: int, offset: int) -> int:
        """The seat of ``player +offset``."""
        return (player + offset) % self.players

    def role(self, player: int) -> str:
        """Seat, turn order, the relative seats of the others and the shared score."""
        others = ", ".join(
            f"player +{k} is Player {self.seat(player, k)}" for k in range(1, self.players)
        )
        return (
            f"Player {player} of {self.players} (you act {_ORDINALS[player]}); {others}; "
            f"all {self.players} players cooperate and share the score"
        )

    def _other_hands(self, obs: Observation, player: int) -> list[str]:
        """Every other hand, by relative seat (``player +k``) with its seat number."""
        lines = []
        for offset in range(1, self.players):
            hand = obs.hands[offset] if offset < len(obs.hands) else []
            lines.append(
                f"Hand of player +{offset} (Player {self.seat(player, offset)}; "
                "you see it, they do not):"
            )
            lines += [
                f"  card {i}: {card.card}; they know: {card.knowledge()}"
                for i, card in enumerate(hand)
            ]
            if not hand:
                lines.append("  (no cards)")
        return lines

    def _last_moves(self, state: pyspiel.State) -> tuple[str, ...]:
        return tuple(self.last_moves(state))

    def last_moves(self, state: pyspiel.State) -> list[str]:
        """The public lines of the last round (one move per player), oldest first.

        The same lines :func:`~strategic_arena.games.base.move_history` ends with, but only the
        last round is described: a full game is over a hundred moves, and describing every one
        at every decision made each observation cost time linear in the game so far. A move's
        line depends on the history up to it alone, so it is described once and remembered
        (each move is in the last round of every seat's next observation); the state it is
        described in is replayed from the state kept before the seat's previous move, if any
        (:meth:`_state_before`), else from the start.
        """
        history = state.history()
        full = state.full_history()
        player_moves = [i for i, item in enumerate(full) if item.player >= 0]
        described = self._described
        lines: list[str] = []
        for index in range(max(0, len(player_moves) - self.players), len(player_moves)):
            position = player_moves[index]
            key = tuple(history[: position + 1])
            if key not in described:
                previous = player_moves[index - 1] if index else None
                before = self._state_before(history, position, previous)
                action = history[position]
                text = self.grammar.text(action)
                if len(described) >= DESCRIBED_SIZE:
                    described.clear()  # bounded
                described[key] = self.describe_move(before, full[position].player, action, text)
            line = described[key]
            if line is not None:
                lines.append(line)
        return lines

    def _state_before(
        self, history: list[int], position: int, previous: int | None
    ) -> pyspiel.State:
        """The state before ``history[position]``, kept for the next move's replay.

        Replayed from a clone of the state kept before the move at ``previous`` (the move
        described just before, in the usual order), else from the initial state: one or two
        actions instead of the whole game so far.
        """
        replays = self._replays
        start = replays.get(tuple(history[:previous])) if previous is not None else None
        if start is None or previous is None:
            replay, done = self.game.new_initial_state(), 0
        else:
            replay, done = start.clone(), previous
        for action in history[done:position]:
            replay.apply_action(action)
        if len(replays) >= REPLAYS_SIZE:
            replays.clear()  # bounded
        replays[tuple(history[:position])] = replay
        return replay

    def _status(self, state: pyspiel.State, obs: Observation, player: int) -> str:
        """Whose turn it is, by relative seat, or how the game ended."""
        if state.is_terminal() or obs.current is None:
            return super()._status(state, obs, player)
        if obs.current == 0:
            return f"It is your turn (Player {player})."
        return f"It is the turn of player +{obs.current} (Player {self.seat(player, obs.current)})."

    def describe_move(
        self, state: pyspiel.State, player: int, action: int, text: str
    ) -> str | None:
        """What everyone saw: the played or discarded card, or the cards a hint touched.

        Seats are named absolutely (``Player 2``): the line is the same for every reader. The
        acting seat's card comes from the next seat's observation (the move reveals it); the
        cards a hint touches come from the hinter's own observation of the target's hand.
        """
        kind, value, target = self.grammar.decode_target(action)
        name = self.player_name(player)
        if kind in ("play", "discard"):
            seen = parse_observation(state.observation_string(self.seat(player, 1)))
            card = seen.hands[self.players - 1][value].card or "??"
            if kind == "discard":
                return f"{name} discards card {value}: it was {card}"
            colour, rank = card[0], int(card[1])
            if rank == seen.fireworks.get(colour, 0) + 1:
                return f"{name} plays card {value}: it was {card}, played successfully"
            left = seen.lives - 1
            loss = (
                "the last life token is lost and the game ends with score 0"
                if left == 0
                else f"a life token is lost ({left} left)"
            )
            return f"{name} plays card {value}: it was {card}, it could not be played: {loss}"
        hand = parse_observation(state.observation_string(player)).hands[target]
        if kind == "colour":
            letter = COLOR_LETTERS[value]
            touched = [i for i, c in enumerate(hand) if c.card and c.card[0] == letter]
            said = COLOR_NAMES[value]
        else:
            touched = [i for i, c in enumerate(hand) if c.card and int(c.card[1]) == value]
            said = f"rank {value}"
        cards = ("card " if len(touched) == 1 else "cards ") + _both([str(i) for i in touched])
        return f"{name} hints {self.player_name(self.seat(player, target))}: {said} ({cards})"


def hanabi_3p() -> HanabiPlayers:
    """``hanabi_3p-v0``: full Hanabi, 3 players, 5 cards each."""
    return HanabiPlayers(3)


def hanabi_4p() -> HanabiPlayers:
    """``hanabi_4p-v0``: full Hanabi, 4 players, 4 cards each."""
    return HanabiPlayers(4)


def hanabi_5p() -> HanabiPlayers:
    """``hanabi_5p-v0``: full Hanabi, 5 players, 4 cards each."""
    return HanabiPlayers(5)
