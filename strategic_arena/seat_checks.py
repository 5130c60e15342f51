"""Is this seat information possible in its game? Checked before a served player acts on it.

An endpoint (:mod:`strategic_arena.serve`) rebuilds the seat's view from the request alone, and
a request is written by anyone: a Kuhn information state that no deal produces, legal actions
the game does not have, a Simple Hanabi observation with an eleven-card hand. A solver handed
such a view fails (a 500 that blames the player) or, worse, works on it: the Hanabi bot
enumerates the hidden hand's assignments, exponential in the hand's size, so one crafted
663-byte request cost seconds of CPU. Each check here raises :class:`ImpossibleSeat` (the
server's 400) before any search, so the work a request causes stays that of a real position.

* :func:`check_bounds` -- every game: the seat, action ids and move counts within the game's
  own bounds (OpenSpiel's ``num_players``, ``num_distinct_actions``, ``max_game_length``) and
  the texts within :data:`MAX_TEXT_CHARS`.
* :data:`CHECKS` -- a registry of small per-game checks, each saying which games it applies to:
  :class:`KnownInformationStates` (small games with information states, Kuhn and Leduc: the
  state must be one the game reaches for that seat, with exactly its legal actions and texts),
  :class:`SpecObservation` (the observation is one the game's spec can show: each game states
  its own limits in ``GameSpec.observation_problem``; Hanabi's hands, tokens, deck and cards
  must fit the variant).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import pyspiel

from strategic_arena.games import GameSpec
from strategic_arena.turn import SeatInformation

#: The longest information state or observation accepted. The menu games' are well under 2 kB;
#: TextArena's whole-conversation observations grow with the game (an 80-turn Codenames game
#: of four seats re-shows its 25-word board at every turn: 10-30 kB by its end).
MAX_TEXT_CHARS = 65_536

#: Game-tree nodes :class:`KnownInformationStates` walks at most (Leduc: 9,457).
MAX_TREE_NODES = 200_000


class ImpossibleSeat(ValueError):
    """Seat information that no position of its game can produce."""


def check_bounds(spec: GameSpec, information: SeatInformation) -> None:
    """Check the fields every game bounds: seat, action ids, move counts, text sizes."""
    game = spec.game
    seats, actions, length = game.num_players(), game.num_distinct_actions(), game.max_game_length()
    if spec.simultaneous:  # OpenSpiel counts a simultaneous turn once: a move per seat (and
        length *= seats + 1  # a chance outcome, in goofspiel) are entries of the history
    if not 0 <= information.seat < seats:
        raise ImpossibleSeat(f"seat must be between 0 and {seats - 1} in {spec.env_id}")
    for name in ("information_state", "observation"):
        text = getattr(information, name)
        if text is not None and len(text) > MAX_TEXT_CHARS:
            raise ImpossibleSeat(f"{name} is over {MAX_TEXT_CHARS} characters")
    legal = information.legal_actions
    if any(not 0 <= action < actions for action in legal):
        raise ImpossibleSeat(f"legal action ids must be between 0 and {actions - 1}")
    if any(len(text) > MAX_TEXT_CHARS for text in legal.values()):
        raise ImpossibleSeat(f"an action text is over {MAX_TEXT_CHARS} characters")
    moves = information.public_moves
    if len(moves) > length:
        raise ImpossibleSeat(f"{spec.env_id} ends within {length} moves: too many public moves")
    if any(not 0 <= seat < seats or not 0 <= action < actions for seat, action in moves):
        raise ImpossibleSeat("a public move names a seat or an action the game does not have")
    if information.history is not None and len(information.history) > length:
        raise ImpossibleSeat(f"{spec.env_id} ends within {length} moves: the history is longer")


class SeatCheck(Protocol):
    """A per-game check: which games it applies to, and the check itself."""

    def applies(self, spec: GameSpec) -> bool:
        """Whether this check knows ``spec``'s game."""
        ...

    def check(self, spec: GameSpec, information: SeatInformation) -> None:
        """Raise :class:`ImpossibleSeat` when ``information`` cannot happen in the game."""
        ...


@functools.cache
def _information_states(
    spec: GameSpec,
) -> Mapping[tuple[int, str], Mapping[int, str]] | None:
    """Every (seat, information state) the game reaches, with the seat's menu there.

    ``None`` when the tree is larger than :data:`MAX_TREE_NODES` (too big to list).
    """
    table: dict[tuple[int, str], Mapping[int, str]] = {}
    stack = [spec.game.new_initial_state()]
    visited = 0
    while stack:
        state = stack.pop()
        visited += 1
        if visited > MAX_TREE_NODES:
            return None
        if state.is_terminal():
            continue
        if state.is_chance_node():
            stack += [state.child(outcome) for outcome, _ in state.chance_outcomes()]
            continue
        seat = state.current_player()
        key = (seat, str(state.information_state_string(seat)))
        if key not in table:
            table[key] = spec.menu(state, seat)
        stack += [state.child(action) for action in state.legal_actions()]
    return table


@dataclass(frozen=True)
class KnownInformationStates:
    """Small imperfect-information games with information states (Kuhn, Leduc).

    The request's state must be one the game reaches for that seat, with exactly the legal
    actions (and texts) there.
    """

    def applies(self, spec: GameSpec) -> bool:
        """Games with information states whose tree is small enough to list."""
        kind = spec.game.get_type()
        return (
            kind.information != pyspiel.GameType.Information.PERFECT_INFORMATION
            and kind.provides_information_state_string  # not Hanabi's: it has observations
            and not spec.simultaneous  # its tree walk follows one seat at a time
            and _information_states(spec) is not None
        )

    def check(self, spec: GameSpec, information: SeatInformation) -> None:
        """The state is one the seat can have, with its legal actions."""
        table = _information_states(spec)
        assert table is not None  # applies()
        menu = table.get((information.seat, information.information_state or ""))
        if menu is None:
            raise ImpossibleSeat(
                f"information_state is not one seat {information.seat} can have in {spec.env_id}"
            )
        if dict(information.legal_actions) != dict(menu):
            raise ImpossibleSeat("legal_actions are not the seat's legal actions in that state")


@dataclass(frozen=True)
class SpecObservation:
    """Every game: the observation must be one its spec can show.

    The game's own limits come from its spec (:meth:`GameSpec.observation_problem
    <strategic_arena.games.base.GameSpec.observation_problem>`: Hanabi checks hands, tokens, deck
    and cards against its variant), so this module knows no game's internals.
    """

    def applies(self, spec: GameSpec) -> bool:
        """Every game (a spec without limits finds no problem)."""
        return True

    def check(self, spec: GameSpec, information: SeatInformation) -> None:
        """The spec finds no problem with the observation."""
        problem = spec.observation_problem(information.observation or "")
        if problem is not None:
            raise ImpossibleSeat(problem)


#: The per-game checks (a request is checked by every one that applies to its game).
CHECKS: tuple[SeatCheck, ...] = (KnownInformationStates(), SpecObservation())


def check_seat(spec: GameSpec, information: SeatInformation) -> None:
    """Raise :class:`ImpossibleSeat` unless ``information`` can happen in ``spec``'s game."""
    check_bounds(spec, information)
    for check in CHECKS:
        if check.applies(spec):
            check.check(spec, information)
