"""strategic-arena: text games over OpenSpiel for measuring and training language models.

The core API::

    import strategic_arena as sa
    env = sa.make("kuhn_poker-v0")          # a PettingZoo AECEnv with text observations
    env.reset(seed=0)
    view = env.seat_view(env.agent_selection)
    messages = sa.render_messages("kuhn_poker-v0", view, style="marshal")
    outcome = sa.validate("kuhn_poker-v0", response_text, view.legal_actions, style="marshal")
    blotto = sa.parallel_env("openspiel/blotto")  # the same games as a PettingZoo ParallelEnv

Importing this package imports nothing but the standard library: each name below is imported
from its module on first use (module ``__getattr__``), so a part that needs only torch and
numpy -- the learner, its memory estimate and sharding, on a GPU machine that has nothing
else -- imports without OpenSpiel, PettingZoo or gymnasium. The single-agent views are
registered with gymnasium (``gymnasium.make("strategic_arena/kuhn_poker-v0")``) as soon as
both this package and gymnasium are imported, in either order.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from strategic_arena._lazy import lazy_attribute

if TYPE_CHECKING:  # the names for type checkers; at run time, __getattr__ below
    from strategic_arena.actions import ERROR_KINDS, Action, ActionError
    from strategic_arena.arena.match import MatchRecord, MoveRecord, play_match, play_match_sync
    from strategic_arena.asking import Asking, Sampling
    from strategic_arena.env import IllegalActionError, TextGameEnv, make
    from strategic_arena.games import get_spec, list_envs, list_text_envs
    from strategic_arena.gym_registration import register_envs
    from strategic_arena.parallel import TextParallelEnv, parallel_env
    from strategic_arena.players import HumanPlayer, LLMPlayer, RandomPlayer
    from strategic_arena.prompting import render_messages
    from strategic_arena.turn import (
        Decision,
        GameState,
        IllegalMovePolicy,
        Player,
        SeatInformation,
    )
    from strategic_arena.validation import STYLES, validate
    from strategic_arena.views import SeatView
    from strategic_arena.wrappers import TextActionWrapper, single_agent

__version__ = "0.1.0"

#: Each public name -> the module it is imported from on first use.
_HOMES: dict[str, str] = {
    **dict.fromkeys(("ERROR_KINDS", "Action", "ActionError"), "actions"),
    **dict.fromkeys(("MatchRecord", "MoveRecord", "play_match", "play_match_sync"), "arena.match"),
    **dict.fromkeys(("Asking", "Sampling"), "asking"),
    **dict.fromkeys(("IllegalActionError", "TextGameEnv", "make"), "env"),
    **dict.fromkeys(("get_spec", "list_envs", "list_text_envs"), "games"),
    **dict.fromkeys(("HumanPlayer", "LLMPlayer", "RandomPlayer"), "players"),
    **dict.fromkeys(("TextParallelEnv", "parallel_env"), "parallel"),
    "render_messages": "prompting",
    **dict.fromkeys(
        ("Decision", "GameState", "IllegalMovePolicy", "Player", "SeatInformation"), "turn"
    ),
    **dict.fromkeys(("STYLES", "validate"), "validation"),
    "SeatView": "views",
    **dict.fromkeys(("TextActionWrapper", "single_agent"), "wrappers"),
    "register_envs": "gym_registration",
}

__all__ = [
    "ERROR_KINDS",
    "STYLES",
    "Action",
    "ActionError",
    "Asking",
    "Decision",
    "GameState",
    "HumanPlayer",
    "IllegalActionError",
    "IllegalMovePolicy",
    "LLMPlayer",
    "MatchRecord",
    "MoveRecord",
    "Player",
    "RandomPlayer",
    "Sampling",
    "SeatInformation",
    "SeatView",
    "TextActionWrapper",
    "TextGameEnv",
    "TextParallelEnv",
    "__version__",
    "get_spec",
    "list_envs",
    "list_text_envs",
    "make",
    "parallel_env",
    "play_match",
    "play_match_sync",
    "register_envs",
    "render_messages",
    "single_agent",
    "validate",
]


def __getattr__(name: str) -> Any:
    """A public name (imported from its module) or a submodule (``sa.wrappers``), on first use."""
    if name in _HOMES:
        return lazy_attribute(__name__, _HOMES, globals(), name)
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


def _register_with_gymnasium() -> None:
    """Register the single-agent views with gymnasium (a machine without the games: nothing)."""
    from strategic_arena.gym_registration import register_envs

    with contextlib.suppress(ImportError):  # gymnasium without OpenSpiel: no game to register
        register_envs()


class _AfterGymnasium(importlib.abc.MetaPathFinder):
    """Registers the views right after gymnasium's first import (once, then leaves)."""

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _register_with_gymnasium()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if "gymnasium" in sys.modules:
    _register_with_gymnasium()
else:
    sys.meta_path.insert(0, _AfterGymnasium())
