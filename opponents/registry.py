"""Build an opponent from a spec string such as ``mcts:simulations=1000,seed=0``.

A spec is ``NAME`` or ``NAME:key=value,key=value``. Each name lists the games it plays and the
parameters it takes (with their types); anything else is a :class:`ValueError` that says what
would have been accepted. A layer above adds the opponents it owns with :func:`register` when it
is imported (``best_response``: :mod:`strategic_arena.grading`). Implementations are imported
only when built, so listing the opponents costs nothing and a missing numba surfaces as an error
naming the ``[solvers]`` extra.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from strategic_arena._extras import require
from strategic_arena.games.tables import opponent_envs
from strategic_arena.turn import Player

ParamValue = int | float | bool | str


@dataclass(frozen=True)
class OpponentKind:
    """One opponent name: what it plays, what it takes, and where it is implemented.

    Attributes:
        name: the spec name.
        params: accepted parameters and their types.
        factory: ``module:callable`` called as ``factory(env_id, **params)``.
        summary: one line for help texts.
        needs_numba: whether building it requires the ``[solvers]`` extra.
        env_prefixes: env id prefixes it also plays (``openspiel/`` for ``random``).
    """

    name: str
    params: Mapping[str, type]
    factory: str
    summary: str
    needs_numba: bool = True
    env_prefixes: tuple[str, ...] = ()

    @property
    def envs(self) -> tuple[str, ...]:
        """The registered games it plays: those whose spec lists this opponent.

        A game says which opponents play it (``GameSpec.listing.opponents``); nothing here
        lists games, so adding a game never touches the registry.
        """
        return opponent_envs(self.name)

    def plays(self, env_id: str) -> bool:
        """Whether this opponent can play ``env_id``."""
        return env_id in self.envs or env_id.startswith(self.env_prefixes)


KINDS: dict[str, OpponentKind] = {
    kind.name: kind
    for kind in (
        OpponentKind(
            "random",
            {"seed": int},
            "strategic_arena.players:RandomPlayer",
            "a uniformly random legal action, or sample move of a curated free-text game "
            "(also plays every openspiel/<game_name>)",
            needs_numba=False,
            env_prefixes=("openspiel/",),
        ),
        OpponentKind(
            "mcts",
            {"simulations": int, "uct_c": float, "rollouts": int, "seed": int, "solve": bool},
            "opponents.mcts:MCTSPlayer",
            "UCT Monte Carlo tree search with random rollouts (numba)",
        ),
        OpponentKind(
            "minimax",
            {"seed": int},
            "opponents.minimax:MinimaxPlayer",
            "perfect Tic-Tac-Toe from the solved game (random among optimal moves)",
        ),
        OpponentKind(
            "solver",
            {"seed": int, "budget_s": float, "fallback_simulations": int, "max_nodes": int},
            "opponents.connect_four_solver:ConnectFourSolverPlayer",
            "Connect Four negamax solver within a time budget, MCTS beyond it",
        ),
        OpponentKind(
            "nash",
            {"seed": int},
            "opponents.equilibrium:nash_player",
            "the shipped equilibrium policy (closed form for Kuhn, CFR+ for Leduc)",
        ),
        OpponentKind(
            "cfr",
            {"iterations": int, "seed": int, "algorithm": str},
            "opponents.equilibrium:cfr_player",
            "a CFR+ (or DCFR, PCFR+) policy solved on the fly with the given iterations",
        ),
        OpponentKind(
            "hanabi_bot",
            {"seed": int, "joint": bool},
            "opponents.hanabi_bot:HanabiBot",
            "a cooperative Hanabi partner (a joint self-play policy on Mini Hanabi, else rules)",
            needs_numba=False,
        ),
    )
}


def register(kind: OpponentKind) -> OpponentKind:
    """Add ``kind`` to :data:`KINDS`; a layer above registers the opponents it owns.

    The grading package registers ``best_response`` when it is imported (its factory lives
    there), so this package never names a module above it.

    Raises:
        ValueError: a kind of that name is already registered.
    """
    if kind.name in KINDS:
        raise ValueError(f"an opponent named {kind.name!r} is already registered")
    KINDS[kind.name] = kind
    return kind


def parse_spec(spec: str) -> tuple[str, dict[str, ParamValue]]:
    """Split ``NAME:key=value,...`` into the name and typed parameters (validated)."""
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    kind = KINDS.get(name)
    if kind is None:
        raise ValueError(
            f"unknown opponent {name!r}; known: {', '.join(KINDS)} (a package that registers "
            "opponents of its own, such as strategic_arena.grading, adds them when imported)"
        )
    params: dict[str, ParamValue] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"{name}: expected key=value, got {item!r}")
        if key not in kind.params:
            accepted = ", ".join(kind.params) or "none"
            raise ValueError(f"{name} has no parameter {key!r}; parameters: {accepted}")
        if key in params:
            raise ValueError(f"{name}: parameter {key!r} given twice")
        params[key] = _convert(name, key, raw.strip(), kind.params[key])
    return name, params


def _convert(name: str, key: str, raw: str, kind: type) -> ParamValue:
    """``raw`` as ``kind`` (bools: true/false/1/0/yes/no)."""
    try:
        if kind is bool:
            lowered = raw.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            return lowered in ("true", "1", "yes")
        value: ParamValue = kind(raw)
        return value
    except ValueError:
        raise ValueError(
            f"{name}: parameter {key}={raw!r} is not a valid {kind.__name__}"
        ) from None


def make(spec: str, env_id: str, *, seed: int | None = None) -> Player:
    """Build the opponent ``spec`` for ``env_id``.

    Args:
        spec: ``NAME`` or ``NAME:key=value,...`` (see :data:`KINDS`).
        env_id: the game it will play.
        seed: default seed when the spec gives none (a seed in the spec wins).

    Raises:
        ValueError: unknown name or parameter, a value of the wrong type, or a game the
            opponent cannot play.
        strategic_arena._extras.MissingExtraError: numba is needed but not installed.
    """
    name, params = parse_spec(spec)
    kind = KINDS[name]
    if not kind.plays(env_id):
        raise ValueError(f"{name} cannot play {env_id}; it plays {', '.join(kind.envs)}")
    if seed is not None and "seed" in kind.params:
        params.setdefault("seed", seed)
    if kind.needs_numba:
        require("numba", f"the {name} opponent")
    factory = _load(kind.factory)
    label = spec.strip()
    if name == "random":
        player: Player = factory(params.get("seed"), name=label)
        return player
    player = factory(env_id, name=label, **params)
    return player


def _load(path: str) -> Callable[..., Player]:
    """Import ``module:attribute``."""
    module_name, attribute = path.split(":")
    factory: Callable[..., Player] = getattr(importlib.import_module(module_name), attribute)
    return factory


def describe() -> str:
    """One line per opponent: spec name, games and parameters (for ``--help`` texts)."""
    lines = []
    for kind in KINDS.values():
        params = ", ".join(f"{key}:{kind_.__name__}" for key, kind_ in kind.params.items())
        lines.append(f"{kind.name} ({params}) -- {kind.summary}; games: {', '.join(kind.envs)}")
    return "\n".join(lines)
