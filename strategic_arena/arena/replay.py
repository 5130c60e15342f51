"""Replay a stored game exactly: reset the env with the stored seed, apply the stored moves.

The seed fixes every chance event (deals, draws) and the moves fix every decision, so the
replayed game must reach the stored OpenSpiel history and returns; :func:`replay_game` checks
both and says where a replay diverges (a changed game version, a corrupted store).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from strategic_arena.arena.store import ResultsStore
from strategic_arena.env import TextGameEnv, make


class ReplayError(RuntimeError):
    """The stored moves do not reproduce the stored game."""


@dataclass(frozen=True)
class Replay:
    """A replayed game: the stored record, its moves and the env in its final state."""

    game: dict[str, Any]
    moves: list[dict[str, Any]]
    env: TextGameEnv


MoveHook = Callable[[dict[str, Any], TextGameEnv], None]


def replay_game(store: ResultsStore, game_id: int, on_move: MoveHook | None = None) -> Replay:
    """Replay stored game ``game_id``; ``on_move(move, env)`` sees each move before it is made.

    Raises:
        KeyError: no such game.
        ReplayError: a move's seat is not the one to move, an action is illegal, or the final
            history or returns differ from the stored ones.
    """
    game = store.game(game_id)
    moves = store.moves(game_id)
    env = make(game["env_id"])
    env.reset(seed=game["seed"])
    for move in moves:
        agent = env.agent_selection
        seat = env.agent_name_mapping[agent]
        if env.terminations[agent]:
            raise ReplayError(f"move {move['ply']}: the game was already over")
        if seat != move["seat"]:
            raise ReplayError(f"move {move['ply']}: seat {seat} is to move, not {move['seat']}")
        if on_move is not None:
            on_move(move, env)
        if move["action"] is None:
            env.forfeit(agent)
            continue
        legal = env.legal_action_texts(agent)
        if move["action"] not in legal or legal[move["action"]] != move["action_text"]:
            raise ReplayError(
                f"move {move['ply']}: action {move['action']} ({move['action_text']!r}) is not "
                "legal here"
            )
        env.step(move["action"])
    history = [int(a) for a in env.state.history()]
    if history != game["history"]:
        raise ReplayError(f"history {history} differs from the stored {game['history']}")
    if [float(r) for r in env.returns()] != [float(r) for r in game["returns"]]:
        raise ReplayError(f"returns {env.returns()} differ from the stored {game['returns']}")
    return Replay(game, moves, env)
