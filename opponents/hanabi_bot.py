"""The Hanabi partner for Mini and Simple Hanabi: a joint policy where one ships, else rules.

On Mini Hanabi the bot first looks its seat's information up in the shipped joint policy
(:mod:`opponents.hanabi_table`, built by :mod:`opponents.hanabi_joint`: iterated exact best
response starting from the rules below, exact expected self-play score 3.946 out of 4 against
the rules' 3.457). The table holds every decision of self-play; a move of another partner leads
off it, and from there on the rules below decide. Simple Hanabi (2.2 million deals, too many
to enumerate) plays by the rules alone. ``joint=False`` plays by the rules everywhere.

The rules read two things: ``observation_string(seat)`` (parsed with
:func:`~strategic_arena.games.hanabi.parse_observation`: the partner's cards, what hints told
about its own cards -- positive and negative --, fireworks, tokens, discards, deck size) and the
*players'* entries of ``full_history()`` (public moves: which hint the partner gave last, and how
many turns are left once the deck is empty). Chance entries -- the deals -- are skipped unread.

Both variants leave only two cards to draw after the deal, so a game has at most four plays or
discards, and a discard costs a point just as a failed play does; hints cost only information
tokens. So the rules hint and count before they risk a card, and discard only as a last resort.

Terms: a card is *surely playable* to its holder when public information (its hint knowledge,
with identities whose copies are all played or discarded struck out) leaves only playable
identities. A hint's *focus* is the oldest card it touched that public information shows could
be playable but not surely. The partner's *queue* is the run of cards it would play on public
knowledge alone, each play advancing the fireworks. A card is *critical* when it is useful and
its last copy; *dead* when it can never be played.

The algorithm, for the seat to move:

1. Count: the cards the seat cannot see are the full deck minus the fireworks, the discards and
   the partner's hand. Enumerate every assignment of them to its own hand that agrees with the
   hint knowledge, weighted by the number of ways to deal it; read off each card's chance of
   being playable, dead or critical.
2. Convention: if the partner's last move was a hint, its focus is playable (the giver only
   gives such hints, rule 7): condition the count of step 1 on it.
3. Play the focus of that hint at once when it is surely playable now (the convention is read
   from the last move only, so it cannot wait).
4. With a surely playable card: before the last round, if the partner's queue is empty (or
   shorter than three cards and two tokens are left), give a play hint first (rule 7), since a
   known play keeps; otherwise play it, preferring the card least likely to be one the partner
   is about to play.
5. On the game's last turn, play the likeliest card when that raises the expected score (with
   one life left only when its chance beats ``score / (score + 1)``).
6. On the turn before the partner's last one, play the likeliest card if it may be playable,
   unless a play hint (one sure point) beats that chance plus the partner's best guess.
7. Give a *play hint*: a legal hint that lengthens the partner's queue and does not mislead (its
   focus, if any, is playable; cards it marks surely playable are so by construction). Prefer
   the longest queue, then a hint without a focus, then the oldest newly queued card.
8. Give a *protective hint* when the partner has nothing queued and the card it would discard
   next (its oldest card without hint information) is critical.
9. Play the likeliest card when its chance reaches the threshold for the lives left (never on
   the last life).
10. Give the safe hint that tells most about the partner's cards that are not dead (counted in
    identities struck out; critical cards count double).
11. Discard the card likeliest dead, among those that are likely not critical; ties go to cards
    without hint information, then to the oldest.
12. Otherwise (information tokens full, so no discard): a safe hint, else the likeliest play.

Every choice is among ``state.legal_actions(seat)`` (a table move that is not legal is never
played: the rules decide instead). The bot is deterministic: ties are broken by fixed orders,
never at random; ``seed`` is accepted only for the common constructor.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from opponents.base import SolverPlayer
from opponents.hanabi_table import shipped_table
from strategic_arena.games.hanabi import (
    COLOR_LETTERS,
    CardView,
    HanabiSpec,
    Observation,
    parse_observation,
)
from strategic_arena.turn import GameState

#: A card's identity: (colour index, rank from 1).
Identity = tuple[int, int]
#: One assignment of identities to the seat's own hand, and its weight (ways to deal it).
Assignment = tuple[tuple[Identity, ...], float]

#: Chance from which a card counts as surely playable (absorbs rounding only).
SURE = 1.0 - 1e-9
#: Rule 9: chance a card must reach to be played blind, by lives left (absent: never).
GAMBLE_THRESHOLD: dict[int, float] = {3: 0.7, 2: 0.85}
#: Rule 11: chance of being critical above which a card is kept when another may go.
CRITICAL_LIMIT = 0.5
#: Rule 4: with at least ``HINT_FIRST_TOKENS`` tokens, hint before playing while the partner's
#: queue is shorter than ``HINT_FIRST_QUEUE``; with fewer, only while it is empty.
HINT_FIRST_TOKENS = 2
HINT_FIRST_QUEUE = 3


@dataclass(frozen=True)
class _Variant:
    """The numbers of a Hanabi variant the rules need.

    Attributes:
        colours: colour letters in use, in action order (``RY`` for Mini Hanabi).
        hand_size: cards per hand.
        deck_after_deal: cards left to draw after the deal.
        copies: copies of each identity in the full deck.
    """

    colours: str
    hand_size: int
    deck_after_deal: int
    copies: dict[Identity, int]

    @classmethod
    def of(cls, spec: HanabiSpec) -> _Variant:
        """The variant of ``spec``."""
        copies = {
            (colour, rank): spec.copies(rank)
            for colour in range(spec.colors)
            for rank in range(1, spec.ranks + 1)
        }
        return cls(
            colours=COLOR_LETTERS[: spec.colors],
            hand_size=spec.hand_size,
            deck_after_deal=spec.deck_size - 2 * spec.hand_size,
            copies=copies,
        )

    def identity(self, text: str) -> Identity:
        """``(0, 1)`` for ``R1``."""
        return self.colours.index(text[0]), int(text[1])

    def decode_hint(self, action: int) -> tuple[str, int] | None:
        """``("colour", index)`` or ``("rank", rank)`` for a hint action, else ``None``."""
        offset = action - 2 * self.hand_size
        if offset < 0:
            return None
        if offset < len(self.colours):
            return "colour", offset
        return "rank", offset - len(self.colours) + 1


@dataclass(frozen=True)
class _Board:
    """The public part of the game: fireworks and the cards gone for good.

    Attributes:
        variant: the variant.
        fireworks: highest rank played, by colour index.
        gone: cards played or discarded, by identity.
    """

    variant: _Variant
    fireworks: tuple[int, ...]
    gone: Counter[Identity]

    def playable(self, card: Identity) -> bool:
        """Whether ``card`` can be played now."""
        return card[1] == self.fireworks[card[0]] + 1

    def dead(self, card: Identity) -> bool:
        """Whether ``card`` can never be played: already played, or a lower rank is all gone."""
        colour, rank = card
        if rank <= self.fireworks[colour]:
            return True
        return any(
            self.gone[(colour, lower)] >= self.variant.copies[(colour, lower)]
            for lower in range(self.fireworks[colour] + 1, rank)
        )

    def critical(self, card: Identity) -> bool:
        """Whether ``card`` is useful and its last copy (losing it lowers the best score)."""
        return not self.dead(card) and self.gone[card] + 1 >= self.variant.copies[card]

    def after_play(self, card: Identity) -> _Board:
        """The board once ``card`` (playable) has been played."""
        fireworks = list(self.fireworks)
        fireworks[card[0]] = card[1]
        gone = Counter(self.gone)
        gone[card] += 1
        return _Board(self.variant, tuple(fireworks), gone)

    def possible(self, view: CardView) -> list[Identity]:
        """Identities public information allows for a card: its knowledge, minus cards gone."""
        cards = [self.variant.identity(f"{c}{r}") for c in view.colours for r in view.ranks]
        return [card for card in cards if self.gone[card] < self.variant.copies[card]]

    def surely_playable(self, view: CardView) -> bool:
        """Whether public information alone shows the card playable."""
        possible = self.possible(view)
        return bool(possible) and all(self.playable(card) for card in possible)

    def focus(self, hand: Sequence[CardView], touched: Sequence[int]) -> int | None:
        """The focus of a hint that touched ``touched``, if it has one.

        That is the oldest touched card that public information shows could be playable but
        not surely.
        """
        for position in sorted(touched):
            possible = self.possible(hand[position])
            playable = [self.playable(card) for card in possible]
            if any(playable) and not all(playable):
                return position
        return None


class HanabiBot(SolverPlayer):
    """The partner of the module docstring, for ``mini_hanabi-v0`` and ``simple_hanabi-v0``.

    Args:
        env_id: the game.
        name: the player's name.
        seed: accepted for the common opponent constructor; the bot is deterministic.
        joint: whether to play the shipped joint policy where it has a move (else rules only).
    """

    supported_envs: ClassVar[tuple[str, ...]] = ("mini_hanabi-v0", "simple_hanabi-v0")

    def __init__(
        self,
        env_id: str,
        name: str = "hanabi_bot",
        seed: int | None = None,
        joint: bool = True,
    ) -> None:
        super().__init__(env_id, name)
        self.seed = seed
        self.joint = joint

    def choose(self, state: GameState, seat: int) -> int:
        """The action of the first rule that applies (module docstring)."""
        return self.decide(state, seat)[0]

    def decide(self, state: GameState, seat: int) -> tuple[int, str]:
        """The action and the name of the rule that chose it (for logs and tests)."""
        spec = state.spec
        if not isinstance(spec, HanabiSpec):
            raise TypeError(f"HanabiBot plays Hanabi, not {state.env_id}")
        legal = state.legal_actions(seat)
        if not legal:
            raise ValueError(f"seat {seat} has no legal action")
        observation = state.observation(seat)
        moves = [action for _, action in state.public_moves()]
        table = shipped_table(state.env_id) if self.joint else None
        if table is not None:
            action = table.action(seat, observation, moves)
            if action is not None and action in legal:
                return action, "joint policy"
        obs = parse_observation(observation)
        return _Decision(_Variant.of(spec), obs, moves, legal).choose()


def _after_hint(
    hand: Sequence[CardView], cards: Sequence[Identity], hint: tuple[str, int], colours: str
) -> tuple[list[CardView], list[int]]:
    """The hand's knowledge after a hint, and the positions the hint touches."""
    kind, value = hint
    updated: list[CardView] = []
    touched: list[int] = []
    for position, (view, card) in enumerate(zip(hand, cards, strict=True)):
        if kind == "colour":
            letter = colours[value]
            hit = card[0] == value
            view = replace(
                view,
                colours=letter if hit else view.colours.replace(letter, ""),
                hinted_colour=letter if hit else view.hinted_colour,
            )
        else:
            hit = card[1] == value
            view = replace(
                view,
                ranks=(value,) if hit else tuple(r for r in view.ranks if r != value),
                hinted_rank=value if hit else view.hinted_rank,
            )
        updated.append(view)
        if hit:
            touched.append(position)
    return updated, touched


def _assignments(
    hand: Sequence[CardView], unseen: Counter[Identity], variant: _Variant
) -> list[Assignment]:
    """Every assignment of unseen cards to ``hand`` that agrees with its knowledge (step 1)."""
    candidates = [
        [variant.identity(f"{c}{r}") for c in view.colours for r in view.ranks] for view in hand
    ]
    result: list[Assignment] = []
    left = Counter(unseen)

    def extend(prefix: list[Identity], weight: float) -> None:
        if len(prefix) == len(hand):
            result.append((tuple(prefix), weight))
            return
        for card in candidates[len(prefix)]:
            count = left[card]
            if count > 0:
                left[card] = count - 1
                prefix.append(card)
                extend(prefix, weight * count)
                prefix.pop()
                left[card] = count

    extend([], 1.0)
    return result


def _chance(
    assignments: Sequence[Assignment], position: int, test: Callable[[Identity], bool]
) -> float:
    """Probability that ``test`` holds for the card at ``position``."""
    total = sum(weight for _, weight in assignments)
    if total <= 0:
        return 0.0
    return sum(weight for cards, weight in assignments if test(cards[position])) / total


class _Decision:
    """One decision: the seat's view, counted, and the rules applied in order."""

    def __init__(
        self, variant: _Variant, obs: Observation, moves: list[int], legal: list[int]
    ) -> None:
        self.variant = variant
        self.obs = obs
        self.moves = moves
        self.legal = frozenset(legal)
        fireworks = tuple(obs.fireworks.get(letter, 0) for letter in variant.colours)
        gone: Counter[Identity] = Counter()
        for colour, top in enumerate(fireworks):
            gone.update((colour, rank) for rank in range(1, top + 1))
        gone.update(variant.identity(text) for text in obs.discards)
        self.board = _Board(variant, fireworks, gone)
        self.mine = obs.hands[0]
        self.theirs = obs.hands[1] if len(obs.hands) > 1 else []
        self.their_cards = [variant.identity(view.card or "") for view in self.theirs]
        unseen = Counter(variant.copies)
        unseen.subtract(gone)
        unseen.subtract(self.their_cards)
        self.focus: int | None = None
        self.assignments = self._conditioned(_assignments(self.mine, +unseen, variant))
        self.p_play = [
            _chance(self.assignments, i, self.board.playable) for i in range(len(self.mine))
        ]

    def _conditioned(self, assignments: list[Assignment]) -> list[Assignment]:
        """Step 2: keep the assignments in which the last hint's focus is playable."""
        hint = self.variant.decode_hint(self.moves[-1]) if self.moves else None
        if hint is None:
            return assignments
        kind, value = hint
        if kind == "colour":
            letter = self.variant.colours[value]
            touched = [i for i, view in enumerate(self.mine) if view.hinted_colour == letter]
        else:
            touched = [i for i, view in enumerate(self.mine) if view.hinted_rank == value]
        focus = self.board.focus(self.mine, touched)
        if focus is None:
            return assignments
        kept = [item for item in assignments if self.board.playable(item[0][focus])]
        if not kept:  # a partner that does not follow the convention
            return assignments
        self.focus = focus
        return kept

    # -- where the game stands ----------------------------------------------------------------

    def turns(self) -> tuple[bool, bool]:
        """Where the last round stands, read from the public moves.

        Returns:
            ``(last, partner_last_next)``: whether this is the game's last turn, and whether
            the partner's last turn comes right after this one (both false while the deck
            lasts: after the move that draws the last card, each seat has one more turn).
        """
        if self.obs.deck > 0:
            return False, False
        draws = since = 0
        for action in self.moves:
            if draws >= self.variant.deck_after_deal:
                since += 1
            elif action < 2 * self.variant.hand_size:
                draws += 1
        return since >= 1, since == 0

    def play(self, position: int) -> int:
        """Action id of playing ``position``."""
        return self.variant.hand_size + position

    def likeliest(self) -> tuple[int, float]:
        """The card likeliest playable and its chance (the oldest on ties)."""
        best = max(range(len(self.mine)), key=lambda i: (self.p_play[i], -i))
        return best, self.p_play[best]

    def queue(self, views: Sequence[CardView], focus: int | None = None) -> list[int]:
        """Positions of the partner's queue (module docstring), the focus first if given."""
        board = self.board
        played: list[int] = []
        while True:
            if focus is not None and not played:
                following: int | None = focus
            else:
                following = next(
                    (
                        i
                        for i, view in enumerate(views)
                        if i not in played and board.surely_playable(view)
                    ),
                    None,
                )
            if following is None or not board.playable(self.their_cards[following]):
                return played
            played.append(following)
            board = board.after_play(self.their_cards[following])

    # -- the rules -----------------------------------------------------------------------------

    def choose(self) -> tuple[int, str]:
        """Steps 3 to 12 of the module docstring: the action and the rule's name."""
        sure = [i for i, p in enumerate(self.p_play) if p >= SURE]
        last, partner_next = self.turns()
        if self.focus is not None and self.focus in sure:
            return self.play(self.focus), "play the hinted card"
        if sure:
            queued = len(self.queue(self.theirs))
            wanted = HINT_FIRST_QUEUE if self.obs.info >= HINT_FIRST_TOKENS else 1
            clue = None if last or partner_next or queued >= wanted else self.play_hint()
            if clue is not None:
                return clue, "play hint before playing"
            theirs = {self.their_cards[i] for i in self.queue(self.theirs)}
            sure.sort(key=lambda i: (_chance(self.assignments, i, lambda c: c in theirs), i))
            return self.play(sure[0]), "play a surely playable card"
        position, chance = self.likeliest()
        lives, score = self.obs.lives, self.obs.score
        if last:
            if chance > 0 and (lives > 1 or chance > score / (score + 1)):
                return self.play(position), "last turn: play the likeliest card"
            return self.fallback()
        clue = self.play_hint()
        if (
            partner_next
            and chance > 0
            and lives > 1
            and (clue is None or chance + self.partner_chance() > 1.0)
        ):
            return self.play(position), "last round: play the likeliest card"
        if clue is not None:
            return clue, "play hint"
        guard = self.protective_hint()
        if guard is not None:
            return guard, "protective hint"
        if chance >= GAMBLE_THRESHOLD.get(lives, 2.0):
            return self.play(position), "play a likely playable card"
        info = self.info_hint()
        if info is not None:
            return info, "informative hint"
        discard = self.discard()
        if discard is not None:
            return discard, "discard"
        return self.fallback()

    def fallback(self) -> tuple[int, str]:
        """Step 12: a safe hint, else a discard, else the likeliest play."""
        safe = [
            action for action, after, touched in self.hints() if not self.misleads(after, touched)
        ]
        if safe:
            return safe[0], "any safe hint"
        discard = self.discard()
        if discard is not None:
            return discard, "discard"
        position, _ = self.likeliest()
        if self.play(position) in self.legal:
            return self.play(position), "play the likeliest card"
        return min(self.legal), "any legal action"

    # -- hints ---------------------------------------------------------------------------------

    def hints(self) -> Iterator[tuple[int, list[CardView], list[int]]]:
        """Every legal hint: its action id, the partner's knowledge after it, cards touched."""
        for action in sorted(self.legal):
            hint = self.variant.decode_hint(action)
            if hint is not None:
                after, touched = _after_hint(
                    self.theirs, self.their_cards, hint, self.variant.colours
                )
                if touched:
                    yield action, after, touched

    def misleads(self, after: Sequence[CardView], touched: Sequence[int]) -> bool:
        """Whether the hint's focus is a card that is not playable."""
        focus = self.board.focus(after, touched)
        return focus is not None and not self.board.playable(self.their_cards[focus])

    def play_hint(self) -> int | None:
        """Step 7: the best hint that lengthens the partner's queue without misleading."""
        before = self.queue(self.theirs)
        best: tuple[tuple[int, int, int, int], int] | None = None
        for action, after, touched in self.hints():
            if self.misleads(after, touched):
                continue
            focus = self.board.focus(after, touched)
            queued = self.queue(after, focus)
            gain = len(queued) - len(before)
            if gain <= 0:
                continue
            target = min((i for i in queued if i not in before), default=min(queued))
            key = (gain, int(focus is None), -target, -action)
            if best is None or key > best[0]:
                best = (key, action)
        return None if best is None else best[1]

    def protective_hint(self) -> int | None:
        """Step 8: touch the partner's next discard when it is critical."""
        if not self.theirs or self.queue(self.theirs):
            return None
        untouched = [
            i
            for i, view in enumerate(self.theirs)
            if view.hinted_colour is None and view.hinted_rank is None
        ]
        chop = untouched[0] if untouched else 0
        if not self.board.critical(self.their_cards[chop]):
            return None
        for action, after, touched in self.hints():
            if chop in touched and not self.misleads(after, touched):
                return action
        return None

    def info_hint(self) -> int | None:
        """Step 10: the safe hint that tells most about the partner's cards that are not dead."""
        best: tuple[float, int] | None = None
        for action, after, touched in self.hints():
            if self.misleads(after, touched):
                continue
            value = 0.0
            for view, new, card in zip(self.theirs, after, self.their_cards, strict=True):
                if not self.board.dead(card):
                    struck = len(self.board.possible(view)) - len(self.board.possible(new))
                    value += struck * (2.0 if self.board.critical(card) else 1.0)
            if value > 0 and (best is None or value > best[0]):
                best = (value, action)
        return None if best is None else best[1]

    def partner_chance(self) -> float:
        """The partner's best chance of a playable card on its last turn.

        With the deck empty, the cards the partner cannot see are exactly its hand, so its
        count (step 1) can be redone here.
        """
        assignments = _assignments(self.theirs, Counter(self.their_cards), self.variant)
        return max(
            (_chance(assignments, i, self.board.playable) for i in range(len(self.theirs))),
            default=0.0,
        )

    # -- discards ------------------------------------------------------------------------------

    def discard(self) -> int | None:
        """Step 11: the card likeliest dead and likely not critical, if discarding is legal."""
        options = [i for i in range(len(self.mine)) if i in self.legal]  # discard i is action i
        if not options:
            return None
        board = self.board
        keep = [i for i in options if _chance(self.assignments, i, board.critical) > CRITICAL_LIMIT]
        candidates = [i for i in options if i not in keep] or options

        def order(i: int) -> tuple[float, bool, int]:
            view = self.mine[i]
            touched = view.hinted_colour is not None or view.hinted_rank is not None
            return -_chance(self.assignments, i, board.dead), touched, i

        return min(candidates, key=order)
