"""Game specs: the six curated games and the generic ``openspiel/<name>`` adapter.

Curated specs are imported on first use (the registry stores ``module:Class`` paths), so
``import strategic_arena`` stays cheap.
"""

from __future__ import annotations

import functools
import importlib

from strategic_arena.games.base import ActionGrammar, GameSpec, Menu, compact, normalize

#: Curated env id -> ``module:Class`` of its :class:`GameSpec`.
CURATED: dict[str, str] = {
    "tic_tac_toe-v0": "strategic_arena.games.tic_tac_toe:TicTacToe",
    "connect_four-v0": "strategic_arena.games.connect_four:ConnectFour",
    "kuhn_poker-v0": "strategic_arena.games.kuhn_poker:KuhnPoker",
    "leduc_holdem-v0": "strategic_arena.games.leduc_poker:LeducPoker",
    "mini_hanabi-v0": "strategic_arena.games.hanabi:MiniHanabi",
    "simple_hanabi-v0": "strategic_arena.games.hanabi:SimpleHanabi",
}

GENERIC_PREFIX = "openspiel/"

__all__ = [
    "CURATED",
    "GENERIC_PREFIX",
    "ActionGrammar",
    "GameSpec",
    "Menu",
    "compact",
    "get_spec",
    "list_envs",
    "normalize",
]


def list_envs() -> list[str]:
    """The curated env ids (any ``openspiel/<game_name>`` works as well)."""
    return list(CURATED)


def get_spec(env_id: str, **params: int | float | bool | str) -> GameSpec:
    """The :class:`GameSpec` of ``env_id``.

    Args:
        env_id: a curated id from :func:`list_envs`, ``openspiel/<game_name>``, or
            ``openspiel/<game_name>(key=value,...)`` (OpenSpiel's game string: the id a game
            with parameters is stored under).
        params: OpenSpiel game parameters, only for ``openspiel/<game_name>``.

    Raises:
        ValueError: unknown id, unknown OpenSpiel game, or parameters given to a curated game.
    """
    if env_id in CURATED:
        if params:
            raise ValueError(
                f"{env_id} takes no game parameters (got {sorted(params)}); curated games have "
                f"fixed rules. Use 'openspiel/<game_name>' to pass OpenSpiel parameters."
            )
        return _curated(env_id)
    if env_id.startswith(GENERIC_PREFIX):
        name, named = _game_string(env_id[len(GENERIC_PREFIX) :])
        if named and params:
            raise ValueError(
                f"{env_id} names its parameters already; do not pass {sorted(params)} as well"
            )
        return _generic(name, tuple(sorted({**named, **params}.items())))
    raise ValueError(
        f"unknown env id {env_id!r}; curated ids: {', '.join(CURATED)}; "
        "or 'openspiel/<game_name>' for any OpenSpiel game"
    )


def _game_string(text: str) -> tuple[str, dict[str, int | float | bool | str]]:
    """``hanabi(players=3)`` -> ``("hanabi", {"players": 3})``; a bare name has no parameters."""
    if "(" not in text:
        return text, {}
    import pyspiel

    try:
        parsed = dict(pyspiel.game_parameters_from_string(text))
    except pyspiel.SpielError as error:
        raise ValueError(f"cannot read the game string {text!r}: {error}") from error
    name = str(parsed.pop("name", ""))
    if any(isinstance(value, dict) for value in parsed.values()):
        raise ValueError(f"{text!r}: nested game parameters are not supported")
    return name, parsed


@functools.cache
def _curated(env_id: str) -> GameSpec:
    module_name, class_name = CURATED[env_id].split(":")
    spec: GameSpec = getattr(importlib.import_module(module_name), class_name)()
    return spec


@functools.lru_cache(maxsize=64)
def _generic(game_name: str, params: tuple[tuple[str, int | float | bool | str], ...]) -> GameSpec:
    import pyspiel

    from strategic_arena.games.generic import GenericSpec

    if game_name not in pyspiel.registered_names():
        raise ValueError(
            f"OpenSpiel has no game {game_name!r}; see pyspiel.registered_names() for the list"
        )
    try:
        return GenericSpec(game_name, dict(params))
    except pyspiel.SpielError as error:
        raise ValueError(
            f"cannot load openspiel/{game_name} with {dict(params)}: {error}"
        ) from error
