"""The TextArena adapter: any TextArena environment as a free-text game, ``textarena/<EnvId>``.

TextArena (``pip install 'strategic-arena[textarena]'``, imported only when such a game is made)
defines the rules of its free-text, negotiation and social games; this module adapts one of its
environments to the package's game contract without rewriting it:

* **Observations.** A seat sees exactly what TextArena's ``get_observation()`` gave that player
  at its latest turn (the observation of ``ta.make(EnvId)`` with its default wrappers: a string;
  a ``-raw`` id's message list is joined, one message per line). Nothing else of the game is
  exposed to a seat: :class:`TextArenaState` hands a player a copy that holds the seats' texts
  and no TextArena object.
* **Other seats' words.** What a seat wrote reaches the other seats as a quotation that no
  move can close or forge (:mod:`strategic_arena.games.seat_text`): one line, after its
  author's tag, with any role tag in it defused (``[GAME]`` -> ``(GAME)``). TextArena only
  strips role tags, in one pass, so ``[GA[GAME]ME]`` or a line break followed by a tag let a
  seat write a line the other seat read as the game master's. Honest moves read exactly as
  TextArena shows them.
* **Moves.** A move is a text (``move_kind = "text"``, :class:`FreeTextGrammar`) sent to
  TextArena's ``env.step(text)`` unchanged. TextArena's own invalid-move rules judge it (most
  games give the offender ``error_allowance`` more tries, one by default, with the reason in
  its observation, then end the game with the offender losing), and TextArena's rewards
  (``env.close()``) are the returns. A spec's ``error_allowance`` replaces TextArena's default
  (SPIRAL plays with 0: a refused move loses at once). A refusal that ends the game is the
  offender's forfeit (:meth:`TextArenaState.refusal`: the match loop records it as such, with
  TextArena's reason); where TextArena lets the game go on without the offender (its
  multi-player games eliminate a seat), the game goes on.
* **Seeds.** ``reset(seed)`` passes the seed to TextArena's ``env.reset(num_players, seed)``.
  TextArena draws from Python's global ``random`` module, so during every call into it the
  module's functions are those of the game's own generator, swapped in and out around the
  call: the global RNG of the process is never drawn from, and games played side by side stay
  independent and replayable.

The classes below give a TextArena game the small part of OpenSpiel's ``Game``/``State``
interface that the env, the match loop and the store use (turns, terminal test, returns,
observation strings, ``clone``); action ids, chance nodes and tensors are empty.
"""

from __future__ import annotations

import copy
import functools
import importlib.metadata
import operator
import random
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyspiel

from strategic_arena._extras import require
from strategic_arena.games.base import FreeTextGrammar, GameSpec
from strategic_arena.games.listing import Listing
from strategic_arena.games.seat_text import quote, role_tags
from strategic_arena.games.text_moves import TextMovesGame, TextMovesState

PREFIX = "textarena/"

#: OpenSpiel's ``current_player()`` at a terminal state.
_TERMINAL = int(pyspiel.PlayerId.TERMINAL)


@dataclass(frozen=True)
class TextArenaGameType:
    """The fields of OpenSpiel's ``GameType`` the package reads, for a TextArena game."""

    short_name: str
    long_name: str
    information: Any = pyspiel.GameType.Information.IMPERFECT_INFORMATION
    dynamics: Any = pyspiel.GameType.Dynamics.SEQUENTIAL
    reward_model: Any = pyspiel.GameType.RewardModel.TERMINAL
    #: TextArena games draw from their seed (deals, roles, words): the ratings pair a deal
    #: played in both seatings into one duplicate match, as for OpenSpiel's games with chance.
    chance_mode: Any = pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC
    provides_information_state_string: bool = False
    provides_observation_string: bool = True


class TextArenaGame(TextMovesGame):
    """A TextArena environment id with its player count and parameters (OpenSpiel's ``Game``)."""

    def __init__(self, spec: TextArenaSpec) -> None:
        self.spec = spec
        self._type: TextArenaGameType | None = None

    def num_players(self) -> int:
        """Number of seats."""
        return self.spec.players

    def get_type(self) -> TextArenaGameType:
        """What kind of game this is, in OpenSpiel's terms (imperfect information, sequential).

        Made once (a frozen dataclass: the env asks four times as it is made).
        """
        if self._type is None:
            self._type = TextArenaGameType(self.spec.textarena_id, self.spec.title)
        return self._type

    def new_initial_state(self) -> TextArenaState:
        """A game not started yet: :meth:`TextArenaState.start` deals it from a seed."""
        return TextArenaState(self.spec)


class TextArenaState(TextMovesState):
    """One TextArena game in progress, seen through OpenSpiel's ``State`` interface.

    ``start(seed)`` makes and resets the TextArena env; ``apply_action(text)`` plays a move.
    :meth:`clone` returns a *copy for a player*: the seats' observation texts, turn and returns,
    without the TextArena env (a player cannot step it or read hidden state through it).
    """

    def __init__(self, spec: TextArenaSpec) -> None:
        self.spec = spec
        self._env: Any = None
        #: The ``random`` module's functions, as methods of this game's own generator.
        self._functions: dict[str, Any] = {}
        self._observations = [""] * spec.players
        self._current = 0
        self._done = False
        self._returns = [0.0] * spec.players
        self._moves: list[tuple[int, str]] = []
        self._stepping = ""  # the move being played (see _quote_seat_text)
        #: Whether that move needs quoting where the game master repeats it (asked once a move).
        self._stepping_needs_quoting: bool | None = None
        self._roles: dict[int, str] = {}
        self._refusal: tuple[int, str] | None = None
        self.game_info: Mapping[int, Mapping[str, Any]] = {}

    @property
    def started(self) -> bool:
        """Whether :meth:`start` has dealt the game (a player's copy counts as started)."""
        return self._env is not None or bool(self._moves) or any(self._observations)

    def start(self, seed: int | None) -> None:
        """Make the TextArena env and reset it with ``seed`` (``None``: TextArena's own default)."""
        textarena = _textarena(self.spec.env_id)
        own = random.Random(seed)
        self._functions = {name: getattr(own, name) for name in _RANDOM_FUNCTIONS}
        saved = self._swap_random_in()
        try:
            try:
                env = self.spec.make_env(textarena)
                for name in self.spec.wrappers:
                    env = _wrapper(name)(env=env)
                _incremental_views(env)
                env.reset(num_players=self.spec.players, seed=seed)
                if self.spec.error_allowance is not None:  # SPIRAL's scripts do the same
                    env.state.error_allowance = self.spec.error_allowance
            except (AssertionError, LookupError, TypeError, ValueError) as error:
                # TextArena refuses a player count or a keyword with an assert or a TypeError,
                # and a game whose data (NLTK's word lists) is missing with a LookupError.
                lines = [line.strip() for line in str(error).splitlines()]
                reason = next((line for line in lines if any(c.isalpha() for c in line)), "")
                raise ValueError(
                    f"TextArena cannot start {self.spec.env_id} with {self.spec.players} "
                    f"players: {reason or type(error).__name__}"
                ) from error
            self._env = env
            self._quote_seat_text()
            self._observe()
        finally:
            _RANDOM_NAMESPACE.update(saved)

    def apply_action(self, move: str) -> None:
        """Send ``move`` to TextArena's ``step``; its rules decide what happens."""
        if self._env is None:
            raise ValueError("a player's copy of a TextArena game cannot be played")
        if self._done:
            raise ValueError("the game is over")
        mover = self._current
        self._moves.append((mover, move))
        self._stepping = move
        self._stepping_needs_quoting = None
        saved = self._swap_random_in()
        try:
            done, _ = self._env.step(action=move)
            if done:
                self._finish()
                self._note_refusal(mover)
            else:
                self._observe()
        finally:
            _RANDOM_NAMESPACE.update(saved)
            self._stepping = ""

    def refusal(self) -> tuple[int, str] | None:
        """``(seat, TextArena's reason)`` if TextArena ended the game on that seat's move.

        TextArena ends it so once it refuses a move of a seat whose error allowance is spent;
        ``None`` for a game still going or ended by its rules.
        """
        return self._refusal

    # -- OpenSpiel's State interface ----------------------------------------------------------

    def current_player(self) -> int:
        """The seat to move, or OpenSpiel's terminal id once the game is over."""
        return _TERMINAL if self._done else self._current

    def is_terminal(self) -> bool:
        """Whether TextArena ended the game."""
        return self._done

    def is_simultaneous_node(self) -> bool:
        """Turns are TextArena's: one seat at a time."""
        return False

    def moves(self) -> tuple[tuple[int, str], ...]:
        """Every move sent to TextArena, as ``(seat, text)``, in order."""
        return tuple(self._moves)

    def returns(self) -> list[float]:
        """TextArena's rewards at the end of the game (0 before it ends)."""
        return list(self._returns)

    def rewards(self) -> list[float]:
        """TextArena pays at the end only: the returns once the game is over."""
        return self.returns() if self._done else [0.0] * self.spec.players

    def observation_string(self, player: int) -> str:
        """What TextArena showed ``player`` at its latest turn (empty before its first)."""
        return self._observations[player]

    def information_state_string(self, player: int) -> str:
        """A seat knows what TextArena showed it: its observation."""
        return self._observations[player]

    def clone(self) -> TextArenaState:
        """A copy for a player: texts, turn and returns; no TextArena env."""
        copy_ = TextArenaState(self.spec)
        copy_._observations = list(self._observations)
        copy_._current, copy_._done = self._current, self._done
        copy_._returns = list(self._returns)
        copy_._moves = list(self._moves)
        copy_.game_info = copy.deepcopy(self.game_info)
        copy_._refusal = self._refusal
        return copy_

    def __str__(self) -> str:
        lines = [f"{self.spec.textarena_id} ({self.spec.players} players)"]
        lines += [f"move {seat}: {text}" for seat, text in self._moves]
        if self._done:
            lines.append(f"returns: {self._returns}")
        return "\n".join(lines)

    def referee_view(self) -> Any:
        """TextArena's own game state (``env.state``: the board, the scores, hidden cards).

        The game master's view, for what reads a finished game's course (the MindGames reward
        definitions replay a game through it); never handed to a seat (a player's copy has
        none: ``None``).
        """
        return None if self._env is None else getattr(self._env, "state", None)

    def referee_env(self) -> Any:
        """TextArena's env itself, unwrapped (its rules' attributes: Codenames' ``board``)."""
        env = self._env
        while env is not None and hasattr(env, "env"):
            env = env.env
        return env

    # -- internals ------------------------------------------------------------------------------

    def _observe(self) -> None:
        """Ask TextArena whose turn it is and keep what it shows that seat."""
        player, observation = self._env.get_observation()
        self._current = int(player)
        self._observations[self._current] = _as_text(observation, self._roles)

    def _quote_seat_text(self) -> None:
        """Make every text a seat wrote reach the others as a quotation (:mod:`.seat_text`).

        TextArena records what each seat sees through its state's ``add_observation``; this
        wraps that method of the game's state: a seat's move (``PLAYER_ACTION`` from a seat)
        is quoted before TextArena files it, and so is the move being played wherever the
        game master's own messages repeat it verbatim. Honest text passes unchanged.
        """
        state: Any = getattr(self._env, "state", None)
        original = getattr(state, "add_observation", None)
        if original is None:  # not a TextArena state: nothing is filed through it
            return
        textarena = _textarena(self.spec.env_id)
        game, from_seat = textarena.GAME_ID, textarena.ObservationType.PLAYER_ACTION
        self._roles = {
            int(seat): str(role)
            for seat, role in dict(getattr(state, "role_mapping", None) or {}).items()
            if seat != game
        }
        tags = role_tags([*self._roles.values(), "GAME"])

        def add_observation(
            message: Any, observation_type: Any, from_id: int = game, to_id: int = -1
        ) -> Any:
            if isinstance(message, str):
                move = self._stepping
                if observation_type == from_seat and from_id != game:
                    message = quote(message, tags)
                elif move and move in message and self._move_needs_quoting(tags):
                    message = message.replace(move, quote(move, tags))
            return original(
                message=message, observation_type=observation_type, from_id=from_id, to_id=to_id
            )

        state.add_observation = add_observation

    def _move_needs_quoting(self, tags: re.Pattern[str]) -> bool:
        """Whether the move being played has a line break or a role tag (asked once a move)."""
        needed = self._stepping_needs_quoting
        if needed is None:
            # quote's cache answers a move already seen (``[check]``...) without a regex.
            move = self._stepping
            needed = self._stepping_needs_quoting = quote(move, tags) != move
        return needed

    def _finish(self) -> None:
        """Read TextArena's rewards (``close()``) and end the game."""
        closed = self._env.close()
        rewards, info = closed if isinstance(closed, tuple) else (closed, {})
        rewards = rewards or {}
        self._returns = [float(rewards.get(seat, 0.0)) for seat in range(self.spec.players)]
        self.game_info = info or {}
        self._done = True
        # The quoting wrapper refers back to this state: drop it now that nothing more is
        # filed, so that the finished game is freed at once rather than by the cycle collector.
        state: Any = getattr(self._env, "state", None)
        if "add_observation" in getattr(state, "__dict__", {}):
            del state.add_observation  # TextArena's own method again

    def _note_refusal(self, mover: int) -> None:
        """Keep ``(mover, reason)`` if TextArena ended the game on the mover's invalid move."""
        info = self.game_info.get(mover) or {}
        if info.get("invalid_move"):
            self._refusal = (mover, str(info.get("reason") or "TextArena refused the move"))

    def _swap_random_in(self) -> dict[str, Any]:
        """Make the ``random`` module's functions this game's own; returns what they were.

        TextArena calls the ``random`` module's functions (``random.seed``, ``random.choice``,
        ...), which are methods of one hidden global generator. For each call into TextArena,
        each of them is the same method of this game's :class:`random.Random` instead (swapped
        into the module's namespace), and the caller puts the returned ones back in a
        ``finally``: the process's global RNG is never drawn from.
        (Copying the global generator's state out and in, as ``getstate``/``setstate`` do, cost
        a tuple of 625 integers twice per move: more than TextArena's own step; the swap is a
        plain call and a ``finally``, not a ``contextmanager``, whose generator costs more per
        move than the swap itself.)
        """
        module = _RANDOM_NAMESPACE
        saved = dict(zip(_RANDOM_FUNCTIONS, _current_functions(module), strict=True))
        module.update(self._functions)
        return saved


#: The ``random`` module's namespace, where TextArena looks its functions up at each call.
_RANDOM_NAMESPACE: dict[str, Any] = vars(random)

#: The ``random`` module's functions that draw from (or reseed) its global generator: the names
#: bound to that generator's methods when the module was imported.
_RANDOM_FUNCTIONS = tuple(
    name
    for name, value in vars(random).items()
    if not name.startswith("_") and getattr(value, "__self__", None) is random._inst
)

#: The ``random`` module's functions now, in the order of ``_RANDOM_FUNCTIONS`` (one C call).
_current_functions = operator.itemgetter(*_RANDOM_FUNCTIONS)


#: Where TextArena keeps its wrappers (``FirstLastObservationWrapper``, which SPIRAL used, is
#: not exported from ``textarena.wrappers`` in 0.7).
_WRAPPER_MODULES = (
    "textarena.wrappers",
    "textarena.wrappers.ObservationWrappers.llm_observation_wrapper",
)


def _textarena(env_id: str) -> Any:
    """The ``textarena`` module (imported by the first game made; ``env_id`` names it in errors)."""
    module = sys.modules.get("textarena")
    return module if module is not None else require("textarena", f"the TextArena game {env_id}")


def _incremental_views(env: Any) -> None:
    """Make ``env``'s conversation wrappers format only new messages (:mod:`.textarena_views`)."""
    from strategic_arena.games.textarena_views import convert_incrementally

    convert_incrementally(env)


def _wrapper(name: str) -> Any:
    """TextArena's wrapper class ``name`` (``LLMObservationWrapper``...)."""
    for module in _WRAPPER_MODULES:
        found = getattr(require(module), name, None)
        if found is not None:
            return found
    raise ValueError(f"TextArena has no wrapper {name!r}")


def _as_text(observation: object, roles: Mapping[int, str]) -> str:
    """A TextArena observation as text: a string as is, a message list one message per line.

    In a list (a ``-raw`` id without wrappers), a seat's move is shown after its author's tag
    (``[Player 0] ...``), as TextArena's wrappers show it: another seat's words are marked as
    theirs in every rendering.
    """
    if isinstance(observation, str):
        return observation
    if isinstance(observation, Sequence):
        return "\n".join(_message_text(item, roles) for item in observation)
    return str(observation)


def _message_text(item: object, roles: Mapping[int, str]) -> str:
    """One message of a TextArena message list, a seat's move after its author's tag."""
    if not isinstance(item, Sequence) or isinstance(item, str) or len(item) < 2:
        return str(item)
    kind = getattr(item[2], "name", None) if len(item) >= 3 else None
    author = roles.get(item[0]) if isinstance(item[0], int) else None
    if kind == "PLAYER_ACTION" and author is not None:
        return f"[{author}] {item[1]}"
    return str(item[1])


class TextArenaSpec(GameSpec):
    """A TextArena environment as a free-text game (``textarena/<EnvId>`` or a curated entry).

    Attributes (beyond :class:`GameSpec`'s):
        textarena_id: TextArena's environment id (``SimpleNegotiation-v0``).
        players: number of seats (one of the counts the TextArena game supports).
        params: keyword arguments given to ``ta.make`` (override the registered ones).
        example: the example move of the answer-format section of prompts.
        wrappers: TextArena wrappers applied in order after ``ta.make`` (by class name: a
            curated entry reproduces the observation a paper's model saw, e.g. SPIRAL's
            ``LLMObservationWrapper`` over a ``-raw`` id).
        sample_moves: well-formed moves of the game, from which the ``random`` player draws.
        seat_teams: the team of each seat where TextArena's game has teams (Codenames).
        error_allowance: invalid moves TextArena forgives a seat before it loses (``None``:
            TextArena's default, one retry; SPIRAL's entries: 0, a refused move loses at once).
    """

    rules_engine = "TextArena"
    move_kind = "text"
    max_move_chars = 2_000
    public_moves = False
    tensor_bounds = (0.0, 1.0)
    openspiel_name = ""
    openspiel_params: Mapping[str, int | float | bool | str] = {}
    listing = Listing(
        no_solver=(
            "no built-in solver plays TextArena's free-text games (the random player draws "
            "from the game's sample moves); evaluate a model with --base-url"
        )
    )

    def __init__(
        self,
        textarena_id: str,
        *,
        players: int = 2,
        params: Mapping[str, int | float | bool | str] | None = None,
        env_id: str | None = None,
        title: str | None = None,
        prompt_dir: str = "textarena",
        example: str = "[your move]",
        move_pattern: str | None = None,
        move_hint: str = "",
        wrappers: Sequence[str] = (),
        sample_moves: Sequence[str] = (),
        seat_teams: Sequence[int] | None = None,
        error_allowance: int | None = None,
    ) -> None:
        if players < 1:
            raise ValueError(f"players must be at least 1, got {players}")
        self.textarena_id = textarena_id
        self.players = players
        self.params = dict(params or {})
        self.env_id = env_id or f"{PREFIX}{textarena_id}"
        self.title = title or textarena_id
        self.prompt_dir = prompt_dir
        self.example = example
        self.grammar = FreeTextGrammar(move_pattern, move_hint)
        self.wrappers = tuple(wrappers)
        self.sample_moves = tuple(sample_moves) or (example,)
        self.seat_teams = None if seat_teams is None else tuple(seat_teams)
        if error_allowance is not None and error_allowance < 0:
            raise ValueError(f"error_allowance must be >= 0, got {error_allowance}")
        self.error_allowance = error_allowance

    @functools.cached_property
    def game(self) -> Any:  # noqa: D102 - documented on GameSpec
        return TextArenaGame(self)

    def make_env(self, textarena: Any) -> Any:
        """TextArena's env of this entry, before the ``wrappers``: ``ta.make(id, **params)``.

        An entry that must build its env otherwise (Codenames without NLTK's corpus) overrides
        this; the rules stay TextArena's.
        """
        return textarena.make(self.textarena_id, **dict(self.params))

    @property
    def num_players(self) -> int:
        """Number of seats."""
        return self.players

    @property
    def rules_source(self) -> str:
        """TextArena's release and environment id, with the keyword arguments of ``ta.make``.

        The release is part of it: a TextArena release may change a game's prompts and rules.
        """
        params = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        try:
            release = importlib.metadata.version("textarena")
        except importlib.metadata.PackageNotFoundError:
            release = "(not installed)"
        game = self.textarena_id + (f"({params})" if params else "")
        if self.error_allowance is not None:
            game += f" error_allowance={self.error_allowance}"
        return f"TextArena {release} {game}"

    @property
    def reward_range(self) -> tuple[float, float]:
        """TextArena's rewards: -1 (a loss) to +1 (a win), 0 for a draw."""
        return -1.0, 1.0

    @property
    def tensor_size(self) -> int:
        """No tensor: the observation is text."""
        return 0

    def role(self, player: int) -> str:
        """``Player N``: who moves when is TextArena's (its view says so), not seat order."""
        return f"Player {player}"

    def observation_text(self, state: pyspiel.State, player: int) -> str:
        """Exactly what TextArena showed ``player`` at its latest turn."""
        return str(state.observation_string(player))

    def menu(self, state: pyspiel.State, player: int) -> dict[int, str]:
        """No menu: moves are texts."""
        return {}

    def example_action(self, seat: int) -> str:
        """The example move of the prompts' answer-format section."""
        return self.example


def check_textarena_id(textarena_id: str) -> None:
    """Raise ``ValueError`` unless TextArena registers ``textarena_id`` (imports TextArena)."""
    textarena = require("textarena", f"the TextArena game {textarena_id}")
    registry = textarena.envs.registration.ENV_REGISTRY
    if textarena_id not in registry:
        raise ValueError(
            f"TextArena has no environment {textarena_id!r}; see "
            "textarena.envs.registration.ENV_REGISTRY for the list"
        )
