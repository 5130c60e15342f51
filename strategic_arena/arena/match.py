"""The one match loop: seats take turns through a :class:`TextGameEnv` until the game ends.

The arena, the tests, the demo and the trainer's rollouts all play through :func:`play_match`;
only the players differ. Each decision goes through :func:`strategic_arena.turn.judge`: a legal
action is played; a decision without one forfeits the seat (MARSHAL's protocol: the game ends
with :meth:`GameSpec.forfeit_returns`; a free-text game whose own rules refuse a played move
and end the game -- TextArena's, :meth:`TextGameEnv.refusal` -- is the offender's forfeit too,
with the game's returns and reason), unless its error is the infrastructure's (the endpoint
failed after its retries), which stops the game as ``incomplete``: its returns mean nothing and
it is excluded from every score. Players that re-ask (retry policies) do so inside their own
``act``.

Any number of seats. At a simultaneous turn (blotto, goofspiel) every acting seat is asked at
once -- concurrently, so endpoints answer in parallel (one player in several seats answers
them in seat order) -- each from its own copy of the state, which holds none of the others'
moves of that turn; the decisions are recorded in seat order
and the moves applied together. If any of them stops the game (an infrastructure error) the
game is incomplete; otherwise the first seat, in seat order, whose decision has no legal move
forfeits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from strategic_arena.actions import ActionError
from strategic_arena.env import TextGameEnv, make
from strategic_arena.prompt_sets import PromptSet
from strategic_arena.turn import Decision, GameState, Player

MatchStatus = Literal["complete", "forfeit", "incomplete"]


@dataclass(frozen=True)
class MoveRecord:
    """One decision of a match.

    Attributes:
        index: 0-based number of the decision in the game.
        seat: who moved.
        action: the action id played (``None`` for a forfeiting decision;
            :data:`~strategic_arena.actions.TEXT_MOVE` for a free-text move).
        action_text: canonical text of the action, or the free-text move exactly as played
            (empty when forfeited).
        response: the player's raw text.
        error: why the response was not a legal move (the last error if retried).
        decision: the full :class:`Decision` as the player returned it.
    """

    index: int
    seat: int
    action: int | None
    action_text: str
    response: str
    error: ActionError | None
    decision: Decision


@dataclass(frozen=True)
class MatchRecord:
    """A finished game: enough to store it and to replay it exactly from ``seed`` and moves.

    Attributes:
        env_id: the game.
        seed: the env seed (fixes every chance event).
        players: player names by seat.
        moves: every decision, in order.
        returns: final returns by seat.
        status: ``complete`` (the game ended by its rules), ``forfeit``, or ``incomplete``
            (stopped by an infrastructure failure; its returns are all 0 and mean nothing).
        forfeited_by: seat that forfeited, if any.
        history: OpenSpiel's full action history (chance outcomes included).
        duration_s: wall-clock seconds.
        infrastructure_error: the failure's detail, set iff ``status`` is ``incomplete`` (the
            failed decision is the last move, with no action).
        prompts: the prompt set each seat read (``{"name", "digest"}``; ``None`` for a seat
            that reads no prompt), from the players' ``prompts`` attribute.
    """

    env_id: str
    seed: int
    players: tuple[str, ...]
    moves: tuple[MoveRecord, ...]
    returns: tuple[float, ...]
    status: MatchStatus
    forfeited_by: int | None = None
    history: tuple[int, ...] = ()
    duration_s: float = 0.0
    infrastructure_error: str | None = None
    prompts: tuple[Mapping[str, str] | None, ...] = ()


MoveCallback = Callable[[MoveRecord, GameState], None]


async def play_match(
    env_id: str,
    players: Sequence[Player],
    seed: int,
    *,
    env: TextGameEnv | None = None,
    on_move: MoveCallback | None = None,
) -> MatchRecord:
    """Play one game of ``env_id`` between ``players`` (seat i is ``players[i]``).

    Args:
        env_id: the game.
        players: one player per seat.
        seed: the env seed (chance events); store it to replay the game.
        env: an env to reuse (reset here); a new one is made otherwise.
        on_move: called after every decision with its record and the state it was made in
            (the demo prints prompts and moves through it).
    """
    env = env if env is not None else make(env_id)
    spec = env.spec
    if len(players) != len(env.possible_agents):
        raise ValueError(
            f"{env_id} has {len(env.possible_agents)} seats but {len(players)} players were given"
        )
    started = time.perf_counter()
    env.reset(seed=seed)
    moves: list[MoveRecord] = []
    forfeited_by: int | None = None
    infrastructure_error: str | None = None
    while not env.terminations[env.agent_selection]:
        seats = env.acting_seats()
        # Each player gets a private copy it may explore; legality is judged on the real state.
        # At a simultaneous turn every copy predates every move of the turn.
        shown = [
            GameState(env_id, env.spiel_state.clone(), spec) if on_move is not None else None
            for _ in seats
        ]
        if len(seats) == 1:
            state = GameState(env_id, env.spiel_state.clone(), spec)
            decisions = [await players[seats[0]].act(state, seats[0])]
        else:
            decisions = await _ask_together(env_id, env, players, seats)
        # The env judges: a menu game's legal action, or a free-text game's move text.
        verdicts = [
            env.judge(env.possible_agents[seat], decision)
            for seat, decision in zip(seats, decisions, strict=True)
        ]
        order = list(range(len(seats)))
        failed = [i for i in order if verdicts[i].outcome == "incomplete"]
        if failed:  # the failed decision is the game's last move (MatchRecord says so)
            order = [i for i in order if i != failed[0]] + [failed[0]]
        for i in order:
            verdict = verdicts[i]
            record = MoveRecord(
                index=len(moves),
                seat=seats[i],
                action=verdict.action,
                action_text=verdict.text,
                response=decisions[i].text,
                error=verdict.error,
                decision=decisions[i],
            )
            moves.append(record)
            seen = shown[i]
            if on_move is not None and seen is not None:
                on_move(record, seen)
        offenders = [s for s, v in zip(seats, verdicts, strict=True) if v.outcome == "forfeit"]
        if failed:
            infrastructure_error = _detail(verdicts[failed[0]].error)
            break
        if offenders:
            forfeited_by = offenders[0]
            env.forfeit(env.possible_agents[forfeited_by])
            continue
        for seat, verdict in zip(seats, verdicts, strict=True):
            assert env.agent_selection == env.possible_agents[seat]  # seat order
            env.play(verdict)
        refusal = env.refusal()
        if refusal is not None:  # the game's own rules refused a move and ended the game
            forfeited_by = _refused(moves, *refusal)
    incomplete = infrastructure_error is not None
    return MatchRecord(
        env_id=env_id,
        seed=seed,
        players=tuple(player.name for player in players),
        moves=tuple(moves),
        returns=tuple(0.0 for _ in players) if incomplete else tuple(env.returns()),
        status="incomplete"
        if incomplete
        else "forfeit"
        if forfeited_by is not None
        else "complete",
        forfeited_by=forfeited_by,
        history=tuple(int(a) for a in env.spiel_state.history()),
        duration_s=time.perf_counter() - started,
        infrastructure_error=infrastructure_error,
        prompts=tuple(_prompt_record(player, env.spec.prompt_dir) for player in players),
    )


async def _ask_together(
    env_id: str, env: TextGameEnv, players: Sequence[Player], seats: Sequence[int]
) -> list[Decision]:
    """The decisions of a simultaneous turn, in seat order, each from its own copy of the state.

    Different players are asked concurrently (endpoints answer in parallel). One player in
    several seats (self-play) answers them one after the other in seat order, so that its own
    generator (a ``random`` illegal-move policy, shuffled menus) is drawn in a fixed order and
    the game replays exactly from its seeds.
    """
    by_player: dict[int, list[int]] = {}
    for seat in seats:
        by_player.setdefault(id(players[seat]), []).append(seat)

    async def in_turn(own: list[int]) -> list[tuple[int, Decision]]:
        answered = []
        for seat in own:
            state = GameState(env_id, env.spiel_state.clone(), env.spec)
            answered.append((seat, await players[seat].act(state, seat)))
        return answered

    groups = await asyncio.gather(*(in_turn(own) for own in by_player.values()))
    decided = dict(pair for group in groups for pair in group)
    return [decided[seat] for seat in seats]


def _refused(moves: list[MoveRecord], seat: int, reason: str) -> int:
    """Record ``seat``'s last move as refused by the game (``illegal_action``); returns ``seat``.

    A free-text game judges a move after it is played (TextArena's rules); when that ends the
    game (the offender's error allowance spent: SPIRAL plays with none) the game is the
    offender's forfeit, as if the move had been refused before it was played.
    """
    index = max(i for i, move in enumerate(moves) if move.seat == seat)
    moves[index] = dataclasses.replace(moves[index], error=ActionError("illegal_action", reason))
    return seat


def _prompt_record(player: Player, prompt_dir: str) -> Mapping[str, str] | None:
    """The prompt version a player reads for this game (a model player's ``prompts``), or ``None``.

    The record is the set's name and the digest of the files the game reads
    (:meth:`PromptSet.record`), so an edited prompt is a new version of its game only.
    """
    prompts = getattr(player, "prompts", None)
    return prompts.record(prompt_dir) if isinstance(prompts, PromptSet) else None


def _detail(error: ActionError | None) -> str:
    """``kind: detail`` of an infrastructure error."""
    return "unknown" if error is None else f"{error.kind}: {error.detail}"


def play_match_sync(
    env_id: str, players: Sequence[Player], seed: int, **kwargs: object
) -> MatchRecord:
    """:func:`play_match` for synchronous callers (runs its own event loop)."""
    return asyncio.run(play_match(env_id, players, seed, **kwargs))  # type: ignore[arg-type]
