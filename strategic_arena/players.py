"""The Player protocol and the built-in players: random, a human at the terminal, an LLM.

Every participant of a game -- solver, bot, human, language model -- is a :class:`Player`: an
object with a ``name`` and an ``async act(state, seat) -> Decision``. ``state`` is a
:class:`GameState`, a private copy of the OpenSpiel state plus the game spec; a player of an
imperfect-information game must read only what its seat may know (``state.view(seat)``,
``state.information_state(seat)``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyspiel

from strategic_arena.actions import (
    INFRASTRUCTURE_ERROR_KINDS,
    Action,
    ActionError,
    Attempt,
    ErrorKind,
    IllegalMovePolicy,
)
from strategic_arena.backends import ChatBackend
from strategic_arena.games import GameSpec, get_spec
from strategic_arena.prompting import render_messages
from strategic_arena.validation import Style, validate
from strategic_arena.views import SeatView, seat_view


@dataclass(frozen=True)
class GameState:
    """What a player is handed at its turn: the game and a private copy of the state.

    Attributes:
        env_id: the game.
        state: a copy of the OpenSpiel state (mutating it changes nothing in the match).
        game_spec: the spec, when ``env_id`` alone does not determine it.
    """

    env_id: str
    state: pyspiel.State
    game_spec: GameSpec | None = None

    @property
    def spec(self) -> GameSpec:
        """The game spec (``game_spec`` when given: ``openspiel/<name>`` games with parameters)."""
        return self.game_spec if self.game_spec is not None else get_spec(self.env_id)

    def legal_actions(self, seat: int) -> list[int]:
        """Legal action ids of ``seat`` (empty when it is not to move)."""
        return list(self.state.legal_actions(seat))

    def view(self, seat: int, *, history: bool = True) -> SeatView:
        """What ``seat`` sees, in words (for prompts)."""
        return seat_view(self.spec, self.state, seat, history=history)

    def information_state(self, seat: int) -> str:
        """OpenSpiel's information-state string of ``seat``."""
        return str(self.state.information_state_string(seat))


@dataclass(frozen=True)
class Decision:
    """A player's move and everything worth storing about how it was made.

    Attributes:
        action: the legal action id played, or ``None`` when the player produced no legal
            move (``error`` says why; the match applies its illegal-move policy).
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
        tries: every answer in order, with the feedback sent after it (the last is the final
            one); empty for players that do not ask a model.
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


@runtime_checkable
class Player(Protocol):
    """Anything that can take a seat: ``name`` and ``async act(state, seat) -> Decision``."""

    name: str

    async def act(self, state: GameState, seat: int) -> Decision:
        """Choose a move for ``seat`` in ``state``."""
        ...


class RandomPlayer:
    """Plays a uniformly random legal action, from its own seeded generator."""

    def __init__(self, seed: int | np.random.Generator | None = None, name: str = "random") -> None:
        self.name = name
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    async def act(self, state: GameState, seat: int) -> Decision:
        """A random legal action of ``seat``."""
        legal = state.legal_actions(seat)
        action = int(legal[int(self.rng.integers(len(legal)))])
        menu = state.spec.menu(state.state, seat)
        return Decision(action=action, text=menu[action])


class HumanPlayer:
    """A person at the terminal: sees the seat's view and types a move (any accepted notation).

    ``read_line`` and ``write`` default to ``input`` and ``print``; pass others to drive it
    from a program or a test.
    """

    def __init__(
        self,
        name: str = "human",
        read_line: Callable[[str], str] = input,
        write: Callable[[str], None] = print,
    ) -> None:
        self.name = name
        self.read_line = read_line
        self.write = write

    async def act(self, state: GameState, seat: int) -> Decision:
        """Show the view and ask until the typed move is legal (EOF gives up: no action)."""
        view = state.view(seat)
        self.write(f"\n{view.role}\n{view.text}")
        self.write("Legal actions: " + ", ".join(view.legal_actions.values()))
        errors: list[ActionError] = []
        while True:
            try:
                line = await asyncio.to_thread(self.read_line, "Your move: ")
            except EOFError:
                error = ActionError("no_action", "input ended")
                return Decision(None, "", error, attempts=len(errors) + 1, errors=(*errors, error))
            outcome = state.spec.grammar.parse(line, view.legal_actions)
            if isinstance(outcome, ActionError):
                errors.append(outcome)
                self.write(f"Not accepted ({outcome.kind}): {outcome.detail}")
                continue
            return Decision(
                outcome.id,
                line,
                errors[-1] if errors else None,
                attempts=len(errors) + 1,
                errors=tuple(errors),
            )


def is_interactive() -> bool:
    """Whether standard input is a terminal (a HumanPlayer can be asked)."""
    return sys.stdin.isatty()


#: Header carrying the decision (env id, history, seat, style) to ``strategic-arena serve``;
#: real model servers ignore unknown headers, so it is always sent.
GAME_HEADER = "X-Strategic-Arena-Game"


class LLMPlayer:
    """A language model behind a chat backend, playing through prompts and validation.

    Each decision renders the seat's prompt in ``style``, asks the backend, validates the reply
    and applies the illegal-move ``policy``: ``forfeit`` (no action: the match forfeits the
    seat, MARSHAL's protocol), ``retry:k`` (re-ask with the error as feedback, up to k times)
    or ``random`` (a random legal action from the player's own seeded generator). A backend that
    fails after its retries yields an ``endpoint`` or ``timeout`` error, to which no policy
    applies: the decision comes back without an action and the match stops the game as
    ``incomplete`` (:data:`~strategic_arena.actions.INFRASTRUCTURE_ERROR_KINDS`).
    The returned :class:`Decision` keeps the prompt, the reply, every error, tokens and latency.

    With ``game_header`` (default) each request also carries the decision -- env, full OpenSpiel
    history, seat, style -- in the :data:`GAME_HEADER` header, which ``strategic-arena serve``
    needs. The history includes hidden information (the opponent's cards): the model never sees
    headers, but a hosted API's operator could, so ``eval`` sends it only to arena servers.
    """

    def __init__(
        self,
        backend: ChatBackend,
        *,
        name: str | None = None,
        style: Style = "marshal",
        policy: str | IllegalMovePolicy = "forfeit",
        include_history: bool = False,
        strict: bool = True,
        seed: int | None = None,
        game_header: bool = True,
    ) -> None:
        self.backend = backend
        self.game_header = game_header
        self.name = name or backend.model
        self.style: Style = style
        self.policy = (
            policy if isinstance(policy, IllegalMovePolicy) else IllegalMovePolicy.parse(policy)
        )
        self.include_history = include_history
        self.strict = strict
        self.rng = np.random.default_rng(seed)

    async def act(self, state: GameState, seat: int) -> Decision:
        """Ask the model until it answers a legal move or the policy gives up."""
        spec = state.spec
        view = state.view(seat, history=self.include_history)
        prompt = render_messages(spec, view, self.style, include_history=self.include_history)
        game = {
            "env_id": state.env_id,
            "history": [int(a) for a in state.state.history()],
            "seat": seat,
            "style": self.style,
        }
        headers = {GAME_HEADER: json.dumps(game)} if self.game_header else {}
        conversation: list[Mapping[str, str]] = list(prompt)
        errors: list[ActionError] = []
        tries: list[Attempt] = []
        prompt_tokens = completion_tokens = 0
        latency = 0.0
        failures: list[str] = []
        content = ""
        while True:
            result = await self.backend.complete(conversation, headers=headers)
            prompt_tokens += result.prompt_tokens
            completion_tokens += result.completion_tokens
            latency += result.latency_s
            failures += result.failures
            content = result.content
            outcome: Action | ActionError
            if result.error is not None:
                kind: ErrorKind = "timeout" if result.error == "timeout" else "endpoint"
                outcome = ActionError(kind, "; ".join(result.failures[-3:]) or result.error)
            else:
                outcome = validate(
                    spec,
                    content,
                    view.legal_actions,
                    self.style,
                    strict=self.strict,
                    finish_reason=result.finish_reason,
                    reasoning=result.reasoning,
                )
            error = outcome if isinstance(outcome, ActionError) else None
            # The backend already retried a failed request: an infrastructure error is not the
            # model's, so no policy applies (the match stops; the game is replayed later).
            again = (
                error is not None
                and error.kind not in INFRASTRUCTURE_ERROR_KINDS
                and self.policy.kind == "retry"
                and len(errors) < self.policy.retries
            )
            feedback = (
                f"Your answer was not accepted ({error.kind}): {error.detail}. "
                "Answer again in the required format."
                if again and error is not None
                else None
            )
            tries.append(
                Attempt(
                    content,
                    error,
                    feedback,
                    result.reasoning,
                    result.finish_reason,
                    tuple(result.failures),
                )
            )
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
            common: dict[str, Any] = {
                "text": content,
                "usage": usage,
                "prompt": tuple(prompt),
                "attempts": len(tries),
                "latency_s": latency,
                "failures": tuple(failures),
                "reasoning": result.reasoning,
                "finish_reason": result.finish_reason,
                "tries": tuple(tries),
            }
            if isinstance(outcome, Action):
                last = errors[-1] if errors else None
                return Decision(outcome.id, error=last, errors=tuple(errors), **common)
            errors.append(outcome)
            if feedback is not None:
                conversation += [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": feedback},
                ]
                continue
            random_move = self.policy.kind == "random" and outcome.kind not in (
                INFRASTRUCTURE_ERROR_KINDS
            )
            if random_move and view.legal_actions:
                choice = int(self.rng.choice(list(view.legal_actions)))
                return Decision(choice, error=outcome, errors=tuple(errors), **common)
            return Decision(None, error=outcome, errors=tuple(errors), **common)
