"""TextParallelEnv: a text game with PettingZoo's ``ParallelEnv`` API (``sa.parallel_env``).

Multi-agent RL libraries train on the parallel API: ``step(actions)`` takes one action per
agent and answers every agent's observation, reward, termination, truncation and info at once.
The games are PettingZoo AEC envs (:class:`~strategic_arena.env.TextGameEnv`); this module
converts them with PettingZoo's own conversion wrappers, the one that fits each game:

* **Simultaneous-move games** (Colonel Blotto, Goofspiel, the matrix games, MAPoRL's debate):
  every seat acts at every turn, so one ``step(actions)`` plays one whole turn with one action
  from every seat. The AEC env declares ``is_parallelizable`` for exactly these games, and
  :func:`pettingzoo.utils.conversions.aec_to_parallel` converts it (see
  :class:`~strategic_arena.env.TextGameEnv` for why the conversion is valid there).
* **Turn-based games** (Tic-Tac-Toe, the poker games, Hanabi): one seat acts per step, as
  PettingZoo's :func:`~pettingzoo.utils.conversions.turn_based_aec_to_parallel` plays them:
  ``step(actions)`` plays the action of the seat to move and ignores the others' (a caller may
  give every live agent an action, as ``parallel_api_test`` does; a seat not to move has an
  all-zero ``action_mask``). :meth:`TextParallelEnv.acting_agents` names who acts next.

What this class adds to PettingZoo's wrappers:

* **Checked actions, all or nothing.** Every acting seat must have an action, and each must be
  legal (a menu game's action id) or a text (a free-text game's move); otherwise ``step``
  raises (:class:`~strategic_arena.env.IllegalActionError`, or ``ValueError`` for a missing or
  unknown agent) before any move is played, so the game is unchanged. PettingZoo's wrapper would
  have held back the first seats' moves and left the turn half played.
* **Infos.** ``infos[agent]`` is ``{"to_move": whether the agent acts in the next step,
  "legal_moves": its legal action id -> canonical text}`` (empty when not to move, and in a
  free-text game, whose moves are texts). The ``action_mask`` stays in the observation, as in
  the AEC env.
* **Plain dicts** of float rewards, and a clear error for a step after the game is over.

Observations, spaces, ``state()``, ``render()`` and seeds are the AEC env's: ``reset(seed=s)``
fixes every chance event, so the same seed and the same actions replay the same game.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from pettingzoo import ParallelEnv
from pettingzoo.utils.conversions import aec_to_parallel, turn_based_aec_to_parallel

from strategic_arena.env import IllegalActionError, Observation, TextGameEnv, make

Info = dict[str, Any]
"""One agent's info: ``{"to_move": bool, "legal_moves": {action id: canonical text}}``."""
StepResult = tuple[
    dict[str, Observation],
    dict[str, float],
    dict[str, bool],
    dict[str, bool],
    dict[str, Info],
]
"""What ``step`` answers: observations, rewards, terminations, truncations and infos."""


class TextParallelEnv(ParallelEnv[str, Observation, Any]):
    """A text game with PettingZoo's parallel API (see the module doc).

    Args:
        env: the AEC env to drive (:func:`~strategic_arena.env.make`); this env owns it from
            now on (step it only through this env).
    """

    def __init__(self, env: TextGameEnv) -> None:
        self.aec_env = env
        self.metadata = env.metadata
        self.possible_agents = env.possible_agents
        self.render_mode = env.render_mode
        self.state_space = env.state_space
        self.agents: list[str] = []
        # PettingZoo's own conversion: a whole turn per step where every seat acts at every
        # turn (the AEC env says so), one seat's move per step otherwise.
        self._parallel: ParallelEnv[str, Observation, Any] = (
            aec_to_parallel(env)
            if env.metadata.get("is_parallelizable", False)
            else turn_based_aec_to_parallel(env)
        )

    def observation_space(self, agent: str) -> gymnasium.Space[Any]:
        """The AEC env's (cached) observation space of ``agent``."""
        return self.aec_env.observation_space(agent)

    def action_space(self, agent: str) -> gymnasium.Space[Any]:
        """The AEC env's (cached) action space of ``agent``: an id, or a free-text move."""
        return self.aec_env.action_space(agent)

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Observation], dict[str, Info]]:
        """Start a new game; ``seed`` fixes every chance event of this and later games."""
        observations, _ = self._parallel.reset(seed=seed, options=options)
        self.agents = self.aec_env.agents[:]
        return observations, self._infos(self.agents)

    def step(self, actions: Mapping[str, Any]) -> StepResult:
        """Play one step: the move of every seat that acts now (others' actions are ignored).

        Raises:
            RuntimeError: the game is over (or was never started): call ``reset``.
            ValueError: an acting agent has no action, or an action names no agent.
            IllegalActionError: an acting agent's action is not legal (nothing is played).
        """
        if not self.agents:
            raise RuntimeError("the game is over; call reset()")
        self._check(actions)
        observations, rewards, terminations, truncations, _ = self._parallel.step(dict(actions))
        self.agents = self.aec_env.agents[:]
        return (
            observations,
            {agent: float(rewards.get(agent, 0.0)) for agent in terminations},
            dict(terminations),
            dict(truncations),
            self._infos(list(terminations)),
        )

    def acting_agents(self) -> list[str]:
        """The agents whose actions the next ``step`` plays, in seat order (none once over)."""
        agents = self.possible_agents
        return [agents[seat] for seat in self.aec_env.acting_seats()] if self.agents else []

    def state(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The AEC env's global view (every seat's observation tensor, in seat order)."""
        return self.aec_env.state()

    def render(self) -> str | None:
        """The AEC env's render: the full state as OpenSpiel prints it."""
        return self.aec_env.render()

    def close(self) -> None:
        """Close the AEC env."""
        self.aec_env.close()

    def _check(self, actions: Mapping[str, Any]) -> None:
        """Raise unless every acting agent has a playable action (nothing is played here)."""
        unknown = sorted(str(agent) for agent in actions if agent not in self.possible_agents)
        if unknown:
            raise ValueError(
                f"actions for unknown agents {unknown}; the agents are {self.possible_agents}"
            )
        acting = self.acting_agents()
        missing = [agent for agent in acting if actions.get(agent) is None]
        if missing:
            raise ValueError(f"no action for {missing}: {acting} act in this step")
        for agent in acting:
            self._check_move(agent, actions[agent])

    def _check_move(self, agent: str, action: Any) -> None:
        """Raise :class:`IllegalActionError` unless ``action`` is playable by ``agent`` now."""
        env = self.aec_env
        if env.spec.move_kind == "text":
            if not isinstance(action, str):
                raise IllegalActionError(
                    f"{env.spec.env_id} takes a move text, not {type(action).__name__} {action!r}"
                )
            return
        legal = env.spiel_state.legal_actions(env.agent_name_mapping[agent])
        if not isinstance(action, (int, np.integer)) or int(action) not in legal:
            raise IllegalActionError(f"action {action!r} is not legal for {agent}; legal: {legal}")

    def _infos(self, agents: list[str]) -> dict[str, Info]:
        """Each agent's info: whether it acts in the next step, and its legal moves then."""
        acting = set(self.acting_agents())
        env = self.aec_env
        return {
            agent: {
                "to_move": agent in acting,
                "legal_moves": env.legal_action_texts(agent) if agent in acting else {},
            }
            for agent in agents
        }


def parallel_env(
    env_id: str, render_mode: str | None = None, **params: int | float | bool | str
) -> TextParallelEnv:
    """Create the text environment ``env_id`` with PettingZoo's parallel API.

    Args:
        env_id: as :func:`strategic_arena.make` takes it (a curated id, ``openspiel/<game>``,
            ``textarena/<EnvId>``, ``debate-v0``...).
        render_mode: as :func:`strategic_arena.make` takes it.
        params: the game's parameters, as :func:`strategic_arena.make` takes them.
    """
    return TextParallelEnv(make(env_id, render_mode=render_mode, **params))
