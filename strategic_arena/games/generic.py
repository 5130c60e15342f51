"""The generic adapter: any OpenSpiel game as a text game, ``openspiel/<game_name>``.

Curated games get hand-written text; every other game reads as OpenSpiel prints it. A seat sees
its ``observation_string`` (or ``information_state_string`` when the game provides only that) and
actions are named by ``action_to_string``. Action texts are state-dependent, so the grammar always
works from the menu; an answer may also be the bare action id (``#12`` or ``12``).

Any number of seats, and simultaneous-move games (blotto, goofspiel): at a simultaneous turn
every seat chooses from its own menu and the moves are applied together
(:mod:`strategic_arena.games.seats`). The env id names the parameters in OpenSpiel's own game
string, ``openspiel/hanabi(players=3)``, so a stored game says exactly which variant it played.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import pyspiel

from strategic_arena.actions import ActionError
from strategic_arena.games.base import ActionGrammar, GameSpec, Menu, compact
from strategic_arena.games.listing import Listing

_ACTION_ID = re.compile(r"^(?:action\s*)?#?\s*(\d+)$")


class GenericGrammar(ActionGrammar):
    """OpenSpiel's action strings; ``#id`` selects an action by id."""

    def __init__(self, game: pyspiel.Game) -> None:
        super().__init__(num_actions=int(game.num_distinct_actions()))
        self._state = game.new_initial_state()

    def text(self, action: int) -> str:
        """``#id``: without a state OpenSpiel cannot name an action."""
        return f"#{action}"

    def texts(self, state: pyspiel.State, player: int) -> dict[int, str]:
        """OpenSpiel's ``action_to_string`` of each legal action, made unique with ``#id``."""
        menu = {a: state.action_to_string(player, a) for a in state.legal_actions(player)}
        keys = [compact(text) for text in menu.values()]
        if len(set(keys)) != len(keys) or any(not key for key in keys):
            return {a: f"{text} #{a}" for a, text in menu.items()}
        return menu

    def interpret(self, key: str, menu: Menu) -> int | ActionError | None:
        """Accept the bare action id."""
        match = _ACTION_ID.match(key)
        return int(match.group(1)) if match else None


#: OpenSpiel's partnership games, by game name: the team of each seat (partners sit opposite
#: each other and share one return; OpenSpiel's game type has no field for it).
PARTNERSHIPS: dict[str, tuple[int, ...]] = {
    "bridge": (0, 1, 0, 1),
    "tiny_bridge_4p": (0, 1, 0, 1),
    "euchre": (0, 1, 0, 1),
    "spades": (0, 1, 0, 1),
}


def generic_env_id(game_name: str, params: Mapping[str, int | float | bool | str]) -> str:
    """``openspiel/<name>``, with the parameters as OpenSpiel's game string when there are any.

    ``openspiel/hanabi(players=3)``: the id alone rebuilds the game (store, replay, arena).
    """
    if not params:
        return f"openspiel/{game_name}"
    return "openspiel/" + str(pyspiel.game_parameters_to_string({"name": game_name, **params}))


class GenericSpec(GameSpec):
    """A text game over any OpenSpiel game, turn-taking or simultaneous (no hand-written rules)."""

    listing = Listing(
        no_solver=(
            "no built-in solver is written for an arbitrary OpenSpiel game (the random player "
            "plays any); evaluate a model with --base-url"
        )
    )

    def __init__(self, game_name: str, params: Mapping[str, int | float | bool | str]) -> None:
        self.env_id = generic_env_id(game_name, params)
        self.openspiel_name = game_name
        self.openspiel_params = dict(params)
        self.prompt_dir = "generic"
        game_type = self.game.get_type()
        self.title = game_type.long_name or game_name
        if game_type.dynamics not in (
            pyspiel.GameType.Dynamics.SEQUENTIAL,
            pyspiel.GameType.Dynamics.SIMULTANEOUS,
        ):
            raise ValueError(
                f"openspiel/{game_name} is neither a turn-taking nor a simultaneous-move game"
            )
        self.cooperative = game_type.utility == pyspiel.GameType.Utility.IDENTICAL
        partnership = PARTNERSHIPS.get(game_name)
        if partnership is not None and len(partnership) == self.num_players:
            self.seat_teams = partnership
        self.optimum = float(self.game.max_utility())
        self.forfeit_stake = -float(self.game.min_utility()) or 1.0
        self.worst = float(self.game.min_utility())
        self._uses_observation = bool(game_type.provides_observation_string)
        self._has_tensor = bool(game_type.provides_observation_tensor)
        self._perfect_information = (
            game_type.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        )
        self.public_moves = self._perfect_information
        self.tensor_bounds = (-float("inf"), float("inf"))
        self.grammar = GenericGrammar(self.game)

    @property
    def rules(self) -> str:  # type: ignore[override]
        """A generic statement: OpenSpiel games carry no rules text."""
        text = (
            f"You are playing the game '{self.title}' (OpenSpiel: {self.openspiel_name}). "
            "Follow its standard rules. Each turn you see your view of the game as OpenSpiel "
            "prints it and choose one of the legal actions."
        )
        if self.simultaneous:
            text += (
                " Every player chooses at the same time: you do not see the others' choices "
                "of this turn until all moves are made."
            )
        return text

    def role(self, player: int) -> str:
        """The seat; in a simultaneous-move game nobody acts first."""
        if not self.simultaneous:
            return super().role(player)
        return f"Player {player} of {self.num_players} (all players move at the same time)"

    def observation_text(self, state: pyspiel.State, player: int) -> str:
        """OpenSpiel's observation (or information state) string of the seat."""
        if self._uses_observation:
            return str(state.observation_string(player))
        return str(state.information_state_string(player))

    def observation_tensor(self, state: pyspiel.State, player: int) -> Sequence[float]:
        """OpenSpiel's observation tensor, or an empty one when the game has none."""
        if not self._has_tensor:
            return ()
        return state.observation_tensor(player)  # type: ignore[no-any-return]

    def describe_move(
        self, state: pyspiel.State, player: int, action: int, text: str
    ) -> str | None:
        """OpenSpiel's action string; moves are public only in perfect-information games."""
        if not self._perfect_information:
            return None
        return f"Player {player}: {text}"

    @property
    def tensor_size(self) -> int:
        """Observation tensor length (0 when the game provides no tensor)."""
        return super().tensor_size if self._has_tensor else 0
