"""What every opponent shares: the :class:`SolverPlayer` base and seeding helpers.

An opponent is a :class:`strategic_arena.Player`. Solvers decide synchronously (numba code
holds the CPU anyway), so they implement :meth:`SolverPlayer.choose` and the base class wraps
the chosen action id into a :class:`~strategic_arena.turn.Decision` with its canonical text.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import numpy as np

from strategic_arena.turn import Decision, GameState


class SolverPlayer(abc.ABC):
    """Base of the built-in opponents.

    Subclasses set ``supported_envs`` (the env ids they can play) and implement
    :meth:`choose`, reading the state only through what its seat may know: a
    perfect-information solver ``state.history()``, an imperfect-information one
    ``state.information_state(seat)``, ``state.observation(seat)`` or
    ``state.information(seat)``. Served by ``strategic-arena serve``, that is all there is.
    """

    supported_envs: ClassVar[tuple[str, ...]] = ()

    def __init__(self, env_id: str, name: str) -> None:
        if self.supported_envs and env_id not in self.supported_envs:
            raise ValueError(
                f"{type(self).__name__} plays {', '.join(self.supported_envs)}, not {env_id}"
            )
        self.env_id = env_id
        self.name = name

    @abc.abstractmethod
    def choose(self, state: GameState, seat: int) -> int:
        """The legal action id this opponent plays for ``seat`` in ``state``."""

    async def act(self, state: GameState, seat: int) -> Decision:
        """:meth:`choose`, wrapped as a :class:`Decision` with the action's canonical text."""
        action = int(self.choose(state, seat))
        menu = state.menu(seat)
        return Decision(action=action, text=menu[action])


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A generator from a seed, a generator (used as is) or ``None`` (fresh entropy)."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
