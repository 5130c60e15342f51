"""TextGameEnv: a PettingZoo ``AECEnv`` over a pyspiel game, with text observations.

OpenSpiel defines the rules; this module adapts a :class:`~strategic_arena.games.GameSpec` to the
PettingZoo AEC API and adds the text a seat sees. Make one with :func:`make`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import string
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium
import numpy as np
import pyspiel
from gymnasium import spaces
from pettingzoo import AECEnv

from strategic_arena.games import GameSpec, get_spec
from strategic_arena.games.seats import acting_seats, apply_moves
from strategic_arena.lazy_observation import LazyObservation
from strategic_arena.turn import Decision, Verdict, judge
from strategic_arena.views import SeatView, move_history, seat_view

#: Characters a text observation may contain (declared in the ``text`` space).
TEXT_CHARSET = frozenset(string.printable)
#: Longest text observation the ``text`` space admits (TextArena's whole-conversation
#: observations grow with the game: an 80-turn Codenames game reaches 10-30 kB).
MAX_TEXT_LENGTH = 65_536

Observation = dict[str, Any]
"""``{"observation": float32 tensor, "action_mask": int8 mask, "text": str}``."""

#: The most observations with an unread text an env tracks between two steps; past it they
#: are given their clone at once (a loop that observes without stepping stays bounded).
MAX_UNREAD = 64


class IllegalActionError(ValueError):
    """``step`` was given an action id that is not legal; the game state is unchanged."""


class TextGameEnv(AECEnv[str, Observation, int]):
    """A text game of one or more seats over OpenSpiel, with the PettingZoo AEC API.

    Agents are ``player_0``, ``player_1``, ... in OpenSpiel's player order. ``observe(agent)``
    returns ``{"observation": OpenSpiel observation tensor (float32), "action_mask": int8 mask of
    legal actions (all zero when it is not the agent's turn or the game is over), "text": what this
    seat sees, in words}``.

    What PettingZoo leaves implicit, made explicit:

    * **Chance.** Chance nodes (deals, draws) are resolved inside ``reset`` and ``step`` by a
      ``numpy.random.Generator``; ``reset(seed=s)`` reseeds it, so the same seed and the same
      actions replay the same game exactly. ``reset()`` without a seed continues the generator
      (a new game, still determined by the first seed).
    * **Rewards.** ``rewards[agent]`` after a step is the change of OpenSpiel's ``returns()``
      caused by that step (zero-sum games pay everything at the end; Hanabi pays +1 per card
      played as it happens, and OpenSpiel takes the score back when the last life is lost).
      ``last()`` reports the reward accumulated since the agent last acted, so the sum of every
      reward an agent sees equals its OpenSpiel return.
    * **Seats and simultaneous turns.** Any number of seats. At a simultaneous turn (blotto,
      goofspiel) every seat acts; as PettingZoo recommends for an AEC env, the turn is
      serialized: each acting agent steps in seat order, its move is held back (nothing
      changes, every reward of that step is 0, no other seat can see it) and the moves are
      applied together when the last acting agent has stepped. :meth:`acting_seats` names the
      seats still to move in the current turn.
    * **Termination.** When the game ends every agent is terminated at once (no truncation:
      OpenSpiel games are finite). Each agent then gets one *dead step*: the ``agent_iter`` loop
      yields it, ``last()`` shows its final reward, and ``step(None)`` removes it from
      ``agents``. Any action other than ``None`` on a dead step raises ``ValueError``.
    * **Illegal actions.** An action id that is not legal for the agent to move raises
      :class:`IllegalActionError` and leaves the state unchanged: masks make illegal ids a
      caller's bug. Turning a model's illegal *text* into a game outcome (forfeit, retry,
      random move) is the job of :class:`strategic_arena.wrappers.TextActionWrapper`.
    * **Global state.** ``state()`` is PettingZoo's global view for centralized training: every
      seat's observation tensor, concatenated in seat order (hidden cards included), in
      ``state_space``. The pyspiel state itself is the attribute ``spiel_state``: read it or
      clone it, but change it only through ``step`` (``step`` checks a move against the legal
      actions of the observation just made, which the env forgets whenever it changes the
      state itself; a state replaced by another object is never mistaken for it).
    * **Parallel API.** ``metadata["is_parallelizable"]`` is true for the simultaneous-move
      games only, and there PettingZoo's ``aec_to_parallel`` is valid: it needs the agents to
      step in a fixed cycle, with rewards and terminations changing only at the end of a cycle.
      At a simultaneous turn every seat acts (OpenSpiel takes one action from each; its
      simultaneous-move games decide every turn so), the agents step in seat order, a held-back
      step changes nothing and pays nothing, and the moves are applied -- rewards paid, the game
      ended -- when the last seat steps: one cycle per turn. A turn-based game has no such cycle
      (a game may end in the middle of one; Kuhn Poker's seats do not alternate), so it stays
      false there, and :func:`strategic_arena.parallel.parallel_env` plays it one seat per step
      as PettingZoo's ``turn_based_aec_to_parallel`` does.
    """

    metadata: dict[str, Any] = {  # noqa: RUF012 - PettingZoo's class-level convention
        "render_modes": ["ansi", "human"],
        "name": "text_game",
        "is_parallelizable": False,
    }

    def __init__(self, spec: GameSpec, render_mode: str | None = None) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}"
            )
        self.spec = spec
        self.game = spec.game
        self.render_mode = render_mode
        self.metadata = {
            **self.metadata,
            "name": spec.env_id,
            "is_parallelizable": spec.simultaneous,  # see "Parallel API" in the class doc
        }
        self.possible_agents = [f"player_{i}" for i in range(spec.num_players)]
        self.agent_name_mapping = {agent: i for i, agent in enumerate(self.possible_agents)}
        self._num_actions = int(self.game.num_distinct_actions())
        self.observation_spaces = self._observation_spaces()
        self.action_spaces = {agent: self._action_space() for agent in self.possible_agents}
        self.state_space = self._state_space()
        self.spiel_state: pyspiel.State = self.game.new_initial_state()
        # Created at the first chance node: most perfect-information games never need one.
        self._rng: np.random.Generator | None = None
        self._rng_seed: int | None = None
        self._returns: list[float] = [0.0] * spec.num_players
        #: Moves held back at a simultaneous turn until every acting seat has moved.
        self._pending: dict[int, int] = {}
        self._simultaneous = spec.simultaneous
        self._observer = _make_observer(self.game) if spec.tensor_size else None
        #: Per seat: observation string -> observation (shared by every env of the spec).
        self._memo = _observation_memo(spec) if spec.memoize_observations else None
        # Action spaces this small have few distinct legal sets: cache their masks.
        self._masks: dict[tuple[int, ...], np.ndarray[Any, np.dtype[np.int8]]] | None = (
            {} if self._num_actions <= 16 else None
        )
        self._terminal_rewards = (
            self.game.get_type().reward_model == pyspiel.GameType.RewardModel.TERMINAL
        )
        self.seed: int | None = None
        #: ``(state, player, legal actions)`` of the last observation, until the state changes
        #: (see ``step``).
        self._observed: tuple[pyspiel.State, int, tuple[int, ...]] | None = None
        #: Observations whose text is unread, made since the state last changed (a game of
        #: :attr:`GameSpec.lazy_text`): each keeps a clone before the state changes.
        self._unread: list[LazyObservation] | None = [] if spec.lazy_text else None
        #: The agent whose forfeit ended the current game, if any.
        self.forfeited_by: str | None = None
        # A game type that does not say (a free-text game's own) may have chance.
        chance_mode = getattr(self.game.get_type(), "chance_mode", None)
        self._has_chance = chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC

    # -- PettingZoo API -------------------------------------------------------------------------

    def observation_space(self, agent: str) -> gymnasium.Space[Any]:
        """The (cached) observation space of ``agent``."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.Space[Any]:
        """The (cached) action space of ``agent``: ``Discrete(num_distinct_actions)``."""
        return self.action_spaces[agent]

    def _action_space(self) -> gymnasium.Space[Any]:
        """One agent's action space: ``Discrete(num_distinct_actions)`` (a move is an id)."""
        return spaces.Discrete(self._num_actions)

    def _observation_spaces(self) -> dict[str, gymnasium.Space[Any]]:
        """Each agent's observation space: tensor, action mask and text (see :meth:`observe`)."""
        spec = self.spec
        low, high = spec.tensor_bounds
        return {
            agent: spaces.Dict(
                {
                    "observation": spaces.Box(low, high, (spec.tensor_size,), np.float32),
                    "action_mask": spaces.Box(0, 1, (self._num_actions,), np.int8),
                    "text": spaces.Text(MAX_TEXT_LENGTH, charset=TEXT_CHARSET),
                }
            )
            for agent in self.possible_agents
        }

    def _state_space(self) -> gymnasium.Space[Any]:
        """The space of :meth:`state`: every seat's tensor, concatenated."""
        spec = self.spec
        low, high = spec.tensor_bounds
        return spaces.Box(low, high, (spec.tensor_size * spec.num_players,), np.float32)

    def state(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The global view: every seat's observation tensor, concatenated in seat order."""
        return np.concatenate(
            [self._tensor(self.spiel_state, player) for player in range(len(self.possible_agents))]
        )

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new game; ``seed`` fixes every chance event of this and later games."""
        if seed is not None:
            self._rng, self._rng_seed = None, seed  # reseeded lazily by _resolve_chance
        self.seed = seed
        self.forfeited_by = None
        self._pending = {}
        self._observed = None
        if self._unread:  # of the old state, which no longer changes
            self._unread.clear()
        state = self.spiel_state = self.game.new_initial_state()
        if self._has_chance:
            self._resolve_chance()
        self._returns = state.returns()  # a new list at every call
        agents = self.possible_agents
        self.agents = agents[:]
        self.rewards = dict.fromkeys(agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(agents, 0.0)
        self.terminations = dict.fromkeys(agents, False)
        self.truncations = dict.fromkeys(agents, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in agents}
        mover = state.current_player()
        if mover >= 0:  # the usual start: a seat to move, so not over
            self.agent_selection = agents[mover]
            return
        self.agent_selection = agents[self._next_player()]
        if state.is_terminal():  # degenerate games that end during the deal
            self._finish()

    def observe(self, agent: str) -> Observation:
        """Tensor, action mask and text of ``agent`` (see the class docstring)."""
        player = self.agent_name_mapping[agent]
        state = self.spiel_state
        if self.forfeited_by is not None:
            return self._forfeited_observation(player)
        memos = self._memo
        memo = None
        if memos is not None:
            memo = memos[player]
            key = state.observation_string(player)
            cached = memo.get(key)
            if cached is not None:  # fresh arrays: callers own what they are given
                tensor, mask, text, legal = cached
                self._observed = (state, player, legal)
                return {"observation": tensor.copy(), "action_mask": mask.copy(), "text": text}
        # No seat acts at terminal (and chance) states, so this also covers "the game is over".
        if self._simultaneous:
            to_move = player in self.acting_seats()
        else:  # a turn-taking game: one call, no tuple of seats
            to_move = state.current_player() == player
        legal = tuple(state.legal_actions(player)) if to_move else ()
        self._observed = (state, player, legal)
        # _tensor and _mask inlined for their usual cases (this runs at every last()).
        observer = self._observer
        if observer is not None:
            observer.set_from(state, player)
            tensor = observer.tensor.copy()
        else:
            tensor = self._tensor(state, player)
        masks = self._masks
        cached_mask = None if masks is None else masks.get(legal)
        mask = self._mask(legal) if cached_mask is None else cached_mask.copy()
        unread = self._unread
        if unread is not None:  # the text is built when read, of this state
            if len(unread) >= MAX_UNREAD:  # observed again and again without a step: bounded
                self._keep_unread(state)
            observation = LazyObservation(tensor, mask, self.spec.observation_text, state, player)
            unread.append(observation)
            return observation
        text = self.spec.observation_text(state, player)
        if memo is not None:
            if len(memo) >= MEMO_SIZE:
                memo.clear()  # bounded per seat
            memo[key] = (tensor.copy(), mask.copy(), text, legal)
        return {"observation": tensor, "action_mask": mask, "text": text}

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """PettingZoo's ``last``: observation, cumulative reward, terminated, truncated, info."""
        agent = self.agent_selection
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    def agent_iter(self, max_iter: int = 2**63) -> Iterator[str]:
        """PettingZoo's ``agent_iter``: ``agent_selection`` until no agent is left (a generator)."""
        return _agent_iter(self, max_iter)

    def step(self, action: int | None) -> None:
        """Play ``action`` for ``agent_selection`` (``None`` on a dead step)."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None:
            raise ValueError(f"{agent} is to move; None is only valid on a dead step")
        action = int(action)
        player = self.agent_name_mapping[agent]
        state = self.spiel_state
        observed = self._observed
        # The usual step, inline: a legal move of the seat just observed in this very state.
        if (
            observed is None
            or observed[0] is not state
            or observed[1] != player
            or (action not in observed[2])
        ):
            self._check_legal(state, agent, player, action)
        self._cumulative_rewards[agent] = 0.0
        self._observed = None  # the state is about to change
        if self._unread:  # so the unread texts keep the state they were made in
            self._keep_unread(state)
        if self._simultaneous:
            if not self._apply(state, player, action):
                return
        else:  # a turn-taking game: the move is played at once
            state.apply_action(action)
        if self._has_chance:
            self._resolve_chance()
        # A seat to move (not negative) means the game goes on: terminal states answer
        # negative, so the usual turn asks OpenSpiel one question instead of two.
        mover = state.current_player()
        if self._terminal_rewards and (mover >= 0 or not state.is_terminal()):
            # Nothing is paid before the end: every reward is still 0 from reset.
            self.agent_selection = self.possible_agents[
                mover if mover >= 0 else self._next_player()
            ]
        else:
            self._pay(state)
        if self.render_mode == "human":
            self.render()

    def _keep_unread(self, state: pyspiel.State) -> None:
        """Give each unread observation a clone of ``state`` (about to change); forget them."""
        assert self._unread is not None
        for observation in self._unread:
            observation.keep(state)
        self._unread.clear()

    def _check_legal(self, state: pyspiel.State, agent: str, player: int, action: int) -> None:
        """Raise :class:`IllegalActionError` unless ``action`` is legal for ``player`` now.

        The legal actions of the last observe answer when it was of this player in this very
        state (the env forgets them whenever it changes the state): the AEC loop observes
        before it steps, so the usual step asks OpenSpiel for no second list of legal actions.
        """
        observed = self._observed
        if observed is not None and observed[0] is state and observed[1] == player:
            legal = action in observed[2]
        else:
            legal = action in state.legal_actions(player)
        if not legal:
            legal_ids = state.legal_actions()
            raise IllegalActionError(
                f"action {action} is not legal for {agent}; legal: {legal_ids}"
            )

    def _apply(self, state: pyspiel.State, player: int, action: int) -> bool:
        """Play ``action``; False while a simultaneous move waits for the other acting seats."""
        if self._simultaneous and state.is_simultaneous_node():
            self._pending[player] = action
            if len(self._pending) < len(acting_seats(state)):
                # Held back until every acting seat has moved: this step pays nothing.
                self._clear_rewards()
                self.agent_selection = self.possible_agents[self._next_player()]
                return False
            moves, self._pending = self._pending, {}
            apply_moves(state, moves)
        else:
            state.apply_action(action)
        return True

    def _pay(self, state: pyspiel.State) -> None:
        """Pay the step's rewards (the change in returns), then finish or pass the turn."""
        returns = state.returns()
        previous = self._returns
        rewards, cumulative = self.rewards, self._cumulative_rewards
        # The rewards of this step, accumulated at once (AECEnv._accumulate_rewards inlined).
        for i, name in enumerate(self.possible_agents):
            reward = rewards[name] = returns[i] - previous[i]
            cumulative[name] += reward
        self._returns = returns
        if state.is_terminal():
            self._finish()
        else:
            self.agent_selection = self.possible_agents[self._next_player()]

    def _was_dead_step(self, action: int | None) -> None:
        """PettingZoo's dead step (``AECEnv._was_dead_step``), the same bookkeeping in fewer calls.

        Removes ``agent_selection`` from ``agents`` and the per-agent dicts, moves to the next
        terminated or truncated agent (remembering the one it skipped, as PettingZoo does), and
        clears the rewards.
        """
        if action is not None:
            raise ValueError("when an agent is dead, the only valid action is None")
        agent = self.agent_selection
        terminations, truncations = self.terminations, self.truncations
        del terminations[agent], truncations[agent], self.rewards[agent]
        del self._cumulative_rewards[agent], self.infos[agent]
        self.agents.remove(agent)
        skipped: str | None = getattr(self, "_skip_agent_selection", None)
        for other in self.agents:
            if terminations[other] or truncations[other]:
                if skipped is None:
                    self._skip_agent_selection: str | None = agent
                self.agent_selection = other
                break
        else:
            if skipped is not None:
                self.agent_selection = skipped
            self._skip_agent_selection = None
        rewards = self.rewards
        for name in rewards:
            rewards[name] = 0

    def render(self) -> str | None:
        """The full state as OpenSpiel prints it (all hidden information shown)."""
        text = str(self.spiel_state)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release; present so that ``render`` has a matching ``close``."""

    def forfeit(self, agent: str) -> None:
        """End the game now with ``agent`` forfeiting (see ``GameSpec.forfeit_returns``).

        Used by the illegal-move policies: rewards become the forfeit returns minus what was
        already paid, so every agent's rewards still sum to its final return.
        """
        if self.terminations[agent]:
            raise ValueError(f"{agent} cannot forfeit: the game is over")
        final = self.spec.forfeit_returns(self.agent_name_mapping[agent])
        self._pending = {}
        self._cumulative_rewards[agent] = 0.0
        for i, name in enumerate(self.possible_agents):
            self.rewards[name] = float(final[i] - self._returns[i])
        self._returns = final
        self.forfeited_by = agent
        self._finish()
        self._accumulate_rewards()

    # -- decisions ------------------------------------------------------------------------------

    def judge(self, agent: str, decision: Decision) -> Verdict:
        """What the game does with ``agent``'s final decision (:func:`~strategic_arena.turn.judge`).

        The match loop and replay go through this and :meth:`play`, so a game whose moves are
        texts (:class:`strategic_arena.free_text_env.FreeTextEnv`) plugs in by overriding both.
        """
        return judge(decision, self.legal_action_texts(agent))

    def play(self, verdict: Verdict) -> None:
        """Play a ``play`` verdict of :meth:`judge`: ``step`` with its action id."""
        self.step(verdict.action)

    def refusal(self) -> tuple[int, str] | None:
        """``(seat, reason)`` if the game itself ended on a move it refused, else ``None``.

        A menu game never does: :meth:`judge` plays legal actions only. A free-text game's rules
        judge its moves after they are played (:class:`~strategic_arena.free_text_env.FreeTextEnv`),
        and the match loop records such a refusal as the offender's forfeit.
        """
        return None

    # -- text views -----------------------------------------------------------------------------

    def legal_action_texts(self, agent: str) -> dict[int, str]:
        """The menu of ``agent``: legal action id -> canonical text (empty if not to move)."""
        player = self.agent_name_mapping[agent]
        if self.terminations[agent] or not self._to_move(player):
            return {}
        return self.spec.menu(self.spiel_state, player)

    def acting_seats(self) -> tuple[int, ...]:
        """The seats still to move in the current turn, in seat order (empty once it is over).

        One seat at a sequential turn; at a simultaneous turn every seat that has not yet
        stepped (their moves are applied together when the last one steps).
        """
        if self.forfeited_by is not None:
            return ()
        return tuple(s for s in acting_seats(self.spiel_state) if s not in self._pending)

    def history(self) -> tuple[str, ...]:
        """Public move-history lines of the current game, oldest first."""
        return move_history(self.spec, self.spiel_state)

    def seat_view(self, agent: str, *, history: bool = True) -> SeatView:
        """The :class:`SeatView` of ``agent``, ready for :func:`render_messages`."""
        player = self.agent_name_mapping[agent]
        view = seat_view(self.spec, self.spiel_state, player, history=history)
        if self.forfeited_by is None:
            return view
        return dataclasses.replace(
            view, text=self._forfeit_text(player), legal_actions={}, terminal=True
        )

    def returns(self) -> list[float]:
        """OpenSpiel's returns of the current game so far, by player index."""
        return [float(r) for r in self._returns]

    def _forfeited_observation(self, player: int) -> Observation:
        """After a forfeit OpenSpiel's state is not terminal: say the game is over ourselves.

        Of the same type as every other observation of the env (a lazy-text game's included).
        """
        values = {
            "observation": self._tensor(self.spiel_state, player),
            "action_mask": np.zeros(self._num_actions, dtype=np.int8),
            "text": self._forfeit_text(player),
        }
        return values if self._unread is None else LazyObservation.rendered(values)

    def _forfeit_text(self, player: int) -> str:
        """The seat's text of the position where the game ended by forfeit."""
        position = self.spec.observation_text(self.spiel_state, player)
        return f"{position}\nThe game is over: {self.forfeited_by} forfeited; no more moves."

    def _mask(self, legal: Sequence[int]) -> np.ndarray[Any, np.dtype[np.int8]]:
        """A fresh int8 mask of ``legal``; masks of small action spaces come from a cache."""
        masks = self._masks
        if masks is None:
            mask = np.zeros(self._num_actions, dtype=np.int8)
            mask[list(legal)] = 1
            return mask
        key = tuple(legal)
        cached = masks.get(key)
        if cached is None:
            cached = np.zeros(self._num_actions, dtype=np.int8)
            cached[list(legal)] = 1
            masks[key] = cached
        fresh: np.ndarray[Any, np.dtype[np.int8]] = cached.copy()
        return fresh

    def _tensor(self, state: pyspiel.State, player: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The observation tensor, through OpenSpiel's buffer-backed observer when it has one."""
        observer = self._observer
        if observer is None:
            return np.asarray(self.spec.observation_tensor(state, player), dtype=np.float32)
        observer.set_from(state, player)  # OpenSpiel's own, into the buffer under `tensor`
        fresh: np.ndarray[Any, np.dtype[np.float32]] = observer.tensor.copy()
        return fresh

    # -- internals ------------------------------------------------------------------------------

    def _resolve_chance(self) -> None:
        """Sample chance outcomes with the env's generator until a player is to act."""
        state = self.spiel_state
        while state.is_chance_node():
            if self._rng is None:
                self._rng = np.random.default_rng(self._rng_seed)
            outcomes = state.chance_outcomes()
            threshold = self._rng.random()
            cumulative = 0.0
            chosen = outcomes[-1][0]
            for outcome, probability in outcomes:
                cumulative += probability
                if threshold < cumulative:
                    chosen = outcome
                    break
            state.apply_action(chosen)

    def _next_player(self) -> int:
        """Index of the next seat to move, or seat 0 once the game is over."""
        player = int(self.spiel_state.current_player())
        if player >= 0:  # a sequential turn (the common case: no tuple built)
            return player
        seats = self.acting_seats()
        return seats[0] if seats else 0

    def _to_move(self, player: int) -> bool:
        """Whether ``player`` is still to move in the current turn."""
        if self._simultaneous:
            return player in self.acting_seats()
        # Negative at terminal and chance states; after a forfeit (the state is not terminal)
        # observe and legal_action_texts answer before asking.
        return bool(self.spiel_state.current_player() == player)

    def _finish(self) -> None:
        """Terminate every agent; the dead steps start from ``player_0``."""
        for agent in self.agents:
            self.terminations[agent] = True
        self.agent_selection = self.agents[0]


def _agent_iter(env: TextGameEnv, max_iter: int) -> Iterator[str]:
    """``env.agent_selection`` while ``env`` has agents, at most ``max_iter`` times."""
    while env.agents and max_iter > 0:
        max_iter -= 1
        yield env.agent_selection


#: Most observations one spec memoizes before the memo is cleared.
MEMO_SIZE = 50_000
MemoEntry = tuple[
    np.ndarray[Any, np.dtype[np.float32]], np.ndarray[Any, np.dtype[np.int8]], str, tuple[int, ...]
]
"""A memoized observation: tensor, mask, text and legal actions (the arrays never handed out)."""
_MEMOS: dict[str, list[dict[str, MemoEntry]]] = {}


def _observation_memo(spec: GameSpec) -> list[dict[str, MemoEntry]]:
    """Each seat's observation memo, shared by every env of ``spec`` (``memoize_observations``)."""
    return _MEMOS.setdefault(spec.env_id, [{} for _ in range(spec.num_players)])


class _Observer:
    """OpenSpiel's buffer-backed observation, called without its Python wrapper's extra hop."""

    __slots__ = ("set_from", "tensor")

    def __init__(self, observation: Any) -> None:
        self.set_from = observation._observation.set_from
        self.tensor: np.ndarray[Any, np.dtype[np.float32]] = observation.tensor


def _make_observer(game: pyspiel.Game) -> _Observer | None:
    """OpenSpiel's buffer-backed observation of ``game`` (the tensor without a list copy)."""
    from open_spiel.python.observation import make_observation

    try:
        observation = make_observation(game)
    except (pyspiel.SpielError, ValueError, RuntimeError):
        return None
    return None if observation.tensor is None else _Observer(observation)


def make(
    env_id: str, render_mode: str | None = None, **params: int | float | bool | str
) -> TextGameEnv:
    """Create the text environment ``env_id``.

    Args:
        env_id: one of :func:`strategic_arena.list_envs`, ``openspiel/<game_name>`` or
            ``textarena/<EnvId>`` (a free-text game: ``step`` takes the move's text).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the full state as text) or
            ``"human"`` (prints it after every step).
        params: OpenSpiel game parameters (``openspiel/<game_name>`` only), e.g.
            ``make("openspiel/connect_four", rows=5)``... where the game defines them; for
            ``textarena/<EnvId>``, ``players=`` and TextArena's own keyword arguments.
    """
    return env_for(get_spec(env_id, **params), render_mode=render_mode)


def env_for(spec: GameSpec, render_mode: str | None = None) -> TextGameEnv:
    """The env of ``spec``: :class:`TextGameEnv`, or the free-text env of a free-text game."""
    env: TextGameEnv = _env_class(ENV_OF_MOVE_KIND[spec.move_kind])(spec, render_mode=render_mode)
    return env


@functools.lru_cache(maxsize=16)
def _env_class(address: str) -> type[TextGameEnv]:
    """The env class at ``module:Class`` (imported once)."""
    module_name, class_name = address.split(":")
    env_class: type[TextGameEnv] = getattr(importlib.import_module(module_name), class_name)
    return env_class


#: The env class of each move kind, as ``module:Class`` (free-text games step with text).
ENV_OF_MOVE_KIND: dict[str, str] = {
    "menu": "strategic_arena.env:TextGameEnv",
    "text": "strategic_arena.free_text_env:FreeTextEnv",
}
