"""Stepping with a model's raw text, illegal-move policies, and a single-agent gymnasium view.

* :class:`TextActionWrapper` -- ``step(response_text)``: the response is validated in a prompt
  style; a legal answer is played, an invalid one goes to the illegal-move policy.
* :func:`single_agent` -- one seat of a game as a ``gymnasium.Env`` against a fixed opponent;
  ``text=False`` drops the text observation for RL libraries that take only arrays
  (stable-baselines3), and :meth:`SingleAgentEnv.action_masks` serves maskable algorithms
  (sb3-contrib's ``MaskablePPO``). The curated games are registered with ``gymnasium.make`` as
  ``strategic_arena/<env_id>`` (:func:`register_envs`).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import gymnasium
import numpy as np
from pettingzoo.utils.wrappers import BaseWrapper

from strategic_arena.actions import TEXT_MOVE, Action, ActionError
from strategic_arena.env import Observation, TextGameEnv, make
from strategic_arena.gym_registration import GYMNASIUM_NAMESPACE as GYMNASIUM_NAMESPACE
from strategic_arena.gym_registration import register_envs as register_envs
from strategic_arena.players import RandomPlayer
from strategic_arena.seeding import derive_seed
from strategic_arena.turn import (
    Decision,
    GameState,
    Player,
    Verdict,
    feedback,
    random_legal_action,
)
from strategic_arena.turn import IllegalMovePolicy as IllegalMovePolicy  # re-exported
from strategic_arena.validation import Style, validate

_T = TypeVar("_T")


class TextActionWrapper(BaseWrapper[str, Observation, Any]):
    """Step a :class:`TextGameEnv` with response text instead of action ids.

    ``step(text)`` validates ``text`` against the legal actions of the agent to move, in the
    wrapper's prompt ``style``. A legal answer is played. Otherwise the illegal-move policy
    applies (:meth:`IllegalMovePolicy.rule`, the model player's rule too): ``forfeit`` ends the
    game (``env.forfeit``); ``retry:k`` keeps the same agent to move and puts ``feedback`` in
    its info (after ``k`` failed re-asks it forfeits); ``random`` plays a random legal action
    from the wrapper's generator (seeded by ``reset``).

    After every ``step``, ``infos[agent]`` of the agent that answered holds ``action``
    (:class:`Action` or ``None``), ``error`` (:class:`ActionError` or ``None``), ``errors``
    (all errors of this move), ``attempt`` (1-based) and, when re-asked, ``feedback``.
    Dead steps take ``None`` as in the base env. ``strict`` and ``require_reasoning`` are
    :func:`~strategic_arena.validation.validate`'s (``None``: the style decides).
    """

    def __init__(
        self,
        env: TextGameEnv,
        style: Style = "marshal",
        policy: str | IllegalMovePolicy = "forfeit",
        *,
        strict: bool = True,
        require_reasoning: bool | None = None,
    ) -> None:
        super().__init__(env)
        self.text_env = env
        self.style: Style = style
        self.policy = IllegalMovePolicy.of(policy)
        self.strict = strict
        self.require_reasoning = require_reasoning
        self._rng = np.random.default_rng()
        self._errors: list[ActionError] = []

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Reset the game; ``seed`` also seeds the ``random`` policy's generator."""
        if seed is not None:
            self._rng = np.random.default_rng(derive_seed(seed, "random policy"))
        self._errors = []
        super().reset(seed=seed, options=options)

    def step(
        self, action: Any, *, reasoning: str | None = None, finish_reason: str | None = None
    ) -> None:
        """Validate ``action`` (the response text) and play it or apply the policy.

        ``reasoning`` (a server's separate ``reasoning_content``) and ``finish_reason`` are
        read as :func:`~strategic_arena.validation.validate` reads them.
        """
        env = self.text_env
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None if action is None else action)
            return
        menu = env.legal_action_texts(agent)
        outcome = validate(
            env.spec,
            action,
            menu,
            self.style,
            strict=self.strict,
            reasoning=reasoning,
            finish_reason=finish_reason,
            require_reasoning=self.require_reasoning,
        )
        if isinstance(outcome, Action):
            errors, self._errors = self._errors, []
            env.play(Verdict("play", outcome.id, None, outcome.text))  # an id, or a free text
            env.infos[agent] = _info(outcome, None, errors)
            return
        self._errors.append(outcome)
        errors = list(self._errors)
        # Text validation never yields an infrastructure error, so the ruling is never "stop".
        ruling = self.policy.rule(outcome, len(errors))
        if ruling == "retry":
            # The agent has seen its pending reward in last(); a re-ask must not repeat it.
            env._cumulative_rewards[agent] = 0.0
            env.infos[agent] = {**_info(None, outcome, errors), "feedback": feedback(outcome)}
            return
        self._errors = []
        if ruling == "random" and menu:  # a free-text game has no menu to draw from: forfeit
            choice = random_legal_action(menu, self._rng)
            env.step(choice)
            env.infos[agent] = _info(Action(choice, menu[choice]), outcome, errors)
            return
        env.forfeit(agent)
        env.infos[agent] = _info(None, outcome, errors)


def _info(
    action: Action | None, error: ActionError | None, errors: list[ActionError]
) -> dict[str, Any]:
    """The info dict of an answered step; ``attempt`` counts every answer given for the move."""
    accepted = action is not None and error is None
    return {"action": action, "error": error, "errors": errors, "attempt": len(errors) + accepted}


class SingleAgentEnv(gymnasium.Env[Observation, np.int64]):
    """One seat of a text game as a gymnasium env; the other seats are played by ``opponent``.

    Observations and the action space are the AEC env's; with ``text=False`` the observation
    has only its arrays, ``observation`` (the OpenSpiel tensor) and ``action_mask``. The text
    is a ``gymnasium.spaces.Text`` of up to 16,384 characters, which array-only RL libraries
    cannot take (stable-baselines3 fails on it with a ``TypeError``): drop it for them.

    ``step(action)`` plays the action, then lets the opponent move (in every other seat, in
    a game of more than two) until it is this seat's turn again or the game ends; at a
    simultaneous turn the opponent's moves are chosen without seeing this seat's. The reward
    is what the seat earned since its previous step (its final return summed over the
    episode). An illegal action id forfeits the game
    (reward: the forfeit loss, ``terminated``) and is reported as ``info["error"]``; use
    ``observation["action_mask"]`` or :meth:`action_masks` to avoid it. The opponent's
    decisions go through :func:`strategic_arena.turn.judge` as in a match; one whose endpoint
    failed after its retries raises ``RuntimeError`` (the episode cannot go on).

    The opponent's ``async act`` runs on a private event loop (three file descriptors), made at
    its first move and kept for the view's life: a model opponent's HTTP client stays bound
    to one loop, and a move costs ~20 us of loop where ``asyncio.run`` costs ~370 us.
    ``close()`` closes it, and so does the view's collection (``weakref.finalize``), so a view
    dropped without ``close()`` leaks no descriptor and warns nothing; a closed view that
    steps again makes a new one.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}  # noqa: RUF012

    def __init__(
        self,
        env_id: str,
        opponent: Player | str | None = None,
        seat: int = 0,
        render_mode: str | None = None,
        text: bool = True,
    ) -> None:
        self.env = make(env_id)
        seats = len(self.env.possible_agents)
        if not 0 <= seat < seats:
            raise ValueError(f"seat must be between 0 and {seats - 1}, got {seat}")
        self.env_id = env_id
        self.seat = seat
        self.agent = self.env.possible_agents[seat]
        # A spec (or None: random) is rebuilt with a seed derived from each reset's seed, so a
        # seeded episode replays exactly whatever the opponent's own randomness (MCTS, CFR).
        self._opponent_spec = "random" if opponent is None else opponent
        self.opponent = _opponent(opponent, env_id)
        self.text = text
        full = self.env.observation_space(self.agent)
        assert isinstance(full, gymnasium.spaces.Dict)
        self.observation_space = (
            full
            if text
            else gymnasium.spaces.Dict({k: v for k, v in full.spaces.items() if k != "text"})
        )
        self.action_space = self.env.action_space(self.agent)  # type: ignore[assignment]
        self.render_mode = render_mode
        self._loop: asyncio.AbstractEventLoop | None = None  # made at the opponent's first move
        #: Closes ``_loop`` (once): at ``close()``, or when the view is collected.
        self._release_loop: Callable[[], object] | None = None
        self._paid = 0.0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """New game; the opponent moves first when it holds seat 0."""
        super().reset(seed=seed)
        if seed is not None:
            opponent_seed = derive_seed(seed, "opponent")
            if isinstance(self._opponent_spec, str):
                self.opponent = _opponent(self._opponent_spec, self.env_id, opponent_seed)
            elif isinstance(self.opponent, RandomPlayer):
                self.opponent.rng = np.random.default_rng(opponent_seed)
        self.env.reset(seed=seed)
        self._paid = 0.0
        self._opponent_moves()
        return self._observe(), {}

    def step(
        self, action: np.int64 | int | str
    ) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Play ``action`` (an action id, or a free-text game's move text), then the replies."""
        env = self.env
        if env.terminations[self.agent]:
            raise RuntimeError("the episode is over; call reset()")
        info: dict[str, Any] = {}
        decision = (
            Decision(TEXT_MOVE, action, move_text=action)
            if isinstance(action, str)
            else Decision(int(action))
        )
        verdict = env.judge(self.agent, decision)
        if verdict.outcome == "play":
            env.play(verdict)
            self._opponent_moves()
        else:
            shown = action if isinstance(action, str) else int(action)
            info["error"] = ActionError("illegal_action", f"action {shown!r} is not legal")
            env.forfeit(self.agent)
        total = env.returns()[self.seat]
        reward, self._paid = total - self._paid, total
        terminated = bool(env.terminations[self.agent])
        return self._observe(), float(reward), terminated, False, info

    def action_masks(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """The legal actions of this seat now, as booleans (what maskable RL algorithms ask)."""
        return np.asarray(self.env.observe(self.agent)["action_mask"], dtype=bool)

    def _observe(self) -> Observation:
        observation = self.env.observe(self.agent)
        if self.text:
            return observation
        return {key: value for key, value in observation.items() if key != "text"}

    def render(self) -> str | None:  # type: ignore[override]
        """What this seat sees, as text (never the other seat's hidden cards)."""
        return str(self.env.observe(self.agent)["text"])

    def close(self) -> None:
        """Close the private event loop, if the opponent has moved (a later step makes another)."""
        if self._release_loop is not None:
            self._release_loop()

    def _run(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coroutine`` to its end on the private loop, made (and its release set) here."""
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.new_event_loop()
            # Called at close() or when the view is collected, whichever comes first; it holds
            # the loop, never the view.
            self._release_loop = weakref.finalize(self, loop.close)
        return loop.run_until_complete(coroutine)

    def _opponent_moves(self) -> None:
        """Let the opponent act until it is our turn or the game is over."""
        env = self.env
        while not env.terminations[self.agent] and env.agent_selection != self.agent:
            opponent_agent = env.agent_selection
            seat = env.agent_name_mapping[opponent_agent]
            decision = self._run(
                self.opponent.act(GameState(self.env_id, env.spiel_state.clone(), env.spec), seat)
            )
            verdict = env.judge(opponent_agent, decision)
            if verdict.outcome == "play":
                env.play(verdict)
            elif verdict.outcome == "forfeit":
                env.forfeit(opponent_agent)
            else:
                raise RuntimeError(f"the opponent's endpoint failed: {verdict.error}")


def _opponent(opponent: Player | str | None, env_id: str, seed: int = 0) -> Player:
    """The opponent as a :class:`Player`: given, built from a spec string, or random.

    Raises:
        ValueError: a spec that names no opponent, or one that cannot play ``env_id``.
        TypeError: anything else that is not a player.
    """
    if opponent is None:
        return RandomPlayer(seed)
    if isinstance(opponent, str):
        import opponents  # lazily: the core does not import the solvers at import time

        return opponents.make(opponent, env_id, seed=seed)
    if not isinstance(opponent, Player):
        raise TypeError(
            f"opponent must be a Player (a name and an async act) or an opponent spec such as "
            f"'random' or 'mcts:simulations=100', not {type(opponent).__name__}"
        )
    return opponent


def single_agent(
    env_id: str, opponent: Player | str | None = None, seat: int = 0, *, text: bool = True
) -> SingleAgentEnv:
    """``env_id`` from the point of view of ``seat``, against ``opponent``.

    ``opponent`` is a :class:`Player`, an opponent spec as :func:`opponents.make` takes it
    (``"random"``, ``"mcts:simulations=100"``; seeded with 0 unless the spec gives a seed), or
    ``None`` for a random player. ``text=False``: observations without the text (arrays only,
    for stable-baselines3 and other array-based RL libraries).
    """
    return SingleAgentEnv(env_id, opponent=opponent, seat=seat, text=text)
