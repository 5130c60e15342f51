"""strategic-arena: text games over OpenSpiel for measuring and training language models.

The core API::

    import strategic_arena as sa
    env = sa.make("kuhn_poker-v0")          # a PettingZoo AECEnv with text observations
    env.reset(seed=0)
    view = env.seat_view(env.agent_selection)
    messages = sa.render_messages("kuhn_poker-v0", view, style="marshal")
    outcome = sa.validate("kuhn_poker-v0", response_text, view.legal_actions, style="marshal")

Importing this package loads numpy, gymnasium, pettingzoo and pyspiel only; solvers, the arena
client and the trainer import their heavy dependencies when first used.
"""

from __future__ import annotations

from strategic_arena.actions import ERROR_KINDS, Action, ActionError
from strategic_arena.arena.match import MatchRecord, MoveRecord, play_match, play_match_sync
from strategic_arena.asking import Asking, Sampling
from strategic_arena.env import IllegalActionError, TextGameEnv, make
from strategic_arena.games import get_spec, list_envs, list_text_envs
from strategic_arena.players import (
    Decision,
    GameState,
    HumanPlayer,
    LLMPlayer,
    Player,
    RandomPlayer,
)
from strategic_arena.prompting import render_messages
from strategic_arena.turn import IllegalMovePolicy, SeatInformation
from strategic_arena.validation import STYLES, validate
from strategic_arena.views import SeatView
from strategic_arena.wrappers import TextActionWrapper, register_envs, single_agent

__version__ = "0.1.0"

register_envs()  # gymnasium.make("strategic_arena/kuhn_poker-v0", text=False, ...)

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
    "__version__",
    "get_spec",
    "list_envs",
    "list_text_envs",
    "make",
    "play_match",
    "play_match_sync",
    "register_envs",
    "render_messages",
    "single_agent",
    "validate",
]
