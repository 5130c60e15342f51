"""A seat's turn, in one place: what a player is shown, what it answers, and what the game does.

* :class:`GameState` -- what a player is handed at its turn. Players read it through accessors
  that return only what a seat may know (:meth:`GameState.information`,
  :meth:`GameState.legal_actions`, :meth:`GameState.view`, and :meth:`GameState.history` for
  perfect-information games). In process it wraps a private copy of the OpenSpiel state; behind
  ``strategic-arena serve`` it holds only the seat's :class:`SeatInformation`, so a served player
  cannot read what its seat may not know: the boundary holds by construction.
* :class:`SeatInformation` -- everything a seat may know at its decision, as JSON: OpenSpiel's
  information-state and observation strings of the seat, the public moves, the legal actions,
  and the full history only where the game has perfect information. It is all an endpoint ever
  receives about the game.
* :class:`Player` and :class:`Decision` -- ``async act(state, seat) -> Decision``.
* :class:`IllegalMovePolicy` -- the one rule for an answer that is not a legal move:
  :meth:`IllegalMovePolicy.rule` says retry, random or forfeit, and an infrastructure failure
  (:data:`~strategic_arena.actions.INFRASTRUCTURE_ERROR_KINDS`, already retried by the backend)
  always stops the game as *incomplete* instead: a flaky server is not a weak model.
* :func:`judge` -- what the game does with a final decision (play, forfeit, incomplete), used by
  the match loop, the single-agent env and ``serve``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import pyspiel

from strategic_arena.actions import INFRASTRUCTURE_ERROR_KINDS, TEXT_MOVE, ActionError, Attempt
from strategic_arena.games import GameSpec, get_spec
from strategic_arena.games.seats import acting_seats
from strategic_arena.traces import TokenTrace
from strategic_arena.views import SeatView, seat_view


@dataclass(frozen=True)
class SeatInformation:
    """What one seat may know at its decision: all an endpoint receives about the game.

    Attributes:
        env_id: the game.
        seat: the seat to move.
        information_state: OpenSpiel's ``information_state_string(seat)`` (``None`` where the
            game has none, e.g. Hanabi).
        observation: OpenSpiel's ``observation_string(seat)`` (``None`` where the game has none).
        public_moves: every public move so far as ``(seat, action)``, oldest first (chance
            outcomes never appear; games whose moves are private list none).
        legal_actions: the seat's legal actions with their canonical texts.
        history: OpenSpiel's full action history, only in perfect-information games (where it
            hides nothing); ``None`` otherwise.
    """

    env_id: str
    seat: int
    information_state: str | None
    observation: str | None
    public_moves: tuple[tuple[int, int], ...]
    legal_actions: Mapping[int, str]
    history: tuple[int, ...] | None = None

    @classmethod
    def of(cls, spec: GameSpec, state: pyspiel.State, seat: int) -> SeatInformation:
        """The information of ``seat`` in ``state`` (it need not be the seat to move)."""
        game_type = spec.game.get_type()
        perfect = game_type.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        to_move = seat in acting_seats(state)
        return cls(
            env_id=spec.env_id,
            seat=seat,
            information_state=str(state.information_state_string(seat))
            if game_type.provides_information_state_string
            else None,
            observation=str(state.observation_string(seat))
            if game_type.provides_observation_string
            else None,
            public_moves=_public_moves(spec, state, perfect),
            legal_actions=spec.menu(state, seat) if to_move else {},
            history=tuple(int(a) for a in state.history()) if perfect else None,
        )

    def payload(self) -> dict[str, Any]:
        """The JSON object of this information (see :meth:`from_payload`)."""
        return {
            "env_id": self.env_id,
            "seat": self.seat,
            "information_state": self.information_state,
            "observation": self.observation,
            "public_moves": [list(move) for move in self.public_moves],
            "legal_actions": {str(a): text for a, text in sorted(self.legal_actions.items())},
            "history": None if self.history is None else list(self.history),
        }

    @classmethod
    def from_payload(cls, payload: Any) -> SeatInformation:
        """Read and check a :meth:`payload` object (``ValueError`` says what is wrong)."""
        if not isinstance(payload, dict):
            raise ValueError("the seat information must be a JSON object")
        env_id, seat = payload.get("env_id"), payload.get("seat")
        if not isinstance(env_id, str):
            raise ValueError("env_id must be a string")
        if not isinstance(seat, int) or isinstance(seat, bool):
            raise ValueError("seat must be an integer")
        strings = {}
        for key in ("information_state", "observation"):
            value = payload.get(key)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{key} must be a string or null")
            strings[key] = value
        moves = payload.get("public_moves", [])
        if not isinstance(moves, list) or not all(
            isinstance(m, list) and len(m) == 2 and all(map(_is_int, m)) for m in moves
        ):
            raise ValueError("public_moves must be a list of [seat, action] pairs")
        legal = payload.get("legal_actions")
        if (
            not isinstance(legal, dict)
            or not all(isinstance(t, str) for t in legal.values())
            or not all(re.fullmatch(r"\d+", k) for k in legal)
        ):
            raise ValueError("legal_actions must map action ids to their texts")
        history = payload.get("history")
        if history is not None and (
            not isinstance(history, list) or not all(map(_is_int, history))
        ):
            raise ValueError("history must be a list of action ids or null")
        return cls(
            env_id=env_id,
            seat=seat,
            information_state=strings["information_state"],
            observation=strings["observation"],
            public_moves=tuple((int(s), int(a)) for s, a in moves),
            legal_actions={int(a): text for a, text in legal.items()},
            history=None if history is None else tuple(history),
        )


def _is_int(value: object) -> bool:
    """An integer that is not a bool (JSON ``true`` decodes to one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _public_moves(
    spec: GameSpec, state: pyspiel.State, perfect: bool
) -> tuple[tuple[int, int], ...]:
    """The ``(seat, action)`` moves of ``state`` everyone saw (none where moves are private)."""
    if not (perfect or spec.public_moves):
        return ()
    return tuple(
        (int(item.player), int(item.action)) for item in state.full_history() if item.player >= 0
    )


@dataclass(frozen=True)
class GameState:
    """What a player is handed at its turn; read it through its accessors.

    Built in process as ``GameState(env_id, spiel_state, spec)`` around a private copy of the
    OpenSpiel state (mutating it changes nothing in the match), or by
    :meth:`from_information` around one seat's :class:`SeatInformation` alone (``serve``), where
    nothing else exists to be read. The accessors behave the same either way.

    Attributes:
        env_id: the game.
        spiel_state: a copy of the OpenSpiel state, or ``None`` when only ``known`` is given.
        game_spec: the spec, when ``env_id`` alone does not determine it.
        known: the one seat's information, when there is no state.
    """

    env_id: str
    spiel_state: pyspiel.State | None
    game_spec: GameSpec | None = None
    known: SeatInformation | None = None

    def __post_init__(self) -> None:
        if (self.spiel_state is None) == (self.known is None):
            raise ValueError("a GameState holds either an OpenSpiel state or seat information")

    @classmethod
    def from_information(
        cls, information: SeatInformation, spec: GameSpec | None = None
    ) -> GameState:
        """A state that knows only ``information`` (what an endpoint receives)."""
        return cls(information.env_id, None, spec, information)

    @property
    def spec(self) -> GameSpec:
        """The game spec (``game_spec`` when given: ``openspiel/<name>`` games with parameters)."""
        return self.game_spec if self.game_spec is not None else get_spec(self.env_id)

    @property
    def perfect_information(self) -> bool:
        """Whether nothing in the game is hidden from any seat."""
        information = self.spec.game.get_type().information
        return bool(information == pyspiel.GameType.Information.PERFECT_INFORMATION)

    def information(self, seat: int) -> SeatInformation:
        """Everything ``seat`` may know now."""
        if self.spiel_state is not None:
            return SeatInformation.of(self.spec, self.spiel_state, seat)
        assert self.known is not None  # __post_init__
        if self.known.seat != seat:
            raise ValueError(f"only the information of another seat is known, not seat {seat}'s")
        return self.known

    def legal_actions(self, seat: int) -> list[int]:
        """Legal action ids of ``seat`` (empty when it is not to move)."""
        if self.spiel_state is not None:
            return [int(a) for a in self.spiel_state.legal_actions(seat)]
        return list(self.information(seat).legal_actions)

    def menu(self, seat: int) -> dict[int, str]:
        """Legal actions of ``seat`` with their canonical texts."""
        if self.spiel_state is not None:
            return self.spec.menu(self.spiel_state, seat)
        return dict(self.information(seat).legal_actions)

    def information_state(self, seat: int) -> str:
        """OpenSpiel's information-state string of ``seat``."""
        if self.spiel_state is not None:
            return str(self.spiel_state.information_state_string(seat))
        text = self.information(seat).information_state
        if text is None:
            raise ValueError(f"{self.env_id} has no information-state string")
        return text

    def observation(self, seat: int) -> str:
        """OpenSpiel's observation string of ``seat``."""
        if self.spiel_state is not None:
            return str(self.spiel_state.observation_string(seat))
        text = self.information(seat).observation
        if text is None:
            raise ValueError(f"{self.env_id} has no observation string")
        return text

    def public_moves(self) -> tuple[tuple[int, int], ...]:
        """Every public move so far as ``(seat, action)``, oldest first (no chance outcomes)."""
        if self.spiel_state is not None:
            return _public_moves(self.spec, self.spiel_state, self.perfect_information)
        assert self.known is not None  # __post_init__
        return self.known.public_moves

    def history(self) -> list[int]:
        """OpenSpiel's full action history: perfect-information games only (it hides nothing).

        Raises:
            ValueError: in an imperfect-information game, where the history holds hidden
                chance outcomes (cards); read :meth:`information` instead.
        """
        if not self.perfect_information:
            raise ValueError(
                f"{self.env_id} hides information: a player reads its seat's information, "
                "not the full history"
            )
        if self.spiel_state is not None:
            return [int(a) for a in self.spiel_state.history()]
        assert self.known is not None  # __post_init__
        if self.known.history is None:
            raise ValueError("the seat information carries no history")
        return list(self.known.history)

    def view(self, seat: int, *, history: bool = True) -> SeatView:
        """What ``seat`` sees, in words (for prompts); needs the in-process state."""
        if self.spiel_state is None:
            raise ValueError("a state built from seat information has no text view")
        return seat_view(self.spec, self.spiel_state, seat, history=history)


@dataclass(frozen=True)
class Decision:
    """A player's move and everything worth storing about how it was made.

    Attributes:
        action: the legal action id played, or ``None`` when the player produced no legal
            move (``error`` says why; the match forfeits the seat, or stops the game as
            incomplete when the error is the infrastructure's).
        text: the raw response (a model's text) or the move's canonical text (a bot).
        error: the last error, when the move was invalid or needed retries.
        usage: token counts and similar numbers (``prompt_tokens``, ``completion_tokens``...).
        prompt: the chat messages the player was shown, if any.
        attempts: how many answers the player gave for this move (retries included).
        latency_s: wall-clock seconds the decision took (0 for instant bots).
        errors: every error along the way, for retry policies.
        failures: every failed request along the way (``"429: ..."``, ``"timeout"``...),
            including those the backend retried successfully.
        reasoning: reasoning the server returned apart from the text (last answer), if any.
        finish_reason: the server's finish reason of the last answer (``stop``, ``length``).
        tries: every answer in order with what was said about it (the last is the final one).
        trace: token ids and log-probs of the final answer, from backends that return them
            (the trainer's); ``None`` otherwise.
        move_text: the move as read from the answer; a free-text game plays this text
            (``action`` is then :data:`~strategic_arena.actions.TEXT_MOVE`).
    """

    action: int | None
    text: str = ""
    error: ActionError | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    prompt: tuple[Mapping[str, str], ...] = ()
    attempts: int = 1
    latency_s: float = 0.0
    errors: tuple[ActionError, ...] = ()
    failures: tuple[str, ...] = ()
    reasoning: str | None = None
    finish_reason: str | None = None
    tries: tuple[Attempt, ...] = ()
    trace: TokenTrace | None = None
    move_text: str | None = None


@runtime_checkable
class Player(Protocol):
    """Anything that can take a seat: ``name`` and ``async act(state, seat) -> Decision``."""

    name: str

    async def act(self, state: GameState, seat: int) -> Decision:
        """Choose a move for ``seat`` in ``state``."""
        ...


# -- the illegal-move policy -------------------------------------------------------------------

Ruling = Literal["retry", "random", "forfeit", "stop"]
"""What happens after an answer that is not a legal move: ``stop`` ends the game as incomplete."""

_RETRY = re.compile(r"^retry:(\d+)$")


@dataclass(frozen=True)
class IllegalMovePolicy:
    """What happens when a response is not a legal move.

    Attributes:
        kind: ``forfeit`` (the offender loses at once, as in MARSHAL), ``retry`` (re-ask with
            the error as feedback, then forfeit) or ``random`` (play a random legal action).
        retries: for ``retry``: how many re-asks before forfeiting.
    """

    kind: Literal["forfeit", "retry", "random"]
    retries: int = 0

    @classmethod
    def parse(cls, text: str) -> IllegalMovePolicy:
        """``"forfeit"``, ``"random"`` or ``"retry:k"`` (k >= 0)."""
        if text in ("forfeit", "random"):
            return cls(text)  # type: ignore[arg-type]
        match = _RETRY.match(text)
        if match:
            return cls("retry", int(match.group(1)))
        raise ValueError(
            f"unknown illegal-move policy {text!r}; use 'forfeit', 'random' or 'retry:K' "
            "(e.g. retry:2)"
        )

    @classmethod
    def of(cls, policy: str | IllegalMovePolicy) -> IllegalMovePolicy:
        """``policy`` itself, or parsed from its text."""
        return policy if isinstance(policy, IllegalMovePolicy) else cls.parse(policy)

    def rule(self, error: ActionError, invalid_answers: int) -> Ruling:
        """The one decision after an invalid answer; ``invalid_answers`` counts it too.

        An infrastructure error (the endpoint failed after the backend's own retries) is no
        answer at all: the game stops as incomplete and no policy applies.
        """
        if error.kind in INFRASTRUCTURE_ERROR_KINDS:
            return "stop"
        if self.kind == "retry" and invalid_answers <= self.retries:
            return "retry"
        return self.kind if self.kind == "random" else "forfeit"


def random_legal_action(legal: Collection[int], rng: np.random.Generator) -> int:
    """The ``random`` policy's substitute for an invalid answer: a uniform legal action."""
    return int(rng.choice(sorted(legal)))


def final_answer_invalid(attempts: int, errors: Collection[object]) -> bool:
    """Whether a decision's last answer was invalid: every one of its answers had an error.

    A decision keeps the error of a re-asked answer even when the next answer was legal, so
    ``error`` alone cannot tell "valid after a retry" from "replaced by a random move".
    """
    return len(errors) >= attempts


def feedback(error: ActionError) -> str:
    """The message a re-asked player gets after an invalid answer."""
    return (
        f"Your answer was not accepted ({error.kind}): {error.detail}. "
        "Answer again in the required format."
    )


# -- what the game does with a decision --------------------------------------------------------

Outcome = Literal["play", "forfeit", "incomplete"]


@dataclass(frozen=True)
class Verdict:
    """What the game does with a final decision.

    Attributes:
        outcome: ``play`` the action, ``forfeit`` the seat (MARSHAL's protocol), or stop the
            game as ``incomplete`` (an infrastructure failure: not the player's fault).
        action: the legal action to play (``play`` only).
        error: why the decision is not played, or the player's last error of a played move.
        text: the text of the move played: the menu's canonical text, or a free-text move
            (``play`` only; what the store keeps as the move's ``action_text``).
    """

    outcome: Outcome
    action: int | None
    error: ActionError | None
    text: str = ""


def judge(decision: Decision, legal: Collection[int]) -> Verdict:
    """Play a legal action; else stop (infrastructure error) or forfeit (anything else).

    ``legal`` may be the menu (a mapping): the verdict then carries the action's text.
    """
    if decision.action is not None and decision.action in legal:
        text = legal[decision.action] if isinstance(legal, Mapping) else ""
        return Verdict("play", decision.action, decision.error, text)
    return _not_played(decision)


def judge_text(decision: Decision) -> Verdict:
    """Free text: play the decision's move text (the game judges it); else as :func:`judge`."""
    if decision.action == TEXT_MOVE and decision.move_text:
        return Verdict("play", TEXT_MOVE, decision.error, decision.move_text)
    return _not_played(decision)


def judge_response(decision: Decision) -> Verdict:
    """The whole response is the move (``GameSpec.move_is_response``): play it, even malformed.

    The response is ``decision.text`` (a replay, which has no response, passes the stored move
    as ``move_text``); a decision the player's answer style refused is played all the same, its
    error kept with the move (errors are data: the game scores a malformed answer). Only an
    infrastructure failure stops the game (incomplete).
    """
    error = decision.error
    if decision.action is None and error is not None and error.kind in INFRASTRUCTURE_ERROR_KINDS:
        return Verdict("incomplete", None, error)
    return Verdict("play", TEXT_MOVE, error, decision.text or decision.move_text or "")


def _not_played(decision: Decision) -> Verdict:
    """Stop (infrastructure error) or forfeit (anything else) a decision without a move."""
    error = decision.error
    if error is None:
        error = ActionError("illegal_action", f"player returned action {decision.action}")
    if error.kind in INFRASTRUCTURE_ERROR_KINDS:
        return Verdict("incomplete", None, error)
    return Verdict("forfeit", None, error)
