"""FreeTextEnv: the PettingZoo ``AECEnv`` of a game whose moves are texts (``move_kind = "text"``).

Menu games step with an action id (:class:`~strategic_arena.env.TextGameEnv`); a free-text game
-- any ``textarena/<EnvId>`` and the curated TextArena entries -- steps with the move's text,
``env.step("[Offer: 3 Wheat -> 1 Ore]")``, and the game itself judges it. Everything else is
:class:`TextGameEnv`'s contract (dead steps, cumulative rewards, forfeits, seeds), with these
differences:

* **Spaces.** ``action_space(agent)`` is ``gymnasium.spaces.Text`` (printable characters, up to
  ``spec.max_move_chars``). An observation is ``{"observation": [1.0 if the seat is to move
  else 0.0], "text": the seat's view}``: no ``action_mask`` (there is no menu to mask), and the
  seat's view is its ``text``.
* **Moves.** ``step(text)`` sends the text to the game unchanged. An invalid move is the game's
  business, not an exception: TextArena's rules re-ask the offender (the same agent stays
  selected, its observation now carries the game's reason) or end the game. ``step`` raises
  only for a move that is not a string (:class:`~strategic_arena.env.IllegalActionError`).
* **Simultaneous turns.** A game whose every seat answers at once (MAPoRL's debate) is
  serialized as :class:`TextGameEnv` serializes OpenSpiel's: each acting agent steps in seat
  order, its text is held back (no other seat sees it, the step pays nothing), and the texts
  go to the game together (``apply_actions``) when the last acting agent has stepped.
* **Whole responses.** A game with ``move_is_response`` plays a decision's whole response
  (:func:`~strategic_arena.turn.judge_response`); any other plays the move text the answer
  style read (:func:`~strategic_arena.turn.judge_text`).
* **Seeds.** ``reset(seed=s)`` starts the game from seed ``s`` itself (so a TextArena game
  played directly with ``env.reset(num_players, seed=s)`` is the same game); ``reset()`` without
  a seed draws the next game's seed from a generator seeded by the last given seed.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from strategic_arena.env import TEXT_CHARSET, IllegalActionError, Observation, TextGameEnv
from strategic_arena.games import GameSpec
from strategic_arena.games.seats import acting_seats
from strategic_arena.turn import Decision, Verdict, judge_response, judge_text

#: Longest view a free-text game's observation space admits (a whole conversation).
MAX_FREE_TEXT_LENGTH = 1_000_000
#: Characters a free-text view may hold: TextArena draws boards and rules with box-drawing
#: characters, bullets and arrows beyond ASCII, so the whole Basic Multilingual Plane but its
#: surrogates (a player's move is escaped where it is shown, never filtered here).
FREE_TEXT_CHARSET = frozenset(chr(code) for code in range(0x10000) if not 0xD800 <= code <= 0xDFFF)

#: Largest seed drawn for a game started by ``reset()`` without a seed.
_SEED_BOUND = 2**31 - 1


@functools.cache
def _view_space() -> spaces.Text:
    """The space of a free-text view, built once (its 63k-character charset costs ~20 ms)."""
    return spaces.Text(MAX_FREE_TEXT_LENGTH, min_length=0, charset=FREE_TEXT_CHARSET)


@functools.cache
def _move_space(max_chars: int) -> spaces.Text:
    """The unseeded prototype of a move's space (see :meth:`FreeTextEnv._action_space`)."""
    return spaces.Text(max_chars, min_length=1, charset=TEXT_CHARSET)


@functools.cache
def _observation_space() -> spaces.Dict:
    """A free-text seat's observation space: its to-move flag and its view (built once)."""
    return spaces.Dict(
        {"observation": spaces.Box(0.0, 1.0, (1,), np.float32), "text": _view_space()}
    )


class FreeTextEnv(TextGameEnv):
    """A free-text game with the PettingZoo AEC API: ``step(text)`` (see the module doc)."""

    def __init__(self, spec: GameSpec, render_mode: str | None = None) -> None:
        if spec.move_kind != "text":
            raise ValueError(f"{spec.env_id} takes menu moves; make it with TextGameEnv")
        super().__init__(spec, render_mode=render_mode)
        #: Texts held back at a simultaneous turn until every acting seat has moved.
        self._pending_texts: dict[int, str] = {}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new game (see :meth:`TextGameEnv.reset`); no text is held back."""
        self._pending_texts = {}
        super().reset(seed=seed, options=options)

    def acting_seats(self) -> tuple[int, ...]:
        """The seats still to move in the current turn (those whose text is not held back)."""
        if self.forfeited_by is not None:
            return ()
        return tuple(s for s in acting_seats(self.spiel_state) if s not in self._pending_texts)

    def _observation_spaces(self) -> dict[str, gymnasium.Space[Any]]:
        """One space for every seat: a to-move flag and the view, no mask.

        No menu, so no mask (PettingZoo samples an action through a mask when there is one),
        and a one-entry tensor: whether the seat is to move (PettingZoo refuses empty arrays).
        The space is the same object for every agent and env (:func:`_observation_space`):
        building gymnasium spaces cost more than a whole game of TextArena's.
        """
        return dict.fromkeys(self.possible_agents, _observation_space())

    def _state_space(self) -> gymnasium.Space[Any]:
        """Each seat's to-move flag."""
        return spaces.Box(0.0, 1.0, (self.spec.num_players,), np.float32)

    def observe(self, agent: str) -> Observation:
        """``{"observation": [1.0 if the seat is to move else 0.0], "text": its view}``."""
        player = self.agent_name_mapping[agent]
        text = (
            self.spec.observation_text(self.spiel_state, player)
            if self.forfeited_by is None
            else self._forfeit_text(player)
        )
        return {"observation": self._to_move_flag(player), "text": text}

    def state(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        """The global view: each seat's to-move flag (the texts are the seats' own)."""
        return np.concatenate(
            [self._to_move_flag(player) for player in range(len(self.possible_agents))]
        )

    def _to_move_flag(self, player: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        """``[1.0]`` when ``player`` is to move, else ``[0.0]``."""
        moving = self.forfeited_by is None and self._to_move(player)
        return np.array([1.0 if moving else 0.0], dtype=np.float32)

    def _action_space(self) -> gymnasium.Space[Any]:
        """``Text``: a move is a printable text of at most ``spec.max_move_chars`` characters.

        Each agent of each env gets its own space (its own sampling generator, which PettingZoo's
        seed test seeds): a shallow copy of one unseeded space, whose charset tables, which
        cost most of building a ``Text``, are only read.
        """
        return copy.copy(_move_space(self.spec.max_move_chars))

    def step(self, action: Any) -> None:
        """Play the move text ``action`` for ``agent_selection`` (``None`` on a dead step)."""
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if not isinstance(action, str):
            raise IllegalActionError(
                f"{self.spec.env_id} takes a move text, not {type(action).__name__} {action!r}"
            )
        self._cumulative_rewards[agent] = 0.0
        state = self.spiel_state
        if state.is_simultaneous_node():
            self._pending_texts[self.agent_name_mapping[agent]] = action
            seats = acting_seats(state)
            if len(self._pending_texts) < len(seats):
                # Held back until every acting seat has moved: this step pays nothing.
                self._clear_rewards()
                self.agent_selection = self.possible_agents[self._next_player()]
                return
            moves, self._pending_texts = self._pending_texts, {}
            state.apply_actions([moves[seat] for seat in seats])
        else:
            state.apply_action(action)
        returns = [float(r) for r in state.returns()]
        for i, name in enumerate(self.possible_agents):
            self.rewards[name] = returns[i] - self._returns[i]
        self._returns = returns
        if state.is_terminal():
            self._finish()
        else:
            self.agent_selection = self.possible_agents[self._next_player()]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def judge(self, agent: str, decision: Decision) -> Verdict:
        """Play the decision's move text (the game judges it), else forfeit or stop.

        A ``move_is_response`` game plays the whole response instead (:func:`judge_response`).
        """
        if self.spec.move_is_response:
            return judge_response(decision)
        return judge_text(decision)

    def play(self, verdict: Verdict) -> None:
        """Step with the verdict's move text."""
        self.step(verdict.text)

    def _resolve_chance(self) -> None:
        """Start a new game from its seed: the game resolves its own chance events."""
        state = self.spiel_state
        if state.started:
            return
        if self.seed is not None:
            state.start(self.seed)
            return
        if self._rng is None:
            self._rng = np.random.default_rng(self._rng_seed)
        state.start(int(self._rng.integers(_SEED_BOUND)))
