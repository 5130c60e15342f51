"""Teams in stored games: each seat's team, and the results of each team.

A game's spec maps each seat to a team (``GameSpec.teams``: every seat its own team in a
free-for-all game such as two-seat chess or three-player poker, two teams of two in Codenames,
one team in cooperative Hanabi). A team's return is the mean of its seats' returns.

**Win, draw, loss: one definition.** A seat's result in a game is the sign of its return: a win
above 0, a draw at 0, a loss below (:func:`result_of`). A player in several seats, or a team,
counts by the sign of its teams' mean return (:func:`player_result`). Every W/D/L the product
shows -- the report's table, the TrueSkill table, the published pages, the team lines and the
trainer's win rates -- counts games (never TrueSkill's duplicate matches) with these two
functions, so the same games give the same numbers everywhere. In the competitive games here
returns are zero-sum (or ranks centred on 0, as in TextArena's multi-player games), so the sign
also says whether the seat beat the others; in a general-sum game it says whether the seat
gained.

:func:`team_summaries` gives the per-team metrics of the report and the leaderboard: for every
team game (two teams or more, one of them with several seats), each line-up's games, mean return
and wins, draws and losses against the other teams.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from strategic_arena.arena.records import StoredGame
from strategic_arena.games import get_spec


def seat_teams(env_id: str, num_seats: int) -> tuple[int, ...]:
    """The team of each of the ``num_seats`` seats of a stored game of ``env_id``.

    The game's spec says it (``GameSpec.teams``); a stored game with another number of seats
    than the spec's (a record the spec does not describe) is a free-for-all.
    """
    teams = get_spec(env_id).teams
    if len(teams) != num_seats:
        return tuple(range(num_seats))
    return tuple(teams)


def team_returns(returns: Sequence[float], teams: Sequence[int]) -> dict[int, float]:
    """Each team's return (the mean of its seats' returns), teams in order of first seat."""
    seats: dict[int, list[float]] = defaultdict(list)
    for value, team in zip(returns, teams, strict=True):
        seats[team].append(value)
    return {team: sum(values) / len(values) for team, values in seats.items()}


#: A seat's (or player's, or team's) result in one game.
Result = Literal["win", "draw", "loss"]


def result_of(value: float) -> Result:
    """The product's one W/D/L definition: ``win``, ``draw`` or ``loss`` by the sign of a return."""
    return "win" if value > 0 else "loss" if value < 0 else "draw"


def player_result(returns: Sequence[float], teams: Sequence[int], seats: Iterable[int]) -> Result:
    """The result of the player holding ``seats``: the sign of its teams' mean return.

    ``teams`` is the team of each seat (:func:`seat_teams`); in a free-for-all game every seat
    is its own team, so one seat's result is the sign of its own return.
    """
    by_team = team_returns(returns, teams)
    own = list(dict.fromkeys(teams[seat] for seat in seats))
    return result_of(sum(by_team[team] for team in own) / len(own))


def result_against(mine: float, others: Iterable[float]) -> str:
    """How TrueSkill ranks a side: ``win``, ``draw`` or ``loss`` against the best ``others``.

    The rating's input (and its draw rate), not a reported W/D/L: those use :func:`result_of`.
    """
    best_other = max(others)
    return "draw" if mine == best_other else ("win" if mine > best_other else "loss")


def is_team_game(teams: Sequence[int]) -> bool:
    """Two teams or more, one of them with several seats (a free-for-all is no team game)."""
    sizes = Counter(teams)
    return len(sizes) >= 2 and max(sizes.values()) >= 2


@dataclass(frozen=True)
class TeamSummary:
    """One line-up of one team in one team game, over its games.

    Attributes:
        env_id: the game.
        players: the team's players, in seat order (one per seat).
        opponents: the other teams' players, in seat order (one per seat).
        games: games played by this line-up against these opponents.
        mean_return: the team's mean return.
        wins / draws / losses: games by the sign of the team's return (:func:`result_of`).
    """

    env_id: str
    players: tuple[str, ...]
    opponents: tuple[str, ...]
    games: int
    mean_return: float
    wins: int
    draws: int
    losses: int


def team_summaries(games: Iterable[StoredGame]) -> list[TeamSummary]:
    """Per-team results of the team games among ``games`` (scored games), sorted."""
    buckets: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[tuple[float, str]]] = (
        defaultdict(list)
    )
    for game in games:
        teams = seat_teams(game.env_id, len(game.players))
        if not is_team_game(teams) or get_spec(game.env_id).cooperative:
            continue
        returns = team_returns(game.returns, teams)
        for team, value in returns.items():
            players = tuple(p for p, t in zip(game.players, teams, strict=True) if t == team)
            rivals = tuple(p for p, t in zip(game.players, teams, strict=True) if t != team)
            outcome = result_of(value)
            buckets[(game.env_id, players, rivals)].append((value, outcome))
    summaries = []
    for (env_id, players, rivals), rows in sorted(buckets.items()):
        outcomes = Counter(outcome for _, outcome in rows)
        summaries.append(
            TeamSummary(
                env_id=env_id,
                players=players,
                opponents=rivals,
                games=len(rows),
                mean_return=sum(value for value, _ in rows) / len(rows),
                wins=outcomes["win"],
                draws=outcomes["draw"],
                losses=outcomes["loss"],
            )
        )
    return summaries
