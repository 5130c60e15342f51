"""TrueSkill ratings over stored games, per env and overall, independent of the storage order.

What is rated:

* **Competitive games only, any number of seats.** Every stored game of a competitive env is
  one TrueSkill match between its *teams* (:attr:`Outcome.teams`, from the game's seat -> team
  map): in a free-for-all game (two-seat games, three-player poker) each seat is a team of one;
  in a team game (Codenames' two teams of two) the seats of one team form one TrueSkill team.
  Teams are ranked by their return (the mean of their seats' returns; equal returns are a
  draw), and the ``trueskill`` package rates ranked teams natively (``rate(rating_groups,
  ranks)``). A player in several seats counts once: teams that share a player are one side
  (:meth:`Outcome.sides`; a model against two seats of ``random`` at three-player poker is the
  model against random, random's return the mean of its seats'), and a game that leaves one
  side (self-play) says nothing about relative skill and is skipped. Cooperative envs (Hanabi:
  every seat one team) are not rated by TrueSkill at all: the team shares one return, so there
  is no winner; :func:`cooperative_standings` ranks them by mean score instead.
* **Duplicate matches where cards are dealt.** In a game with chance (poker) one hand says
  little: the cards decide most of it. A deal played by the same two players in both seatings
  (same run, env seed and players, seats swapped -- the runner's paired deals) is one
  *duplicate match*, decided by each player's return summed over both seatings, so the luck of
  the cards cancels. Unpaired games count alone; games without chance are never paired.
* **Per env and overall.** One rating pool per env, and one ``overall`` pool over the matches
  of every competitive env together.
* **Draws.** TrueSkill's draw margin comes from the probability that two equally skilled
  players draw. It is estimated from the data -- the share of drawn matches in the pool, clamped
  to ``[0.01, 0.9]`` -- unless :attr:`TrueSkillSettings.draw_probability` fixes it, so
  Tic-Tac-Toe (mostly draws between good players) and Connect Four (almost none) each get a
  margin that fits them.
* **W/D/L counts games.** A rating's wins, draws and losses are its games' results by the
  product's one definition (the sign of the player's return,
  :func:`strategic_arena.arena.teams.player_result`): a duplicate match is two games there,
  so the TrueSkill table, the report's table and the pages show the same numbers.
* **Ranking.** By the conservative score ``mu - 3 * sigma`` (TrueSkill's leaderboard rule: the
  player is at least this good with about 99.9% probability), then by ``mu``, then by name.

Order independence. TrueSkill is an online filter: the same games fed in another order give
other ratings. The ratings here depend on the set of games only:

1. The matches are put in a canonical order that depends on their content alone (env id, run
   name, game keys), never on row ids or the order they were stored in.
2. ``passes`` independent TrueSkill passes run over the matches, each in the order of a random
   permutation drawn from ``numpy.random.default_rng(seed)`` (fixed seed: a rebuild gives
   bit-identical numbers).
3. A player's ``mu`` and ``sigma`` are the means over the passes; ``mu_spread`` is the standard
   deviation of ``mu`` over the passes, i.e. how much the order could still move the rating.

Step 1 makes the result a function of the set of games; averaging over many orders keeps any
one arbitrary order (the canonical one included) from deciding close calls. Iterating to a fixed
point instead (re-running with each pass's posteriors as the next priors) would count every
game several times and shrink ``sigma`` without bound; TrueSkill Through Time (Dangauthier et
al., 2007) does the batch inference properly but is not part of the ``trueskill`` package.

Reference: Herbrich, Minka and Graepel, "TrueSkill(TM): A Bayesian Skill Rating System",
NeurIPS 2006; the ``trueskill`` package (https://trueskill.org) implements it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyspiel

from strategic_arena._extras import require
from strategic_arena.arena.metrics import SELF, Summary, marshal_score, mean_ci
from strategic_arena.arena.store import ResultsStore
from strategic_arena.arena.teams import player_result, result_against, seat_teams, team_returns
from strategic_arena.games import CURATED, get_spec

#: The scope name of the rating pool over every competitive env.
OVERALL = "overall"

#: Bounds on the draw probability estimated from the data (TrueSkill needs it inside (0, 1)).
DRAW_PROBABILITY_BOUNDS = (0.01, 0.9)


@dataclass(frozen=True)
class TrueSkillSettings:
    """TrueSkill's parameters and the order-averaging scheme (defaults: the package's own).

    Attributes:
        mu: prior mean skill of a new player.
        sigma: prior standard deviation of a new player's skill.
        beta: performance noise: a skill gap of ``beta`` wins about 76% of games.
        tau: dynamics noise added before each game (keeps sigma from collapsing to 0).
        draw_probability: chance that two equal players draw; ``None`` estimates it per pool
            from the share of drawn matches (clamped to :data:`DRAW_PROBABILITY_BOUNDS`).
        passes: TrueSkill passes over the matches, each in its own random order.
        seed: seed of the pass orders.
    """

    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    beta: float = 25.0 / 6.0
    tau: float = 25.0 / 300.0
    draw_probability: float | None = None
    passes: int = 16
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready parameters (published with the leaderboard)."""
        return {
            "mu": self.mu,
            "sigma": self.sigma,
            "beta": self.beta,
            "tau": self.tau,
            "draw_probability": self.draw_probability,
            "passes": self.passes,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Outcome:
    """One rated match: a game, or a duplicate pair of games (a deal in both seatings).

    This is the typed input of :func:`rate`: the entrant in each seat, the return of each seat
    and the team of each seat.

    Attributes:
        env_id: the game.
        run: the run's name.
        game_keys: the keys of its games in the run (with ``run``, a content-based identity).
        players: the player in each seat (of the first game).
        returns: each seat's return, summed over the match's games.
        teams: the team of each seat (any hashable labels, e.g. ``(0, 1, 0, 1)``); empty: every
            seat its own team (free-for-all).
        parts: the games of a duplicate match, as (players, returns) each; empty: the match is
            one game (its own players and returns). W/D/L counts these games, not matches.
    """

    env_id: str
    run: str
    game_keys: tuple[str, ...]
    players: tuple[str, ...]
    returns: tuple[float, ...]
    teams: tuple[int, ...] = ()
    parts: tuple[tuple[tuple[str, ...], tuple[float, ...]], ...] = ()

    def games(self) -> tuple[tuple[tuple[str, ...], tuple[float, ...]], ...]:
        """The stored games of the match, as (players, returns) each."""
        return self.parts or ((self.players, self.returns),)

    @property
    def seat_teams(self) -> tuple[int, ...]:
        """The team of each seat (:attr:`teams`, or one team per seat)."""
        return self.teams or tuple(range(len(self.players)))

    def sides(self) -> list[tuple[tuple[str, ...], float]]:
        """The match's sides: its teams, merged where they share a player, by first seat.

        Each side is its distinct players (seat order) and its return, the mean of its teams'
        returns. Teams share a player when one entrant sits in several of them: in a
        free-for-all game against two seats of the same opponent, that opponent's seats are one
        side (its mean return); a self-play game is one side, which rates nobody.
        """
        return self._sides

    @functools.cached_property
    def _sides(self) -> list[tuple[tuple[str, ...], float]]:
        """:meth:`sides`, computed once (every TrueSkill pass reads it)."""
        returns = team_returns(self.returns, self.seat_teams)
        groups: list[tuple[list[int], dict[str, None]]] = []  # (teams, players) per side
        for team in returns:
            names = dict.fromkeys(
                name for name, t in zip(self.players, self.seat_teams, strict=True) if t == team
            )
            teams = [team]
            for other in [g for g in groups if set(g[1]) & set(names)]:
                groups.remove(other)
                teams = other[0] + teams
                names = {**other[1], **names}
            groups.append((teams, names))
        order = list(returns)
        groups.sort(key=lambda group: min(order.index(team) for team in group[0]))
        return [
            (tuple(names), sum(returns[t] for t in teams) / len(teams)) for teams, names in groups
        ]

    def rateable(self) -> bool:
        """Whether the match says who is better: two sides or more."""
        return len(self.sides()) >= 2

    def result(self, index: int) -> str:
        """``win``, ``draw`` or ``loss`` of seat ``index``'s side against the best other side."""
        sides = self.sides()
        name = self.players[index]
        mine = next(value for names, value in sides if name in names)
        return result_against(mine, (value for names, value in sides if name not in names))

    def sort_key(self) -> tuple[tuple[int, str], str, tuple[str, ...]]:
        """The canonical order: env, run name, game keys."""
        return (_env_order(self.env_id), self.run, self.game_keys)


@dataclass(frozen=True)
class PlayerRating:
    """A player's TrueSkill rating in one pool, with its record there.

    Attributes:
        player: the player's name.
        mu: mean skill (averaged over the passes).
        sigma: skill uncertainty (averaged over the passes).
        mu_spread: standard deviation of ``mu`` over the passes (sensitivity to game order).
        matches: rated matches played (a duplicate pair of games is one match).
        wins: games won, draws and losses: games drawn and lost, by the one W/D/L definition
            (:func:`strategic_arena.arena.teams.player_result`), so the same numbers as the
            report's and the pages' tables: games, not matches.
    """

    player: str
    mu: float
    sigma: float
    mu_spread: float
    matches: int
    wins: int
    draws: int
    losses: int

    @property
    def conservative(self) -> float:
        """``mu - 3 * sigma``: the ranking score."""
        return self.mu - 3.0 * self.sigma


@dataclass(frozen=True)
class RatingTable:
    """The ratings of one pool (an env id or :data:`OVERALL`), best first.

    Attributes:
        scope: the env id, or :data:`OVERALL`.
        matches: rated matches in the pool.
        draw_probability: the draw probability TrueSkill used.
        ratings: one rating per player, ranked (conservative score, then mu, then name).
    """

    scope: str
    matches: int
    draw_probability: float
    ratings: tuple[PlayerRating, ...]

    def rank(self, player: str) -> int:
        """The 1-based rank of ``player`` (``KeyError`` if it has no rated game here)."""
        for position, rating in enumerate(self.ratings, start=1):
            if rating.player == player:
                return position
        raise KeyError(f"{player!r} has no rated game in {self.scope}")

    def __getitem__(self, player: str) -> PlayerRating:
        return self.ratings[self.rank(player) - 1]


def _env_order(env_id: str) -> tuple[int, str]:
    return (list(CURATED).index(env_id) if env_id in CURATED else len(CURATED), env_id)


def has_chance(env_id: str) -> bool:
    """Whether ``env_id`` deals cards or rolls dice (its deals are paired into duplicates)."""
    chance_mode = get_spec(env_id).game.get_type().chance_mode
    return bool(chance_mode != pyspiel.GameType.ChanceMode.DETERMINISTIC)


def outcomes(store: ResultsStore, run_names: Sequence[str] | None = None) -> list[Outcome]:
    """The rated matches of ``run_names`` (all runs when ``None``), in canonical order.

    Kept: games of competitive envs whose seats hold different players. In envs with chance,
    two-player games of the same run, env seed and players in swapped seats are paired into
    duplicate matches (in game-key order when a deal was played more than twice). The order is
    by env, run name and game keys, so it does not depend on how or when games were stored.
    """
    names = {run.id: run.name for run in store.runs()}
    wanted = None if run_names is None else {store.run_id(name) for name in run_names}
    kinds: dict[str, tuple[bool, bool]] = {}  # env id -> (cooperative, has chance)
    single: list[Outcome] = []
    deals: dict[tuple[str, str, int, tuple[str, ...]], list[Outcome]] = defaultdict(list)
    for game in store.games():  # scored games only: incomplete ones rate nobody
        if wanted is not None and game.run_id not in wanted:
            continue
        env_id = game.env_id
        if env_id not in kinds:
            kinds[env_id] = (get_spec(env_id).cooperative, has_chance(env_id))
        cooperative, chance = kinds[env_id]
        players = game.players
        if cooperative or len(players) < 2:
            continue
        outcome = Outcome(
            env_id=env_id,
            run=names[game.run_id],
            game_keys=(game.game_key,),
            players=players,
            returns=game.returns,
            teams=seat_teams(env_id, len(players)),
        )
        if not outcome.rateable():
            continue
        if chance and len(players) == 2 and len(outcome.sides()) == 2:
            deals[(env_id, outcome.run, game.seed, tuple(sorted(players)))].append(outcome)
        else:
            single.append(outcome)
    rated = single
    for (_, _, _, pair), games in deals.items():
        seatings = [
            sorted((g for g in games if g.players == order), key=Outcome.sort_key)
            for order in (pair, pair[::-1])
        ]
        for first, second in zip(*seatings, strict=False):
            rated.append(
                Outcome(
                    env_id=first.env_id,
                    run=first.run,
                    game_keys=tuple(sorted(first.game_keys + second.game_keys)),
                    players=pair,
                    returns=(
                        first.returns[0] + second.returns[1],
                        first.returns[1] + second.returns[0],
                    ),
                    parts=(
                        (first.players, first.returns),
                        (second.players, second.returns),
                    ),
                )
            )
        paired = min(len(seatings[0]), len(seatings[1]))
        rated += seatings[0][paired:] + seatings[1][paired:]
    rated.sort(key=Outcome.sort_key)
    return rated


def estimated_draw_probability(matches: Sequence[Outcome]) -> float:
    """The share of drawn matches, clamped to :data:`DRAW_PROBABILITY_BOUNDS`."""
    low, high = DRAW_PROBABILITY_BOUNDS
    if not matches:
        return low
    draws = sum(match.result(0) == "draw" for match in matches)
    return min(high, max(low, draws / len(matches)))


def rate(
    matches: Sequence[Outcome], settings: TrueSkillSettings | None = None, scope: str = OVERALL
) -> RatingTable:
    """TrueSkill ratings of the players of ``matches``; see the module docstring for the method.

    Args:
        matches: the rated matches (any order: they are put in canonical order first).
        settings: TrueSkill parameters and passes (defaults when ``None``).
        scope: the pool's name, kept in the table.

    Raises:
        strategic_arena._extras.MissingExtraError: ``trueskill`` (extra ``[arena]``) is missing.
    """
    settings = settings or TrueSkillSettings()
    if settings.passes < 1:
        raise ValueError("passes must be at least 1")
    trueskill = require("trueskill", "TrueSkill ratings")
    ordered = sorted(matches, key=Outcome.sort_key)
    draw_probability = (
        estimated_draw_probability(ordered)
        if settings.draw_probability is None
        else settings.draw_probability
    )
    env = trueskill.TrueSkill(
        mu=settings.mu,
        sigma=settings.sigma,
        beta=settings.beta,
        tau=settings.tau,
        draw_probability=draw_probability,
    )
    players = sorted({name for match in ordered for name in match.players})
    rng = np.random.default_rng(settings.seed)
    mus: dict[str, list[float]] = defaultdict(list)
    sigmas: dict[str, list[float]] = defaultdict(list)
    for _ in range(settings.passes):
        current = {name: env.create_rating() for name in players}
        for index in rng.permutation(len(ordered)):
            match = ordered[int(index)]
            sides = match.sides()
            groups = [tuple(current[name] for name in names) for names, _ in sides]
            # TrueSkill ranks: lower is better; equal ranks are a draw.
            ranks = [-value for _, value in sides]
            rated_groups = env.rate(groups, ranks=ranks)
            for (names, _), rated in zip(sides, rated_groups, strict=True):
                for name, rating in zip(names, rated, strict=True):
                    current[name] = rating
        for name in players:
            mus[name].append(float(current[name].mu))
            sigmas[name].append(float(current[name].sigma))
    # W/D/L counts games, as every other table does (a duplicate match is two games).
    record: dict[str, Counter[str]] = defaultdict(Counter)
    for match in ordered:
        for seated, returns in match.games():
            for name in dict.fromkeys(seated):
                seats = [seat for seat, who in enumerate(seated) if who == name]
                record[name][player_result(returns, match.seat_teams, seats)] += 1
    ratings = [
        PlayerRating(
            player=name,
            mu=float(np.mean(mus[name])),
            sigma=float(np.mean(sigmas[name])),
            mu_spread=float(np.std(mus[name])),
            matches=sum(record[name].values()),
            wins=record[name]["win"],
            draws=record[name]["draw"],
            losses=record[name]["loss"],
        )
        for name in players
    ]
    ratings.sort(key=lambda r: (-r.conservative, -r.mu, r.player))
    return RatingTable(scope, len(ordered), draw_probability, tuple(ratings))


def rating_tables(
    store: ResultsStore,
    run_names: Sequence[str] | None = None,
    settings: TrueSkillSettings | None = None,
) -> dict[str, RatingTable]:
    """Rating tables per competitive env (in curated order) and :data:`OVERALL` (last).

    Args:
        store: the results store.
        run_names: the runs to rate (all when ``None``).
        settings: TrueSkill parameters and passes.
    """
    matches = outcomes(store, run_names)
    by_env: dict[str, list[Outcome]] = defaultdict(list)
    for match in matches:
        by_env[match.env_id].append(match)
    tables = {env_id: rate(pool, settings, env_id) for env_id, pool in by_env.items()}
    if matches:
        tables[OVERALL] = rate(matches, settings, OVERALL)
    return tables


def ratings_report(
    store: ResultsStore,
    run_names: Sequence[str] | None = None,
    settings: TrueSkillSettings | None = None,
) -> dict[str, Any]:
    """The rating tables of :func:`rating_tables` as JSON-ready data (``report --ratings``).

    ``{scope: {"matches", "draw_probability", "ratings": [...]}}`` per competitive env and
    :data:`OVERALL`, each rating with its ``conservative`` score, best first.
    """
    return {
        scope: {
            "matches": table.matches,
            "draw_probability": table.draw_probability,
            "ratings": [
                {**dataclasses.asdict(rating), "conservative": rating.conservative}
                for rating in table.ratings
            ],
        }
        for scope, table in rating_tables(store, run_names, settings).items()
    }


# ------------------------------------------------------------------------------------------
# cooperative games


@dataclass(frozen=True)
class Score:
    """A mean score with its 95% CI over some games.

    Attributes:
        games: games in the sample.
        mean: mean return.
        ci95: half-width of the 95% Student-t interval (``None`` below two games).
        normalized: the mean as MARSHAL's normalized score in percent (the leaderboard's).
    """

    games: int
    mean: float
    ci95: float | None
    normalized: float

    @classmethod
    def of(cls, env_id: str, samples: Sequence[float]) -> Score:
        """The score of ``samples`` (returns) in ``env_id``."""
        mean, half = mean_ci(samples)
        return cls(len(samples), mean, half, marshal_score(get_spec(env_id), mean))


@dataclass(frozen=True)
class CooperativeStanding:
    """A player's standing in a cooperative env (Hanabi).

    Attributes:
        player: the player's name.
        self_play: its score with itself in every seat (``None`` if never played).
        with_partner_bot: its score with a partner bot; for a bot, its self-play counts too.
        partners: its score with each other partner, by partner name.
    """

    player: str
    self_play: Score | None
    with_partner_bot: Score | None
    partners: Mapping[str, Score] = field(default_factory=dict)


def cooperative_standings(
    summaries: Iterable[Summary], env_id: str, partner_bots: Collection[str]
) -> list[CooperativeStanding]:
    """Standings in cooperative ``env_id``, ranked by self-play score, then partner-bot score.

    A player never seen in self-play ranks below those that were, and likewise for the
    partner-bot score; names break the remaining ties.

    Args:
        summaries: :func:`strategic_arena.arena.metrics.summarize` output (the both-seats rows
            of ``env_id`` are used).
        env_id: a cooperative env.
        partner_bots: names of the reference partners (players of kind ``hanabi_bot``).
    """
    rows: dict[str, dict[str, Summary]] = defaultdict(dict)
    for summary in summaries:
        if summary.env_id == env_id and summary.seat is None:
            rows[summary.player][summary.opponent] = summary
    standings = []
    for player, by_partner in rows.items():
        own = by_partner.get(SELF)
        bot_samples = [
            value
            for partner, summary in by_partner.items()
            if partner in partner_bots or (partner == SELF and player in partner_bots)
            for value in summary.returns
        ]
        standings.append(
            CooperativeStanding(
                player=player,
                self_play=Score.of(env_id, own.returns) if own is not None else None,
                with_partner_bot=Score.of(env_id, bot_samples) if bot_samples else None,
                partners={
                    partner: Score.of(env_id, summary.returns)
                    for partner, summary in sorted(by_partner.items())
                    if partner != SELF
                },
            )
        )

    def key(standing: CooperativeStanding) -> tuple[float, float, str]:
        own = standing.self_play.mean if standing.self_play else -math.inf
        bot = standing.with_partner_bot.mean if standing.with_partner_bot else -math.inf
        return (-own, -bot, standing.player)

    standings.sort(key=key)
    return standings
