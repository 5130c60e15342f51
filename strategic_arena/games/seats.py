"""Seats and turns in general: who acts now, how moves are applied, and how a history splits.

A game has N >= 1 seats. At each decision point one seat acts (a sequential turn) or several act
at once (a *simultaneous* turn: OpenSpiel's blotto, goofspiel; a sealed bid). At a simultaneous
turn every acting seat chooses without seeing the others' choices, and the moves are applied
together. This module holds the few rules every layer shares about that, for OpenSpiel states:

* :func:`acting_seats` -- the seats that act now (one, every seat at a simultaneous node, none
  at a chance node or at the end);
* :func:`apply_moves` -- apply one turn's moves (one, or all at once);
* :func:`turns` -- split a stored OpenSpiel history into turns, for replays and move histories
  (OpenSpiel records a simultaneous turn as one ``(player, action)`` entry per seat).

:class:`SeatedGame` is the same contract as a small protocol, for games whose rules do not
come from OpenSpiel (TextArena adapters): the seats acting now, each seat's observation and
legal moves, apply one turn's moves, terminal and returns. :class:`OpenSpielSeats` implements it
over a pyspiel state, and is the reference for other implementations.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

import pyspiel

Move = int | str
"""One seat's move: an action id of a menu, or a text the game validates itself."""


def acting_seats(state: pyspiel.State) -> tuple[int, ...]:
    """The seats that act in ``state``: one, all of them at a simultaneous node, or none.

    At a simultaneous node OpenSpiel takes one action from every seat (a seat with nothing to
    decide has a single legal action), so every seat acts. Chance nodes and terminal states
    have no acting seat.
    """
    if state.is_terminal() or state.is_chance_node():
        return ()
    if state.is_simultaneous_node():
        return tuple(range(int(state.num_players())))
    return (int(state.current_player()),)


def apply_moves(state: pyspiel.State, moves: Mapping[int, int]) -> None:
    """Apply one turn: ``moves`` maps each acting seat to its action id.

    Raises:
        ValueError: ``moves`` does not name exactly the acting seats.
    """
    seats = acting_seats(state)
    if sorted(moves) != list(seats):
        raise ValueError(f"moves for seats {sorted(moves)} but seats {list(seats)} act now")
    if state.is_simultaneous_node():
        state.apply_actions([int(moves[seat]) for seat in seats])
    else:
        state.apply_action(int(moves[seats[0]]))


def turns(
    game: pyspiel.Game, history: Sequence[int]
) -> Iterator[tuple[pyspiel.State, tuple[tuple[int, int], ...]]]:
    """Replay ``history`` from the start, yielding each players' turn before it is applied.

    Yields ``(state, ((seat, action), ...))``: the live replay state *before* the turn (do not
    keep it past the next iteration: clone it) and the turn's moves in seat order. Chance
    outcomes are applied, never yielded. A simultaneous turn takes one history entry per seat,
    as OpenSpiel records it.

    Raises:
        ValueError: the history ends inside a simultaneous turn, or goes on after the end.
    """
    state = game.new_initial_state()
    position = 0
    while position < len(history):
        if state.is_chance_node():
            state.apply_action(int(history[position]))
            position += 1
            continue
        player = int(state.current_player())
        if player >= 0:  # a sequential turn: the common case, kept cheap (Hanabi replays often)
            yield state, ((player, int(history[position])),)
            state.apply_action(int(history[position]))
            position += 1
            continue
        seats = acting_seats(state)
        if not seats:
            raise ValueError(f"the history goes on after the game ended, at entry {position}")
        chunk = history[position : position + len(seats)]
        if len(chunk) < len(seats):
            raise ValueError(f"the history ends inside a simultaneous turn at entry {position}")
        moves = tuple((seat, int(action)) for seat, action in zip(seats, chunk, strict=True))
        yield state, moves
        apply_moves(state, dict(moves))
        position += len(seats)


@runtime_checkable
class SeatedGame(Protocol):
    """One running game with N seats, whatever defines its rules.

    The match loop's view of a game: the seats acting now (several at a simultaneous turn),
    what each sees, what each may play, one turn's moves applied at once, and the outcome.
    :class:`OpenSpielSeats` implements it over OpenSpiel; a game with free-text moves returns
    an empty menu from :meth:`legal_moves` and validates the text in :meth:`apply`.
    """

    @property
    def num_seats(self) -> int:
        """Number of seats."""
        ...

    def acting_seats(self) -> tuple[int, ...]:
        """The seats that act now (empty once the game is over)."""
        ...

    def observation(self, seat: int) -> str:
        """What ``seat`` sees now, in words: never more than the seat may know."""
        ...

    def legal_moves(self, seat: int) -> Mapping[int, str]:
        """The menu of ``seat``: legal action id -> canonical text (empty when not acting)."""
        ...

    def apply(self, moves: Mapping[int, Move]) -> None:
        """Apply one turn: a move for every acting seat, all at once."""
        ...

    def is_terminal(self) -> bool:
        """Whether the game is over."""
        ...

    def returns(self) -> tuple[float, ...]:
        """Each seat's return so far."""
        ...


class OpenSpielSeats:
    """:class:`SeatedGame` over a pyspiel state (chance outcomes are the caller's to resolve).

    Args:
        state: the pyspiel state, played in place.
        observe: the text a seat sees, ``observe(state, seat)`` (a spec's ``observation_text``).
    """

    def __init__(self, state: pyspiel.State, observe: ObservationText) -> None:
        self.state = state
        self._observe = observe

    @property
    def num_seats(self) -> int:
        """Number of seats."""
        return int(self.state.num_players())

    def acting_seats(self) -> tuple[int, ...]:
        """See :func:`acting_seats`."""
        return acting_seats(self.state)

    def observation(self, seat: int) -> str:
        """The seat's text."""
        return self._observe(self.state, seat)

    def legal_moves(self, seat: int) -> dict[int, str]:
        """OpenSpiel's action strings of the seat's legal actions (empty when not acting)."""
        if seat not in self.acting_seats():
            return {}
        return {a: self.state.action_to_string(seat, a) for a in self.state.legal_actions(seat)}

    def apply(self, moves: Mapping[int, Move]) -> None:
        """Apply one turn of action ids (OpenSpiel games take no text moves)."""
        if not all(isinstance(move, int) for move in moves.values()):
            raise TypeError("OpenSpiel games take action ids, not text moves")
        apply_moves(self.state, {seat: int(move) for seat, move in moves.items()})

    def is_terminal(self) -> bool:
        """Whether the game is over."""
        return bool(self.state.is_terminal())

    def returns(self) -> tuple[float, ...]:
        """OpenSpiel's returns."""
        return tuple(float(r) for r in self.state.returns())


class ObservationText(Protocol):
    """``(state, seat) -> text``: what a seat sees (a :class:`GameSpec`'s ``observation_text``)."""

    def __call__(self, state: pyspiel.State, seat: int, /) -> str:
        """The text of ``seat`` in ``state``."""
        ...
