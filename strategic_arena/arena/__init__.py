"""The arena: matches between players (``match``); runs, store and metrics build on it."""

from strategic_arena.arena.match import MatchRecord, MoveRecord, play_match, play_match_sync

__all__ = ["MatchRecord", "MoveRecord", "play_match", "play_match_sync"]
