"""The Player protocol and the built-in players: random and a human at the terminal.

Every participant of a game -- solver, bot, human, language model -- is a :class:`Player`: an
object with a ``name`` and an ``async act(state, seat) -> Decision``. ``state`` is a
:class:`GameState`, a private copy of the OpenSpiel state plus the game spec; a player of an
imperfect-information game must read only what its seat may know (``state.view(seat)``,
``state.information_state(seat)``).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import pyspiel

from strategic_arena.actions import ActionError
from strategic_arena.games import GameSpec, get_spec
from strategic_arena.views import SeatView, seat_view


@dataclass(frozen=True)
class GameState:
    """What a player is handed at its turn: the game and a private copy of the state.

    Attributes:
        env_id: the game.
        state: a copy of the OpenSpiel state (mutating it changes nothing in the match).
        game_spec: the spec, when ``env_id`` alone does not determine it.
    """

    env_id: str
    state: pyspiel.State
    game_spec: GameSpec | None = None

    @property
    def spec(self) -> GameSpec:
        """The game spec (``game_spec`` when given: ``openspiel/<name>`` games with parameters)."""
        return self.game_spec if self.game_spec is not None else get_spec(self.env_id)

    def legal_actions(self, seat: int) -> list[int]:
        """Legal action ids of ``seat`` (empty when it is not to move)."""
        return list(self.state.legal_actions(seat))

    def view(self, seat: int, *, history: bool = True) -> SeatView:
        """What ``seat`` sees, in words (for prompts)."""
        return seat_view(self.spec, self.state, seat, history=history)

    def information_state(self, seat: int) -> str:
        """OpenSpiel's information-state string of ``seat``."""
        return str(self.state.information_state_string(seat))


@dataclass(frozen=True)
class Decision:
    """A player's move and everything worth storing about how it was made.

    Attributes:
        action: the legal action id played, or ``None`` when the player produced no legal
            move (``error`` says why; the match applies its illegal-move policy).
        text: the raw response (a model's text) or the move's canonical text (a bot).
        error: the last error, when the move was invalid or needed retries.
        usage: token counts and similar numbers (``prompt_tokens``, ``completion_tokens``...).
        prompt: the chat messages the player was shown, if any.
        attempts: how many answers the player gave for this move (retries included).
        latency_s: wall-clock seconds the decision took (0 for instant bots).
        errors: every error along the way, for retry policies.
    """

    action: int | None
    text: str = ""
    error: ActionError | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    prompt: tuple[Mapping[str, str], ...] = ()
    attempts: int = 1
    latency_s: float = 0.0
    errors: tuple[ActionError, ...] = ()


@runtime_checkable
class Player(Protocol):
    """Anything that can take a seat: ``name`` and ``async act(state, seat) -> Decision``."""

    name: str

    async def act(self, state: GameState, seat: int) -> Decision:
        """Choose a move for ``seat`` in ``state``."""
        ...


class RandomPlayer:
    """Plays a uniformly random legal action, from its own seeded generator."""

    def __init__(self, seed: int | np.random.Generator | None = None, name: str = "random") -> None:
        self.name = name
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    async def act(self, state: GameState, seat: int) -> Decision:
        """A random legal action of ``seat``."""
        legal = state.legal_actions(seat)
        action = int(legal[int(self.rng.integers(len(legal)))])
        menu = state.spec.menu(state.state, seat)
        return Decision(action=action, text=menu[action])


class HumanPlayer:
    """A person at the terminal: sees the seat's view and types a move (any accepted notation).

    ``read_line`` and ``write`` default to ``input`` and ``print``; pass others to drive it
    from a program or a test.
    """

    def __init__(
        self,
        name: str = "human",
        read_line: Callable[[str], str] = input,
        write: Callable[[str], None] = print,
    ) -> None:
        self.name = name
        self.read_line = read_line
        self.write = write

    async def act(self, state: GameState, seat: int) -> Decision:
        """Show the view and ask until the typed move is legal (EOF gives up: no action)."""
        view = state.view(seat)
        self.write(f"\n{view.role}\n{view.text}")
        self.write("Legal actions: " + ", ".join(view.legal_actions.values()))
        errors: list[ActionError] = []
        while True:
            try:
                line = await asyncio.to_thread(self.read_line, "Your move: ")
            except EOFError:
                error = ActionError("no_action", "input ended")
                return Decision(None, "", error, attempts=len(errors) + 1, errors=(*errors, error))
            outcome = state.spec.grammar.parse(line, view.legal_actions)
            if isinstance(outcome, ActionError):
                errors.append(outcome)
                self.write(f"Not accepted ({outcome.kind}): {outcome.detail}")
                continue
            return Decision(
                outcome.id,
                line,
                errors[-1] if errors else None,
                attempts=len(errors) + 1,
                errors=tuple(errors),
            )


def is_interactive() -> bool:
    """Whether standard input is a terminal (a HumanPlayer can be asked)."""
    return sys.stdin.isatty()
