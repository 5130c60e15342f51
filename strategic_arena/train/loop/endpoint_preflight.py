"""The trainer's endpoint opponents checked before anything is loaded, as ``eval`` checks its.

An opponent or persona behind an OpenAI-compatible endpoint (``games.opponents`` or
``eval.opponents`` entries with a ``base_url``) that is not running would otherwise be found
out game by game: each game it seats is dropped with a warning, for as long as the run lasts,
and the run still ends with status 0. :func:`check_endpoints` asks every distinct endpoint for
its ``/models`` once (the arena's :func:`~strategic_arena.arena.preflight.list_served_models`:
no redirects, the key only to its own origin, the reply bounded) and checks that it serves
the entry's model, so an unreachable server or a wrong model name stops the run in seconds,
with one line naming the config entry, before a model or a server is started.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from strategic_arena.arena.preflight import PreflightError, list_served_models
from strategic_arena.door import shown
from strategic_arena.door.printable import printable_line
from strategic_arena.train.config import EvalConfig, GamesConfig, OpponentConfig

#: Seconds the whole ``/models`` request of one endpoint may take.
PREFLIGHT_TIMEOUT_S = 10.0


class EndpointPreflightError(ValueError):
    """An endpoint opponent cannot play; the message names its config entry and why."""


@dataclass(frozen=True)
class EndpointEntry:
    """One endpoint opponent and where the config names it."""

    where: str
    opponent: OpponentConfig

    @property
    def label(self) -> str:
        """The entry as a message names it: its name (or model) and config section."""
        name = self.opponent.name or self.opponent.spec
        return f"{self.where} opponent {printable_line(name, 80)!r}"


def endpoint_entries(games: GamesConfig, evaluation: EvalConfig) -> list[EndpointEntry]:
    """Every opponent behind an endpoint, once per (URL, model, key variable)."""
    found: dict[tuple[str, str, str | None], EndpointEntry] = {}
    for entry in _all_opponents(games, evaluation):
        opponent = entry.opponent
        if opponent.base_url is not None:
            key = (opponent.base_url, opponent.spec, opponent.api_key_env)
            found.setdefault(key, entry)
    return list(found.values())


def _all_opponents(games: GamesConfig, evaluation: EvalConfig) -> Iterator[EndpointEntry]:
    for opponent in games.opponents:
        yield EndpointEntry("games.opponents", opponent)
    for entries in evaluation.opponents.values():
        for entry in entries:
            yield EndpointEntry("eval.opponents", OpponentConfig.of(entry))


def check_endpoints(
    entries: Iterable[EndpointEntry], timeout_s: float = PREFLIGHT_TIMEOUT_S
) -> None:
    """Each entry's endpoint answers ``/models`` and lists the entry's model.

    Raises:
        EndpointPreflightError: the first entry that cannot play, in one line.
    """
    for entry in entries:
        opponent = entry.opponent
        assert opponent.base_url is not None
        try:
            models = list_served_models(opponent.base_url, opponent.api_key_env, timeout_s)
        except PreflightError as error:
            raise EndpointPreflightError(f"{entry.label}: {error}") from None
        if opponent.spec not in models:
            listed = ", ".join(printable_line(m, 80) for m in models[:10]) or "none"
            raise EndpointPreflightError(
                f"{entry.label}: the endpoint at {shown(opponent.base_url)} does not serve model "
                f"{printable_line(opponent.spec, 80)!r} (it lists: {listed}); the entry's spec "
                "is the model name the server lists"
            )
