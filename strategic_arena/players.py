"""The built-in players: random, a human at the terminal, and the one model player.

Every participant of a game -- solver, bot, human, language model -- is a
:class:`~strategic_arena.turn.Player` (``name`` and ``async act(state, seat) -> Decision``,
defined with :class:`~strategic_arena.turn.GameState` and
:class:`~strategic_arena.turn.Decision` in :mod:`strategic_arena.turn`, their one address).
:class:`LLMPlayer` is the one model player: prompts, validation, the illegal-move policy and the
record of every attempt, over any :class:`ChatBackend` -- an OpenAI-compatible endpoint
(:class:`~strategic_arena.backends.OpenAIBackend`) or the trainer's engine
(:class:`strategic_arena.train.loop.rollout.EngineBackend`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from strategic_arena.actions import TEXT_MOVE, Action, ActionError, Attempt, ErrorKind
from strategic_arena.asking import Asking
from strategic_arena.backends import ChatBackend
from strategic_arena.game_header import GAME_HEADER, game_header
from strategic_arena.prompting import render_messages
from strategic_arena.styles import AnswerStyle, get_style
from strategic_arena.turn import (
    Decision,
    GameState,
    IllegalMovePolicy,
    feedback,
    random_legal_action,
)
from strategic_arena.validation import history_text, validate

__all__ = [
    "GAME_HEADER",
    "HumanPlayer",
    "LLMPlayer",
    "RandomPlayer",
    "game_header",
]


class RandomPlayer:
    """Plays a uniformly random legal action, from its own seeded generator.

    In a free-text game it plays one of the spec's ``sample_moves`` (the game judges it).
    """

    def __init__(self, seed: int | np.random.Generator | None = None, name: str = "random") -> None:
        self.name = name
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    async def act(self, state: GameState, seat: int) -> Decision:
        """A random legal action of ``seat`` (a free-text game: one of its sample moves)."""
        spec = state.spec
        if spec.move_kind == "text":
            move = spec.sample_moves[int(self.rng.integers(len(spec.sample_moves)))]
            return Decision(action=TEXT_MOVE, text=move, move_text=move)
        menu = state.menu(seat)
        legal = sorted(menu)
        action = int(legal[int(self.rng.integers(len(legal)))])
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
        if view.legal_actions:  # a free-text game has none: its view says how to move
            self.write("Legal actions: " + ", ".join(view.legal_actions.values()))
        errors: list[ActionError] = []
        tries: list[Attempt] = []
        while True:
            try:
                line = await asyncio.to_thread(self.read_line, "Your move: ")
            except EOFError:
                error = ActionError("no_action", "input ended")
                tries.append(Attempt("", error))
                return Decision(
                    None,
                    "",
                    error,
                    attempts=len(tries),
                    errors=(*errors, error),
                    tries=tuple(tries),
                )
            outcome = state.spec.grammar.parse(line, view.legal_actions)
            if isinstance(outcome, ActionError):
                errors.append(outcome)
                said = f"Not accepted ({outcome.kind}): {outcome.detail}"
                tries.append(Attempt(line, outcome, said))
                self.write(said)
                continue
            tries.append(Attempt(line))
            return Decision(
                outcome.id,
                line,
                errors[-1] if errors else None,
                attempts=len(tries),
                errors=tuple(errors),
                tries=tuple(tries),
                move_text=outcome.text,
            )


class LLMPlayer:
    """The one model player: a language model behind a chat backend.

    Each decision renders the seat's prompt in ``style``, asks the backend, validates the reply
    and applies the illegal-move ``policy`` (:meth:`IllegalMovePolicy.rule`): ``forfeit`` (no
    action: the match forfeits the seat, MARSHAL's protocol), ``retry:k`` (re-ask with the error
    as feedback, up to k times) or ``random`` (a random legal action from the player's own
    seeded generator). A backend that fails after its own retries yields an ``endpoint`` or
    ``timeout`` error that no policy touches: the match stops the game as incomplete. The
    :class:`Decision` keeps the prompt, every attempt (:class:`Attempt`: reply, error, feedback
    sent), tokens, latency and, from backends that return them, the token ids and log-probs
    of the final answer (:attr:`Decision.trace`, the trainer's data).

    Each request carries the seat's information in the :data:`GAME_HEADER` header, which
    ``strategic-arena serve`` answers from; it reveals nothing the seat may not know, and stays
    within :data:`~strategic_arena.game_header.GAME_HEADER_CAP` bytes
    (:mod:`strategic_arena.game_header`: a compact form or the game's identity past it).

    Each request carries the style's request options (:meth:`AnswerStyle.request_options`: in
    the ``tools`` style the ``play(move)`` tool, legal moves as its enum, and a forced call).

    How the model is asked -- style, strictness, reasoning, history, menu order
    (``shuffle_actions`` draws it from the player's seeded generator), policy, prompt set --
    is one :class:`~strategic_arena.asking.Asking` (default: the backend's, if it has one --
    :class:`~strategic_arena.backends.OpenAIBackend` does, as it sends the template kwargs,
    extra body and prefix of the same settings -- else the defaults); how it samples belongs
    to the backend. A model player is made in two places only, each passing one ``Asking``:
    the arena's entrant (:meth:`strategic_arena.arena.runner.Entrant.llm`, which ``eval`` and
    the trainer's endpoint opponents use) and the trainer's engine player
    (:func:`strategic_arena.train.loop.rollout.configured_player`). A style is a registered name
    (:func:`strategic_arena.styles.register` adds one).
    """

    def __init__(
        self,
        backend: ChatBackend,
        asking: Asking | None = None,
        *,
        name: str | None = None,
        seed: int | None = None,
    ) -> None:
        self.backend = backend
        self.asking = asking or getattr(backend, "asking", None) or Asking()
        self.prompts = self.asking.prompt_set()
        self.name = name or backend.model
        self.style: AnswerStyle = get_style(self.asking.style)
        self.policy = IllegalMovePolicy.parse(self.asking.policy)
        self.rng = np.random.default_rng(seed)

    async def act(self, state: GameState, seat: int) -> Decision:
        """Ask the model until it answers a legal move or the policy says otherwise."""
        spec = state.spec
        view = state.view(seat, history=self.asking.include_history)
        order = None
        if self.asking.shuffle_actions:
            order = [int(a) for a in self.rng.permutation(list(view.legal_actions))]
        prompt = render_messages(
            spec,
            view,
            self.style,
            include_history=self.asking.include_history,
            action_order=order,
            prompts=self.prompts,
        )
        headers = {GAME_HEADER: game_header(state.information(seat), self.style)}
        offered: dict[str, Any] = self.style.request_options(view.legal_actions.values())
        conversation: list[Mapping[str, str]] = list(prompt)
        tries: list[Attempt] = []
        errors: list[ActionError] = []
        prompt_tokens = completion_tokens = 0
        latency = 0.0
        failures: list[str] = []
        while True:
            result = await self.backend.complete(conversation, headers=headers, **offered)
            prompt_tokens += result.prompt_tokens
            completion_tokens += result.completion_tokens
            latency += result.latency_s
            failures += result.failures
            outcome: Action | ActionError
            if result.error is not None:
                kinds: dict[str | None, ErrorKind] = {"timeout": "timeout", "refused": "refused"}
                kind = kinds.get(result.error, "endpoint")
                outcome = ActionError(kind, "; ".join(result.failures[-3:]) or result.error)
            elif result.malformed is not None:  # the model's own reply, not an answer at all
                outcome = ActionError("format", f"malformed reply: {result.malformed}")
            else:
                outcome = validate(
                    spec,
                    result.content,
                    view.legal_actions,
                    self.style,
                    strict=self.asking.strict,
                    finish_reason=result.finish_reason,
                    reasoning=result.reasoning,
                    require_reasoning=self.asking.require_reasoning,
                )
            error = outcome if isinstance(outcome, ActionError) else None
            ruling = None if error is None else self.policy.rule(error, len(errors) + 1)
            said = feedback(error) if error is not None and ruling == "retry" else None
            tries.append(
                Attempt(
                    result.content,
                    error,
                    said,
                    result.reasoning,
                    result.finish_reason,
                    result.failures,
                )
            )

            if isinstance(outcome, Action):
                action: int | None = outcome.id
                move_text: str | None = outcome.text
                break
            errors.append(outcome)
            if ruling == "retry" and said is not None:
                conversation += [
                    {
                        "role": "assistant",
                        "content": history_text(
                            result.content, self.style, self.asking.thinking_in_history
                        ),
                    },
                    {"role": "user", "content": said},
                ]
                continue
            # random: a legal move from our generator; forfeit or stop (an infrastructure
            # error, which the match sees by its kind): no move.
            legal = list(view.legal_actions)
            action = random_legal_action(legal, self.rng) if ruling == "random" and legal else None
            move_text = None if action is None else view.legal_actions[action]
            break
        return Decision(
            action,
            text=result.content,
            error=errors[-1] if errors else None,
            usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
            prompt=tuple(prompt),
            attempts=len(tries),
            latency_s=latency,
            errors=tuple(errors),
            failures=tuple(failures),
            reasoning=result.reasoning,
            finish_reason=result.finish_reason,
            tries=tuple(tries),
            trace=result.trace,
            move_text=move_text,
        )
