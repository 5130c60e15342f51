"""Tables derived from the games' specs: ``{env id: value}`` read from each spec on first use.

The arena's defaults, the ladder's counts, the paper's references and the games each opponent
plays are facts about games, kept in each spec's :class:`~strategic_arena.games.listing.Listing`;
the modules that need them as tables build a :class:`DerivedTable`. Reading a table imports the
curated game modules, which ``import strategic_arena`` does not, so tables are computed on first
use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from strategic_arena.games import get_spec, list_envs, list_text_envs
from strategic_arena.games.base import GameSpec

V = TypeVar("V")


class DerivedTable(Mapping[str, V], Generic[V]):
    """``{env id: value}`` over the registered games, read from each spec on first use.

    ``value_of`` returns a game's entry, or ``None`` to leave the game out. The order is the
    registry's (curated order), as the hand-written tables had it.
    """

    def __init__(self, value_of: Callable[[GameSpec], V | None]) -> None:
        self._value_of = value_of

    @functools.cached_property
    def _table(self) -> dict[str, V]:
        table: dict[str, V] = {}
        for env_id in list_envs():
            value = self._value_of(get_spec(env_id))
            if value is not None:
                table[env_id] = value
        return table

    def __getitem__(self, env_id: str) -> V:
        return self._table[env_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"DerivedTable({self._table!r})"


def opponent_envs(opponent: str) -> tuple[str, ...]:
    """The registered games whose spec names the opponent kind ``opponent``, in registry order."""
    return _opponent_table().get(opponent, ())


@functools.cache
def _opponent_table() -> dict[str, tuple[str, ...]]:
    """Opponent kind -> the games whose listing names it (read once)."""
    table: dict[str, tuple[str, ...]] = {}
    for env_id in [*list_envs(), *list_text_envs()]:  # the curated free-text games too
        for name in get_spec(env_id).listing.opponents:
            table[name] = (*table.get(name, ()), env_id)
    return table


def facts(spec: GameSpec) -> dict[str, str]:
    """Everything the product knows about a game, as labelled lines (``strategic-arena envs ID``).

    Read from the spec alone: the rules' source, seats and teams, reward range and the
    normalized score's references, the prompt version, and the arena's listing.
    """
    listing = spec.listing
    low, high = spec.reward_range
    version = spec.prompt_version
    protocols = "; ".join(
        f"{name}: {', '.join(opponents) or 'self-play'}"
        for name, opponents in listing.protocols.items()
    )
    return {
        "id": spec.env_id,
        "title": spec.title,
        "rules": spec.rules_source,
        "seats": str(spec.num_players),
        "teams": ", ".join(f"seat {seat}: team {team}" for seat, team in enumerate(spec.teams)),
        "kind": "cooperative" if spec.cooperative else "competitive",
        "reward range": f"{low:g} to {high:g}",
        "normalized score": f"worst {spec.worst:g}, optimum {spec.optimum:g}",
        "prompt version": f"{version['name']}@{version['digest'][:12]}",
        "opponents": ", ".join(listing.opponents),
        "solver-suite entrant": listing.solver or f"none: {listing.no_solver}",
        "default opponents": ", ".join(listing.default_opponents),
        "protocols": protocols or "none",
        "ladder games per pair": (
            "not in the ladder" if listing.ladder_games is None else str(listing.ladder_games)
        ),
    }
