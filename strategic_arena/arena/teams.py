"""Teams in stored games: each seat's team, and the results of each team.

A game's spec maps each seat to a team (``GameSpec.teams``: every seat its own team in a
free-for-all game such as two-seat chess or three-player poker, two teams of two in Codenames,
one team in cooperative Hanabi). A team's return is the mean of its seats' returns; it wins a
game when that return is above every other team's, draws when it equals the best of them.

:func:`team_summaries` gives the per-team metrics of the report and the leaderboard: for every
team game (two teams or more, one of them with several seats), each line-up's games, mean return
and wins, draws and losses against the other teams.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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


def result_against(mine: float, others: Iterable[float]) -> str:
    """``win``, ``draw`` or ``loss`` of a return against the best of the ``others``."""
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
        wins / draws / losses: against the best other team in each game.
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
            outcome = result_against(value, (v for t, v in returns.items() if t != team))
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
