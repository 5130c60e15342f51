"""Two-player Hanabi over OpenSpiel's ``hanabi`` (the Hanabi Learning Environment).

Two curated variants: :class:`MiniHanabi` (2 colours, ranks 1-2, 3 cards per hand, 3
information tokens, 3 life tokens; best score 4) and :class:`SimpleHanabi` (3 colours, ranks
1-2, 5 cards per hand, 8 information tokens, 3 life tokens; best score 6). Each colour has
three 1s, two of every middle rank and one top rank, so with ranks 1-2 a colour is three 1s
and one 2 (Mini Hanabi's deck has 8 cards, Simple Hanabi's 12).

Action ids, as in OpenSpiel for two players, with ``H`` cards per hand, ``C`` colours and ``R``
ranks: ``0 .. H-1`` discard card ``i``; ``H .. 2H-1`` play card ``i - H``; ``2H .. 2H+C-1``
hint colour ``c`` to the partner (``R Y G W B``: red, yellow, green, white, blue);
``2H+C .. 2H+C+R-1`` hint rank ``r + 1`` to the partner.

Card positions are 0-indexed as OpenSpiel shows them: position 0 is the oldest card. A played or
discarded card leaves the hand, the cards after it move down one position, and the newly drawn
card takes the last position.

Canonical action texts: ``play 0``, ``discard 2``, ``hint red``, ``hint 1`` (a rank hint).
Accepted besides, in any case and spacing: OpenSpiel's own strings (``(Play 1)``,
``(Reveal player +1 color R)``, ``(Reveal player +1 rank 1)``); ``play card 0``,
``discard card #1``, ``I play 0``; hint verbs ``hint``, ``clue``, ``tell``, ``reveal``, ``give``,
``show`` with an optional ``color`` / ``colour`` / ``rank`` / ``number`` keyword, an optional
target (``player +1``, ``player 1``, ``partner``, ``to my partner``) and the value as a colour
name, colour letter or plural (``reds``), or a rank (``1``, ``1s``, ``ones``): ``hint colour R``,
``hint rank 1``, ``hint 1s``, ``clue red``, ``reveal color R``, ``hint player +1 red``,
``give a red hint``. A position beyond the hand size, or a colour or rank the variant does not
have, names no action.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass

import pyspiel

from strategic_arena.actions import ActionError
from strategic_arena.games.base import ActionGrammar, GameSpec, Menu, move_history
from strategic_arena.games.listing import Listing, PaperReference

COLOR_LETTERS = "RYGWB"
COLOR_NAMES = ("red", "yellow", "green", "white", "blue")
NUM_PLAYERS = 2

_RANK_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}
_COPY_WORDS = {1: "one", 2: "two", 3: "three"}
_SUBJECT = re.compile(r"^(?:i|we)(?:\s+will|\s+shall|\s+would|['’]ll|['’]d)?(?:\s+like\s+to)?\s+")
_PLURAL = re.compile(r"['’]s\b")  # 1's -> 1s
_PUNCTUATION = re.compile(r"[,:;!?=#\"'`()\[\]{}*_-]|\.(?!\d)")
_PLAY_VERBS = frozenset({"play", "plays", "playing"})
_DISCARD_VERBS = frozenset({"discard", "discards", "discarding"})
_HINT_VERBS = frozenset(
    {"hint", "hints", "hinting", "clue", "clues", "cluing", "clueing", "tell", "tells"}
    | {"telling", "reveal", "reveals", "revealing", "give", "gives", "giving", "show", "shows"}
)
_POSITION_FILLERS = frozenset(
    {"card", "my", "the", "own", "position", "pos", "slot", "at", "number", "no", "index"}
    | {"in", "from", "hand", "of", "on"}
)
_HINT_FILLERS = frozenset(
    {"partner", "partners", "my", "your", "the", "to", "a", "an", "hint", "hints", "clue"}
    | {"clues", "about", "their", "card", "cards", "all", "of", "on", "for", "teammate"}
    | {"other", "his", "her", "them", "him", "info", "information", "with", "is", "are"}
)
_COLOR_WORDS = frozenset({"color", "colour", "colors", "colours"})
_RANK_KEYWORDS = frozenset({"rank", "ranks", "number", "numbers", "value"})
_RANK_TOKEN = re.compile(r"^(\d)s?$")
_TARGET = re.compile(r"^[+-]?\d+$")
_CARD_LINE = re.compile(
    r"^(?P<card>XX|[RYGWB]\d) \|\| (?P<colour>[RYGWBX])(?P<rank>[\dX])"
    r"\|(?P<colours>[RYGWB]*)(?P<ranks>\d*)$"
)


def color_name(letter: str) -> str:
    """``red`` for ``R``."""
    return COLOR_NAMES[COLOR_LETTERS.index(letter)]


def _either(items: list[str]) -> str:
    """``R``, ``R or Y``, ``R, Y or G``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _both(items: list[str]) -> str:
    """``0``, ``0 and 2``, ``0, 1 and 2``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


class HanabiGrammar(ActionGrammar):
    """``play i`` / ``discard i`` / ``hint <colour>`` / ``hint <rank>``; see the module docstring.

    Args:
        colors: number of colours of the variant (at most 5).
        ranks: number of ranks of the variant (at most 5).
        hand_size: cards per hand.
    """

    def __init__(self, colors: int, ranks: int, hand_size: int) -> None:
        super().__init__(num_actions=2 * hand_size + colors + ranks)
        self.colors = colors
        self.ranks = ranks
        self.hand_size = hand_size

    def decode(self, action: int) -> tuple[str, int]:
        """The move of ``action`` as ``(kind, value)``.

        Returns:
            ``("discard", position)``, ``("play", position)``, ``("colour", colour index)`` or
            ``("rank", rank)`` with the rank counted from 1.
        """
        size = self.hand_size
        if action < size:
            return "discard", action
        if action < 2 * size:
            return "play", action - size
        if action < 2 * size + self.colors:
            return "colour", action - 2 * size
        return "rank", action - 2 * size - self.colors + 1

    def encode(self, kind: str, value: int) -> int:
        """Inverse of :meth:`decode`."""
        base = {
            "discard": 0,
            "play": self.hand_size,
            "colour": 2 * self.hand_size,
            "rank": 2 * self.hand_size + self.colors - 1,
        }[kind]
        return base + value

    def text(self, action: int) -> str:
        """``discard 0``, ``play 1``, ``hint red`` or ``hint 1``."""
        kind, value = self.decode(action)
        if kind == "colour":
            return f"hint {COLOR_NAMES[value]}"
        if kind == "rank":
            return f"hint {value}"
        return f"{kind} {value}"

    def interpret(self, key: str, menu: Menu) -> int | ActionError | None:
        """Verb forms, OpenSpiel's strings and hint phrasings, checked against the menu."""
        key = _PLURAL.sub("s", _SUBJECT.sub("", key, count=1))
        words = _PUNCTUATION.sub(" ", key).split()
        if not words:
            return None
        verb, rest = words[0], words[1:]
        if verb in _PLAY_VERBS or verb in _DISCARD_VERBS:
            position = _position(rest)
            if position is None or position >= self.hand_size:
                return None
            kind = "play" if verb in _PLAY_VERBS else "discard"
            return self._explain(self.encode(kind, position), menu)
        if verb in _HINT_VERBS:
            hint = self._hint(rest)
            return None if hint is None else self._explain(self.encode(*hint), menu)
        return None

    def _hint(self, words: list[str]) -> tuple[str, int] | None:
        """``("colour", index)`` or ``("rank", rank)`` named by the words after a hint verb."""
        wanted: str | None = None
        values: list[tuple[str, int]] = []
        skip_target = False
        for word in words:
            if skip_target and _TARGET.match(word):
                skip_target = False
                continue
            skip_target = word == "player"
            if word == "player" or word in _HINT_FILLERS or word == "+1":
                continue
            if word in _COLOR_WORDS or word in _RANK_KEYWORDS:
                kind = "colour" if word in _COLOR_WORDS else "rank"
                if wanted not in (None, kind):
                    return None
                wanted = kind
                continue
            named = _hint_value(word)
            if named is None:
                return None
            values.append(named)
        if len(values) != 1:
            return None
        kind, value = values[0]
        if wanted not in (None, kind):
            return None
        limit = self.colors - 1 if kind == "colour" else self.ranks
        low = 0 if kind == "colour" else 1
        return (kind, value) if low <= value <= limit else None

    def _explain(self, action: int, menu: Menu) -> int | ActionError:
        """``action``, or why it is illegal when the menu shows the reason."""
        if action in menu or not menu:
            return action
        kinds = [self.decode(legal)[0] for legal in menu]
        plays = kinds.count("play")
        if not plays:
            return action
        kind, value = self.decode(action)
        listing = ", ".join(menu.values())
        reason: str | None = None
        if kind in ("play", "discard") and value >= plays:
            reason = f"your hand has only {plays} cards (positions 0 to {plays - 1})"
        elif kind == "discard" and "discard" not in kinds:
            reason = "you cannot discard while all information tokens are available"
        elif kind in ("colour", "rank") and not {"colour", "rank"} & set(kinds):
            reason = "no information token is left to give a hint"
        elif kind in ("colour", "rank"):
            reason = (
                "your partner holds no card of that "
                f"{'colour' if kind == 'colour' else 'rank'}: a hint must touch at least one card"
            )
        if reason is None:
            return action
        detail = f"{self.text(action)} is not legal now: {reason}; legal actions: {listing}"
        return ActionError("illegal_action", detail)


def _position(words: list[str]) -> int | None:
    """The card position named by the words after ``play`` / ``discard`` (``card 0``)."""
    numbers = [word for word in words if word not in _POSITION_FILLERS]
    if len(numbers) != 1:
        return None
    match = re.fullmatch(r"(?:card|pos|position|slot)?(\d+)", numbers[0])
    return int(match[1]) if match else None


def _hint_value(word: str) -> tuple[str, int] | None:
    """``("colour", index)`` for ``red`` / ``reds`` / ``r``; ``("rank", 1)`` for ``1`` / ``1s``."""
    stem = word[:-1] if len(word) > 2 and word.endswith("s") else word
    if stem in COLOR_NAMES:
        return "colour", COLOR_NAMES.index(stem)
    if len(word) == 1 and word.upper() in COLOR_LETTERS:
        return "colour", COLOR_LETTERS.index(word.upper())
    match = _RANK_TOKEN.match(word)
    if match:
        return "rank", int(match[1])
    if stem in _RANK_WORDS or word in _RANK_WORDS:
        return "rank", _RANK_WORDS.get(stem, _RANK_WORDS.get(word, 0))
    return None


@dataclass(frozen=True)
class CardView:
    """One card of an observation: the card if visible, and what its holder knows about it.

    Attributes:
        card: ``R1`` when the observer sees it, ``None`` for the observer's own cards.
        hinted_colour: the colour letter a hint named, or ``None``.
        hinted_rank: the rank a hint named, or ``None``.
        colours: colour letters still possible given all hints (positive and negative).
        ranks: ranks still possible given all hints.
    """

    card: str | None
    hinted_colour: str | None
    hinted_rank: int | None
    colours: str
    ranks: tuple[int, ...]

    def knowledge(self) -> str:
        """What the holder knows: ``colour unknown (could be R or Y), rank 1``."""
        return _knowledge(
            self.colours, self.ranks, self.hinted_colour is not None, self.hinted_rank is not None
        )


@functools.lru_cache(maxsize=4096)
def _knowledge(colours: str, ranks: tuple[int, ...], colour_hinted: bool, rank_hinted: bool) -> str:
    """:meth:`CardView.knowledge` of a card (few distinct ones recur in every observation)."""
    colour = _known("colour", list(colours), colour_hinted)
    rank = _known("rank", [str(r) for r in ranks], rank_hinted)
    return f"{colour}, {rank}"


def _known(what: str, possible: list[str], hinted: bool) -> str:
    """``rank 1``, ``rank 2 (deduced from hints)`` or ``rank unknown (could be 1 or 2)``."""
    if len(possible) == 1:
        return f"{what} {possible[0]}" + ("" if hinted else " (deduced from hints)")
    if not possible:
        return f"{what} unknown"
    return f"{what} unknown (could be {_either(possible)})"


@dataclass(frozen=True)
class Observation:
    """OpenSpiel's Hanabi observation string of one seat, parsed.

    Attributes:
        lives: life tokens left.
        info: information tokens available.
        fireworks: colour letter -> highest rank played in that colour (0 for none).
        hands: the hands, the observer's first, then the following seats in turn order.
        current: index into ``hands`` of the seat to move, ``None`` when none is marked.
        deck: cards left in the deck.
        discards: the discard pile (failed plays included), oldest first, as ``R1`` strings.
    """

    lives: int
    info: int
    fireworks: dict[str, int]
    hands: list[list[CardView]]
    current: int | None
    deck: int
    discards: list[str]

    @property
    def score(self) -> int:
        """Cards played so far (the final score unless all life tokens are lost)."""
        return sum(self.fireworks.values())


def parse_observation(text: str) -> Observation:
    """Parse ``state.observation_string(player)`` of OpenSpiel's ``hanabi``.

    The string reads ``Life tokens: 3``, ``Info tokens: 3``, ``Fireworks: R0 Y0``, ``Hands:``,
    then each hand (the observer's first, shown as ``XX``) with ``-----`` between hands and a
    ``Cur player`` line before the hand of the seat to move; each card line is
    ``R1 || XX|RY12``: the card, then the hinted colour and rank (``X`` when not hinted), a bar,
    and the colours and ranks still possible. Then ``Deck size: 2`` and ``Discards: Y2 R1``.
    """
    fields: dict[str, str] = {}
    hands: list[list[CardView]] = [[]]
    current: int | None = None
    in_hands = False
    for line in text.split("\n"):
        line = line.strip()
        if line == "Hands:":
            in_hands = True
        elif line.startswith("Deck size:"):
            in_hands = False
            fields["deck"] = line.split(":", 1)[1]
        elif in_hands and line == "-----":
            hands.append([])
        elif in_hands and line == "Cur player":
            current = len(hands) - 1
        elif in_hands and line:
            hands[-1].append(_card_view(line))
        elif ":" in line:
            name, value = line.split(":", 1)
            fields[name.strip()] = value
    fireworks = {item[0]: int(item[1:]) for item in fields.get("Fireworks", "").split()}
    return Observation(
        lives=int(fields["Life tokens"]),
        info=int(fields["Info tokens"]),
        fireworks=fireworks,
        hands=hands,
        current=current,
        deck=int(fields["deck"]),
        discards=fields.get("Discards", "").split(),
    )


@functools.lru_cache(maxsize=4096)
def _card_view(line: str) -> CardView:
    """One ``R1 || RX|R12`` line of a hand (a frozen value: kept for the next time it recurs)."""
    match = _CARD_LINE.match(line)
    if match is None:
        raise ValueError(f"unexpected Hanabi card line {line!r}")
    return CardView(
        card=None if match["card"] == "XX" else match["card"],
        hinted_colour=None if match["colour"] == "X" else match["colour"],
        hinted_rank=None if match["rank"] == "X" else int(match["rank"]),
        colours=match["colours"],
        ranks=tuple(int(r) for r in match["ranks"]),
    )


class HanabiSpec(GameSpec):
    """Two-player Hanabi: a cooperative card game in which you see every hand but your own.

    Args:
        env_id: the versioned env id.
        title: the game's name in prompts.
        colors / ranks / hand_size / max_information_tokens / max_life_tokens / players:
            OpenSpiel's parameters of the variant (two players unless a subclass seats more:
            :mod:`strategic_arena.games.hanabi_players`).
    """

    cooperative = True
    worst = 0.0
    tensor_bounds = (0.0, 1.0)
    #: The text parses observation strings and describes the last round from the replayed
    #: history: about 30 times the step's cost, so it is built only when read.
    lazy_text = True

    def __init__(
        self,
        *,
        env_id: str,
        title: str,
        colors: int,
        ranks: int,
        hand_size: int,
        max_information_tokens: int,
        max_life_tokens: int,
        players: int = NUM_PLAYERS,
    ) -> None:
        self.env_id = env_id
        self.players = players
        self.title = title
        self.openspiel_name = "hanabi"
        self.openspiel_params = {
            "colors": colors,
            "ranks": ranks,
            "hand_size": hand_size,
            "max_information_tokens": max_information_tokens,
            "max_life_tokens": max_life_tokens,
            "players": players,
        }
        self.prompt_dir = "hanabi"
        self.colors = colors
        self.ranks = ranks
        self.hand_size = hand_size
        self.max_information_tokens = max_information_tokens
        self.max_life_tokens = max_life_tokens
        self.grammar: HanabiGrammar = HanabiGrammar(colors, ranks, hand_size)
        # The normalized score's optimum is the best *reachable* score, not OpenSpiel's
        # max_utility (colours x ranks): Simple Hanabi can never score above 4 (see
        # reachable_score), so 6 would cap every normalized score at 67%.
        self.optimum = float(self.reachable_score)

    def copies(self, rank: int) -> int:
        """Cards of one colour with ``rank`` in the deck: 3 of rank 1, 1 of the top rank, else 2."""
        if rank == 1:
            return 3
        return 1 if rank == self.ranks else 2

    @property
    def deck_size(self) -> int:
        """Cards in the full deck."""
        return self.colors * sum(self.copies(rank) for rank in range(1, self.ranks + 1))

    def variant(self) -> str:
        """The variant's numbers in one paragraph (stated in every observation)."""
        return self._variant

    @functools.cached_property
    def _variant(self) -> str:
        """:meth:`variant`, made once: it reads only the variant's numbers, fixed at creation."""
        colours = ", ".join(f"{COLOR_NAMES[c]} ({COLOR_LETTERS[c]})" for c in range(self.colors))
        counts = ", ".join(
            f"{_COPY_WORDS[self.copies(rank)]} {rank}{'s' if self.copies(rank) > 1 else ''}"
            for rank in range(1, self.ranks + 1)
        )
        return (
            f"Variant: {self.colors} colours: {colours}; ranks 1 to {self.ranks}; "
            f"{self.hand_size} cards per hand; full deck {self.deck_size} cards (each colour: "
            f"{counts}); {self.max_information_tokens} information tokens; "
            f"{self.max_life_tokens} life tokens; {self._best_score()}."
        )

    def observation_problem(self, observation: str) -> str | None:
        """Why the observation fits no position of the variant, or ``None``.

        It must parse, with one hand per seat of at most ``hand_size`` cards, tokens and deck
        within the variant's, and no more copies of a card (hands and discards together) than
        the deck holds: no search ever sees a giant hand (the Hanabi bot's search is exponential
        in the hand's size).
        """
        try:
            seen = parse_observation(observation)
        except (ValueError, KeyError, IndexError) as error:
            return f"the observation is not a Hanabi observation ({error})"
        if len(seen.hands) != self.num_players:
            return f"the observation must show {self.num_players} hands"
        if any(len(hand) > self.hand_size for hand in seen.hands):
            return f"a hand has more than the variant's {self.hand_size} cards"
        if not 0 <= seen.lives <= self.max_life_tokens:
            return f"life tokens must be between 0 and {self.max_life_tokens}"
        if not 0 <= seen.info <= self.max_information_tokens:
            return f"information tokens must be between 0 and {self.max_information_tokens}"
        if not 0 <= seen.deck <= self.deck_size:
            return f"the deck holds between 0 and {self.deck_size} cards"
        colours = COLOR_LETTERS[: self.colors]
        if any(c not in colours or not 0 <= r <= self.ranks for c, r in seen.fireworks.items()):
            return "a firework names a colour or rank the variant does not have"
        cards = [view.card for hand in seen.hands for view in hand if view.card is not None]
        for card, count in Counter([*cards, *seen.discards]).items():
            if (
                len(card) != 2
                or card[0] not in colours
                or not card[1].isdigit()
                or not 1 <= int(card[1]) <= self.ranks
                or count > self.copies(int(card[1]))
            ):
                return f"the observation shows cards the deck does not hold ({card})"
        return None

    @property
    def reachable_score(self) -> int:
        """The most cards the team can play (4 in both curated variants).

        Every play or discard draws while the deck lasts and each player has one turn after the
        deck runs out, so at most (cards left after the deal + players) cards get played.
        """
        after_deal = self.deck_size - self.players * self.hand_size
        return min(self.colors * self.ranks, after_deal + self.players)

    def _best_score(self) -> str:
        """The best score, and why it is below complete fireworks when it is."""
        full = self.colors * self.ranks
        after_deal = self.deck_size - self.players * self.hand_size
        if self.reachable_score == full:
            return f"best possible score {full} (every firework complete)"
        return (
            f"best possible score {self.reachable_score}: complete fireworks would score {full}, "
            f"but only {after_deal} cards are left to draw after the deal: the deck runs out "
            f"after {after_deal} plays or discards, then each player has one last turn"
        )

    def role(self, player: int) -> str:
        """Seat, turn order and the shared score."""
        order = "first" if player == 0 else "second"
        return (
            f"Player {player} of {NUM_PLAYERS} (you act {order}); "
            "you and your partner cooperate and share the score"
        )

    def example_action(self, seat: int) -> str:
        """``play 0``."""
        return "play 0"

    def observation_text(self, state: pyspiel.State, player: int) -> str:
        """Tokens, fireworks, score, deck, discards, the hands it sees, yours as hints, last moves.

        Built only from ``state.observation_string(player)``, which shows the seat's own cards
        as ``XX``: the seat's own cards never show, only what hints have told about them.
        """
        obs = parse_observation(state.observation_string(player))
        fireworks = ", ".join(
            f"{color_name(letter)} {rank}" for letter, rank in obs.fireworks.items()
        )
        best = self.colors * self.ranks
        lines = [
            self.variant(),
            f"Life tokens: {obs.lives} of {self.max_life_tokens}",
            f"Information tokens: {obs.info} of {self.max_information_tokens}",
            f"Fireworks (highest rank played in each colour): {fireworks}",
            f"Score so far: {obs.score} of {best}",
            f"Deck: {obs.deck} {'card' if obs.deck == 1 else 'cards'} left",
            "Discard pile: " + (", ".join(obs.discards) if obs.discards else "empty"),
        ]
        lines += self._other_hands(obs, player)
        lines.append(f"Your hand (Player {player}; you cannot see it; what hints have told you):")
        lines += [f"  card {i}: {card.knowledge()}" for i, card in enumerate(obs.hands[0])]
        if not obs.hands[0]:
            lines.append("  (no cards)")
        last = self._last_moves(state)
        if last:
            lines.append("Last moves (oldest first):")
            lines += [f"  {line}" for line in last]
        lines.append(self._status(state, obs, player))
        return "\n".join(lines)

    def _other_hands(self, obs: Observation, player: int) -> list[str]:
        """The lines showing the hands this seat sees (its partner's, in two-player Hanabi)."""
        partner = 1 - player
        theirs = obs.hands[1] if len(obs.hands) > 1 else []
        lines = [f"Your partner's hand (Player {partner}; you see it, they do not):"]
        lines += [
            f"  card {i}: {card.card}; your partner knows: {card.knowledge()}"
            for i, card in enumerate(theirs)
        ]
        if not theirs:
            lines.append("  (no cards)")
        return lines

    def _last_moves(self, state: pyspiel.State) -> tuple[str, ...]:
        """The public history lines of the last round (one move per player)."""
        return move_history(self, state)[-NUM_PLAYERS:]

    def _status(self, state: pyspiel.State, obs: Observation, player: int) -> str:
        """Whose turn it is, or how the game ended."""
        if state.is_terminal():
            if obs.lives == 0:
                why = "all life tokens are lost, so the final score is 0"
            elif obs.score == self.colors * self.ranks:
                why = f"every firework is complete: final score {obs.score}"
            else:
                why = f"the deck ran out and each player had a last turn: final score {obs.score}"
            return f"The game is over: {why}."
        if obs.current is None:
            return "The cards are being dealt."
        if obs.current == 0:
            return f"It is your turn (Player {player})."
        return f"It is your partner's turn (Player {1 - player})."

    def describe_move(
        self, state: pyspiel.State, player: int, action: int, text: str
    ) -> str | None:
        """What everyone saw: the played or discarded card, or the cards a hint touched.

        The acting seat's card comes from the partner's observation (the move reveals it); the
        cards a hint touches come from the hinter's own observation of the partner's hand.
        """
        kind, value = self.grammar.decode(action)
        partner = 1 - player
        name = self.player_name(player)
        if kind in ("play", "discard"):
            seen = parse_observation(state.observation_string(partner))
            card = seen.hands[1][value].card or "??"
            if kind == "discard":
                return f"{name} discards card {value}: it was {card}"
            colour, rank = card[0], int(card[1])
            if rank == seen.fireworks.get(colour, 0) + 1:
                done = f" (the {color_name(colour)} firework is complete)"
                return f"{name} plays card {value}: it was {card}, played successfully" + (
                    done if rank == self.ranks else ""
                )
            left = seen.lives - 1
            loss = (
                "the last life token is lost and the game ends with score 0"
                if left == 0
                else f"a life token is lost ({left} left)"
            )
            return f"{name} plays card {value}: it was {card}, it could not be played: {loss}"
        hand = parse_observation(state.observation_string(player)).hands[1]
        if kind == "colour":
            letter = COLOR_LETTERS[value]
            touched = [i for i, c in enumerate(hand) if c.card and c.card[0] == letter]
            said = COLOR_NAMES[value]
        else:
            touched = [i for i, c in enumerate(hand) if c.card and int(c.card[1]) == value]
            said = f"rank {value}"
        cards = ("card " if len(touched) == 1 else "cards ") + _both([str(i) for i in touched])
        return f"{name} hints {self.player_name(partner)}: {said} ({cards})"


def _listing(marshal_paper: PaperReference) -> Listing:
    """The arena's use of a Hanabi variant: the partner bot, self-play in MARSHAL's protocol."""
    return Listing(
        opponents=("random", "hanabi_bot"),
        solver="hanabi_bot",
        default_opponents=("hanabi_bot",),
        protocols={"marshal": ()},
        ladder_games=100,
        marshal_paper=marshal_paper,
    )


class MiniHanabi(HanabiSpec):
    """Mini Hanabi: 2 colours, ranks 1-2, 3 cards per hand, 3 information and 3 life tokens."""

    listing = _listing(PaperReference((0.0, 0.0), (4.0, 4.0)))

    def __init__(self) -> None:
        super().__init__(
            env_id="mini_hanabi-v0",
            title="Mini Hanabi",
            colors=2,
            ranks=2,
            hand_size=3,
            max_information_tokens=3,
            max_life_tokens=3,
        )


class SimpleHanabi(HanabiSpec):
    """Simple Hanabi: 3 colours, ranks 1-2, 5 cards per hand, 8 information and 3 life tokens."""

    listing = _listing(PaperReference((0.0, 0.0), (6.0, 6.0)))

    def __init__(self) -> None:
        super().__init__(
            env_id="simple_hanabi-v0",
            title="Simple Hanabi",
            colors=3,
            ranks=2,
            hand_size=5,
            max_information_tokens=8,
            max_life_tokens=3,
        )
