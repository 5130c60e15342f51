"""The arena: matches between players (``match``); runs, store and metrics build on it.

The names below are imported from :mod:`strategic_arena.arena.match` on first use (module
``__getattr__``), so a light module of the arena -- its defaults, the sequential test's
options -- imports without OpenSpiel or numpy: the CLI's parsers read those to start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strategic_arena._lazy import lazy_attribute

if TYPE_CHECKING:  # the names for type checkers; at run time, __getattr__ below
    from strategic_arena.arena.match import MatchRecord, MoveRecord, play_match, play_match_sync

#: Each public name -> the module it is imported from on first use.
_HOMES: dict[str, str] = dict.fromkeys(
    ("MatchRecord", "MoveRecord", "play_match", "play_match_sync"), "match"
)

__all__ = ["MatchRecord", "MoveRecord", "play_match", "play_match_sync"]


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, _HOMES, globals(), name)
