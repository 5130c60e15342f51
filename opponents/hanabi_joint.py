"""A joint self-play policy for Mini Hanabi, by iterated exact best response.

Mini Hanabi deals 8 cards (two colours, each with three 1s and one 2): 1,120 distinct deals,
equally likely (OpenSpiel deals each card uniformly from those left). A game is short: two
cards are left to draw after the deal, so at most four plays or discards are made (a 4 needs
all four to be successful plays), with at most a few hints between them. So the expected
self-play score of a deterministic joint policy can be computed exactly, over every deal, and
so can one seat's exact best response to its partner's fixed policy.

Best response of seat ``s`` to a fixed partner policy:

1. Deal every deal and play the partner's moves until ``s`` is to move. Group the histories by
   ``s``'s information: its observation string and the public moves
   (:func:`~opponents.hanabi_table.information_key`), exactly what the bot reads at play time.
2. For a group, try each legal action, the incumbent's first: apply it in every history of the
   group, and play on (the partner by its policy, draws from the deal) until ``s`` moves again
   or the game ends. The action's value is the sum of the final scores of the games that ended
   and of the best values of the new groups (step 2 again). Stop early once an action reaches
   the maximum, 4 in every history.
3. The group's move is the best action (ties keep the incumbent): one move per information by
   construction, chosen by what the seat knows and the partner's known policy only.

Iteration: both seats start with the rule bot (:class:`~opponents.hanabi_bot.HanabiBot` with
``joint=False``). Round ``r`` replaces seat ``r % 2``'s policy by its best response to the
other's (the best-response table, and the rules wherever the table has no entry). The joint
value never falls (the incumbent is one of the responses); the iteration stops at the first
round that does not raise it. The result is person-by-person optimal (no seat can do better
alone), a local optimum, not necessarily the best joint policy.

Measured (``python -m opponents.hanabi_joint``, exact over all 1,120 deals): rules 3.457;
round 1 (seat 0) 3.850; round 2 (seat 1) 3.938; round 3 (seat 0) 3.946; round 4 (seat 1)
no gain. About two minutes on one core, most of it the rule bot's decisions in round 1.
Starting with seat 1 ends at 3.943 instead. With every hand visible to both seats every deal
reaches 4 (:func:`perfect_information_score`; ``--bound``), so the best joint policy lies
between 3.946 and 4.

The information key forgets a little (which of two successful plays came first, say), so two
branches of step 2 may share a key; the later write wins. The reported value is therefore
always measured afresh by playing the resulting policy on every deal (:func:`self_play`),
never taken from the search. What ships (:mod:`opponents.hanabi_table`) is the decisions of
that self-play: everything the policy needs against itself.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyspiel

from opponents.hanabi_bot import HanabiBot
from opponents.hanabi_table import information_key, save_table, table_path
from strategic_arena.games import get_spec
from strategic_arena.games.hanabi import HanabiSpec
from strategic_arena.turn import GameState

#: One deal: the chance outcomes (card indices, ``colour * ranks + rank - 1``) in dealing order.
Deal = tuple[int, ...]
#: One decision of self-play: ``(seat, information key, action)``.
Decision = tuple[int, str, int]
#: Enumerating more deals than this is refused (Simple Hanabi has about 2.2 million).
MAX_DEALS = 20_000
#: Gains below this are rounding, not gains.
EPSILON = 1e-9


def hanabi_spec(env_id: str) -> HanabiSpec:
    """The two-player Hanabi spec of ``env_id`` (``ValueError`` for any other game)."""
    spec = get_spec(env_id)
    if not isinstance(spec, HanabiSpec) or spec.players != 2:
        raise ValueError(f"{env_id} is not a two-player Hanabi variant")
    return spec


def deals(spec: HanabiSpec) -> list[Deal]:
    """Every distinct deal of the variant's deck, sorted (each equally likely).

    Raises:
        ValueError: the variant has more than :data:`MAX_DEALS` deals.
    """
    cards = [
        colour * spec.ranks + rank - 1
        for colour in range(spec.colors)
        for rank in range(1, spec.ranks + 1)
        for _ in range(spec.copies(rank))
    ]
    count = _distinct_orders(cards)
    if count > MAX_DEALS:
        raise ValueError(f"{spec.env_id} has {count:,} deals, more than {MAX_DEALS:,} to search")
    return sorted(set(itertools.permutations(cards)))


def _distinct_orders(cards: Sequence[int]) -> int:
    """The number of distinct orders of ``cards``: ``n! / (k1! k2! ...)``."""
    total = math.factorial(len(cards))
    for card in set(cards):
        total //= math.factorial(cards.count(card))
    return total


class _Line:
    """One history of one deal: the OpenSpiel state, the deal, and the public moves so far."""

    __slots__ = ("deal", "drawn", "moves", "state")

    def __init__(self, state: pyspiel.State, deal: Deal, drawn: int, moves: tuple[int, ...]):
        self.state = state
        self.deal = deal
        self.drawn = drawn
        self.moves = moves

    @classmethod
    def dealt(cls, game: pyspiel.Game, deal: Deal) -> _Line:
        """The history after the deal (both hands dealt from ``deal``)."""
        line = cls(game.new_initial_state(), deal, 0, ())
        line.draw()
        return line

    def copy(self) -> _Line:
        """An independent copy."""
        return _Line(self.state.clone(), self.deal, self.drawn, self.moves)

    def draw(self) -> None:
        """Resolve chance nodes with the deal's next cards."""
        while self.state.is_chance_node():
            self.state.apply_action(self.deal[self.drawn])
            self.drawn += 1

    def apply(self, action: int) -> None:
        """Play ``action`` and draw what it makes the player draw."""
        self.state.apply_action(action)
        self.moves = (*self.moves, action)
        self.draw()

    def key(self, seat: int) -> str:
        """``seat``'s information key."""
        return information_key(self.state.observation_string(seat), self.moves)

    def score(self) -> float:
        """The final score (the game is over)."""
        return float(self.state.returns()[0])


class JointPolicy:
    """A deterministic policy of both seats: a table per seat, the rule bot elsewhere.

    Args:
        spec: the variant.
    """

    def __init__(self, spec: HanabiSpec) -> None:
        self.spec = spec
        self.tables: list[dict[str, int]] = [{} for _ in range(spec.players)]
        self._rules = HanabiBot(spec.env_id, joint=False)
        self._rule_moves: dict[tuple[int, str], int] = {}

    def action(self, line: _Line, seat: int, key: str | None = None) -> int:
        """The policy's move for ``seat`` in ``line`` (``key``: its information key, if known)."""
        key = line.key(seat) if key is None else key
        move = self.tables[seat].get(key)
        return self.rule_move(line, seat, key) if move is None else move

    def rule_move(self, line: _Line, seat: int, key: str) -> int:
        """The rule bot's move (cached: the rules read only the information behind ``key``)."""
        move = self._rule_moves.get((seat, key))
        if move is None:
            state = GameState(self.spec.env_id, line.state.clone(), self.spec)
            move = self._rules.choose(state, seat)
            self._rule_moves[(seat, key)] = move
        return move

    def play_until(self, line: _Line, seat: int) -> None:
        """Play the policy's moves for the seats other than ``seat`` until it moves or the end."""
        while not line.state.is_terminal():
            mover = line.state.current_player()
            if mover == seat:
                return
            line.apply(self.action(line, mover))


def self_play(policy: JointPolicy, dealt: Sequence[Deal]) -> tuple[float, list[Decision]]:
    """The policy's mean self-play score over ``dealt``, and every decision it made."""
    game = policy.spec.game
    total = 0.0
    decisions: list[Decision] = []
    for deal in dealt:
        line = _Line.dealt(game, deal)
        while not line.state.is_terminal():
            seat = line.state.current_player()
            key = line.key(seat)
            action = policy.action(line, seat, key)
            decisions.append((seat, key, action))
            line.apply(action)
        total += line.score()
    return total / len(dealt), decisions


class _BestResponse:
    """Steps 1 to 3 of the module docstring for one seat against the fixed ``policy``."""

    def __init__(self, policy: JointPolicy, seat: int) -> None:
        self.policy = policy
        self.seat = seat
        self.table: dict[str, int] = {}
        self.best_score = float(policy.spec.reachable_score)

    def run(self, dealt: Sequence[Deal]) -> float:
        """Fill :attr:`table`; the best total score (sum over ``dealt``)."""
        return self.play_on(_Line.dealt(self.policy.spec.game, deal) for deal in dealt)

    def play_on(self, lines: Iterable[_Line]) -> float:
        """The best total score from ``lines``: the partner moves, then the seat's groups."""
        total = 0.0
        groups: dict[str, list[_Line]] = {}
        for line in lines:
            self.policy.play_until(line, self.seat)
            if line.state.is_terminal():
                total += line.score()
            else:
                groups.setdefault(line.key(self.seat), []).append(line)
        return total + sum(self.best(key, group) for key, group in groups.items())

    def best(self, key: str, group: list[_Line]) -> float:
        """The best total score of a group sharing ``key`` (step 2); records its move."""
        first = group[0]
        incumbent = self.policy.action(first, self.seat, key)
        legal = sorted(
            first.state.legal_actions(), key=lambda action: (action != incumbent, action)
        )
        ceiling = self.best_score * len(group) - EPSILON
        best_value, best_action = -1.0, incumbent
        for action in legal:
            value = self.value(group, action)
            if value > best_value + EPSILON:
                best_value, best_action = value, action
            if best_value >= ceiling:
                break
        self.table[key] = best_action
        return best_value

    def value(self, group: list[_Line], action: int) -> float:
        """The total score of playing ``action`` in every history of ``group``, then best."""
        return self.play_on(_after(line, action) for line in group)


def _after(line: _Line, action: int) -> _Line:
    """A copy of ``line`` with ``action`` played."""
    after = line.copy()
    after.apply(action)
    return after


def best_response(policy: JointPolicy, seat: int, dealt: Sequence[Deal]) -> dict[str, int]:
    """Seat ``seat``'s exact best response to ``policy``'s other seat, over ``dealt``."""
    response = _BestResponse(policy, seat)
    response.run(dealt)
    return response.table


@dataclass(frozen=True)
class Solution:
    """The result of :func:`solve`.

    Attributes:
        policy: the joint policy.
        values: the exact mean self-play score before any round, then after each round.
        decisions: every decision of the policy's self-play over the deals.
        deals: the number of deals.
    """

    policy: JointPolicy
    values: list[float]
    decisions: list[Decision]
    deals: int


def solve(
    env_id: str,
    max_rounds: int = 8,
    dealt: Sequence[Deal] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Solution:
    """Iterated best response from the rule bot (module docstring), over ``dealt`` (default all).

    Raises:
        ValueError: not a two-player Hanabi variant, too many deals, or ``max_rounds < 1``.
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
    spec = hanabi_spec(env_id)
    dealt = deals(spec) if dealt is None else list(dealt)
    policy = JointPolicy(spec)
    value, decisions = self_play(policy, dealt)
    values = [value]
    if progress is not None:
        progress(f"rules: {value:.4f} over {len(dealt)} deals")
    for round_index in range(max_rounds):
        seat = round_index % spec.players
        started = time.perf_counter()
        previous = policy.tables[seat]
        policy.tables[seat] = best_response(policy, seat, dealt)
        value, round_decisions = self_play(policy, dealt)
        if progress is not None:
            progress(
                f"round {round_index + 1} (seat {seat}): {value:.4f}, "
                f"{time.perf_counter() - started:.1f} s"
            )
        if value <= values[-1] + EPSILON:
            policy.tables[seat] = previous
            break
        values.append(value)
        decisions = round_decisions
    return Solution(policy, values, decisions, len(dealt))


def perfect_information_score(spec: HanabiSpec, deal: Deal) -> float:
    """The best score of ``deal`` were every hand visible to both seats (an upper bound).

    Exhaustive search of the deal's game tree (hints included: they pass the turn), plays
    first, stopping at the first line that reaches the best reachable score. Positions are
    memoized while the deck lasts (the state's text then fixes what follows; once the deck
    is empty it does not say how many turns are left, and at most two are).
    """
    best_score = float(spec.reachable_score)
    plays = range(spec.hand_size, 2 * spec.hand_size)
    memo: dict[str, float] = {}

    def search(line: _Line) -> float:
        if line.state.is_terminal():
            return line.score()
        key = str(line.state) if line.drawn < len(line.deal) else None
        if key is None or key not in memo:
            value = 0.0
            for action in sorted(line.state.legal_actions(), key=lambda a: a not in plays):
                value = max(value, search(_after(line, action)))
                if value >= best_score:
                    break
            if key is None:
                return value
            memo[key] = value
        return memo[key]

    return search(_Line.dealt(spec.game, deal))


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--env", default="mini_hanabi-v0", help="the Hanabi variant")
    parser.add_argument("--rounds", type=int, default=8, help="best-response rounds at most")
    parser.add_argument("--out", type=Path, default=None, help="table file (default: shipped)")
    parser.add_argument(
        "--bound",
        action="store_true",
        help="only print the perfect-information bound (every hand visible) over all deals",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Build the joint policy and write its self-play decisions (``python -m ...``)."""
    args = _parse(argv)
    try:
        if args.bound:
            spec = hanabi_spec(args.env)
            scores = [perfect_information_score(spec, deal) for deal in deals(spec)]
            print(f"perfect information: {sum(scores) / len(scores):.4f} over {len(scores)} deals")
            return 0
        solution = solve(args.env, args.rounds, progress=print)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = args.out or table_path(args.env)
    save_table(
        out,
        args.env,
        solution.decisions,
        rounds=len(solution.values) - 1,
        deals=solution.deals,
        value=solution.values[-1],
        rules_value=solution.values[0],
    )
    print(f"wrote {out}: {len({(s, k) for s, k, _ in solution.decisions})} decisions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
