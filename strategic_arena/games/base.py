"""The game contract: what a curated game is, and how its actions read as text.

A :class:`GameSpec` says what the game is -- OpenSpiel name and parameters, rules, roles, the
text a seat sees, reward range -- and owns an :class:`ActionGrammar` that renders every legal action
as one canonical text and parses text back. The environment (:mod:`strategic_arena.env`) adapts a
spec to PettingZoo; prompting and validation are separate layers that only call into the spec.

Canonical action texts may depend on the state (in Kuhn poker the pass action reads ``check``
with no bet outstanding and ``fold`` facing one). A *menu* -- the mapping ``{action id: canonical
text}`` of the legal actions in the current state -- carries that context: the grammar resolves
synonyms against the menu, so ``validate`` needs nothing but the menu the prompt listed.
"""

from __future__ import annotations

import abc
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Literal, TypeAlias

import pyspiel

from strategic_arena.actions import TEXT_MOVE, Action, ActionError
from strategic_arena.door import read_text
from strategic_arena.games.listing import Listing
from strategic_arena.games.seats import turns
from strategic_arena.prompt_files import default_version, package_root

Menu = Mapping[int, str]
"""Legal actions of one decision: action id -> canonical text, in action-id order."""

MoveKind: TypeAlias = Literal["menu", "text"]
"""How a game takes a move: ``menu`` -- one of the legal action ids, read from its text by the
game's :class:`ActionGrammar`; ``text`` -- a free text that the game itself validates when it is
played (TextArena's games: ``[Offer: 3 Sheep -> 5 Brick]``), read by :class:`FreeTextGrammar`."""

_WRAPPERS = "\"'`*_<>[]{}()"
_SPACES = re.compile(r"\s+")
_NOT_KEY = re.compile(r"[\s\"'`*<>\[\]{}()]+")


def normalize(text: str) -> str:
    """Lower-case ``text``, collapse whitespace and peel wrapping quotes, brackets and a final dot.

    ``'  <X(0, 2)>. '`` becomes ``'x(0, 2)'``; inner brackets stay (grammars read them).
    """
    key = _SPACES.sub(" ", text).strip().lower()
    previous = None
    while key != previous:
        previous = key
        key = key.rstrip(".!;").strip()
        if len(key) >= 2 and key[0] in _WRAPPERS and key[-1] in _WRAPPERS:
            pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
            if pairs.get(key[0], key[0]) == key[-1] and _balanced_inside(key):
                key = key[1:-1].strip()
    return key


def _balanced_inside(key: str) -> bool:
    """Whether stripping the outer pair of ``key`` leaves balanced brackets (so ``(0,1)`` stays)."""
    inner = key[1:-1]
    depth = 0
    for char in inner:
        if char in "([{<":
            depth += 1
        elif char in ")]}>":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def compact(text: str) -> str:
    """The matching key of a text: :func:`normalize`, then drop all spaces, quotes and brackets."""
    return _NOT_KEY.sub("", normalize(text))


class ActionGrammar(abc.ABC):
    """Canonical text for every action of one game, and the parser that reads text back.

    Subclasses implement :meth:`text` (the context-free canonical text), optionally
    :meth:`texts` (context-dependent canonical texts of the legal actions in a state) and
    :meth:`interpret` (synonyms and OpenSpiel's own action strings).
    """

    def __init__(self, num_actions: int) -> None:
        self.num_actions = num_actions

    @abc.abstractmethod
    def text(self, action: int) -> str:
        """Canonical text of ``action`` without context (used when only ids are known)."""

    def texts(self, state: pyspiel.State, player: int) -> dict[int, str]:
        """The menu of ``state``: canonical text of each legal action of ``player``."""
        return {action: self.text(action) for action in state.legal_actions(player)}

    def menu_for(self, legal_actions: Menu | Sequence[int]) -> dict[int, str]:
        """A menu from a menu (copied) or from bare action ids (context-free texts)."""
        if isinstance(legal_actions, Mapping):
            return dict(legal_actions)
        return {int(action): self.text(int(action)) for action in legal_actions}

    @abc.abstractmethod
    def interpret(self, key: str, menu: Menu) -> int | ActionError | None:
        """Read a normalized answer that is not a canonical text.

        Args:
            key: the answer after :func:`normalize`.
            menu: the legal actions of this decision.

        Returns:
            an action id (legal or not: :meth:`parse` checks), an :class:`ActionError` when the
            answer names a move that cannot be played here, or ``None`` when it names no move.
        """

    def parse(self, answer: str, menu: Menu) -> Action | ActionError:
        """Read ``answer`` (the text inside the answer block) as one of the ``menu``'s actions."""
        key = normalize(answer)
        if not key:
            return ActionError("no_action", "the answer is empty")
        wanted = compact(key)
        for action, text in menu.items():
            if compact(text) == wanted:
                return Action(action, text)
        candidate = self.interpret(key, menu)
        if isinstance(candidate, ActionError):
            return candidate
        if candidate is None or not 0 <= candidate < self.num_actions:
            return ActionError(
                "unknown_action",
                f"{_quote(answer)} is not an action of this game; legal actions: {_listing(menu)}",
            )
        if candidate in menu:
            return Action(candidate, menu[candidate])
        return ActionError(
            "illegal_action",
            f"{self.text(candidate)} is not legal now; legal actions: {_listing(menu)}",
        )


class FreeTextGrammar(ActionGrammar):
    """The grammar of a free-text game: a move is any non-empty text the game will judge.

    There is no menu: :meth:`parse` returns ``Action(TEXT_MOVE, text)`` with the answer's text
    exactly as written (outer whitespace stripped), and the game decides its legality when it is
    played (TextArena's own invalid-move rules). ``pattern``, when given, is a syntactic check the
    text must pass first (a regular expression searched in it; ``hint`` says what it wants), so a
    game can refuse a malformed move as a typed ``unknown_action`` before it reaches the rules.
    """

    def __init__(self, pattern: str | None = None, hint: str = "") -> None:
        super().__init__(num_actions=0)
        self.pattern = re.compile(pattern, re.IGNORECASE | re.DOTALL) if pattern else None
        self.hint = hint

    def text(self, action: int) -> str:
        """Free-text moves have no canonical text by id."""
        raise ValueError(f"a free-text game has no action {action}: its moves are texts")

    def menu_for(self, legal_actions: Menu | Sequence[int]) -> dict[int, str]:
        """No menu: every move is a text."""
        return {}

    def interpret(self, key: str, menu: Menu) -> int | ActionError | None:
        """Never called: :meth:`parse` reads every text itself."""
        return None

    def parse(self, answer: str, menu: Menu) -> Action | ActionError:
        """The answer as a text move, or ``no_action`` / ``unknown_action`` (``pattern``)."""
        move = answer.strip()
        if not move:
            return ActionError("no_action", "the answer is empty")
        if self.pattern is not None and self.pattern.search(move) is None:
            return ActionError(
                "unknown_action", f"{_quote(move)} is not a move of this game; {self.hint}"
            )
        return Action(TEXT_MOVE, move)


def _quote(answer: str, limit: int = 60) -> str:
    """``answer`` quoted and cut to ``limit`` characters, safe to echo back as feedback."""
    flat = _SPACES.sub(" ", answer).strip()
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")


def _listing(menu: Menu) -> str:
    """The menu's texts joined for an error message."""
    return ", ".join(menu.values())


@functools.cache
def load_game(name: str, params: tuple[tuple[str, object], ...] = ()) -> pyspiel.Game:
    """Load (once) the OpenSpiel game ``name`` with ``params`` given as sorted key-value pairs."""
    return pyspiel.load_game(name, dict(params))


def prompt_text(folder: str, name: str) -> str | None:
    """Read ``prompts/<folder>/<name>`` of the package's prompts, or ``None`` if absent."""
    path = package_root() / folder / name
    return read_text(path, "package") if path.is_file() else None


class GameSpec(abc.ABC):
    """What one text game is: OpenSpiel game, rules, roles, seat views and action grammar.

    Attributes:
        env_id: the versioned id passed to :func:`strategic_arena.make`.
        title: the game's name in prompts.
        openspiel_name / openspiel_params: the pyspiel game.
        prompt_dir: folder under ``prompts/`` with ``rules.txt`` and optional style templates.
        cooperative: shared reward (Hanabi) rather than zero-sum.
        optimum / worst: the best and worst mean return a seat can get, used by the
            normalized score ``(x - worst) / (optimum - worst)``.
        tensor_bounds: bounds of every entry of the observation tensor (for the Box space).
        forfeit_stake: what a forfeiting seat loses in a zero-sum game.
        memoize_observations: whether envs may cache observations by observation string.
        lazy_text: whether envs build the observation's text only when it is read.
        seat_teams: the team of each seat (``None``: the default of :attr:`teams`).

    Seats: a game has :attr:`num_players` seats (any N >= 1). At a simultaneous turn
    (:attr:`simultaneous` games) every seat acts at once (:mod:`strategic_arena.games.seats`).
        listing: how the arena uses the game (opponents, solver-suite entrant, defaults,
            protocols, ladder counts): see :mod:`strategic_arena.games.listing`.
    """

    env_id: str
    title: str
    openspiel_name: str
    openspiel_params: Mapping[str, int | float | bool | str]
    prompt_dir: str
    cooperative: bool = False
    optimum: float = 1.0
    worst: float = -1.0
    tensor_bounds: tuple[float, float] = (0.0, 1.0)
    forfeit_stake: float = 1.0
    #: The seat's observation string determines its whole observation (perfect-information
    #: games with no hidden history), so envs may memoize observations by it.
    memoize_observations: bool = False
    #: The text costs far more than a step (Hanabi's): envs build it when the observation's
    #: ``"text"`` is first read (:class:`~strategic_arena.lazy_observation.LazyObservation`).
    lazy_text: bool = False
    #: Every seat sees every move (not the chance outcomes): true of the curated games, where
    #: only cards are hidden; a seat's information then lists the moves.
    public_moves: bool = True
    #: The team of each seat, seat order (``None``: the default of :attr:`teams`).
    seat_teams: tuple[int, ...] | None = None
    #: How the arena uses the game; the tables of defaults, ladder and opponents derive from it.
    listing: Listing = Listing()
    #: The peer library whose rules the game runs on (named where its raw state is shown).
    rules_engine: str = "OpenSpiel"
    #: ``menu`` (action ids) or ``text`` (free text the game validates): see :data:`MoveKind`.
    move_kind: MoveKind = "menu"
    #: Longest answer read as a move (a menu move is short; a free-text move may be a message).
    max_move_chars: int = 200
    #: Well-formed moves of a free-text game, which the ``random`` player draws from (a menu
    #: game's random player draws from the menu instead).
    sample_moves: tuple[str, ...] = ()
    #: A free-text game whose move is the seat's whole response, whatever the answer style
    #: found in it (MAPoRL's debate: the solution is the move, and a malformed one is the
    #: game's to score, never a forfeit); see :func:`strategic_arena.turn.judge_response`.
    move_is_response: bool = False
    grammar: ActionGrammar

    @property
    def rules_source(self) -> str:
        """Who defines the rules: the peer library and its game (``OpenSpiel kuhn_poker(...)``)."""
        params = ",".join(f"{k}={v}" for k, v in sorted(self.openspiel_params.items()))
        return f"OpenSpiel {self.openspiel_name}" + (f"({params})" if params else "")

    @property
    def reward_range(self) -> tuple[float, float]:
        """The lowest and highest return a seat can get, as the rules define them."""
        return float(self.game.min_utility()), float(self.game.max_utility())

    @property
    def prompt_version(self) -> dict[str, str]:
        """The version of the package's prompts this game reads, as stored with each game.

        ``{"name": "default", "digest": ...}``: the digest covers exactly the prompt files the
        game reads (the shared layouts and styles and its own folder), so editing one game's
        rules makes a new version of that game only (:mod:`strategic_arena.prompt_files`).
        """
        return default_version(self.prompt_dir)

    @functools.cached_property
    def game(self) -> pyspiel.Game:
        """The loaded pyspiel game (shared by every env of this spec)."""
        return load_game(self.openspiel_name, tuple(sorted(self.openspiel_params.items())))

    @property
    def num_players(self) -> int:
        """Number of seats."""
        return int(self.game.num_players())

    @property
    def teams(self) -> tuple[int, ...]:
        """The team of each seat, in seat order.

        ``seat_teams`` when set, else one team in a cooperative game, else every seat its own
        team (free-for-all; with two seats the usual head-to-head).
        """
        if self.seat_teams is not None:
            return self.seat_teams
        if self.cooperative:
            return (0,) * self.num_players
        return tuple(range(self.num_players))

    @property
    def simultaneous(self) -> bool:
        """Whether seats act at once at some turns (OpenSpiel's simultaneous-move games)."""
        dynamics = self.game.get_type().dynamics
        return bool(dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS)

    @functools.cached_property
    def rules(self) -> str:
        """The rules as told to a player, from ``prompts/<prompt_dir>/rules.txt``."""
        text = prompt_text(self.prompt_dir, "rules.txt")
        if text is None:
            raise FileNotFoundError(f"no rules.txt under prompts/{self.prompt_dir}")
        return text.strip()

    def player_name(self, player: int) -> str:
        """Short name of a seat used in move histories (e.g. ``X`` or ``Player 1``)."""
        return f"Player {player}"

    def role(self, player: int) -> str:
        """The seat as told in the system prompt (e.g. ``player 0, playing X, moving first``)."""
        order = "first" if player == 0 else "second" if player == 1 else f"number {player + 1}"
        return f"Player {player} (you act {order})"

    @abc.abstractmethod
    def observation_text(self, state: pyspiel.State, player: int) -> str:
        """What ``player`` sees in ``state``, in words: never more than the seat may know."""

    def observation_tensor(self, state: pyspiel.State, player: int) -> Sequence[float]:
        """OpenSpiel's observation tensor of ``player`` (flat)."""
        return state.observation_tensor(player)  # type: ignore[no-any-return]

    @property
    def tensor_size(self) -> int:
        """Length of the flat observation tensor."""
        size = 1
        for dim in self.game.observation_tensor_shape():
            size *= int(dim)
        return size

    def menu(self, state: pyspiel.State, player: int) -> dict[int, str]:
        """Legal actions of ``player`` with their canonical texts."""
        return self.grammar.texts(state, player)

    def describe_move(
        self, state: pyspiel.State, player: int, action: int, text: str
    ) -> str | None:
        """One public move-history line, built from the state *before* the move.

        ``text`` is the move's canonical text. Games whose moves reveal something (a Hanabi play
        shows the card) override this to say what everyone saw; ``None`` marks a private move
        that no history line may show.
        """
        return f"{self.player_name(player)}: {text}"

    def example_action(self, seat: int) -> str:
        """A plausible canonical action text of ``seat`` for the format example in prompts."""
        return self.grammar.text(0)

    def observation_problem(self, observation: str) -> str | None:
        """Why no position of the game shows a seat ``observation``; ``None`` when one may.

        A served player rebuilds its seat from a request that anyone can write
        (:mod:`strategic_arena.seat_checks` turns a problem into the server's 400 before any
        search). A game whose solver would work on an impossible observation says here what no
        position shows (Hanabi: hands, tokens, deck and cards beyond its variant). The default
        knows no limit beyond the bounds every game has.
        """
        return None

    def forfeit_returns(self, offender: int) -> list[float]:
        """Returns when ``offender`` forfeits (an invalid move under the ``forfeit`` policy).

        Zero-sum games: the offender's team (:attr:`teams`; alone by default) loses
        ``forfeit_stake`` per seat and the other seats share the gain (+1 / -1 in every curated
        competitive game: a lost game, or the ante in poker, as in MARSHAL's protocol); a game
        of one seat just loses the stake. Cooperative games: the game ends with a score of 0 for
        everyone.
        """
        n = self.num_players
        if self.cooperative:
            return [0.0] * n
        teams = self.teams
        losers = [seat for seat in range(n) if teams[seat] == teams[offender]]
        others = [seat for seat in range(n) if teams[seat] != teams[offender]]
        returns = [0.0] * n
        for seat in others:
            returns[seat] = self.forfeit_stake * len(losers) / len(others)
        for seat in losers:
            returns[seat] = -self.forfeit_stake
        return returns


def move_history(spec: GameSpec, state: pyspiel.State) -> tuple[str, ...]:
    """Public history lines of ``state``, by replaying its history through ``spec.describe_move``.

    Chance outcomes (deals, draws) are applied but never described; a move whose
    ``describe_move`` returns ``None`` is private and left out. The moves of a simultaneous
    turn are described from the state before the turn, in seat order.
    """
    lines: list[str] = []
    for replay, moves in turns(spec.game, state.history()):
        for player, action in moves:
            menu = spec.menu(replay, player)
            text = menu.get(action, spec.grammar.text(action))
            line = spec.describe_move(replay, player, action, text)
            if line is not None:
                lines.append(line)
    return tuple(lines)
