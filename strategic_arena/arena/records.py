"""What the results store returns: frozen, typed records of runs, players, games and moves.

:class:`~strategic_arena.arena.store.ResultsStore` decodes its rows into these once, so callers
read attributes (``game.returns``) that the type checker follows, not string keys of dicts.
JSON-ready dicts, where a report or a leaderboard needs one, come from
:func:`dataclasses.asdict`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strategic_arena.actions import ActionError, Attempt


@dataclass(frozen=True)
class StoredRun:
    """A named run: its id, seed, public settings and creation time (seconds since the epoch)."""

    id: int
    name: str
    seed: int
    settings: Mapping[str, Any]
    created: float


@dataclass(frozen=True)
class StoredPlayer:
    """A registered participant: what it is and its public parameters (never secrets)."""

    name: str
    kind: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class StoredGame:
    """One stored game of a run.

    Attributes:
        id: the row id (``replay`` takes it).
        run_id: the run it belongs to.
        game_key: its key in the run (``env/seat0/seat1/index``).
        env_id: the game.
        seed: the env seed (fixes every chance event).
        players: player names by seat.
        returns: final returns by seat (zeros that mean nothing when incomplete).
        status: ``complete``, ``forfeit`` or ``incomplete`` (a player's server failed).
        forfeited_by: the seat that forfeited, if any.
        history: OpenSpiel's full action history.
        duration_s: wall-clock seconds the game took.
        finished: when it was stored (seconds since the epoch).
        infrastructure_error: what failed, for an incomplete game.
        prompts: the prompt set of each seat, ``{"name", "digest"}`` (``None`` for a seat that
            reads no prompt); empty for games stored before prompt sets were recorded.
    """

    id: int
    run_id: int
    game_key: str
    env_id: str
    seed: int
    players: tuple[str, ...]
    returns: tuple[float, ...]
    status: str
    forfeited_by: int | None
    history: tuple[int, ...]
    duration_s: float
    finished: float
    infrastructure_error: str | None = None
    prompts: tuple[Mapping[str, str] | None, ...] = ()

    @property
    def scored(self) -> bool:
        """Whether the game counts in scores, ratings and leaderboards (it is not incomplete)."""
        return self.status != "incomplete"


@dataclass(frozen=True)
class StoredMove:
    """One stored decision, with everything needed to show how it was made.

    Attributes:
        ply: 0-based index of the decision in the game.
        seat: who moved.
        action: the action id played (``None``: forfeited, or the decision failed).
        action_text: its canonical text.
        prompt: the chat messages shown.
        response: the final raw response.
        error: why the final response was not a legal move (the last error if retried).
        errors: every error along the way.
        failures: every failed request along the way.
        reasoning: reasoning returned apart from the text (last answer).
        finish_reason: the server's finish reason of the last answer.
        prompt_tokens / completion_tokens: token counts over every answer.
        latency_s: seconds the decision took.
        attempts: answers given (retries included).
        tries: every answer with the feedback sent after it (empty for bots, older stores).
    """

    ply: int
    seat: int
    action: int | None
    action_text: str
    prompt: tuple[Mapping[str, str], ...]
    response: str
    error: ActionError | None
    errors: tuple[ActionError, ...]
    failures: tuple[str, ...]
    reasoning: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    attempts: int
    tries: tuple[Attempt, ...] = ()


@dataclass(frozen=True)
class MoveStats:
    """The numbers of one stored decision, for metrics (no prompt or response text).

    Attributes:
        game_id: the game.
        seat: who moved.
        errors: the kind of every error along the way (retries included).
        failures: every failed request along the way.
        attempts: answers given.
        prompt_tokens / completion_tokens: token counts.
        latency_s: seconds the decision took.
    """

    game_id: int
    seat: int
    errors: tuple[str, ...]
    failures: tuple[str, ...]
    attempts: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
