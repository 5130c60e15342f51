"""Replay a stored game exactly: reset the env with the stored seed, apply the stored moves.

The seed fixes every chance event (deals, draws) and the moves fix every decision (one stored
move per acting seat at a simultaneous turn, applied together), so the replayed game must
reach the stored OpenSpiel history and returns; :func:`replay_game` checks both and says where
a replay diverges (a changed game version, a corrupted store). An
incomplete game (a server failed) replays up to its failed decision, and its returns, which
mean nothing, are not checked. :func:`final_state_text` says what the replayed game ended in,
labelled: what each seat saw, then OpenSpiel's own state string.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from strategic_arena.arena.records import StoredGame, StoredMove
from strategic_arena.arena.store import ResultsStore
from strategic_arena.door.printable import printable, printable_line
from strategic_arena.env import TextGameEnv, make
from strategic_arena.turn import Decision


class ReplayError(RuntimeError):
    """The stored moves do not reproduce the stored game."""


@dataclass(frozen=True)
class Replay:
    """A replayed game: the stored record, its moves and the env in its final state."""

    game: StoredGame
    moves: list[StoredMove]
    env: TextGameEnv


MoveHook = Callable[[StoredMove, TextGameEnv], None]


def replay_game(store: ResultsStore, game_id: int, on_move: MoveHook | None = None) -> Replay:
    """Replay stored game ``game_id``; ``on_move(move, env)`` sees each move before it is made.

    Raises:
        KeyError: no such game.
        ReplayError: a move's seat is not the one to move, an action is illegal, or the final
            history or returns differ from the stored ones.
    """
    game = store.game(game_id)
    moves = store.moves(game_id)
    env = make(game.env_id)
    env.reset(seed=game.seed)
    position = 0
    while position < len(moves):
        seats = env.acting_seats()
        first = moves[position]
        if not seats:
            raise ReplayError(f"move {first.ply}: the game was already over")
        # A simultaneous turn is one stored move per acting seat (in seat order; the failed
        # decision of an incomplete game last), applied together.
        turn = sorted(moves[position : position + len(seats)], key=lambda move: move.seat)
        position += len(seats)
        if tuple(move.seat for move in turn) != seats:
            expected = " and ".join(str(seat) for seat in seats)
            raise ReplayError(
                f"move {first.ply}: seat {expected} {'is' if len(seats) == 1 else 'are'} to "
                f"move, not {' and '.join(str(move.seat) for move in turn)}"
            )
        if on_move is not None:
            for move in turn:
                on_move(move, env)
        missing = [move for move in turn if move.action is None]
        if missing:
            if game.status == "incomplete":  # the failed decision: the game stopped here
                break
            env.forfeit(env.possible_agents[missing[0].seat])
            continue
        for move in turn:
            agent = env.possible_agents[move.seat]
            verdict = env.judge(agent, Decision(move.action, move_text=move.action_text))
            if verdict.outcome != "play" or verdict.text != move.action_text:
                raise ReplayError(
                    f"move {move.ply}: action {move.action} ({move.action_text!r}) is not legal "
                    "here"
                )
            env.play(verdict)
    history = tuple(int(a) for a in env.spiel_state.history())
    if history != game.history:
        raise ReplayError(f"history {list(history)} differs from the stored {list(game.history)}")
    if game.scored and tuple(float(r) for r in env.returns()) != game.returns:
        raise ReplayError(f"returns {env.returns()} differ from the stored {list(game.returns)}")
    return Replay(game, moves, env)


def final_state_text(replay: Replay) -> str:
    """The replayed game's final state, labelled, for a person reading a replay.

    Each seat's view in the prompts' words (one block when the seats see the same, as on a
    board), then the rules engine's raw state string -- OpenSpiel's is compact and
    game-specific (Kuhn Poker's ``"1 2 pp"``: the cards dealt, then the bets), so it is named
    as such rather than shown bare. Every text is escaped for the terminal: a free-text game's
    views and state quote what the players wrote.
    """
    env, game = replay.env, replay.game
    state = env.spiel_state
    # A free-text game's view quotes the players' own moves: escaped like every stored text.
    views = [
        printable(env.spec.observation_text(state, seat), keep_newlines=True)
        for seat in range(len(game.players))
    ]
    lines = ["=== final state"]
    if len(set(views)) == 1:
        lines += ["--- what every seat sees ---", views[0]]
    else:
        for seat, (name, view) in enumerate(zip(game.players, views, strict=True)):
            # The name may come from an endpoint: escaped before it reaches a terminal.
            lines += [f"--- what seat {seat} ({printable_line(name)}) sees ---", view]
    raw = printable(str(state), keep_newlines=True)
    lines += [f"--- {env.spec.rules_engine} state (raw, with every hidden card) ---", raw]
    return "\n".join(lines)


def replay(
    db: str | Path,
    game_id: int,
    on_move: MoveHook | None = None,
    on_start: Callable[[StoredGame], None] | None = None,
) -> Replay:
    """:func:`replay_game` on the results store at ``db`` (which must exist).

    ``on_start`` sees the stored game before its first move is replayed.

    Raises:
        ValueError: no results store at ``db`` (a replay never creates one).
        StoreError: ``db`` is not a results store.
        KeyError: no such game.
        ReplayError: the stored moves do not reproduce the stored game.
    """
    with ResultsStore.for_reading(db) as store:  # nothing written: archives replay too
        if on_start is not None:
            on_start(store.game(game_id))
        return replay_game(store, game_id, on_move)
