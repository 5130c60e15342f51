"""Game specs: the curated games and the ``openspiel/<name>`` and ``textarena/<EnvId>`` adapters.

Curated specs are imported on first use (the registry stores ``module:Class`` paths), so
``import strategic_arena`` stays cheap.
"""

from __future__ import annotations

import functools
import importlib

from strategic_arena.games.base import ActionGrammar, GameSpec, Menu, compact, normalize

#: Curated env id -> ``module:Class`` of its :class:`GameSpec` (or ``module:factory``).
CURATED: dict[str, str] = {
    "tic_tac_toe-v0": "strategic_arena.games.tic_tac_toe:TicTacToe",
    "connect_four-v0": "strategic_arena.games.connect_four:ConnectFour",
    "kuhn_poker-v0": "strategic_arena.games.kuhn_poker:KuhnPoker",
    "leduc_holdem-v0": "strategic_arena.games.leduc_poker:LeducPoker",
    "mini_hanabi-v0": "strategic_arena.games.hanabi:MiniHanabi",
    "simple_hanabi-v0": "strategic_arena.games.hanabi:SimpleHanabi",
    "hanabi_3p-v0": "strategic_arena.games.hanabi_players:hanabi_3p",
    "hanabi_4p-v0": "strategic_arena.games.hanabi_players:hanabi_4p",
    "hanabi_5p-v0": "strategic_arena.games.hanabi_players:hanabi_5p",
}

#: Curated free-text entries (TextArena's games as SPIRAL and the MindGames winner played them;
#: the ``textarena`` extra): env id -> ``module:factory`` of its spec.
TEXT_GAMES: dict[str, str] = {
    f"{name}-v0": f"strategic_arena.games.textarena_games:{name}"
    for name in (
        "spiral_tic_tac_toe",
        "spiral_negotiation",
        "spiral_kuhn_poker",
        "spiral_pig_dice",
        "spiral_truth_and_deception",
        "spiral_snake",
        "mindgames_codenames",
        "mindgames_colonel_blotto",
        "mindgames_three_player_ipd",
    )
}

#: MAPoRL's collaborative debate (:mod:`strategic_arena.games.debate`): ``debate-v0``, or
#: ``debate-v0(agents=2,turns=2,problems=PATH,schema=gsm8k)`` with its parameters.
DEBATE_ID = "debate-v0"

GENERIC_PREFIX = "openspiel/"
#: Any TextArena environment: ``textarena/<EnvId>`` (the ``textarena`` extra).
TEXTARENA_PREFIX = "textarena/"

__all__ = [
    "CURATED",
    "DEBATE_ID",
    "GENERIC_PREFIX",
    "TEXTARENA_PREFIX",
    "TEXT_GAMES",
    "ActionGrammar",
    "GameSpec",
    "Menu",
    "compact",
    "get_spec",
    "list_envs",
    "list_text_envs",
    "normalize",
]


def list_envs() -> list[str]:
    """The curated env ids (any ``openspiel/<game_name>`` and ``textarena/<EnvId>`` work too)."""
    return list(CURATED)


def list_text_envs() -> list[str]:
    """The curated free-text ids (TextArena's games; any ``textarena/<EnvId>`` works too)."""
    return list(TEXT_GAMES)


def get_spec(env_id: str, **params: int | float | bool | str) -> GameSpec:
    """The :class:`GameSpec` of ``env_id``.

    Args:
        env_id: a curated id from :func:`list_envs` or :func:`list_text_envs`,
            ``openspiel/<game_name>``, ``openspiel/<game_name>(key=value,...)`` (OpenSpiel's
            game string: the id a game with parameters is stored under), or
            ``textarena/<EnvId>`` (``textarena/<EnvId>(key=value,...)`` likewise), or
            ``debate-v0`` (``debate-v0(agents=2,turns=2)``...: MAPoRL's debate).
        params: OpenSpiel game parameters, only for ``openspiel/<game_name>``; for
            ``textarena/<EnvId>``: ``players`` (the number of seats, default 2) and keyword
            arguments of TextArena's environment (``max_turns=6``...); for ``debate-v0``:
            the :class:`~strategic_arena.games.debate.DebateOptions` (``agents``, ``turns``,
            ``problems``, ``schema``, ``count``, ``problem_seed``).

    Raises:
        ValueError: unknown id, unknown OpenSpiel or TextArena game, or parameters given to a
            curated game.
        MissingExtraError: a ``textarena/<EnvId>`` without the ``textarena`` extra installed.
    """
    if env_id in CURATED or env_id in TEXT_GAMES:
        if params:
            raise ValueError(
                f"{env_id} takes no game parameters (got {sorted(params)}); curated games have "
                f"fixed rules. Use 'openspiel/<game_name>' to pass OpenSpiel parameters."
            )
        return _curated(env_id)
    if env_id == DEBATE_ID or env_id.startswith(f"{DEBATE_ID}("):
        name, named = _game_string(env_id)
        if named and params:
            raise ValueError(
                f"{env_id} names its parameters already; do not pass {sorted(params)} as well"
            )
        from strategic_arena.games.debate import debate_spec

        return debate_spec({**named, **params})
    if env_id.startswith(GENERIC_PREFIX):
        name, named = _game_string(env_id[len(GENERIC_PREFIX) :])
        if named and params:
            raise ValueError(
                f"{env_id} names its parameters already; do not pass {sorted(params)} as well"
            )
        return _generic(name, tuple(sorted({**named, **params}.items())))
    if env_id.startswith(TEXTARENA_PREFIX):
        name, named = _game_string(env_id[len(TEXTARENA_PREFIX) :])
        if named and params:
            raise ValueError(
                f"{env_id} names its parameters already; do not pass {sorted(params)} as well"
            )
        return _textarena(name, tuple(sorted({**named, **params}.items())))
    raise ValueError(
        f"unknown env id {env_id!r}; curated ids: {', '.join(CURATED)}; "
        "or 'openspiel/<game_name>' for any OpenSpiel game, "
        "or 'textarena/<EnvId>' for any TextArena game, "
        f"or '{DEBATE_ID}' for MAPoRL's collaborative debate"
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
    module_name, class_name = {**CURATED, **TEXT_GAMES}[env_id].split(":")
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


@functools.lru_cache(maxsize=64)
def _textarena(
    textarena_id: str, params: tuple[tuple[str, int | float | bool | str], ...]
) -> GameSpec:
    from strategic_arena.games.textarena import TextArenaSpec, check_textarena_id

    check_textarena_id(textarena_id)
    options = dict(params)
    players = options.pop("players", 2)
    if not isinstance(players, int) or isinstance(players, bool):
        raise ValueError(f"players must be an integer, got {players!r}")
    # The id carries the parameters (as the OpenSpiel adapter's does): it alone rebuilds the game
    # in the store, replay and the arena.
    env_id = f"{TEXTARENA_PREFIX}{textarena_id}"
    if params:
        rendered = ",".join(f"{key}={value}" for key, value in params)
        env_id = f"{env_id}({rendered})"
    spec = TextArenaSpec(textarena_id, players=players, params=options, env_id=env_id)
    spec.game.new_initial_state().start(0)  # a bad player count or keyword fails here, clearly
    return spec
