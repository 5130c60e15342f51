"""An observation whose text is built when it is first read, not when it is made.

A game whose text costs far more than its step (Hanabi's: the hands, the hints, the last
round described from the replayed history, 2 ms against 0.07 ms for the step) would build it
at every ``last()`` even in a loop that reads only the tensor and the mask. A
:class:`LazyObservation` is the same ``dict`` -- the same keys, and every value read through
any door (``[]``, ``get``, ``items``, ``values``, iteration into ``dict(...)``, ``==``, pickling,
JSON) is the eager value -- but ``"text"`` is rendered on its first read and kept.

The text is of the state the observation was made in: the env calls :meth:`keep` before it
changes that state, which gives an unread observation a clone (a few microseconds) to render
from later.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, ValuesView
from typing import Any

import numpy as np
import pyspiel

#: Renders a seat's text of a state (a spec's ``observation_text``).
Render = Callable[[pyspiel.State, int], str]

#: What ``"text"`` holds until it is read (never handed out).
_UNREAD = object()


class LazyObservation(dict[str, Any]):
    """``{"observation": tensor, "action_mask": mask, "text": str}``, the text built on read."""

    def __init__(
        self,
        tensor: np.ndarray[Any, Any],
        mask: np.ndarray[Any, Any],
        render: Render,
        state: pyspiel.State,
        player: int,
    ) -> None:
        super().__init__(observation=tensor, action_mask=mask, text=_UNREAD)
        self._render: Render | None = render
        self._state: pyspiel.State | None = state
        self._player = player

    def keep(self, state: pyspiel.State) -> None:
        """``state`` is about to change: an unread text of it will be rendered from a clone."""
        if self._state is not None and self._state is state:
            self._state = state.clone()

    def _fill(self) -> None:
        """Render the text if it is still unread (every read of a value comes through here)."""
        render = self._render
        if render is not None:
            assert self._state is not None
            dict.__setitem__(self, "text", render(self._state, self._player))
            self._render = self._state = None

    def __getitem__(self, key: str) -> Any:
        if key == "text":
            self._fill()
        return dict.__getitem__(self, key)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        """``dict.get``, the text rendered first when it is asked for."""
        if key == "text":
            self._fill()
        return dict.get(self, key, default)

    def __iter__(self) -> Iterator[str]:
        # Defined (as dict's) so that dict(obs), {**obs} and update(obs) read the values
        # through __getitem__ instead of copying the storage, placeholder included.
        return dict.__iter__(self)

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        """``dict.items``, the text rendered first."""
        self._fill()
        return dict.items(self)

    def values(self) -> ValuesView[Any]:  # type: ignore[override]
        """``dict.values``, the text rendered first."""
        self._fill()
        return dict.values(self)

    def copy(self) -> dict[str, Any]:
        """A plain ``dict`` of the same values, the text rendered."""
        self._fill()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self._fill()
        if isinstance(other, LazyObservation):
            other._fill()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # as dict's

    def __repr__(self) -> str:
        self._fill()
        return dict.__repr__(self)

    @classmethod
    def rendered(cls, values: dict[str, Any]) -> LazyObservation:
        """An observation whose text is already there (a copy, an unpickled one, a forfeit's)."""
        made = cls.__new__(cls)
        dict.__init__(made, values)
        made._render = made._state = None
        made._player = -1
        return made

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        """Pickled and copied with its text rendered, as the same type.

        A ``copy.deepcopy`` of an observation compares equal to, and is of the type of, the
        env's next one (gymnasium's ``check_env`` compares a deep copy with a fresh
        observation, type included).
        """
        return LazyObservation.rendered, (self.copy(),)

    def __or__(self, other: Any) -> Any:
        return self.copy() | other

    def __ror__(self, other: Any) -> Any:
        return other | self.copy()

    # Every change of the dict renders the text first: it never overwrites a value set since.

    def __setitem__(self, key: str, value: Any) -> None:
        self._fill()
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self._fill()
        dict.__delitem__(self, key)

    def __ior__(self, other: Any) -> LazyObservation:  # type: ignore[override,misc]
        self._fill()
        dict.update(self, other)
        return self

    def update(self, *args: Any, **kwargs: Any) -> None:
        """``dict.update``, the text rendered first."""
        self._fill()
        dict.update(self, *args, **kwargs)

    def pop(self, key: str, *default: Any) -> Any:  # type: ignore[override]
        """``dict.pop``, the text rendered first."""
        self._fill()
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        """``dict.popitem``, the text rendered first."""
        self._fill()
        return dict.popitem(self)

    def setdefault(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        """``dict.setdefault``, the text rendered first."""
        self._fill()
        return dict.setdefault(self, key, default)

    def clear(self) -> None:
        """``dict.clear``, the text rendered first (so it is not put back)."""
        self._fill()
        dict.clear(self)
